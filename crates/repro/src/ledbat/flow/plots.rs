//! The SVG figures of `ledbat-flow`.

use super::net::{RunResult, STEADY_FROM};
use super::profile::fig4_variant_label;
use super::results::Results;
use super::runs::fig2_pairs;
use super::{Params, LATE_VARIANTS, LOW_PRIORITY};
use hopwise_experiment::{figs, Outputs};
use hopwise_plot::{BarChart, Chart, Figure, Series};

fn label(p: &str) -> &str {
    match p {
        "newreno" => "NewReno",
        "vegas" => "Vegas",
        "lp" => "LP",
        "nice" => "NICE",
        "ledbat" => "LEDBAT",
        other => other,
    }
}

/// The figures' name for a latecomer variant.
fn late_label(v: &str) -> &str {
    match v {
        "rfc6817" => "RFC 6817",
        "utp" => "uTP",
        "ledbat++" => "LEDBAT++",
        other => other,
    }
}

/// What the error bars of a sweep over `seeds` runs per point show.
fn bars_over(seeds: u32) -> &'static str {
    if seeds == 1 {
        "one run per point"
    } else {
        "bars: min/max over seeds"
    }
}

/// cwnd (packets) of each flow of `r` against time.
fn cwnd_series(r: &RunResult, names: &[String]) -> Vec<Series> {
    r.cwnd_pkts
        .iter()
        .zip(names)
        .map(|(c, name)| {
            let pts = r.times.iter().copied().zip(c.iter().copied()).collect();
            Series::line(name.clone(), pts)
        })
        .collect()
}

/// Legend names for the cwnd series of `r`: a flow whose cwnd runs along
/// the x axis (where the axis hides it) says so, with its median over the
/// second half of the run (see `figs::along_axis`).
fn axis_notes(r: &RunResult, names: &[String]) -> Vec<String> {
    let pts: Vec<Vec<(f64, f64)>> = r
        .cwnd_pkts
        .iter()
        .map(|c| r.times.iter().copied().zip(c.iter().copied()).collect())
        .collect();
    let refs: Vec<&[(f64, f64)]> = pts.iter().map(Vec::as_slice).collect();
    let span = figs::y_span(&refs);
    names
        .iter()
        .zip(&refs)
        .map(|(name, p)| match figs::along_axis(p, span) {
            Some(med) => format!(
                "{name} (on the x axis: ≈ {} {})",
                hopwise_experiment::sig(med, 2),
                if med == 1.0 { "packet" } else { "packets" }
            ),
            None => name.clone(),
        })
        .collect()
}

fn fig2(out: &mut Outputs, traces: &[RunResult]) -> anyhow::Result<()> {
    let mut panels: Vec<(bool, Chart)> = Vec::new();
    for (k, ((_, a, b), r)) in fig2_pairs().iter().zip(traces).enumerate() {
        let letter = (b'a' + k as u8) as char;
        let names = if a == b {
            vec![format!("{} 1", label(a)), format!("{} 2", label(b))]
        } else {
            vec![label(a).to_string(), label(b).to_string()]
        };
        let mut c = Chart::new(format!("({letter}) {} + {}", label(a), label(b)))
            .x_label("time (s)")
            .y_label("cwnd (packets)");
        for s in cwnd_series(r, &axis_notes(r, &names)) {
            c.push_series(s);
        }
        panels.push((a == b, c));
    }
    // Two columns: NewReno against X on the left, X against X beside it.
    let (intra, inter): (Vec<_>, Vec<_>) = panels.into_iter().partition(|p| p.0);
    let mut fig = Figure::new(
        "Fig. 2: cwnd of two backlogged flows (10 Mbit/s, RTT 50 ms, 100-packet buffer); left: NewReno against X, right: X against X",
        2,
    )
    .panel_size(560, 300);
    let (mut inter, mut intra) = (inter.into_iter(), intra.into_iter());
    loop {
        let (l, r) = (inter.next(), intra.next());
        if l.is_none() && r.is_none() {
            break;
        }
        for (_, c) in l.into_iter().chain(r) {
            fig.push_panel(c);
        }
    }
    out.svg("fig2_cwnd.svg", &fig)
}

