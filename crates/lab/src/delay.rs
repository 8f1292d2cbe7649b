//! A delay line: propagation delay and random loss for lab links, in user
//! space (the lab needs no netem; this machine's kernel has none).
//!
//! A delayed link between namespaces A and B is cut in two at a `wan`
//! namespace:
//!
//! ```text
//!   A ── dev ═ wLa ─┐ wan: a thread copies frames ┌─ wLb ═ dev ── B
//!                   └──── after `delay`, losing ──┘
//!                         each with probability `loss`
//! ```
//!
//! In `wan`, a packet socket (`AF_PACKET`, `SOCK_RAW`) bound to each of the
//! two interfaces reads every Ethernet frame that arrives there, and the
//! same thread writes it to the other interface once the direction's
//! one-way delay has passed since the kernel stamped its arrival
//! (`SO_TIMESTAMPNS`). Every frame of a direction waits the same time, so
//! a direction is a FIFO and never reorders. Loss is per IPv4 frame (ARP
//! passes, as the simulator has none) and direction, from its own
//! xoshiro256++ stream seeded by the run's seed and the link's name, as the
//! simulator's links draw theirs; UDP and TCP frames, and those lost of each,
//! are counted apart ([`LaneStats::udp_frames`]), so that an experiment that
//! runs both over one link can show that both met the same loss. The seed fixes that stream, not the
//! frames it meets: which frames a run sends depends on the kernel's
//! timing, so two runs with one seed are not the same frame by frame. The interfaces
//! carry no address, so `wan`'s own stack ignores the frames; a packet
//! socket does not receive what it sends itself, and frames the kernel
//! sends out of these interfaces (`PACKET_OUTGOING`) are skipped.
//!
//! Not modelled: a rate or a queue (the line holds what is in flight, up to
//! [`MAX_LANE_BYTES`] per direction; use `tc` on the hosts' interfaces for
//! a bottleneck), jitter, reordering, corruption. The thread asks for
//! real-time priority (`chrt -f 20`, best effort) and a 1 ns timer slack,
//! so that it wakes on time; frames due together are then written one by
//! one, and each write runs the receiving host's stack, so the last of a
//! burst leaves later (by up to a few milliseconds after a slow-start
//! burst of hundreds of frames). How late frames leave is measured and
//! reported ([`LaneStats::late_mean_us`], [`LaneStats::late_max_us`]). Veth checksum offload leaves TCP and
//! UDP checksums to the receiver, so the line fills them in
//! ([`fill_l4_checksum`]). The
//! hosts' veths must segment before sending (`gso_max_segs 1`), since one
//! frame read is one frame written and a frame above the MTU cannot be.
//! Frames lost before the line sees them (a full socket buffer; the line
//! forces 8 MiB) and frames too big to copy are counted, not hidden.

use crate::traffic::{enter, spawn_ready, Clock};
use anyhow::{bail, Context, Result};
use hopwise_proto::rng::Rng;
use nix::errno::Errno;
use nix::poll::{ppoll, PollFd, PollFlags};
use nix::sys::socket::{
    bind, recvmsg, send, setsockopt, socket, sockopt, AddressFamily, ControlMessageOwned, LinkAddr,
    MsgFlags, SockFlag, SockProtocol, SockType,
};
use nix::sys::time::TimeSpec;
use serde::Serialize;
use std::collections::VecDeque;
use std::fs::File;
use std::io::IoSliceMut;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Most bytes one direction holds in flight (64 MiB: 5 s at 100 Mbit/s);
/// a frame beyond it is dropped and counted as `overflow`.
pub const MAX_LANE_BYTES: usize = 64 << 20;
/// `PACKET_OUTGOING` (linux/if_packet.h): a frame this host sent.
const PACKET_OUTGOING: u8 = 4;
/// How often the thread looks at its stop flag when nothing is due.
const IDLE_WAKE: Duration = Duration::from_millis(20);
/// How long to wait before writing to a socket that was full.
const BLOCKED_RETRY: Duration = Duration::from_micros(200);

/// One direction of a delayed link.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Dir {
    /// One-way delay.
    #[serde(serialize_with = "ser_ms", rename = "delay_ms")]
    pub delay: Duration,
    /// Probability that a frame is lost, 0 ≤ loss < 1.
    pub loss: f64,
}

