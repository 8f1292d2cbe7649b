//! What a Tor run reports: per circuit goodput over time, TTFB and TTLB,
//! round-trip and queueing delay; per relay queues; their summary for
//! `summary.json`, the CSVs and the SVG plots.
//!
//! Circuit latency is measured per request: its round-trip sample is
//! `TTFB − the server's response delay` (the delay is a deterministic draw
//! of the seed, circuit and request index, `ResponseDelay::draw`, so it is
//! subtracted exactly), i.e. the time the request's first cell took to the
//! exit plus the time the response's first cell took back. Its queueing
//! delay is that sample minus the circuit's propagation round trip (the
//! link delays along the simulator's routes, client → guard → … → exit and
//! back; a server on a node adds two exit↔server round trips, TCP's
//! handshake and the request; without optimistic data a request waits for
//! CONNECTED, one more circuit round trip). Queueing delay therefore holds
//! everything but propagation: queues at relays and links, transmission
//! times, token-bucket waits and window stalls.

use super::tor_build::CircuitInfo;
use hopwise_experiment::{csv, stats};
use hopwise_plot::{Chart, Figure, Series};
use hopwise_proto::time::Dur;
use hopwise_sim::Sim;
use hopwise_tor::{ResponseDelay, TorResults};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io;
use std::path::Path;

/// Most circuits or relays a plot draws one line for (the CSVs have all).
const MAX_PLOTTED: usize = 12;

/// What `install` added, and what the outputs need besides the simulation.
pub struct TorInstalled {
    pub inst: hopwise_tor::Installed,
    pub circuits: Vec<CircuitInfo>,
    /// Propagation round trip per circuit (see the module documentation).
    pub prop_rtt: Vec<Option<Dur>>,
    pub relay_of_host: BTreeMap<String, String>,
    pub response_delay: ResponseDelay,
    pub seed: u64,
    pub warmup: Dur,
    pub goodput_bin: Dur,
}

/// Mean, median, 95th and 99th percentile of a set of samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Dist {
    pub samples: usize,
    pub mean: f64,
    pub median: f64,
    pub p95: f64,
    pub p99: f64,
}

impl Dist {
    pub fn of(xs: &[f64]) -> Dist {
        if xs.is_empty() {
            return Dist {
                samples: 0,
                mean: f64::NAN,
                median: f64::NAN,
                p95: f64::NAN,
                p99: f64::NAN,
            };
        }
        Dist {
            samples: xs.len(),
            mean: stats::mean(xs),
            median: stats::median(xs),
            p95: stats::quantile(xs, 0.95),
            p99: stats::quantile(xs, 0.99),
        }
    }
}

/// One circuit, in `summary.json` (`tor.circuits`) and `tor_circuits.csv`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CircuitSummary {
    pub name: String,
    pub client: String,
    /// Relays, guard first, space-separated.
    pub path: String,
    pub server: String,
    /// Bytes delivered to the client application after the warm-up, over
    /// the time after it (bit/s).
    pub goodput_bps: f64,
    pub delivered_bytes: u64,
    pub requests: usize,
    pub completed: usize,
    pub ttfb_median_s: f64,
    pub ttlb_median_s: f64,
    pub prop_rtt_ms: f64,
    pub rtt_mean_ms: f64,
    pub rtt_median_ms: f64,
    pub rtt_p95_ms: f64,
    pub rtt_p99_ms: f64,
    pub queueing_mean_ms: f64,
    pub queueing_median_ms: f64,
    pub queueing_p95_ms: f64,
    pub queueing_p99_ms: f64,
}

/// One relay, in `summary.json` (`tor.relays`) and `tor_relays.csv`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RelaySummary {
    pub name: String,
    pub host: String,
    /// Cells in circuit queues, mean over the queue samples taken at or
    /// after the warm-up.
    pub mean_queued_cells: f64,
    /// Cells the relay held at once, at most.
    pub peak_cells: u64,
    pub cells_out: u64,
    /// Bytes its token buckets gave out (read, write).
    pub bucket_read_bytes: u64,
    pub bucket_write_bytes: u64,
}

