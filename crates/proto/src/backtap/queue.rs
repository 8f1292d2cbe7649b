//! The fused queue of one circuit and direction (seed 002 §3, Fig. 2b) and
//! the per-hop sender state attached to it.
//!
//! ```text
//!   seq:   head ........ tail   (gap)   out-of-order cells
//!   cells: [ring indexed by seq − head]
//!   above: {seq → cell}, seq > tail + 1
//!   tx:    [first-send times indexed by seq − fwd_seen], seq < next_tx
//!   runs:  {start → end} of `above` ([`Config::sack`] only)
//! ```
//!
//! Invariants: `fwd_seen ≤ head ≤ next_tx ≤ tail + 1`; `cells` holds
//! exactly `head ..= tail`, all present; `above` holds the cells that arrived
//! above a gap, each below `next_tx + circuit_limit`; `tx` holds one entry
//! per cell in `fwd_seen .. next_tx`. A FWD implies an ACK (the successor
//! holds what it forwarded), which keeps `fwd_seen ≤ head`. Cells above a gap
//! are kept apart so that memory follows the cells that arrived: one cell
//! far ahead costs one cell, not a ring stretched to reach it.

use super::recovery::Scoreboard;
use super::wire::CellBody;
use super::{CellLayer, Config, HopStats, LossCause, LossResponse, Startup};
use crate::rtt::RttEstimator;
use crate::slab::Slab;
use crate::time::{Dur, Time};
use std::collections::{btree_map::Entry, BTreeMap, VecDeque};

/// A cell held in a queue.
#[derive(Clone)]
pub(super) struct Slot {
    pub flags: u8,
    pub body: CellBody,
}

/// The cells an endpoint's queues hold: one slab per endpoint, the queues
/// keep slot numbers (see [`crate::slab`] for why).
pub(super) type Cells = Slab<Slot>;

/// Transmissions of a cell to the successor.
#[derive(Clone, Copy, Debug)]
pub(super) struct TxInfo {
    /// First transmission (FORWARD-RTT and ACK RTT samples).
    pub sent: Time,
    /// Latest transmission (RACK, RFC 8985 §6.1: `xmit_ts`).
    pub xmit: Time,
    /// Retransmitted at least once: no RTT sample from it (Karn).
    pub retx: bool,
    /// Reported held by a SACK block (SACK mode only).
    pub sacked: bool,
    /// Marked lost and not yet sent again (SACK mode only).
    pub lost: bool,
}

impl TxInfo {
    fn new(now: Time) -> TxInfo {
        TxInfo {
            sent: now,
            xmit: now,
            retx: false,
            sacked: false,
            lost: false,
        }
    }
}

/// The queue's one timer: the RFC 6298 retransmission timer while cells are
/// unacknowledged (or, in loss recovery, the shorter lost-retransmission
/// timer), otherwise the FWD probe timer while cells are ACKed but not
/// forwarded ([hopwise], `docs/backtap.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Timer {
    Off,
    Rto(Time),
    /// [hopwise] A retransmission sent in recovery was not acknowledged
    /// within about two round trips: send it again without backing off.
    Lost(Time),
    Probe(Time),
}

impl Timer {
    pub fn deadline(self) -> Option<Time> {
        match self {
            Timer::Off => None,
            Timer::Rto(t) | Timer::Lost(t) | Timer::Probe(t) => Some(t),
        }
    }
}

/// Lost-retransmission timeouts per cell before the RTO (with backoff) takes over.
const LOST_TRIES: u32 = 2;

// HyStart++ constants (RFC 9406 §4.3).
/// MIN_RTT_THRESH.
const HS_MIN_RTT_THRESH: Dur = Dur::from_millis(4);
/// MAX_RTT_THRESH.
const HS_MAX_RTT_THRESH: Dur = Dur::from_millis(16);
/// MIN_RTT_DIVISOR.
const HS_MIN_RTT_DIVISOR: u64 = 8;
/// N_RTT_SAMPLE: FORWARD-RTT samples a round needs before it is judged.
const HS_N_RTT_SAMPLE: u32 = 8;
/// CSS_GROWTH_DIVISOR.
const HS_CSS_GROWTH_DIVISOR: u32 = 4;
/// CSS_ROUNDS.
const HS_CSS_ROUNDS: u32 = 5;
/// L, the most cells one FWD may add: RFC 9406 §4.3 recommends 8 without
/// pacing (BackTap does not pace).
const HS_L: u32 = 8;

/// [`LossResponse::DelayQualified`]: the loss-fraction EWMA takes a sample
/// once at least this many cells were sent (rounds with fewer carry over).
const LOSS_MIN_CELLS: u64 = 64;

/// RFC 9406 §4.2: `RttThresh = clamp(lastRoundMinRTT / 8, 4 ms, 16 ms)`.
/// [`LossResponse::DelayQualified`] uses the same threshold for a delay rise.
fn rtt_thresh(min: Dur) -> Dur {
    (min / HS_MIN_RTT_DIVISOR).clamp(HS_MIN_RTT_THRESH, HS_MAX_RTT_THRESH)
}

/// What an arriving cell did to the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Arrival {
    /// `tail` advanced: a cumulative ACK is owed.
    InOrder,
    /// Held above a gap: a duplicate ACK is owed at once (RFC 5681 §4.2).
    OutOfOrder,
    /// Seen before: ACK and FWD are owed again (the sender may have lost them).
    Duplicate,
    /// Beyond `circuit_limit`: refused, nothing owed (paper §3).
    Dropped,
}

