//! TCP segments as the model puts them on the wire.
//!
//! The simulator moves these structs rather than serialised bytes, but every
//! size is exact: [`Segment::wire_len`] is the IPv4 total length the segment
//! would have, with options laid out the way Linux lays them out (each option
//! group padded with NOPs to a 4-byte boundary). Sizes matter: seed 000's
//! "ACK if total length < 64 B" classifier and seed 004's ACK/data size ratio
//! ρ both depend on them.

use bytes::Bytes;

/// IPv4 header without options.
pub const IPV4_HEADER: u32 = 20;
/// TCP header without options.
pub const TCP_HEADER: u32 = 20;
/// NOP, NOP, kind 8 len 10 (RFC 7323 §3).
pub const TS_OPTION: u32 = 12;

/// Control flags.
#[derive(Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Flags(u8);

impl Flags {
    pub const FIN: Flags = Flags(0x01);
    pub const SYN: Flags = Flags(0x02);
    pub const RST: Flags = Flags(0x04);
    pub const PSH: Flags = Flags(0x08);
    pub const ACK: Flags = Flags(0x10);
    /// ECN-Echo (RFC 3168 §6.1): the receiver saw a CE mark.
    pub const ECE: Flags = Flags(0x40);
    /// Congestion Window Reduced (RFC 3168 §6.1): the sender reacted.
    pub const CWR: Flags = Flags(0x80);

    pub const fn empty() -> Flags {
        Flags(0)
    }
    pub const fn bits(self) -> u8 {
        self.0
    }
    pub const fn contains(self, o: Flags) -> bool {
        self.0 & o.0 == o.0
    }
    pub fn insert(&mut self, o: Flags) {
        self.0 |= o.0;
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, o: Flags) -> Flags {
        Flags(self.0 | o.0)
    }
}

impl std::fmt::Debug for Flags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = [
            (0x02, 'S'),
            (0x10, '.'),
            (0x01, 'F'),
            (0x04, 'R'),
            (0x08, 'P'),
            (0x40, 'E'),
            (0x80, 'W'),
        ];
        for (bit, c) in names {
            if self.0 & bit != 0 {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// Up to four SACK blocks (RFC 2018 §3), as wire sequence numbers `[left, right)`.
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug, Hash)]
pub struct SackBlocks {
    blocks: [(u32, u32); 4],
    len: u8,
}

impl SackBlocks {
    pub const MAX: usize = 4;

    pub fn new() -> Self {
        Self::default()
    }
    /// Appends a block; ignored when four are already present.
    pub fn push(&mut self, left: u32, right: u32) {
        if (self.len as usize) < Self::MAX {
            self.blocks[self.len as usize] = (left, right);
            self.len += 1;
        }
    }
    pub fn len(&self) -> usize {
        self.len as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn as_slice(&self) -> &[(u32, u32)] {
        &self.blocks[..self.len as usize]
    }
}

/// The ECN field of the IP header that carries a segment (RFC 3168 §5).
/// It is not part of TCP: a sender sets it on what it sends, a queue on
/// the path may turn an ECN-capable codepoint into `Ce`, and the receiver
/// reads it on arrival. A real stack passes it through `IP_TOS` and
/// ancillary data; the simulator carries it with the segment.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
pub enum Ecn {
    /// Not ECN-capable (00).
    #[default]
    NotEct,
    /// ECN-capable transport, ECT(1) (01).
    Ect1,
    /// ECN-capable transport, ECT(0) (10).
    Ect0,
    /// Congestion experienced (11).
    Ce,
}

impl Ecn {
    /// The two-bit codepoint as in the IP header's TOS byte.
    pub const fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }
    /// ECT(0), ECT(1) or CE: a queue may mark instead of dropping.
    pub const fn capable(self) -> bool {
        !matches!(self, Ecn::NotEct)
    }
}