fn ser_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

/// A link to delay: the two interfaces in the `wan` namespace that face
/// its ends, and each direction's delay and loss.
#[derive(Clone, Debug, Serialize)]
pub struct Link {
    pub name: String,
    /// Interface towards end A, and towards end B.
    pub a_dev: String,
    pub b_dev: String,
    /// A → B and B → A.
    pub ab: Dir,
    pub ba: Dir,
}

/// What one direction did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LaneStats {
    /// Frames that arrived, and their bytes.
    pub frames: u64,
    pub bytes: u64,
    /// Frames dropped at random (`loss`).
    pub lost: u64,
    /// Of `frames` and `lost`: the IPv4 frames that carry UDP, and those
    /// that carry TCP (the rest is ARP, ICMP and the like), so that an
    /// experiment that sends both over one link can show each met the same
    /// loss.
    pub udp_frames: u64,
    pub udp_lost: u64,
    pub tcp_frames: u64,
    pub tcp_lost: u64,
    /// Frames dropped because the line held [`MAX_LANE_BYTES`] already.
    pub overflow: u64,
    /// Frames the other interface would not take (`send` failed).
    pub send_errors: u64,
    /// Most bytes held at once.
    pub max_held_bytes: u64,
    /// Frames written, and how late the latest of them left, µs.
    pub sent: u64,
    pub late_max_us: f64,
    /// Mean lateness over the frames written, µs.
    pub late_mean_us: f64,
    /// Frames still on the line when it stopped.
    pub in_flight_at_stop: u64,
    /// Frames the packet socket had no room for (lost before the line saw
    /// them; SO_RXQ_OVFL).
    pub socket_drops: u64,
    /// Frames longer than 65 536 bytes (GRO on the wan's veths), dropped.
    pub too_big: u64,
}

impl LaneStats {
    /// Frames dropped other than at random: no room in the line or its
    /// socket, a failed write, a frame too big.
    pub fn faults(&self) -> u64 {
        self.overflow + self.send_errors + self.socket_drops + self.too_big
    }
}

/// For a report: how many frames `lanes` wrote, how late they left (mean
/// and maximum), and how many were dropped other than at random.
pub fn lateness_summary(lanes: &[&LaneStats]) -> String {
    let sent: u64 = lanes.iter().map(|s| s.sent).sum();
    let late_mean_us = lanes
        .iter()
        .map(|s| s.late_mean_us * s.sent as f64)
        .sum::<f64>()
        / sent.max(1) as f64;
    let late_max_ms = lanes.iter().map(|s| s.late_max_us).fold(0.0, f64::max) / 1e3;
    let faults: u64 = lanes.iter().map(|s| s.faults()).sum();
    format!(
        "{sent} frames, late by {late_mean_us:.0} µs on average and {late_max_ms:.2} ms at most; {faults} lost other than at random (no room in the line or its sockets, a failed write, a frame too big)"
    )
}

/// One direction's frames in flight, in arrival order (every frame waits
/// the same delay, so that is also their order of departure). Pure: the
/// caller gives the time, in nanoseconds on any monotonic clock.
#[derive(Debug)]
pub struct Lane {
    delay_ns: u64,
    loss: f64,
    rng: Rng,
    queue: VecDeque<(u64, Vec<u8>)>,
    held: usize,
    late_sum_us: f64,
    pub stats: LaneStats,
}

impl Lane {
    pub fn new(dir: Dir, rng: Rng) -> Lane {
        Lane {
            delay_ns: dir.delay.as_nanos() as u64,
            loss: dir.loss,
            rng,
            queue: VecDeque::new(),
            held: 0,
            late_sum_us: 0.0,
            stats: LaneStats::default(),
        }
    }

