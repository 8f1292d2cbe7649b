//! Overlay TCP (oTCP): a long TCP connection split into pipelined TCP
//! connections through relays (seed 001: Pucha and Hu, "Overlay TCP:
//! Ending End-to-End Transport for Higher Throughput", SIGCOMM 2005 poster).
//!
//! Each overlay hop is an ordinary TCP connection, so each hop's congestion
//! control sees only that hop's RTT. The end-to-end rate is that of the
//! slowest hop, which the paper approximates by the largest hop RTT, the
//! *path RTT* (§2). A path can be faster than the direct connection even when
//! the hops' RTTs add up to more than the direct RTT.
//!
//! This module holds the protocol's sans-IO parts:
//!
//! * [`Route`]: the header a connection starts with, naming the hops still
//!   ahead. A relay reads it, connects to the first hop and forwards the rest
//!   of the route, then copies bytes. The paper's prototype hijacks
//!   connections with Netfilter and does not describe a wire format; this one
//!   is ours.
//! * [`Splice`]: the bounded copy between a relay's upstream and downstream
//!   connections. It reads upstream only while downstream takes the bytes, so
//!   once the downstream send buffer and the splice are full, a slow hop
//!   closes the receive window of the hop before it (backpressure) instead
//!   of filling the relay's memory.
//! * [`Opening`], [`ProbeReply`]: a relay's other request, an RTT probe
//!   (`"oP"`, version, one hop). The relay opens a TCP connection to the hop,
//!   times the handshake, closes it, and answers with a status and the RTT.
//!   It lets a client learn the relay → destination RTTs that [`select`]
//!   needs; the paper's prototype measured them by other means it does not
//!   describe, so this format is ours too.
//! * [`select`]: choosing relays from measured RTTs: the path with the lowest
//!   path RTT under a relay budget, the best relay among candidates a client
//!   probed, and one candidate per geographic cluster (the paper's §3).

pub mod select;

use bytes::Bytes;
use std::fmt;

/// The header's first two bytes.
pub const MAGIC: [u8; 2] = *b"oT";
/// The header version this code writes and reads.
pub const VERSION: u8 = 1;
/// Most hops a route may name (relays plus the destination).
pub const MAX_HOPS: usize = 16;
/// Bytes per hop on the wire: a 32-bit address and a 16-bit port.
pub const HOP_LEN: usize = 6;
/// Bytes before the hops: magic, version, hop count.
pub const FIXED_LEN: usize = 4;
/// A probe's first two bytes.
pub const PROBE_MAGIC: [u8; 2] = *b"oP";
/// A probe on the wire: magic, version, one hop.
pub const PROBE_LEN: usize = 3 + HOP_LEN;
/// A probe's reply: a status byte and the RTT in microseconds (u32, big-endian).
pub const REPLY_LEN: usize = 5;

/// One hop of a route: where the next connection goes. `addr` is an IPv4
/// address in a real deployment and a node id in the simulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Hop {
    pub addr: u32,
    pub port: u16,
}

/// The hops still ahead of the node that reads the header. An empty route
/// means "you are the destination".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Route {
    pub hops: Vec<Hop>,
}

/// Why a header was refused. Every variant names the field at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RouteError {
    /// `magic` is not `"oT"`.
    Magic([u8; 2]),
    /// `version` is not [`VERSION`].
    Version(u8),
    /// `hops` exceeds [`MAX_HOPS`].
    TooManyHops(u8),
    /// Encoding a route longer than [`MAX_HOPS`].
    RouteTooLong(usize),
    /// A probe reply's `status` is not one this code knows.
    ProbeStatus(u8),
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteError::Magic(m) => write!(
                f,
                "oTCP header field `magic`: expected \"oT\" (or \"oP\" for a probe), got \"{}\"",
                m.escape_ascii()
            ),
            RouteError::Version(v) => write!(
                f,
                "oTCP header field `version`: {v} is not supported (this is version {VERSION})"
            ),
            RouteError::TooManyHops(n) => write!(
                f,
                "oTCP header field `hops`: {n} hops, at most {MAX_HOPS} allowed"
            ),
            RouteError::RouteTooLong(n) => {
                write!(f, "oTCP route of {n} hops: at most {MAX_HOPS} allowed")
            }
            RouteError::ProbeStatus(s) => write!(
                f,
                "oTCP probe reply field `status`: {s} is not 0 (RTT), 1 (refused) or 2 (unreachable)"
            ),
        }
    }
}

