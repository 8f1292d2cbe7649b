//! Reproduction `otcp`: seed 001, Pucha and Hu, "Overlay TCP: Ending
//! End-to-End Transport for Higher Throughput" (SIGCOMM 2005 poster).
//!
//! * **Table 1** ([`table1`]): one 4 MB transfer over the direct path
//!   (RTT 75.7 ms) and split into 2, 3 and 4 pipelined TCP connections with
//!   the paper's path RTTs (63.5, 47.1, 39.3 ms), packet by packet, with
//!   relays running `hopwise_proto::otcp`. Three regimes: every link loses
//!   packets at random, the same on every link or in proportion to its RTT
//!   (TCP's rate ∝ 1/(RTT √p)), and no loss with a 32 KiB receive window
//!   (rate = window / RTT).
//! * **Transfer sizes** (§3, "medium-sized file transfers"): 16 kB to 16 MB
//!   over the direct path and the 2- and 4-hop paths; relays connect on
//!   demand, so short transfers pay one handshake per hop.
//! * **Table 2 and §3's analysis** ([`trace`]): on a synthetic 313-node RTT
//!   trace (the paper's PlanetLab trace is not public), how many pairs a
//!   detour helps and by how much, with 1, 2, 3 or any number of relays;
//!   and how well a client that probes a few candidates does, random ones
//!   against one per geographic cluster.
//! * **Pairs** : transfers between sampled pairs of the trace, direct and
//!   through the relay the cluster strategy picks, packet by packet.
//!
//! Choices and differences from the paper are in `docs/reproductions/otcp.md`.

mod claims;
#[cfg(feature = "lab")]
pub mod lab;
mod outputs;
mod runs;
pub mod trace;

use hopwise_experiment::{Claim, Ctx, Outputs, Reproduction};
use hopwise_overlay::otcp::chain::{Loss, Transfer, Wan};
use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::spec::Limit;
use serde::Serialize;

/// `hopwise reproduce otcp`.
pub struct Otcp;

/// Table 1's paths: hops and path RTT (ms), and the paper's throughput (kbit/s).
pub const TABLE1: [(usize, f64, f64); 4] = [
    (1, 75.7, 3097.1),
    (2, 63.5, 3505.4),
    (3, 47.1, 4695.0),
    (4, 39.3, 5391.0),
];
/// The paper's transfer: "a 4MB file".
pub const FILE: u64 = 4_000_000;
/// Random loss per packet and direction on every link in the loss regime.
/// At this loss the steady-state rate of Mathis et al. (1997),
/// 1.22 MSS / (RTT √p), of the direct path is 3.4 Mbit/s, near the paper's
/// 3.1 Mbit/s; a 4 MB transfer is faster on average, because much of it
/// goes in slow start.
pub const LOSS: f64 = 0.003;
/// The receive window of the window regime (no loss): 32 KiB over 75.7 ms
/// is 3.5 Mbit/s, near the paper's direct 3.1 Mbit/s.
pub const WINDOW: u64 = 32 << 10;
/// Every link's capacity: never the limit.
pub const LINK_MBPS: u64 = 100;
/// A relay's own buffer per connection, besides its sockets' buffers.
pub const SPLICE: usize = 64 << 10;

/// What limits a hop's TCP rate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Regime {
    /// Random loss [`LOSS`] on every link, however long; 4 MiB socket
    /// buffers. A k-hop path crosses k lossy links.
    #[default]
    Loss,
    /// Random loss proportional to the link's RTT, [`LOSS`] at the direct
    /// path's 75.7 ms; 4 MiB socket buffers.
    LossRtt,
    /// No loss; a [`WINDOW`] receive buffer.
    Window,
}