    /// A frame arrived at `now_ns`. It is lost with probability `loss`,
    /// dropped if the line is full, and otherwise held until its delay has
    /// passed. Returns whether it was kept.
    pub fn arrive(&mut self, now_ns: u64, frame: Vec<u8>) -> bool {
        self.stats.frames += 1;
        self.stats.bytes += frame.len() as u64;
        let proto = l4_proto(&frame);
        match proto {
            Some(IPPROTO_UDP) => self.stats.udp_frames += 1,
            Some(IPPROTO_TCP) => self.stats.tcp_frames += 1,
            _ => {}
        }
        // Only IP frames are lost, as in the simulator, which has no ARP.
        if self.loss > 0.0 && is_ipv4(&frame) && self.rng.chance(self.loss) {
            self.stats.lost += 1;
            match proto {
                Some(IPPROTO_UDP) => self.stats.udp_lost += 1,
                Some(IPPROTO_TCP) => self.stats.tcp_lost += 1,
                _ => {}
            }
            return false;
        }
        if self.held + frame.len() > MAX_LANE_BYTES {
            self.stats.overflow += 1;
            return false;
        }
        self.held += frame.len();
        self.stats.max_held_bytes = self.stats.max_held_bytes.max(self.held as u64);
        self.queue.push_back((now_ns + self.delay_ns, frame));
        true
    }

    /// When the first frame held is due, if any.
    pub fn next_due(&self) -> Option<u64> {
        self.queue.front().map(|(t, _)| *t)
    }

    /// The first frame held, if it is due at `now_ns`.
    pub fn peek_due(&self, now_ns: u64) -> Option<&[u8]> {
        self.queue
            .front()
            .filter(|(t, _)| *t <= now_ns)
            .map(|(_, f)| f.as_slice())
    }

    /// Removes the first frame held, once written (`sent`) or given up on,
    /// and records how late it left.
    pub fn depart(&mut self, now_ns: u64, sent: bool) {
        if let Some((due, f)) = self.queue.pop_front() {
            self.held -= f.len();
            if sent {
                let late_us = now_ns.saturating_sub(due) as f64 / 1e3;
                self.stats.sent += 1;
                self.late_sum_us += late_us;
                self.stats.late_max_us = self.stats.late_max_us.max(late_us);
                self.stats.late_mean_us = self.late_sum_us / self.stats.sent as f64;
            } else {
                self.stats.send_errors += 1;
            }
        }
    }
}

/// Both directions of a link, once the line has stopped.
#[derive(Clone, Debug, Serialize)]
pub struct LinkStats {
    pub link: Link,
    pub ab: LaneStats,
    pub ba: LaneStats,
}

/// One direction of a link as a row of an experiment's `links.csv` (after
/// the experiment's own leading columns, with `#[serde(flatten)]`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct LaneRow {
    pub link: String,
    /// `ab` or `ba`.
    pub direction: &'static str,
    pub delay_ms: f64,
    pub loss: f64,
    pub frames: u64,
    pub sent: u64,
    pub lost: u64,
    /// IPv4 frames carrying UDP and TCP, and those lost of each
    /// ([`LaneStats::udp_frames`]).
    pub udp_frames: u64,
    pub udp_lost: u64,
    pub tcp_frames: u64,
    pub tcp_lost: u64,
    pub overflow: u64,
    pub socket_drops: u64,
    pub send_errors: u64,
    pub too_big: u64,
    pub in_flight_at_stop: u64,
    pub max_held_bytes: u64,
    pub late_mean_us: f64,
    pub late_max_us: f64,
}

impl LinkStats {
    /// Its two directions, "ab" then "ba", as `links.csv` rows.
    pub fn rows(&self) -> [LaneRow; 2] {
        let row = |direction: &'static str, d: &Dir, s: &LaneStats| LaneRow {
            link: self.link.name.clone(),
            direction,
            delay_ms: d.delay.as_secs_f64() * 1e3,
            loss: d.loss,
            frames: s.frames,
            sent: s.sent,
            lost: s.lost,
            udp_frames: s.udp_frames,
            udp_lost: s.udp_lost,
            tcp_frames: s.tcp_frames,
            tcp_lost: s.tcp_lost,
            overflow: s.overflow,
            socket_drops: s.socket_drops,
            send_errors: s.send_errors,
            too_big: s.too_big,
            in_flight_at_stop: s.in_flight_at_stop,
            max_held_bytes: s.max_held_bytes,
            late_mean_us: s.late_mean_us,
            late_max_us: s.late_max_us,
        };
        [
            row("ab", &self.link.ab, &self.ab),
            row("ba", &self.link.ba, &self.ba),
        ]
    }
}

