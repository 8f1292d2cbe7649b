//! One mode's kernel run: the flows of the mode between the hosts'
//! namespaces, in real time, with B's queues and A→B's RTT sampled while
//! they run.

use super::net::{addr, ss_rtt, Lab, A, B, C, HOSTS};
use super::Options;
use crate::overlay_ack::{Mode, Timeline};
use anyhow::{bail, Result};
use hopwise_experiment::Progress;
use hopwise_lab::traffic::{
    join_all, spawn_duplex_client, spawn_duplex_server, spawn_receiver, spawn_sender, Clock, BIN_S,
};
use std::net::SocketAddr;

/// Ports: A→B (or A↔B), B→C (or B↔C), B→A and C→B (split modes).
const PORT_AB: u16 = 5001;
const PORT_BC: u16 = 5002;
const PORT_BA: u16 = 5003;
const PORT_CB: u16 = 5004;

/// What the kernel run of one mode measured.
pub(super) struct KernelRun {
    /// 100 ms bins of A→B, B→A, B→C, C→B (empty where the mode has no such flow).
    pub bins: [Vec<u64>; 4],
    /// (time s, A→B's SRTT ms).
    pub srtt: Vec<(f64, f64)>,
    /// (time s, B's uplink backlog, switch port towards B backlog), bytes.
    pub queues: Vec<(f64, u64, u64)>,
    /// Drops at B's uplink and at the switch port towards B over the run.
    pub drops: [u64; 2],
}

type Flow = std::thread::JoinHandle<Result<Vec<u64>>>;

pub(super) fn run_kernel(
    lab: &Lab,
    mode: Mode,
    opts: &Options,
    tl: &Timeline,
    progress: &dyn Progress,
) -> Result<KernelRun> {
    let clock = Clock::start();
    let end = tl.duration;
    let read_until = end + 1.0;
    let cc = &opts.cc;
    let sock = |i: usize, port| SocketAddr::from((addr(i), port));
    // Flows in the order A→B, B→A, B→C, C→B; `None` where absent.
    let mut flows: [Option<Flow>; 4] = [None, None, None, None];
    let mut senders = Vec::new();
    let one_way = |flows: &mut [Option<Flow>; 4],
                   senders: &mut Vec<std::thread::JoinHandle<Result<()>>>,
                   slot: usize,
                   (from, to): (usize, usize),
                   port: u16,
                   (a, b): (f64, f64),
                   name: &str|
     -> Result<()> {
        flows[slot] = Some(spawn_receiver(
            lab.hosts[to].open()?,
            addr(to),
            port,
            clock,
            read_until,
            name.into(),
        )?);
        senders.push(spawn_sender(
            lab.hosts[from].open()?,
            sock(to, port),
            cc.clone(),
            clock,
            a,
            b,
            name.into(),
        )?);
        Ok(())
    };
    if mode.two_way() && mode != Mode::SplitAckPrio {
        // One connection per pair, data both ways: the server's bins are
        // what the client sends (A→B at B, B→A at A; B→C at C, C→B at B).
        let two_way = |(client, server): (usize, usize),
                       port: u16,
                       window: (f64, f64),
                       pair: &str|
         -> Result<[Flow; 2]> {
            Ok([
                spawn_duplex_server(
                    lab.hosts[server].open()?,
                    addr(server),
                    port,
                    cc.clone(),
                    clock,
                    window.1,
                    format!("{pair} at {}", HOSTS[server].to_uppercase()),
                )?,
                spawn_duplex_client(
                    lab.hosts[client].open()?,
                    sock(server, port),
                    cc.clone(),
                    clock,
                    window,
                    format!("{pair} at {}", HOSTS[client].to_uppercase()),
                )?,
            ])
        };
        let [ab, ba] = two_way((A, B), PORT_AB, tl.ab, "A↔B")?;
        let [bc, cb] = two_way((B, C), PORT_BC, tl.bc, "B↔C")?;
        flows = [Some(ab), Some(ba), Some(bc), Some(cb)];
    } else {
        one_way(&mut flows, &mut senders, 0, (A, B), PORT_AB, tl.ab, "A→B")?;
        one_way(&mut flows, &mut senders, 2, (B, C), PORT_BC, tl.bc, "B→C")?;
        if mode == Mode::SplitAckPrio {
            one_way(&mut flows, &mut senders, 1, (B, A), PORT_BA, tl.ab, "B→A")?;
            one_way(&mut flows, &mut senders, 3, (C, B), PORT_CB, tl.bc, "C→B")?;
        }
    }
    progress.start(
        &format!("{}: kernel TCP (real time)", mode.name()),
        end.ceil() as u64,
    );
    let mut srtt = Vec::new();
    let mut queues = Vec::new();
    let mut drops = [0, 0];
    let mut ticked = 0u64;
    let mut k = 0u64;
    loop {
        let t = k as f64 * BIN_S;
        if t >= end {
            break;
        }
        clock.sleep_until(t);
        let now = clock.now_s();
        let q = lab.b_queues()?;
        queues.push((now, q[0].0, q[1].0));
        drops = [q[0].1, q[1].1];
        if k.is_multiple_of(5) && now >= tl.ab.0 && now < tl.ab.1 {
            if let Some(r) = ss_rtt(&lab.hosts[A], sock(B, PORT_AB))? {
                srtt.push((now, r));
            }
        }
        while (ticked as f64) < now.floor() {
            ticked += 1;
            progress.inc();
        }
        k += 1;
    }
    clock.sleep_until(end);
    progress.finish();
    let mut errors = Vec::new();
    join_all(senders, "sender", &mut errors);
    let mut bins: [Vec<u64>; 4] = Default::default();
    for (slot, f) in flows.into_iter().enumerate() {
        if let Some(h) = f {
            if let Some(b) = join_all([h], "receiver", &mut errors).pop() {
                bins[slot] = b;
            }
        }
    }
    if !errors.is_empty() {
        bail!(
            "the kernel run of {} failed:\n  {}",
            mode.name(),
            errors.join("\n  ")
        );
    }
    if let Ok(q) = lab.b_queues() {
        drops = [q[0].1, q[1].1];
    }
    // In the two-way modes the slots hold what each end received: B's
    // server got A→B (slot 0) and A's client B→A (slot 1); C's server got
    // B→C (slot 2) and B's client C→B (slot 3). That is the order already.
    Ok(KernelRun {
        bins,
        srtt,
        queues,
        drops,
    })
}
