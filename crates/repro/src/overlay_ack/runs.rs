//! The simulator's runs: every mode over the same seeds, one plain run
//! probed finely for Fig. 2b, and the sensitivity study.

use super::analysis::{analyse, judge, Judged, ModeStats};
use super::claims::claims;
use super::outputs::{cc_text, limit_str, seq_trace, Fig2bOut};
use super::setup::{Mode, RunResult, Setup};
use super::{Params, Results};
use hopwise_experiment::{plural, Claim, Ctx};
use hopwise_proto::time::Dur;
use hopwise_sim::spec::Limit;
use serde::Serialize;

/// One configuration of the sensitivity study.
#[derive(Clone, Debug, Serialize)]
pub struct SweepPoint {
    pub variant: String,
    pub switch_buffer: String,
    pub recv_window_bytes: u64,
    pub cc: String,
    pub modes: Vec<ModeStats>,
    /// The claims evaluated on this configuration alone (with intervals
    /// over its runs).
    pub claims: Vec<Claim>,
}

impl SweepPoint {
    fn new(variant: &str, setup: &Setup, modes: Vec<ModeStats>, judged: &Judged) -> SweepPoint {
        SweepPoint {
            variant: variant.to_string(),
            switch_buffer: limit_str(setup.switch_queue),
            recv_window_bytes: setup.tcp.recv_buffer,
            cc: cc_text(&setup.cc),
            claims: claims(setup, &modes, judged, None, false),
            modes,
        }
    }

    pub fn mode(&self, m: Mode) -> Option<&ModeStats> {
        self.modes.iter().find(|s| s.mode == m.name())
    }
}

/// A configuration of the sensitivity study.
struct Variant {
    label: String,
    setup: Setup,
    modes: Vec<Mode>,
}

/// The unknowns of the testbed, one at a time: the switch's port buffer,
/// the receive window (Linux 2.6.26's 1.5 MiB against the simulator's
/// default 4 MiB) and CUBIC's β (0.8 in 2.6.26, 0.7 in RFC 9438).
fn variants(base: &Setup, modes: &[Mode]) -> Vec<Variant> {
    let all = modes.to_vec();
    let some = |want: &[Mode]| -> Vec<Mode> {
        want.iter().copied().filter(|m| modes.contains(m)).collect()
    };
    let with = |f: &dyn Fn(&mut Setup)| {
        let mut s = base.clone();
        f(&mut s);
        s
    };
    vec![
        Variant {
            label: "switch 32 kB".into(),
            setup: with(&|s| s.switch_queue = Limit::Bytes(32_000)),
            modes: all.clone(),
        },
        Variant {
            label: "switch 48 kB".into(),
            setup: with(&|s| s.switch_queue = Limit::Bytes(48_000)),
            modes: all.clone(),
        },
        Variant {
            label: "switch 96 kB".into(),
            setup: with(&|s| s.switch_queue = Limit::Bytes(96_000)),
            modes: all.clone(),
        },
        Variant {
            label: "switch 128 kB".into(),
            setup: with(&|s| s.switch_queue = Limit::Bytes(128_000)),
            modes: all.clone(),
        },
        Variant {
            label: "switch 1000 pkt".into(),
            setup: with(&|s| s.switch_queue = Limit::Packets(1000)),
            modes: all.clone(),
        },
        Variant {
            label: "rwnd 4 MiB".into(),
            setup: with(&|s| s.tcp.recv_buffer = 4 << 20),
            modes: some(&[Mode::Plain, Mode::AckPrio, Mode::Bidir, Mode::BidirAckPrio]),
        },
        Variant {
            label: "rwnd 4 MiB + switch 1000 pkt (simulator defaults)".into(),
            setup: with(&|s| {
                s.tcp.recv_buffer = 4 << 20;
                s.switch_queue = Limit::Packets(1000);
            }),
            modes: some(&[Mode::Plain, Mode::AckPrio]),
        },
        Variant {
            label: "CUBIC beta 0.7".into(),
            setup: with(&|s| {
                s.cc = hopwise_proto::cc::CcConfig::Cubic(hopwise_proto::cc::CubicConfig::default())
            }),
            modes: all.clone(),
        },
    ]
}

