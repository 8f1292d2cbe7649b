//! The CSVs and figures: every plotted number is in a CSV, one row struct
//! per file (the column names are the fields').

use super::fig10::model_curve;
use super::setup::window;
use super::{
    AckCase, AckPlot, AsymCase, AsymPlot, Fig1, Fig10Row, Fig11Row, Fig1Traces, Plan, Results,
    SensRow, DOWN_RATE, UP_RATE,
};
use hopwise_experiment::figs;
use hopwise_experiment::Outputs;
use hopwise_plot::{palette_color, BarChart, Chart, Figure, Series};
use serde::Serialize;

/// Writes what `r` holds so far (a part not run yet writes nothing).
pub(super) fn write(plan: &Plan, r: &Results, out: &mut Outputs) -> anyhow::Result<()> {
    if let Some(f1) = &r.fig1 {
        fig1(f1, &r.plots.fig1, out)?;
    }
    if !r.ack_bursts.is_empty() {
        ack_cases(plan, &r.ack_bursts, &r.plots.ack, out)?;
    }
    if !r.ack_sensitivity.is_empty() {
        sensitivity(&r.ack_sensitivity, out)?;
    }
    if !r.asym.is_empty() {
        asym(&r.asym, &r.plots.asym, out)?;
    }
    if !r.fig10.is_empty() {
        fig10(plan, &r.fig10, out)?;
    }
    if !r.fig11.is_empty() {
        fig11(plan, &r.fig11, out)?;
    }
    Ok(())
}

// ---------------------------------------------------------------- rows

/// `fig1_goodput.csv`: each flow's goodput in 1 s bins.
#[derive(Serialize, Default)]
struct Fig1GoodputRow {
    time_s: f64,
    download_bps: f64,
    upload1_bps: f64,
    upload2_bps: f64,
    upload3_bps: f64,
}

/// `fig1_queues.csv`: a queue's occupancy over time (long format).
#[derive(Serialize, Default)]
struct QueueRow {
    time_s: f64,
    queue: &'static str,
    bytes: f64,
}

/// `ack_bursts.csv`, `asym_bursts.csv`: how many runs of `burst` pure ACKs
/// left a queue.
#[derive(Serialize, Default)]
pub(super) struct BurstRow {
    pub case: String,
    pub queue: &'static str,
    pub burst: usize,
    pub count: u64,
}

/// `ack_queues.csv`: both bottleneck queues over time.
#[derive(Serialize, Default)]
struct AckQueueRow {
    case: String,
    time_s: f64,
    queue_down_bytes: f64,
    queue_up_bytes: f64,
}

/// `ack_windows.csv`, `asym_series.csv`: a named series (cwnd, data in
/// flight, a queue) over time, in bytes (long format).
#[derive(Serialize, Default)]
struct SeriesRow {
    case: String,
    time_s: f64,
    series: &'static str,
    bytes: f64,
}

/// `fig10_model.csv`: Eq. 11 on the plotted grid.
#[derive(Serialize, Default)]
struct ModelRow {
    tp_ms: u64,
    down_buffer_bytes: u64,
    up_buffer_bytes: f64,
    r_model: f64,
}

/// Rows of a histogram (`h[n]` runs of `n` ACKs), from length 1 on.
pub(super) fn burst_rows(case: &str, queue: &'static str, h: &[u64]) -> Vec<BurstRow> {
    h.iter()
        .enumerate()
        .skip(1)
        .map(|(burst, &count)| BurstRow {
            case: case.to_string(),
            queue,
            burst,
            count,
        })
        .collect()
}

fn series_rows(case: &str, series: &'static str, pts: &[(f64, f64)]) -> Vec<SeriesRow> {
    pts.iter()
        .map(|&(time_s, bytes)| SeriesRow {
            case: case.to_string(),
            time_s,
            series,
            bytes,
        })
        .collect()
}

// ---------------------------------------------------------------- Fig. 1