impl std::error::Error for RouteError {}

impl Route {
    pub fn new(hops: Vec<Hop>) -> Route {
        Route { hops }
    }

    /// The header's length on the wire.
    pub fn wire_len(&self) -> usize {
        FIXED_LEN + HOP_LEN * self.hops.len()
    }

    /// The header: `"oT"`, version, hop count, then per hop the address and
    /// the port, big-endian.
    pub fn encode(&self) -> Result<Vec<u8>, RouteError> {
        if self.hops.len() > MAX_HOPS {
            return Err(RouteError::RouteTooLong(self.hops.len()));
        }
        let mut out = Vec::with_capacity(self.wire_len());
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(self.hops.len() as u8);
        for h in &self.hops {
            out.extend_from_slice(&h.addr.to_be_bytes());
            out.extend_from_slice(&h.port.to_be_bytes());
        }
        Ok(out)
    }

    /// Reads a header from the start of `buf`. `Ok(None)`: not all of it has
    /// arrived yet. `Ok(Some((route, n)))`: the header took `n` bytes and
    /// the payload starts at `buf[n]`. Fields are checked as soon as their
    /// bytes are there, so a wrong magic is refused after two bytes.
    pub fn decode(buf: &[u8]) -> Result<Option<(Route, usize)>, RouteError> {
        if buf.len() >= 2 && buf[..2] != MAGIC {
            return Err(RouteError::Magic([buf[0], buf[1]]));
        }
        if buf.len() >= 3 && buf[2] != VERSION {
            return Err(RouteError::Version(buf[2]));
        }
        if buf.len() < FIXED_LEN {
            return Ok(None);
        }
        let n = buf[3];
        if n as usize > MAX_HOPS {
            return Err(RouteError::TooManyHops(n));
        }
        let len = FIXED_LEN + HOP_LEN * n as usize;
        if buf.len() < len {
            return Ok(None);
        }
        let hops = buf[FIXED_LEN..len]
            .chunks_exact(HOP_LEN)
            .map(|c| Hop {
                addr: u32::from_be_bytes([c[0], c[1], c[2], c[3]]),
                port: u16::from_be_bytes([c[4], c[5]]),
            })
            .collect();
        Ok(Some((Route { hops }, len)))
    }

    /// The next hop and the route to forward to it, or `None` at the
    /// destination.
    pub fn next(&self) -> Option<(Hop, Route)> {
        let (first, rest) = self.hops.split_first()?;
        Some((*first, Route::new(rest.to_vec())))
    }
}

/// What a connection to a relay starts with: a route to relay along, or an
/// RTT probe of one hop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Opening {
    Route(Route),
    Probe(Hop),
}

impl Opening {
    /// Reads a route header or a probe from the start of `buf`, like
    /// [`Route::decode`]: `Ok(None)` until all of it has arrived.
    pub fn decode(buf: &[u8]) -> Result<Option<(Opening, usize)>, RouteError> {
        if buf.len() < 2 || buf[..2] != PROBE_MAGIC {
            return Ok(Route::decode(buf)?.map(|(r, n)| (Opening::Route(r), n)));
        }
        if buf.len() >= 3 && buf[2] != VERSION {
            return Err(RouteError::Version(buf[2]));
        }
        if buf.len() < PROBE_LEN {
            return Ok(None);
        }
        let c = &buf[3..PROBE_LEN];
        let hop = Hop {
            addr: u32::from_be_bytes([c[0], c[1], c[2], c[3]]),
            port: u16::from_be_bytes([c[4], c[5]]),
        };
        Ok(Some((Opening::Probe(hop), PROBE_LEN)))
    }

