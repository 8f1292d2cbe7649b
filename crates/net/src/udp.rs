//! The node's UDP socket, in batches (`quinn-udp`): `recvmmsg` with GRO on
//! receive, GSO on send, plain `sendmsg`/`recvmsg` where the kernel has
//! neither. Datagrams to send are queued per destination, in order, and go
//! out together: runs of equal-sized datagrams to one peer leave in one
//! system call. Nothing here looks into a datagram.

use quinn_udp::{RecvMeta, Transmit, UdpSocketState, BATCH_SIZE};
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use tokio::io::Interest;
use tokio::net::UdpSocket;

/// Room for one receive: a GRO batch is at most 64 KiB, as is a datagram.
const SLOT: usize = 64 * 1024;
/// The most bytes one GSO send carries (an IP packet's 64 KiB, less the
/// headers, with room to spare).
const MAX_GSO_BYTES: usize = 65_000;
/// Queued datagrams, or bytes, past which the queue is sent at once.
const MAX_QUEUED: usize = 256;
/// Datagrams queued for one peer in one flush before they go out as GSO
/// runs. A lightly loaded node (a few datagrams per wake-up) sends them one
/// by one: `hopwise lab backtap` measured a 10 Mbit/s bottleneck's mean
/// queue at 3.3 kB with GSO on every run of two or more, 0.8 kB with this
/// rule (2026-11-29); GSO pays where a flush carries many datagrams.
const GSO_MIN_RUN: usize = 8;
const MAX_QUEUED_BYTES: usize = 512 * 1024;

/// The datagrams queued for one destination, back to back.
struct Lane {
    to: SocketAddr,
    buf: Vec<u8>,
    lens: Vec<usize>,
}

/// A UDP socket that receives and sends in batches.
pub(crate) struct BatchSocket {
    sock: UdpSocket,
    state: UdpSocketState,
    rx: Box<[u8]>,
    meta: [RecvMeta; BATCH_SIZE],
    lanes: Vec<Lane>,
    /// Buffers of lanes sent, for reuse.
    spare: Vec<Lane>,
    /// The lane the last datagram went to: the next is sealed straight
    /// into it (and moved if it goes elsewhere).
    last: Option<usize>,
    scratch: Vec<u8>,
    queued: usize,
    queued_bytes: usize,
    /// Datagrams the kernel refused to send (each counts, in a GSO batch
    /// too).
    pub send_errors: u64,
    /// Sends refused as too large for the path (EMSGSIZE); logged at the
    /// first and at each power of two.
    msgsize_errors: u64,
}

/// Sets a bound socket up for batched I/O (GRO, and the packet-info option
/// `quinn-udp` uses); the state goes to [`BatchSocket::new`].
///
/// `quinn-udp` also sets `IP_PMTUDISC_PROBE` (don't fragment, ignore the
/// path MTU learnt from ICMP), which suits QUIC's own MTU probing but not
/// this daemon's fixed `payload_budget`: the socket's path MTU discovery
/// mode is put back as it was, so a datagram larger than a hop's MTU is
/// fragmented by the kernel as before rather than lost.
pub(crate) fn prepare(sock: &std::net::UdpSocket) -> io::Result<UdpSocketState> {
    #[cfg(target_os = "linux")]
    {
        use rustix::net::sockopt as so;
        let v4 = so::ip_mtu_discover(sock).ok();
        let v6 = so::ipv6_mtu_discover(sock).ok();
        let state = UdpSocketState::new(sock.into())?;
        if let Some(m) = v4 {
            so::set_ip_mtu_discover(sock, m)?;
        }
        if let Some(m) = v6 {
            so::set_ipv6_mtu_discover(sock, m)?;
        }
        Ok(state)
    }
    #[cfg(not(target_os = "linux"))]
    UdpSocketState::new(sock.into())
}

