//! What one run of a sweep measured: its samples (the flows' and links'
//! metrics, the sums over the flows `count` replicated, latency per flow),
//! and how the sweep notices runs and points that measured the same.

use super::axes::{label, Axis, Point};
use hopwise_sim::report::Summary;
use hopwise_sim::spec::FlowSpec;
use std::collections::HashMap;

/// One measured value of a run.
#[derive(Clone, Debug)]
pub(super) struct Sample {
    pub(super) metric: &'static str,
    pub(super) subject: String,
    pub(super) value: f64,
}

/// What one run measured. `flows` are the scenario's flows: those that
/// `count` expanded into `<name>-0` … are also summed, as subject
/// `<name>-*` (and `<name>-*/rev` for the reverse direction of `bidir`
/// flows), so that a sweep over `count` has one series to plot.
pub(super) fn samples(s: &Summary, flows: &[FlowSpec]) -> Vec<Sample> {
    let mut v = Vec::new();
    let group_of: HashMap<&str, &str> = flows
        .iter()
        .filter_map(|x| x.group.as_deref().map(|g| (x.name.as_str(), g)))
        .collect();
    let mut groups: Vec<(String, [f64; 3])> = Vec::new();
    for f in &s.flows {
        let (base, rev) = match f.name.strip_suffix("/rev") {
            Some(b) => (b, "/rev"),
            None => (f.name.as_str(), ""),
        };
        if let Some(g) = group_of.get(base) {
            let key = format!("{g}-*{rev}");
            let add = [f.goodput_bps, f.bytes_delivered as f64, f.timeouts as f64];
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, sum)) => sum.iter_mut().zip(add).for_each(|(a, b)| *a += b),
                None => groups.push((key, add)),
            }
        }
    }
    for f in &s.flows {
        v.push(Sample {
            metric: "goodput_bps",
            subject: f.name.clone(),
            value: f.goodput_bps,
        });
        v.push(Sample {
            metric: "bytes_delivered",
            subject: f.name.clone(),
            value: f.bytes_delivered as f64,
        });
        v.push(Sample {
            metric: "timeouts",
            subject: f.name.clone(),
            value: f.timeouts as f64,
        });
        // Latency per flow (not summed over replicas: a sum of delays
        // means nothing); a flow without samples has none.
        for (&metric, value) in LATENCY_METRICS.iter().zip(latency(f)) {
            if let Some(value) = value {
                v.push(Sample {
                    metric,
                    subject: f.name.clone(),
                    value,
                });
            }
        }
    }
    for (key, [goodput, bytes, timeouts]) in groups {
        for (metric, value) in [
            ("goodput_bps", goodput),
            ("bytes_delivered", bytes),
            ("timeouts", timeouts),
        ] {
            v.push(Sample {
                metric,
                subject: key.clone(),
                value,
            });
        }
    }
    v.push(Sample {
        metric: "bytes_delivered",
        subject: "all flows".into(),
        value: s.flows.iter().map(|f| f.bytes_delivered as f64).sum(),
    });
    if let Some(j) = s.jain {
        v.push(Sample {
            metric: "jain",
            subject: "all flows".into(),
            value: j,
        });
    }
    for l in &s.links {
        for (metric, value) in [
            ("utilization", l.utilization),
            ("mean_queue_packets", l.mean_queue_packets),
            ("loss_rate", l.loss_rate),
        ] {
            v.push(Sample {
                metric,
                subject: l.name.clone(),
                value,
            });
        }
    }
    v
}

/// The latency metrics a sweep keeps per flow, in the order of [`latency`].
const LATENCY_METRICS: [&str; 8] = [
    "rtt_mean_ms",
    "rtt_median_ms",
    "rtt_p95_ms",
    "rtt_p99_ms",
    "queue_delay_mean_ms",
    "queue_delay_median_ms",
    "queue_delay_p95_ms",
    "queue_delay_p99_ms",
];

/// A flow's latency summary, in the order of [`LATENCY_METRICS`].
fn latency(f: &hopwise_sim::report::FlowSummary) -> [Option<f64>; 8] {
    [
        f.rtt_mean_ms,
        f.rtt_median_ms,
        f.rtt_p95_ms,
        f.rtt_p99_ms,
        f.queue_delay_mean_ms,
        f.queue_delay_median_ms,
        f.queue_delay_p95_ms,
        f.queue_delay_p99_ms,
    ]
}