/// The running delay line of one `wan` namespace. Dropping it stops the
/// thread; [`DelayLine::stop`] also returns what each link did.
pub struct DelayLine {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<Vec<LinkStats>>>>,
}

impl DelayLine {
    /// Enters `ns` (the `wan` namespace), opens a packet socket on each
    /// link's two interfaces and starts copying. Returns once the sockets
    /// are bound; an interface that does not exist is an error that names it.
    pub fn spawn(ns: File, links: Vec<Link>, seed: u64, clock: Clock) -> Result<DelayLine> {
        for l in &links {
            for d in [l.ab, l.ba] {
                if !(0.0..1.0).contains(&d.loss) {
                    bail!("delay line {}: loss {} is not in [0, 1)", l.name, d.loss);
                }
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = spawn_ready(
            "delay line".into(),
            move || {
                enter(&ns, "delay line")?;
                // Wake on time: the default slack lets timers fire 50 µs late.
                let _ = nix::sys::prctl::set_timerslack(1);
                // And first: at real-time priority (`chrt`, best effort),
                // the line is not kept waiting behind the hosts' processes.
                let tid = nix::unistd::gettid().to_string();
                let _ = std::process::Command::new("chrt")
                    .args(["-f", "-p", "20", &tid])
                    .output();
                let mut socks = Vec::new();
                for l in &links {
                    socks.push(open_bound(&l.a_dev)?);
                    socks.push(open_bound(&l.b_dev)?);
                }
                Ok((links, socks))
            },
            move |(links, socks)| copy_frames(links, socks, seed, clock, &flag),
        )?;
        Ok(DelayLine {
            stop,
            thread: Some(thread),
        })
    }

    /// Fails, with the thread's error, if the line has stopped by itself.
    pub fn check(&mut self) -> Result<()> {
        if self.thread.as_ref().is_some_and(|t| t.is_finished()) {
            return match self.thread.take().map(|t| t.join()) {
                Some(Ok(Err(e))) => Err(e.context("the delay line stopped")),
                Some(Err(_)) => bail!("the delay line's thread panicked"),
                _ => bail!("the delay line stopped"),
            };
        }
        Ok(())
    }

    /// Stops the thread and returns each link's counters.
    pub fn stop(mut self) -> Result<Vec<LinkStats>> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => bail!("the delay line's thread panicked"),
            None => bail!("the delay line was already stopped"),
        }
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A non-blocking packet socket for every protocol, bound to `dev` in the
/// calling thread's namespace, with large buffers.
fn open_bound(dev: &str) -> Result<OwnedFd> {
    let what = format!("delay line: interface {dev}");
    let fd = socket(
        AddressFamily::Packet,
        SockType::Raw,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        SockProtocol::EthAll,
    )
    .with_context(|| format!("{what}: cannot open a packet socket (CAP_NET_RAW needed)"))?;
    // The interface's link-layer address (its ifindex) from getifaddrs; a
    // zero protocol in it keeps the socket's ETH_P_ALL when binding.
    let addr = nix::ifaddrs::getifaddrs()
        .with_context(|| format!("{what}: getifaddrs"))?
        .filter(|a| a.interface_name == dev)
        .find_map(|a| a.address.and_then(|s| s.as_link_addr().copied()))
        .with_context(|| format!("{what}: no such interface in the wan namespace"))?;
    bind_link(&fd, &addr).with_context(|| format!("{what}: cannot bind a packet socket"))?;
    // Room for a slow-start burst while the thread writes the other way
    // (beyond rmem_max: the lab has CAP_NET_ADMIN); frames the socket
    // still has no room for are counted (SO_RXQ_OVFL).
    setsockopt(&fd, sockopt::RcvBufForce, &(8 << 20))
        .with_context(|| format!("{what}: SO_RCVBUFFORCE"))?;
    let _ = setsockopt(&fd, sockopt::SndBufForce, &(8 << 20));
    setsockopt(&fd, sockopt::RxqOvfl, &1).with_context(|| format!("{what}: SO_RXQ_OVFL"))?;
    setsockopt(&fd, sockopt::ReceiveTimestampns, &true)
        .with_context(|| format!("{what}: SO_TIMESTAMPNS"))?;
    Ok(fd)
}

fn bind_link(fd: &OwnedFd, addr: &LinkAddr) -> nix::Result<()> {
    use std::os::fd::AsRawFd;
    bind(fd.as_raw_fd(), addr)
}

/// The thread's loop: read what arrived on every interface, write what is
/// due, sleep until the next frame is due or something arrives.
fn copy_frames(
    links: Vec<Link>,
    socks: Vec<OwnedFd>,
    seed: u64,
    clock: Clock,
    stop: &AtomicBool,
) -> Result<Vec<LinkStats>> {
    // Lane i carries what arrives on socks[i] out of socks[i ^ 1].
    let mut lanes: Vec<Lane> = Vec::new();
    for l in &links {
        lanes.push(Lane::new(
            l.ab,
            Rng::for_component(seed, &format!("delay/{}/ab", l.name)),
        ));
        lanes.push(Lane::new(
            l.ba,
            Rng::for_component(seed, &format!("delay/{}/ba", l.name)),
        ));
    }
    let mut buf = vec![0u8; 65_536];
    let mut cmsg = nix::cmsg_space!(nix::sys::time::TimeSpec, u32);
    while !stop.load(Ordering::Relaxed) {
        let now = clock.now_ns();
        // Write what is due.
        let mut blocked = false;
        for (i, lane) in lanes.iter_mut().enumerate() {
            while let Some(frame) = lane.peek_due(now) {
                match send(as_raw(&socks[i ^ 1]), frame, MsgFlags::empty()) {
                    Ok(_) => lane.depart(clock.now_ns(), true),
                    // The socket's buffer is full: try again shortly.
                    Err(Errno::EAGAIN | Errno::ENOBUFS | Errno::EINTR) => {
                        blocked = true;
                        break;
                    }
                    // The interface went down (the lab is being torn down), or
                    // the frame cannot go out: drop it, counted.
                    Err(_) => lane.depart(now, false),
                }
            }
        }
        let now = clock.now_ns();
        let next = lanes.iter().filter_map(Lane::next_due).min();
        let wait = match next {
            // A blocked socket is retried after BLOCKED_RETRY, not at once:
            // the thread may run at real-time priority and must not spin.
            Some(_) if blocked => BLOCKED_RETRY,
            Some(t) => Duration::from_nanos(t.saturating_sub(now)).min(IDLE_WAKE),
            None => IDLE_WAKE,
        };
        let mut fds: Vec<PollFd> = socks
            .iter()
            .map(|s| PollFd::new(s.as_fd(), PollFlags::POLLIN))
            .collect();
        match ppoll(&mut fds, Some(TimeSpec::from_duration(wait)), None) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(e).context("delay line: ppoll"),
        }
        let revents: Vec<PollFlags> = fds
            .iter()
            .map(|f| f.revents().unwrap_or(PollFlags::empty()))
            .collect();
        drop(fds);
        let dev = |i: usize| {
            let l = &links[i / 2];
            [&l.a_dev, &l.b_dev][i % 2].clone()
        };
        for (i, r) in revents.into_iter().enumerate() {
            if !r.contains(PollFlags::POLLIN)
                && r.intersects(PollFlags::POLLERR | PollFlags::POLLHUP | PollFlags::POLLNVAL)
            {
                // Reported at once instead of waking the thread forever.
                bail!("delay line: interface {}: socket error ({r:?})", dev(i));
            }
            if !r.contains(PollFlags::POLLIN) {
                continue;
            }
            loop {
                let mut iov = [IoSliceMut::new(&mut buf)];
                let msg = match recvmsg::<LinkAddr>(
                    as_raw(&socks[i]),
                    &mut iov,
                    Some(&mut cmsg),
                    MsgFlags::MSG_TRUNC,
                ) {
                    Ok(m) => m,
                    Err(Errno::EAGAIN) => break,
                    Err(Errno::EINTR) => continue,
                    Err(e) => {
                        return Err(e)
                            .with_context(|| format!("delay line: reading interface {}", dev(i)))
                    }
                };
                let (n, from) = (msg.bytes, msg.address);
                let (mut stamp, mut dropped) = (None, None);
                for c in msg.cmsgs().into_iter().flatten() {
                    match c {
                        ControlMessageOwned::ScmTimestampns(ts) => {
                            stamp = Some(ts.tv_sec() as f64 + ts.tv_nsec() as f64 * 1e-9)
                        }
                        ControlMessageOwned::RxqOvfl(d) => dropped = Some(d),
                        _ => {}
                    }
                }
                let lane = &mut lanes[i];
                if let Some(d) = dropped {
                    // The socket's count of frames it had no room for.
                    lane.stats.socket_drops = lane.stats.socket_drops.max(d as u64);
                }
                if from.is_some_and(|a| a.pkttype() == PACKET_OUTGOING) {
                    continue;
                }
                if n > buf.len() {
                    lane.stats.too_big += 1;
                    continue;
                }
                // The delay runs from the frame's arrival, stamped by the
                // kernel, not from when this thread got to read it.
                let arrived = stamp.map_or_else(
                    || clock.now_ns(),
                    |u| (clock.from_unix(u).max(0.0) * 1e9) as u64,
                );
                let mut frame = buf[..n].to_vec();
                fill_l4_checksum(&mut frame);
                lane.arrive(arrived, frame);
            }
        }
    }
    for l in &mut lanes {
        l.stats.in_flight_at_stop = l.queue.len() as u64;
    }
    let mut lanes = lanes.into_iter();
    Ok(links
        .into_iter()
        .map(|link| LinkStats {
            link,
            ab: lanes.next().map(|l| l.stats).unwrap_or_default(),
            ba: lanes.next().map(|l| l.stats).unwrap_or_default(),
        })
        .collect())
}

/// Whether an Ethernet frame carries IPv4.
fn is_ipv4(frame: &[u8]) -> bool {
    frame.get(12..14) == Some(&[0x08, 0x00][..])
}

/// IPv4's protocol numbers for TCP and UDP (RFC 790, "Assigned Numbers").
const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;

/// The protocol field of an IPv4 frame's header (`None` for anything
/// else, or a frame too short to have one).
fn l4_proto(frame: &[u8]) -> Option<u8> {
    if !is_ipv4(frame) {
        return None;
    }
    frame.get(14 + 9).copied()
}

/// Writes the TCP or UDP checksum of an IPv4 frame. A veth leaves it to
/// the receiver (checksum offload: the skb says "not computed yet", and a
/// packet socket reads the bytes as they are), so a frame copied to another
/// interface would arrive with a wrong one and be dropped. Recomputing it
/// leaves a correct checksum as it was. Frames that are not IPv4 TCP or UDP,
/// fragments, and truncated frames are left alone; never panics.
pub fn fill_l4_checksum(frame: &mut [u8]) {
    const ETH: usize = 14;
    if frame.len() < ETH + 20 || frame[12..14] != [0x08, 0x00] {
        return;
    }
    let ip = &frame[ETH..];
    let ihl = (ip[0] & 0x0f) as usize * 4;
    let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
    let proto = ip[9];
    let fragment = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0;
    if ip[0] >> 4 != 4 || ihl < 20 || total < ihl || total > ip.len() || fragment {
        return;
    }
    let at = match proto {
        6 if total >= ihl + 20 => 16,
        17 if total >= ihl + 8 => 6,
        _ => return,
    };
    let (src, dst) = (
        [ip[12], ip[13], ip[14], ip[15]],
        [ip[16], ip[17], ip[18], ip[19]],
    );
    let seg = &mut frame[ETH + ihl..ETH + total];
    seg[at] = 0;
    seg[at + 1] = 0;
    let mut sum: u32 = 0;
    let mut add = |b: &[u8]| {
        for c in b.chunks(2) {
            sum += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
        }
    };
    add(&src);
    add(&dst);
    add(&[0, proto]);
    add(&(seg.len() as u16).to_be_bytes());
    add(seg);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let mut c = !(sum as u16);
    if proto == 17 && c == 0 {
        c = 0xffff; // RFC 768: a computed zero is sent as all ones
    }
    seg[at..at + 2].copy_from_slice(&c.to_be_bytes());
}

fn as_raw(fd: &OwnedFd) -> std::os::fd::RawFd {
    use std::os::fd::AsRawFd;
    fd.as_raw_fd()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(ms: u64, loss: f64) -> Dir {
        Dir {
            delay: Duration::from_millis(ms),
            loss,
        }
    }

    #[test]
    fn link_rows_keep_each_direction_apart() {
        let link = Link {
            name: "l0".into(),
            a_dev: "a".into(),
            b_dev: "b".into(),
            ab: dir(10, 0.0),
            ba: dir(30, 0.25),
        };
        let ab = LaneStats {
            frames: 5,
            socket_drops: 2,
            ..LaneStats::default()
        };
        let ba = LaneStats {
            frames: 7,
            too_big: 1,
            ..LaneStats::default()
        };
        let rows = LinkStats { link, ab, ba }.rows();
        assert_eq!(rows[0].direction, "ab");
        assert_eq!(rows[1].direction, "ba");
        assert_eq!(rows[1].delay_ms, 30.0);
        assert_eq!(rows[1].loss, 0.25);
        assert_eq!(rows[0].frames, 5);
        assert_eq!(rows[0].socket_drops, 2);
        assert_eq!(rows[1].too_big, 1);
    }

    #[test]
    fn frames_leave_in_order_after_exactly_their_delay() {
        let mut l = Lane::new(dir(10, 0.0), Rng::from_seed(1));
        assert!(l.next_due().is_none());
        assert!(l.arrive(1_000, vec![1; 100]));
        assert!(l.arrive(2_000, vec![2; 60]));
        assert_eq!(l.next_due(), Some(10_001_000));
        assert!(l.peek_due(10_000_999).is_none(), "not before its delay");
        assert_eq!(l.peek_due(10_001_000), Some(&[1u8; 100][..]));
        l.depart(10_001_500, true);
        assert_eq!(l.next_due(), Some(10_002_000));
        assert_eq!(l.peek_due(20_000_000).map(|f| f[0]), Some(2));
        l.depart(10_002_000, true);
        assert!(l.peek_due(u64::MAX).is_none());
        let s = &l.stats;
        assert_eq!((s.frames, s.bytes, s.sent, s.lost), (2, 160, 2, 0));
        assert_eq!(s.max_held_bytes, 160);
        assert!((s.late_max_us - 0.5).abs() < 1e-9);
        assert!((s.late_mean_us - 0.25).abs() < 1e-9);
    }

    #[test]
    fn loss_is_drawn_per_ip_frame_at_the_configured_rate_and_repeats_with_the_seed() {
        let ip = tcp_frame(b"", [0, 0]);
        let run = |seed| {
            let mut l = Lane::new(dir(1, 0.1), Rng::from_seed(seed));
            let kept: Vec<bool> = (0..20_000).map(|i| l.arrive(i, ip.clone())).collect();
            (kept, l.stats.lost)
        };
        let (a, lost) = run(7);
        assert!(
            (1_800..2_200).contains(&lost),
            "lost {lost} of 20000 at 10 %"
        );
        assert_eq!(a, run(7).0, "the same seed loses the same frames");
        assert_ne!(a, run(8).0);
        let mut none = Lane::new(dir(1, 0.0), Rng::from_seed(7));
        assert!((0..1000).all(|i| none.arrive(i, ip.clone())));
        // ARP (and anything else that is not IP) is never lost.
        let mut arp = ip.clone();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let mut l = Lane::new(dir(1, 0.5), Rng::from_seed(7));
        assert!((0..1000).all(|i| l.arrive(i, arp.clone())));
        assert_eq!(l.stats.lost, 0);
    }

    #[test]
    fn udp_and_tcp_frames_and_their_losses_are_counted_apart() {
        let tcp = tcp_frame(b"data", [0, 0]);
        let mut udp = tcp.clone();
        udp[14 + 9] = 17;
        let mut arp = tcp.clone();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let mut l = Lane::new(dir(1, 0.2), Rng::from_seed(3));
        for i in 0..30_000u64 {
            let f = match i % 3 {
                0 => &tcp,
                1 => &udp,
                _ => &arp,
            };
            l.arrive(i, f.clone());
        }
        let s = &l.stats;
        assert_eq!(
            (s.frames, s.tcp_frames, s.udp_frames),
            (30_000, 10_000, 10_000)
        );
        assert_eq!(s.lost, s.tcp_lost + s.udp_lost, "ARP is never lost");
        for lost in [s.tcp_lost, s.udp_lost] {
            assert!(
                (1_800..2_200).contains(&lost),
                "lost {lost} of 10000 at 20 %"
            );
        }
        // A frame too short for an IP header counts as neither.
        let mut l = Lane::new(dir(1, 0.0), Rng::from_seed(3));
        l.arrive(
            0,
            vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0x00, 0x45],
        );
        assert_eq!(
            (l.stats.frames, l.stats.tcp_frames, l.stats.udp_frames),
            (1, 0, 0)
        );
        // And the rows of links.csv carry the counts.
        let link = Link {
            name: "l0".into(),
            a_dev: "a".into(),
            b_dev: "b".into(),
            ab: dir(20, 0.2),
            ba: dir(20, 0.2),
        };
        let rows = LinkStats {
            link,
            ab: s.clone(),
            ba: LaneStats::default(),
        }
        .rows();
        assert_eq!(
            (
                rows[0].udp_frames,
                rows[0].udp_lost,
                rows[0].tcp_frames,
                rows[0].tcp_lost
            ),
            (s.udp_frames, s.udp_lost, s.tcp_frames, s.tcp_lost)
        );
        assert_eq!(rows[1].tcp_frames, 0);
    }