/// One TCP segment. Sequence and acknowledgement numbers are the 32-bit wire
/// values; the window field is the scaled 16-bit value.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Segment {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: Flags,
    /// Window field as sent (already shifted right by the window scale).
    pub window: u16,
    /// MSS option (SYN only).
    pub mss: Option<u16>,
    /// Window-scale option (SYN only).
    pub wscale: Option<u8>,
    /// SACK-permitted option (SYN only).
    pub sack_permitted: bool,
    /// Timestamps option `(TSval, TSecr)`.
    pub ts: Option<(u32, u32)>,
    /// SACK blocks.
    pub sack: SackBlocks,
    /// Model extension, not real TCP: how long (in timestamp ticks) the
    /// receiver held the segment whose TSval it echoes before sending this
    /// segment. µTP's header and QUIC's ACK Delay carry the same information.
    /// It lets one-way-delay samples exclude delayed-ACK waits; it occupies
    /// no bytes in [`Segment::wire_len`]. See [`crate::tcp::TcpConfig::report_ack_delay`].
    pub ack_delay: Option<u32>,
    /// The IP header's ECN codepoint (see [`Ecn`]); no bytes of the
    /// segment.
    pub ecn: Ecn,
    pub payload: Bytes,
}

impl Segment {
    /// Length of the TCP options, Linux layout:
    /// SYN: MSS (4) + SACK-permitted and timestamps together (2+10 = 12, or
    /// NOP,NOP,SACK-perm = 4 without timestamps) + NOP,WS (4);
    /// other segments: NOP,NOP,TS (12) + NOP,NOP,SACK (2 + 2 + 8n).
    pub fn options_len(&self) -> u32 {
        let mut n = 0;
        if self.mss.is_some() {
            n += 4;
        }
        if self.flags.contains(Flags::SYN) {
            n += match (self.sack_permitted, self.ts.is_some()) {
                (true, true) => 12,
                (false, true) => TS_OPTION,
                (true, false) => 4,
                (false, false) => 0,
            };
        } else if self.ts.is_some() {
            n += TS_OPTION;
        }
        if self.wscale.is_some() {
            n += 4;
        }
        if !self.sack.is_empty() {
            n += 4 + 8 * self.sack.len() as u32;
        }
        n
    }

    /// TCP header length including options.
    pub fn header_len(&self) -> u32 {
        TCP_HEADER + self.options_len()
    }

    /// IPv4 total length: what a link serialises and a byte-limited queue counts.
    pub fn wire_len(&self) -> u32 {
        IPV4_HEADER + self.header_len() + self.payload.len() as u32
    }

    pub fn payload_len(&self) -> u32 {
        self.payload.len() as u32
    }

    /// Sequence space the segment occupies: payload plus one each for SYN and FIN.
    pub fn seq_len(&self) -> u32 {
        self.payload.len() as u32
            + self.flags.contains(Flags::SYN) as u32
            + self.flags.contains(Flags::FIN) as u32
    }

    /// An acknowledgement without payload and without SYN, FIN or RST: what
    /// "ACKs first" queueing classifies as an ACK by content.
    pub fn is_pure_ack(&self) -> bool {
        self.payload.is_empty()
            && self.flags.contains(Flags::ACK)
            && !self.flags.contains(Flags::SYN)
            && !self.flags.contains(Flags::FIN)
            && !self.flags.contains(Flags::RST)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack() -> Segment {
        Segment {
            flags: Flags::ACK,
            ts: Some((1, 2)),
            ..Default::default()
        }
    }

    #[test]
    fn linux_sizes() {
        // A pure ACK with timestamps: 52 B, the ACK size Linux puts on the wire.
        assert_eq!(ack().wire_len(), 52);
        // One SACK block pushes it to 64 B: no longer "< 64 B" (seed 000 §IV).
        let mut a = ack();
        a.sack.push(10, 20);
        assert_eq!(a.wire_len(), 64);
        // Full-size data segment: 1448 B payload with timestamps is 1500 B.
        let mut d = ack();
        d.payload = Bytes::from(vec![0u8; 1448]);
        assert_eq!(d.wire_len(), 1500);
        assert!(!d.is_pure_ack());
        // SYN with MSS, SACK-permitted, timestamps and window scale: 60 B.
        let syn = Segment {
            flags: Flags::SYN,
            mss: Some(1460),
            wscale: Some(7),
            sack_permitted: true,
            ts: Some((1, 0)),
            ..Default::default()
        };
        assert_eq!(syn.wire_len(), 60);
        assert_eq!(syn.seq_len(), 1);
        assert!(!syn.is_pure_ack());
    }
}
