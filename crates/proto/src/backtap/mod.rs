//! BackTap, the backpressure-based hop-by-hop transport for Tor circuits
//! (seed 002: Tschorsch and Scheuermann, NSDI 2016, §3), sans-IO.
//!
//! `docs/backtap.md` is the protocol description this module implements; the
//! comments here cite it, the paper (§3) and the RFCs it borrows from. In one
//! paragraph: every node keeps one *fused queue* per circuit and direction
//! that is both the receive buffer of the incoming hop and the send buffer of
//! the outgoing hop. Cells carry per-circuit sequence numbers and are
//! acknowledged cumulatively on arrival (ACK, for reliability: RFC 6298 RTO,
//! RFC 5681 fast retransmit) and again when they leave the node downstream
//! (FWD, for flow and congestion control). A sender keeps at most `swnd`
//! cells not yet forwarded by its successor, and adjusts `swnd` once per
//! round with the Vegas-like rule of the paper's Eq. 1 from FORWARD round-trip
//! times. Because FWD is only sent when a cell leaves, a slow hop throttles
//! its predecessor, and backpressure propagates hop by hop to the source.
//!
//! # Driving an [`Endpoint`]
//! One endpoint per node (client, relay or exit), holding all its peers and
//! circuits. The contract is quinn-proto's, as for [`crate::tcp`]:
//!
//! 1. input: [`Endpoint::handle_datagram`] for every datagram that arrives,
//!    [`Endpoint::handle_timeout`] once the deadline from
//!    [`Endpoint::poll_timeout`] has passed;
//! 2. application: [`Endpoint::send_cell`] while [`Endpoint::can_send`] at a
//!    packaging edge, [`Endpoint::recv_cell`] at a delivering edge;
//! 3. output: [`Endpoint::poll_transmit`] until `None`, then
//!    [`Endpoint::poll_event`] until `None`;
//! 4. re-read [`Endpoint::poll_timeout`] and arm a timer for it.
//!
//! Nothing here reads a clock or iterates a hash map: identical inputs give
//! identical outputs.

mod endpoint;
mod queue;
mod recovery;
pub mod wire;

#[cfg(test)]
mod tests;

pub use endpoint::{Endpoint, Layers};
pub use wire::{DecodeError, Problem, CELL_BODY_LEN, CELL_DATA_LEN, CELL_ITEM_LEN};

/// A transformation a forwarding node applies to every cell body of one
/// circuit and direction: an onion layer (`crate::circuit::onion`). The
/// transport applies it exactly once per cell, in sequence order, when the
/// cell joins the in-order part of its queue; the queue then holds (and a
/// retransmission re-sends) the transformed body. The preamble (`circ_id`,
/// `seq`, flags) is never passed to it.
pub trait CellLayer: Send {
    fn apply(&mut self, body: &mut wire::CellBody);
}

use crate::bucket::Refill;
use crate::time::Dur;

/// A neighbour of this node, as returned by [`Endpoint::add_peer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PeerId(pub u32);

/// A circuit installed at this node, as returned by [`Endpoint::add_circuit`].
/// Ids are handed out in order and not reused within one endpoint until the
/// 32-bit counter wraps (ids still in use are skipped then).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CircuitId(pub u32);

/// The two directions of a circuit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// Client → exit. In-leg `prev`, out-leg `next`.
    Forward,
    /// Exit → client. In-leg `next`, out-leg `prev`.
    Backward,
}

impl Direction {
    pub const BOTH: [Direction; 2] = [Direction::Forward, Direction::Backward];
    pub(crate) fn idx(self) -> usize {
        match self {
            Direction::Forward => 0,
            Direction::Backward => 1,
        }
    }
    pub fn reverse(self) -> Direction {
        match self {
            Direction::Forward => Direction::Backward,
            Direction::Backward => Direction::Forward,
        }
    }
}

/// What the application should know about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// The delivering edge of `dir` went from empty to holding an in-order
    /// cell: call [`Endpoint::recv_cell`] until it returns `None`.
    Readable { circuit: CircuitId, dir: Direction },
    /// The packaging edge of `dir` went from full to having room:
    /// [`Endpoint::can_send`] is true again.
    Writable { circuit: CircuitId, dir: Direction },
}

/// [`Endpoint::send_cell`] found no room: the window of the first hop is full
/// (or the circuit is unknown, or this is not a packaging edge).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Full;

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no room at the packaging edge")
    }
}
impl std::error::Error for Full {}

