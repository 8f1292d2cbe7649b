//! The paper's claims beside our values. Each numeric check renders its own
//! criterion; values that are means over seeds carry their 90 % interval
//! (Fig. 1, Fig. 10 and Fig. 11), the deterministic symmetric runs (Fig. 3–5)
//! are exact.

use super::fig1::FIG1_NONE;
use super::{acks::ACK_WARM, SensRow};
use super::{Fig10Row, Fig11Row, PairRun, Results, DOWN_RATE, UP_RATE};
use hopwise_experiment::{Claim, Cmp, Estimate};

fn opt(x: Option<u64>) -> String {
    x.map_or("-".into(), |v| v.to_string())
}

/// A count that may be missing, as a value (NaN misses every criterion).
fn num(x: Option<u64>) -> f64 {
    x.map_or(f64::NAN, |v| v as f64)
}

fn kbit(bps: f64) -> String {
    format!("{:.0} kbit/s", bps / 1e3)
}

/// A sweep point's r_sim / `scale` with its interval over the runs
/// (download and upload of a run pair up).
fn r_over(runs: &[PairRun], scale: f64, name: &str) -> Estimate {
    let (xd, xu): (Vec<f64>, Vec<f64>) = runs.iter().map(|r| (r.xd, r.xu)).unzip();
    Estimate::ratio_of_means(name, &xd, &xu).times(1.0 / scale)
}

fn delack(d: bool) -> &'static str {
    if d {
        "delayed ACKs"
    } else {
        "no delayed ACKs"
    }
}

pub(super) fn claims(r: &Results) -> Vec<Claim> {
    let mut c = Vec::new();
    if let Some(f1) = &r.fig1 {
        fig1(&mut c, f1);
    }
    acks(&mut c, &r.ack_bursts, &r.ack_sensitivity);
    for a in &r.asym {
        c.push(Claim::info(
            a.figure.clone(),
            if a.up_buffer_bytes < 30_000 {
                "9000 B up / 30 000 B down: the pendulum persists, downlink used at roughly 50 %".to_string()
            } else {
                "Equal 30 000 B buffers: the uplink buffer never empties, the downlink one often does; downlink badly underused".to_string()
            },
            format!(
                "downlink used {:.0} %, uplink {:.0} %; queue empty {:.0} % of the time at R1, {:.0} % at R2; r_sim {:.2} (Eq. 11: {:.2}); median ACK burst at R2 {}",
                100.0 * a.downlink_utilization,
                100.0 * a.uplink_utilization,
                100.0 * a.downlink_queue_empty,
                100.0 * a.uplink_queue_empty,
                a.r_sim,
                a.r_model,
                opt(a.median_burst_uplink)
            ),
        ));
    }
    fig10(&mut c, &r.fig10);
    fig11(&mut c, &r.fig11);
    if let Some(s) = &r.sizing {
        c.push(Claim::info(
            "Eq. 11 inverse",
            "Sizing buffers with the reciprocal relation avoids the collapse",
            format!(
                "Tp {} ms, Bd {} B, target r = k = {:.1}: helper proposes Bu = {} B; simulated r {:.1}, downlink used {:.0} %, uplink {:.0} %",
                s.tp_ms,
                s.down_buffer_bytes,
                s.target_r,
                s.up_buffer_bytes,
                s.r_sim,
                100.0 * s.downlink_utilization,
                100.0 * s.uplink_utilization
            ),
        ));
    }
    c
}

