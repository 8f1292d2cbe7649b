//! [hopwise] Selective acknowledgement and RACK-TLP loss detection
//! (`docs/backtap.md`, "Selective acknowledgement"). The paper's BackTap has
//! cumulative ACKs only; a hop then repairs about one hole per round trip and
//! finds a lost retransmission only by a timer, which at 5 % loss per 40 ms
//! hop held the daemon near 16 kB/s.
//!
//! Receiver ([`Config::sack`] on): the cells held above a gap are kept as
//! runs; every feedback item while a run exists goes out as a SACK item
//! (RFC 2018) whose first block is the run holding the latest out-of-order
//! arrival, then the lowest runs (RFC 2018 §4).
//!
//! Sender (on a queue once its successor sent a SACK; until then the
//! dupack/NewReno path of `queue.rs`): a scoreboard of SACKed and lost cells,
//! RACK's time-based loss detection with a reordering window and a reorder
//! timer (RFC 8985 §6), the RTO marking of §6.3, and the tail loss probe of
//! §7. Lost cells are retransmitted lowest first, before new cells, as many
//! as are marked: several holes per round trip. A retransmission refreshes
//! the cell's transmission time, so a later SACK finds it lost again without
//! an RTO. SACK never releases a cell: only ACK and FWD move `head`.
//!
//! Trust: a block reaching beyond `next_tx` (cells never sent) is ignored and
//! counted; a block wholly below `head` is stale and skipped; a block that
//! overlaps `head` is clipped. A forged SACK can at worst delay the repair
//! of a cell until RACK or the RTO marks `head` lost.

use super::queue::{Queue, Timer, TxInfo};
use super::wire::Sack;
use super::Config;
use super::LossCause;
use crate::time::{Dur, Time};
use std::collections::{BTreeSet, VecDeque};

/// The sender's SACK scoreboard and RACK-TLP state (RFC 8985 §6.1's
/// variables, per queue).
pub(super) struct Scoreboard {
    /// Cells in `head .. next_tx` marked SACKed (`TxInfo::sacked`).
    pub sacked: u32,
    /// Cells marked lost and not yet sent again, lowest first.
    pub lost: BTreeSet<u32>,
    /// `(seq, xmit)` in transmission order; an entry is stale once its cell
    /// is acknowledged, SACKed, marked lost or sent again (lazy deletion).
    pub xmit_order: VecDeque<(u32, Time)>,
    /// RACK.xmit_ts and RACK.end_seq of the most recently sent cell known
    /// delivered, and RACK.rtt from it.
    pub rack_xmit: Option<Time>,
    pub rack_end: u32,
    pub rack_rtt: Dur,
    /// RACK.fack: one above the highest cell known delivered.
    pub fack: u32,
    /// A cell never retransmitted was delivered below `fack` (§6.2 step 3).
    pub reordering_seen: bool,
    /// The reorder timer (§6.2 step 5).
    pub reo_at: Option<Time>,
    /// The loss probe timer (§7.2) and a probe waiting for the scheduler.
    pub tlp_at: Option<Time>,
    pub tlp_due: bool,
    /// TLP.end_seq of the probe in flight, and whether it was a
    /// retransmission (§7.4).
    pub tlp_end: Option<u32>,
    pub tlp_retx: bool,
    /// The successor's buffer (`circuit_limit`): cells sent and not yet
    /// forwarded stay below it, SACKed or not, so the successor never
    /// refuses a cell (the receive window).
    pub limit: u32,
}

impl Scoreboard {
    /// The two bounds on a new cell: congestion, the window without the
    /// SACKed cells (they left the network), and the receive bound.
    pub fn window_open(&self, unforwarded: u32, window: u32) -> bool {
        unforwarded - self.sacked < window && unforwarded < self.limit
    }

    /// RFC 8985 §6.2 steps 2 and 3 for a cell newly known delivered.
    fn delivered(&mut self, seq: u32, t: &TxInfo, now: Time, min_rtt: Dur) {
        let rtt = now.since(t.xmit);
        // Step 2: an ACK of a retransmission sent less than min_rtt ago
        // acknowledges the original, not the retransmission.
        if !(t.retx && rtt < min_rtt) {
            let later = match self.rack_xmit {
                None => true,
                Some(x) => t.xmit > x || (t.xmit == x && seq + 1 > self.rack_end),
            };
            if later {
                self.rack_rtt = rtt;
                self.rack_xmit = Some(t.xmit);
                self.rack_end = seq + 1;
            }
        }
        if seq + 1 < self.fack && !t.retx {
            self.reordering_seen = true;
        }
        self.fack = self.fack.max(seq + 1);
    }
}

