//! Feedback of the endpoint: what a node owes its predecessor (ACK, FWD and,
//! with [`Config::sack`](crate::backtap::Config::sack), SACK items) and how items are packed into datagrams
//! and serialized; and the receipt of SACK items from the successor (the
//! scoreboard itself is in `recovery.rs`). FEEDBACK items are received in
//! the parent module, beside the window's FWD path.

use super::{Endpoint, QRef, TimerKey};
use crate::backtap::wire::{
    self, Feedback, Sack, CELL_ITEM_LEN, FEEDBACK_MAX_LEN, FLAG_OPEN, SACK_MAX_LEN,
};
use crate::time::Time;
use std::cmp::Reverse;

/// An item waiting in a datagram, serialized when the datagram leaves.
#[derive(Clone, Copy, Debug)]
pub(super) enum PItem {
    Cell {
        q: QRef,
        seq: u32,
    },
    /// The queue's owed ACK/FWD, with the values current at serialization.
    Feedback {
        q: QRef,
    },
    /// A duplicate ACK for an out-of-order arrival; never coalesced, so that
    /// the sender can count them (RFC 5681 §4.2). With [`Config::sack`](crate::backtap::Config::sack) the
    /// queue's coalesced item carries a SACK instead.
    DupAck {
        circ_id: u32,
        ack: u32,
    },
    /// A feedback request (kinds = 0) from the FWD probe timer.
    Request {
        circ_id: u32,
    },
}

#[derive(Default)]
pub(super) struct Pending {
    pub(super) items: Vec<PItem>,
    /// Bytes reserved, header included (feedback at its largest size).
    pub(super) size: usize,
}

impl Endpoint {
    /// Makes sure the queue's owed feedback has an item in the datagram to
    /// its in-leg peer (one item per queue: later feedback updates it). With
    /// [`Config::sack`](crate::backtap::Config::sack) the item has room for a SACK too, and a SACK owed
    /// for an out-of-order arrival leaves at once, as FWD does.
    pub(super) fn queue_feedback(&mut self, now: Time, r: QRef) {
        let Some(circ) = self.circuits.get_mut(&r.c) else {
            return;
        };
        let Some(inl) = circ.in_leg(r.d as usize) else {
            return;
        };
        let q = &mut circ.q[r.d as usize];
        if !(q.owe_ack || q.owe_fwd) {
            return;
        }
        let urgent = q.owe_fwd || q.owe_sack;
        if !q.fb_queued {
            q.fb_queued = true;
            let size = if self.cfg.sack {
                FEEDBACK_MAX_LEN + SACK_MAX_LEN
            } else {
                FEEDBACK_MAX_LEN
            };
            self.push_item(now, inl.peer, PItem::Feedback { q: r }, size);
        }
        if urgent {
            self.expedite(now, inl.peer);
        }
    }

    /// [hopwise] A datagram carrying FWD leaves without waiting for
    /// `pack_delay`: the FORWARD-RTT is the congestion signal, and holding
    /// FWD would add up to `pack_delay` of systematic noise to it (with
    /// coalescing, the hold is about `pack_delay` minus the burst length, which
    /// Eq. 1 reads as queueing). ACK-only feedback and lone cells still wait.
    pub(super) fn expedite(&mut self, now: Time, peer: u32) {
        let p = &mut self.peers[peer as usize];
        if p.open.is_some() && p.pack_at.is_some_and(|t| t > now) {
            p.pack_at = Some(now);
            if p.heap_at.is_none_or(|h| now < h) {
                p.heap_at = Some(now);
                self.timers.push(Reverse((now, TimerKey::Pack(peer))));
            }
        }
    }

    /// Packs an item into the datagram being filled for `peer` (paper §3:
    /// cells and feedback of any circuits share datagrams). A datagram that
    /// cannot take the item leaves; one that cannot take another cell leaves
    /// at once; otherwise it waits at most `pack_delay`.
    pub(super) fn push_item(&mut self, now: Time, peer: u32, item: PItem, size: usize) {
        let budget = self.cfg.payload_budget;
        if self.peers[peer as usize]
            .open
            .as_ref()
            .is_some_and(|o| o.size + size > budget)
        {
            self.close_open(peer);
        }
        let p = &mut self.peers[peer as usize];
        if p.open.is_none() {
            let items = self.spare.pop().unwrap_or_default();
            p.open = Some(Pending {
                items,
                size: wire::HEADER_LEN,
            });
            let at = now + self.cfg.pack_delay;
            p.pack_at = Some(at);
            if p.heap_at.is_none_or(|h| at < h) {
                p.heap_at = Some(at);
                self.timers.push(Reverse((at, TimerKey::Pack(peer))));
            }
        }
        let open = p.open.as_mut().expect("just opened");
        open.items.push(item);
        open.size += size;
        if open.size + CELL_ITEM_LEN > budget {
            self.close_open(peer);
        }
    }