/// Fig. 1: means over the runs, with t intervals (the download's share) and
/// bootstrap intervals (ratios of mean goodputs).
fn fig1(c: &mut Vec<Claim>, f1: &super::Fig1) {
    let down = DOWN_RATE.bps() as f64;
    let frac = f1.download_bps_no_upload / down;
    let shares: Vec<f64> = f1
        .runs
        .iter()
        .map(|r| r.download_bps_no_upload / down)
        .collect();
    c.push(
        Claim::new(
            "Fig. 1",
            "Without uploads the download gets nearly all of the 2.4 Mbit/s",
        )
        .measured(format!(
            "{} = {:.1} % of 2.4 Mbit/s ({}-{} s, {})",
            kbit(f1.download_bps_no_upload),
            100.0 * frac,
            FIG1_NONE.0,
            FIG1_NONE.1,
            if f1.seeds == 1 {
                "one run".to_string()
            } else {
                format!("mean of {} runs", f1.seeds)
            }
        ))
        .at_least(
            "download goodput / 2.4 Mbit/s",
            Estimate::mean_t90(&shares),
            0.9,
        ),
    );
    let r1 = f1.download_bps_one_upload / f1.upload_bps_one_upload;
    let r2 = f1.download_bps_two_uploads / f1.upload_bps_two_uploads;
    let col = |f: fn(&super::Fig1Run) -> f64| f1.runs.iter().map(f).collect::<Vec<_>>();
    let one = Estimate::ratio_of_means(
        "pendulum fig1 one upload",
        &col(|r| r.download_bps_one_upload),
        &col(|r| r.upload_bps_one_upload),
    );
    let two = Estimate::ratio_of_means(
        "pendulum fig1 two uploads",
        &col(|r| r.download_bps_two_uploads),
        &col(|r| r.upload_bps_two_uploads),
    );
    c.push(
        Claim::new(
            "Fig. 1",
            "With an upload active the download collapses to about the upload's throughput",
        )
        .measured(format!(
            "one upload: download {} vs upload {} (ratio {:.2}); two uploads: download {} vs uploads {} (ratio {:.2})",
            kbit(f1.download_bps_one_upload),
            kbit(f1.upload_bps_one_upload),
            r1,
            kbit(f1.download_bps_two_uploads),
            kbit(f1.upload_bps_two_uploads),
            r2
        ))
        .at_most(
            "download / upload goodput, one upload",
            one,
            3.0,
        )
        .at_most(
            "download / uploads' goodput, two uploads",
            two,
            3.0,
        ),
    );
}

/// Fig. 3–5 (one deterministic run each) and the sensitivity sweep.
fn acks(c: &mut Vec<Claim>, ack: &[super::AckCase], sens: &[SensRow]) {
    let corr = |x: Option<f64>| x.unwrap_or(f64::NAN);
    if let Some(a) = ack.first() {
        c.push(
            Claim::new(
                "Fig. 3",
                "Symmetric link, equal delays, no delayed ACKs: ACK compression, long ACK bursts",
            )
            .measured(format!(
                "median burst {} (downlink {}, uplink {})",
                opt(a.median_burst),
                opt(a.median_burst_downlink),
                opt(a.median_burst_uplink)
            ))
            .at_least("median ACK burst", num(a.median_burst), 5.0),
        );
        c.push(
            Claim::new(
                "Fig. 3.2",
                "Equal delays: the two queues oscillate in phase",
            )
            .measured(format!(
                "correlation {:.2} (samples every {} ms after {ACK_WARM} s; flows start together)",
                corr(a.queue_correlation),
                a.trace_ms
            ))
            .above(
                "correlation of the two queues",
                corr(a.queue_correlation),
                0.0,
            ),
        );
    }
    if let Some(b) = ack.get(1) {
        c.push(
            Claim::new(
                "Fig. 4",
                "Turning on delayed ACKs makes ACK compression mostly disappear",
            )
            .measured(format!(
                "median burst {} (downlink {}, uplink {}); correlation {:.2}",
                opt(b.median_burst),
                opt(b.median_burst_downlink),
                opt(b.median_burst_uplink),
                corr(b.queue_correlation)
            ))
            .at_most("median ACK burst", num(b.median_burst), 2.0),
        );
    }
    if let Some(d) = ack.get(2) {
        c.push(
            Claim::new("Fig. 5", "Unequal delays (1 ms / 5 ms): no ACK compression")
                .measured(format!(
                    "median burst {} (downlink {}, uplink {})",
                    opt(d.median_burst),
                    opt(d.median_burst_downlink),
                    opt(d.median_burst_uplink)
                ))
                .at_most("median ACK burst", num(d.median_burst), 2.0),
        );
        c.push(
            Claim::new(
                "Fig. 5.2",
                "Unequal delays: data pendulum, the queues alternate",
            )
            .measured(format!(
                "correlation {:.2}; mean queues R1 {:.0} B, R2 {:.0} B",
                corr(d.queue_correlation),
                d.mean_queue_down_bytes,
                d.mean_queue_up_bytes
            ))
            .below(
                "correlation of the two queues",
                corr(d.queue_correlation),
                0.0,
            ),
        );
    }
    if !sens.is_empty() {
        let short = |r: &SensRow| r.median_burst.is_some_and(|m| m <= 2);
        let unequal: Vec<&SensRow> = sens.iter().filter(|r| r.unequal_delays()).collect();
        let broken = unequal.iter().filter(|r| short(r)).count();
        let first = |delack: bool| {
            sens.iter()
                .filter(|r| r.delayed_ack == delack && r.upload_start_offset_ms == 0.0)
                .filter(|r| short(r))
                .map(|r| r.upload_endpoint_delay_ms)
                .fold(f64::INFINITY, f64::min)
        };
        let offs: Vec<String> = sens
            .iter()
            .filter(|r| r.upload_start_offset_ms > 0.0)
            .map(|r| {
                format!(
                    "{} ms{}: median {}, corr {:.2}",
                    r.upload_start_offset_ms,
                    if r.delayed_ack { " delack" } else { "" },
                    opt(r.median_burst),
                    corr(r.queue_correlation)
                )
            })
            .collect();
        c.push(Claim::info(
            "§2.1",
            "ACK compression only arises in a perfectly symmetrical setup",
            format!(
                "median burst <= 2 from an upload endpoint delay of {} ms (no delayed ACKs) / {} ms (delayed ACKs) instead of 1 ms; {} of {} asymmetric delays break it. Equal delays with the upload starting later: {}",
                first(false),
                first(true),
                broken,
                unequal.len(),
                offs.join("; ")
            ),
        ));
    }
}