/// The statistics and judged values of `modes` over `runs` (one
/// configuration's runs of every mode).
fn measure(modes: &[Mode], runs: &[&RunResult], setup: &Setup) -> (Vec<ModeStats>, Judged) {
    let stats: Vec<ModeStats> = modes
        .iter()
        .map(|&m| {
            let rs: Vec<&RunResult> = runs.iter().copied().filter(|r| r.mode == m).collect();
            analyse(m, &rs, setup)
        })
        .collect();
    let judged = judge(modes, runs, &stats, setup);
    (stats, judged)
}

/// Runs the plan: the main runs (every mode × seeds 1..=runs), Fig. 2b's
/// probed run, then (after a checkpoint) the sensitivity study.
pub(super) fn run(plan: &Params, ctx: &Ctx<'_, Results>) -> anyhow::Result<Results> {
    let base = &plan.base;
    let tl = &base.timeline;
    let mut r = Results::new(plan);

    // ---- The main runs: every mode × seeds 1..=runs. ----
    let mut items = Vec::new();
    for &mode in &plan.modes {
        for k in 0..plan.runs {
            let mut s = base.clone();
            s.mode = mode;
            s.seed = 1 + k as u64;
            items.push(s);
        }
    }
    ctx.progress.note(&format!(
        "{} modes × {} of {:.0} s simulated",
        plan.modes.len(),
        plural(plan.runs as usize, "run"),
        tl.duration
    ));
    ctx.progress.start("overlay-ack runs", items.len() as u64);
    let results = ctx.par_map(items, |s| s.run());
    ctx.progress.finish();
    r.runs = results.into_iter().collect::<anyhow::Result<_>>()?;
    let refs: Vec<&RunResult> = r.runs.iter().collect();
    (r.modes, r.judged) = measure(&plan.modes, &refs, base);
    r.var_10s_ratio = r.judged.var_ratio.clone();
    r.split_events_example = r
        .runs
        .iter()
        .find(|x| x.mode == Mode::SplitDynamic)
        .map(|x| x.events.clone())
        .unwrap_or_default();

    // ---- Fig. 2b: one plain run probed finely around B→C's start. ----
    if plan.modes.contains(&Mode::Plain) {
        let mut s = base.clone();
        s.mode = Mode::Plain;
        s.seed = 1;
        let w = (tl.bc.0 - 1.0, tl.bc.0 + 30.0);
        s.probe = Some((w.0, w.1, Dur::from_millis(5)));
        let run = s.run()?;
        r.probe = run.probe;
        r.trace = seq_trace(&run.seen);
        r.fig2b = Fig2bOut::of(w, &r.probe, &r.trace);
    }

    // ---- Sensitivity: the parameters the paper does not give. ----
    if plan.sensitivity_runs > 0 {
        // The main runs' outputs while the study runs.
        ctx.checkpoint(&r)?;
        let variants = variants(base, &plan.modes);
        let mut items = Vec::new();
        for (vi, v) in variants.iter().enumerate() {
            for &mode in &v.modes {
                for k in 0..plan.sensitivity_runs {
                    let mut s = v.setup.clone();
                    s.mode = mode;
                    s.seed = 1 + k as u64;
                    items.push((vi, s));
                }
            }
        }
        ctx.progress.note(&format!(
            "sensitivity: {} variants, {} runs",
            variants.len(),
            items.len()
        ));
        ctx.progress.start("sensitivity runs", items.len() as u64);
        let res = ctx.par_map(items, |(vi, s)| s.run().map(|r| (vi, r)));
        ctx.progress.finish();
        let res: Vec<(usize, RunResult)> = res.into_iter().collect::<anyhow::Result<_>>()?;
        // The default configuration first, from the main runs.
        let mut sweep = vec![SweepPoint::new(
            "default (switch 64 kB)",
            base,
            r.modes.clone(),
            &r.judged,
        )];
        for (vi, v) in variants.iter().enumerate() {
            let rs: Vec<&RunResult> = res.iter().filter(|x| x.0 == vi).map(|x| &x.1).collect();
            let (st, judged) = measure(&v.modes, &rs, &v.setup);
            sweep.push(SweepPoint::new(&v.label, &v.setup, st, &judged));
        }
        r.sensitivity = sweep;
    }
    Ok(r)
}