/// What the blocks of one SACK item did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct SackOutcome {
    /// Blocks reaching beyond `next_tx`: ignored.
    pub rejected: u32,
    /// Blocks wholly below `head`: skipped.
    pub stale: u32,
}

impl Queue {
    // --------------------------------------------------------------
    // Receiver

    /// Adds the new out-of-order cell `seq` to the runs, merging.
    pub(super) fn add_run(&mut self, seq: u32) {
        let mut start = seq;
        let mut end = seq + 1;
        if let Some((&s, &e)) = self.runs.range(..seq).next_back() {
            if e == seq {
                start = s;
            }
        }
        if let Some(e) = self.runs.remove(&end) {
            end = e;
        }
        self.runs.insert(start, end);
        self.last_ooo = seq;
    }

    /// The in-order cells now reach `tail`: the runs they took in go.
    pub(super) fn drop_runs_below_tail(&mut self) {
        while let Some((&s, _)) = self.runs.first_key_value() {
            if s > self.tail {
                break;
            }
            self.runs.pop_first();
        }
    }

    /// The SACK item owed upstream while cells are held above a gap: the
    /// run with the latest out-of-order arrival first, then the lowest runs
    /// (RFC 2018 §4), at most eight.
    pub(super) fn sack_item(&self, circ_id: u32) -> Option<Sack> {
        let mut s = Sack::new(circ_id, self.ack_value());
        let recent = self
            .runs
            .range(..=self.last_ooo)
            .next_back()
            .filter(|&(_, &e)| e > self.last_ooo)
            .map(|(&a, &b)| (a, b));
        if let Some((a, b)) = recent {
            s.push(a, b);
        }
        for (&a, &b) in &self.runs {
            if recent.is_some_and(|r| r.0 == a) {
                continue;
            }
            if !s.push(a, b) {
                break;
            }
        }
        (!s.blocks().is_empty()).then_some(s)
    }

    // --------------------------------------------------------------
    // Sender

    /// The first SACK from the successor: from now on this queue detects
    /// losses by RACK-TLP.
    pub(super) fn enable_sack(&mut self, cfg: &Config) {
        if self.sb.is_some() || self.out_app {
            return;
        }
        let base = self.head - self.fwd_seen;
        let mut order: Vec<(u32, Time)> = self
            .tx
            .iter()
            .enumerate()
            .skip(base as usize)
            .map(|(i, t)| (self.fwd_seen + i as u32, t.xmit))
            .collect();
        order.sort_by_key(|&(s, x)| (x, s));
        self.dupacks = 0;
        self.sb = Some(Box::new(Scoreboard {
            sacked: 0,
            lost: BTreeSet::new(),
            xmit_order: order.into(),
            rack_xmit: None,
            rack_end: 0,
            rack_rtt: Dur::ZERO,
            fack: self.head,
            reordering_seen: false,
            reo_at: None,
            tlp_at: None,
            tlp_due: false,
            tlp_end: None,
            tlp_retx: false,
            limit: cfg.circuit_limit.max(1),
        }));
    }

    /// A transmission of `seq` at `now` (SACK mode): RACK's order of sends.
    pub(super) fn sack_sent(&mut self, seq: u32, now: Time) {
        let head = self.head;
        if let Some(sb) = self.sb.as_deref_mut() {
            sb.lost.remove(&seq);
            // Entries of released cells go from the front here, not only in
            // RACK's scan (which runs on SACKs and the reorder timer): on a
            // clean stretch the order would otherwise grow by one entry per
            // cell sent, without bound.
            while sb.xmit_order.front().is_some_and(|&(s, _)| s < head) {
                sb.xmit_order.pop_front();
            }
            sb.xmit_order.push_back((seq, now));
        }
    }

    /// Cells `head .. upto` are acknowledged (about to be released): update
    /// RACK from those not SACKed before, and take them off the scoreboard.
    /// Ends a loss probe episode the ACK covers (§7.4).
    pub(super) fn sack_delivered(&mut self, now: Time, upto: u32) {
        let min_rtt = self.rtt.min_rtt();
        let Some(sb) = self.sb.as_deref_mut() else {
            return;
        };
        for seq in self.head..upto {
            let Some(t) = self.tx.get((seq - self.fwd_seen) as usize) else {
                break;
            };
            if t.sacked {
                sb.sacked -= 1;
            } else {
                sb.delivered(seq, t, now, min_rtt);
            }
        }
        if !sb.lost.is_empty() {
            sb.lost = sb.lost.split_off(&upto);
        }
        if sb.tlp_end.is_some_and(|e| upto >= e) {
            sb.tlp_end = None;
            // §7.4.2: without DSACK, a probe that was a retransmission
            // means the original or the probe was lost.
            let retx = std::mem::take(&mut sb.tlp_retx);
            if retx && self.recover.is_none() {
                // One loss event per episode: RACK in the same SACK must not
                // answer the same loss again.
                self.recover = Some(self.next_tx - 1);
                self.on_loss_event(now, LossCause::Tlp);
            }
        }
    }

