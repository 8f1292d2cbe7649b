//! Prometheus text exposition (format 0.0.4) of a node's [`Snapshot`], and a
//! minimal HTTP server for it on loopback.

use crate::accept::{serve_capped, Gate};
use crate::core::{Cmd, Snapshot};
use hopwise_proto::backtap::HopStats;
use hopwise_proto::circuit::Role;
use hopwise_proto::time::Dur;
use std::fmt::Write as _;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

/// Per-circuit series are written for this many circuits at most.
const MAX_CIRCUIT_SERIES: usize = 100;

struct W {
    out: String,
    node: String,
}

impl W {
    fn head(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP hopwise_{name} {help}");
        let _ = writeln!(self.out, "# TYPE hopwise_{name} {kind}");
    }
    fn val(&mut self, name: &str, labels: &str, v: impl std::fmt::Display) {
        let sep = if labels.is_empty() { "" } else { "," };
        let _ = writeln!(
            self.out,
            "hopwise_{name}{{node=\"{}\"{sep}{labels}}} {v}",
            self.node
        );
    }
    fn one(&mut self, name: &str, kind: &str, help: &str, v: impl std::fmt::Display) {
        self.head(name, kind, help);
        self.val(name, "", v);
    }
}

/// A duration in seconds, written exactly (nanosecond digits, trailing
/// zeros dropped): `0.000160651`, not the float noise of `as_secs_f64`
/// (`0.00016065100000000002`).
struct Secs(Dur);