/// What an ACK did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AckResult {
    Ignored,
    /// New cells acknowledged.
    Advanced,
    /// A duplicate ACK; `true` if it triggered fast retransmit.
    Duplicate(bool),
}

pub(super) struct Queue {
    pub head: u32,
    pub tail: u32,
    pub next_tx: u32,
    pub fwd_seen: u32,
    /// The in-order cells `head..=tail`: their slots in the endpoint's [`Cells`].
    pub cells: VecDeque<u32>,
    /// Cells that arrived above a gap (seq > tail + 1): seq → slot.
    pub above: BTreeMap<u32, u32>,
    /// [`Config::sack`]: the runs of `above`, start → end (exclusive).
    pub runs: BTreeMap<u32, u32>,
    /// The latest out-of-order arrival: its run is the first SACK block.
    pub last_ooo: u32,
    pub tx: VecDeque<TxInfo>,
    /// The onion layer this node adds or removes (a forwarding relay's):
    /// applied to each body once, when it joins `cells` in sequence order.
    pub layer: Option<Box<dyn CellLayer>>,
    /// The sender's SACK scoreboard and RACK-TLP state, from the first
    /// SACK the successor sent; until then the dupack/NewReno path.
    pub sb: Option<Box<Scoreboard>>,

    // Window (paper Eq. 1).
    pub swnd: u32,
    pub slow_start: bool,
    /// Slow start: the last round doubled the window; this one only measures.
    pub ss_wait: bool,
    /// The round ends when a FWD covers this cell (nstor `begRttSeq`).
    pub round_end: u32,
    pub samples: u32,
    pub round_min: Dur,
    /// The latest FORWARD-RTT sample of the round (slow start only).
    pub round_last: Dur,
    pub limited: bool,
    pub own_base: Dur,
    pub last_actual: Dur,
    /// The last round that adjusted the window had Eq. 1's `diff > β`.
    pub last_over_beta: bool,

    // HyStart++ (RFC 9406 §4.2), [`Startup::HyStart`] only; `slow_start`
    // covers both slow start and CSS.
    pub hystart: bool,
    /// In Conservative Slow Start.
    pub css: bool,
    /// lastRoundMinRTT, currentRoundMinRTT, rttSampleCount (FORWARD-RTTs).
    pub hs_last_min: Dur,
    pub hs_cur_min: Dur,
    pub hs_count: u32,
    /// The round's latest `N_RTT_SAMPLE` samples (a ring indexed by count).
    pub hs_recent: [Dur; HS_N_RTT_SAMPLE as usize],
    /// CSS saw the queue grow again: leave at the next FWD.
    pub hs_exit: bool,
    /// cssBaselineMinRtt.
    pub css_base: Dur,
    /// Rounds ended in CSS.
    pub css_rounds: u32,
    /// The window held back a cell since the last growth.
    pub hs_held: bool,
    /// Cells the last FWD forwarded, none of them retransmitted (0 if any was).
    pub hs_new: u32,
    /// CSS growth not yet applied, in 1/`CSS_GROWTH_DIVISOR` cells.
    pub hs_frac: u32,
    /// When CSS was entered, and `fwd_seen` then: the delivery rate with a
    /// queue, for the exit clamp.
    pub css_at: (Time, u32),
    /// Time of the latest FWD progress.
    pub last_fwd_at: Time,

    // Loss response.
    pub loss_response: LossResponse,
    pub loss_bound: f64,
    /// EWMA of the fraction of cells lost per sample of ≥ 64 cells sent.
    pub loss_ewma: f64,
    /// `st.cells_out` and `st.retransmits` when the current sample began.
    pub loss_mark: (u64, u64),

    // Reliability (RFC 6298, RFC 5681, RFC 6582).
    pub rtt: RttEstimator,
    pub dupacks: u32,
    /// NewReno recovery point: the highest cell sent when loss was detected.
    pub recover: Option<u32>,
    /// Retransmit `head` at the next opportunity.
    pub retx_due: bool,
    /// Lost-retransmission timeouts since the last ACK progress.
    pub lost_tries: u32,
    pub timer: Timer,
    pub probe_backoff: u32,
    /// Time of this queue's live entry in the endpoint's timer heap.
    pub heap_at: Option<Time>,

    // Feedback owed to the predecessor (coalesced in place).
    pub owe_ack: bool,
    pub owe_fwd: bool,
    /// A SACK is owed at once (an out-of-order arrival, [`Config::sack`]).
    pub owe_sack: bool,
    pub fb_queued: bool,

    /// The application sits on the in side (packaging edge) / out side
    /// (delivering edge).
    pub in_app: bool,
    pub out_app: bool,
    /// Packaging edge: admission was open when last looked at. Delivering
    /// edge: a cell was readable when last looked at.
    pub edge_flag: bool,

    pub st: HopStats,
}

