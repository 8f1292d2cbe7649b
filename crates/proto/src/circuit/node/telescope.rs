//! Telescoping circuit construction (`docs/relay.md`, "Building a
//! circuit"): CREATE and CREATED between neighbours, EXTEND and EXTENDED
//! sealed in onion layers on the control channel, and the client's side
//! that adds one hop at a time.
//!
//! A relay answers CREATE with the ntor handshake and becomes the
//! circuit's last hop: a stream edge whose layers it keeps itself. When
//! the client's EXTEND reaches it (recognized by its forward layer), it
//! sends CREATE to the named relay and, on CREATED, answers EXTENDED
//! through its backward layer, hands both layers to its BackTap queues
//! ([`Endpoint::extend_circuit`](crate::backtap::Endpoint::extend_circuit))
//! and forwards from then on. A relay thus learns its predecessor and its
//! successor, not the other relays of the path (it can still tell its
//! position, `docs/relay.md`, "What is protected").

use super::*;
use crate::circuit::control::{HANDSHAKE_LEN, HTYPE_NTOR};
use crate::circuit::onion::{self, ONIONSKIN_LEN, REPLY_LEN};

const _: () = assert!(ONIONSKIN_LEN == HANDSHAKE_LEN && REPLY_LEN == HANDSHAKE_LEN);

/// RELAY control messages a circuit may carry: an EXTEND and an EXTENDED
/// per hop.
const MAX_RELAY_CTL: u32 = 2 * (MAX_HOPS as u32 + 1);

impl Node {
    /// Builds a circuit through `path` (identities of directory relays, the
    /// first is the entry), one hop at a time. [`NodeEvent::CircuitReady`]
    /// follows when it reaches the last relay, [`NodeEvent::CircuitClosed`]
    /// if it fails.
    pub fn build_circuit(&mut self, now: Time, path: &[Identity]) -> Result<CircuitId, BuildError> {
        if path.is_empty() {
            return Err(BuildError::EmptyPath);
        }
        if path.len() > MAX_HOPS + 1 {
            return Err(BuildError::TooLong);
        }
        for (i, k) in path.iter().enumerate() {
            if self.link_of(k).is_none() {
                return Err(BuildError::UnknownRelay(i));
            }
        }
        if self.circs.len() >= self.cfg.max_circuits {
            return Err(BuildError::TooManyCircuits);
        }
        let e = self.link_of(&path[0]).expect("checked");
        let id = self.pick_circ_id(e);
        let peer = self.link(e).peer;
        let c = self.ep.add_circuit(None, Some((peer, id)));
        let deadline = now + self.cfg.build_timeout;
        let (hs, onionskin) = onion::ClientHandshake::start(&path[0], &mut *self.keys);
        self.install(
            c,
            Circ {
                role: Role::Client,
                prev: None,
                next: Some((e, id)),
                state: CircState::Building { deadline },
                edge: Some(Edge::new(true)),
                onion: Onion::Client {
                    crypto: ClientCrypto::new(),
                    path: path.to_vec(),
                    pending: Some(hs),
                },
                relay_ctl: 0,
            },
        );
        self.wake_at(deadline);
        self.send_ctl(
            now,
            e,
            CtlMsg::Create {
                circ_id: id,
                htype: HTYPE_NTOR,
                onionskin,
            },
        );
        Ok(c)
    }

    /// Client: hop `reply` answered; add it, then extend to the next hop or
    /// announce the circuit.
    fn client_hop_done(&mut self, now: Time, c: CircuitId, reply: &[u8]) {
        let Some(circ) = self.circs.get_mut(&c) else {
            return;
        };
        let Onion::Client {
            crypto,
            path,
            pending,
        } = &mut circ.onion
        else {
            self.stats.protocol_errors += 1;
            return;
        };
        let Some(hs) = pending.take() else {
            self.stats.protocol_errors += 1;
            return self.teardown(now, c, DestroyReason::Protocol, None);
        };
        match hs.finish(reply) {
            Ok(h) => crypto.push(h),
            Err(_) => {
                self.stats.handshake_failures += 1;
                return self.teardown(now, c, DestroyReason::Protocol, None);
            }
        }
        let i = crypto.len();
        if i == path.len() {
            circ.state = CircState::Open;
            self.stats.circuits_built += 1;
            self.events.push_back(NodeEvent::CircuitReady(c));
            return;
        }
        let relay = path[i];
        let (hs, onionskin) = onion::ClientHandshake::start(&relay, &mut *self.keys);
        *pending = Some(hs);
        let mut body = [0u8; CELL_BODY_LEN];
        cell::encode(
            0,
            &RelayMsg::Extend {
                relay,
                htype: HTYPE_NTOR,
                onionskin,
            },
            &mut body,
        );
        if let Some(o) = self.observer.as_mut() {
            o(Observed::CellSealed {
                circuit: c,
                body: &body,
            });
        }
        crypto.encrypt_forward(i - 1, &mut body);
        let (l, id) = circ.next.expect("a client circuit has a next leg");
        self.send_ctl(
            now,
            l,
            CtlMsg::Relay {
                circ_id: id,
                body: Box::new(body),
            },
        );
    }