impl std::fmt::Display for Secs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ns = self.0.as_nanos();
        let frac = format!("{:09}", ns % 1_000_000_000);
        let frac = frac.trim_end_matches('0');
        if frac.is_empty() {
            write!(f, "{}", ns / 1_000_000_000)
        } else {
            write!(f, "{}.{frac}", ns / 1_000_000_000)
        }
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Renders a snapshot as Prometheus text.
pub fn render(s: &Snapshot) -> String {
    let mut w = W {
        out: String::new(),
        node: escape(&s.name),
    };
    w.one(
        "uptime_seconds",
        "gauge",
        "Seconds since the node started.",
        Secs(s.uptime),
    );
    w.head(
        "circuits",
        "gauge",
        "Circuits at this node, by the part it plays.",
    );
    for (role, name) in [
        (Role::Client, "client"),
        (Role::Relay, "relay"),
        (Role::Exit, "exit"),
    ] {
        let n = s.circuits.iter().filter(|c| c.role == role).count();
        w.val("circuits", &format!("role=\"{name}\""), n);
    }
    w.one(
        "streams",
        "gauge",
        "Streams open at this node's edges.",
        s.streams,
    );
    w.one(
        "links_up",
        "gauge",
        "Links with an authenticated session.",
        s.links_up,
    );
    w.one("clients", "gauge", "Client links.", s.clients);
    let t = &s.transport;
    w.one(
        "cells_in_total",
        "counter",
        "BackTap cells received (including duplicates).",
        t.cells_in,
    );
    w.one(
        "cells_out_total",
        "counter",
        "BackTap cells sent (including retransmissions).",
        t.cells_out,
    );
    w.one(
        "feedback_in_total",
        "counter",
        "BackTap feedback items received.",
        t.feedback_in,
    );
    w.one(
        "feedback_out_total",
        "counter",
        "BackTap feedback items sent.",
        t.feedback_out,
    );
    w.head("datagrams_total", "counter", "UDP datagrams.");
    w.val("datagrams_total", "dir=\"in\"", s.links.datagrams_in);
    w.val("datagrams_total", "dir=\"out\"", s.links.datagrams_out);
    w.head("bytes_total", "counter", "UDP payload bytes.");
    w.val("bytes_total", "dir=\"in\"", s.links.bytes_in);
    w.val("bytes_total", "dir=\"out\"", s.links.bytes_out);
    w.head(
        "drops_total",
        "counter",
        "Datagrams, cells and frames dropped, by reason.",
    );
    let l = &s.links;
    for (reason, v) in [
        ("auth_failure", l.auth_failures),
        ("replay", l.replays),
        ("unknown_peer", l.unknown_peer),
        ("malformed", l.malformed),
        ("handshake_failure", l.handshake_failures),
        ("handshake_refused", l.handshake_refused),
        ("plaintext", l.plaintext_rejected),
        ("rate_limited", l.rate_limited),
        ("link_queue", l.frames_dropped),
        ("backtap_decode", t.decode_errors),
        ("unknown_circuit", t.unknown_circuit),
        ("invalid_item", t.invalid_items),
        ("circuit_queue_full", t.drops),
        ("protocol", s.node.protocol_errors),
        ("onion_unrecognized", s.node.cells_unrecognized),
        ("circuit_handshake_failure", s.node.handshake_failures),
        ("circuit_handshake_replay", s.node.handshake_replays),
        ("emulated_loss", s.emulation.lost),
        ("emulated_queue", s.emulation.queue_drops),
        ("socket", s.socket_drops.unwrap_or(0)),
        ("send_error", s.send_errors),
    ] {
        w.val("drops_total", &format!("reason=\"{reason}\""), v);
    }
    let sum = |f: fn(&HopStats) -> u64| -> u64 {
        s.circuits
            .iter()
            .map(|c| f(&c.forward) + f(&c.backward))
            .sum()
    };
    w.head(
        "retransmits",
        "gauge",
        "Cell retransmissions over the circuits open now, by kind.",
    );
    w.val("retransmits", "kind=\"all\"", sum(|h| h.retransmits));
    w.val("retransmits", "kind=\"fast\"", sum(|h| h.fast_retransmits));
    w.val("retransmits", "kind=\"timeout\"", sum(|h| h.timeouts));
    w.val(
        "retransmits",
        "kind=\"lost_retransmission\"",
        sum(|h| h.lost_retransmits),
    );
    w.val("retransmits", "kind=\"rack\"", sum(|h| h.rack_lost));
    w.val("retransmits", "kind=\"tail_probe\"", sum(|h| h.tlp_probes));
    w.one(
        "sack_blocks_rejected_total",
        "counter",
        "SACK blocks ignored because they reached beyond the cells sent.",
        t.sack_rejected,
    );
    w.one(
        "control_retransmits_total",
        "counter",
        "Control messages (CREATE, CREATED, RELAY, DESTROY) sent again.",
        s.node.ctl_retransmits,
    );
    w.one(
        "handshake_retransmits_total",
        "counter",
        "Noise handshake messages sent again.",
        l.handshake_retransmits,
    );
    w.one(
        "handshakes_total",
        "counter",
        "Noise handshakes completed or answered.",
        l.handshakes_completed + l.handshakes_answered,
    );
    w.one(
        "handshakes_unconfirmed_total",
        "counter",
        "New clients' answered handshakes forgotten before they confirmed (evicted or expired).",
        l.half_open_dropped,
    );
    w.one(
        "cookies_sent_total",
        "counter",
        "INITs answered with a cookie instead of a handshake (faster than [link] handshakes_per_second).",
        l.cookies_sent,
    );
    w.one(
        "cookies_received_total",
        "counter",
        "Cookies received from a loaded relay; the INIT went out again with it.",
        l.cookies_received,
    );
    w.one(
        "link_closes_sent_total",
        "counter",
        "CLOSE frames sent: links closed on shutdown, a client confirming past max_clients.",
        l.closes_sent,
    );
    w.one(
        "link_closes_received_total",
        "counter",
        "CLOSE frames and refusing RESPs received: links a peer closed (it stopped) or refused (full, or takes no clients).",
        l.closes_received,
    );
    w.one(
        "bucket_stalls_total",
        "counter",
        "Times the token bucket held the scheduler back.",
        t.bucket_stalls,
    );
    w.one(
        "queue_cells",
        "gauge",
        "Cells queued over all circuits and directions.",
        sum(|h| h.queued as u64),
    );
    w.one(
        "queue_cells_max",
        "gauge",
        "The longest queue of any circuit and direction, in cells.",
        s.circuits
            .iter()
            .map(|c| c.forward.queued.max(c.backward.queued))
            .max()
            .unwrap_or(0),
    );
    w.one(
        "held_cells",
        "gauge",
        "Cells held over all circuits (queued, in flight, above gaps): what max_queued_cells caps.",
        s.held_cells as u64,
    );
    w.one(
        "circuits_shed_total",
        "counter",
        "Circuits torn down because all queues together held more than max_queued_cells.",
        s.node.circuits_shed,
    );
    w.one(
        "stream_buffer_bytes",
        "gauge",
        "Bytes all streams buffer at this node's edges (received and not read, written and not sent): what max_stream_buffers caps.",
        s.stream_bytes as u64,
    );
    w.one(
        "streams_shed_total",
        "counter",
        "Streams reset because all streams together buffered more than max_stream_buffers.",
        s.node.streams_shed,
    );
    w.head(
        "circuit_queue_cells",
        "gauge",
        "Cells queued per circuit and direction.",
    );
    for c in s.circuits.iter().take(MAX_CIRCUIT_SERIES) {
        for (d, h) in [("forward", &c.forward), ("backward", &c.backward)] {
            w.val(
                "circuit_queue_cells",
                &format!("circuit=\"{}\",dir=\"{d}\"", c.id),
                h.queued,
            );
        }
    }
    w.head(
        "circuit_swnd_cells",
        "gauge",
        "BackTap sending window per circuit and direction.",
    );
    for c in s.circuits.iter().take(MAX_CIRCUIT_SERIES) {
        for (d, h) in [("forward", &c.forward), ("backward", &c.backward)] {
            w.val(
                "circuit_swnd_cells",
                &format!("circuit=\"{}\",dir=\"{d}\"", c.id),
                h.swnd,
            );
        }
    }
    w.head(
        "circuit_srtt_seconds",
        "gauge",
        "Smoothed per-hop RTT per circuit and direction.",
    );
    for c in s.circuits.iter().take(MAX_CIRCUIT_SERIES) {
        for (d, h) in [("forward", &c.forward), ("backward", &c.backward)] {
            w.val(
                "circuit_srtt_seconds",
                &format!("circuit=\"{}\",dir=\"{d}\"", c.id),
                Secs(h.srtt),
            );
        }
    }
    w.head(
        "streams_refused_total",
        "counter",
        "Streams refused, by reason (a relay's or a proxy's reasons).",
    );
    for (reason, v) in &s.refused {
        w.val("streams_refused_total", &format!("reason=\"{reason}\""), v);
    }
    if let Some(open) = s.socks_open {
        w.one(
            "socks_connections",
            "gauge",
            "SOCKS connections being served (at most socks_max_connections).",
            open,
        );
        w.one(
            "socks_refused_total",
            "counter",
            "SOCKS connections closed when accepted because socks_max_connections were open.",
            s.socks_refused,
        );
    }
    w.one(
        "udp_rcvbuf_bytes",
        "gauge",
        "SO_RCVBUF of the UDP socket.",
        s.rcvbuf,
    );
    w.one(
        "udp_sndbuf_bytes",
        "gauge",
        "SO_SNDBUF of the UDP socket.",
        s.sndbuf,
    );
    w.out
}

