//! Figures of the backtap-circuit reproduction.

use super::fig5::{Fig5Out, Fig5Row};
use super::latecomer::LateOut;
use super::mux::{transport_label, MuxOut, CIRCUITS};
use super::Plan;
use crate::backtap::common::{payload_rate, variants, BACKTAP_CELL, CELL_DATA, VANILLA_CELL};
use hopwise_experiment::{figs, Outputs};
use hopwise_plot::{BarChart, Chart, Figure, Series};

fn label(key: &str) -> String {
    match key {
        "vanilla-circuit" => "vanilla, circuit window".into(),
        "vanilla-stream" => "vanilla, stream window".into(),
        "backtap" => "BackTap".into(),
        "vanilla-circuit-10ms" => "vanilla, circuit window, 10 ms refill".into(),
        "vanilla-circuit-on-demand" => "vanilla, circuit window, on-demand refill".into(),
        "backtap-100ms" => "BackTap, 100 ms refill".into(),
        "backtap-on-demand" => "BackTap, on-demand refill".into(),
        k => k.into(),
    }
}

/// How the figures name a curve: the main figure by transport and window,
/// the refill figure (every vanilla curve there has the circuit window) by
/// transport and refill.
#[derive(Clone, Copy)]
enum Names {
    Window,
    Refill,
}

impl Names {
    fn of(self, row: &Fig5Row) -> String {
        match self {
            Names::Window => label(row.variant),
            Names::Refill => format!("{}, {} refill", transport_name(row), row.refill),
        }
    }

    /// How curve `row` refers to the earlier curve `base` that hides it.
    fn reference(self, row: &Fig5Row, base: &Fig5Row) -> String {
        match self {
            Names::Window => label(base.variant),
            Names::Refill if base.transport == row.transport => base.refill.to_string(),
            Names::Refill => format!("{}, {}", transport_name(base), base.refill),
        }
    }
}

fn transport_name(row: &Fig5Row) -> &str {
    match row.transport {
        "vanilla" => "vanilla",
        "backtap" => "BackTap",
        "tor-vegas" => "Tor Vegas",
        t => t,
    }
}

/// Adds one line-and-points curve per entry of `curves` (rows, points and
/// error bars) to `chart`; a curve that lies on an earlier one names it in
/// its legend entry ("BackTap, on-demand refill (≈ 100 ms)"). Curves from
/// the fourth on are dashed.
fn add_curves(chart: &mut Chart, curves: Vec<(&[&Fig5Row], Curve)>, names: Names, y_span: f64) {
    let pts: Vec<&[(f64, f64)]> = curves.iter().map(|c| c.1 .0.as_slice()).collect();
    let hidden = figs::overlaps(&pts, y_span);
    let first = |k: usize| curves[k].0[0];
    let named: Vec<String> = hidden
        .iter()
        .enumerate()
        .map(|(k, h)| match h {
            Some((i, o)) => format!(
                "{} ({} {})",
                names.of(first(k)),
                o.sign(),
                names.reference(first(k), first(*i))
            ),
            None => names.of(first(k)),
        })
        .collect();
    for (i, (name, (_, (p, b)))) in named.into_iter().zip(curves).enumerate() {
        let s = Series::line_points(name, p).with_error_bars(b);
        chart.push_series(if i >= 3 { s.dashed() } else { s });
    }
}

type Points = Vec<(f64, f64)>;

/// Points and error bars.
type Curve = (Points, Points);

fn curve(rows: &[&Fig5Row], f: impl Fn(&Fig5Row) -> f64, ci: impl Fn(&Fig5Row) -> f64) -> Curve {
    let pts = rows.iter().map(|r| (r.rtt_ms as f64, f(r))).collect();
    let bars = rows
        .iter()
        .map(|r| {
            let (y, h) = (f(r), ci(r));
            let h = if h.is_finite() { h } else { 0.0 };
            (y - h, y + h)
        })
        .collect();
    (pts, bars)
}