/// How the window starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Startup {
    /// Start at `initial_window` and follow Eq. 1 from the first round: at
    /// most +1 cell per round (paper §3, nstor). The default.
    Linear,
    /// [hopwise] Double `swnd` every round while `diff < gamma` cells, then
    /// follow Eq. 1 (Vegas' slow start; γ = 1 as in Vegas).
    SlowStart { gamma: u32 },
    /// [hopwise] HyStart++ (RFC 9406 §4.2) on BackTap's rounds and
    /// FORWARD-RTT samples: `swnd` grows by the cells each FWD forwards (at
    /// most L = 8 per FWD, RFC 9406 §4.3 without pacing) while the window
    /// holds cells back; a round whose minimum FORWARD-RTT rose by
    /// `clamp(min/8, 4 ms, 16 ms)` over the last round's enters Conservative
    /// Slow Start (growth ÷ 4); CSS returns to slow start when the minimum
    /// falls back below the CSS baseline (a rise caused by the successor's
    /// own start-up, not by a queue: backpressure), and ends after 5 CSS
    /// rounds, or at once if the minimum rises by another threshold, with
    /// a clamp: the larger of `swnd · baseRtt / minRtt` (as
    /// [`Startup::SlowStart`]) and the delivery rate since CSS began times
    /// baseRtt, plus 1;
    /// Eq. 1 follows. Only a loss that [`Config::loss_response`] answers ends
    /// it. Motivation: the linear start takes ~50 s to open a 40 ms hop to
    /// 17 MB/s (`docs/backtap.md`, "Start-up").
    HyStart,
}

/// How a hop's window answers a loss event (the first loss of a recovery
/// episode: a fast retransmit, a timeout, or, with SACK, RACK or a tail
/// loss probe; [`LossCause`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossResponse {
    /// The paper's Eq. 1 and nstor: delay alone moves the window.
    None,
    /// [hopwise] `swnd` halves (not below 2) and any slow start ends, as
    /// Reno's response that TCP Vegas keeps (Brakmo and Peterson 1995;
    /// RFC 5681 §3.1). The default.
    Halve,
    /// [hopwise] Halve only a loss that comes with queueing, as
    /// `docs/backtap.md` ("Loss response") derives: the loss is taken as
    /// congestion if the latest ACK round trip rose over the hop's minimum by
    /// `clamp(min/8, 4 ms, 16 ms)` (RFC 9406 §4.3's threshold), or the last
    /// round's Eq. 1 `diff` exceeded β, or a timeout found it, or the
    /// smoothed fraction of cells lost exceeds [`Config::loss_bound`] (an
    /// explicit loss-rate bound, as BBR's 2 % `loss_thresh`,
    /// draft-cardwell-iccrg-bbr-congestion-control §4.5.10.2). Otherwise the
    /// window stays (random loss on a link is not congestion; Copa and BBR
    /// tolerate it too). Motivation: with [`LossResponse::Halve`], a 20 ms
    /// hop at 5 % random loss fell to 16 kB/s (the daemon, three 20 ms hops).
    DelayQualified,
}

/// What declared a loss, for [`LossResponse::DelayQualified`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossCause {
    /// The duplicate-ACK threshold (RFC 5681 §3.2, RFC 5827).
    FastRetransmit,
    /// The retransmission timer (RFC 6298 §5): congestive once a round trip
    /// was measured.
    Rto,
    /// RACK's time-based detection (RFC 8985 §6).
    Rack,
    /// A loss a tail loss probe revealed (RFC 8985 §7).
    Tlp,
}

/// A relay's token bucket (Tor's BandwidthRate/BandwidthBurst). It gates
/// cells only (first transmissions and retransmissions, each costing
/// [`CELL_ITEM_LEN`] bytes); feedback is never limited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BucketConfig {
    /// Bytes per second.
    pub rate: u64,
    /// Bucket size in bytes.
    pub burst: u64,
    pub refill: Refill,
}