impl BatchSocket {
    pub(crate) fn new(sock: UdpSocket, state: UdpSocketState) -> BatchSocket {
        BatchSocket {
            sock,
            state,
            rx: vec![0u8; SLOT * BATCH_SIZE].into_boxed_slice(),
            meta: [RecvMeta::default(); BATCH_SIZE],
            lanes: Vec::new(),
            spare: Vec::new(),
            last: None,
            scratch: Vec::new(),
            queued: 0,
            queued_bytes: 0,
            send_errors: 0,
            msgsize_errors: 0,
        }
    }

    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// Waits until the socket may have datagrams to read.
    pub(crate) async fn readable(&self) -> io::Result<()> {
        self.sock.readable().await
    }

    /// Reads what is there, without waiting, and hands each datagram (GRO
    /// batches split) to `f`, until the socket is empty or about `max`
    /// datagrams were read. The number read.
    pub(crate) fn recv_batch(&mut self, max: usize, mut f: impl FnMut(SocketAddr, &[u8])) -> usize {
        let mut n = 0;
        while n < max {
            let mut slots = self.rx.chunks_mut(SLOT);
            let mut bufs: [IoSliceMut<'_>; BATCH_SIZE] =
                std::array::from_fn(|_| IoSliceMut::new(slots.next().expect("a slot")));
            let (sock, state, meta) = (&self.sock, &self.state, &mut self.meta);
            let Ok(got) = sock.try_io(Interest::READABLE, || {
                state.recv(sock.into(), &mut bufs, meta)
            }) else {
                break;
            };
            for (buf, m) in bufs.iter().zip(meta.iter()).take(got) {
                let data = &buf[..m.len.min(buf.len())];
                if data.is_empty() || m.stride == 0 {
                    f(m.addr, data);
                    n += 1;
                    continue;
                }
                for d in data.chunks(m.stride) {
                    f(m.addr, d);
                    n += 1;
                }
            }
        }
        n
    }

    /// Queues a datagram that `seal` appends to the buffer it is given
    /// (returning its destination, or `None` for none: the buffer is then
    /// unchanged). Whether one was queued.
    pub(crate) fn queue_with(
        &mut self,
        seal: impl FnOnce(&mut Vec<u8>) -> Option<SocketAddr>,
    ) -> bool {
        let guess = self.last;
        let buf = match guess {
            Some(i) => &mut self.lanes[i].buf,
            None => &mut self.scratch,
        };
        let start = buf.len();
        let Some(to) = seal(buf) else {
            return false;
        };
        let len = buf.len() - start;
        match guess {
            Some(i) if self.lanes[i].to == to => self.lanes[i].lens.push(len),
            Some(i) => {
                let j = self.lane(to);
                let (src, dst) = two(&mut self.lanes, i, j);
                dst.buf.extend_from_slice(&src.buf[start..]);
                src.buf.truncate(start);
                dst.lens.push(len);
                self.last = Some(j);
            }
            None => {
                let j = self.lane(to);
                let lane = &mut self.lanes[j];
                if lane.buf.is_empty() {
                    std::mem::swap(&mut lane.buf, &mut self.scratch);
                } else {
                    lane.buf.extend_from_slice(&self.scratch);
                    self.scratch.clear();
                }
                lane.lens.push(len);
                self.last = Some(j);
            }
        }
        self.queued += 1;
        self.queued_bytes += len;
        true
    }

    /// Queues a datagram for `to`.
    pub(crate) fn queue(&mut self, to: SocketAddr, d: &[u8]) {
        self.queue_with(|out| {
            out.extend_from_slice(d);
            Some(to)
        });
    }

    /// Enough is queued to send it before queueing more.
    pub(crate) fn full(&self) -> bool {
        self.queued >= MAX_QUEUED || self.queued_bytes >= MAX_QUEUED_BYTES
    }

    /// The lane for `to`, made if there is none.
    fn lane(&mut self, to: SocketAddr) -> usize {
        if let Some(j) = self.lanes.iter().position(|l| l.to == to) {
            return j;
        }
        let mut lane = self.spare.pop().unwrap_or(Lane {
            to,
            buf: Vec::new(),
            lens: Vec::new(),
        });
        lane.to = to;
        self.lanes.push(lane);
        self.lanes.len() - 1
    }

    /// Sends everything queued: per destination in order, runs of
    /// equal-sized datagrams (the last may be shorter, not empty) in one
    /// GSO send.
    /// Waits while the socket's send buffer is full.
    pub(crate) async fn send_all(&mut self) {
        let mut lanes = std::mem::take(&mut self.lanes);
        for lane in &mut lanes {
            let mut off = 0;
            let mut i = 0;
            // A short lane goes datagram by datagram, as before batching;
            // GSO only for a lane of at least `GSO_MIN_RUN` datagrams.
            let gso = lane.lens.len() >= GSO_MIN_RUN;
            while i < lane.lens.len() {
                let max = if gso {
                    self.state.max_gso_segments().max(1)
                } else {
                    1
                };
                let seg = lane.lens[i];
                let (mut n, mut bytes) = (1, seg);
                while let Some(&l) = lane.lens.get(i + n) {
                    if n >= max || l > seg || l == 0 || bytes + l > MAX_GSO_BYTES {
                        break;
                    }
                    n += 1;
                    bytes += l;
                    if l < seg {
                        break;
                    }
                }
                self.send(lane.to, &lane.buf[off..off + bytes], seg, n)
                    .await;
                off += bytes;
                i += n;
            }
            lane.buf.clear();
            lane.lens.clear();
        }
        self.spare.extend(lanes.drain(..).take(8));
        self.lanes = lanes;
        self.last = None;
        self.queued = 0;
        self.queued_bytes = 0;
    }

    /// One send of `n` datagrams of `seg` bytes (the last may be shorter)
    /// to `to`.
    async fn send(&mut self, to: SocketAddr, contents: &[u8], seg: usize, n: usize) {
        if to.port() == 0 {
            // Nobody listens there, and the kernel's EINVAL would make
            // quinn-udp turn GSO off for good: a datagram that claimed to
            // come from port 0 must not cost the relay its batching.
            self.send_errors += n as u64;
            return;
        }
        let t = Transmit {
            destination: to,
            ecn: None,
            contents,
            segment_size: (n > 1).then_some(seg),
            src_ip: None,
        };
        loop {
            let (sock, state) = (&self.sock, &self.state);
            match sock.try_io(Interest::WRITABLE, || state.try_send(sock.into(), &t)) {
                Ok(()) => return,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if self.sock.writable().await.is_err() {
                        self.send_errors += n as u64;
                        return;
                    }
                }
                Err(_) if n > 1 && self.state.max_gso_segments() <= 1 => {
                    // The kernel or the device refused segmentation
                    // offload (now off): the datagrams one by one.
                    for d in contents.chunks(seg) {
                        Box::pin(self.send(to, d, d.len(), 1)).await;
                    }
                    return;
                }
                Err(e) => {
                    if is_msgsize(&e) {
                        if self.msgsize_errors == 0 || self.msgsize_errors.is_power_of_two() {
                            tracing::warn!(
                                to = %to,
                                bytes = seg,
                                times = self.msgsize_errors + 1,
                                "the kernel refuses datagrams this large on the path to this peer \
                                 (EMSGSIZE: its MTU is smaller, and an IPv6 socket does not fragment); \
                                 lower `[link] payload_budget`"
                            );
                        }
                        self.msgsize_errors += 1;
                    }
                    self.send_errors += n as u64;
                    return;
                }
            }
        }
    }
}