/// Scrapes served at once; a scraper needs one.
const MAX_SCRAPES: usize = 16;
/// How long a scrape may take in all: the request, and taking the answer
/// (a scraper that never reads would otherwise keep its place).
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `GET` (any path) with the metrics of the node behind `cmd`.
pub(crate) async fn serve(listener: TcpListener, cmd: mpsc::UnboundedSender<Cmd>) {
    serve_capped(listener, Gate::new(MAX_SCRAPES), "metrics", move |s, _| {
        let cmd = cmd.clone();
        async move {
            let _ = tokio::time::timeout(SCRAPE_TIMEOUT, scrape(s, cmd)).await;
        }
    })
    .await;
}

async fn scrape(mut s: TcpStream, cmd: mpsc::UnboundedSender<Cmd>) {
    let read = async {
        let mut req = Vec::new();
        let mut buf = [0u8; 1024];
        while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 8192 {
            match s.read(&mut buf).await {
                Ok(n) if n > 0 => req.extend_from_slice(&buf[..n]),
                _ => return false,
            }
        }
        true
    };
    if !read.await {
        return;
    }
    let (tx, rx) = oneshot::channel();
    if cmd.send(Cmd::Snapshot(tx)).is_err() {
        return;
    }
    let Ok(snap) = rx.await else { return };
    let body = render(&snap);
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = s.write_all(head.as_bytes()).await;
    let _ = s.write_all(body.as_bytes()).await;
    let _ = s.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_written_exactly() {
        assert_eq!(Secs(Dur::from_nanos(160_651)).to_string(), "0.000160651");
        assert_eq!(Secs(Dur::from_secs(3)).to_string(), "3");
        assert_eq!(Secs(Dur::from_millis(2_500)).to_string(), "2.5");
        assert_eq!(Secs(Dur::ZERO).to_string(), "0");
    }
}