    /// The bytes [`Opening::decode`] reads back.
    pub fn encode(&self) -> Result<Vec<u8>, RouteError> {
        match self {
            Opening::Route(r) => r.encode(),
            Opening::Probe(h) => {
                let mut out = Vec::with_capacity(PROBE_LEN);
                out.extend_from_slice(&PROBE_MAGIC);
                out.push(VERSION);
                out.extend_from_slice(&h.addr.to_be_bytes());
                out.extend_from_slice(&h.port.to_be_bytes());
                Ok(out)
            }
        }
    }
}

/// A relay's answer to a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeReply {
    /// The handshake took this long (saturating at `u32::MAX` µs, 71 min).
    Rtt(crate::time::Dur),
    /// The relay's exit policy refuses the hop.
    Refused,
    /// No connection within the relay's connect timeout.
    Unreachable,
}

impl ProbeReply {
    pub fn encode(&self) -> [u8; REPLY_LEN] {
        let (status, us) = match self {
            ProbeReply::Rtt(d) => (0u8, u32::try_from(d.as_micros()).unwrap_or(u32::MAX)),
            ProbeReply::Refused => (1, 0),
            ProbeReply::Unreachable => (2, 0),
        };
        let mut out = [0u8; REPLY_LEN];
        out[0] = status;
        out[1..].copy_from_slice(&us.to_be_bytes());
        out
    }

    pub fn decode(b: &[u8; REPLY_LEN]) -> Result<ProbeReply, RouteError> {
        let us = u32::from_be_bytes([b[1], b[2], b[3], b[4]]);
        match b[0] {
            0 => Ok(ProbeReply::Rtt(crate::time::Dur::from_micros(u64::from(
                us,
            )))),
            1 => Ok(ProbeReply::Refused),
            2 => Ok(ProbeReply::Unreachable),
            s => Err(RouteError::ProbeStatus(s)),
        }
    }
}

/// A relay's copy from one connection to the next, with a bounded buffer.
///
/// The driver calls [`Splice::want`] to learn how much it may read from
/// upstream, hands what it read to [`Splice::push`], offers
/// [`Splice::front`] downstream and reports what the downstream send buffer
/// took with [`Splice::consumed`]. Bytes not yet taken stay here, so the
/// relay holds at most `capacity` bytes besides its sockets' buffers.
#[derive(Clone, Debug)]
pub struct Splice {
    chunks: std::collections::VecDeque<Bytes>,
    len: usize,
    capacity: usize,
    upstream_done: bool,
    forwarded: u64,
}