/// Fig. 10: each point's r_sim / r_model, with its interval over the runs.
fn fig10(c: &mut Vec<Claim>, f10: &[Fig10Row]) {
    let dev = |r: &Fig10Row| r.r_sim / r.r_model - 1.0;
    let label = |r: &Fig10Row| format!("Bd {} B / Bu {} B", r.down_buffer_bytes, r.up_buffer_bytes);
    let sel: Vec<&Fig10Row> = f10
        .iter()
        .filter(|r| r.tp_ms == 100 && r.up_buffer_bytes >= 15_000)
        .collect();
    if let Some(worst) = sel
        .iter()
        .max_by(|a, b| dev(a).abs().total_cmp(&dev(b).abs()))
    {
        let within = sel.iter().filter(|r| dev(r).abs() <= 0.4).count();
        let items = sel.iter().map(|r| {
            let name = format!(
                "pendulum fig10 {} {} {}",
                r.tp_ms, r.down_buffer_bytes, r.up_buffer_bytes
            );
            (label(r), r_over(&r.per_run, r.r_model, &name))
        });
        c.push(
            Claim::new(
                "Fig. 10",
                "Tp = 100 ms, uplink buffers >= 15 000 B: simulation follows Eq. 11 (r = Xd/Xu, download over upload goodput; r_sim simulated, r_model from Eq. 11)",
            )
            .measured(format!(
                "{within} of {} points within +-40 %; worst: downlink buffer {} B, uplink {} B, r_sim {:.2} vs r_model {:.2} ({:+.0} %)",
                sel.len(),
                worst.down_buffer_bytes,
                worst.up_buffer_bytes,
                worst.r_sim,
                worst.r_model,
                100.0 * dev(worst)
            ))
            .each(
                "r_sim / r_model",
                items,
                Cmp::Within {
                    target: 1.0,
                    rel: 0.4,
                },
            ),
        );
    }
    let others: Vec<&Fig10Row> = f10
        .iter()
        .filter(|r| r.tp_ms != 100 && r.up_buffer_bytes >= 15_000)
        .collect();
    if !others.is_empty() {
        let within = others.iter().filter(|r| dev(r).abs() <= 0.4).count();
        let mean_dev = others.iter().map(|r| dev(r)).sum::<f64>() / others.len() as f64;
        c.push(Claim::info(
            "Fig. 10",
            "The fit is best at Tp = 100 ms (the paper: 'especially for 100 ms delay')",
            format!(
                "Tp = 20 ms, Bu >= 15 000 B: {within} of {} points within +-40 %, mean deviation {:+.0} % (simulation above the model)",
                others.len(),
                100.0 * mean_dev
            ),
        ));
    }
}

