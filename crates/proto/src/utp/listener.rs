//! Many µTP connections on one UDP socket: demultiplexing by (address,
//! connection id), accepting SYNs, answering strays with RESET.
//!
//! Deterministic: connections live in `BTreeMap`s keyed by [`ConnId`] and
//! by `(A, recv_id)`, so iteration order never depends on a hash.

use super::socket::{timestamp_us, Socket};
use super::wire::{self, Header, PacketType, ParseError};
use super::{Config, Event};
use crate::rng::Rng;
use crate::time::Time;
use std::collections::{BTreeMap, VecDeque};

/// RESET replies queued at most; more strays are only counted.
const MAX_PENDING_RESETS: usize = 64;

/// A connection's handle within its [`Listener`] (never reused).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u64);

/// Counters of a listener.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListenerStats {
    pub datagrams_in: u64,
    pub datagrams_out: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Datagrams that were not µTP packets.
    pub bad_datagrams: u64,
    /// Packets for no known connection.
    pub unknown: u64,
    pub resets_sent: u64,
    /// SYNs refused because `max_connections` connections exist.
    pub refused: u64,
    pub accepted: u64,
}

struct Entry<A> {
    addr: A,
    sock: Socket,
    /// The owner let go of it: remove once closed.
    released: bool,
}

/// All µTP connections of one UDP socket, with addresses of type `A`.
pub struct Listener<A> {
    cfg: Config,
    rng: Rng,
    conns: BTreeMap<ConnId, Entry<A>>,
    by_key: BTreeMap<(A, u16), ConnId>,
    next_id: u64,
    accept_queue: VecDeque<ConnId>,
    resets: VecDeque<(A, Vec<u8>)>,
    /// Round-robin position of `poll_transmit`.
    rr: u64,
    stats: ListenerStats,
}

