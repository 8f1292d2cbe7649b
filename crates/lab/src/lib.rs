//! The hopwise lab: real kernel TCP in Linux network namespaces.
//!
//! The simulator runs hopwise's own TCP model; the lab runs the host's
//! kernel TCP over a topology of network namespaces joined by veth pairs,
//! with the bottleneck queues built from `tc` qdiscs (HTB for the rate, a
//! `bfifo` or `pfifo` leaf for a buffer counted in bytes or packets). It
//! drives the same experiments as the simulator, so that a result can be
//! checked against a real stack: [`pendulum`] runs Fig. 1 of seed 004 (a
//! download collapsing while uploads share an asymmetric access link) and
//! prints the kernel's numbers beside the simulator's and the model's;
//! [`acks`] runs its Fig. 3 and 4 (ACK compression on a symmetric link,
//! without and with delayed ACKs) and captures the router's packets;
//! [`pendulum_fig10`] runs its Fig. 10 (the throughput ratio against the
//! uplink buffer) with the bottleneck's propagation delay.
//!
//! Requirements: Linux, root (or `CAP_NET_ADMIN` and `CAP_SYS_ADMIN`, and
//! `CAP_NET_RAW` for [`capture`]),
//! iproute2's `ip` and `tc`, and the `sch_htb`, `sch_fifo` qdiscs. No netem
//! is needed: where a link needs propagation delay or random loss
//! ([`otcp`], [`pendulum_fig10`]) a user-space [`delay`] line provides it;
//! the other access-link experiments run without (they depend on queueing
//! delays of 0.1–1.2 s, not on propagation delay). [`check`]
//! probes all of this and says what is missing.
//!
//! Layout:
//! * [`cmd`]: running `ip`, `tc` and `sysctl`, with errors that name the
//!   command;
//! * [`netns`]: a network namespace that is deleted when dropped;
//! * [`topology`]: the access-link topology (Internet side, router, home
//!   side) and its qdiscs, optionally with delayed hops;
//! * [`tc`]: reading qdisc statistics (`tc -s -j`);
//! * [`kstats`]: a namespace's TCP counters (timeouts, retransmissions,
//!   undone reductions);
//! * [`traffic`]: bulk TCP senders and receivers on threads that enter a
//!   namespace, with goodput in fixed bins;
//! * [`capture`]: a packet socket on the router: what enters and leaves
//!   each queue, hence occupancy and ACK bursts;
//! * [`pendulum`]: the Fig. 1 experiment, its outputs and claims;
//! * [`pendulum_fig10`]: the Fig. 10 experiment, on delayed hops;
//! * [`acks`]: the Fig. 3 and 4 experiment;
//! * [`overlay`]: five hosts on a switch with one shaped port, running the
//!   daemon (`hopwise relay`, `hopwise proxy`) as processes;
//! * [`overlay_ack`]: seed 000's overlay node (hosts A, B, C behind access
//!   devices on a switch), with and without ACK prioritisation;
//! * [`backtap`]: a BackTap circuit over real UDP against kernel TCP at
//!   that bottleneck (seed 002);
//! * [`delay`]: a delay line in user space: propagation delay and random
//!   loss between two interfaces, with packet sockets;
//! * [`wan`]: hosts joined by point-to-point links through that delay line;
//! * [`otcp`]: seed 001's Table 1, direct and through `hopwise otcp relay`
//!   processes, on those links.

pub mod acks;
pub mod backtap;
pub mod capture;
pub mod cmd;
pub mod delay;
pub mod kstats;
pub mod netns;
pub mod otcp;
pub mod overlay;
pub mod overlay_ack;
pub mod pendulum;
pub mod pendulum_fig10;
pub mod tc;
pub mod topology;
pub mod traffic;
pub mod wan;

pub use topology::{check, Buffer};
