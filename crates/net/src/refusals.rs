//! Streams a node refused, counted per reason (`hopwise_streams_refused_total`)
//! and logged at info level, at most one line per reason every
//! [`LOG_INTERVAL`]; the next line says how many were not logged since.
//!
//! The lines name the reason and the stream, never the destination (that is
//! at debug level): an exit's log is not a record of where its users go.

use hopwise_proto::circuit::cell::EndReason;
use hopwise_proto::circuit::NodeStats;
use hopwise_proto::time::{Dur, Time};
use std::fmt::Display;

/// At most one log line per reason in this time.
pub const LOG_INTERVAL: Dur = Dur::from_secs(10);

/// Why a stream was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    // At an exit (or a relay that is not one).
    /// The exit policy refused every address of the destination, or this
    /// relay is not an exit.
    ExitPolicy,
    /// The name did not resolve.
    Resolve,
    /// The destination refused the connection (RST).
    ConnectRefused,
    /// Resolution or connect took longer than `[exit] connect_timeout`.
    Timeout,
    /// No route to the destination, or another connect error.
    ConnectFailed,
    /// The exit ran as many connects at once as it may.
    ConnectLimit,
    /// The circuit had `[limits] max_streams` streams (an exit, or a proxy
    /// opening a stream).
    StreamLimit,
    // At a proxy.
    /// No exit of the directory accepts the destination (random paths).
    NoPath,
    /// No circuit was ready within `connect_timeout`.
    CircuitTimeout,
    /// The configured path cannot be built (the last relay is not an exit,
    /// a relay is unknown to a hop, a relay refused the link).
    PathFailed,
    /// The exit refused the stream (its own metrics say why).
    ExitRefused,
}

/// The reasons a relay reports.
pub const RELAY_REASONS: [Reason; 7] = [
    Reason::ExitPolicy,
    Reason::Resolve,
    Reason::ConnectRefused,
    Reason::Timeout,
    Reason::ConnectFailed,
    Reason::ConnectLimit,
    Reason::StreamLimit,
];

/// The reasons a proxy reports.
pub const PROXY_REASONS: [Reason; 5] = [
    Reason::NoPath,
    Reason::CircuitTimeout,
    Reason::PathFailed,
    Reason::ExitRefused,
    Reason::StreamLimit,
];

const ALL: usize = 11;

impl Reason {
    /// The `reason` label of the metric.
    pub fn label(self) -> &'static str {
        match self {
            Reason::ExitPolicy => "exit_policy",
            Reason::Resolve => "resolve",
            Reason::ConnectRefused => "connect_refused",
            Reason::Timeout => "timeout",
            Reason::ConnectFailed => "connect_failed",
            Reason::ConnectLimit => "connect_limit",
            Reason::StreamLimit => "stream_limit",
            Reason::NoPath => "no_path",
            Reason::CircuitTimeout => "circuit_timeout",
            Reason::PathFailed => "path_failed",
            Reason::ExitRefused => "exit_refused",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// An exit's reason for the END it sends after a failed connect.
    pub fn of_connect(r: EndReason) -> Reason {
        match r {
            EndReason::ExitPolicy => Reason::ExitPolicy,
            EndReason::ResolveFailed => Reason::Resolve,
            EndReason::ConnectRefused => Reason::ConnectRefused,
            EndReason::Timeout => Reason::Timeout,
            EndReason::ResourceLimit => Reason::ConnectLimit,
            _ => Reason::ConnectFailed,
        }
    }
}

/// The counters and the log's rate limit of one node.
#[derive(Debug, Default)]
pub(crate) struct Refusals {
    counts: [u64; ALL],
    /// Per reason: when the last line was logged, and refusals since then
    /// that were not.
    logged: [(Option<Time>, u64); ALL],
    /// The circuit layer's counters of refused BEGINs, as last logged.
    seen_not_exit: u64,
    seen_limit: u64,
}

impl Refusals {
    /// Counts a refusal without logging it (its caller logs it otherwise).
    pub fn count(&mut self, reason: Reason) {
        self.counts[reason.index()] += 1;
    }

    /// Counts a refusal and logs it unless a line for this reason was
    /// logged less than [`LOG_INTERVAL`] ago.
    pub fn refuse(&mut self, now: Time, node: &str, reason: Reason, detail: &dyn Display) {
        self.count(reason);
        self.log(now, node, reason, 1, detail);
    }

