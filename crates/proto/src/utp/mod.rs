//! µTP, the Micro Transport Protocol of BitTorrent (BEP 29), sans-IO.
//!
//! # Driving it
//! The contract is the one of [`crate::tcp`] and [`crate::backtap`]: a
//! [`Listener`] (one per UDP socket; it owns every connection on it) is fed
//! [`Listener::handle_datagram`] for each datagram and
//! [`Listener::handle_timeout`] once [`Listener::poll_timeout`] has passed;
//! the owner then drains [`Listener::poll_transmit`] and
//! [`Listener::poll_event`]. The application talks to a connection through
//! [`Listener::socket_mut`] ([`Socket::send`], [`Socket::recv`],
//! [`Socket::close`]). Nothing here reads a clock, a socket or the OS RNG:
//! `now` and a seed come in as arguments.
//!
//! # What is implemented, and where the rules come from
//! * **Header and extensions** ([`wire`]): BEP 29's 20-byte version-1 header
//!   and extension chain; the selective ACK (extension 1) is sent and used;
//!   other extensions (libtorrent's close reason, type 3) are skipped.
//! * **Connection ids** (BEP 29): the initiator picks `recv_id` at random, the
//!   SYN carries it, `send_id = recv_id + 1`; the acceptor uses
//!   `recv_id = syn.conn_id + 1`, `send_id = syn.conn_id`; every other packet
//!   carries the sender's `send_id`. The listener demultiplexes by
//!   (address, `recv_id`).
//! * **Handshake** (libtorrent `src/utp_stream.cpp`, `send_syn` and
//!   `incoming_packet`): the SYN has a random `seq_nr` (consumed) and
//!   `ack_nr` 0. The acceptor answers with a STATE packet whose `ack_nr` is
//!   the SYN's `seq_nr` and whose `seq_nr` is its own random initial number,
//!   which a STATE packet does not consume; the initiator therefore sets its
//!   `ack_nr` to that `seq_nr − 1`, and the acceptor's first DATA packet
//!   carries the same `seq_nr`. The initiator acknowledges that STATE at
//!   once (in its first DATA packet, or else in a STATE packet), which
//!   confirms the connection to the acceptor.
//! * **Sequence numbers**: DATA, SYN and FIN consume one; STATE carries the
//!   next one unconsumed; all comparisons wrap at 16 bits ([`seq`]).
//! * **Acks**: every packet carries `ack_nr`. Packets that acknowledge what
//!   was never sent, or more than 3 packets before the last cumulative ack,
//!   are dropped (libtorrent `incoming_packet`). Only STATE packets count
//!   as duplicate acks (libtorrent), and not those that open the peer's
//!   window (window updates, after RFC 5681 §2's condition (e)) or whose
//!   window cannot hold the first unacknowledged packet (the receiver is
//!   dropping DATA beyond its window); libtorrent checks neither. Three
//!   trigger a fast resend of the first unacknowledged packet (BEP 29,
//!   libtorrent `dup_ack_limit` = 3). A packet with more than three (at
//!   least four) selectively acknowledged packets after it is resent too,
//!   at most 5 per selective ACK (libtorrent `parse_sack`: `dups >
//!   dup_ack_limit`).
//! * **Reorder buffer**: out-of-order DATA is kept until the gap fills, at
//!   most `max(16, recv_buffer / payload_size)` packets ahead (libtorrent's
//!   `max_packets_reorder`), and never more bytes than the advertised window
//!   (`wnd_size` = `recv_buffer` minus what is buffered); DATA beyond
//!   either is dropped and acknowledged.
//! * **Window**: the sender keeps `in_flight ≤ min(cwnd, peer wnd_size)`. If
//!   the peer's window is smaller than a packet and nothing is in flight it
//!   sends what fits; if it is zero, a one-byte probe goes out after an RTO
//!   (RFC 9293 §3.8.6.1) and is retransmitted with backoff. A receiver whose
//!   window reopens from below one packet announces it with a STATE packet.
//! * **Timeout**: RFC 6298's estimator ([`crate::rtt`]) with a 500 ms
//!   minimum (libtorrent `utp_min_timeout`), at most 60 s (libtorrent
//!   `packet_timeout`), doubled per timeout. A timeout marks every
//!   unacknowledged packet lost and resends from the first; the connection
//!   gives up when the first unacknowledged packet has been resent
//!   [`Config::max_resends`] times (SYN: [`Config::syn_resends`], FIN:
//!   [`Config::fin_resends`]; libtorrent `utp_num_resends` 3,
//!   `utp_syn_resends` 2, `utp_fin_resends` 2).
//! * **FIN** consumes a sequence number and is retransmitted like data
//!   (libutp); a FIN is accepted once everything before it arrived; one at
//!   or behind the last in-order sequence number is a duplicate, only
//!   acknowledged. libtorrent
//!   sends its FIN with its next `seq_nr` without consuming it, so it ignores
//!   an ack of that number; when the peer's FIN completes the stream we
//!   therefore acknowledge the last data packet once more before
//!   acknowledging the FIN. The connection is closed when our FIN is
//!   acknowledged and the peer's FIN arrived, or when the FIN is resent in
//!   vain after the peer finished (libtorrent closes `fin_sent` sockets on
//!   timeout too).
//! * **Keep-alive and idle timeout**: a connected socket that has sent
//!   nothing for [`Config::keepalive`] (29 s, libutp `KEEPALIVE_INTERVAL`)
//!   sends a STATE packet; one that has received no valid packet for
//!   [`Config::idle_timeout`] (120 s, libtorrent's `peer_timeout`) closes as
//!   [`CloseReason::TimedOut`]. An accepted connection that receives nothing
//!   after the SYN (which may have been spoofed) closes so after
//!   [`Config::accept_timeout`] (10 s; libutp drops such a `CS_SYN_RECV`
//!   socket at its first retransmission timeout). Either way a released
//!   connection is then reaped, even with nothing outstanding.
//! * **RESET** closes at once; [`Socket::abort`] sends one; the listener
//!   answers packets for unknown connections with one carrying the stray's
//!   connection id, i.e. the sender's `send_id`. A RESET therefore matches
//!   a connection from its address by `recv_id` or else by `send_id`
//!   (libutp `utp_process_udp`).
//! * **Congestion control**: LEDBAT's µTP profile ([`crate::cc::Ledbat`],
//!   [`crate::cc::LedbatVariant::Utp`]) through
//!   [`crate::cc::CongestionControl`]. Its one-way-delay samples are the
//!   `timestamp_difference_microseconds` the peer echoes, unwrapped from 32
//!   bits ([`seq::Unwrapper`]); the clock offset between the hosts cancels
//!   against the base delay. The difference we echo is our receive time
//!   minus the peer's timestamp, wrapping, never capped (BEP 29).
//!   Loss halves the window at most once per window of packets (libtorrent
//!   `experienced_loss`).
//!
//! # Not implemented (differences from libtorrent)
//! Path-MTU discovery (the payload size is [`Config::payload_size`]), Nagle
//! (each poll sends what is buffered), delayed acks (one STATE per batch of
//! input, when the driver polls), the close reason extension (parsed and skipped, never sent), libtorrent's
//! clock-drift compensation of the base delay.