impl Queue {
    pub fn new(cfg: &Config, in_app: bool, out_app: bool) -> Queue {
        Queue {
            head: 1,
            tail: 0,
            next_tx: 1,
            fwd_seen: 1,
            cells: VecDeque::new(),
            above: BTreeMap::new(),
            runs: BTreeMap::new(),
            last_ooo: 0,
            tx: VecDeque::new(),
            layer: None,
            sb: None,
            swnd: cfg.initial_window.clamp(1, cfg.window_cap()),
            slow_start: matches!(cfg.startup, Startup::SlowStart { .. } | Startup::HyStart),
            ss_wait: false,
            round_end: 1,
            samples: 0,
            round_min: Dur::MAX,
            round_last: Dur::ZERO,
            limited: false,
            own_base: Dur::MAX,
            last_actual: Dur::ZERO,
            last_over_beta: false,
            hystart: cfg.startup == Startup::HyStart,
            css: false,
            hs_last_min: Dur::MAX,
            hs_cur_min: Dur::MAX,
            hs_count: 0,
            hs_recent: [Dur::MAX; HS_N_RTT_SAMPLE as usize],
            hs_exit: false,
            css_base: Dur::MAX,
            css_rounds: 0,
            hs_held: false,
            hs_new: 0,
            hs_frac: 0,
            css_at: (Time::ZERO, 1),
            last_fwd_at: Time::ZERO,
            loss_response: cfg.loss_response,
            loss_bound: cfg.loss_bound,
            loss_ewma: 0.0,
            loss_mark: (0, 0),
            rtt: RttEstimator::new(cfg.min_rto, cfg.max_rto),
            dupacks: 0,
            recover: None,
            retx_due: false,
            lost_tries: 0,
            timer: Timer::Off,
            probe_backoff: 0,
            heap_at: None,
            owe_ack: false,
            owe_fwd: false,
            owe_sack: false,
            fb_queued: false,
            in_app,
            out_app,
            edge_flag: in_app,
            st: HopStats::default(),
        }
    }

    /// Cumulative ACK value owed upstream.
    pub fn ack_value(&self) -> u32 {
        self.tail + 1
    }
    /// Cumulative FWD value owed upstream: every cell below it has left.
    pub fn fwd_value(&self) -> u32 {
        self.next_tx
    }

    /// Sent, not yet forwarded by the successor.
    pub fn unforwarded(&self) -> u32 {
        self.next_tx - self.fwd_seen
    }

    /// Paper §3: a new cell may go if `high_tx − (fwd_seen − 1) < swnd`
    /// (with `high_tx = next_tx − 1`). RFC 3042 limited transmit: the first
    /// two duplicate ACKs outside recovery each allow one cell more, so that
    /// a small window still produces enough duplicate ACKs. With SACK
    /// ([`Scoreboard::window_open`]) SACKed cells do not count.
    pub fn window_open(&self) -> bool {
        let extra = if self.recover.is_none() {
            self.dupacks.min(2)
        } else {
            0
        };
        match &self.sb {
            None => self.unforwarded() < self.swnd + extra,
            Some(sb) => sb.window_open(self.unforwarded(), self.swnd + extra),
        }
    }

    /// Whether the scheduler has a cell to send for this queue.
    pub fn sendable(&self) -> bool {
        !self.out_app
            && ((self.retx_due && self.head < self.next_tx)
                || self.sack_has_retransmission()
                || (self.next_tx <= self.tail && self.window_open()))
    }

    /// Packaging-edge admission (nstor `ReadFromEdge`): cells queued here plus
    /// cells not yet forwarded by the successor stay below `swnd`.
    pub fn admission_open(&self, cfg: &Config) -> bool {
        if !self.in_app || self.tail >= u32::MAX - 2 {
            return false;
        }
        if self.out_app {
            // A circuit with the application on both sides: only the buffer bounds it.
            return self.tail + 1 - self.head < cfg.circuit_limit;
        }
        let sacked = self.sb.as_ref().map_or(0, |sb| sb.sacked);
        self.tail + 1 - self.fwd_seen - sacked < self.swnd
    }

    /// Records that the window held back a cell, for
    /// [`Config::grow_only_when_limited`]: a relay has a cell queued and the
    /// window is closed; a packaging edge has its window closed (admission,
    /// which counts the cells queued here too, is then closed as well, so the
    /// application is held back by the window). A packaging edge whose cells
    /// wait here for the token bucket or the scheduler while the window is
    /// open is not window-limited: its own relay is the bottleneck, no
    /// FORWARD-RTT sees that wait, and growing the window would only move
    /// more of the application's data into this queue.
    pub fn note_limited(&mut self) {
        if !self.out_app && (self.next_tx <= self.tail || self.in_app) && !self.window_open() {
            self.limited = true;
            self.hs_held = true;
        }
    }

    /// Cells held: in order and above a gap.
    pub fn held(&self) -> usize {
        self.cells.len() + self.above.len()
    }

    /// Appends a cell at the packaging edge (the caller checked admission).
    pub fn package(&mut self, store: &mut Cells, flags: u8, body: &CellBody) {
        debug_assert_eq!(self.cells.len() as u32, self.tail + 1 - self.head);
        self.cells
            .push_back(store.insert(Slot { flags, body: *body }));
        self.tail += 1;
        self.st.cells_in += 1;
    }