fn panels(out: &Fig5Out, keys: &[&str], theory: bool, names: Names) -> [Chart; 3] {
    let x_max = out.rows.iter().map(|r| r.rtt_ms).max().unwrap_or(900) as f64;
    const RATE_MAX: f64 = 1.7;
    let mut rate = Chart::new("(a) rate")
        .x_label("end-to-end RTT (ms)")
        .y_label("rate (MB/s)")
        .x_range(0.0, x_max)
        .y_range(0.0, RATE_MAX)
        .hline(payload_rate(VANILLA_CELL) / 1e6, "C·498/512");
    let mut backlog = Chart::new("(b) backlog R − W")
        .x_label("end-to-end RTT (ms)")
        .y_label("backlog (kB)")
        .x_range(0.0, x_max)
        .hline(350.0, "350 kB")
        .hline(250.0, "250 kB");
    let delay_max = x_max / 2.0 + 200.0;
    let mut delay = Chart::new("(c) delay")
        .x_label("end-to-end RTT (ms)")
        .y_label("delay (ms)")
        .x_range(0.0, x_max)
        .y_range(0.0, delay_max);
    let shown: Vec<(&str, Vec<&Fig5Row>)> = keys
        .iter()
        .map(|k| (*k, out.curve(k)))
        .filter(|(_, rows)| !rows.is_empty())
        .collect();
    let curves = |f: &dyn Fn(&Fig5Row) -> f64, ci: &dyn Fn(&Fig5Row) -> f64| {
        shown
            .iter()
            .map(|(_, rows)| (rows.as_slice(), curve(rows, f, ci)))
            .collect::<Vec<_>>()
    };
    let rates = curves(&|r| r.rate / 1e6, &|r| r.rate_ci / 1e6);
    add_curves(&mut rate, rates, names, RATE_MAX);
    let backlogs = curves(&|r| r.backlog / 1e3, &|r| r.backlog_ci / 1e3);
    let pts: Vec<&[(f64, f64)]> = backlogs.iter().map(|c| c.1 .0.as_slice()).collect();
    let span = figs::y_span(&pts);
    add_curves(&mut backlog, backlogs, names, span);
    let delays = curves(&|r| r.delay_ms, &|r| r.delay_ci90_ms);
    add_curves(&mut delay, delays, names, delay_max);
    let xs: Vec<f64> = (1..=(x_max as usize / 10))
        .map(|i| i as f64 * 10.0)
        .collect();
    let win = |cells: f64| -> Vec<(f64, f64)> {
        xs.iter()
            .map(|&x| (x, cells * CELL_DATA / (x / 1e3) / 1e6))
            .filter(|p| p.1 <= RATE_MAX)
            .collect()
    };
    // The window limits, for the curves they limit.
    let has = |prefix: &str| shown.iter().any(|(k, _)| k.starts_with(prefix));
    if has("vanilla-circuit") {
        rate.push_series(
            Series::line("1000·498 B / RTT", win(1000.0))
                .dashed()
                .color("#999999"),
        );
    }
    if has("vanilla-stream") {
        rate.push_series(
            Series::line("500·498 B / RTT", win(500.0))
                .dashed()
                .color("#bbbbbb"),
        );
    }
    delay.push_series(
        Series::line("RTT/2", xs.iter().map(|&x| (x, x / 2.0)).collect())
            .dashed()
            .color("#999999"),
    );
    if theory {
        let pv = payload_rate(VANILLA_CELL);
        backlog.push_series(
            Series::line(
                "smooth: 950·498 B − rate·RTT/2",
                xs.iter()
                    .map(|&x| {
                        let v = 950.0 * CELL_DATA - pv * x / 2e3;
                        (x, v.max(500.0 * CELL_DATA) / 1e3)
                    })
                    .collect(),
            )
            .dashed()
            .color("#999999"),
        );
    }
    [rate, backlog, delay]
}

