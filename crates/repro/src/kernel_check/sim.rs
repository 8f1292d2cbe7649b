//! The simulator's half: the lab's dumbbell as a scenario, run over seeds,
//! with its defaults or one mechanism changed (`--set` overrides).

use super::{Case, Measured, Plan, RATE_BPS, WARM_S};
use anyhow::{anyhow, Result};
use hopwise_experiment::Progress;
use hopwise_proto::time::{Dur, Time};
use hopwise_sim::report::Summary;
use serde::Serialize;

/// The bottleneck's data direction in the simulator's summary.
const BOTTLENECK: &str = "bottleneck:ab";
/// Its reverse (ACK) direction.
const REVERSE: &str = "bottleneck:ba";

/// The simulator with one mechanism changed (the drop-rate check's
/// candidates); the first is the defaults.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Variant {
    pub name: &'static str,
    /// `--set` overrides.
    pub set: &'static [&'static str],
    /// What the kernel does, for the table.
    pub kernel: &'static str,
}

pub const VARIANTS: [Variant; 13] = [
    Variant {
        name: "defaults",
        set: &[],
        kernel: "",
    },
    Variant {
        name: "PRR on",
        set: &["defaults.tcp.prr=true"],
        kernel: "PRR since Linux 3.2",
    },
    Variant {
        name: "Linux RTT estimator",
        set: &["defaults.tcp.rtt_estimator=linux"],
        kernel: "tcp_rtt_estimator, 200 ms minimum RTO",
    },
    Variant {
        name: "PRR + Linux RTT estimator",
        set: &["defaults.tcp.prr=true", "defaults.tcp.rtt_estimator=linux"],
        kernel: "both",
    },
    Variant {
        name: "initial window 4",
        set: &["defaults.tcp.initial_window=4"],
        kernel: "10 (the simulator's default too)",
    },
    Variant {
        name: "delayed ACKs off",
        set: &["defaults.tcp.delayed_ack=false"],
        kernel: "on, with quick ACKs at the start",
    },
    Variant {
        name: "access queue 10 pkt",
        set: &["link.access.queue=10pkt"],
        kernel: "veth with `noqueue`: no queue at all on the senders' side",
    },
    Variant {
        name: "min RTO 1 s",
        set: &["defaults.tcp.min_rto=1s"],
        kernel: "200 ms (1 s is RFC 6298's and ns-3's default)",
    },
    Variant {
        name: "dupthresh 2",
        set: &["defaults.tcp.dupthresh=2"],
        kernel: "3, but RACK (tcp_recovery = 1) marks a hole lost a quarter RTT after one later segment is SACKed",
    },
    Variant {
        name: "dupthresh 1",
        set: &["defaults.tcp.dupthresh=1"],
        kernel: "a crude stand-in for RACK's loss detection",
    },
    Variant {
        name: "RACK-TLP on",
        set: &["defaults.tcp.rack=true"],
        kernel: "RACK-TLP (tcp_recovery = 1, tcp_early_retrans = 3)",
    },
    Variant {
        name: "RACK-TLP + PRR + Linux RTT estimator",
        set: &[
            "defaults.tcp.rack=true",
            "defaults.tcp.prr=true",
            "defaults.tcp.rtt_estimator=linux",
        ],
        kernel: "all three",
    },
    Variant {
        name: "HyStart++ on",
        set: &["defaults.tcp.hystart=true"],
        kernel: "reno has no HyStart (CUBIC only)",
    },
];

/// One variant over the seeds.
#[derive(Clone, Debug, Serialize)]
pub struct SimRun {
    pub variant: String,
    pub set: Vec<String>,
    /// What the kernel does instead.
    pub kernel: String,
    pub runs: Vec<Measured>,
}

/// The case as a scenario file.
pub fn scenario_text(case: &Case, secs: u64, seed: u64) -> String {
    let mut t = format!(
        "name = \"cc-check\"\nduration = \"{secs}s\"\nseed = {seed}\nstart_jitter = \"100ms\"\n\n\
         [[node]]\nname = \"h1\"\n[[node]]\nname = \"r1\"\nkind = \"switch\"\n\
         [[node]]\nname = \"r2\"\nkind = \"switch\"\n[[node]]\nname = \"h2\"\n\n\
         [[link]]\nname = \"access\"\na = \"h1\"\nb = \"r1\"\nrate = \"1Gbit\"\ndelay = \"1ms\"\n\n\
         [[link]]\nname = \"bottleneck\"\na = \"r1\"\nb = \"r2\"\nrate = \"{rate}bit\"\ndelay = \"18ms\"\nqueue = \"{buf}B\"\n\
         ba = {{ rate = \"1Gbit\", queue = \"1000pkt\" }}\n\n\
         [[link]]\nname = \"egress\"\na = \"r2\"\nb = \"h2\"\nrate = \"1Gbit\"\ndelay = \"1ms\"\n",
        rate = RATE_BPS,
        buf = case.buffer_bytes(),
    );
    for (i, f) in case.flows.iter().enumerate() {
        t.push_str(&format!(
            "\n[[flow]]\nname = \"f{i}\"\nfrom = \"h1\"\nto = \"h2\"\ncc = \"{}\"\nstart = \"{}ms\"\n",
            f.cc.sim(),
            (f.start_s * 1e3).round() as u64
        ));
    }
    t.push_str(&format!("\n[measure]\nwarmup = \"{WARM_S}s\"\n"));
    t
}