fn fig4(out: &mut Outputs, s: &Results) -> anyhow::Result<()> {
    let mut share = Chart::new("(a) share of the one NewReno flow")
        .x_label("N (low-priority flows)")
        .y_label("NewReno share")
        .y_range(0.0, 1.0);
    let mut loss = Chart::new("(b) loss rate at the bottleneck")
        .x_label("N (low-priority flows)")
        .y_label("loss rate");
    let mut util = Chart::new("(c) link utilisation")
        .x_label("N (low-priority flows)")
        .y_label("utilisation")
        .y_range(0.8, 1.0);
    let mut steady = Chart::new(format!(
        "(d) loss rate from {:.0} s on (after NewReno's start-up)",
        STEADY_FROM.as_secs_f64()
    ))
    .x_label("N (low-priority flows)")
    .y_label("loss rate (log)")
    .log_y(true);
    let mut protos: Vec<&str> = LOW_PRIORITY.to_vec();
    protos.push("newreno");
    for p in protos {
        let rows: Vec<_> = s.fig4.iter().filter(|r| r.protocol == p).collect();
        if rows.is_empty() {
            continue;
        }
        let name = if p == "newreno" {
            "N+1 NewReno (flow 0)".to_string()
        } else {
            label(p).to_string()
        };
        let sh = Series::line_points(
            name.clone(),
            rows.iter().map(|r| (r.n as f64, r.tcp_share)).collect(),
        )
        .with_error_bars(
            rows.iter()
                .map(|r| (r.tcp_share_min, r.tcp_share_max))
                .collect(),
        );
        let lo = Series::line_points(
            name.clone(),
            rows.iter().map(|r| (r.n as f64, r.loss_rate)).collect(),
        )
        .with_error_bars(
            rows.iter()
                .map(|r| (r.loss_rate_min, r.loss_rate_max))
                .collect(),
        );
        let ut = Series::line_points(
            name.clone(),
            rows.iter().map(|r| (r.n as f64, r.utilization)).collect(),
        );
        let st = Series::line_points(
            name,
            rows.iter()
                .map(|r| (r.n as f64, r.steady_loss_rate))
                .collect(),
        );
        let (sh, lo, ut, st) = if p == "newreno" {
            (sh.dashed(), lo.dashed(), ut.dashed(), st.dashed())
        } else {
            (sh, lo, ut, st)
        };
        share.push_series(sh);
        loss.push_series(lo);
        util.push_series(ut);
        steady.push_series(st);
    }
    // LP with Linux's re-basing rule, a sensitivity variant run at fewer N.
    let lp_linux: Vec<(f64, f64)> = s
        .fig4_variants
        .iter()
        .filter(|v| v.variant == "lp-linux" && v.row.protocol == "lp")
        .map(|v| (v.row.n as f64, v.row.steady_loss_rate))
        .collect();
    if !lp_linux.is_empty() {
        steady.push_series(
            Series::line_points("LP, Linux's re-basing (variant lp-linux)", lp_linux)
                .dashed()
                .color("#888888"),
        );
    }
    let fair: Vec<(f64, f64)> = s
        .fig4
        .iter()
        .filter(|r| r.protocol == "newreno")
        .map(|r| (r.n as f64, r.fair_share))
        .collect();
    share.push_series(Series::line("1/(N+1)", fair).dashed().color("#888888"));
    let fig = Figure::new(
        format!(
            "Fig. 4: one NewReno flow against N low-priority flows (1 Mbit/s, RTT 50 ms, 100 packets, 120 s); {}",
            bars_over(s.setup.fig4_seeds)
        ),
        2,
    )
    .panel_size(560, 380)
    .panel(share)
    .panel(loss)
    .panel(util)
    .panel(steady);
    out.svg("fig4.svg", &fig)?;

    // Sensitivity: NewReno share at the largest N, per protocol and setting.
    let nmax = s.fig4.iter().map(|r| r.n).max().unwrap_or(10);
    let mut fig = Figure::new(
        format!("Fig. 4 sensitivity: NewReno share at N = {nmax} under other settings (main = per-segment ACKs, IW 2, no SACK)"),
        2,
    )
    .panel_size(520, 340);
    for p in LOW_PRIORITY {
        let mut bars = Vec::new();
        if let Some(r) = s.fig4.iter().find(|r| r.protocol == p && r.n == nmax) {
            bars.push(("main".to_string(), r.tcp_share));
        }
        for v in s
            .fig4_variants
            .iter()
            .filter(|v| v.row.protocol == p && v.row.n == nmax)
        {
            bars.push((fig4_variant_label(&v.variant).to_string(), v.row.tcp_share));
        }
        if bars.is_empty() {
            continue;
        }
        fig.push_panel(
            BarChart::new(label(p))
                .y_label("NewReno share")
                .y_range(0.0, 1.0)
                .group("NewReno share", bars),
        );
    }
    out.svg("fig4_variants.svg", &fig)
}