    /// `n` refusals of `reason` (already counted): one line, or none.
    /// Returns whether a line was logged.
    fn log(&mut self, now: Time, node: &str, reason: Reason, n: u64, detail: &dyn Display) -> bool {
        let (last, suppressed) = &mut self.logged[reason.index()];
        if last.is_some_and(|t| now.since(t) < LOG_INTERVAL) {
            *suppressed += n;
            return false;
        }
        let more = *suppressed + n - 1;
        *last = Some(now);
        *suppressed = 0;
        if more == 0 {
            tracing::info!(node = %node, reason = reason.label(), "stream refused: {detail}");
        } else {
            tracing::info!(
                node = %node,
                reason = reason.label(),
                not_logged = more,
                "stream refused: {detail} (and {more} more for this reason since the last line)"
            );
        }
        true
    }

    /// Logs the BEGINs the circuit layer refused since the last call (it
    /// counts them itself).
    pub fn log_node_stats(&mut self, now: Time, node: &str, s: &NodeStats) {
        let n = s.streams_refused_not_exit - self.seen_not_exit;
        if n > 0 {
            self.seen_not_exit = s.streams_refused_not_exit;
            self.log(
                now,
                node,
                Reason::ExitPolicy,
                n,
                &"this relay is not an exit",
            );
        }
        let n = s.streams_refused_limit - self.seen_limit;
        if n > 0 {
            self.seen_limit = s.streams_refused_limit;
            self.log(
                now,
                node,
                Reason::StreamLimit,
                n,
                &"the circuit has [limits] max_streams streams",
            );
        }
    }

    /// `(label, count)` of each of `reasons`, with the circuit layer's
    /// counters added.
    pub fn counts(&self, reasons: &[Reason], s: &NodeStats) -> Vec<(&'static str, u64)> {
        reasons
            .iter()
            .map(|&r| {
                let extra = match r {
                    Reason::ExitPolicy => s.streams_refused_not_exit,
                    Reason::StreamLimit => s.streams_refused_limit,
                    _ => 0,
                };
                (r.label(), self.counts[r.index()] + extra)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Time {
        Time::ZERO + Dur::from_millis(ms)
    }

    #[test]
    fn one_line_per_reason_per_interval_and_every_refusal_counted() {
        let mut r = Refusals::default();
        assert!(r.log(at(0), "n", Reason::Resolve, 1, &"x"));
        for i in 1..=5 {
            r.count(Reason::Resolve);
            assert!(!r.log(at(i * 1000), "n", Reason::Resolve, 1, &"x"));
        }
        // Another reason has its own budget.
        assert!(r.log(at(5000), "n", Reason::Timeout, 1, &"x"));
        assert_eq!(r.logged[Reason::Resolve.index()].1, 5);
        // Ten seconds after the last line: a line again, and the count of
        // those not logged starts over.
        assert!(r.log(at(10_000), "n", Reason::Resolve, 1, &"x"));
        assert_eq!(r.logged[Reason::Resolve.index()], (Some(at(10_000)), 0));
        assert!(!r.log(at(19_999), "n", Reason::Resolve, 1, &"x"));
        let labels: Vec<_> = RELAY_REASONS
            .iter()
            .chain(&PROXY_REASONS)
            .map(|r| r.label())
            .collect();
        let mut unique = labels.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), ALL, "{labels:?}");
    }

    #[test]
    fn the_circuit_layers_refusals_are_counted_and_logged_once() {
        let mut r = Refusals::default();
        r.refuse(at(0), "n", Reason::ExitPolicy, &"exit policy");
        let s = NodeStats {
            streams_refused_not_exit: 2,
            streams_refused_limit: 3,
            ..NodeStats::default()
        };
        r.log_node_stats(at(20_000), "n", &s);
        assert_eq!(r.logged[Reason::StreamLimit.index()], (Some(at(20_000)), 0));
        assert_eq!(r.logged[Reason::ExitPolicy.index()], (Some(at(20_000)), 0));
        r.log_node_stats(at(20_001), "n", &s);
        assert_eq!(r.logged[Reason::StreamLimit.index()], (Some(at(20_000)), 0));
        let c = r.counts(&RELAY_REASONS, &s);
        assert!(c.contains(&("exit_policy", 3)), "{c:?}");
        assert!(c.contains(&("stream_limit", 3)), "{c:?}");
        assert!(c.contains(&("resolve", 0)), "{c:?}");
    }

    #[test]
    fn connect_errors_map_to_reasons() {
        assert_eq!(
            Reason::of_connect(EndReason::ExitPolicy),
            Reason::ExitPolicy
        );
        assert_eq!(
            Reason::of_connect(EndReason::ResolveFailed),
            Reason::Resolve
        );
        assert_eq!(
            Reason::of_connect(EndReason::NoRoute),
            Reason::ConnectFailed
        );
        assert_eq!(Reason::of_connect(EndReason::Timeout), Reason::Timeout);
    }
}