/// Whether the kernel refused a datagram as too large for the path.
fn is_msgsize(e: &io::Error) -> bool {
    #[cfg(target_os = "linux")]
    {
        e.raw_os_error() == Some(rustix::io::Errno::MSGSIZE.raw_os_error())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = e;
        false
    }
}

/// Two distinct elements of `v`, mutably.
fn two<T>(v: &mut [T], i: usize, j: usize) -> (&mut T, &mut T) {
    assert_ne!(i, j);
    if i < j {
        let (a, b) = v.split_at_mut(j);
        (&mut a[i], &mut b[0])
    } else {
        let (a, b) = v.split_at_mut(i);
        (&mut b[0], &mut a[j])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn socket(rt: &tokio::runtime::Runtime) -> BatchSocket {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let state = prepare(&s).unwrap();
        let _g = rt.enter();
        BatchSocket::new(UdpSocket::from_std(s).unwrap(), state)
    }

    /// The socket keeps the kernel's path MTU discovery mode (quinn-udp
    /// would set "probe": never fragment, ignore ICMP).
    #[cfg(target_os = "linux")]
    #[test]
    fn path_mtu_discovery_mode_is_kept() {
        use rustix::net::sockopt as so;
        let fresh = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let _state = prepare(&s).unwrap();
        let mode = so::ip_mtu_discover(&s).unwrap();
        assert_eq!(mode, so::ip_mtu_discover(&fresh).unwrap());
        assert_ne!(mode, so::Ipv4PathMtuDiscovery::PROBE);
    }

    /// Datagrams of several sizes to two peers, queued interleaved, arrive
    /// whole and in order per peer (GSO runs on send, GRO batches split
    /// on receive, where the kernel has them).
    #[test]
    fn batches_arrive_whole_and_in_order() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut tx = socket(&rt);
        let mut a = socket(&rt);
        let mut b = socket(&rt);
        let (to_a, to_b) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        let datagram = |peer: u8, i: usize| -> Vec<u8> {
            let len = match i % 50 {
                0..=39 => 1200,
                40 => 17,
                41..=47 => 900,
                48 => 0,
                _ => 1,
            };
            (0..len).map(|k| (i as u8) ^ (k as u8) ^ peer).collect()
        };
        let n = 600;
        let mut got: [Vec<Vec<u8>>; 2] = [Vec::new(), Vec::new()];
        rt.block_on(async {
            let from = tx.local_addr().unwrap();
            for i in 0..n {
                // Mostly runs to a, with b in between now and then.
                let (peer, to) = if i % 7 == 3 { (2, to_b) } else { (1, to_a) };
                let d = datagram(peer, i);
                assert!(tx.queue_with(|out| {
                    out.extend_from_slice(&d);
                    Some(to)
                }));
                assert!(!tx.queue_with(|_| None));
                if i % 60 == 59 {
                    // Sent in parts, read before the next (the kernel's
                    // receive buffers are small).
                    tx.send_all().await;
                    assert_eq!(tx.send_errors, 0);
                    let want = [
                        (0..=i).filter(|k| k % 7 != 3).count(),
                        (0..=i).filter(|k| k % 7 == 3).count(),
                    ];
                    for (k, sock) in [&mut a, &mut b].into_iter().enumerate() {
                        let g = &mut got[k];
                        let read = async {
                            while g.len() < want[k] {
                                sock.readable().await.unwrap();
                                sock.recv_batch(BATCH_SIZE, |f, d| {
                                    assert_eq!(f, from);
                                    g.push(d.to_vec());
                                });
                            }
                        };
                        let r = tokio::time::timeout(std::time::Duration::from_secs(20), read);
                        assert!(
                            r.await.is_ok(),
                            "peer {k}: {} of {} datagrams",
                            g.len(),
                            want[k]
                        );
                    }
                }
            }
        });
        for (k, peer) in [(0, 1u8), (1, 2)] {
            let want: Vec<Vec<u8>> = (0..n)
                .filter(|i| (i % 7 == 3) == (peer == 2))
                .map(|i| datagram(peer, i))
                .collect();
            assert_eq!(got[k].len(), want.len());
            assert!(got[k] == want, "peer {peer}: datagrams differ or reordered");
        }
    }
}