pub fn fig5(out: &Fig5Out, o: &mut Outputs) -> anyhow::Result<()> {
    let seeds = out.rows.first().map_or(0, |r| r.seeds);
    let main: Vec<&str> = variants()
        .iter()
        .filter(|v| v.main)
        .map(|v| v.key)
        .collect();
    let [a, b, c] = panels(out, &main, false, Names::Window);
    let stats = if seeds == 1 {
        "one run".to_string()
    } else {
        format!("mean of {seeds} runs, 90 % CI")
    };
    let fig = Figure::new(
        format!("Fig. 5: one circuit, middle relay limited to 1500 kB/s ({stats}; Nagle off)"),
        2,
    )
    .panel_size(560, 400)
    .panel(a)
    .panel(b)
    .panel(c);
    o.svg("fig5.svg", &fig)?;

    let refill = [
        "vanilla-circuit",
        "vanilla-circuit-10ms",
        "vanilla-circuit-on-demand",
        "backtap",
        "backtap-100ms",
        "backtap-on-demand",
    ];
    if refill.iter().skip(1).any(|k| !out.curve(k).is_empty()) {
        let [a, b, c] = panels(out, &refill, true, Names::Refill);
        let fig = Figure::new(
            "Fig. 5 with other refills of the middle's bucket (vanilla: circuit window; Tor's refill 100 ms, BackTap's 10 ms)",
            2,
        )
        .panel_size(560, 400)
        .panel(a)
        .panel(b)
        .panel(c);
        o.svg("fig5_refill.svg", &fig)?;
    }

    if !out.ramp_series.is_empty() {
        let mut rate = Chart::new("delivery rate (1 s bins)")
            .x_label("time (s)")
            .y_label("rate (MB/s)")
            .hline(payload_rate(BACKTAP_CELL) / 1e6, "C·498/519");
        let mut swnd = Chart::new("exit hop's send window")
            .x_label("time (s)")
            .y_label("send window (cells)");
        let rtts: Vec<u64> = {
            let mut v: Vec<u64> = out.ramp_series.iter().map(|s| s.0).collect();
            v.dedup();
            v
        };
        let rates: Vec<Vec<(f64, f64)>> = out
            .ramp_series
            .iter()
            .map(|(_, _, s)| s.rate.iter().map(|&(t, r)| (t, r / 1e6)).collect())
            .collect();
        let swnds: Vec<&[(f64, f64)]> = out
            .ramp_series
            .iter()
            .map(|(_, _, s)| s.exit_swnd.as_slice())
            .collect();
        let rate_refs: Vec<&[(f64, f64)]> = rates.iter().map(Vec::as_slice).collect();
        let (rate_span, swnd_span) = (figs::y_span(&rate_refs), figs::y_span(&swnds));
        for (k, (rtt, name, _)) in out.ramp_series.iter().enumerate() {
            let idx = rtts.iter().position(|r| r == rtt).unwrap_or(0);
            // HyStart in colours of its own (the other start-ups share
            // their RTT's).
            let idx = if *name == "hystart" {
                idx + rtts.len()
            } else {
                idx
            };
            let color = hopwise_plot::palette_color(idx);
            let n = format!("{rtt} ms, {name}");
            // A start-up curve on top of the same RTT's linear one says so.
            let linear = out
                .ramp_series
                .iter()
                .position(|(r, m, _)| r == rtt && *m == "linear")
                .filter(|&j| j != k);
            let note = |v: &[&[(f64, f64)]], span: f64| match linear
                .and_then(|j| figs::overlap(v[j], v[k], span))
            {
                Some(o) => format!("{n} ({} linear)", o.sign()),
                None => n.clone(),
            };
            let style = |x: Series| {
                let x = x.color(color);
                if *name == "linear" {
                    x
                } else {
                    x.dashed()
                }
            };
            rate.push_series(style(Series::line(
                note(&rate_refs, rate_span),
                rates[k].clone(),
            )));
            swnd.push_series(style(Series::line(
                note(&swnds, swnd_span),
                swnds[k].to_vec(),
            )));
        }
        let fig = Figure::new(
            "BackTap's start-up: +1 cell per round (solid), slow start, γ = 1, and HyStart++ (dashed)",
            2,
        )
        .panel_size(580, 400)
        .panel(rate)
        .panel(swnd);
        o.svg("fig5_ramp.svg", &fig)?;
    }
    Ok(())
}