fn fig1(f1: &Fig1, t: &Fig1Traces, out: &mut Outputs) -> anyhow::Result<()> {
    if let Some(first) = t.goodput.first() {
        let bps = |f: usize, i: usize| {
            t.goodput
                .get(f)
                .and_then(|g| g.get(i))
                .map_or(f64::NAN, |p| p.1)
        };
        let rows: Vec<Fig1GoodputRow> = first
            .iter()
            .enumerate()
            .map(|(i, &(time_s, download_bps))| Fig1GoodputRow {
                time_s,
                download_bps,
                upload1_bps: bps(1, i),
                upload2_bps: bps(2, i),
                upload3_bps: bps(3, i),
            })
            .collect();
        let queues = [("R1 (downlink)", &t.q_down), ("R2 (uplink)", &t.q_up)];
        let qrows: Vec<QueueRow> = queues
            .iter()
            .flat_map(|&(queue, q)| {
                q.iter().map(move |&(time_s, bytes)| QueueRow {
                    time_s,
                    queue,
                    bytes,
                })
            })
            .collect();
        let mbit = |v: &[(f64, f64)]| v.iter().map(|&(t, b)| (t, b / 1e6)).collect::<Vec<_>>();
        let mut gp = Chart::new("Goodput (1 s bins)")
            .x_label("time (s)")
            .x_range(0.0, 100.0)
            .y_label("goodput (Mbit/s)")
            .band_x(30.0, 50.0, "1 upload")
            .band_x(60.0, 95.0, "2 uploads");
        let names = [
            "download",
            "upload 1 (30-50 s)",
            "upload 2 (60-95 s)",
            "upload 3 (60-95 s)",
        ];
        for (i, g) in t.goodput.iter().enumerate() {
            let mut s = Series::step(names[i], mbit(g));
            if i > 0 {
                s = s.dashed();
            }
            gp = gp.series(s);
        }
        let q = Chart::new("Queue occupancy")
            .x_label("time (s)")
            .x_range(0.0, 100.0)
            .y_label("queue (bytes)")
            .series(Series::line(queues[0].0, t.q_down.clone()))
            .series(Series::line(queues[1].0, t.q_up.clone()))
            .hline(30_000.0, "buffer");
        let fig = Figure::new(
            "Fig. 1: download (2.4 Mbit/s) and uploads (196 kbit/s), 30 000 B buffers",
            1,
        )
        .panel(gp)
        .panel(q)
        .panel_size(900, 330);
        out.svg("fig1.svg", &fig)?;
        out.csv("fig1_goodput.csv", &rows)?;
        out.csv("fig1_queues.csv", &qrows)?;
    }
    out.csv("fig1_runs.csv", &f1.runs)
}

// ---------------------------------------------------------------- Fig. 3-5

fn ack_cases(
    plan: &Plan,
    cases: &[AckCase],
    plots: &[AckPlot],
    out: &mut Outputs,
) -> anyhow::Result<()> {
    let mut hist_rows = Vec::new();
    let mut q_rows = Vec::new();
    let mut w_rows = Vec::new();
    // The paper's Fig. 3 and 5 show about 30-35 s; we show a window of the same length.
    let (w0, w1) = window(plan.ack_secs as f64, 10.0);
    let (z0, z1) = window(plan.ack_secs as f64, 2.0);
    let mut figures = Vec::new();
    for (k, (m, p)) in cases.iter().zip(plots).enumerate() {
        hist_rows.extend(burst_rows(&m.case, "downlink", &m.histogram_downlink));
        hist_rows.extend(burst_rows(&m.case, "uplink", &m.histogram_uplink));
        for (a, b) in p
            .q_d
            .iter()
            .zip(&p.q_u)
            .filter(|(a, _)| a.0 >= w0 && a.0 < w1)
        {
            q_rows.push(AckQueueRow {
                case: m.case.clone(),
                time_s: a.0,
                queue_down_bytes: a.1,
                queue_up_bytes: b.1,
            });
        }
        let clip = |v: &[(f64, f64)], a: f64, b: f64| -> Vec<(f64, f64)> {
            v.iter().copied().filter(|p| p.0 >= a && p.0 < b).collect()
        };
        let windows = [
            ("D1 cwnd", clip(&p.cwnd_d, w0, w1)),
            ("D1 in flight", clip(&p.pipe_d, w0, w1)),
            ("U2 cwnd", clip(&p.cwnd_u, w0, w1)),
            ("U2 in flight", clip(&p.pipe_u, w0, w1)),
        ];
        for (name, v) in &windows {
            w_rows.extend(series_rows(&m.case, name, v));
        }
        let [cwnd_d, pipe_d, cwnd_u, pipe_u] = windows.map(|w| w.1);
        let d_panel = lines_panel(
            "D1: cwnd and data in flight; queue at R1",
            "window, queue (bytes)",
            vec![
                ("D1 cwnd", cwnd_d),
                ("D1 in flight", pipe_d),
                ("queue R1", clip(&p.q_d, w0, w1)),
            ],
            &[],
        );
        let zoom = lines_panel(
            "Zoom: queues at R1 and R2",
            "queue (bytes)",
            vec![
                ("queue R1 (D1's data)", clip(&p.q_d, z0, z1)),
                ("queue R2 (U2's data)", clip(&p.q_u, z0, z1)),
            ],
            &["queue R2 (U2's data)"],
        );
        let u_panel = lines_panel(
            "U2: cwnd and data in flight; queue at R2",
            "window, queue (bytes)",
            vec![
                ("U2 cwnd", cwnd_u),
                ("U2 in flight", pipe_u),
                ("queue R2", clip(&p.q_u, w0, w1)),
            ],
            &[],
        );
        let hist = burst_histogram(
            &format!(
                "ACK bursts: median {} (correlation of queues {})",
                m.median_burst.map_or("-".into(), |x| x.to_string()),
                m.queue_correlation
                    .map_or("-".into(), |c| format!("{c:.2}"))
            ),
            &[
                ("R1 (downlink)", &m.histogram_downlink),
                ("R2 (uplink)", &m.histogram_uplink),
            ],
        );
        let name = format!("ack_{}.svg", ["a", "b", "c", "d"][k]);
        let fig = Figure::new(
            format!(
                "{}: symmetric 2.4/2.4 Mbit/s, 30 000 B buffers, {}",
                m.figure, m.case
            ),
            2,
        )
        .panel(d_panel)
        .panel(zoom)
        .panel(u_panel)
        .panel(hist)
        .panel_size(620, 340);
        out.svg(&name, &fig)?;
        figures.push(name);
    }
    out.csv("ack_bursts.csv", &hist_rows)?;
    out.csv("ack_queues.csv", &q_rows)?;
    out.csv("ack_windows.csv", &w_rows)?;
    let figures: Vec<&str> = figures.iter().map(String::as_str).collect();
    out.data(
        &figures,
        &["ack_bursts.csv", "ack_queues.csv", "ack_windows.csv"],
    );
    Ok(())
}

