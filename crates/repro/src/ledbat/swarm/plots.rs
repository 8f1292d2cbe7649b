//! Figures of the ledbat-swarm reproduction.

use super::results::{self, Row};
use super::{Policy, BUFFER, BUFFERS, TARGET_MS};
use hopwise_experiment::Outputs;
use hopwise_plot::{BarChart, Chart, Figure, Series};

/// Writes `fig8.svg`, `fig9b.svg`, `fig10_11.svg` and `fig12.svg`; `cdfs`
/// and `ccdfs` are Fig. 8's download times and queue histograms by case
/// label ([`Row::label`]).
pub(super) fn write(
    out: &mut Outputs,
    rows: &[Row],
    cdfs: &[(String, Vec<f64>)],
    ccdfs: &[(String, Vec<u64>)],
) -> anyhow::Result<()> {
    // Fig. 8: completion-time CDFs and uplink-queue CCDFs per seed policy.
    let mut fig = Figure::new(
        "Fig. 8: completion time and uplink queue, by seed policy",
        2,
    );
    for policy in Policy::ALL {
        let mut cdf = Chart::new(format!("{}: completion time", policy.name()))
            .x_label("download time (s)")
            .y_label("CDF")
            .y_range(0.0, 1.0);
        let mut ccdf = Chart::new(format!("{}: uplink queue", policy.name()))
            .x_label("queued packets")
            .y_label("P(queue > x)")
            .log_y(true);
        for (name, dl) in cdfs.iter().filter(|(n, _)| n.ends_with_policy(policy)) {
            cdf.push_series(Series::cdf(short(name), dl));
        }
        for (name, h) in ccdfs.iter().filter(|(n, _)| n.ends_with_policy(policy)) {
            let pts: Vec<(f64, f64)> = results::ccdf(h)
                .into_iter()
                .enumerate()
                .filter(|&(_, p)| p > 0.0)
                .map(|(q, p)| (q as f64, p))
                .collect();
            ccdf.push_series(Series::step(short(name), pts));
        }
        fig = fig.panel(cdf).panel(ccdf);
    }
    out.svg("fig8.svg", &fig)?;

    // Fig. 9b: the 50-50 mix over buffer sizes.
    let mut c = Chart::new("Fig. 9b: 50-50 NewReno/LEDBAT swarm (random stay) by access buffer")
        .x_label("access buffer (packets)")
        .y_label("mean download time (s)")
        .log_x(true);
    for class in ["newreno", "ledbat"] {
        let rs: Vec<&Row> = BUFFERS
            .iter()
            .filter_map(|&b| {
                rows.iter().find(|r| {
                    r.population == "50-50"
                        && r.policy == Policy::RandomStay
                        && r.buffer_pkts == b
                        && r.class == class
                })
            })
            .collect();
        c.push_series(
            Series::line_points(
                format!("{class} peers"),
                rs.iter()
                    .map(|r| (r.buffer_pkts as f64, r.mean_s))
                    .collect(),
            )
            .with_error_bars(rs.iter().map(|r| error_bar(r.mean_s, r.ci90_s)).collect()),
        );
    }
    out.svg("fig9b.svg", &c)?;

    // Fig. 10 and 11: homogeneous and 50-50 swarms, random stay.
    let protos = ["newreno", "ledbat", "vegas", "lp", "nice"];
    let pick = |pop: &str, class: &str| {
        rows.iter().find(|r| {
            r.population == pop
                && r.policy == Policy::RandomStay
                && r.buffer_pkts == BUFFER
                && r.class == class
        })
    };
    let bar = |r: Option<&Row>| r.map_or(f64::NAN, |r| r.mean_s);
    let err = |r: Option<&Row>| {
        r.map_or((f64::NAN, f64::NAN), |r| {
            let (down, up) = error_bar(r.mean_s, r.ci90_s);
            (r.mean_s - down, r.mean_s + up)
        })
    };
    let mut homo = Vec::new();
    let (mut tcp_half, mut other_half) = (Vec::new(), Vec::new());
    let mut q_homo = Vec::new();
    let (mut q_tcp, mut q_other) = (Vec::new(), Vec::new());
    for p in protos {
        let r = pick(p, p);
        homo.push((p.to_string(), bar(r), err(r)));
        q_homo.push((p.to_string(), r.map_or(f64::NAN, |r| r.queue_mean_pkts)));
        if p != "newreno" {
            let pop = if p == "ledbat" {
                "50-50".to_string()
            } else {
                format!("newreno-{p}")
            };
            let t = pick(&pop, "newreno");
            let o = pick(&pop, p);
            tcp_half.push((p.to_string(), bar(t), err(t)));
            other_half.push((p.to_string(), bar(o), err(o)));
            q_tcp.push((p.to_string(), t.map_or(f64::NAN, |r| r.queue_mean_pkts)));
            q_other.push((p.to_string(), o.map_or(f64::NAN, |r| r.queue_mean_pkts)));
        }
    }
    let fig = Figure::new(
        "Fig. 10 and 11: swarms by congestion control (random stay)",
        2,
    )
    .panel(
        BarChart::new("Fig. 10a: homogeneous swarms")
            .y_label("mean download time (s)")
            .group_with_errors("all peers", homo),
    )
    .panel(
        BarChart::new("Fig. 10b: homogeneous swarms")
            .y_label("mean uplink queue (packets)")
            .group("all peers", q_homo),
    )
    .panel(
        BarChart::new("Fig. 11a: 50-50 with NewReno (x: the other half's protocol)")
            .y_label("mean download time (s)")
            .group_with_errors("NewReno half", tcp_half)
            .group_with_errors("other half", other_half),
    )
    .panel(
        BarChart::new("Fig. 11b: 50-50 with NewReno")
            .y_label("mean uplink queue (packets)")
            .group("NewReno half", q_tcp)
            .group("other half", q_other),
    );
    out.svg("fig10_11.svg", &fig)?;

    // Fig. 12: heterogeneous LEDBAT targets.
    let f12: Vec<&Row> = rows.iter().filter(|r| r.target_ratio.is_some()).collect();
    let mut ct = Chart::new("Fig. 12a: all-LEDBAT swarm, half τ1, half τ2 = 100 ms")
        .x_label("τ1 / τ2")
        .y_label("mean download time (s)")
        .log_x(true);
    let mut cq = Chart::new("Fig. 12b: uplink queue")
        .x_label("τ1 / τ2")
        .y_label("mean queueing delay (ms)")
        .log_x(true);
    let ratio_of = |r: &Row| r.target_ratio.unwrap_or(1.0);
    let same = |r: &&Row| {
        r.population == "ledbat" && r.policy == Policy::RandomStay && r.buffer_pkts == BUFFER
    };
    for (label, is_t1) in [("τ1 half", true), ("τ2 = 100 ms half", false)] {
        let mut pts: Vec<&Row> = f12
            .iter()
            .copied()
            .filter(|r| r.class.contains(&format!("τ={TARGET_MS} ms")) != is_t1)
            .chain(rows.iter().filter(same))
            .collect();
        pts.sort_by(|a, b| ratio_of(a).total_cmp(&ratio_of(b)));
        ct.push_series(
            Series::line_points(label, pts.iter().map(|r| (ratio_of(r), r.mean_s)).collect())
                .with_error_bars(pts.iter().map(|r| error_bar(r.mean_s, r.ci90_s)).collect()),
        );
        cq.push_series(Series::line_points(
            label,
            pts.iter().map(|r| (ratio_of(r), r.queue_mean_ms)).collect(),
        ));
    }
    let fig = Figure::new("Fig. 12: heterogeneous LEDBAT targets (random stay)", 2)
        .panel(ct)
        .panel(cq);
    out.svg("fig12.svg", &fig)
}