    /// A neighbour asks this relay to be a circuit's (new) last hop.
    pub(super) fn on_create(
        &mut self,
        now: Time,
        l: LinkId,
        circ_id: u32,
        htype: u8,
        onionskin: &[u8; HANDSHAKE_LEN],
    ) {
        // The peer picks ids in the other half.
        let Some(high) = self.high_bit(l) else {
            self.stats.protocol_errors += 1;
            return;
        };
        if (circ_id & HIGH_BIT != 0) == high || self.legs.contains_key(&(l, circ_id)) {
            self.stats.protocol_errors += 1;
            return;
        }
        let client = self.is_client(l);
        if client && self.link(l).unacked.len() >= MAX_UNACKED_CLIENT_CREATE {
            self.stats.protocol_errors += 1;
            return;
        }
        if self.circs.len() >= self.cfg.max_circuits
            || client && self.link(l).circuits.len() >= self.cfg.max_circuits_per_client
        {
            return self.refuse(now, l, circ_id, DestroyReason::ResourceLimit);
        }
        if htype != HTYPE_NTOR {
            self.stats.protocol_errors += 1;
            return self.refuse(now, l, circ_id, DestroyReason::Protocol);
        }
        // The client's ephemeral key must not have been used before: a
        // replayed CREATE (or EXTEND) is refused.
        let x = onion::onionskin_ephemeral(onionskin).expect("fixed length");
        if !self.replays.check_and_insert(now, &x) {
            self.stats.handshake_replays += 1;
            return self.refuse(now, l, circ_id, DestroyReason::Protocol);
        }
        let (reply, hop) = match onion::server_handshake(
            &self.cfg.identity,
            &self.cfg.secret,
            onionskin,
            &mut *self.keys,
        ) {
            Ok(x) => x,
            Err(_) => {
                self.stats.handshake_failures += 1;
                return self.refuse(now, l, circ_id, DestroyReason::Protocol);
            }
        };
        let prev_peer = self.link(l).peer;
        let c = self.ep.add_circuit(Some((prev_peer, circ_id)), None);
        self.install(
            c,
            Circ {
                // The last hop until extended; an exit only if it may be.
                role: if self.cfg.exit {
                    Role::Exit
                } else {
                    Role::Relay
                },
                prev: Some((l, circ_id)),
                next: None,
                state: CircState::Open,
                edge: Some(Edge::new(false)),
                onion: Onion::Hop(hop),
                relay_ctl: 0,
            },
        );
        self.stats.circuits_created += 1;
        self.send_ctl(now, l, CtlMsg::Created { circ_id, reply });
    }

    /// The next hop answered the CREATE this node sent (client: for the
    /// entry; relay: for an EXTEND).
    pub(super) fn on_created(
        &mut self,
        now: Time,
        l: LinkId,
        circ_id: u32,
        reply: &[u8; HANDSHAKE_LEN],
    ) {
        let Some(&c) = self.legs.get(&(l, circ_id)) else {
            return;
        };
        let Some(circ) = self.circs.get_mut(&c) else {
            return;
        };
        if circ.next.map(|x| x.0) != Some(l) || circ.state == CircState::Open {
            self.stats.protocol_errors += 1;
            return;
        }
        if circ.role == Role::Client {
            // CREATED answers the entry's handshake only; later hops answer
            // with EXTENDED, sealed, through the circuit.
            if !matches!(&circ.onion, Onion::Client { crypto, .. } if crypto.is_empty()) {
                self.stats.protocol_errors += 1;
                return self.teardown(now, c, DestroyReason::Protocol, None);
            }
            return self.client_hop_done(now, c, reply);
        }
        // A relay that extended: answer EXTENDED through its own backward
        // layer, then hand its layers to the transport and forward.
        let Onion::Hop(mut hop) = std::mem::replace(&mut circ.onion, Onion::Forwarding) else {
            self.stats.protocol_errors += 1;
            return self.teardown(now, c, DestroyReason::Protocol, None);
        };
        circ.state = CircState::Open;
        let (pl, pid) = circ.prev.expect("a relay has a predecessor");
        let (nl, nid) = circ.next.expect("checked");
        let mut body = [0u8; CELL_BODY_LEN];
        cell::encode(0, &RelayMsg::Extended { reply: *reply }, &mut body);
        if let Some(o) = self.observer.as_mut() {
            o(Observed::CellSealed {
                circuit: c,
                body: &body,
            });
        }
        hop.originate_backward(&mut body);
        let (f, b) = hop.into_layers();
        let next_peer = self.link(nl).peer;
        if self
            .ep
            .extend_circuit(c, (next_peer, nid), Some((Box::new(f), Box::new(b))))
            .is_err()
        {
            self.stats.protocol_errors += 1;
            return self.teardown(now, c, DestroyReason::Protocol, None);
        }
        self.send_ctl(
            now,
            pl,
            CtlMsg::Relay {
                circ_id: pid,
                body: Box::new(body),
            },
        );
    }

