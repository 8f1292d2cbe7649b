//! Bytes leaving one interface, by IP protocol, in [`BIN_S`] bins: each
//! flow's share of a bottleneck when the flows differ in protocol (a µTP
//! flow over UDP beside a kernel TCP flow).
//!
//! A packet socket (`AF_PACKET`) in the interface's namespace sees an
//! outgoing packet after the qdisc has released it, so the bins count what
//! the link carried, as HTB counts it (the IP packet plus the 14 B Ethernet
//! header), at the moment the kernel stamped it (`SO_TIMESTAMPNS`).

use crate::traffic::{enter, spawn_ready, Clock, BIN_S};
use anyhow::{Context, Result};
use nix::net::if_::if_nametoindex;
use nix::sys::socket::{
    recvmsg, setsockopt, socket, sockopt, AddressFamily, ControlMessageOwned, LinkAddr, MsgFlags,
    SockFlag, SockProtocol, SockType,
};
use nix::sys::time::TimeVal;
use std::fs::File;
use std::io::IoSliceMut;
use std::os::fd::AsRawFd;
use std::thread::JoinHandle;

/// `PACKET_OUTGOING` in `sockaddr_ll.sll_pkttype` (linux/if_packet.h).
const PACKET_OUTGOING: u8 = 4;
/// IP protocol numbers (IANA).
const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;
/// The Ethernet header that HTB and the FIFOs count on a veth.
const ETH_HEADER: u64 = 14;

/// What left the interface, in [`BIN_S`] bins from the clock's start.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProtoBins {
    /// IPv4 TCP, bytes per bin.
    pub tcp: Vec<u64>,
    /// IPv4 UDP, bytes per bin.
    pub udp: Vec<u64>,
    /// Bytes of other packets (ARP, ICMP), all bins together.
    pub other_bytes: u64,
}

impl ProtoBins {
    /// Counts one packet of `wire_bytes` at `t_s` seconds: `ip` is the
    /// packet from its IP header (at least its first 10 bytes are needed
    /// to tell the protocol; anything shorter counts as other).
    pub fn add(&mut self, t_s: f64, ip: &[u8], wire_bytes: u64) {
        let proto = match ip {
            [v, _, _, _, _, _, _, _, _, p, ..] if v >> 4 == 4 => Some(*p),
            _ => None,
        };
        let bins = match proto {
            Some(IPPROTO_TCP) => &mut self.tcp,
            Some(IPPROTO_UDP) => &mut self.udp,
            _ => {
                self.other_bytes += wire_bytes;
                return;
            }
        };
        let i = (t_s.max(0.0) / BIN_S) as usize;
        if bins.len() <= i {
            bins.resize(i + 1, 0);
        }
        bins[i] += wire_bytes;
    }
}

/// The bytes of the IPv4 packet starting at `ip` that a qdisc counts: its
/// total length plus the Ethernet header; `fallback` (the bytes read) when
/// the header is cut short.
fn wire_bytes(ip: &[u8], fallback: usize) -> u64 {
    match ip {
        [_, _, hi, lo, ..] => u16::from_be_bytes([*hi, *lo]) as u64 + ETH_HEADER,
        _ => fallback as u64 + ETH_HEADER,
    }
}

/// Counts what leaves `dev` in `ns` until `end_s` on `clock`. Returns once
/// the socket is open, so that nothing sent afterwards is missed.
pub fn spawn(
    ns: File,
    dev: &'static str,
    clock: Clock,
    end_s: f64,
) -> Result<JoinHandle<Result<ProtoBins>>> {
    let what = format!("meter on {dev}");
    let w = what.clone();
    spawn_ready(
        what,
        move || -> Result<_> {
            enter(&ns, &w)?;
            let ifindex = if_nametoindex(dev).with_context(|| format!("{w}: no {dev}"))?;
            let fd = socket(
                AddressFamily::Packet,
                SockType::Datagram,
                SockFlag::empty(),
                SockProtocol::EthAll,
            )
            .with_context(|| format!("{w}: cannot open a packet socket (root needed)"))?;
            setsockopt(&fd, sockopt::ReceiveTimestampns, &true)
                .with_context(|| format!("{w}: SO_TIMESTAMPNS"))?;
            setsockopt(&fd, sockopt::ReceiveTimeout, &TimeVal::new(0, 50_000))
                .with_context(|| format!("{w}: SO_RCVTIMEO"))?;
            // Seconds of packets, should the thread stall.
            setsockopt(&fd, sockopt::RcvBufForce, &(8 << 20))
                .with_context(|| format!("{w}: SO_RCVBUFFORCE"))?;
            Ok((fd, ifindex as usize, w))
        },
        move |(fd, ifindex, w)| {
            let mut bins = ProtoBins::default();
            // The IP header is all that is read; the kernel reports the rest as truncated.
            let mut buf = [0u8; 64];
            let mut cmsg = nix::cmsg_space!(nix::sys::time::TimeSpec);
            while clock.now_s() < end_s {
                let mut iov = [IoSliceMut::new(&mut buf)];
                let msg = match recvmsg::<LinkAddr>(
                    fd.as_raw_fd(),
                    &mut iov,
                    Some(&mut cmsg),
                    MsgFlags::empty(),
                ) {
                    Ok(m) => m,
                    Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => continue,
                    Err(e) => return Err(e).context(format!("{w}: recvmsg")),
                };
                let mut stamp = None;
                if let Ok(cms) = msg.cmsgs() {
                    for c in cms {
                        if let ControlMessageOwned::ScmTimestampns(ts) = c {
                            stamp = Some(ts.tv_sec() as f64 + ts.tv_nsec() as f64 * 1e-9);
                        }
                    }
                }
                let (n, addr) = (msg.bytes, msg.address);
                let Some(addr) = addr else { continue };
                if addr.ifindex() != ifindex || addr.pkttype() != PACKET_OUTGOING {
                    continue;
                }
                let t = stamp.map_or_else(|| clock.now_s(), |s| clock.from_unix(s));
                let ip = &buf[..n.min(buf.len())];
                bins.add(t, ip, wire_bytes(ip, n));
            }
            Ok(bins)
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4(proto: u8, total: u16) -> Vec<u8> {
        let mut p = vec![0u8; 20];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p[9] = proto;
        p
    }

    #[test]
    fn packets_are_binned_by_protocol_and_time_with_the_ethernet_header() {
        let mut b = ProtoBins::default();
        let udp = ipv4(IPPROTO_UDP, 1200);
        let tcp = ipv4(IPPROTO_TCP, 1500);
        b.add(0.05, &udp, wire_bytes(&udp, 64));
        b.add(0.25, &udp, wire_bytes(&udp, 64));
        b.add(0.26, &tcp, wire_bytes(&tcp, 64));
        b.add(0.0, &[0x60, 0, 0, 0, 0, 0, 0, 0, 0, IPPROTO_UDP], 100);
        b.add(0.0, &[0x45, 0], 60);
        assert_eq!(b.udp, vec![1214, 0, 1214]);
        assert_eq!(b.tcp, vec![0, 0, 1514]);
        // IPv6 and a cut-off header count as other.
        assert_eq!(b.other_bytes, 160);
    }

    #[test]
    fn a_short_header_falls_back_to_the_bytes_read() {
        assert_eq!(wire_bytes(&[0x45, 0, 0x05, 0xdc], 64), 1514);
        assert_eq!(wire_bytes(&[0x45], 1), 15);
    }
}