/// Every constant of the protocol, with the defaults of `docs/backtap.md`.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Eq. 1 lower threshold in cells (paper: 2; nstor: 3).
    pub alpha: u32,
    /// Eq. 1 upper threshold in cells (paper: 4; nstor: 6).
    pub beta: u32,
    /// FORWARD-RTT samples needed before a round may adjust the window;
    /// fewer carry over to the next round (nstor `cntRtt > 2`: 3).
    pub min_samples: u32,
    /// Initial `swnd` in cells (paper, nstor: 2).
    pub initial_window: u32,
    pub startup: Startup,
    /// Upper bound of `swnd` in cells (default 10 000). `swnd` never exceeds
    /// `circuit_limit` either ([`Config::window_cap`]).
    pub max_window: u32,
    /// [hopwise] Grow `swnd` only after a round in which the window (or, at a
    /// packaging edge, the admission limit) held cells back, as RFC 7661 does
    /// for TCP; otherwise an application-limited circuit would grow its window
    /// without bound. Decreases are never held back. Default true.
    pub grow_only_when_limited: bool,
    /// [hopwise] How `swnd` answers when a hop enters loss recovery (at most
    /// once per recovery episode). Default [`LossResponse::Halve`]: halve
    /// (not below 2, the start-up window), slow start ends. The paper's Eq. 1
    /// and nstor react to delay only ([`LossResponse::None`]). A loss
    /// downstream of a bursty sender, which the hop's FORWARD-RTT samples do
    /// not see (Karn's rule drops the samples of retransmitted cells), then
    /// never shrinks the window that feeds the bursts. TCP Vegas keeps Reno's
    /// loss response (Brakmo and Peterson 1995; Linux `tcp_vegas` uses Reno's
    /// halving, RFC 5681 §3.1).
    pub loss_response: LossResponse,
    /// [hopwise] [`LossResponse::DelayQualified`]: a loss counts as
    /// congestion when the smoothed fraction of cells lost (an EWMA with gain
    /// 1/8 over rounds of at least 64 cells sent) exceeds this fraction.
    /// Default 0.1 (10 %).
    pub loss_bound: f64,
    /// RTO lower bound (RFC 6298 §2.4 says 1 s, nstor 1 s; hopwise 200 ms).
    pub min_rto: Dur,
    /// RTO upper bound (RFC 6298 §2.5: at least 60 s).
    pub max_rto: Dur,
    /// Duplicate ACKs that trigger fast retransmit (RFC 5681 §3.2: 3).
    pub dupthresh: u32,
    /// Cells a relay buffers per circuit and direction; a cell with
    /// `seq ≥ next_tx + circuit_limit` is dropped unacknowledged (paper §3):
    /// the limit bounds cells queued here and not yet forwarded; forwarded but
    /// unacknowledged cells are bounded by the window.
    pub circuit_limit: u32,
    /// Datagram payload budget in bytes (paper §3: two cells and feedback).
    /// Clamped to at least one header and one cell.
    pub payload_budget: usize,
    /// How long a datagram that could still take another cell waits for more
    /// items (nstor `ScheduleFlush`: 1 ms). Zero sends at once.
    pub pack_delay: Dur,
    /// baseRtt is the minimum FORWARD-RTT over all circuits to the same next
    /// hop (paper §3, intra-fairness). Off: per circuit and direction.
    pub share_base_rtt: bool,
    /// Optional token bucket limiting the cells this node sends.
    pub bucket: Option<BucketConfig>,
    /// [hopwise] Send SACK items (RFC 2018) to the predecessor while cells
    /// are held above a gap. A sender that receives a SACK on a queue
    /// detects losses there by RACK-TLP (RFC 8985) and repairs several holes
    /// per round trip; without SACK it repairs about one (NewReno), which at
    /// 5 % loss per 40 ms hop held the daemon near 16 kB/s. The
    /// paper has no SACK: default false. Receiving SACK items needs no
    /// switch.
    pub sack: bool,
}

impl Config {
    /// The largest `swnd`: `max_window`, and never more than
    /// `circuit_limit`. [hopwise] The window bounds a hop's cells sent and
    /// not yet forwarded by the successor, and the successor refuses every
    /// cell beyond its own `circuit_limit` of those (paper §3), so a larger
    /// window only buys refused cells and a long loss recovery (a hop
    /// repairs one hole per round trip). The limit is a receive window, as
    /// TCP sends at most min(cwnd, rwnd) (RFC 5681 §2); the wire carries no
    /// receive window, so a node takes its own limit for its successor's
    /// (true when relays share the configuration). It caps one circuit at
    /// `circuit_limit` cells per hop RTT: 1000 cells over a 100 ms hop are
    /// 5.1 MB/s.
    pub fn window_cap(&self) -> u32 {
        self.max_window.min(self.circuit_limit).max(1)
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            alpha: 2,
            beta: 4,
            min_samples: 3,
            initial_window: 2,
            startup: Startup::Linear,
            max_window: 10_000,
            grow_only_when_limited: true,
            loss_response: LossResponse::Halve,
            loss_bound: 0.1,
            min_rto: Dur::from_millis(200),
            max_rto: Dur::from_secs(60),
            dupthresh: 3,
            circuit_limit: 1000,
            payload_budget: 1400,
            pack_delay: Dur::from_millis(1),
            share_base_rtt: true,
            bucket: None,
            sack: false,
        }
    }
}