/// Fig. 11: r_sim against k = Cd/Cu per point, with intervals over the runs.
fn fig11(c: &mut Vec<Claim>, f11: &[Fig11Row]) {
    if f11.is_empty() {
        return;
    }
    let k = DOWN_RATE.bps() as f64 / UP_RATE.bps() as f64;
    let label = |r: &Fig11Row| {
        format!(
            "Tp {} ms / {} pkts / {}",
            r.tp_ms,
            r.up_buffer_packets,
            delack(r.delayed_ack)
        )
    };
    let r_k = |r: &Fig11Row| {
        let name = format!(
            "pendulum fig11 {} {} {}",
            r.tp_ms, r.up_buffer_packets, r.delayed_ack
        );
        (label(r), r_over(&r.per_run, k, &name))
    };
    let small: Vec<&Fig11Row> = f11.iter().filter(|r| r.up_buffer_packets <= 10).collect();
    let starved = small.iter().filter(|r| r.r_sim > k).count();
    let desc: Vec<String> = small
        .iter()
        .map(|r| {
            format!(
                "Tp {} ms, {} pkts, {}: r {:.1}, upload at {:.0} % of its link",
                r.tp_ms,
                r.up_buffer_packets,
                delack(r.delayed_ack),
                r.r_sim,
                100.0 * r.upload_bps / UP_RATE.bps() as f64
            )
        })
        .collect();
    c.push(
        Claim::new(
            "Fig. 11",
            "Uplink buffers of <= 10 packets: the upload starves (it gets less than its capacity share, the download is barely hurt)",
        )
        .measured(format!(
            "k = {k:.1}; {starved} of {} points above k: {}",
            small.len(),
            desc.join("; ")
        ))
        .each(
            "r_sim / k (k = Cd/Cu)",
            small.iter().map(|r| r_k(r)),
            Cmp::Above(1.0),
        ),
    );
    let largest = f11.iter().map(|r| r.up_buffer_packets).max().unwrap_or(0);
    let big: Vec<&Fig11Row> = f11
        .iter()
        .filter(|r| r.up_buffer_packets == largest)
        .collect();
    let desc: Vec<String> = big
        .iter()
        .map(|r| {
            format!(
                "Tp {} ms, {}: r {:.1}, downlink used {:.0} %",
                r.tp_ms,
                delack(r.delayed_ack),
                r.r_sim,
                100.0 * r.downlink_utilization
            )
        })
        .collect();
    let mut claim = Claim::new(
        "Fig. 11",
        format!(
            "Large uplink buffers ({largest} packets) bring the download collapse back, with and without delayed ACKs"
        ),
    )
    .measured(desc.join("; "))
    .at_least("largest uplink buffer (packets)", largest as f64, 40.0)
    .each(
        "r_sim / k (k = Cd/Cu)",
        big.iter().map(|r| r_k(r)),
        Cmp::Below(1.0),
    );
    let delayed: Vec<&&Fig11Row> = big.iter().filter(|r| r.delayed_ack).collect();
    if !delayed.is_empty() {
        claim = claim.each(
            "downlink utilisation with delayed ACKs",
            delayed.iter().map(|r| {
                let u: Vec<f64> = r.per_run.iter().map(|p| p.util_d).collect();
                (
                    format!("Tp {} ms", r.tp_ms),
                    if u.is_empty() {
                        Estimate::exact(r.downlink_utilization)
                    } else {
                        Estimate::mean_t90(&u)
                    },
                )
            }),
            Cmp::AtMost(0.5),
        );
    }
    c.push(claim);
}