    /// An onion-sealed relay cell on the control channel: an EXTEND on its
    /// way to the last hop, or an EXTENDED on its way back to the client.
    pub(super) fn on_relay_ctl(&mut self, now: Time, l: LinkId, circ_id: u32, body: &mut CellBody) {
        let Some(&c) = self.legs.get(&(l, circ_id)) else {
            return;
        };
        let carried = self.ep.carried_cells(c);
        let Some(circ) = self.circs.get_mut(&c) else {
            return;
        };
        circ.relay_ctl += 1;
        // Only while the circuit is built: once BackTap cells flow, a cell
        // here would take a cipher position out of the transport's order.
        if carried || circ.relay_ctl > MAX_RELAY_CTL {
            self.stats.protocol_errors += 1;
            return self.teardown(now, c, DestroyReason::Protocol, None);
        }
        let forward = circ.prev.map(|x| x.0) == Some(l);
        match (&mut circ.onion, forward) {
            (
                Onion::Client {
                    crypto, pending, ..
                },
                false,
            ) => {
                let last = crypto.len();
                let hop = crypto.decrypt_backward(body);
                if let Some(o) = self.observer.as_mut() {
                    o(Observed::CellOpened { circuit: c, body });
                }
                let reply = match cell::decode(body) {
                    Ok((_, RelayMsg::Extended { reply })) if hop == Some(last.wrapping_sub(1)) => {
                        reply
                    }
                    _ => {
                        self.stats.cells_unrecognized += 1;
                        return self.teardown(now, c, DestroyReason::Protocol, None);
                    }
                };
                if pending.is_none() {
                    self.stats.protocol_errors += 1;
                    return self.teardown(now, c, DestroyReason::Protocol, None);
                }
                self.client_hop_done(now, c, &reply);
            }
            (Onion::Hop(hop), true) if circ.next.is_none() => {
                if !hop.relay_forward(body) {
                    self.stats.cells_unrecognized += 1;
                    return self.teardown(now, c, DestroyReason::Protocol, None);
                }
                if let Some(o) = self.observer.as_mut() {
                    o(Observed::CellOpened { circuit: c, body });
                }
                match cell::decode(body) {
                    Ok((
                        _,
                        RelayMsg::Extend {
                            relay,
                            htype,
                            onionskin,
                        },
                    )) => self.on_extend(now, c, &relay, htype, &onionskin),
                    _ => {
                        self.stats.protocol_errors += 1;
                        self.teardown(now, c, DestroyReason::Protocol, None);
                    }
                }
            }
            (Onion::Forwarding, _) => {
                let dir = if forward {
                    Direction::Forward
                } else {
                    Direction::Backward
                };
                let to = if forward { circ.next } else { circ.prev };
                let Some((tl, tid)) = to else {
                    return;
                };
                if !self.ep.apply_layer(c, dir, body) {
                    self.stats.protocol_errors += 1;
                    return self.teardown(now, c, DestroyReason::Protocol, None);
                }
                self.send_ctl(
                    now,
                    tl,
                    CtlMsg::Relay {
                        circ_id: tid,
                        body: Box::new(*body),
                    },
                );
            }
            _ => {
                // A cell from the wrong side, or a second EXTEND while the
                // first is under way.
                self.stats.protocol_errors += 1;
                self.teardown(now, c, DestroyReason::Protocol, None);
            }
        }
    }

    /// The last hop was asked to extend the circuit to `relay`.
    fn on_extend(
        &mut self,
        now: Time,
        c: CircuitId,
        relay: &Identity,
        htype: u8,
        onionskin: &[u8; HANDSHAKE_LEN],
    ) {
        let Some(n) = self.link_of(relay) else {
            return self.teardown(now, c, DestroyReason::UnknownRelay, None);
        };
        let prev = self.circs.get(&c).and_then(|x| x.prev);
        if prev.map(|p| p.0) == Some(n) || self.ep.carried_cells(c) {
            // Extending back to the predecessor, or a circuit in use.
            self.stats.protocol_errors += 1;
            return self.teardown(now, c, DestroyReason::Protocol, None);
        }
        let next_id = self.pick_circ_id(n);
        let deadline = now + self.cfg.build_timeout;
        let circ = self.circs.get_mut(&c).expect("checked");
        circ.role = Role::Relay;
        circ.edge = None;
        circ.next = Some((n, next_id));
        circ.state = CircState::Building { deadline };
        self.legs.insert((n, next_id), c);
        self.link(n).circuits.insert(c);
        self.wake_at(deadline);
        self.stats.circuits_extended += 1;
        self.send_ctl(
            now,
            n,
            CtlMsg::Create {
                circ_id: next_id,
                htype,
                onionskin: *onionskin,
            },
        );
    }
}