/// The Tor part of `summary.json`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TorSummary {
    pub transport: String,
    /// Sum of the circuits' goodput (bit/s, after the warm-up).
    pub goodput_bps: f64,
    /// Jain's fairness index over the circuits' goodput.
    pub jain: Option<f64>,
    pub requests: usize,
    pub completed: usize,
    /// Over every completed request of every circuit issued at or after
    /// the warm-up (seconds).
    pub ttfb_s: Dist,
    pub ttlb_s: Dist,
    /// Round-trip and queueing delay samples of every request issued at or
    /// after the warm-up (ms).
    pub rtt_ms: Dist,
    pub queueing_ms: Dist,
    pub circuits: Vec<CircuitSummary>,
    pub relays: Vec<RelaySummary>,
}

/// A row of `tor_requests.csv`.
#[derive(Default, Serialize)]
struct RequestRow<'a> {
    circuit: &'a str,
    index: usize,
    issued_s: f64,
    size: u64,
    ttfb_s: f64,
    ttlb_s: f64,
    response_delay_s: f64,
    rtt_ms: f64,
    queueing_ms: f64,
}

/// A row of `tor_goodput.csv`.
#[derive(Default, Serialize)]
struct GoodputRow<'a> {
    time_s: f64,
    circuit: &'a str,
    goodput_bps: f64,
}

/// A row of `tor_relay_queues.csv`.
#[derive(Default, Serialize)]
struct QueueRow<'a> {
    time_s: f64,
    relay: &'a str,
    queued_cells: u64,
    held_cells: u64,
    unsent_bytes: u64,
    unread_bytes: u64,
}

/// A request's round-trip and queueing samples (seconds; NaN without TTFB).
struct Latency {
    delay: f64,
    rtt: f64,
    queueing: f64,
}

impl TorInstalled {
    fn latency(&self, res: &TorResults, ci: usize) -> Vec<Latency> {
        let prop = self.prop_rtt[ci].map_or(f64::NAN, |d| d.as_secs_f64());
        res.circuits[ci]
            .requests
            .iter()
            .enumerate()
            .map(|(k, r)| {
                let delay = self
                    .response_delay
                    .draw(self.seed, ci as u32, k as u32)
                    .as_secs_f64();
                let rtt = r.ttfb.map_or(f64::NAN, |t| t.as_secs_f64() - delay);
                Latency {
                    delay,
                    rtt,
                    queueing: rtt - prop,
                }
            })
            .collect()
    }

    /// Goodput (bit/s) of circuit `ci` after the warm-up, from W(t).
    fn goodput(&self, res: &TorResults) -> Vec<f64> {
        let dt = res.rw_interval.as_secs_f64();
        let end = res.duration.as_secs_f64();
        let from = self.warmup.as_secs_f64();
        res.circuits
            .iter()
            .map(|c| {
                if c.w.is_empty() {
                    return f64::NAN;
                }
                let i0 = ((from / dt).ceil() as usize).min(c.w.len() - 1);
                let i1 = c.w.len() - 1;
                let span = (i1 - i0) as f64 * dt;
                if span <= 0.0 || end <= from {
                    return f64::NAN;
                }
                (c.w[i1] - c.w[i0]) as f64 * 8.0 / span
            })
            .collect()
    }

    /// Whether a request counts in the latency statistics: issued at or
    /// after the warm-up.
    fn measured(&self, r: &hopwise_tor::RequestRecord) -> bool {
        r.issued.as_nanos() >= self.warmup.as_nanos()
    }