/// A time-series panel of `lines`; a line that coincides with an earlier
/// one says so in its legend entry and is drawn dashed on top of it, as are
/// the lines named in `dashed`.
fn lines_panel(
    title: &str,
    y_label: &str,
    lines: Vec<(&str, Vec<(f64, f64)>)>,
    dashed: &[&str],
) -> Chart {
    let pts: Vec<&[(f64, f64)]> = lines.iter().map(|l| l.1.as_slice()).collect();
    let names: Vec<String> = lines.iter().map(|l| l.0.to_string()).collect();
    let span = figs::y_span(&pts);
    let hidden = figs::overlaps(&pts, span);
    // "D1 in flight (= cwnd)", "queue R2 (U2's data) (= queue R1)".
    let short = |i: usize| {
        let n = names[i].split(" (").next().unwrap_or_default();
        n.strip_prefix("D1 ")
            .or_else(|| n.strip_prefix("U2 "))
            .unwrap_or(n)
            .to_string()
    };
    let labels = figs::overlap_names(&names, &pts, span, &short);
    let mut c = Chart::new(title).x_label("time (s)").y_label(y_label);
    for ((label, (name, v)), o) in labels.into_iter().zip(lines).zip(hidden) {
        let s = Series::line(label, v);
        c.push_series(if o.is_some() || dashed.contains(&name) {
            s.dashed()
        } else {
            s
        });
    }
    c
}

/// Bar chart of run-length histograms as fractions, lengths 1–29 and "30+".
pub fn burst_histogram(title: &str, groups: &[(&str, &Vec<u64>)]) -> BarChart {
    let mut c = BarChart::new(title)
        .x_label("ACKs between two data packets")
        .y_label("fraction of bursts");
    for (name, h) in groups {
        let total: u64 = h.iter().skip(1).sum();
        let mut bars = Vec::new();
        for n in 1..30 {
            let v = h.get(n).copied().unwrap_or(0);
            bars.push((n.to_string(), v as f64 / total.max(1) as f64));
        }
        let tail: u64 = h.iter().skip(30).sum();
        bars.push(("30+".into(), tail as f64 / total.max(1) as f64));
        c = c.group(*name, bars);
    }
    c
}