    /// The blocks of a SACK item whose `ack` was valid and processed, in
    /// ascending order: §6.2 step 3 reads the newly delivered cells that
    /// way. Taken in the wire's order (most recent block first), a lower
    /// block newly covered after a higher one would look reordered, and
    /// `reordering_seen` never resets.
    pub(super) fn on_sack_blocks(&mut self, now: Time, blocks: &[(u32, u32)]) -> SackOutcome {
        let mut out = SackOutcome::default();
        let min_rtt = self.rtt.min_rtt();
        let Some(sb) = self.sb.as_deref_mut() else {
            return out;
        };
        for &(start, end) in blocks {
            if end > self.next_tx {
                out.rejected += 1;
                continue;
            }
            if end <= self.head {
                out.stale += 1;
                continue;
            }
            for seq in start.max(self.head)..end {
                let Some(t) = self.tx.get_mut((seq - self.fwd_seen) as usize) else {
                    break;
                };
                if t.sacked {
                    continue;
                }
                t.sacked = true;
                sb.sacked += 1;
                if t.lost {
                    // The original arrived after all.
                    t.lost = false;
                    sb.lost.remove(&seq);
                }
                sb.delivered(seq, t, now, min_rtt);
            }
        }
        self.st.sacks_in += 1;
        out
    }

    /// RACK.reo_wnd (§6.2 step 4): zero while no reordering was seen and the
    /// hop is in recovery or three cells are SACKed (RFC 6675's DupThresh);
    /// otherwise min_rtt / 4, at most SRTT.
    fn reo_wnd(&self) -> Dur {
        let Some(sb) = self.sb.as_deref() else {
            return Dur::ZERO;
        };
        if !sb.reordering_seen && (self.recover.is_some() || sb.sacked >= 3) {
            Dur::ZERO
        } else {
            (self.rtt.min_rtt() / 4).min(self.rtt.srtt())
        }
    }

    /// RACK's loss detection (§6.2 step 5), then, on a new loss outside
    /// recovery, a loss event. Cells sent before the most recently sent
    /// delivered cell and older than RACK.rtt + reo_wnd are lost; the reorder
    /// timer is armed for the oldest that is not yet (the RFC arms it for
    /// the latest; re-running the detection at each expiry finds the same
    /// cells, sooner).
    pub(super) fn rack_detect(&mut self, now: Time) {
        let reo = self.reo_wnd();
        let Some(sb) = self.sb.as_deref_mut() else {
            return;
        };
        sb.reo_at = None;
        let Some(rx) = sb.rack_xmit else {
            return;
        };
        let mut lost = 0u64;
        while let Some(&(seq, x)) = sb.xmit_order.front() {
            let live = seq >= self.head
                && seq < self.next_tx
                && self
                    .tx
                    .get((seq - self.fwd_seen) as usize)
                    .is_some_and(|t| !t.sacked && !t.lost && t.xmit == x);
            if !live {
                sb.xmit_order.pop_front();
                continue;
            }
            // Only cells sent before RACK's cell can be judged by it.
            if x > rx || (x == rx && seq + 1 >= sb.rack_end) {
                break;
            }
            let due = x + sb.rack_rtt + reo;
            if due > now {
                sb.reo_at = Some(due);
                break;
            }
            sb.xmit_order.pop_front();
            if let Some(t) = self.tx.get_mut((seq - self.fwd_seen) as usize) {
                t.lost = true;
            }
            sb.lost.insert(seq);
            lost += 1;
        }
        self.st.rack_lost += lost;
        if lost > 0 && self.recover.is_none() {
            let cause = if sb.tlp_end.take().is_some() {
                LossCause::Tlp
            } else {
                LossCause::Rack
            };
            sb.tlp_retx = false;
            sb.tlp_at = None;
            // §7.2: no probe in recovery.
            sb.tlp_due = false;
            self.recover = Some(self.next_tx - 1);
            self.on_loss_event(now, cause);
        }
    }