mod listener;
pub mod seq;
mod socket;
pub mod wire;

#[cfg(test)]
mod tests;

pub use listener::{ConnId, Listener, ListenerStats};
pub use socket::{timestamp_us, Socket};

use crate::cc::{LedbatConfig, LedbatVariant};
use crate::time::Dur;

/// The largest payload a packet may carry (a 1500-byte Ethernet MTU minus
/// IPv4, UDP and µTP headers, and room for a selective ACK).
pub const MAX_PAYLOAD: usize = 1500 - 20 - 8 - wire::HEADER_LEN - 2 - 128;

/// Parameters of µTP connections.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Payload bytes per DATA packet. 1400 keeps a packet (with a selective
    /// ACK) inside a 1500-byte MTU on IPv4 and IPv6; libtorrent probes its
    /// MTU between 548 and the interface MTU (`utp_stream.cpp`, `init_mtu`)
    /// and accepts any size it can receive.
    pub payload_size: usize,
    /// Bytes the application may queue for sending (unsent plus unacknowledged).
    pub send_buffer: usize,
    /// The receive buffer, which bounds the advertised window (`wnd_size`)
    /// and the reorder buffer.
    pub recv_buffer: usize,
    /// Minimum retransmission timeout (libtorrent `utp_min_timeout`: 500 ms).
    pub min_rto: Dur,
    /// Maximum retransmission timeout (libtorrent `packet_timeout`: 60 s).
    pub max_rto: Dur,
    /// Resends of a data packet before the connection times out
    /// (libtorrent `utp_num_resends`: 3).
    pub max_resends: u32,
    /// Resends of the SYN (libtorrent `utp_syn_resends`: 2).
    pub syn_resends: u32,
    /// Resends of the FIN (libtorrent `utp_fin_resends`: 2).
    pub fin_resends: u32,
    /// The congestion controller: LEDBAT, µTP profile by default.
    pub cc: LedbatConfig,
    /// Connections a listener holds at most (open or waiting to be released).
    pub max_connections: usize,
    /// A connected socket that has sent nothing for this long sends a STATE
    /// packet (libutp `KEEPALIVE_INTERVAL`: 29 s, below the 30 s UDP
    /// mapping timeout of common NATs). libtorrent's µTP sends none; its
    /// BitTorrent layer sends keep-alive messages instead.
    pub keepalive: Dur,
    /// A connected socket that has received no valid packet for this long
    /// closes as [`CloseReason::TimedOut`]. 120 s is libtorrent's
    /// `peer_timeout` (the BitTorrent layer's limit on silence); it spans
    /// four keep-alive intervals.
    pub idle_timeout: Dur,
    /// An accepted connection that receives nothing after the SYN for this
    /// long closes as [`CloseReason::TimedOut`] (the SYN may have been
    /// spoofed). libutp kills such a socket (`CS_SYN_RECV`) at its first
    /// retransmission timeout and libtorrent an unconfirmed one at its
    /// first timeout; 10 s leaves an initiator time for its first packet.
    pub accept_timeout: Dur,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            payload_size: 1400,
            send_buffer: 1 << 20,
            recv_buffer: 1 << 20,
            min_rto: Dur::from_millis(500),
            max_rto: Dur::from_secs(60),
            max_resends: 3,
            syn_resends: 2,
            fin_resends: 2,
            cc: LedbatConfig::new(LedbatVariant::Utp),
            max_connections: 256,
            keepalive: Dur::from_secs(29),
            idle_timeout: Dur::from_secs(120),
            accept_timeout: Dur::from_secs(10),
        }
    }
}