fn sensitivity(rows: &[SensRow], out: &mut Outputs) -> anyhow::Result<()> {
    // x: how much farther the upload endpoint is than the download endpoint (µs).
    let pts = |delack: bool, f: fn(&SensRow) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|r| r.delayed_ack == delack && r.unequal_delays())
            .map(|r| ((r.upload_endpoint_delay_ms - 1.0) * 1000.0, f(r)))
            .collect()
    };
    let equal = |delack: bool| {
        rows.iter()
            .find(|r| r.delayed_ack == delack && r.equal_delays())
            .and_then(|r| r.median_burst)
            .map_or("-".to_string(), |m| m.to_string())
    };
    let med = |r: &SensRow| r.median_burst.map_or(f64::NAN, |x| x as f64);
    let cor = |r: &SensRow| r.queue_correlation.unwrap_or(f64::NAN);
    let fig = Figure::new(
        format!(
            "ACK compression needs exact symmetry (equal delays: median burst {}, {} with delayed ACKs)",
            equal(false),
            equal(true)
        ),
        2,
    )
    .panel(
        Chart::new("Median ACK burst")
            .x_label("extra delay of the upload endpoint (µs)")
            .y_label("ACKs")
            .log_x(true)
            .series(Series::line_points("no delayed ACKs", pts(false, med)))
            .series(Series::line_points("delayed ACKs", pts(true, med))),
    )
    .panel(
        Chart::new("Correlation of the two queues")
            .x_label("extra delay of the upload endpoint (µs)")
            .y_label("Pearson r")
            .log_x(true)
            .y_range(-1.0, 1.0)
            .series(Series::line_points("no delayed ACKs", pts(false, cor)))
            .series(Series::line_points("delayed ACKs", pts(true, cor))),
    )
    .panel_size(560, 340);
    out.svg("ack_sensitivity.svg", &fig)?;
    out.csv("ack_sensitivity.csv", rows)
}

// ---------------------------------------------------------------- Fig. 6-9

fn asym(cases: &[AsymCase], plots: &[AsymPlot], out: &mut Outputs) -> anyhow::Result<()> {
    let mut series = Vec::new();
    let mut bursts = Vec::new();
    let mut figures = Vec::new();
    for (m, p) in cases.iter().zip(plots) {
        for (name, v) in p.up_lines.iter().chain(&p.down_lines) {
            series.extend(series_rows(&m.case, name, v));
        }
        bursts.extend(burst_rows(&m.case, "uplink", &m.histogram_uplink));
        let up = lines_panel(
            "Upload (U2): cwnd, data in flight, queue at R2",
            "window, queue (bytes)",
            p.up_lines.clone(),
            &[],
        )
        .hline(m.up_buffer_bytes as f64, "uplink buffer");
        let down = lines_panel(
            "Download (D1): cwnd, data in flight, queue at R1",
            "window, queue (bytes)",
            p.down_lines.clone(),
            &[],
        )
        .hline(m.down_buffer_bytes as f64, "downlink buffer");
        let hist = burst_histogram(
            &format!(
                "ACK bursts at R2 (uplink): median {}",
                m.median_burst_uplink.map_or("-".into(), |x| x.to_string())
            ),
            &[("R2 (uplink)", &m.histogram_uplink)],
        );
        let fig = Figure::new(
            format!(
                "{}: 2.4 Mbit/s down, 196 kbit/s up, {}; downlink used {:.0} %",
                m.figure,
                m.case,
                100.0 * m.downlink_utilization
            ),
            1,
        )
        .panel(up)
        .panel(down)
        .panel(hist)
        .panel_size(900, 300);
        let name = format!("asym_{}.svg", m.up_buffer_bytes);
        out.svg(&name, &fig)?;
        figures.push(name);
    }
    out.csv("asym_series.csv", &series)?;
    out.csv("asym_bursts.csv", &bursts)?;
    let figures: Vec<&str> = figures.iter().map(String::as_str).collect();
    out.data(&figures, &["asym_series.csv", "asym_bursts.csv"]);
    Ok(())
}

// ---------------------------------------------------------------- Fig. 10