    pub(super) fn close_open(&mut self, peer: u32) {
        let p = &mut self.peers[peer as usize];
        p.pack_at = None;
        if let Some(o) = p.open.take() {
            self.ready.push_back((peer, o));
        }
    }

    pub(super) fn serialize(&mut self, pending: &Pending, out: &mut Vec<u8>) {
        wire::begin(out);
        for it in &pending.items {
            match *it {
                PItem::Cell { q: r, seq } => {
                    let Some(circ) = self.circuits.get(&r.c) else {
                        continue;
                    };
                    let Some(out_leg) = circ.out_leg(r.d as usize) else {
                        continue;
                    };
                    // A cell ACKed since it was packed needs no (re)transmission.
                    let Some(slot) = circ.q[r.d as usize].cell(&self.cells, seq) else {
                        continue;
                    };
                    let flags = slot.flags | if seq == 1 { FLAG_OPEN } else { 0 };
                    wire::put_cell(out, out_leg.circ_id, seq, flags, &slot.body);
                    self.stats.cells_out += 1;
                }
                PItem::Feedback { q: r } => {
                    let Some(circ) = self.circuits.get_mut(&r.c) else {
                        continue;
                    };
                    let Some(in_leg) = circ.in_leg(r.d as usize) else {
                        continue;
                    };
                    let q = &mut circ.q[r.d as usize];
                    if !q.fb_queued {
                        continue;
                    }
                    // [hopwise] While cells are held above a gap, the ACK
                    // travels in a SACK item (RFC 2018) and FEEDBACK carries FWD.
                    let sack = if self.cfg.sack && (q.owe_ack || q.owe_fwd) {
                        q.sack_item(in_leg.circ_id)
                    } else {
                        None
                    };
                    let fb = Feedback {
                        circ_id: in_leg.circ_id,
                        ack: (q.owe_ack && sack.is_none()).then(|| q.ack_value()),
                        fwd: q.owe_fwd.then(|| q.fwd_value()),
                    };
                    q.fb_queued = false;
                    q.owe_ack = false;
                    q.owe_fwd = false;
                    q.owe_sack = false;
                    if let Some(s) = sack {
                        wire::put_sack(out, &s);
                        self.stats.feedback_out += 1;
                        self.stats.sack_out += 1;
                    }
                    if fb.ack.is_some() || fb.fwd.is_some() {
                        wire::put_feedback(out, &fb);
                        self.stats.feedback_out += 1;
                    }
                }
                PItem::DupAck { circ_id, ack } => {
                    wire::put_feedback(
                        out,
                        &Feedback {
                            circ_id,
                            ack: Some(ack),
                            fwd: None,
                        },
                    );
                    self.stats.feedback_out += 1;
                }
                PItem::Request { circ_id } => {
                    wire::put_feedback(
                        out,
                        &Feedback {
                            circ_id,
                            ack: None,
                            fwd: None,
                        },
                    );
                    self.stats.feedback_out += 1;
                }
            }
        }
    }

    /// A SACK item from `peer`, about the direction in which we send to it
    /// (as an ACK in a FEEDBACK item). Its ACK is taken as a FEEDBACK's
    /// would be; its blocks go to the scoreboard within the trust bounds of
    /// `recovery.rs`, then RACK looks for losses (RFC 8985 §6.2).
    pub(super) fn on_sack(&mut self, now: Time, peer: u32, s: &Sack) {
        self.stats.sack_in += 1;
        let Some((c, side)) = self.lookup(peer, s.circ_id) else {
            self.stats.unknown_circuit += 1;
            return;
        };
        let r = QRef {
            c,
            d: if side == super::Side::Next { 0 } else { 1 },
        };
        let cfg = &self.cfg;
        let Some(circ) = self.circuits.get_mut(&c) else {
            return;
        };
        let Some(out) = circ.out_leg(r.d as usize) else {
            return;
        };
        let q = &mut circ.q[r.d as usize];
        if s.ack > q.next_tx || q.out_app {
            self.stats.invalid_items += 1;
            return;
        }
        q.enable_sack(cfg);
        let before = q.held();
        if q.on_ack(cfg, &mut self.cells, now, s.ack, false) == super::AckResult::Advanced {
            q.update_timer(cfg, now, true);
            if q.rtt.has_sample() && q.rtt.backoff() == 0 {
                self.peers[out.peer as usize].rtt_seed = Some(q.rtt.clone());
            }
        }
        let mut blocks = [(0, 0); wire::MAX_SACK_BLOCKS];
        let blocks = &mut blocks[..s.blocks().len()];
        blocks.copy_from_slice(s.blocks());
        blocks.sort_unstable();
        let o = q.on_sack_blocks(now, blocks);
        q.rack_detect(now);
        q.update_timer(cfg, now, false);
        self.held = self.held - before + q.held();
        self.stats.sack_rejected += o.rejected as u64;
        self.stats.sack_stale += o.stale as u64;
        if o.rejected > 0 {
            self.stats.invalid_items += 1;
        }
        self.arm(r);
        self.activate(r);
        self.check_edge(r);
    }
}