impl Regime {
    pub const ALL: [Regime; 3] = [Regime::Loss, Regime::LossRtt, Regime::Window];
    pub fn name(self) -> &'static str {
        match self {
            Regime::Loss => "loss",
            Regime::LossRtt => "loss-rtt",
            Regime::Window => "window",
        }
    }
    /// How the figures and claims describe it.
    pub fn describe(self) -> String {
        match self {
            Regime::Loss => format!("random loss {} % on every link", LOSS * 100.0),
            Regime::LossRtt => format!("random loss ∝ link RTT ({} % at 75.7 ms)", LOSS * 100.0),
            Regime::Window => format!("no loss, {} KiB receive window", WINDOW >> 10),
        }
    }
    /// The links and the transfer of `size` bytes in this regime: NewReno
    /// with SACK, delayed ACKs and RFC 3390's initial window (3 segments of
    /// 1460 B), as a 2005 host would have run.
    pub fn setup(self, size: u64) -> (Transfer, Wan) {
        let mut tcp = TcpConfig {
            initial_window: 3,
            ..TcpConfig::default()
        };
        let loss = match self {
            Regime::Loss => Loss::PerLink(LOSS),
            Regime::LossRtt => Loss::PerRtt {
                p: LOSS,
                at: ms(TABLE1[0].1),
            },
            Regime::Window => {
                tcp.recv_buffer = WINDOW;
                Loss::PerLink(0.0)
            }
        };
        (
            Transfer {
                size,
                tcp,
                cc: CcConfig::NewReno,
                splice: SPLICE,
                limit: Dur::from_secs(3600),
            },
            Wan {
                rate: Rate::from_mbps(LINK_MBPS),
                loss,
                queue: Limit::Packets(1000),
            },
        )
    }
}

fn ms(x: f64) -> Dur {
    Dur::from_secs_f64(x / 1000.0)
}

/// Table 1's path of `hops` hops with path RTT `rtt_ms`: every hop has the
/// path RTT (the paper gives only the largest hop RTT, so this is the
/// slowest path it allows; the hops add up to more than the direct RTT).
pub fn table1_hops(hops: usize, rtt_ms: f64) -> Vec<Dur> {
    vec![ms(rtt_ms); hops]
}

/// One point of Table 1 (a row of `table1.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Table1Row {
    pub regime: Regime,
    pub hops: usize,
    pub path_rtt_ms: f64,
    pub sum_rtt_ms: f64,
    pub goodput_kbps: f64,
    pub goodput_ci90_kbps: f64,
    /// Goodput over the direct path's.
    pub gain: f64,
    /// Direct RTT over path RTT: the gain if rate ∝ 1/RTT.
    pub rtt_ratio: f64,
    /// One hop alone with the path RTT (and its loss): what the paper's
    /// model expects of the whole chain.
    pub one_hop_kbps: f64,
    /// The chain's goodput over [`Table1Row::one_hop_kbps`].
    pub pipeline_efficiency: f64,
    pub paper_kbps: f64,
    pub paper_gain: f64,
    pub runs: usize,
    /// Goodput of each run (kbit/s), by seed: every point runs seeds
    /// 1..=runs, so points pair by seed.
    #[serde(skip)]
    pub samples_kbps: Vec<f64>,
}

/// One transfer size on one path (a row of `sizes.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SizeRow {
    pub size_bytes: u64,
    pub hops: usize,
    pub path_rtt_ms: f64,
    #[serde(rename = "transfer_s")]
    pub secs: f64,
    pub first_byte_s: f64,
    /// Direct completion time over this path's.
    pub speedup: f64,
    pub runs: usize,
    /// Completion time of each run (s), by seed (paired across paths).
    #[serde(skip)]
    pub samples_s: Vec<f64>,
}

/// One sampled pair of the trace (a row of `pairs.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PairRow {
    pub src: usize,
    pub dst: usize,
    pub direct_rtt_ms: f64,
    pub path_rtt_ms: f64,
    pub sum_rtt_ms: f64,
    pub relays: usize,
    pub direct_kbps: f64,
    pub otcp_kbps: f64,
    pub gain: f64,
    /// Direct RTT over path RTT.
    pub rtt_ratio: f64,
}

/// What to run: the paper's lengths, or the quick ones.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// Runs (seeds) per point of Table 1 and of the size sweep.
    pub seeds: u32,
    /// Transfer sizes of the size sweep, bytes.
    pub sizes: Vec<u64>,
    /// Nodes of the synthetic trace.
    pub trace_nodes: usize,
    /// Sampled pairs of the trace, transferred packet by packet, and runs each.
    pub pairs: usize,
    pub pair_seeds: u32,
}