/// Connection states (libtorrent: `syn_sent`, `connected`/`fin_sent`, closed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    SynSent,
    Connected,
    Closed,
}

/// Why a connection closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CloseReason {
    /// Both FINs were exchanged.
    Done,
    /// The peer sent RESET.
    Reset,
    /// The SYN, a data packet or the FIN was resent in vain, or the peer
    /// fell silent ([`Config::idle_timeout`], [`Config::accept_timeout`]).
    TimedOut,
    /// Closed locally before the handshake finished, or aborted.
    Aborted,
}

/// What the application should know about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    Connected,
    /// In-order data can be read.
    Readable,
    /// Send-buffer space freed up after a short write.
    Writable,
    /// The peer's FIN arrived after all its data: no more data will come.
    PeerClosed,
    /// The connection closed (normally or by [`Socket::abort`]).
    Closed,
    Reset,
    TimedOut,
}

/// Counters of one connection, and a snapshot of its window and timers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnStats {
    pub packets_sent: u64,
    pub packets_received: u64,
    /// Payload bytes sent, resends included.
    pub bytes_sent: u64,
    pub bytes_resent: u64,
    /// Packets resent (fast or after a timeout).
    pub resends: u64,
    /// Packets marked lost by duplicate or selective acks.
    pub fast_resends: u64,
    pub timeouts: u64,
    pub dup_acks: u64,
    /// Payload bytes the peer acknowledged.
    pub bytes_acked: u64,
    /// In-order payload bytes received.
    pub bytes_received: u64,
    /// STATE packets sent.
    pub acks_sent: u64,
    pub window_probes: u64,
    /// Packets that arrived out of order and were buffered.
    pub reordered: u64,
    pub duplicates: u64,
    /// DATA dropped: beyond the reorder buffer or the advertised window.
    pub dropped: u64,
    /// Packets ignored: impossible acks, unexpected SYN.
    pub invalid: u64,
    pub cwnd: u64,
    pub srtt: Dur,
    pub rto: Dur,
    pub in_flight: u64,
    pub peer_window: u32,
}