    /// A cell arrived from the predecessor.
    pub fn arrive(
        &mut self,
        cfg: &Config,
        store: &mut Cells,
        seq: u32,
        flags: u8,
        body: &CellBody,
    ) -> Arrival {
        if seq <= self.tail {
            self.st.duplicates += 1;
            return Arrival::Duplicate;
        }
        // The limit counts cells not yet forwarded (from next_tx): cells
        // forwarded but not yet acknowledged downstream are bounded by the
        // window, and counting them would refuse cells a long, full hop needs
        // (at 900 ms a hop holds ~870 cells in flight).
        if seq >= self.next_tx.saturating_add(cfg.circuit_limit) || seq >= u32::MAX - 2 {
            self.st.drops += 1;
            return Arrival::Dropped;
        }
        if seq == self.tail + 1 {
            self.cells
                .push_back(store.insert(Slot { flags, body: *body }));
            self.apply_layer_to_back(store);
            self.tail = seq;
            self.st.cells_in += 1;
            // Pull in the out-of-order cells the new one connects.
            while let Some(next) = self.above.first_entry() {
                if *next.key() != self.tail + 1 {
                    break;
                }
                self.cells.push_back(next.remove());
                self.apply_layer_to_back(store);
                self.tail += 1;
            }
            if cfg.sack {
                self.drop_runs_below_tail();
            }
            return Arrival::InOrder;
        }
        match self.above.entry(seq) {
            Entry::Occupied(_) => {
                self.st.duplicates += 1;
            }
            Entry::Vacant(v) => {
                v.insert(store.insert(Slot { flags, body: *body }));
                self.st.cells_in += 1;
                if cfg.sack {
                    self.add_run(seq);
                }
            }
        }
        Arrival::OutOfOrder
    }

    /// The onion layer, applied to the cell that just joined the in-order
    /// part: every sequence number passes here exactly once and in order,
    /// so a stream cipher's position never repeats, and a retransmission
    /// re-sends the body as it was transformed.
    fn apply_layer_to_back(&mut self, store: &mut Cells) {
        if let (Some(l), Some(&slot)) = (self.layer.as_mut(), self.cells.back()) {
            l.apply(&mut store.get_mut(slot).body);
        }
    }

    /// Gives every cell the queue holds back to `store` (the circuit is
    /// going away).
    pub fn clear(&mut self, store: &mut Cells) {
        for slot in self
            .cells
            .drain(..)
            .chain(std::mem::take(&mut self.above).into_values())
        {
            store.free(slot);
        }
    }

    /// Drops cells below `upto` from the buffer.
    fn release(&mut self, store: &mut Cells, upto: u32) {
        while self.head < upto {
            if let Some(slot) = self.cells.pop_front() {
                store.free(slot);
            }
            self.head += 1;
        }
        // Give back memory after a burst (thousands of queues share the heap).
        let cap = self.cells.capacity();
        if cap > 64 && self.cells.len() * 4 < cap {
            self.cells.shrink_to((self.cells.len() * 2).max(16));
        }
    }

    /// Whether any cell in `from .. to` was retransmitted (Karn's rule).
    fn any_retx(&self, from: u32, to: u32) -> bool {
        let a = (from - self.fwd_seen) as usize;
        let b = (to - self.fwd_seen) as usize;
        self.tx.range(a..b.min(self.tx.len())).any(|t| t.retx)
    }

    /// A cumulative ACK `a` from the successor. `may_be_dup`: the feedback
    /// item carries no FWD progress (RFC 5681 §2's "window unchanged").
    pub fn on_ack(
        &mut self,
        cfg: &Config,
        store: &mut Cells,
        now: Time,
        a: u32,
        may_be_dup: bool,
    ) -> AckResult {
        if a > self.next_tx || self.out_app {
            return AckResult::Ignored;
        }
        if a > self.head {
            // RFC 6298 §3 (Karn): no sample if the ACK covers a retransmission.
            if !self.any_retx(self.head, a) {
                if let Some(t) = self.tx.get((a - 1 - self.fwd_seen) as usize) {
                    self.rtt.update(now.since(t.sent));
                }
            }
            self.sack_delivered(now, a);
            self.release(store, a);
            self.dupacks = 0;
            self.lost_tries = 0;
            if let Some(r) = self.recover {
                if a > r {
                    self.recover = None;
                } else if self.sb.is_none() {
                    // RFC 6582 §3.2 step 5: a partial ACK means `a` was lost too.
                    self.retx_due = true;
                }
            }
            return AckResult::Advanced;
        }
        // With SACK, RACK detects losses (RFC 8985 §6), not duplicate ACKs.
        if a == self.head && self.head < self.next_tx && may_be_dup && self.sb.is_none() {
            self.dupacks = self.dupacks.saturating_add(1);
            // RFC 5681 §3.2: fast retransmit on the third duplicate ACK, once
            // per loss (not again before the recovery point is acknowledged).
            // RFC 5827 early retransmit: with fewer than four cells
            // outstanding and no new cell allowed, one less than outstanding.
            let outstanding = self.next_tx - self.head;
            let new_allowed = self.next_tx <= self.tail && self.unforwarded() < self.swnd;
            let thresh = if outstanding < 4 && !new_allowed {
                cfg.dupthresh.min(outstanding - 1).max(1)
            } else {
                cfg.dupthresh.max(1)
            };
            if self.dupacks >= thresh && self.recover.is_none() {
                self.retx_due = true;
                self.recover = Some(self.next_tx - 1);
                self.st.fast_retransmits += 1;
                self.on_loss_event(now, LossCause::FastRetransmit);
                return AckResult::Duplicate(true);
            }
            return AckResult::Duplicate(false);
        }
        AckResult::Ignored
    }