/// The metric named `name`, as the `&'static str` a [`Sample`] holds: for
/// samples read back from a shard's file. Each name is allocated once, and
/// kept: there are a few dozen.
pub(super) fn metric_name(name: &str) -> &'static str {
    static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.iter().find(|n| **n == name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.push(n);
    n
}

/// Whether two runs measured exactly the same values.
pub(super) fn same(a: &[Sample], b: &[Sample]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.metric == y.metric && x.subject == y.subject && x.value.to_bits() == y.value.to_bits()
        })
}

/// A 64-bit hash of a run's values, to find points that measured the same
/// without keeping every point's values (two different runs share one with
/// a chance of about 1 in 10^19 per pair).
pub(super) fn fingerprint(run: &[Sample]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for x in run {
        x.metric.hash(&mut h);
        x.subject.hash(&mut h);
        x.value.to_bits().hash(&mut h);
    }
    h.finish()
}

/// Warnings about results that look like a mistake: seeds that change
/// nothing (no randomness in the scenario, so the intervals are 0; `flat`
/// points had all seeds identical), and points with different values but
/// identical results (a key that does not take effect), found through the
/// [`fingerprint`] of each point's first run.
pub(super) fn sameness(
    axes: &[Axis],
    points: &[Point],
    seeds: usize,
    flat: usize,
    first_runs: &[u64],
) -> Vec<String> {
    let mut w = Vec::new();
    if seeds > 1 {
        if flat == points.len() {
            w.push(format!(
                "all {seeds} seeds gave identical results at every point, so the intervals are 0: \
                 the scenario has no randomness (give flows a start_jitter or links a loss)"
            ));
        } else if flat > 0 {
            w.push(format!(
                "at {flat} of {} points all {seeds} seeds gave identical results",
                points.len()
            ));
        }
    }
    let mut by_hash: std::collections::BTreeMap<u64, Vec<usize>> = Default::default();
    for (i, &h) in first_runs.iter().enumerate() {
        by_hash.entry(h).or_default().push(i);
    }
    // How many pairs of points agree, and the first three of them: only
    // those are shown, so each group (indices ascending) gives at most its
    // three first pairs rather than all of them (a key without effect on a
    // long axis makes every pair of its points agree).
    let mut n_pairs: u128 = 0;
    let mut pairs = Vec::new();
    for group in by_hash.values() {
        let n = group.len() as u128;
        n_pairs += n * n.saturating_sub(1) / 2;
        let lex = group
            .iter()
            .enumerate()
            .flat_map(|(k, &j)| group[k + 1..].iter().map(move |&i| (j, i)));
        pairs.extend(lex.take(3));
    }
    pairs.sort_unstable();
    if n_pairs > 0 {
        let shown: Vec<String> = pairs
            .iter()
            .take(3)
            .map(|&(a, b)| {
                format!(
                    "{} and {}",
                    label(axes, &points[a]),
                    label(axes, &points[b])
                )
            })
            .collect();
        w.push(format!(
            "{} gave identical results ({}{}): check that the varied key takes effect \
             (a direction's own value, e.g. link.X.ab.queue, overrides link.X.queue)",
            if n_pairs == 1 { "two points" } else { "points" },
            shown.join("; "),
            if n_pairs > 3 {
                format!("; {} more pairs", n_pairs - 3)
            } else {
                String::new()
            }
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Points that agree are counted, not listed: a key without effect on
    /// a long axis makes every pair agree, and only three pairs are shown.
    #[test]
    fn identical_points_are_counted_not_listed() {
        let n = 3000;
        let axes = vec![Axis {
            key: "k".into(),
            values: (0..n).map(|i| i.to_string()).collect(),
        }];
        let points: Vec<Point> = (0..n).map(|i| vec![i.to_string()]).collect();
        // Points 0..n-1 agree, except the last, which agrees with nobody.
        let mut first = vec![7u64; n];
        first[n - 1] = 8;
        let w = sameness(&axes, &points, 1, 0, &first);
        let pairs = (n - 1) * (n - 2) / 2;
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("(0 and 1; 0 and 2; 0 and 3;")
                && w[0].contains(&format!("{} more pairs", pairs - 3)),
            "{}",
            w[0]
        );
        let w = sameness(&axes[..], &points[..2], 1, 0, &[1, 1]);
        assert!(
            w[0].starts_with("two points gave identical results (0 and 1)"),
            "{w:?}"
        );
    }
}
