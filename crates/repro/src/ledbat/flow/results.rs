//! What `ledbat-flow` measured: one row type per figure, and
//! [`Results`], whose fields summary.json holds beside the plan and the
//! claims.

use super::net::RunResult;
use super::profile::Profile;
use serde::Serialize;

/// Fig. 2: one pair of flows.
#[derive(Clone, Debug, Serialize)]
pub struct Fig2Row {
    /// "inter" (NewReno against X) or "intra" (two X).
    pub kind: String,
    pub flows: [String; 2],
    /// Share of the second flow in the total goodput.
    pub second_share: f64,
    pub jain: f64,
    pub utilization: f64,
    pub mean_queue_pkts: f64,
    /// Coefficient of variation of each flow's cwnd over the second half of the run.
    pub cwnd_cv: [f64; 2],
    /// Each flow's mean cwnd over the second half, packets (a CoV is only
    /// telling when this is well above 0).
    pub cwnd_mean_pkts: [f64; 2],
}

/// The per-seed values behind a Fig. 4 row, in seed order (for the claims'
/// intervals; not in summary.json).
#[derive(Clone, Debug, Default)]
pub struct Fig4Seeds {
    pub tcp_share: Vec<f64>,
    pub loss_rate: Vec<f64>,
    pub steady_loss_rate: Vec<f64>,
}

/// Fig. 4: one protocol at one N, over seeds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Fig4Row {
    /// The low-priority protocol, or "newreno" for the N + 1 NewReno reference.
    pub protocol: String,
    pub n: usize,
    /// Mean share of the one NewReno flow (of flow 0 for the reference).
    pub tcp_share: f64,
    pub tcp_share_min: f64,
    pub tcp_share_max: f64,
    pub tcp_share_sd: f64,
    /// 1/(N + 1), the fair share.
    pub fair_share: f64,
    pub utilization: f64,
    pub utilization_min: f64,
    pub loss_rate: f64,
    pub loss_rate_min: f64,
    pub loss_rate_max: f64,
    /// Loss rate from 30 s on (after the start-up transient).
    pub steady_loss_rate: f64,
    pub mean_queue_pkts: f64,
    pub seeds: u32,
    #[serde(skip)]
    pub per_seed: Fig4Seeds,
}

/// Fig. 4 sensitivity: the same as [`Fig4Row`] under another setting.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Fig4VariantRow {
    pub variant: String,
    #[serde(flatten)]
    pub row: Fig4Row,
}

/// Fig. 5: one target.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Fig5Row {
    pub target_ms: f64,
    /// τ as a percentage of the buffer's queueing delay (1.2 s).
    pub target_pct: f64,
    pub tcp_share: f64,
    pub tcp_share_min: f64,
    pub tcp_share_max: f64,
    pub utilization: f64,
    pub loss_rate: f64,
    /// Mean queue over the buffer size.
    pub mean_queue_norm: f64,
    /// NewReno's share in each seed, in seed order (for the claims).
    #[serde(skip)]
    pub tcp_shares: Vec<f64>,
    /// The utilisation in each seed.
    #[serde(skip)]
    pub utilizations: Vec<f64>,
}

/// Fig. 5: a region of the target axis.
#[derive(Clone, Debug, Serialize)]
pub struct Region {
    pub name: String,
    pub from_pct: f64,
    pub to_pct: f64,
    pub what: String,
}

/// Fig. 5: a long run at one target.
#[derive(Clone, Debug, Serialize)]
pub struct Fig5LongRow {
    pub target_ms: f64,
    pub target_pct: f64,
    pub duration_s: f64,
    pub tcp_share: f64,
    /// NewReno's share over the last 120 s.
    pub tcp_share_last_120s: f64,
}

/// Fig. 6: one target ratio.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Fig6Row {
    pub target_ratio: f64,
    /// Share of the τ2 = 100 ms flow over the whole run.
    pub small_target_share: f64,
    /// Its share over the last 20 s.
    pub small_target_share_end: f64,
    pub utilization: f64,
    pub mean_queue_norm: f64,
    pub loss_rate: f64,
}

/// Fig. 6 with start times jittered by up to 100 ms, over seeds.
#[derive(Clone, Debug, Serialize)]
pub struct Fig6JitterRow {
    pub target_ratio: f64,
    pub small_target_share: f64,
    pub small_target_share_min: f64,
    pub small_target_share_max: f64,
    pub small_target_share_end: f64,
    pub seeds: u32,
}

/// Latecomers: one LEDBAT variant.
#[derive(Clone, Debug, Serialize)]
pub struct LateRow {
    pub variant: String,
    /// Mean Jain index over seeds, while all flows are active.
    pub jain: f64,
    pub jain_min: f64,
    pub jain_max: f64,
    /// Mean share of each flow (in order of arrival) while all are active.
    pub shares: Vec<f64>,
    pub utilization: f64,
    pub mean_queue_ms: f64,
    pub seeds: u32,
    /// The Jain index of each seed, in seed order (for the claims).
    #[serde(skip)]
    pub jains: Vec<f64>,
}

/// The settings every run shares.
#[derive(Clone, Debug, Serialize)]
pub struct Setup {
    pub topology: &'static str,
    pub tcp: &'static str,
    pub fig4_seeds: u32,
    pub fig4_duration_s: u64,
    pub fig5_seeds: u32,
    pub fig6_duration_s: u64,
    pub start_jitter_ms: u64,
    pub variants: Vec<VariantInfo>,
    /// The controller profiles Fig. 4's claims are judged under.
    pub profiles: Vec<Profile>,
}

/// A Fig. 4 sensitivity variant.
#[derive(Clone, Debug, Serialize)]
pub struct VariantInfo {
    pub name: &'static str,
    pub what: &'static str,
}

/// The cwnd traces the figures and the time-series CSVs draw.
#[derive(Clone, Debug, Default)]
pub struct Traces {
    /// Fig. 2, one per pair of `fig2_pairs`.
    pub fig2: Vec<RunResult>,
    /// Fig. 6 at τ1/τ2 = 1.2, if that ratio was run.
    pub fig6_12: Option<RunResult>,
    /// The seed-1 latecomer run of each LEDBAT variant (1 Mbit/s).
    pub late: Vec<RunResult>,
}

/// What `ledbat-flow` measured (summary.json's fields besides the plan and
/// the claims).
#[derive(Clone, Debug, Serialize)]
pub struct Results {
    pub setup: Setup,
    pub fig2: Vec<Fig2Row>,
    pub fig4: Vec<Fig4Row>,
    pub fig4_variants: Vec<Fig4VariantRow>,
    /// Fig. 4 under the paper-setup profile: for each protocol, the row of
    /// the variant that runs its constants.
    pub fig4_paper_setup: Vec<Fig4VariantRow>,
    pub fig5: Vec<Fig5Row>,
    pub fig5_regions: Vec<Region>,
    pub fig5_long: Vec<Fig5LongRow>,
    pub fig6: Vec<Fig6Row>,
    pub fig6_jittered: Vec<Fig6JitterRow>,
    pub latecomer: Vec<LateRow>,
    pub latecomer_10mbit: Vec<LateRow>,
    #[serde(skip)]
    pub traces: Traces,
}