fn fig5(out: &mut Outputs, s: &Results) -> anyhow::Result<()> {
    let top = s.fig5.iter().map(|r| r.target_pct).fold(150.0, f64::max);
    let mut util = Chart::new("(a) link utilisation")
        .x_label("target tau (% of the buffer's 1.2 s queueing delay)")
        .y_label("utilisation")
        .x_range(0.0, top)
        .y_range(0.8, 1.0)
        .series(Series::line_points(
            if s.setup.fig5_seeds == 1 {
                "utilisation"
            } else {
                "mean utilisation (seeds)"
            },
            s.fig5
                .iter()
                .map(|r| (r.target_pct, r.utilization))
                .collect(),
        ));
    let mut share = Chart::new("(b) share of the NewReno flow")
        .x_label("target tau (% of the buffer's 1.2 s queueing delay)")
        .y_label("NewReno share")
        .x_range(0.0, top)
        .y_range(0.0, 1.0)
        .series(
            Series::line_points(
                "NewReno share (120 s)",
                s.fig5.iter().map(|r| (r.target_pct, r.tcp_share)).collect(),
            )
            .with_error_bars(
                s.fig5
                    .iter()
                    .map(|r| (r.tcp_share_min, r.tcp_share_max))
                    .collect(),
            ),
        )
        .hline(0.5, "fair");
    if !s.fig5_long.is_empty() {
        let secs = s.fig5_long[0].duration_s;
        share.push_series(Series::points(
            format!("last 120 s of a {secs:.0} s run"),
            s.fig5_long
                .iter()
                .map(|r| (r.target_pct, r.tcp_share_last_120s))
                .collect(),
        ));
    }
    for r in &s.fig5_regions {
        share = share.band_x(r.from_pct, r.to_pct.min(top), r.name.clone());
        util = util.band_x(r.from_pct, r.to_pct.min(top), r.name.clone());
    }
    let fig = Figure::new(
        format!(
            "Fig. 5: NewReno against LEDBAT with target tau (1 Mbit/s, RTT 50 ms, 100 packets, 120 s); {}",
            bars_over(s.setup.fig5_seeds)
        ),
        1,
    )
    .panel_size(1000, 380)
    .panel(util)
    .panel(share);
    out.svg("fig5.svg", &fig)
}