/// Runs one seed and measures it as the kernel run is measured.
pub fn run_one(case: &Case, secs: u64, seed: u64, set: &[String]) -> Result<Measured> {
    let text = scenario_text(case, secs, seed);
    let sc = hopwise_sim::scenario::parse(&text, "cc-check", set).map_err(|e| anyhow!("{e}"))?;
    let mut sim = hopwise_sim::Sim::new(&sc).map_err(|e| anyhow!("cc-check scenario: {e}"))?;
    sim.run_until(Time::ZERO + Dur::from_secs_f64(WARM_S));
    let link = |s: &Summary| {
        s.link(BOTTLENECK)
            .cloned()
            .ok_or_else(|| anyhow!("the scenario has no {BOTTLENECK}"))
    };
    let at_warm = link(&Summary::of(&sim, "cc-check", 0.0))?;
    sim.run();
    let s = Summary::of(&sim, "cc-check", 0.0);
    let end = link(&s)?;
    let acks = s.link(REVERSE).map_or(0, |l| l.tx_packets);
    let drops = end.drops - at_warm.drops;
    let offered = end.tx_packets + drops;
    Ok(Measured {
        utilisation: end.utilization,
        queue_delay_ms: end.mean_queue_bytes * 8.0 / RATE_BPS as f64 * 1e3,
        drop_rate: if offered > 0 {
            drops as f64 / offered as f64
        } else {
            0.0
        },
        drop_rate_run: end.loss_rate,
        drops,
        goodput_bps: s.flows.iter().map(|f| f.goodput_bps).collect(),
        jain: hopwise_experiment::stats::jain(
            &s.flows.iter().map(|f| f.goodput_bps).collect::<Vec<_>>(),
        ),
        timeouts: s.flows.iter().map(|f| f.timeouts).sum(),
        retransmits: s.flows.iter().map(|f| f.retransmits).sum(),
        acks_per_data: acks as f64 / end.tx_packets.max(1) as f64,
    })
}

/// Runs `v` over the plan's seeds.
pub fn run_variant(plan: &Plan, case: &Case, v: &Variant, p: &dyn Progress) -> Result<SimRun> {
    let set: Vec<String> = v.set.iter().map(|s| s.to_string()).collect();
    let mut runs = Vec::new();
    for seed in 1..=plan.sim_seeds as u64 {
        runs.push(run_one(case, plan.secs, seed, &set)?);
        p.inc();
    }
    Ok(SimRun {
        variant: v.name.into(),
        set,
        kernel: v.kernel.into(),
        runs,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Check, BDP_BYTES};
    use super::*;

    #[test]
    fn every_variant_parses_and_the_buffer_is_in_bdps() {
        for check in Check::ALL {
            for case in check.cases() {
                let text = scenario_text(&case, 20, 1);
                assert!(text.contains(&format!("queue = \"{}B\"", case.buffer_bytes())));
                for v in VARIANTS {
                    let set: Vec<String> = v.set.iter().map(|s| s.to_string()).collect();
                    // HyStart++ is refused for BBR flows: only the drop check uses the variants.
                    if check != Check::Drops && !v.set.is_empty() {
                        continue;
                    }
                    hopwise_sim::scenario::parse(&text, "t", &set)
                        .unwrap_or_else(|e| panic!("{}: {e}", v.name));
                }
            }
        }
        assert_eq!(Check::Bbr.cases()[0].buffer_bytes(), 4 * BDP_BYTES);
    }

    #[test]
    fn a_lone_cubic_flow_fills_the_simulated_link_and_seeds_differ() {
        let case = &Check::CubicBuffers.cases()[1];
        let a = run_one(case, 12, 1, &[]).unwrap();
        let b = run_one(case, 12, 2, &[]).unwrap();
        assert!(a.utilisation > 0.9, "{a:?}");
        assert!(
            a.queue_delay_ms > 0.0 && a.queue_delay_ms < 4.0 * 40.0,
            "{a:?}"
        );
        assert_eq!(a.goodput_bps.len(), 1);
        assert_ne!(a.queue_delay_ms, b.queue_delay_ms);
    }
}