impl Splice {
    pub fn new(capacity: usize) -> Splice {
        Splice {
            chunks: std::collections::VecDeque::new(),
            len: 0,
            capacity: capacity.max(1),
            upstream_done: false,
            forwarded: 0,
        }
    }
    /// How many bytes may be read from upstream now.
    pub fn want(&self) -> usize {
        self.capacity.saturating_sub(self.len)
    }
    /// Bytes read from upstream. Takes at most [`Splice::want`] bytes and
    /// returns how many it took.
    pub fn push(&mut self, data: Bytes) -> usize {
        let n = data.len().min(self.want());
        if n > 0 {
            self.chunks.push_back(data.slice(..n));
            self.len += n;
        }
        n
    }
    /// The oldest bytes waiting for downstream.
    pub fn front(&self) -> Option<&Bytes> {
        self.chunks.front()
    }
    /// How many bytes wait for downstream.
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Downstream took the first `n` bytes of [`Splice::front`] (at most
    /// that chunk).
    pub fn consumed(&mut self, n: usize) {
        let Some(c) = self.chunks.front_mut() else {
            return;
        };
        let n = n.min(c.len());
        if n == c.len() {
            self.chunks.pop_front();
        } else {
            *c = c.slice(n..);
        }
        self.len -= n;
        self.forwarded += n as u64;
    }
    /// Upstream sent FIN: no more bytes will be pushed.
    pub fn upstream_closed(&mut self) {
        self.upstream_done = true;
    }
    /// Upstream has closed and every byte went downstream: close downstream.
    pub fn should_close_downstream(&self) -> bool {
        self.upstream_done && self.len == 0
    }
    /// Bytes handed downstream so far.
    pub fn forwarded(&self) -> u64 {
        self.forwarded
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn route(n: usize) -> Route {
        Route::new(
            (0..n)
                .map(|i| Hop {
                    addr: 0x0a00_0000 + i as u32,
                    port: 4000 + i as u16,
                })
                .collect(),
        )
    }

    #[test]
    fn probe_errors_name_the_field() {
        assert_eq!(
            Opening::decode(b"oP\x02").unwrap_err(),
            RouteError::Version(2)
        );
        let e = ProbeReply::decode(&[7, 0, 0, 0, 1]).unwrap_err();
        assert!(e.to_string().contains("`status`: 7"), "{e}");
        // A route is still a route.
        let r = Route::new(vec![Hop { addr: 1, port: 2 }]);
        let w = r.encode().unwrap();
        assert_eq!(
            Opening::decode(&w).unwrap(),
            Some((Opening::Route(r), w.len()))
        );
        // A reply beyond u32 microseconds saturates.
        let long = ProbeReply::Rtt(crate::time::Dur::from_secs(5000));
        assert_eq!(&long.encode()[1..], &u32::MAX.to_be_bytes());
    }

    #[test]
    fn header_round_trips_and_arrives_in_pieces() {
        let r = route(3);
        let mut wire = r.encode().unwrap();
        assert_eq!(wire.len(), r.wire_len());
        assert_eq!(wire.len(), 4 + 18);
        wire.extend_from_slice(b"payload");
        for cut in 0..r.wire_len() {
            assert_eq!(Route::decode(&wire[..cut]), Ok(None), "cut at {cut}");
        }
        let (got, n) = Route::decode(&wire).unwrap().unwrap();
        assert_eq!(got, r);
        assert_eq!(&wire[n..], b"payload");
        let (hop, rest) = got.next().unwrap();
        assert_eq!(hop, r.hops[0]);
        assert_eq!(rest.hops, r.hops[1..]);
        assert_eq!(Route::default().next(), None);
    }

    #[test]
    fn bad_headers_name_their_field() {
        let e = Route::decode(b"GE").unwrap_err();
        assert_eq!(e, RouteError::Magic(*b"GE"));
        assert!(e.to_string().contains("`magic`"), "{e}");
        let e = Route::decode(&[b'o', b'T', 9]).unwrap_err();
        assert!(e.to_string().contains("`version`: 9"), "{e}");
        let e = Route::decode(&[b'o', b'T', VERSION, 17]).unwrap_err();
        assert_eq!(e, RouteError::TooManyHops(17));
        assert!(e.to_string().contains("`hops`"), "{e}");
        assert_eq!(
            route(MAX_HOPS + 1).encode().unwrap_err(),
            RouteError::RouteTooLong(17)
        );
        assert!(route(MAX_HOPS).encode().is_ok());
    }

    #[test]
    fn splice_bounds_what_it_holds_and_closes_after_the_last_byte() {
        let mut s = Splice::new(10);
        assert_eq!(s.push(Bytes::from_static(b"01234567")), 8);
        assert_eq!(s.push(Bytes::from_static(b"89abc")), 2);
        assert_eq!(s.want(), 0);
        assert_eq!(s.push(Bytes::from_static(b"x")), 0);
        assert_eq!(&s.front().unwrap()[..], b"01234567");
        s.consumed(4);
        assert_eq!(s.want(), 4);
        assert_eq!(&s.front().unwrap()[..], b"4567");
        s.upstream_closed();
        s.consumed(100);
        assert_eq!(&s.front().unwrap()[..], b"89", "one chunk at a time");
        assert!(!s.should_close_downstream());
        s.consumed(2);
        assert!(s.should_close_downstream());
        assert_eq!(s.forwarded(), 10);
    }

    proptest! {
        /// Peer input never panics the parser, and whatever it accepts
        /// encodes back to the bytes it read.
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            if let Ok(Some((r, n))) = Route::decode(&bytes) {
                prop_assert!(n <= bytes.len());
                prop_assert_eq!(r.encode().unwrap(), bytes[..n].to_vec());
            }
        }

        /// With a valid prefix, arbitrary hops round-trip.
        #[test]
        fn any_route_round_trips(hops in proptest::collection::vec((any::<u32>(), any::<u16>()), 0..=MAX_HOPS)) {
            let r = Route::new(hops.into_iter().map(|(addr, port)| Hop { addr, port }).collect());
            let w = r.encode().unwrap();
            prop_assert_eq!(Route::decode(&w).unwrap(), Some((r, w.len())));
        }

        /// A relay's opening bytes (route or probe) never panic the parser,
        /// and whatever it accepts encodes back to the bytes it read. Half
        /// the inputs start with the probe's magic and version.
        #[test]
        fn opening_decode_never_panics(probe in any::<bool>(), bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let mut b = if probe { vec![b'o', b'P', VERSION] } else { Vec::new() };
            b.extend_from_slice(&bytes);
            if let Ok(Some((o, n))) = Opening::decode(&b) {
                prop_assert!(n <= b.len());
                prop_assert_eq!(o.encode().unwrap(), b[..n].to_vec());
            }
        }

        /// Every probe and every reply round-trips; any reply bytes either
        /// decode to one that encodes back, or name the status.
        #[test]
        fn probes_and_replies_round_trip(addr in any::<u32>(), port in any::<u16>(), us in any::<u32>(), raw in any::<[u8; REPLY_LEN]>()) {
            let o = Opening::Probe(Hop { addr, port });
            let w = o.encode().unwrap();
            prop_assert_eq!(w.len(), PROBE_LEN);
            for cut in 0..w.len() {
                prop_assert_eq!(Opening::decode(&w[..cut]).unwrap(), None);
            }
            prop_assert_eq!(Opening::decode(&w).unwrap(), Some((o, PROBE_LEN)));
            let r = ProbeReply::Rtt(crate::time::Dur::from_micros(u64::from(us)));
            prop_assert_eq!(ProbeReply::decode(&r.encode()).unwrap(), r);
            match ProbeReply::decode(&raw) {
                Ok(r) => prop_assert_eq!(r.encode()[0], raw[0]),
                Err(e) => prop_assert_eq!(e, RouteError::ProbeStatus(raw[0])),
            }
        }

        /// Bytes pushed come out in order, whatever the read and write sizes.
        #[test]
        fn splice_keeps_order(chunks in proptest::collection::vec((1usize..50, 0usize..60), 1..40)) {
            let mut s = Splice::new(64);
            let (mut next, mut out) = (0u8, Vec::new());
            let mut sent = Vec::new();
            for (r, w) in chunks {
                let data: Vec<u8> = (0..r).map(|i| next.wrapping_add(i as u8)).collect();
                let took = s.push(Bytes::from(data.clone()));
                sent.extend_from_slice(&data[..took]);
                next = next.wrapping_add(took as u8);
                prop_assert!(s.len() <= 64);
                if let Some(p) = s.front() {
                    let w = w.min(p.len());
                    out.extend_from_slice(&p[..w]);
                    s.consumed(w);
                }
            }
            while let Some(p) = s.front() {
                out.extend_from_slice(p);
                let n = p.len();
                s.consumed(n);
            }
            prop_assert!(s.is_empty());
            prop_assert_eq!(out, sent);
        }
    }
}
