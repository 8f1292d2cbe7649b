//! The hopwise lab: the infrastructure for running the host's kernel TCP
//! and hopwise's daemons over Linux network namespaces.
//!
//! The simulator runs hopwise's own TCP model; the lab runs real stacks
//! over a topology of network namespaces joined by veth pairs, with the
//! bottleneck queues built from `tc` qdiscs (HTB for the rate, a `bfifo` or
//! `pfifo` leaf for a buffer counted in bytes or packets) and, where a
//! link needs propagation delay or random loss, a user-space [`delay`]
//! line (no netem needed). This crate knows nothing about papers: the
//! experiments that use it live with their paper in `hopwise-repro`
//! (behind its `lab` feature), beside the simulator runs they are compared
//! with.
//!
//! Requirements: Linux, root (or `CAP_NET_ADMIN` and `CAP_SYS_ADMIN`, and
//! `CAP_NET_RAW` for [`capture`]), iproute2's `ip` and `tc`, and the
//! `sch_htb`, `sch_fifo` qdiscs. [`check`] probes all of this and says
//! what is missing.
//!
//! Layout:
//! * [`cmd`]: running `ip`, `tc` and `sysctl`, with errors that name the
//!   command;
//! * [`netns`]: a network namespace that is deleted when dropped;
//! * [`topology`]: the access-link topology (Internet side, router, home
//!   side) and its qdiscs, optionally with delayed hops;
//! * [`tc`]: reading qdisc statistics (`tc -s -j`);
//! * [`kstats`]: a namespace's TCP counters (timeouts, retransmissions,
//!   undone reductions) and the kernel's release;
//! * [`traffic`]: bulk TCP senders and receivers on threads that enter a
//!   namespace, with goodput in fixed bins;
//! * [`download`]: sized downloads (a server of a body generated from its
//!   offset, a client through SOCKS5 or straight), with setup and
//!   transfer timed apart;
//! * [`capture`]: a packet socket on the router: what enters and leaves
//!   each queue, hence occupancy and ACK bursts;
//! * [`meter`]: bytes leaving an interface by protocol (UDP, TCP) in bins:
//!   each flow's share of a bottleneck;
//! * [`overlay`]: five hosts on a switch with one shaped port, running the
//!   daemon (`hopwise relay`, `hopwise proxy`) as processes;
//! * [`delay`]: a delay line in user space: propagation delay and random
//!   loss between two interfaces, with packet sockets;
//! * [`wan`]: hosts joined by point-to-point links through that delay line.

pub mod capture;
pub mod cmd;
pub mod delay;
pub mod download;
pub mod kstats;
pub mod meter;
pub mod netns;
pub mod overlay;
pub mod tc;
pub mod topology;
pub mod traffic;
pub mod wan;

pub use topology::{check, Buffer};