    /// A cumulative FWD `f`. Returns the FORWARD-RTT sample if it gave one,
    /// or `None` if nothing new was forwarded. `Some(None)`: progress, no sample.
    pub fn on_fwd(&mut self, store: &mut Cells, now: Time, f: u32) -> Option<Option<Dur>> {
        if f <= self.fwd_seen || f > self.next_tx || self.out_app {
            return None;
        }
        if f > self.head {
            // The successor holds what it forwarded: an implied ACK.
            self.sack_delivered(now, f);
            self.release(store, f);
            self.dupacks = 0;
            if self.recover.is_some_and(|r| f > r) {
                self.recover = None;
            }
        }
        let retx = self.any_retx(self.fwd_seen, f);
        self.hs_new = if retx { 0 } else { f - self.fwd_seen };
        let sample = if retx {
            None
        } else {
            self.tx
                .get((f - 1 - self.fwd_seen) as usize)
                .map(|t| now.since(t.sent))
        };
        let n = ((f - self.fwd_seen) as usize).min(self.tx.len());
        self.tx.drain(..n);
        self.fwd_seen = f;
        self.last_fwd_at = now;
        self.probe_backoff = 0;
        if let Some(s) = sample {
            self.samples += 1;
            self.round_min = self.round_min.min(s);
            self.round_last = s;
            self.own_base = self.own_base.min(s);
            self.st.fwd_samples += 1;
            if self.hystart && self.slow_start {
                self.hystart_sample(now, s);
            }
        }
        Some(sample)
    }

    /// RFC 9406 §4.2, per RTT sample: track the round's minimum; in slow
    /// start, once the round has `N_RTT_SAMPLE` samples, enter CSS if the
    /// minimum rose by `RttThresh` over the last round's; in CSS, go back to
    /// slow start if it fell below the CSS baseline.
    ///
    /// [hopwise] The current round is judged by the minimum of its latest
    /// `N_RTT_SAMPLE` samples, not of all its samples. A round's samples
    /// come from cells sent in the round before, while the window doubled:
    /// its first samples are of cells sent before the window crossed the
    /// BDP and hide the queue the rest built, for a whole round. With the
    /// round minimum, a 100 Mbit/s, 50 ms hop entered CSS at 4123 cells for
    /// a 1157-cell BDP, after its 1000-datagram link queue had overflowed
    /// (`backtap_window` tests). The last round's minimum stays the RFC's.
    ///
    /// [hopwise] In CSS, a minimum that rose by another `RttThresh` over
    /// the CSS baseline ends slow start at once (the queue keeps growing;
    /// the RFC waits `CSS_ROUNDS`).
    ///
    /// On BackTap a FORWARD-RTT also holds the wait behind the successor's
    /// window, which is itself still opening: that rise passes once the
    /// successor catches up, and the RFC's resume rule undoes the false CSS
    /// entry it caused (the slow start of `Startup::SlowStart` ended for
    /// good there, `docs/reproductions/backtap-circuit.md`).
    fn hystart_sample(&mut self, now: Time, s: Dur) {
        self.hs_cur_min = self.hs_cur_min.min(s);
        self.hs_recent[(self.hs_count % HS_N_RTT_SAMPLE) as usize] = s;
        self.hs_count += 1;
        if self.hs_count < HS_N_RTT_SAMPLE || self.hs_last_min == Dur::MAX {
            return;
        }
        let recent = self.hs_recent.iter().copied().min().unwrap_or(Dur::MAX);
        if !self.css {
            if recent >= self.hs_last_min + rtt_thresh(self.hs_last_min) {
                self.css = true;
                self.css_base = recent;
                self.css_at = (now, self.fwd_seen);
                self.css_rounds = 0;
                self.hs_frac = 0;
                self.st.css_entries += 1;
            }
        } else if recent < self.css_base {
            self.css = false;
            self.css_base = Dur::MAX;
            self.st.css_resumes += 1;
        } else if recent >= self.css_base + rtt_thresh(self.css_base) {
            self.hs_exit = true;
        }
    }

    /// [`Startup::HyStart`] growth on a FWD (RFC 9406 §4.2): `swnd` grows by
    /// the cells the FWD forwarded, at most L, divided by
    /// `CSS_GROWTH_DIVISOR` in CSS, if none of them was retransmitted and
    /// the window held a cell back since the last growth (RFC 7661's rule,
    /// as [`Config::grow_only_when_limited`]). Call after [`Queue::on_fwd`].
    pub fn grow_on_forward(&mut self, cfg: &Config) {
        let k = std::mem::take(&mut self.hs_new);
        if !self.hystart || !self.slow_start || k == 0 {
            return;
        }
        if !self.hs_held && cfg.grow_only_when_limited {
            return;
        }
        self.hs_held = false;
        let inc = k.min(HS_L);
        let add = if self.css {
            self.hs_frac += inc;
            let a = self.hs_frac / HS_CSS_GROWTH_DIVISOR;
            self.hs_frac %= HS_CSS_GROWTH_DIVISOR;
            a
        } else {
            inc
        };
        self.swnd = self.swnd.saturating_add(add).min(cfg.window_cap());
    }

    /// HyStart++ at the end of a round (RFC 9406 §4.2): a CSS round counts,
    /// and after `CSS_ROUNDS` of them slow start ends with
    /// [`Queue::hystart_clamp`]. Then the next round's minimum starts
    /// afresh. Returns whether slow start ended.
    fn hystart_round_end(&mut self, base: Dur) -> bool {
        let cur = self.hs_cur_min;
        let now = self.last_fwd_at;
        let mut exit = false;
        if self.css {
            self.css_rounds += 1;
            if self.css_rounds >= HS_CSS_ROUNDS {
                exit = true;
                self.leave_hystart();
                self.hystart_clamp(base, cur, now);
            }
        }
        self.hs_last_min = cur;
        self.hs_cur_min = Dur::MAX;
        self.hs_count = 0;
        exit
    }

