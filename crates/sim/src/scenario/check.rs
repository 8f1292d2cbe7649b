//! Semantic checks of a [`Scenario`], parsed or built in code: names,
//! topology, times, rates, loss, queues against the largest packet, TCP
//! sanity. `super::build` uses the per-value checks here too, so that a
//! file and a scenario built in code get the same messages.

use super::raw::{indexed, named};
use super::{capture_ifaces, e, list, ScenarioError, R};
use crate::spec::{DirSpec, FlowSpec, Limit, NodeKind, QueueSpec, Scenario, Traffic};
use hopwise_config::{blank, did_you_mean, loss_problem, rate_problem};
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::Dur;
use std::collections::HashMap;

/// IPv4 + TCP headers without options: a full-sized packet is `mss + 40` bytes
/// (with timestamps the payload shrinks by the option's 12 bytes).
const HEADERS: u64 = 40;

pub(super) fn share_problem(x: f64) -> Option<String> {
    (!(x > 0.0 && x <= 1.0))
        .then(|| format!("must be in (0, 1] (a fraction of the link rate), got {x}"))
}

/// The largest MSS an IPv4 packet can carry: 65535 − 20 (IPv4) − 20 (TCP).
const MAX_MSS: u16 = 65_495;

/// An MSS outside 64–[`MAX_MSS`].
pub(super) fn mss_problem(mss: u64) -> Option<String> {
    if mss < 64 {
        return Some(format!("must be at least 64 bytes, got {mss}"));
    }
    if mss > u64::from(MAX_MSS) {
        return Some(format!(
            "must be at most {MAX_MSS} bytes (an IPv4 packet holds 65535 bytes, headers included), got {mss}"
        ));
    }
    None
}

/// TCP configuration sanity: the offending field and what is wrong.
pub(super) fn tcp_problem(c: &TcpConfig) -> Option<(&'static str, String)> {
    let mss = u64::from(c.mss);
    if let Some(m) = mss_problem(mss) {
        return Some(("mss", m));
    }
    if c.send_buffer < mss {
        return Some((
            "send_buffer",
            format!(
                "{} B is smaller than one segment (mss = {mss} B)",
                c.send_buffer
            ),
        ));
    }
    if c.recv_buffer < mss {
        return Some((
            "recv_buffer",
            format!(
                "{} B is smaller than one segment (mss = {mss} B)",
                c.recv_buffer
            ),
        ));
    }
    if c.initial_window == 0 {
        return Some(("initial_window", "must be at least 1 segment".to_string()));
    }
    if c.dupthresh == 0 {
        return Some(("dupthresh", "must be at least 1".to_string()));
    }
    if c.min_rto.is_zero() {
        return Some(("min_rto", "must be positive".to_string()));
    }
    if c.max_rto < c.min_rto {
        return Some((
            "max_rto",
            format!(
                "{} is below min_rto = {} (a min_rto raised above the default max_rto needs max_rto set too)",
                c.max_rto, c.min_rto
            ),
        ));
    }
    if c.timestamps && c.ts_tick.is_zero() {
        return Some((
            "ts_tick",
            "must be positive when timestamps are on".to_string(),
        ));
    }
    if c.delayed_ack && c.delack_timeout.is_zero() {
        return Some((
            "delack_timeout",
            "must be positive when delayed_ack is on (set delayed_ack = false to acknowledge every segment)"
                .to_string(),
        ));
    }
    None
}