impl<A: Copy + Ord + std::fmt::Debug> std::fmt::Debug for Listener<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("connections", &self.conns.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<A: Copy + Ord> Listener<A> {
    /// `seed` feeds connection ids and initial sequence numbers (the driver
    /// draws it from the OS; simulations derive it from their seed).
    pub fn new(cfg: Config, seed: u64) -> Self {
        Listener {
            cfg,
            rng: Rng::from_seed(seed),
            conns: BTreeMap::new(),
            by_key: BTreeMap::new(),
            next_id: 0,
            accept_queue: VecDeque::new(),
            resets: VecDeque::new(),
            rr: 0,
            stats: ListenerStats::default(),
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }
    pub fn stats(&self) -> ListenerStats {
        self.stats
    }
    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    fn insert(&mut self, addr: A, sock: Socket) -> ConnId {
        let id = ConnId(self.next_id);
        self.next_id += 1;
        self.by_key.insert((addr, sock.recv_id()), id);
        self.conns.insert(
            id,
            Entry {
                addr,
                sock,
                released: false,
            },
        );
        id
    }

    /// Opens a connection to `addr`; its SYN goes out on the next
    /// [`Listener::poll_transmit`]. `None` if `max_connections` are open.
    pub fn connect(&mut self, addr: A) -> Option<ConnId> {
        if self.conns.len() >= self.cfg.max_connections {
            return None;
        }
        // A recv_id not in use towards this address.
        let recv_id = loop {
            let r = self.rng.next_u64() as u16;
            if !self.by_key.contains_key(&(addr, r)) {
                break r;
            }
        };
        let isn = self.rng.next_u64() as u16;
        let sock = Socket::connect(&self.cfg, recv_id, isn);
        Some(self.insert(addr, sock))
    }

    /// Handles one datagram from `from`. Errors are counted too.
    pub fn handle_datagram(&mut self, now: Time, from: A, data: &[u8]) -> Result<(), ParseError> {
        self.stats.datagrams_in += 1;
        self.stats.bytes_in += data.len() as u64;
        let p = match wire::parse(data) {
            Ok(p) => p,
            Err(e) => {
                self.stats.bad_datagrams += 1;
                return Err(e);
            }
        };
        let h = p.header;
        if h.ty == PacketType::Syn {
            // A SYN's conn_id is the initiator's recv_id; ours is one more.
            let key = (from, h.conn_id.wrapping_add(1));
            if let Some(id) = self.by_key.get(&key) {
                if let Some(e) = self.conns.get_mut(id) {
                    e.sock.handle_packet(now, &p);
                }
                return Ok(());
            }
            if self.conns.len() >= self.cfg.max_connections {
                self.stats.refused += 1;
                return Ok(());
            }
            let isn = self.rng.next_u64() as u16;
            if let Some(sock) = Socket::accept(&self.cfg, now, &p, isn) {
                let id = self.insert(from, sock);
                self.accept_queue.push_back(id);
                self.stats.accepted += 1;
            }
            return Ok(());
        }
        let mut found = self.by_key.get(&(from, h.conn_id)).copied();
        if found.is_none() && h.ty == PacketType::Reset {
            // A peer that lost our connection answers a stray packet with
            // the id it carried, our send_id (libutp `utp_process_udp`;
            // `reset_for` does the same): recv_id is send_id ∓ 1.
            found = [h.conn_id.wrapping_sub(1), h.conn_id.wrapping_add(1)]
                .into_iter()
                .filter_map(|r| self.by_key.get(&(from, r)).copied())
                .find(|id| {
                    self.conns
                        .get(id)
                        .is_some_and(|e| e.sock.send_id() == h.conn_id)
                });
        }
        match found.as_ref() {
            Some(id) => {
                if let Some(e) = self.conns.get_mut(id) {
                    e.sock.handle_packet(now, &p);
                }
            }
            None => {
                self.stats.unknown += 1;
                if h.ty != PacketType::Reset && self.resets.len() < MAX_PENDING_RESETS {
                    self.resets.push_back((from, reset_for(now, &h)));
                }
            }
        }
        Ok(())
    }

    /// The next connection the peer opened, in arrival order.
    pub fn poll_accept(&mut self) -> Option<ConnId> {
        self.accept_queue.pop_front()
    }

    pub fn socket(&self, id: ConnId) -> Option<&Socket> {
        self.conns.get(&id).map(|e| &e.sock)
    }
    pub fn socket_mut(&mut self, id: ConnId) -> Option<&mut Socket> {
        self.conns.get_mut(&id).map(|e| &mut e.sock)
    }
    pub fn peer_addr(&self, id: ConnId) -> Option<A> {
        self.conns.get(&id).map(|e| e.addr)
    }

    /// The owner is done with `id`: it is removed once closed (at once if
    /// it already is). Close or abort it first for a FIN or a RESET.
    pub fn release(&mut self, id: ConnId) {
        if let Some(e) = self.conns.get_mut(&id) {
            e.released = true;
        }
        self.reap();
    }

    fn reap(&mut self) {
        let dead: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, e)| e.released && e.sock.is_closed() && e.sock.poll_timeout().is_none())
            .map(|(id, _)| *id)
            .collect();
        for id in dead {
            if let Some(e) = self.conns.remove(&id) {
                self.by_key.remove(&(e.addr, e.sock.recv_id()));
            }
        }
    }

    /// The next datagram to send and its destination.
    pub fn poll_transmit(&mut self, now: Time) -> Option<(A, Vec<u8>)> {
        if let Some((to, d)) = self.resets.pop_front() {
            self.stats.resets_sent += 1;
            self.count_out(&d);
            return Some((to, d));
        }
        let start = self.rr;
        let ids: Vec<ConnId> = self
            .conns
            .range(ConnId(start)..)
            .chain(self.conns.range(..ConnId(start)))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            let Some(e) = self.conns.get_mut(&id) else {
                continue;
            };
            if let Some(d) = e.sock.poll_transmit(now) {
                let to = e.addr;
                self.rr = id.0 + 1;
                self.count_out(&d);
                return Some((to, d));
            }
        }
        self.reap();
        None
    }

    fn count_out(&mut self, d: &[u8]) {
        self.stats.datagrams_out += 1;
        self.stats.bytes_out += d.len() as u64;
    }

    /// The next event of any connection.
    pub fn poll_event(&mut self) -> Option<(ConnId, Event)> {
        self.conns
            .iter_mut()
            .find_map(|(id, e)| e.sock.poll_event().map(|ev| (*id, ev)))
    }

    pub fn poll_timeout(&self) -> Option<Time> {
        self.conns
            .values()
            .filter_map(|e| e.sock.poll_timeout())
            .min()
    }

    pub fn handle_timeout(&mut self, now: Time) {
        for e in self.conns.values_mut() {
            if e.sock.poll_timeout().is_some_and(|t| t <= now) {
                e.sock.handle_timeout(now);
            }
        }
    }

    /// Ids of all connections, in order.
    pub fn ids(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.conns.keys().copied()
    }
}

/// A RESET answering `h` for a connection we do not know, carrying the
/// connection id the packet had (libutp's `utp_process_udp` answers strays
/// with such a RESET; libtorrent's `utp_socket_manager` drops them silently).
/// That id is the peer's send_id, which a receiving listener matches as it
/// matches its recv_id (libutp's rule, and [`Listener::handle_datagram`]'s).
fn reset_for(now: Time, h: &Header) -> Vec<u8> {
    let r = Header {
        ty: PacketType::Reset,
        conn_id: h.conn_id,
        timestamp_us: timestamp_us(now),
        timestamp_diff_us: 0,
        wnd_size: 0,
        seq_nr: 0,
        ack_nr: h.seq_nr,
    };
    let mut out = Vec::with_capacity(wire::HEADER_LEN);
    wire::write(&r, &[], &[], &mut out);
    out
}
