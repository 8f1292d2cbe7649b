//! Figures of the backtap-circuit reproduction.

use super::fig5::{variants, Fig5Out, Fig5Row};
use super::latecomer::LateOut;
use super::mux::{transport_label, MuxOut, CIRCUITS};
use super::{payload_rate, Plan, BACKTAP_CELL, CELL_DATA, VANILLA_CELL};
use hopwise_plot::{BarChart, Chart, Figure, Series};
use std::path::Path;

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

/// Points and error bars.
type Curve = (Vec<(f64, f64)>, Vec<(f64, f64)>);

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

fn panels(out: &Fig5Out, keys: &[&str], theory: bool) -> [Chart; 3] {
    let x_max = out.rows.iter().map(|r| r.rtt_ms).max().unwrap_or(900) as f64;
    let mut rate = Chart::new("(a) rate")
        .x_label("end-to-end RTT (ms)")
        .y_label("kB/s")
        .x_range(0.0, x_max)
        .y_range(0.0, 1700.0)
        .hline(payload_rate(VANILLA_CELL) / 1e3, "C·498/512");
    let mut backlog = Chart::new("(b) backlog R − W")
        .x_label("end-to-end RTT (ms)")
        .y_label("kB")
        .x_range(0.0, x_max)
        .hline(350.0, "350 kB")
        .hline(250.0, "250 kB");
    let mut delay = Chart::new("(c) delay")
        .x_label("end-to-end RTT (ms)")
        .y_label("ms")
        .x_range(0.0, x_max)
        .y_range(0.0, x_max / 2.0 + 200.0);
    for (i, k) in keys.iter().enumerate() {
        let rows = out.curve(k);
        if rows.is_empty() {
            continue;
        }
        let name = label(k);
        let style = |s: Series| if i >= 3 { s.dashed() } else { s };
        let (p, b) = curve(&rows, |r| r.rate / 1e3, |r| r.rate_ci / 1e3);
        rate.push_series(style(Series::line_points(&name, p).with_error_bars(b)));
        let (p, b) = curve(&rows, |r| r.backlog / 1e3, |r| r.backlog_ci / 1e3);
        backlog.push_series(style(Series::line_points(&name, p).with_error_bars(b)));
        let (p, b) = curve(&rows, |r| r.delay_ms, |r| r.delay_ci90_ms);
        delay.push_series(style(Series::line_points(&name, p).with_error_bars(b)));
    }
    let xs: Vec<f64> = (1..=(x_max as usize / 10))
        .map(|i| i as f64 * 10.0)
        .collect();
    let win = |cells: f64| -> Vec<(f64, f64)> {
        xs.iter()
            .map(|&x| (x, cells * CELL_DATA / (x / 1e3) / 1e3))
            .filter(|p| p.1 <= 1700.0)
            .collect()
    };
    rate.push_series(
        Series::line("1000·498 B / RTT", win(1000.0))
            .dashed()
            .color("#999999"),
    );
    rate.push_series(
        Series::line("500·498 B / RTT", win(500.0))
            .dashed()
            .color("#bbbbbb"),
    );
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

pub fn fig5(out: &Fig5Out, dir: &Path, files: &mut Vec<String>) -> anyhow::Result<()> {
    let seeds = out.rows.first().map_or(0, |r| r.seeds);
    let main: Vec<&str> = variants()
        .iter()
        .filter(|v| v.main)
        .map(|v| v.key)
        .collect();
    let [a, b, c] = panels(out, &main, false);
    let stats = if seeds == 1 {
        "one run".to_string()
    } else {
        format!("mean of {seeds} runs, 90 % CI")
    };
    Figure::new(
        format!("Fig. 5: one circuit, middle relay limited to 1500 kB/s ({stats}; Nagle off)"),
        3,
    )
    .panel_size(560, 400)
    .panel(a)
    .panel(b)
    .panel(c)
    .write_svg(dir.join("fig5.svg"))?;
    files.push("fig5.svg".into());

    let refill = [
        "vanilla-circuit",
        "vanilla-circuit-10ms",
        "vanilla-circuit-on-demand",
        "backtap",
        "backtap-100ms",
        "backtap-on-demand",
    ];
    if refill.iter().skip(1).any(|k| !out.curve(k).is_empty()) {
        let [a, b, c] = panels(out, &refill, true);
        Figure::new(
            "Fig. 5 with other refills of the middle's bucket (vanilla: 100 ms, 10 ms, on demand; BackTap: 10 ms, 100 ms, on demand)",
            3,
        )
        .panel_size(560, 400)
        .panel(a)
        .panel(b)
        .panel(c)
        .write_svg(dir.join("fig5_refill.svg"))?;
        files.push("fig5_refill.svg".into());
    }

    if !out.ramp_series.is_empty() {
        let mut rate = Chart::new("delivery rate (1 s bins)")
            .x_label("time (s)")
            .y_label("kB/s")
            .hline(payload_rate(BACKTAP_CELL) / 1e3, "C·498/519");
        let mut swnd = Chart::new("exit hop's send window")
            .x_label("time (s)")
            .y_label("cells");
        let rtts: Vec<u64> = {
            let mut v: Vec<u64> = out.ramp_series.iter().map(|s| s.0).collect();
            v.dedup();
            v
        };
        for (rtt, name, s) in &out.ramp_series {
            let idx = rtts.iter().position(|r| r == rtt).unwrap_or(0);
            let color = hopwise_plot::palette_color(idx);
            let n = format!("{rtt} ms, {name}");
            let style = |x: Series| {
                let x = x.color(color);
                if *name == "linear" {
                    x
                } else {
                    x.dashed()
                }
            };
            rate.push_series(style(Series::line(
                &n,
                s.rate.iter().map(|&(t, r)| (t, r / 1e3)).collect(),
            )));
            swnd.push_series(style(Series::line(&n, s.exit_swnd.clone())));
        }
        Figure::new(
            "BackTap's start-up: +1 cell per round (solid) and slow start, γ = 1 (dashed)",
            2,
        )
        .panel_size(700, 400)
        .panel(rate)
        .panel(swnd)
        .write_svg(dir.join("fig5_ramp.svg"))?;
        files.push("fig5_ramp.svg".into());
    }
    Ok(())
}

pub fn mux(plan: &Plan, out: &MuxOut, dir: &Path, files: &mut Vec<String>) -> anyhow::Result<()> {
    let mut bars = BarChart::new(format!(
        "per-circuit rate, RTT {} ms, run 1",
        plan.mux_rtt_ms
    ))
    .y_label("kB/s");
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
    Figure::new(
        "Multiplexing: 10 bulk circuits through one middle (1500 kB/s), 1 via relays A, 9 via relays B",
        2,
    )
    .panel_size(640, 400)
    .panel(bars)
    .panel(jc)
    .write_svg(dir.join("mux.svg"))?;
    files.push("mux.svg".into());
    Ok(())
}

pub fn latecomer(
    plan: &Plan,
    out: &LateOut,
    dir: &Path,
    files: &mut Vec<String>,
) -> anyhow::Result<()> {
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
    .panel_size(640, 360);
    for l in labels {
        let mut ch = Chart::new(l.to_string())
            .x_label("time (s)")
            .y_label("kB/s")
            .y_range(0.0, 1600.0);
        for shared in [true, false] {
            if let Some(r) = out
                .runs
                .iter()
                .find(|r| r.bottleneck == l && r.shared_base_rtt == shared && r.series.is_some())
            {
                let s = r.series.as_ref().expect("checked");
                let tag = if shared { "shared" } else { "per circuit" };
                for (i, name) in ["first", "late-comer"].iter().enumerate() {
                    let ser = Series::line(
                        format!("{name}, {tag}"),
                        s[i].iter().map(|&(t, x)| (t, x / 1e3)).collect(),
                    )
                    .color(hopwise_plot::palette_color(i));
                    ch.push_series(if shared { ser } else { ser.dashed() });
                }
            }
        }
        fig.push_panel(ch);
    }
    fig.write_svg(dir.join("latecomer.svg"))?;
    files.push("latecomer.svg".into());
    Ok(())
}