    /// §6.3: the RTO expired. `head` is lost, and so is every other cell
    /// not SACKed that was sent at least RACK.rtt + reo_wnd ago. `head` is
    /// marked even if a SACK claimed it (RFC 2018 §8: a receiver may renege,
    /// and a forged claim must not stall the hop): that keeps the hop live.
    pub(super) fn rack_on_rto(&mut self, _cfg: &Config, now: Time) {
        let reo = self.reo_wnd();
        let Some(sb) = self.sb.as_deref_mut() else {
            return;
        };
        let mut lost = 0u64;
        for seq in self.head..self.next_tx {
            let Some(t) = self.tx.get_mut((seq - self.fwd_seen) as usize) else {
                break;
            };
            let first = seq == self.head;
            if first && t.sacked {
                t.sacked = false;
                sb.sacked -= 1;
            }
            if t.sacked {
                continue;
            }
            if !t.lost && (first || t.xmit + sb.rack_rtt + reo <= now) {
                t.lost = true;
                sb.lost.insert(seq);
                lost += 1;
            }
        }
        self.st.rack_lost += lost;
        sb.reo_at = None;
        sb.tlp_at = None;
        sb.tlp_due = false;
        sb.tlp_end = None;
        sb.tlp_retx = false;
    }

    /// Arms the loss probe (§7.2) after new data or a cumulative ACK: outside
    /// recovery, nothing SACKed or lost, no probe in flight. PTO = 2·SRTT
    /// plus two pack delays for an ACK that waits, never after the RTO.
    pub(super) fn arm_tlp(&mut self, cfg: &Config, now: Time) {
        let ok = self.recover.is_none() && self.head < self.next_tx && self.rtt.has_sample();
        let srtt = self.rtt.srtt();
        let rto_at = match self.timer {
            Timer::Rto(t) => Some(t),
            _ => None,
        };
        let Some(sb) = self.sb.as_deref_mut() else {
            return;
        };
        sb.tlp_at = None;
        if ok && sb.sacked == 0 && sb.lost.is_empty() && sb.tlp_end.is_none() && !sb.tlp_due {
            let pto = now + srtt * 2 + cfg.pack_delay * 2;
            sb.tlp_at = Some(rto_at.map_or(pto, |r| pto.min(r)));
        }
    }

    /// The reorder timer or the loss probe timer may have expired; returns
    /// whether either did something.
    pub(super) fn on_recovery_timers(&mut self, now: Time) -> bool {
        let Some(sb) = self.sb.as_deref_mut() else {
            return false;
        };
        let reo = sb.reo_at.is_some_and(|t| t <= now);
        let tlp = sb.tlp_at.is_some_and(|t| t <= now);
        if tlp {
            sb.tlp_at = None;
            if self.recover.is_none()
                && self.head < self.next_tx
                && sb.sacked == 0
                && sb.lost.is_empty()
            {
                sb.tlp_due = true;
            }
        }
        if reo {
            self.rack_detect(now);
        }
        reo || tlp
    }

    /// A lost cell, or a loss probe that has a cell to send, waits for the
    /// scheduler.
    pub(super) fn sack_has_retransmission(&self) -> bool {
        self.sb.as_deref().is_some_and(|sb| {
            !sb.lost.is_empty()
                || (sb.tlp_due && (self.next_tx > self.head || self.next_tx <= self.tail))
        })
    }

    /// With SACK: the lowest lost cell, else a due loss probe (§7.3: a new
    /// cell if one may go, else the highest cell sent again). `None`: send a
    /// new cell.
    pub(super) fn sack_take(&mut self, now: Time) -> Option<u32> {
        let unforwarded = self.unforwarded();
        let new_possible = self.next_tx <= self.tail;
        let sb = self.sb.as_deref_mut()?;
        if let Some(&seq) = sb.lost.first() {
            self.note_retransmit(now, seq);
            return Some(seq);
        }
        if !sb.tlp_due {
            return None;
        }
        sb.tlp_due = false;
        self.st.tlp_probes += 1;
        if new_possible && unforwarded < sb.limit {
            sb.tlp_retx = false;
            sb.tlp_end = Some(self.next_tx + 1);
            self.timer = Timer::Rto(now + self.rtt.rto());
            return None;
        }
        if self.next_tx > self.head {
            sb.tlp_retx = true;
            sb.tlp_end = Some(self.next_tx);
            let seq = self.next_tx - 1;
            self.timer = Timer::Rto(now + self.rtt.rto());
            self.note_retransmit(now, seq);
            return Some(seq);
        }
        None
    }
}