impl Plan {
    pub fn new(quick: bool, seeds: Option<u32>) -> Plan {
        Plan {
            seeds: seeds.unwrap_or(if quick { 4 } else { 20 }).max(1),
            sizes: if quick {
                vec![16_000, 256_000, 1_000_000, 4_000_000]
            } else {
                vec![16_000, 64_000, 256_000, 1_000_000, 4_000_000, 16_000_000]
            },
            trace_nodes: if quick { 120 } else { 313 },
            pairs: if quick { 8 } else { 40 },
            pair_seeds: if quick { 1 } else { 3 },
        }
    }
}

/// What the runs measured (summary.json holds it beside the plan).
#[derive(Debug, Serialize)]
pub struct Results {
    constants: Constants,
    pub table1: Vec<Table1Row>,
    pub sizes: Vec<SizeRow>,
    pub trace: TraceSummary,
    pub pairs: Vec<PairRow>,
}

#[derive(Debug, Serialize)]
struct Constants {
    file_bytes: u64,
    loss: f64,
    window_bytes: u64,
    link_mbps: u64,
    splice_bytes: usize,
    tcp: &'static str,
    relays: &'static str,
}

impl Constants {
    const OF_THE_RUNS: Constants = Constants {
        file_bytes: FILE,
        loss: LOSS,
        window_bytes: WINDOW,
        link_mbps: LINK_MBPS,
        splice_bytes: SPLICE,
        tcp: "NewReno with SACK, delayed ACKs, initial window 3 (RFC 3390), 4 MiB buffers (32 KiB receive buffer in the window regime)",
        relays: "connect to the next hop when a connection's route header arrives (on demand)",
    };
}

/// The synthetic trace's analysis.
#[derive(Debug, Serialize)]
pub struct TraceSummary {
    pub nodes: usize,
    pub pairs: usize,
    pub budgets: Vec<trace::BudgetRow>,
    pub selection: Vec<trace::SelectionRow>,
    /// Path-RTT reductions per budget (for the CDF figure).
    #[serde(skip)]
    reductions: Vec<Vec<(f64, usize)>>,
}

impl Reproduction for Otcp {
    type Plan = Plan;
    type Results = Results;
    const NAME: &'static str = "otcp";
    const ABOUT: &'static str = "Pucha and Hu 2005 (Overlay TCP, seed paper 001): Table 1 (throughput by hop count), transfer sizes, Table 2 and relay selection on a synthetic RTT trace";
    const PAPER: &'static str = "seed 001: Pucha and Hu, Overlay TCP: Ending End-to-End Transport for Higher Throughput (SIGCOMM 2005 poster)";
    const WALL: &'static str = "quick under 1 s, full about 5 s";

    fn plan(&self, quick: bool, seeds: Option<u32>) -> Plan {
        Plan::new(quick, seeds)
    }

    fn run(&self, plan: &Plan, ctx: &Ctx<'_, Results>) -> anyhow::Result<Results> {
        let p = ctx.progress;
        p.note("Table 1: a 4 MB transfer over 1, 2, 3 and 4 hops");
        let table1 = runs::table1(plan, ctx)?;
        p.note(&format!(
            "Transfer sizes: {} to {}, direct against 2 and 4 hops",
            runs::si_bytes(plan.sizes[0]),
            runs::si_bytes(plan.sizes[plan.sizes.len() - 1])
        ));
        let sizes = runs::sizes(plan, ctx)?;
        let n = plan.trace_nodes;
        p.note(&format!("Table 2: a synthetic RTT trace of {n} nodes"));
        let world = trace::World::synthetic(n, 1);
        let reductions = trace::reductions(&world);
        let trace = TraceSummary {
            nodes: n,
            pairs: n * (n - 1) / 2,
            budgets: trace::budget_rows(&reductions),
            selection: trace::selection(&world, 1),
            reductions,
        };
        let pairs = runs::pairs(plan, &world, ctx)?;
        Ok(Results {
            constants: Constants::OF_THE_RUNS,
            table1,
            sizes,
            trace,
            pairs,
        })
    }

    fn claims(&self, _: &Plan, r: &Results) -> Vec<Claim> {
        claims::claims(r)
    }

    fn outputs(&self, _: &Plan, r: &Results, out: &mut Outputs) -> anyhow::Result<()> {
        outputs::write(r, out)
    }
}