/// "fig8 / 50-50 / 200 pkts / random stay / ledbat" → "50-50: ledbat peers".
fn short(name: &str) -> String {
    let parts: Vec<&str> = name.split(" / ").collect();
    match (parts.get(1), parts.last()) {
        (Some(pop), Some(class)) if pop == class => format!("all {class}"),
        (Some(pop), Some(class)) => format!("{pop}: {class} peers"),
        _ => name.to_string(),
    }
}

trait PolicyName {
    fn ends_with_policy(&self, p: Policy) -> bool;
}

impl PolicyName for String {
    /// Whether a case label names policy `p`.
    fn ends_with_policy(&self, p: Policy) -> bool {
        self.split(" / ").nth(3) == Some(p.name())
    }
}

/// A download time's 90 % error bar (below, above). The t-interval is
/// symmetric and, with few runs, reaches below zero, where no download time
/// lies; the bar stops at zero (the CSVs keep the interval's half-width).
fn error_bar(mean: f64, ci90: f64) -> (f64, f64) {
    // Not `min`, which would turn a missing (NaN) interval into a bar.
    let floor = mean.max(0.0);
    (if ci90 > floor { floor } else { ci90 }, ci90)
}

#[cfg(test)]
mod tests {
    #[test]
    fn error_bars_stop_at_zero() {
        assert_eq!(super::error_bar(2.0, 5.0), (2.0, 5.0));
        assert_eq!(super::error_bar(10.0, 3.0), (3.0, 3.0));
        let (d, u) = super::error_bar(4.0, f64::NAN);
        assert!(d.is_nan() && u.is_nan());
    }
}