fn fig6(out: &mut Outputs, s: &Results, trace: Option<&RunResult>) -> anyhow::Result<()> {
    let mut a = Chart::new("(a) against tau1/tau2 (tau2 = 100 ms)")
        .x_label("tau1 / tau2")
        .y_label("fraction")
        .y_range(0.0, 1.0)
        .series(Series::line_points(
            "share of the tau2 flow",
            s.fig6
                .iter()
                .map(|r| (r.target_ratio, r.small_target_share))
                .collect(),
        ))
        .series(
            Series::line_points(
                "its share, last 20 s",
                s.fig6
                    .iter()
                    .map(|r| (r.target_ratio, r.small_target_share_end))
                    .collect(),
            )
            .dashed(),
        )
        .series(Series::line_points(
            "utilisation",
            s.fig6
                .iter()
                .map(|r| (r.target_ratio, r.utilization))
                .collect(),
        ))
        .series(Series::line_points(
            "E[B]/Bmax",
            s.fig6
                .iter()
                .map(|r| (r.target_ratio, r.mean_queue_norm))
                .collect(),
        ));
    if !s.fig6_jittered.is_empty() {
        a.push_series(
            Series::points(
                if s.fig6_jittered.iter().all(|r| r.seeds == 1) {
                    "tau2 share, starts jittered (one run)"
                } else {
                    "tau2 share, starts jittered (mean, min/max)"
                },
                s.fig6_jittered
                    .iter()
                    .map(|r| (r.target_ratio, r.small_target_share))
                    .collect(),
            )
            .with_error_bars(
                s.fig6_jittered
                    .iter()
                    .map(|r| (r.small_target_share_min, r.small_target_share_max))
                    .collect(),
            ),
        );
    }
    let mut fig = Figure::new(
        "Fig. 6: two LEDBAT flows with targets tau1 >= tau2 = 100 ms (1 Mbit/s, RTT 50 ms, 100 packets), simultaneous starts",
        2,
    )
    .panel_size(620, 400)
    .panel(a);
    if let Some(r) = trace {
        let mut b = Chart::new("(b) cwnd at tau1/tau2 = 1.2")
            .x_label("time (s)")
            .y_label("cwnd (packets)");
        for s in cwnd_series(
            r,
            &["tau1 = 120 ms".to_string(), "tau2 = 100 ms".to_string()],
        ) {
            b.push_series(s);
        }
        fig.push_panel(b);
    }
    out.svg("fig6.svg", &fig)
}

fn latecomer(
    out: &mut Outputs,
    s: &Results,
    traces: &[RunResult],
    p: &Params,
) -> anyhow::Result<()> {
    let mut fig = Figure::new(
        format!(
            "Latecomers: {} LEDBAT flows starting {} s apart (1 Mbit/s, RTT 50 ms, 100 packets)",
            p.late_flows, p.late_gap_secs
        ),
        2,
    )
    .panel_size(620, 340);
    for ((v, _), r) in LATE_VARIANTS.iter().zip(traces) {
        let names: Vec<String> = (0..r.cwnd_pkts.len())
            .map(|i| format!("flow {} (t = {} s)", i + 1, i as u64 * p.late_gap_secs))
            .collect();
        let mut c = Chart::new(format!("{}: cwnd", late_label(v)))
            .x_label("time (s)")
            .y_label("cwnd (packets)");
        for s in cwnd_series(r, &names) {
            c.push_series(s);
        }
        fig.push_panel(c);
    }
    let one_run = s.latecomer.iter().all(|r| r.seeds == 1);
    let mut bars = BarChart::new(if one_run {
        "Jain index while all flows are active (one run)"
    } else {
        "Jain index while all flows are active (mean over seeds)"
    })
    .y_label("Jain index")
    .y_range(0.0, 1.0)
    .group(
        format!("1 Mbit/s, {} flows", p.late_flows),
        s.latecomer
            .iter()
            .map(|r| (late_label(&r.variant).to_string(), r.jain))
            .collect(),
    );
    if !s.latecomer_10mbit.is_empty() {
        bars = bars.group(
            "10 Mbit/s, 4 flows",
            s.latecomer_10mbit
                .iter()
                .map(|r| (late_label(&r.variant).to_string(), r.jain))
                .collect(),
        );
    }
    fig.push_panel(bars);
    out.svg("latecomer.svg", &fig)
}

/// Writes every figure: `fig2_cwnd.svg`, `fig4.svg`, `fig4_variants.svg`,
/// `fig5.svg`, `fig6.svg`, `latecomer.svg`.
pub(super) fn write_all(out: &mut Outputs, r: &Results, p: &Params) -> anyhow::Result<()> {
    fig2(out, &r.traces.fig2)?;
    fig4(out, r)?;
    fig5(out, r)?;
    fig6(out, r, r.traces.fig6_12.as_ref())?;
    latecomer(out, r, &r.traces.late, p)
}