pub(super) fn queue_problem(q: &QueueSpec, max_pkt: u64) -> Option<(String, String)> {
    let too_small = |n: u64| {
        format!(
            "{n} B cannot hold one full-sized packet ({max_pkt} B = mss + 40 B of headers): \
             every data packet would be dropped"
        )
    };
    let lim = |sub: &str, l: Limit| -> Option<(String, String)> {
        if let Some(m) = Limit::problem(l) {
            return Some((sub.to_string(), m));
        }
        match l {
            Limit::Bytes(n) if n < max_pkt => Some((sub.to_string(), too_small(n))),
            _ => None,
        }
    };
    match q {
        QueueSpec::DropTail { limit } => lim("", *limit),
        QueueSpec::AckFirst {
            data_share,
            throttle,
            ack_limit,
            data_limit,
            ..
        } => {
            if let Some(m) = share_problem(*data_share) {
                return Some((".data_share".into(), m));
            }
            if let Some(m) = share_problem(*throttle) {
                return Some((".throttle".into(), m));
            }
            if let Some(m) = Limit::problem(*ack_limit) {
                return Some((".ack_limit".into(), m));
            }
            lim(".data_limit", *data_limit)
        }
        QueueSpec::TokenBucket { rate, burst, limit } => {
            if let Some(m) = rate_problem(*rate) {
                return Some((".rate".into(), m));
            }
            if *burst < max_pkt {
                return Some((
                    ".burst".into(),
                    format!(
                        "a burst of {burst} B is smaller than one full-sized packet ({max_pkt} B = mss + 40 B): \
                         the shaper could never send it"
                    ),
                ));
            }
            lim(".limit", *limit)
        }
        QueueSpec::Codel {
            target,
            interval,
            limit,
            ..
        } => codel_problem(*target, *interval).or_else(|| lim(".limit", *limit)),
        QueueSpec::FqCodel {
            target,
            interval,
            limit,
            flows,
            quantum,
            ..
        } => codel_problem(*target, *interval)
            .or_else(|| {
                (*flows == 0).then(|| (".flows".into(), "needs at least one flow queue".into()))
            })
            .or_else(|| {
                (*quantum == 0).then(|| {
                    (
                        ".quantum".into(),
                        "must be positive: a quantum of 0 B never sends".into(),
                    )
                })
            })
            .or_else(|| lim(".limit", *limit)),
        QueueSpec::Pie {
            target,
            tupdate,
            alpha,
            beta,
            limit,
            ..
        } => positive(".target", *target)
            .or_else(|| positive(".tupdate", *tupdate))
            .or_else(|| gain_problem(".alpha", *alpha))
            .or_else(|| gain_problem(".beta", *beta))
            .or_else(|| lim(".limit", *limit)),
        QueueSpec::Red {
            min_th,
            max_th,
            max_p,
            weight,
            limit,
            ..
        } => red_problem(*min_th, *max_th, *max_p, *weight).or_else(|| lim(".limit", *limit)),
    }
}

/// `key` must be a positive duration.
fn positive(key: &str, d: Dur) -> Option<(String, String)> {
    d.is_zero()
        .then(|| (key.to_string(), "must be a positive duration".to_string()))
}

fn codel_problem(target: Dur, interval: Dur) -> Option<(String, String)> {
    positive(".target", target)
        .or_else(|| positive(".interval", interval))
        .or_else(|| {
            (target >= interval).then(|| {
                (
                    ".target".into(),
                    format!(
                        "a target of {target} is not below the interval of {interval}: CoDel's \
                         target is a small fraction (RFC 8289 suggests 5-10 %) of its interval"
                    ),
                )
            })
        })
}

fn gain_problem(key: &str, x: f64) -> Option<(String, String)> {
    (!(x.is_finite() && x >= 0.0)).then(|| {
        (
            key.to_string(),
            format!("must be a gain (Hz) of 0 or more, got {x}"),
        )
    })
}