fn fig10(plan: &Plan, rows: &[Fig10Row], out: &mut Outputs) -> anyhow::Result<()> {
    let k = DOWN_RATE.bps() as f64 / UP_RATE.bps() as f64;
    let runs = rows.iter().map(|r| r.runs).max().unwrap_or(1);
    let mut fig = Figure::new(
        if runs > 1 {
            "Fig. 10: r = Xd/Xu, simulation (points, min-max over runs) and Eq. 11 (dashed)"
        } else {
            "Fig. 10: r = Xd/Xu, simulation (points, one run each) and Eq. 11 (dashed)"
        },
        1,
    );
    // Eq. 11 on a fine grid, per (Tp, Bd).
    let mut curves = Vec::new();
    for &tp in &plan.fig10_tp_ms {
        for &bd in &plan.fig10_down_buffers {
            curves.push((tp, bd, model_curve(tp, bd, &plan.fig10_up_buffers)));
        }
    }
    let model_rows: Vec<ModelRow> = curves
        .iter()
        .flat_map(|&(tp_ms, down_buffer_bytes, ref c)| {
            c.iter().map(move |&(up_buffer_bytes, r_model)| ModelRow {
                tp_ms,
                down_buffer_bytes,
                up_buffer_bytes,
                r_model,
            })
        })
        .collect();
    // One y range for every panel, so that they compare at a glance.
    let y_range = figs::decade_range(
        rows.iter()
            .flat_map(|r| [r.r_sim, r.r_sim_min, r.r_sim_max])
            .chain(curves.iter().flat_map(|c| c.2.iter().map(|p| p.1)))
            .chain([k]),
    );
    for &tp in &plan.fig10_tp_ms {
        let mut c = Chart::new(format!("Tp = {tp} ms"))
            .x_label("uplink buffer (bytes)")
            .y_label("r = Xd / Xu")
            .log_y(true)
            .hline(k, "k = Cd/Cu");
        if let Some((lo, hi)) = y_range {
            c = c.y_range(lo, hi);
        }
        for (i, &bd) in plan.fig10_down_buffers.iter().enumerate() {
            let pts: Vec<&Fig10Row> = rows
                .iter()
                .filter(|r| r.tp_ms == tp && r.down_buffer_bytes == bd)
                .collect();
            let color = palette_color(i);
            c = c
                .series(
                    Series::points(
                        format!("sim, Bd = {bd} B"),
                        pts.iter()
                            .map(|r| (r.up_buffer_bytes as f64, r.r_sim))
                            .collect(),
                    )
                    .with_error_bars(pts.iter().map(|r| (r.r_sim_min, r.r_sim_max)).collect())
                    .color(color),
                )
                .series(
                    Series::line(
                        format!("model, Bd = {bd} B"),
                        curves
                            .iter()
                            .find(|c| c.0 == tp && c.1 == bd)
                            .map(|c| c.2.clone())
                            .unwrap_or_default(),
                    )
                    .dashed()
                    .color(color),
                );
        }
        fig = fig.panel(c);
    }
    out.svg("fig10.svg", &fig.panel_size(760, 420))?;
    out.csv("fig10.csv", rows)?;
    out.csv("fig10_model.csv", &model_rows)
}

// ---------------------------------------------------------------- Fig. 11

fn fig11(plan: &Plan, rows: &[Fig11Row], out: &mut Outputs) -> anyhow::Result<()> {
    let k = DOWN_RATE.bps() as f64 / UP_RATE.bps() as f64;
    let mut fig = Figure::new(
        "Fig. 11: downlink buffer 50 packets, uplink buffer in packets, TCP buffers 256 KiB",
        2,
    );
    let y_range = figs::decade_range(
        rows.iter()
            .flat_map(|r| [r.r_sim, r.r_sim_min, r.r_sim_max])
            .chain([k]),
    );
    for &tp in &plan.fig11_tp_ms {
        let mut c = Chart::new(format!("Tp = {tp} ms"))
            .x_label("uplink buffer (packets)")
            .y_label("r = Xd / Xu")
            .log_y(true)
            .hline(k, "k");
        if let Some((lo, hi)) = y_range {
            c = c.y_range(lo, hi);
        }
        for (i, delack) in [true, false].into_iter().enumerate() {
            let pts: Vec<&Fig11Row> = rows
                .iter()
                .filter(|r| r.tp_ms == tp && r.delayed_ack == delack)
                .collect();
            c = c.series(
                Series::line_points(
                    if delack {
                        "delayed ACKs"
                    } else {
                        "no delayed ACKs"
                    },
                    pts.iter()
                        .map(|r| (r.up_buffer_packets as f64, r.r_sim))
                        .collect(),
                )
                .with_error_bars(pts.iter().map(|r| (r.r_sim_min, r.r_sim_max)).collect())
                .color(palette_color(i)),
            );
        }
        fig = fig.panel(c);
    }
    out.svg("fig11.svg", &fig.panel_size(580, 420))?;
    out.csv("fig11.csv", rows)
}