pub fn mux(plan: &Plan, out: &MuxOut, o: &mut Outputs) -> anyhow::Result<()> {
    let mut bars = BarChart::new(format!(
        "per-circuit rate, RTT {} ms, run 1",
        plan.mux_rtt_ms
    ))
    .y_label("rate (kB/s)");
    for key in ["vanilla", "backtap"] {
        if let Some(r) = out
            .runs
            .iter()
            .find(|r| r.config == key && r.rtt_ms == plan.mux_rtt_ms && r.seed == 1)
        {
            let name = if key == "vanilla" {
                "vanilla (100 ms refill)"
            } else {
                "BackTap (10 ms refill)"
            };
            bars = bars.group(
                name,
                (0..CIRCUITS)
                    .map(|i| {
                        (
                            if i == 0 {
                                "A".to_string()
                            } else {
                                format!("B{i}")
                            },
                            r.rates[i] / 1e3,
                        )
                    })
                    .collect(),
            );
        }
    }
    let mut jc = Chart::new("Jain's index over the 10 circuits")
        .x_label("end-to-end RTT (ms)")
        .y_label("Jain's index")
        .y_range(0.0, 1.05)
        .hline(0.5, "0.5")
        .hline(0.95, "0.95");
    let mut keys: Vec<&str> = out.rows.iter().map(|r| r.config).collect();
    keys.dedup();
    for (i, k) in keys.iter().enumerate() {
        let rs: Vec<_> = out.rows.iter().filter(|r| r.config == *k).collect();
        let name = format!(
            "{} ({} refill)",
            transport_label(rs[0].transport),
            rs[0].refill
        );
        let s = Series::line_points(name, rs.iter().map(|r| (r.rtt_ms as f64, r.jain)).collect())
            .with_error_bars(
                rs.iter()
                    .map(|r| {
                        let h = if r.jain_ci90.is_finite() {
                            r.jain_ci90
                        } else {
                            0.0
                        };
                        (r.jain - h, r.jain + h)
                    })
                    .collect(),
            );
        jc.push_series(if i >= 2 { s.dashed() } else { s });
    }
    let fig = Figure::new(
        "Multiplexing: 10 bulk circuits through one middle (1500 kB/s), 1 via relays A, 9 via relays B",
        2,
    )
    .panel_size(600, 400)
    .panel(bars)
    .panel(jc);
    o.svg("mux.svg", &fig)
}

pub fn latecomer(plan: &Plan, out: &LateOut, o: &mut Outputs) -> anyhow::Result<()> {
    let mut labels: Vec<&str> = Vec::new();
    for r in out.runs.iter().filter(|r| r.series.is_some()) {
        if !labels.contains(&r.bottleneck.as_str()) {
            labels.push(&r.bottleneck);
        }
    }
    let mut fig = Figure::new(
        format!(
            "Late-comer: circuit 2 joins at {} s (RTT {} ms); solid: baseRtt shared per next hop, dashed: per circuit",
            plan.late_join_secs, plan.late_rtt_ms
        ),
        2,
    )
    .panel_size(600, 360);
    const RATE_MAX: f64 = 1.6;
    for l in labels {
        let mut ch = Chart::new(l.to_string())
            .x_label("time (s)")
            .y_label("rate (MB/s)")
            .y_range(0.0, RATE_MAX);
        // Per circuit (dashed) after shared (solid), each [first, late-comer].
        let mut runs: Vec<(bool, [Points; 2])> = Vec::new();
        for shared in [true, false] {
            if let Some(r) = out
                .runs
                .iter()
                .find(|r| r.bottleneck == l && r.shared_base_rtt == shared && r.series.is_some())
            {
                let s = r.series.as_ref().expect("checked");
                let mb = |v: &[(f64, f64)]| v.iter().map(|&(t, x)| (t, x / 1e6)).collect();
                runs.push((shared, [mb(&s[0]), mb(&s[1])]));
            }
        }
        for (shared, s) in &runs {
            let tag = if *shared { "shared" } else { "per circuit" };
            for (i, name) in ["first", "late-comer"].iter().enumerate() {
                // A per-circuit curve on top of the shared one says so.
                let hidden = runs
                    .iter()
                    .find(|(sh, _)| *sh && !*shared)
                    .and_then(|(_, base)| figs::overlap(&base[i], &s[i], RATE_MAX));
                let label = match (hidden, figs::along_axis(&s[i], RATE_MAX)) {
                    (Some(o), _) => format!("{name}, {tag} ({} shared)", o.sign()),
                    (None, Some(med)) => {
                        format!(
                            "{name}, {tag} (on the x axis: ≈ {} MB/s)",
                            hopwise_experiment::sig(med, 2)
                        )
                    }
                    (None, None) => format!("{name}, {tag}"),
                };
                let ser = Series::line(label, s[i].clone()).color(hopwise_plot::palette_color(i));
                ch.push_series(if *shared { ser } else { ser.dashed() });
            }
        }
        fig.push_panel(ch);
    }
    o.svg("latecomer.svg", &fig)
}