fn red_problem(min_th: Limit, max_th: Limit, max_p: f64, w: f64) -> Option<(String, String)> {
    if let Some(m) = Limit::problem(min_th) {
        return Some((".min_th".into(), m.replace("queue limit", "threshold")));
    }
    let (lo, hi) = match (min_th, max_th) {
        (Limit::Packets(a), Limit::Packets(b)) | (Limit::Bytes(a), Limit::Bytes(b)) => (a, b),
        _ => {
            return Some((
                ".max_th".into(),
                "must count in the unit of min_th (both packets, \"15pkt\", or both bytes, \
                 \"22500B\")"
                    .into(),
            ))
        }
    };
    if hi <= lo {
        return Some((
            ".max_th".into(),
            format!("must be above min_th ({lo}), got {hi}"),
        ));
    }
    if !(max_p > 0.0 && max_p <= 1.0) {
        return Some((
            ".max_p".into(),
            format!("must be a probability in (0, 1], got {max_p}"),
        ));
    }
    if !(w > 0.0 && w <= 1.0) {
        return Some((
            ".weight".into(),
            format!("must be in (0, 1] (Floyd and Jacobson suggest 0.002), got {w}"),
        ));
    }
    None
}

/// The largest full-sized packet of any flow (`mss + 40` bytes), which every
/// queue must hold; 1500 B without flows.
pub(super) fn max_packet(flows: &[FlowSpec]) -> u64 {
    flows
        .iter()
        .map(|f| u64::from(f.tcp.mss) + HEADERS)
        .max()
        .unwrap_or(1500)
}

fn dir_problem(d: &DirSpec, max_pkt: u64) -> Option<(String, String)> {
    if let Some(m) = rate_problem(d.rate) {
        return Some(("rate".into(), m));
    }
    if let Some(m) = loss_problem(d.loss) {
        return Some(("loss".into(), m));
    }
    queue_problem(&d.queue, max_pkt).map(|(sub, m)| (format!("queue{sub}"), m))
}

/// Semantic checks of a scenario, whether parsed or built in code: names,
/// topology (known endpoints, hosts at flow ends, connectivity), times,
/// rates, loss probabilities, queue limits and TCP sanity. `origin` names
/// the scenario in errors.
pub fn validate(s: &Scenario, origin: &str) -> Result<(), ScenarioError> {
    check(s).map_err(|x| x.in_file(origin))
}

/// Names end up in CSV cells and capture file names: no commas, quotes,
/// path separators or control characters.
fn name_problem(name: &str) -> Option<String> {
    let bad = name
        .chars()
        .find(|c| matches!(c, ',' | '"' | '/' | '\\') || c.is_control())?;
    Some(format!(
        "{name:?} contains {bad:?}; names appear in CSV files and file names, so use \
         letters, digits and characters such as - _ . :"
    ))
}

/// Memory the sampled series of one run may take (cwnd and queue traces,
/// goodput bins): a scenario that would need more is refused.
pub const TRACE_BUDGET: u64 = 2 << 30;