    /// An Ethernet frame with an IPv4 TCP segment (checksum as given).
    fn tcp_frame(payload: &[u8], csum: [u8; 2]) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend([0x08, 0x00]);
        let total = (20 + 20 + payload.len()) as u16;
        f.extend([
            0x45,
            0,
            (total >> 8) as u8,
            total as u8,
            0,
            1,
            0x40,
            0,
            64,
            6,
            0,
            0,
        ]);
        f.extend([10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend([
            0x13, 0x88, 0xc3, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff,
        ]);
        f.extend(csum);
        f.extend([0, 0]);
        f.extend(payload);
        f
    }

    /// The Internet checksum over the pseudo-header and segment: zero when
    /// the checksum field is right (RFC 1071).
    fn verify(f: &[u8]) -> u16 {
        let seg = &f[34..];
        let mut sum: u32 = 0;
        let mut words = |b: &[u8]| {
            for c in b.chunks(2) {
                sum += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
            }
        };
        words(&f[26..34]);
        words(&[0, 6]);
        words(&(seg.len() as u16).to_be_bytes());
        words(seg);
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    #[test]
    fn tcp_checksums_left_to_the_receiver_are_filled_in_and_good_ones_kept() {
        for payload in [&b""[..], b"odd", b"even"] {
            let mut f = tcp_frame(payload, [0xde, 0xad]);
            assert_ne!(verify(&f), 0);
            fill_l4_checksum(&mut f);
            assert_eq!(verify(&f), 0, "payload {payload:?}");
            let good = f.clone();
            fill_l4_checksum(&mut f);
            assert_eq!(f, good, "a right checksum is kept");
        }
        // Not IPv4, or cut short: left alone.
        let mut arp = tcp_frame(b"x", [1, 2]);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let before = arp.clone();
        fill_l4_checksum(&mut arp);
        assert_eq!(arp, before);
        let mut short = tcp_frame(b"xyz", [1, 2]);
        short.truncate(50);
        let before = short.clone();
        fill_l4_checksum(&mut short);
        assert_eq!(short, before);
    }

    proptest::proptest! {
        #[test]
        fn the_checksum_filler_never_panics(mut b in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            if b.len() > 14 {
                b[12] = 0x08;
                b[13] = 0x00;
            }
            fill_l4_checksum(&mut b);
        }
    }

    #[test]
    fn a_full_line_drops_and_counts_instead_of_growing() {
        let mut l = Lane::new(dir(1000, 0.0), Rng::from_seed(1));
        let big = MAX_LANE_BYTES / 4;
        for i in 0..4 {
            assert!(l.arrive(i, vec![0; big]));
        }
        assert!(!l.arrive(5, vec![0; 1]));
        assert_eq!(l.stats.overflow, 1);
        l.depart(2_000_000_000, false);
        assert_eq!(l.stats.send_errors, 1);
        assert!(l.arrive(6, vec![0; 1]), "room again once a frame has left");
    }
}