    /// Leaving HyStart (RFC 9406 keeps cwnd on leaving CSS). [hopwise] The
    /// window is clamped to the larger of two estimates of the BDP, plus
    /// one: the clamp of [`Startup::SlowStart`], `swnd · baseRtt / rtt`
    /// with the latest minimum (Linux tcp_vegas), and the delivery rate
    /// since CSS began times baseRtt (BBR's estimate,
    /// draft-cardwell-iccrg-bbr-congestion-control: in CSS a queue has
    /// built, so cells leave at the bottleneck's rate). The start-up is
    /// unpaced, so each estimate alone can read its bursts and gaps low: on
    /// a 100 Mbit/s, 50 ms hop either alone gave about 1000 cells, the
    /// larger 1174 for a BDP of 1157 (`backtap_window` tests). Flooring the
    /// clamp at the window at CSS entry instead kept backtap-circuit's exit
    /// hop at 788 cells for a 96-cell BDP (a relay's full initial token
    /// bucket hid the bottleneck while the window grew).
    fn hystart_clamp(&mut self, base: Dur, rtt: Dur, now: Time) {
        if base == Dur::MAX {
            return;
        }
        let b = base.as_nanos() as u128;
        let mut est = 0;
        if rtt != Dur::MAX {
            est = self.swnd as u128 * b / rtt.max(base).as_nanos().max(1) as u128;
        }
        let span = now.since(self.css_at.0);
        let cells = self.fwd_seen - self.css_at.1;
        if span > Dur::ZERO && cells >= HS_N_RTT_SAMPLE {
            est = est.max(cells as u128 * b / span.as_nanos() as u128);
        }
        if est == 0 {
            return;
        }
        let target = est.min(u32::MAX as u128 - 1) as u32 + 1;
        self.swnd = self.swnd.min(target).max(2);
    }

    fn leave_hystart(&mut self) {
        self.slow_start = false;
        self.hs_exit = false;
        self.css = false;
        self.css_base = Dur::MAX;
    }

    /// Leaving slow start: clamp to the window that matches the measured
    /// rate, swnd · baseRtt / rtt, plus one (Linux tcp_vegas), so that Eq. 1
    /// does not spend a round per cell of overshoot.
    fn clamp_to_rate(&mut self, base: Dur, rtt: Dur) {
        let target = self.swnd as u128 * base.as_nanos() as u128 / rtt.as_nanos().max(1) as u128;
        self.swnd = self.swnd.min(target as u32 + 1).max(1);
    }

    /// [`LossResponse::DelayQualified`]: one sample of the lost fraction
    /// (retransmissions over new cells sent) per ≥ 64 cells sent, smoothed
    /// with gain 1/8.
    fn loss_round_end(&mut self) {
        let sent = self.st.cells_out - self.loss_mark.0;
        if sent < LOSS_MIN_CELLS {
            return;
        }
        let lost = self.st.retransmits - self.loss_mark.1;
        let frac = (lost as f64 / sent as f64).min(1.0);
        self.loss_ewma += (frac - self.loss_ewma) / 8.0;
        self.loss_mark = (self.st.cells_out, self.st.retransmits);
    }

    /// The round ends when a FWD covers the cell that was next to send when
    /// it began (`docs/backtap.md`; nstor `begRttSeq`). Returns whether the
    /// window was evaluated.
    pub fn maybe_end_round(&mut self, cfg: &Config, base: Dur) -> bool {
        let mut hs_exit = false;
        if self.hs_exit && self.slow_start {
            // CSS saw the queue grow again (`hystart_sample`).
            hs_exit = true;
            self.leave_hystart();
            let recent = self.hs_recent.iter().copied().min().unwrap_or(Dur::MAX);
            self.hystart_clamp(base, recent, self.last_fwd_at);
        }
        if self.fwd_seen <= self.round_end {
            return false;
        }
        self.round_end = self.next_tx;
        if self.loss_response == LossResponse::DelayQualified {
            self.loss_round_end();
        }
        hs_exit |= self.hystart && self.slow_start && self.hystart_round_end(base);
        // Fewer than `min_samples` samples carry over to the next round
        // (nstor only resets its counter when it adjusts the window).
        if self.samples < cfg.min_samples.max(1) || base == Dur::MAX {
            return false;
        }
        let actual = self.round_min.max(base);
        // Eq. 1: diff = swnd · (actualRtt − baseRtt) / baseRtt, compared in
        // exact integer arithmetic as swnd · (actual − base) ⋚ k · base.
        let swnd = self.swnd as u128;
        let b = base.as_nanos() as u128;
        let lhs = |rtt: Dur| swnd * (rtt.max(base) - base).as_nanos() as u128;
        let may_grow = self.limited || !cfg.grow_only_when_limited;
        let max = cfg.window_cap();
        // HyStart++ replaces Eq. 1 until it ends, and on the round it ends.
        let in_hystart = self.hystart && self.slow_start;
        let mut vegas = !(hs_exit || in_hystart);
        if self.slow_start && !self.hystart {
            let gamma = match cfg.startup {
                Startup::SlowStart { gamma } => gamma,
                Startup::Linear | Startup::HyStart => 0,
            };
            // [hopwise] Slow start judges a round by its latest sample: the
            // minimum still includes cells sent before the last doubling
            // reached the bottleneck, so it would see the overshoot a round late.
            let latest = self.round_last.max(base);
            if lhs(latest) < gamma as u128 * b {
                vegas = false;
                // Vegas doubles every other round: a round's samples come
                // from cells sent in the round before, so the round after a
                // doubling measures the old window.
                if may_grow && !self.ss_wait {
                    self.swnd = self.swnd.saturating_mul(2).min(max);
                    self.ss_wait = true;
                } else {
                    self.ss_wait = false;
                }
            } else {
                // Leaving slow start: clamp to the measured rate.
                self.slow_start = false;
                vegas = false;
                self.clamp_to_rate(base, latest);
            }
        }
        self.last_over_beta = lhs(actual) > cfg.beta as u128 * b;
        if vegas {
            if lhs(actual) < cfg.alpha as u128 * b {
                if may_grow {
                    self.swnd = (self.swnd + 1).min(max);
                }
            } else if lhs(actual) > cfg.beta as u128 * b {
                self.swnd = (self.swnd - 1).max(1);
            }
        }
        self.last_actual = actual;
        self.samples = 0;
        self.round_min = Dur::MAX;
        self.limited = false;
        self.st.rounds += 1;
        true
    }