fn check(s: &Scenario) -> R<()> {
    if s.duration.is_zero() {
        return Err(e("duration", "must be positive"));
    }
    let m = &s.measure;
    let ends = [
        ("start_jitter", s.start_jitter, ""),
        ("measure.warmup", m.warmup, ": nothing would be measured"),
    ];
    if let Some((key, d, so)) = ends.into_iter().find(|&(_, d, _)| d >= s.duration) {
        let m = format!("{d} is not shorter than the duration ({}){so}", s.duration);
        return Err(e(key, m));
    }
    if m.goodput_interval.is_zero() {
        return Err(e("measure.goodput_interval", "must be positive"));
    }
    if m.trace_interval.is_zero() {
        return Err(e("measure.trace_interval", "must be positive"));
    }
    // Series kept in memory for the whole run: every trace sample holds its
    // time, 32 B per TCP sender (cwnd, ssthresh, SRTT, pipe; at most two per
    // flow) and 16 B per link direction's queue; every goodput bin 8 B per
    // flow direction.
    let (flows, dirs) = (s.flows.len() as u64, 2 * s.links.len() as u64);
    let series = [
        (
            "measure.trace_interval",
            m.trace_interval,
            8 + 64 * flows + 16 * dirs,
        ),
        ("measure.goodput_interval", m.goodput_interval, 16 * flows),
    ];
    for (key, iv, bytes) in series {
        let samples = (s.duration.as_nanos() / iv.as_nanos()).saturating_add(1);
        if samples.saturating_mul(bytes) > TRACE_BUDGET {
            // (D/iv + 1)·b ≤ B holds for iv ≥ D·b / (B − b).
            let (d, b, budget) = (
                u128::from(s.duration.as_nanos()),
                u128::from(bytes),
                u128::from(TRACE_BUDGET),
            );
            let need = (b < budget).then(|| (d * b).div_ceil(budget - b));
            let advice = match need.filter(|&ns| ns < d) {
                Some(ns) => {
                    let ns = ns as u64;
                    // Rounded up to a whole unit, so that the suggestion reads well.
                    let unit = [1_000_000_000, 1_000_000, 1_000, 1]
                        .into_iter()
                        .find(|u| ns >= 10 * u)
                        .unwrap_or(1);
                    format!(
                        "use an interval of at least {}",
                        Dur::from_nanos((ns / unit + 1) * unit)
                    )
                }
                None => format!(
                    "no interval fits: each sample takes {bytes} B for this many flows and links"
                ),
            };
            return Err(e(
                key,
                format!(
                    "{iv} gives {samples} samples over the {} run, about {:.1} GiB of \
                     traces in memory (the limit is {} GiB); {advice}",
                    s.duration,
                    samples as f64 * bytes as f64 / (1u64 << 30) as f64,
                    TRACE_BUDGET >> 30
                ),
            ));
        }
    }

    // Nodes.
    // An overlay may generate every node it needs.
    if s.nodes.is_empty() && s.overlay.is_empty() {
        return Err(e(
            "node",
            "no nodes defined; declare hosts and switches with [[node]]",
        ));
    }
    let mut node_ix: HashMap<&str, usize> = HashMap::new();
    for (i, n) in s.nodes.iter().enumerate() {
        if let Some(m) = blank(&n.name).or_else(|| name_problem(&n.name)) {
            return Err(e(format!("node[{i}].name"), m));
        }
        if let Some(&j) = node_ix.get(n.name.as_str()) {
            return Err(e(
                format!("{}.name", indexed("node", i, &n.name)),
                format!("duplicate node name {:?} (also node[{j}])", n.name),
            ));
        }
        node_ix.insert(&n.name, i);
    }
    let node_names: Vec<&str> = s.nodes.iter().map(|n| n.name.as_str()).collect();
    let unknown_node = |name: &str| {
        format!(
            "unknown node {name:?}{} (nodes: {})",
            did_you_mean(name, &node_names),
            list(&node_names)
        )
    };

    let max_pkt = max_packet(&s.flows);

    // Links, and connectivity (union-find over node indexes).
    let mut parent: Vec<usize> = (0..s.nodes.len()).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let mut link_ix: HashMap<&str, usize> = HashMap::new();
    for (i, l) in s.links.iter().enumerate() {
        let p = indexed("link", i, &l.name);
        if let Some(m) = blank(&l.name).or_else(|| name_problem(&l.name)) {
            return Err(e(format!("link[{i}].name"), m));
        }
        if let Some(&j) = link_ix.get(l.name.as_str()) {
            return Err(e(
                format!("{p}.name"),
                format!(
                    "duplicate link name {:?} (also link[{j}]); give one of them another `name`",
                    l.name
                ),
            ));
        }
        link_ix.insert(&l.name, i);
        let a = *node_ix
            .get(l.a.as_str())
            .ok_or_else(|| e(format!("{p}.a"), unknown_node(&l.a)))?;
        let b = *node_ix
            .get(l.b.as_str())
            .ok_or_else(|| e(format!("{p}.b"), unknown_node(&l.b)))?;
        if a == b {
            return Err(e(
                format!("{p}.b"),
                format!(
                    "a link must connect two different nodes (both ends are {:?})",
                    l.a
                ),
            ));
        }
        for (d, spec) in [("ab", &l.ab), ("ba", &l.ba)] {
            if let Some((k, m)) = dir_problem(spec, max_pkt) {
                return Err(e(format!("{p}.{d}.{k}"), m));
            }
        }
        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
        parent[ra] = rb;
    }

    // Flows.
    if s.flows.is_empty() && s.overlay.is_empty() {
        return Err(e(
            "flow",
            "no flows defined; add a [[flow]] (from, to, cc), or an overlay: [[circuit]], \
             [swarm] or [[otcp]]",
        ));
    }
    let mut flow_ix: HashMap<&str, usize> = HashMap::new();
    for (i, f) in s.flows.iter().enumerate() {
        if let Some(m) = blank(&f.name).or_else(|| name_problem(&f.name)) {
            return Err(e(format!("flow[{i}].name"), m));
        }
        if f.name.contains('*') {
            return Err(e(
                format!("flow[{i}].name"),
                format!(
                    "{:?} contains '*', which is reserved for flow names: `hopwise sweep` \
                     calls the sum over a count entry's replicas NAME-*",
                    f.name
                ),
            ));
        }
        let p = named("flow", &f.name);
        if flow_ix.insert(&f.name, i).is_some() {
            return Err(e(
                format!("{p}.name"),
                format!(
                    "duplicate flow name {:?} (a flow with count = N is expanded into <name>-0 … <name>-<N-1>)",
                    f.name
                ),
            ));
        }
        let ends = [("from", &f.from), ("to", &f.to)];
        let mut ix = [0usize; 2];
        for (slot, (k, n)) in ix.iter_mut().zip(ends) {
            *slot = *node_ix
                .get(n.as_str())
                .ok_or_else(|| e(format!("{p}.{k}"), unknown_node(n)))?;
        }
        if ix[0] == ix[1] {
            return Err(e(
                format!("{p}.to"),
                format!(
                    "same as from ({:?}): a flow needs two different hosts",
                    f.from
                ),
            ));
        }
        for ((k, n), &x) in ends.iter().zip(&ix) {
            if s.nodes[x].kind == NodeKind::Switch {
                return Err(e(
                    format!("{p}.{k}"),
                    format!("{n:?} is a switch; flows run between hosts (kind = \"host\")"),
                ));
            }
        }
        if root(&mut parent, ix[0]) != root(&mut parent, ix[1]) {
            return Err(e(
                format!("{p}.to"),
                format!(
                    "no path from {:?} to {:?}: no chain of [[link]]s connects them",
                    f.from, f.to
                ),
            ));
        }
        if f.start >= s.duration {
            return Err(e(
                format!("{p}.start"),
                format!(
                    "the flow starts at {}, at or after the end of the simulation (duration = {})",
                    f.start, s.duration
                ),
            ));
        }
        if let Some(stop) = f.stop {
            if stop <= f.start {
                return Err(e(
                    format!("{p}.stop"),
                    format!("must be after start: stop = {stop}, start = {}", f.start),
                ));
            }
        }
        if f.traffic == Traffic::Fixed(0) {
            return Err(e(format!("{p}.size"), "must be positive"));
        }
        if let Some((k, m)) = tcp_problem(&f.tcp) {
            return Err(e(format!("{p}.tcp.{k}"), m));
        }
    }
    capture_ifaces(s, &s.measure.capture).map_err(|m| e("measure.capture", m))?;
    if s.measure.capture_snaplen < crate::pcap::MIN_SNAPLEN {
        return Err(e(
            "measure.capture_snaplen",
            format!(
                "{} B cannot hold an IPv4 and a TCP header (at least {})",
                s.measure.capture_snaplen,
                crate::pcap::MIN_SNAPLEN
            ),
        ));
    }
    Ok(())
}