    /// Circuit `ci`'s samples of the requests issued at or after the
    /// warm-up: TTFB and TTLB (s), round-trip and queueing delay (ms).
    fn samples(&self, res: &TorResults, ci: usize) -> [Vec<f64>; 4] {
        let mut out = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
        for (r, l) in res.circuits[ci].requests.iter().zip(self.latency(res, ci)) {
            if !self.measured(r) {
                continue;
            }
            let xs = [
                r.ttfb.map_or(f64::NAN, |t| t.as_secs_f64()),
                r.ttlb.map_or(f64::NAN, |t| t.as_secs_f64()),
                l.rtt * 1e3,
                l.queueing * 1e3,
            ];
            for (v, x) in out.iter_mut().zip(xs) {
                if x.is_finite() {
                    v.push(x);
                }
            }
        }
        out
    }

    /// A relay's mean number of queued cells over the queue samples taken
    /// at or after the warm-up (NaN without such samples).
    fn mean_queued(&self, res: &TorResults, n: &hopwise_tor::NodeResult) -> f64 {
        let Some(qi) = res.queue_interval else {
            return f64::NAN;
        };
        let q: Vec<f64> = n
            .samples
            .iter()
            .enumerate()
            .filter(|&(i, _)| {
                (i as u128) * u128::from(qi.as_nanos()) >= u128::from(self.warmup.as_nanos())
            })
            .map(|(_, s)| s.queued_cells as f64)
            .collect();
        if q.is_empty() {
            f64::NAN
        } else {
            stats::mean(&q)
        }
    }

    pub fn summary(&self, sim: &Sim) -> TorSummary {
        let res = self.inst.results(sim);
        let goodput = self.goodput(&res);
        let mut all = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
        let mut circuits = Vec::new();
        for (ci, c) in res.circuits.iter().enumerate() {
            let info = &self.circuits[ci];
            let [ttfb, ttlb, rtt, q] = self.samples(&res, ci);
            let (r, qd) = (Dist::of(&rtt), Dist::of(&q));
            circuits.push(CircuitSummary {
                name: c.name.clone(),
                client: info.hosts[0].clone(),
                path: info.relays.join(" "),
                server: info.server.clone().unwrap_or_else(|| "exit".into()),
                goodput_bps: goodput[ci],
                delivered_bytes: c.delivered,
                requests: c.requests.len(),
                completed: c.completed(),
                ttfb_median_s: stats::median(&ttfb),
                ttlb_median_s: stats::median(&ttlb),
                prop_rtt_ms: self.prop_rtt[ci].map_or(f64::NAN, |d| d.as_secs_f64() * 1e3),
                rtt_mean_ms: r.mean,
                rtt_median_ms: r.median,
                rtt_p95_ms: r.p95,
                rtt_p99_ms: r.p99,
                queueing_mean_ms: qd.mean,
                queueing_median_ms: qd.median,
                queueing_p95_ms: qd.p95,
                queueing_p99_ms: qd.p99,
            });
            for (v, x) in all.iter_mut().zip([ttfb, ttlb, rtt, q]) {
                v.extend(x);
            }
        }
        let relays = res
            .nodes
            .iter()
            .filter_map(|n| {
                let name = self.relay_of_host.get(&n.name)?;
                Some(RelaySummary {
                    name: name.clone(),
                    host: n.name.clone(),
                    mean_queued_cells: self.mean_queued(&res, n),
                    peak_cells: n.peak_cells,
                    cells_out: n.transport.cells_out,
                    bucket_read_bytes: n.bucket_used[0],
                    bucket_write_bytes: n.bucket_used[1],
                })
            })
            .collect();
        let finite: Vec<f64> = goodput.iter().copied().filter(|x| x.is_finite()).collect();
        TorSummary {
            transport: res.transport.to_string(),
            goodput_bps: finite.iter().sum(),
            jain: (finite.len() > 1).then(|| stats::jain(&finite)),
            requests: res.circuits.iter().map(|c| c.requests.len()).sum(),
            completed: res.circuits.iter().map(|c| c.completed()).sum(),
            ttfb_s: Dist::of(&all[0]),
            ttlb_s: Dist::of(&all[1]),
            rtt_ms: Dist::of(&all[2]),
            queueing_ms: Dist::of(&all[3]),
            circuits,
            relays,
        }
    }