    /// Picks the cell to send (a due retransmission of `head` first; with
    /// SACK the lowest cell marked lost, or a tail loss probe) and updates
    /// the pointers. Returns `(seq, is_new)`.
    pub fn take_for_send(&mut self, now: Time) -> (u32, bool) {
        if self.retx_due && self.head < self.next_tx {
            self.retx_due = false;
            let seq = self.head;
            self.note_retransmit(now, seq);
            (seq, false)
        } else if let Some(seq) = self.sack_take(now) {
            (seq, false)
        } else {
            self.retx_due = false;
            let seq = self.next_tx;
            self.next_tx += 1;
            self.tx.push_back(TxInfo::new(now));
            self.sack_sent(seq, now);
            self.st.cells_out += 1;
            (seq, true)
        }
    }

    /// Records a retransmission of `seq` (not below `head`).
    pub(super) fn note_retransmit(&mut self, now: Time, seq: u32) {
        if let Some(t) = self.tx.get_mut((seq - self.fwd_seen) as usize) {
            t.retx = true;
            t.xmit = now;
            t.lost = false;
        }
        self.sack_sent(seq, now);
        self.st.retransmits += 1;
    }

    /// How long a retransmission in recovery may go unacknowledged before it
    /// is presumed lost: SRTT + max(SRTT, 4·RTTVAR) plus two pack delays for
    /// feedback that waits, never more than the RTO. (RFC 8985's RACK-TLP
    /// detects lost retransmissions the same way, by time; without SACK this
    /// is the only signal left.)
    fn lost_timeout(&self, cfg: &Config) -> Dur {
        let srtt = self.rtt.srtt();
        (srtt + srtt.max(self.rtt.rttvar() * 4) + cfg.pack_delay * 2).min(self.rtt.rto())
    }

    /// Recomputes the timer after a change (RFC 6298 §5.1–5.3 for the
    /// retransmission timer). `restart`: progress was made (or, in recovery,
    /// a retransmission sent), start afresh.
    pub fn update_timer(&mut self, cfg: &Config, now: Time, restart: bool) {
        if self.out_app {
            self.timer = Timer::Off;
        } else if self.head < self.next_tx {
            // With SACK, RACK finds lost retransmissions (RFC 8985 §6).
            let quick = self.recover.is_some()
                && self.lost_tries < LOST_TRIES
                && self.rtt.has_sample()
                && self.sb.is_none();
            match (quick, self.timer) {
                (true, Timer::Lost(_)) | (false, Timer::Rto(_)) if !restart => {}
                (true, _) => self.timer = Timer::Lost(now + self.lost_timeout(cfg)),
                (false, _) => self.timer = Timer::Rto(now + self.rtt.rto()),
            }
        } else if self.fwd_seen < self.next_tx {
            if restart || !matches!(self.timer, Timer::Probe(_)) {
                let iv = self.rtt.rto() * (1u64 << self.probe_backoff.min(20));
                self.timer = Timer::Probe(now + iv.min(cfg.max_rto));
            }
        } else {
            self.timer = Timer::Off;
        }
        if restart {
            self.arm_tlp(cfg, now);
        }
    }

    /// The earliest deadline of the queue's timers: the one of
    /// [`Queue::timer`] and, with SACK, RACK's reorder timer and the tail
    /// loss probe.
    pub fn deadline(&self) -> Option<Time> {
        let t = self.timer.deadline();
        match &self.sb {
            None => t,
            Some(sb) => [t, sb.reo_at, sb.tlp_at].into_iter().flatten().min(),
        }
    }

    /// The retransmission timer expired (RFC 6298 §5.4–5.6): retransmit the
    /// oldest unacknowledged cell, back off, restart the timer. Later holes
    /// are repaired by partial ACKs (RFC 6582).
    pub fn on_rto(&mut self, cfg: &Config, now: Time) {
        if self.sb.is_some() {
            self.rack_on_rto(cfg, now);
        } else {
            self.retx_due = true;
        }
        if self.recover.is_none() {
            self.on_loss_event(now, LossCause::Rto);
        }
        self.recover = Some(self.next_tx - 1);
        self.dupacks = 0;
        self.rtt.back_off();
        self.st.timeouts += 1;
        self.timer = Timer::Rto(now + self.rtt.rto());
    }