/// One circuit and direction at this node: its fused queue and the hop to its
/// successor. Sequence pointers follow `docs/backtap.md`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HopStats {
    /// Sending window in cells.
    pub swnd: u32,
    /// Still in slow start ([`Startup::SlowStart`], or [`Startup::HyStart`]
    /// in slow start or CSS).
    pub slow_start: bool,
    /// [`Startup::HyStart`]: in Conservative Slow Start (RFC 9406 §4.2).
    pub css: bool,
    /// Oldest cell held for the successor (not yet ACKed, or not yet taken
    /// by the application at a delivering edge).
    pub head: u32,
    /// Last cell received (or packaged) in order.
    pub tail: u32,
    /// Next new cell to send.
    pub next_tx: u32,
    /// Highest FWD from the successor (every cell below it was forwarded).
    pub fwd_seen: u32,
    /// Cells here not yet sent on (at a delivering edge: not yet taken by
    /// the application).
    pub queued: u32,
    /// Cells sent and not yet ACKed.
    pub in_flight: u32,
    /// Cells sent and not yet forwarded by the successor (what `swnd` bounds).
    pub unforwarded: u32,
    /// Cells held above a gap.
    pub out_of_order: u32,
    /// RFC 6298 SRTT of ACK round trips (zero before a sample).
    pub srtt: Dur,
    /// Current RTO including backoff.
    pub rto: Dur,
    /// The baseRtt Eq. 1 uses (shared per next hop unless configured off);
    /// zero before a sample.
    pub base_rtt: Dur,
    /// actualRtt of the last round that adjusted the window.
    pub actual_rtt: Dur,
    /// Rounds that adjusted (or could have adjusted) the window.
    pub rounds: u64,
    /// New cells that arrived from the predecessor (or the application).
    pub cells_in: u64,
    /// Cells sent for the first time (or taken by the application).
    pub cells_out: u64,
    pub retransmits: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    /// Window halvings on entering loss recovery ([`Config::loss_response`]).
    pub loss_cuts: u64,
    /// Loss events that [`LossResponse::DelayQualified`] did not take as
    /// congestion (the window stayed).
    pub loss_kept: u64,
    /// [`Startup::HyStart`]: times CSS was entered, and times it returned to
    /// slow start because the minimum FORWARD-RTT fell below its baseline.
    pub css_entries: u64,
    pub css_resumes: u64,
    /// Retransmissions sent again because the lost-retransmission timer
    /// expired in recovery.
    pub lost_retransmits: u64,
    /// Cells refused beyond `circuit_limit`.
    pub drops: u64,
    /// Cells that arrived a second time.
    pub duplicates: u64,
    /// Feedback requests sent because FWD stalled with everything ACKed.
    pub probes: u64,
    /// FORWARD-RTT samples taken.
    pub fwd_samples: u64,
    /// SACK items received that were used (SACK mode: [`Config::sack`]).
    pub sacks_in: u64,
    /// Cells in flight at the moment, marked SACKed.
    pub sacked: u32,
    /// Cells RACK (RFC 8985 §6) marked lost, RTO marks included.
    pub rack_lost: u64,
    /// Tail loss probes sent (RFC 8985 §7).
    pub tlp_probes: u64,
}

/// Counters of one endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndpointStats {
    pub datagrams_in: u64,
    pub bytes_in: u64,
    pub datagrams_out: u64,
    pub bytes_out: u64,
    /// Datagrams rejected by the decoder.
    pub decode_errors: u64,
    pub cells_in: u64,
    pub cells_out: u64,
    pub feedback_in: u64,
    pub feedback_out: u64,
    /// Items for a (peer, circ_id) that names no circuit here, or from an
    /// unregistered peer.
    pub unknown_circuit: u64,
    /// Items that made no sense (seq 0, ACK or FWD beyond what was sent, a
    /// cell on a leg that has no queue receiving from it).
    pub invalid_items: u64,
    /// Cells refused beyond `circuit_limit`, over all circuits.
    pub drops: u64,
    /// Times the token bucket held the scheduler back.
    pub bucket_stalls: u64,
    /// SACK items sent.
    pub sack_out: u64,
    /// SACK items received.
    pub sack_in: u64,
    /// SACK blocks ignored because they reach beyond what was sent
    /// (`end > next_tx`); the item also counts in `invalid_items`.
    pub sack_rejected: u64,
    /// SACK blocks ignored because every cell in them was already
    /// acknowledged (`end ≤ head`): late or reordered feedback.
    pub sack_stale: u64,
}