    pub fn write(
        &self,
        dir: &Path,
        sim: &Sim,
        summary: &TorSummary,
        files: &mut Vec<String>,
    ) -> io::Result<()> {
        let res = self.inst.results(sim);
        let io = |e: anyhow::Error| io::Error::other(format!("{e:#}"));
        let mut table =
            |name: &str, rows: &mut dyn FnMut(&mut csv::Writer) -> anyhow::Result<()>| {
                let mut w = csv::Writer::create(&dir.join(name)).map_err(io)?;
                rows(&mut w).map_err(io)?;
                w.finish().map_err(io)?;
                files.push(name.into());
                Ok::<_, io::Error>(())
            };
        table("tor_circuits.csv", &mut |w| {
            w.header_of(&CircuitSummary::default())?;
            summary.circuits.iter().try_for_each(|c| w.row(c))
        })?;
        table("tor_relays.csv", &mut |w| {
            w.header_of(&RelaySummary::default())?;
            summary.relays.iter().try_for_each(|r| w.row(r))
        })?;
        table("tor_requests.csv", &mut |w| {
            w.header_of(&RequestRow::default())?;
            for (ci, c) in res.circuits.iter().enumerate() {
                for (k, (r, l)) in c.requests.iter().zip(self.latency(&res, ci)).enumerate() {
                    w.row(&RequestRow {
                        circuit: &c.name,
                        index: k,
                        issued_s: r.issued.as_secs_f64(),
                        size: r.size,
                        ttfb_s: r.ttfb.map_or(f64::NAN, |t| t.as_secs_f64()),
                        ttlb_s: r.ttlb.map_or(f64::NAN, |t| t.as_secs_f64()),
                        response_delay_s: l.delay,
                        rtt_ms: l.rtt * 1e3,
                        queueing_ms: l.queueing * 1e3,
                    })?;
                }
            }
            Ok(())
        })?;
        let series = self.goodput_series(&res);
        table("tor_goodput.csv", &mut |w| {
            w.header_of(&GoodputRow::default())?;
            for (name, pts) in &series {
                for &(t, v) in pts {
                    w.row(&GoodputRow {
                        time_s: t,
                        circuit: name,
                        goodput_bps: v,
                    })?;
                }
            }
            Ok(())
        })?;
        let qdt = res.queue_interval.map_or(f64::NAN, |d| d.as_secs_f64());
        let relays: Vec<(&str, &hopwise_tor::NodeResult)> = res
            .nodes
            .iter()
            .filter_map(|n| Some((self.relay_of_host.get(&n.name)?.as_str(), n)))
            .collect();
        table("tor_relay_queues.csv", &mut |w| {
            w.header_of(&QueueRow::default())?;
            for (name, n) in &relays {
                for (i, s) in n.samples.iter().enumerate() {
                    w.row(&QueueRow {
                        time_s: i as f64 * qdt,
                        relay: name,
                        queued_cells: s.queued_cells,
                        held_cells: s.pool_cells,
                        unsent_bytes: s.unsent_bytes,
                        unread_bytes: s.unread_bytes,
                    })?;
                }
            }
            Ok(())
        })?;

        // Goodput over time.
        let n = series.len();
        let mut chart = Chart::new(format!(
            "Goodput per circuit{}",
            shown(n.min(MAX_PLOTTED), n, "circuits")
        ))
        .x_label("time (s)")
        .y_label("goodput (Mbit/s)");
        for (name, pts) in series.iter().take(MAX_PLOTTED) {
            chart.push_series(Series::line(
                name.clone(),
                pts.iter().map(|&(t, v)| (t, v / 1e6)).collect(),
            ));
        }
        if n > 1 {
            let mut total: Vec<(f64, f64)> = Vec::new();
            for (_, pts) in &series {
                for (i, &(t, v)) in pts.iter().enumerate() {
                    if total.len() <= i {
                        total.push((t, 0.0));
                    }
                    total[i].1 += v / 1e6;
                }
            }
            chart.push_series(
                Series::line("all circuits", total)
                    .dashed()
                    .color("#444444"),
            );
        }
        chart.write_svg(dir.join("tor_goodput.svg"))?;
        files.push("tor_goodput.svg".into());

        // TTFB, TTLB and queueing-delay CDFs: all requests, and each
        // circuit when there are few.
        let mut fig = Figure::new("Request times over the circuits (CDFs)", 3).panel_size(420, 320);
        let per: Vec<(String, [Vec<f64>; 3])> = res
            .circuits
            .iter()
            .enumerate()
            .map(|(ci, c)| {
                let [ttfb, ttlb, _, q] = self.samples(&res, ci);
                (c.name.clone(), [ttfb, ttlb, q])
            })
            .collect();
        for (k, (title, unit)) in [
            ("(a) time to first byte", "TTFB (s)"),
            ("(b) time to last byte", "TTLB (s)"),
            ("(c) queueing delay", "queueing delay (ms)"),
        ]
        .into_iter()
        .enumerate()
        {
            let mut c = Chart::new(title)
                .x_label(unit)
                .y_label("fraction of requests");
            let pooled: Vec<f64> = per.iter().flat_map(|(_, v)| v[k].iter().copied()).collect();
            if per.len() <= MAX_PLOTTED {
                for (name, v) in &per {
                    if !v[k].is_empty() {
                        c.push_series(Series::cdf(name.clone(), &v[k]));
                    }
                }
            }
            if per.len() > 1 && !pooled.is_empty() {
                c.push_series(
                    Series::cdf("all circuits", &pooled)
                        .dashed()
                        .color("#444444"),
                );
            }
            fig.push_panel(c);
        }
        fig.write_svg(dir.join("tor_requests.svg"))?;
        files.push("tor_requests.svg".into());

        // Relay queues over time: the relays with the largest mean queue.
        let mut order: Vec<usize> = (0..relays.len()).collect();
        let mean: Vec<f64> = relays
            .iter()
            .map(|(_, n)| self.mean_queued(&res, n))
            .collect();
        order.sort_by(|&a, &b| mean[b].total_cmp(&mean[a]).then(a.cmp(&b)));
        let nr = relays.len();
        let mut q = Chart::new(format!(
            "Cells in circuit queues per relay{}",
            if nr > MAX_PLOTTED {
                format!(" ({MAX_PLOTTED} of {nr} relays: the largest mean queues)")
            } else {
                String::new()
            }
        ))
        .x_label("time (s)")
        .y_label("queued cells");
        for &i in order.iter().take(MAX_PLOTTED) {
            let (name, n) = relays[i];
            q.push_series(Series::line(
                name.to_string(),
                n.samples
                    .iter()
                    .enumerate()
                    .map(|(k, s)| (k as f64 * qdt, s.queued_cells as f64))
                    .collect(),
            ));
        }
        q.write_svg(dir.join("tor_relay_queues.svg"))?;
        files.push("tor_relay_queues.svg".into());
        Ok(())
    }

    /// Goodput per circuit in bins of the scenario's goodput interval (a
    /// whole number of W(t) samples, at least one): `(mid-bin time, bit/s)`.
    fn goodput_series(&self, res: &TorResults) -> Vec<(String, Vec<(f64, f64)>)> {
        let dt = res.rw_interval.as_secs_f64();
        let k = ((self.goodput_bin.as_secs_f64() / dt).round() as usize).max(1);
        let bin = k as f64 * dt;
        res.circuits
            .iter()
            .map(|c| {
                let pts = (0..c.w.len().saturating_sub(1) / k)
                    .map(|j| {
                        let b = (c.w[(j + 1) * k] - c.w[j * k]) as f64 * 8.0 / bin;
                        ((j as f64 + 0.5) * bin, b)
                    })
                    .collect();
                (c.name.clone(), pts)
            })
            .collect()
    }
}

fn shown(shown: usize, n: usize, what: &str) -> String {
    if shown < n {
        format!(" ({shown} of {n} {what})")
    } else {
        String::new()
    }
}