    /// A loss event: the first loss of a recovery episode, whatever found it
    /// (called at most once per episode). The window answers as
    /// [`Config::loss_response`] says; a cut halves it, not below the
    /// start-up window of 2, and ends any slow start.
    pub fn on_loss_event(&mut self, _now: Time, cause: LossCause) {
        let cut = match self.loss_response {
            LossResponse::None => false,
            LossResponse::Halve => true,
            LossResponse::DelayQualified => self.loss_is_congestive(cause),
        };
        if cut {
            self.swnd = (self.swnd / 2).max(2).min(self.swnd);
            self.leave_hystart();
            self.st.loss_cuts += 1;
        } else if self.loss_response == LossResponse::DelayQualified {
            self.st.loss_kept += 1;
        }
    }

    /// [hopwise] [`LossResponse::DelayQualified`] (`docs/backtap.md`, "Loss
    /// response"): a loss is congestive if any of
    /// 1. the latest ACK round trip of this hop rose over its minimum by
    ///    `clamp(min/8, 4 ms, 16 ms)` (RFC 9406 §4.3's threshold): a queue
    ///    that overflowed was full just before, and the cell acknowledged
    ///    last waited behind it;
    /// 2. the last round's Eq. 1 `diff` exceeded β: queueing beyond the band
    ///    Eq. 1 aims at, seen in the FORWARD round trip;
    /// 3. the retransmission timer found it, once a round trip was measured
    ///    (RFC 6298 §5; RFC 8985 §6.3 treats an RTO as congestion too);
    /// 4. the smoothed lost fraction exceeds [`Config::loss_bound`]: an
    ///    explicit loss-rate bound, as BBR's `loss_thresh` (2 %) bounds
    ///    the loss it tolerates.
    fn loss_is_congestive(&self, cause: LossCause) -> bool {
        // A timeout before any round trip was measured (the first flight
        // lost, the RTO still the initial 1 s) says nothing about a queue.
        if cause == LossCause::Rto && self.rtt.has_sample() {
            return true;
        }
        if self.last_over_beta || self.loss_ewma > self.loss_bound {
            return true;
        }
        if self.rtt.has_sample() {
            let min = self.rtt.min_rtt();
            if self.rtt.latest() >= min + rtt_thresh(min) {
                return true;
            }
        }
        false
    }

    /// The lost-retransmission timer expired: send `head` again, no backoff.
    pub fn on_lost(&mut self, cfg: &Config, now: Time) {
        self.retx_due = true;
        self.lost_tries += 1;
        self.st.lost_retransmits += 1;
        self.timer = Timer::Off;
        self.update_timer(cfg, now, true);
    }

    /// The probe timer expired: the caller sends a feedback request.
    pub fn on_probe(&mut self, cfg: &Config, now: Time) {
        self.probe_backoff = (self.probe_backoff + 1).min(20);
        self.st.probes += 1;
        let iv = self.rtt.rto() * (1u64 << self.probe_backoff);
        self.timer = Timer::Probe(now + iv.min(cfg.max_rto));
    }

    /// Delivering edge: the application takes the next in-order cell.
    pub fn take_delivered(&mut self, store: &mut Cells, out: &mut CellBody) -> Option<u8> {
        if !self.out_app || self.head > self.tail {
            return None;
        }
        let id = self.cells.pop_front()?;
        let slot = store.get(id);
        *out = slot.body;
        let flags = slot.flags;
        store.free(id);
        self.head += 1;
        self.next_tx = self.head;
        self.fwd_seen = self.head;
        self.st.cells_out += 1;
        let cap = self.cells.capacity();
        if cap > 64 && self.cells.len() * 4 < cap {
            self.cells.shrink_to((self.cells.len() * 2).max(16));
        }
        Some(flags)
    }

    /// The cell `seq` for (re)transmission, if still held.
    pub fn cell<'a>(&self, store: &'a Cells, seq: u32) -> Option<&'a Slot> {
        if seq < self.head {
            return None;
        }
        let slot = self
            .cells
            .get((seq - self.head) as usize)
            .or_else(|| self.above.get(&seq))?;
        Some(store.get(*slot))
    }

    pub fn stats(&self, base: Dur) -> HopStats {
        let mut s = self.st;
        s.swnd = self.swnd;
        s.slow_start = self.slow_start;
        s.css = self.css;
        s.head = self.head;
        s.tail = self.tail;
        s.next_tx = self.next_tx;
        s.fwd_seen = self.fwd_seen;
        s.queued = if self.out_app {
            self.tail + 1 - self.head
        } else {
            self.tail + 1 - self.next_tx
        };
        s.in_flight = self.next_tx - self.head;
        s.unforwarded = self.unforwarded();
        s.out_of_order = self.above.len() as u32;
        s.sacked = self.sb.as_ref().map_or(0, |sb| sb.sacked);
        s.srtt = self.rtt.srtt();
        s.rto = self.rtt.rto();
        s.base_rtt = if base == Dur::MAX { Dur::ZERO } else { base };
        s.actual_rtt = self.last_actual;
        s
    }
}
