//! Scenario files: every example parses, every error class names the file,
//! the key path and the problem, overrides work, and nothing panics.

use hopwise_proto::cc::{CcConfig, ParamValue};
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::scenario::{load, parse, validate, ScenarioError};
use hopwise_sim::spec::{AckClassifier, Limit, NodeKind, QueueSpec, Scenario, Traffic};
use proptest::prelude::*;
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

const FILE: &str = "test.toml";

/// A small valid dumbbell: h1 - r1 = r2 - h2, flows f1 (NewReno) and f2 (LEDBAT).
const BASE: &str = r#"
duration = "60s"

[defaults.link]
rate = "1Gbit"
delay = "1ms"

[[node]]
name = "h1"
[[node]]
name = "r1"
kind = "switch"
[[node]]
name = "r2"
kind = "switch"
[[node]]
name = "h2"

[[link]]
a = "h1"
b = "r1"

[[link]]
name = "bottleneck"
a = "r1"
b = "r2"
rate = "10Mbit"
delay = "8ms"
queue = "17pkt"

[[link]]
a = "r2"
b = "h2"

[[flow]]
name = "f1"
from = "h1"
to = "h2"
cc = "newreno"

[[flow]]
name = "f2"
from = "h1"
to = "h2"
cc = "ledbat"
start = "1s"
"#;

fn ok(text: &str) -> Scenario {
    match parse(text, FILE, &[]) {
        Ok(s) => s,
        Err(e) => panic!("expected success, got: {e}"),
    }
}

fn ok_with(overrides: &[&str]) -> Scenario {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match parse(BASE, FILE, &o) {
        Ok(s) => s,
        Err(e) => panic!("expected success with {overrides:?}, got: {e}"),
    }
}

/// BASE with one substring replaced (which must occur exactly once).
fn edit(from: &str, to: &str) -> String {
    assert_eq!(
        BASE.matches(from).count(),
        1,
        "`{from}` must occur once in BASE"
    );
    BASE.replacen(from, to, 1)
}

/// Parses `text`, expects an error whose key contains `key` and whose
/// message contains every phrase; the displayed error names the file.
#[track_caller]
fn fails(text: &str, key: &str, phrases: &[&str]) -> ScenarioError {
    fails_with(text, &[], key, phrases)
}

#[track_caller]
fn fails_with(text: &str, overrides: &[&str], key: &str, phrases: &[&str]) -> ScenarioError {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let e = match parse(text, FILE, &o) {
        Ok(_) => panic!("expected an error at `{key}`, but it parsed"),
        Err(e) => e,
    };
    let shown = e.to_string();
    assert_eq!(e.file, FILE);
    assert!(shown.starts_with(&format!("{FILE}: ")), "{shown}");
    assert!(
        e.key.contains(key),
        "key `{}` lacks `{key}`: {shown}",
        e.key
    );
    for p in phrases {
        assert!(e.message.contains(p), "message lacks `{p}`: {shown}");
    }
    e
}

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn scenario_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scenarios_dir())
        .expect("scenarios/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

/// Sum of one-way delays along the (unique in our examples) shortest-hop path.
fn base_rtt(s: &Scenario, from: &str, to: &str) -> Dur {
    let mut adj: HashMap<&str, Vec<(&str, Dur)>> = HashMap::new();
    for l in &s.links {
        adj.entry(&l.a).or_default().push((&l.b, l.ab.delay));
        adj.entry(&l.b).or_default().push((&l.a, l.ba.delay));
    }
    let mut dist: HashMap<&str, Dur> = HashMap::from([(from, Dur::ZERO)]);
    let mut q = VecDeque::from([from]);
    while let Some(n) = q.pop_front() {
        let d = dist[n];
        for &(m, w) in adj.get(n).map(|v| v.as_slice()).unwrap_or(&[]) {
            if !dist.contains_key(m) {
                dist.insert(m, d + w);
                q.push_back(m);
            }
        }
    }
    dist[to] * 2
}

fn link<'a>(s: &'a Scenario, name: &str) -> &'a hopwise_sim::spec::LinkSpec {
    s.links
        .iter()
        .find(|l| l.name == name)
        .expect("link exists")
}

// ---------------------------------------------------------------------------
// The example scenarios
// ---------------------------------------------------------------------------

#[test]
fn every_example_scenario_parses_and_validates() {
    let files = scenario_files();
    assert!(
        files.len() >= 9,
        "expected the nine examples, found {files:?}"
    );
    for f in files {
        let s = load(&f, &[]).unwrap_or_else(|e| panic!("{e}"));
        validate(&s, &f.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            text.starts_with('#'),
            "{}: starts with a header comment",
            f.display()
        );
    }
}

#[test]
fn example_numbers_are_right() {
    let get = |n: &str| load(&scenarios_dir().join(n), &[]).unwrap_or_else(|e| panic!("{e}"));

    let s = get("newreno-single.toml");
    assert_eq!(s.flows.len(), 1);
    assert_eq!(s.duration, Dur::from_secs(60));
    assert_eq!(s.measure.warmup, Dur::from_secs(5));
    assert_eq!(base_rtt(&s, "h1", "h2"), Dur::from_millis(20));
    let b = link(&s, "bottleneck");
    assert_eq!(b.ab.rate, Rate::from_mbps(10));
    assert_eq!(
        b.ab.queue,
        QueueSpec::DropTail {
            limit: Limit::Packets(17)
        }
    );
    assert_eq!(s.flows[0].cc, CcConfig::NewReno);

    let s = get("newreno-two-flows.toml");
    assert_eq!(s.flows.len(), 2);
    assert_eq!(s.duration, Dur::from_secs(120));
    assert!(!s.start_jitter.is_zero());
    let r: Vec<Dur> = s
        .flows
        .iter()
        .map(|f| base_rtt(&s, &f.from, &f.to))
        .collect();
    assert_eq!(r, vec![Dur::from_millis(20); 2]);

    let s = get("ledbat-single.toml");
    assert_eq!(s.flows[0].cc.name(), "ledbat");
    assert_eq!(base_rtt(&s, "h1", "h2"), Dur::from_millis(50));
    let b = link(&s, "bottleneck");
    assert_eq!(b.ab.rate, Rate::from_mbps(1));
    assert_eq!(
        b.ab.queue,
        QueueSpec::DropTail {
            limit: Limit::Packets(100)
        }
    );
    assert_eq!(s.duration, Dur::from_secs(120));

    let s = get("newreno-vs-ledbat.toml");
    let names: Vec<&str> = s.flows.iter().map(|f| f.cc.name()).collect();
    assert_eq!(names, ["newreno", "ledbat"]);
    assert!(s.flows.iter().all(|f| f.start == Dur::ZERO));

    let s = get("vegas-single.toml");
    let mut vegas = CcConfig::from_name("vegas").unwrap();
    vegas.set("alpha", ParamValue::Num(2.0)).unwrap();
    vegas.set("beta", ParamValue::Num(4.0)).unwrap();
    assert_eq!(s.flows[0].cc, vegas);
    assert_eq!(base_rtt(&s, "h1", "h2"), Dur::from_millis(50));
    assert_eq!(link(&s, "bottleneck").ab.rate, Rate::from_mbps(10));

    let s = get("scale.toml");
    assert_eq!(s.flows.len(), 100);
    for (i, f) in s.flows.iter().enumerate() {
        assert_eq!(f.start, Dur::from_millis(10 * i as u64));
        assert_eq!(f.cc, CcConfig::NewReno);
        assert!(f.tcp.sack && f.tcp.delayed_ack);
        assert_eq!(base_rtt(&s, &f.from, &f.to), Dur::from_millis(20));
    }
    let b = link(&s, "bottleneck");
    assert_eq!(b.ab.rate, Rate::from_mbps(100));
    assert_eq!(
        b.ab.queue,
        QueueSpec::DropTail {
            limit: Limit::Packets(167)
        }
    );

    let s = get("asymmetric-pendulum.toml");
    let adsl = link(&s, "adsl");
    assert_eq!(adsl.ab.rate, Rate::from_kbps(2400));
    assert_eq!(adsl.ba.rate, Rate::from_kbps(196));
    assert_eq!(
        adsl.ab.queue,
        QueueSpec::DropTail {
            limit: Limit::Bytes(30_000)
        }
    );
    assert_eq!(
        adsl.ba.queue,
        QueueSpec::DropTail {
            limit: Limit::Bytes(30_000)
        }
    );
    let up = s.flows.iter().find(|f| f.name == "upload").unwrap();
    assert_eq!(
        (up.start, up.stop),
        (Dur::from_secs(30), Some(Dur::from_secs(50)))
    );

    let s = get("overlay-ackprio.toml");
    assert_eq!(s.duration, Dur::from_secs(300));
    assert!(s.flows.iter().all(|f| f.cc.name() == "cubic"));
    assert!(matches!(
        link(&s, "B-sw").ab.queue,
        QueueSpec::AckFirst {
            classifier: AckClassifier::NoPayload,
            ..
        }
    ));

    let s = get("lossy-link.toml");
    let l = &s.links[0];
    assert_eq!((l.ab.loss, l.ba.loss), (0.01, 0.0));
    assert!(!s.flows[0].tcp.sack);
}

#[test]
fn documented_example_parses() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scenario-format.md"),
    )
    .expect("docs/scenario-format.md exists");
    let start = doc.find("```toml\n").expect("a toml block") + "```toml\n".len();
    let len = doc[start..].find("```").expect("closed block");
    let s = parse(&doc[start..start + len], "docs/scenario-format.md", &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = s.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["reno", "bg-0", "bg-1", "bg-2", "bg-3", "download"]);
    assert_eq!(s.flows[4].start, Dur::from_secs(13));
    let b = link(&s, "bottleneck");
    assert_eq!(
        (b.ab.rate, b.ba.rate),
        (Rate::from_mbps(10), Rate::from_mbps(1))
    );
    assert_eq!(
        b.ba.queue,
        QueueSpec::DropTail {
            limit: Limit::Bytes(30_000)
        }
    );
    assert_eq!(s.flows[5].traffic, Traffic::Fixed(10_000_000));
}

#[test]
fn base_scenario_maps_onto_the_spec() {
    let s = ok(BASE);
    assert_eq!(s.name, "test"); // the file stem
    assert_eq!(s.seed, 1);
    assert_eq!(s.start_jitter, Dur::ZERO);
    assert_eq!(s.nodes[1].kind, NodeKind::Switch);
    assert_eq!(s.nodes[0].kind, NodeKind::Host);
    assert_eq!(s.links[0].name, "h1-r1");
    assert_eq!(
        s.links[0].ab.queue,
        QueueSpec::DropTail {
            limit: Limit::Packets(1000)
        }
    );
    assert_eq!(s.links[0].ab.loss, 0.0);
    assert_eq!(s.links[1].ba.delay, Dur::from_millis(8));
    assert_eq!(s.flows[0].traffic, Traffic::Bulk);
    assert_eq!(s.flows[0].stop, None);
    assert!(!s.flows[0].bidir);
    assert_eq!(s.measure.goodput_interval, Dur::SECOND);
    assert_eq!(s.measure.trace_interval, Dur::from_millis(100));
}

#[test]
fn queue_tables_and_flow_options() {
    let s = ok(&edit(
        "queue = \"17pkt\"",
        "queue = \"64kB\"\n  [link.ab]\n  queue = { type = \"ackfirst\", classifier = \"len64\", throttle = 0.9 }\n  [link.ba]\n  queue = { type = \"tbf\", rate = \"1Mbit\", burst = \"3000B\", limit = \"50pkt\" }",
    ));
    let b = &s.links[1];
    assert_eq!(
        b.ab.queue,
        QueueSpec::AckFirst {
            classifier: AckClassifier::Len64,
            data_share: 0.9,
            throttle: 0.9,
            ack_limit: Limit::Packets(1000),
            data_limit: Limit::Packets(1000),
        }
    );
    assert_eq!(
        b.ba.queue,
        QueueSpec::TokenBucket {
            rate: Rate::from_mbps(1),
            burst: 3000,
            limit: Limit::Packets(50)
        }
    );
    let s = ok(&edit(
        "start = \"1s\"",
        "start = \"1s\"\nstop = \"30s\"\nsize = \"10MB\"\nbidir = true\ntcp = { delayed_ack = false, mss = 1000, min_rto = \"1s\", rtt_estimator = \"linux\", prr = true }\ncount = 3\nstart_step = \"2s\"",
    ));
    let names: Vec<&str> = s.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["f1", "f2-0", "f2-1", "f2-2"]);
    assert_eq!(s.flows[3].start, Dur::from_secs(5));
    assert_eq!(s.flows[3].stop, Some(Dur::from_secs(30)));
    assert_eq!(s.flows[1].traffic, Traffic::Fixed(10_000_000));
    assert!(s.flows[1].bidir && !s.flows[1].tcp.delayed_ack);
    assert_eq!(s.flows[1].tcp.mss, 1000);
    assert_eq!(s.flows[1].tcp.min_rto, Dur::SECOND);
    assert_eq!(
        s.flows[1].tcp.rtt_estimator,
        hopwise_proto::tcp::RttEstimatorKind::Linux
    );
    assert!(s.flows[1].tcp.prr);
    assert!(s.flows[0].tcp.delayed_ack, "per-flow tcp does not leak");
    assert!(!s.flows[0].tcp.prr);
    assert_eq!(
        s.flows[0].tcp.rtt_estimator,
        hopwise_proto::tcp::RttEstimatorKind::Rfc6298
    );
}

// ---------------------------------------------------------------------------
// Error classes
// ---------------------------------------------------------------------------

#[test]
fn toml_syntax_error_has_line_and_column() {
    let e = fails(
        &edit("rate = \"10Mbit\"", "rate = 10Mbit"),
        "",
        &["line 27", "column", "TOML"],
    );
    assert!(e.key.is_empty());
    assert!(
        e.message.contains("rate = \"10Mbit\""),
        "hints at quoting: {e}"
    );
}

#[test]
fn unknown_keys_suggest_near_misses() {
    fails(
        &edit("duration", "durration"),
        "durration",
        &["unknown key", "did you mean `duration`"],
    );
    fails(
        &edit("[[node]]\nname = \"h1\"", "[[nodes]]\nname = \"h1\""),
        "nodes",
        &["did you mean `node`"],
    );
    fails(
        &edit("rate = \"10Mbit\"", "rat = \"10Mbit\""),
        "link[1] \"bottleneck\".rat",
        &["did you mean `rate`", "allowed here"],
    );
    fails(
        &edit(
            "kind = \"switch\"\n[[node]]\nname = \"r2\"",
            "kind = \"switch\"\n[[node]]\nname = \"r2\"\nknd = \"switch\"",
        ),
        "node[2] \"r2\".knd",
        &["did you mean `kind`"],
    );
    fails(
        &format!("{BASE}\n[measure]\nwarmpu = \"1s\"\n"),
        "measure.warmpu",
        &["did you mean `warmup`"],
    );
    fails(
        &edit("delay = \"1ms\"", "delay = \"1ms\"\nqueu = \"10pkt\""),
        "defaults.link.queu",
        &["did you mean `queue`"],
    );
    fails(
        &edit(
            "cc = \"newreno\"",
            "cc = \"newreno\"\ntcp = { sakc = false }",
        ),
        "flow \"f1\".tcp.sakc",
        &["did you mean `sack`"],
    );
    fails(
        &edit("cc = \"newreno\"", "cc = \"newreno\"\nsack = false"),
        "flow \"f1\".sack",
        &["unknown key", "TCP options go in"],
    );
    fails(
        &edit(
            "queue = \"17pkt\"",
            "queue = { type = \"droptail\", limt = \"5pkt\" }",
        ),
        "link[1] \"bottleneck\".queue.limt",
        &["did you mean `limit`"],
    );
    fails(
        &edit("queue = \"17pkt\"", "queue = { type = \"droptial\" }"),
        "link[1] \"bottleneck\".queue.type",
        &[
            "unknown queue type",
            "did you mean `droptail`",
            "ackfirst",
            "tbf",
        ],
    );
    fails(
        &edit("queue = \"17pkt\"", "[link.ab]\nrte = \"1Mbit\""),
        "link[1] \"bottleneck\".ab.rte",
        &["did you mean `rate`"],
    );
}

/// The shared front-end's three kinds of mistake: a unit, an unknown key
/// (with the key it resembles), and a value of the wrong type. Each names
/// the file, the key path (with the entity's name) and the problem.
#[test]
fn units_unknown_keys_and_types_name_file_key_and_problem() {
    let e = fails(&edit("rate = \"10Mbit\"", "rate = \"10 Mbti\""), "", &[]);
    assert_eq!(
        e.to_string(),
        "test.toml: link[1] \"bottleneck\".rate: invalid rate: `10 Mbti`: unknown rate unit \
         `Mbti` (use bit/kbit/Mbit/Gbit, or kB/s, MB/s)"
    );

    let e = fails(&edit("delay = \"8ms\"", "dealy = \"8ms\""), "", &[]);
    assert_eq!(e.key, "link[1] \"bottleneck\".dealy");
    assert_eq!(e.suggestion.as_deref(), Some("delay"));
    assert_eq!(
        e.message,
        "unknown key; did you mean `delay`? (allowed here: name, a, b, rate, delay, queue, \
         loss, trace, gilbert_elliott, jitter, reorder, ab, ba)"
    );

    let e = fails(&edit("start = \"1s\"", "count = \"3\""), "", &[]);
    assert_eq!(
        e.to_string(),
        "test.toml: flow \"f2\".count: expected a whole number, got the string \"3\""
    );
    let e = fails(&edit("name = \"h2\"", "name = \"h2\"\nkind = 2"), "", &[]);
    assert_eq!(
        e.to_string(),
        "test.toml: node[3] \"h2\".kind: expected a string, got the integer 2"
    );
}

#[test]
fn missing_required_keys() {
    fails(
        &edit("duration = \"60s\"", ""),
        "duration",
        &["missing required key"],
    );
    fails(
        &edit("to = \"h2\"\ncc = \"newreno\"", "cc = \"newreno\""),
        "flow \"f1\".to",
        &["missing"],
    );
    fails(
        &edit("cc = \"newreno\"", ""),
        "flow \"f1\".cc",
        &["missing", "cubic"],
    );
    fails(
        &edit("name = \"h2\"", "kind = \"host\""),
        "node[3].name",
        &["missing"],
    );
    fails(
        &edit("a = \"r2\"\nb = \"h2\"", "a = \"r2\""),
        "link[2].b",
        &["missing"],
    );
    // A direction without a rate anywhere.
    let no_default = edit("rate = \"1Gbit\"\n", "");
    fails(
        &no_default,
        "link[0] \"h1-r1\".ab.rate",
        &["missing", "h1 -> r1", "[defaults.link]"],
    );
    fails(
        &edit(
            "queue = \"17pkt\"",
            "queue = { type = \"tbf\", burst = \"3000B\" }",
        ),
        "queue.rate",
        &["missing"],
    );
    let no_nodes: String = BASE
        .lines()
        .filter(|l| !l.contains("[[node]]"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(parse(&no_nodes, FILE, &[]).is_err());
}

#[test]
fn wrong_types() {
    fails(
        &edit(
            "start = \"1s\"",
            "start = \"1s\"\ntcp = { rtt_estimator = \"bsd\" }",
        ),
        "flow \"f2\".tcp.rtt_estimator",
        &["unknown RTT estimator \"bsd\"", "rfc6298, linux"],
    );
    fails(
        &edit("duration = \"60s\"", "duration = \"60s\"\nseed = \"x\""),
        "seed",
        &["whole number", "string"],
    );
    fails(
        &edit("start = \"1s\"", "start = \"1s\"\nbidir = \"yes\""),
        "flow \"f2\".bidir",
        &["true or false"],
    );
    fails(
        &edit("start = \"1s\"", "start = \"1s\"\ntcp = { prr = \"on\" }"),
        "flow \"f2\".tcp.prr",
        &["true or false"],
    );
    fails(
        &edit("start = \"1s\"", "start = \"1s\"\ntcp = { rack = 1 }"),
        "flow \"f2\".tcp.rack",
        &["true or false"],
    );
    fails(
        &edit("cc = \"newreno\"", "cc = 5"),
        "flow \"f1\".cc",
        &["algorithm name"],
    );
    fails(
        "duration = \"1s\"\n[node]\nname = \"h1\"\n",
        "node",
        &["[[node]]", "double brackets"],
    );
    fails(
        &edit("name = \"bottleneck\"", "name = 7"),
        "link[1].name",
        &["expected a string"],
    );
    fails(
        &edit("queue = \"17pkt\"", "queue = true"),
        "link[1] \"bottleneck\".queue",
        &["expected a queue"],
    );
    fails(
        &edit("delay = \"8ms\"", "delay = [1]"),
        "bottleneck\".delay",
        &["expected a duration"],
    );
    fails(
        &edit(
            "cc = \"newreno\"",
            "cc = \"newreno\"\ntcp = { mss = \"big\" }",
        ),
        "flow \"f1\".tcp.mss",
        &["whole number"],
    );
}

#[test]
fn unparseable_quantities() {
    fails(
        &edit("rate = \"10Mbit\"", "rate = \"-10Mbit\""),
        "link[1] \"bottleneck\".rate",
        &["negative"],
    );
    fails(
        &edit("rate = \"10Mbit\"", "rate = \"10 Mbs\""),
        "bottleneck\".rate",
        &["unknown rate unit", "Mbit"],
    );
    fails(
        &edit("rate = \"10Mbit\"", "rate = \"10mbit\""),
        "bottleneck\".rate",
        &["unknown prefix"],
    );
    fails(
        &edit("rate = \"10Mbit\"", "rate = 10"),
        "bottleneck\".rate",
        &["needs a unit", "\"10Mbit\""],
    );
    fails(
        &edit("delay = \"8ms\"", "delay = 8"),
        "bottleneck\".delay",
        &["needs a unit", "\"8ms\""],
    );
    fails(
        &edit("duration = \"60s\"", "duration = \"60\""),
        "duration",
        &["no unit"],
    );
    fails(
        &edit("delay = \"8ms\"", "delay = \"8 fortnights\""),
        "bottleneck\".delay",
        &["unknown time unit"],
    );
    fails(
        &edit("queue = \"17pkt\"", "queue = \"17\""),
        "bottleneck\".queue",
        &["ambiguous", "\"17pkt\""],
    );
    fails(
        &edit("queue = \"17pkt\"", "queue = \"1.5pkt\""),
        "bottleneck\".queue",
        &["whole number"],
    );
    fails(
        &edit("queue = \"17pkt\"", "queue = \"17 apples\""),
        "bottleneck\".queue",
        &["neither a packet count"],
    );
    fails(
        &edit("start = \"1s\"", "size = \"3 apples\""),
        "flow \"f2\".size",
        &["invalid size"],
    );
}

/// Durations beyond the 64-bit nanosecond clock, and sampling intervals
/// whose traces would not fit in memory, are refused with the key and a
/// usable alternative.
#[test]
fn huge_durations_and_tiny_sampling_intervals() {
    fails(
        &edit("duration = \"60s\"", "duration = \"1e30s\""),
        "duration",
        &["too large"],
    );
    fails(
        &edit("delay = \"8ms\"", "delay = \"1e20s\""),
        "bottleneck\".delay",
        &["too large"],
    );
    fails(
        &edit("rate = \"10Mbit\"", "rate = \"0.5bit\""),
        "bottleneck\".rate",
        &["below 1 bit/s"],
    );
    let e = fails_with(
        BASE,
        &["measure.trace_interval=1ns"],
        "measure.trace_interval",
        &["GiB", "at least"],
    );
    // The suggested interval is accepted.
    let at_least = e.message.rsplit("at least ").next().unwrap().trim();
    let s = ok_with(&[&format!("measure.trace_interval={at_least}")]);
    assert!(s.measure.trace_interval > Dur::from_nanos(1));
    fails_with(
        BASE,
        &["measure.goodput_interval=1ns"],
        "measure.goodput_interval",
        &["GiB", "at least"],
    );
    // Parameters that contradict each other.
    fails(
        &edit(
            "cc = \"newreno\"",
            "cc = { algo = \"vegas\", alpha = 5, beta = 2 }",
        ),
        "flow \"f1\".cc",
        &["alpha", "exceeds", "beta"],
    );
    ok(&edit(
        "cc = \"newreno\"",
        "cc = { algo = \"vegas\", alpha = 3, beta = 3 }",
    ));
    // Absurd magnitudes are refused rather than run into infinite windows.
    for (cc, key, phrase) in [
        (
            "{ algo = \"cubic\", c = 1e300 }",
            "cc.c",
            "must be at most 100",
        ),
        (
            "{ algo = \"ledbat\", gain = 1e9 }",
            "cc.gain",
            "must be at most 100",
        ),
        (
            "{ algo = \"ledbat\", gain = \"1GB\" }",
            "cc.gain",
            "must be at most 150000 B",
        ),
        (
            "{ algo = \"lp\", inference = 1e12 }",
            "cc.inference",
            "must be at most 1000",
        ),
    ] {
        fails(
            &edit("cc = \"newreno\"", &format!("cc = {cc}")),
            key,
            &[phrase],
        );
    }
    ok(&edit(
        "cc = \"newreno\"",
        "cc = { algo = \"cubic\", c = 100 }",
    ));
    // The suggestion holds where rounding could tip it over: a run whose
    // exact bound lands just below a whole millisecond.
    let e = fails_with(
        BASE,
        &["duration=9256.395s", "measure.trace_interval=500us"],
        "measure.trace_interval",
        &["at least"],
    );
    let at_least = e.message.rsplit("at least ").next().unwrap().trim();
    ok_with(&[
        "duration=9256.395s",
        &format!("measure.trace_interval={at_least}"),
    ]);
    // Names go into CSV cells and capture file names.
    fails(
        &edit("name = \"f1\"", "name = \"bulk, one\""),
        "flow[0].name",
        &["contains ','"],
    );
    // `*` is kept for the sweep's sums over count replicas (NAME-*).
    fails(
        &edit("name = \"f1\"", "name = \"f-*\""),
        "flow[0].name",
        &["contains '*'", "reserved"],
    );
    fails(
        &edit("name = \"bottleneck\"", "name = \"../x\""),
        "link[1].name",
        &["contains '/'"],
    );
    // Fine sampling of a short run is still allowed.
    ok_with(&["measure.trace_interval=10us", "duration=5s"]);
}

#[test]
fn zero_or_negative_rates() {
    fails(
        &edit("rate = \"10Mbit\"", "rate = \"0Mbit\""),
        "link[1] \"bottleneck\".rate",
        &["must be positive"],
    );
    fails(
        &edit("rate = \"1Gbit\"", "rate = \"0bit\""),
        "defaults.link.rate",
        &["must be positive"],
    );
    fails(
        &edit(
            "queue = \"17pkt\"",
            "queue = { type = \"tbf\", rate = \"0kbit\", burst = \"3000B\" }",
        ),
        "queue.rate",
        &["must be positive"],
    );
}

#[test]
fn loss_out_of_range() {
    fails(
        &edit("queue = \"17pkt\"", "loss = 1.0"),
        "link[1] \"bottleneck\".loss",
        &["[0, 1)"],
    );
    fails(
        &edit("queue = \"17pkt\"", "[link.ba]\nloss = -0.1"),
        "bottleneck\".ba.loss",
        &["[0, 1)"],
    );
    fails(
        &edit("queue = \"17pkt\"", "loss = \"150%\""),
        "bottleneck\".loss",
        &["[0, 1)"],
    );
    fails(
        &edit("queue = \"17pkt\"", "loss = \"lots\""),
        "bottleneck\".loss",
        &["probability"],
    );
    fails(
        &edit("queue = \"17pkt\"", "loss = nan"),
        "bottleneck\".loss",
        &["finite"],
    );
    let s = ok(&edit("queue = \"17pkt\"", "loss = \"1%\""));
    assert_eq!(s.links[1].ab.loss, 0.01);
}

#[test]
fn ackfirst_shares_out_of_range() {
    fails(
        &edit(
            "queue = \"17pkt\"",
            "queue = { type = \"ackfirst\", data_share = 0 }",
        ),
        "bottleneck\".queue.data_share",
        &["(0, 1]"],
    );
    fails(
        &edit(
            "queue = \"17pkt\"",
            "queue = { type = \"ackfirst\", throttle = 1.5 }",
        ),
        "bottleneck\".queue.throttle",
        &["(0, 1]"],
    );
    fails(
        &edit(
            "queue = \"17pkt\"",
            "queue = { type = \"ackfirst\", classifier = \"len46\" }",
        ),
        "queue.classifier",
        &["unknown classifier", "len64", "no-payload"],
    );
}

#[test]
fn unknown_nodes() {
    let e = fails(
        &edit("b = \"r2\"", "b = \"r3\""),
        "link[1] \"bottleneck\".b",
        &["unknown node \"r3\"", "h1, r1, r2, h2"],
    );
    assert!(
        !e.message.contains("did you mean"),
        "r1 and r2 tie: no suggestion: {e}"
    );
    fails(
        &edit("b = \"r2\"", "b = \"rr2\""),
        "link[1] \"bottleneck\".b",
        &["did you mean `r2`"],
    );
    fails(
        &edit("cc = \"newreno\"", "cc = \"newreno\"").replacen("to = \"h2\"", "to = \"h3\"", 1),
        "flow \"f1\".to",
        &["unknown node \"h3\""],
    );
}

#[test]
fn duplicate_names() {
    fails(
        &edit("name = \"r2\"", "name = \"r1\""),
        "node[2] \"r1\".name",
        &["duplicate node name \"r1\"", "node[1]"],
    );
    fails(
        &edit(
            "a = \"h1\"\nb = \"r1\"",
            "name = \"bottleneck\"\na = \"h1\"\nb = \"r1\"",
        ),
        "link[1] \"bottleneck\".name",
        &["duplicate link name"],
    );
    fails(
        &edit("name = \"f2\"", "name = \"f1\""),
        "flow \"f1\".name",
        &["duplicate flow name"],
    );
    // Replicas collide with an explicit name.
    let text = edit("name = \"f2\"", "name = \"f\"\ncount = 2").replacen(
        "name = \"f1\"",
        "name = \"f-1\"",
        1,
    );
    fails(&text, "flow \"f-1\".name", &["duplicate flow name"]);
}

#[test]
fn flow_endpoints() {
    fails(
        &edit(
            "to = \"h2\"\ncc = \"newreno\"",
            "to = \"h1\"\ncc = \"newreno\"",
        ),
        "flow \"f1\".to",
        &["same as from", "two different hosts"],
    );
    fails(
        &edit(
            "to = \"h2\"\ncc = \"newreno\"",
            "to = \"r2\"\ncc = \"newreno\"",
        ),
        "flow \"f1\".to",
        &["\"r2\" is a switch"],
    );
    let island = format!("{BASE}\n[[node]]\nname = \"h9\"\n[[node]]\nname = \"h8\"\n[[link]]\na = \"h8\"\nb = \"h9\"\n[[flow]]\nname = \"lost\"\nfrom = \"h1\"\nto = \"h9\"\ncc = \"cubic\"\n");
    fails(
        &island,
        "flow \"lost\".to",
        &["no path from \"h1\" to \"h9\""],
    );
    fails(
        &edit("a = \"r1\"\nb = \"r2\"", "a = \"r1\"\nb = \"r1\""),
        "link[1] \"bottleneck\".b",
        &["two different nodes"],
    );
}

#[test]
fn hystart_only_with_newreno_or_cubic() {
    fails(
        &edit("cc = \"newreno\"", "cc = \"bbr\"\ntcp = { hystart = true }"),
        "flow \"f1\".tcp.hystart",
        &["newreno and cubic", "`bbr`"],
    );
    let ok = edit(
        "cc = \"newreno\"",
        "cc = \"cubic\"\ntcp = { hystart = true, pacing = true, ecn = true, rack = true }",
    );
    let sc = parse(&ok, FILE, &[]).unwrap();
    let t = &sc.flows[0].tcp;
    assert!(t.hystart && t.pacing && t.ecn && t.rack);
    assert!(!sc.flows[1].tcp.rack, "off by default");
    fails(
        &edit(
            "cc = \"newreno\"",
            "cc = \"cubic\"\ntcp = { rack = true, sack = false }",
        ),
        "flow \"f1\".tcp.rack",
        &["needs `sack = true`"],
    );
}

#[test]
fn congestion_control_errors() {
    let e = fails(
        &edit("cc = \"newreno\"", "cc = \"compound\""),
        "flow \"f1\".cc",
        &["unknown congestion control \"compound\""],
    );
    for n in CcConfig::NAMES {
        assert!(e.message.contains(n), "lists {n}: {e}");
    }
    fails(
        &edit("cc = \"newreno\"", "cc = \"cubci\""),
        "flow \"f1\".cc",
        &["did you mean `cubic`"],
    );
    fails(
        &edit(
            "cc = \"ledbat\"",
            "cc = { algo = \"ledbat\", target = \"fast\" }",
        ),
        "flow \"f2\".cc.target",
        &["fast"],
    );
    fails(
        &edit("cc = \"ledbat\"", "cc = { algo = \"vegas\", alpha = -1 }"),
        "flow \"f2\".cc.alpha",
        &["-1"],
    );
    fails(
        &edit("cc = \"ledbat\"", "cc = { algo = \"vegas\", alpah = 1 }"),
        "flow \"f2\".cc.alpah",
        &["unknown parameter", "did you mean `alpha`"],
    );
    fails(
        &edit("cc = \"ledbat\"", "cc = { algo = \"newreno\", beta = 0.5 }"),
        "flow \"f2\".cc.beta",
        &["takes no parameters"],
    );
    fails(
        &edit("cc = \"ledbat\"", "cc = { target = \"50ms\" }"),
        "flow \"f2\".cc.algo",
        &["missing"],
    );
    fails(
        &edit(
            "cc = \"ledbat\"",
            "cc = { algo = \"ledbat\", variant = \"utpp\" }",
        ),
        "flow \"f2\".cc.variant",
        &["unknown LEDBAT variant", "utp"],
    );
    fails(
        &edit(
            "cc = \"ledbat\"",
            "cc = { algo = \"cubic\", variant = \"utp\" }",
        ),
        "flow \"f2\".cc.variant",
        &["no variants"],
    );
    // Variants and case-insensitive names work.
    let s = ok(&edit(
        "cc = \"ledbat\"",
        "cc = { algo = \"ledbat\", target = \"100ms\", variant = \"utp\" }",
    ));
    assert_eq!(s.flows[1].cc.name(), "ledbat-utp");
    let s = ok(&edit("cc = \"ledbat\"", "cc = \"CUBIC\""));
    assert_eq!(s.flows[1].cc.name(), "cubic");
}

#[test]
fn timing_errors() {
    fails(
        &edit("start = \"1s\"", "start = \"60s\""),
        "flow \"f2\".start",
        &["after the end", "60s"],
    );
    fails(
        &edit("start = \"1s\"", "start = \"1s\"\nstop = \"1s\""),
        "flow \"f2\".stop",
        &["after start"],
    );
    fails(
        &edit("start = \"1s\"", "start = \"5s\"\nstop = \"2s\""),
        "flow \"f2\".stop",
        &["after start"],
    );
    fails(
        &edit("duration = \"60s\"", "duration = \"0s\""),
        "duration",
        &["positive"],
    );
    fails(
        &edit("start = \"1s\"", "count = 0"),
        "flow \"f2\".count",
        &["must be 1 to 100000, got 0"],
    );
    fails(
        &edit("start = \"1s\"", "count = -3"),
        "flow \"f2\".count",
        &["negative"],
    );
    fails(
        &edit("start = \"1s\"", "start_step = \"1s\""),
        "flow \"f2\".start_step",
        &["only applies with `count`"],
    );
    fails(
        &edit("start = \"1s\"", "count = 100\nstart_step = \"1s\""),
        "flow \"f2\".start_step",
        &["replica 99", "after the end"],
    );
    fails(
        &format!("{BASE}\n[measure]\nwarmup = \"60s\"\n"),
        "measure.warmup",
        &["nothing would be measured"],
    );
    fails(
        &format!("{BASE}\n[measure]\ngoodput_interval = \"0s\"\n"),
        "measure.goodput_interval",
        &["positive"],
    );
}

#[test]
fn queue_limit_errors() {
    fails(
        &edit("queue = \"17pkt\"", "queue = \"0pkt\""),
        "link[1] \"bottleneck\".queue",
        &["limit of 0"],
    );
    fails(
        &edit("queue = \"17pkt\"", "queue = \"0B\""),
        "bottleneck\".queue",
        &["limit of 0"],
    );
}

/// A queue too small for the largest packet is reported at the key that set
/// it (the link's `queue`, a direction's, or `[defaults.link]`'s), not at a
/// direction the file does not mention.
#[test]
fn small_queues_are_reported_where_the_value_came_from() {
    let e = fails(
        &edit("queue = \"17pkt\"", "queue = \"1000B\""),
        "",
        &["1000 B cannot hold one full-sized packet (1500 B"],
    );
    assert_eq!(e.key, "link[1] \"bottleneck\".queue");
    assert!(
        e.to_string()
            .starts_with("test.toml: link[1] \"bottleneck\".queue: 1000 B"),
        "{e}"
    );
    let e = fails(
        &edit(
            "queue = \"17pkt\"",
            "queue = \"17pkt\"\n[link.ba]\nqueue = \"1000B\"",
        ),
        "",
        &["cannot hold one full-sized packet"],
    );
    assert_eq!(e.key, "link[1] \"bottleneck\".ba.queue");
    let e = fails_with(
        BASE,
        &["link.bottleneck.ab.queue=100B"],
        "",
        &["100 B cannot hold"],
    );
    assert_eq!(e.key, "link[1] \"bottleneck\".ab.queue");
    let e = fails_with(BASE, &["link.bottleneck.queue=100B"], "", &["100 B"]);
    assert_eq!(e.key, "link[1] \"bottleneck\".queue");
    // From [defaults.link]: named there, with the first link that uses it.
    let e = fails(
        &edit("delay = \"1ms\"", "delay = \"1ms\"\nqueue = \"100B\""),
        "",
        &[
            "100 B cannot hold one full-sized packet",
            "link[0] \"h1-r1\" direction ab",
        ],
    );
    assert_eq!(e.key, "defaults.link.queue");
    // Token bucket: the burst, under the queue key that was written.
    let e = fails(
        &edit(
            "queue = \"17pkt\"",
            "queue = { type = \"tbf\", rate = \"1Mbit\", burst = \"500B\" }",
        ),
        "",
        &["a burst of 500 B is smaller than one full-sized packet"],
    );
    assert_eq!(e.key, "link[1] \"bottleneck\".queue.burst");
    let e = fails(
        &edit(
            "queue = \"17pkt\"",
            "[link.ab]\nqueue = { type = \"tbf\", rate = \"1Mbit\", burst = \"500B\" }",
        ),
        "",
        &["smaller than one full-sized packet"],
    );
    assert_eq!(e.key, "link[1] \"bottleneck\".ab.queue.burst");
    let e = fails(
        &edit(
            "queue = \"17pkt\"",
            "queue = { type = \"ackfirst\", data_limit = \"1000B\" }",
        ),
        "",
        &["cannot hold one full-sized packet"],
    );
    assert_eq!(e.key, "link[1] \"bottleneck\".queue.data_limit");
    // The largest packet is any flow's, whichever comes after the link.
    let big = edit("queue = \"17pkt\"", "queue = \"5000B\"");
    ok(&big);
    let e = fails(
        &big.replacen(
            "cc = \"ledbat\"",
            "cc = \"ledbat\"\ntcp = { mss = 9000 }",
            1,
        ),
        "",
        &["5000 B cannot hold one full-sized packet (9040 B"],
    );
    assert_eq!(e.key, "link[1] \"bottleneck\".queue");
    // Built in code there is no file to point into: the direction.
    let mut s = ok(BASE);
    s.links[1].ba.queue = QueueSpec::DropTail {
        limit: Limit::Bytes(100),
    };
    assert_eq!(
        validate(&s, "code").unwrap_err().key,
        "link[1] \"bottleneck\".ba.queue"
    );
}

#[test]
fn tcp_sanity() {
    fails(
        &edit("cc = \"newreno\"", "cc = \"newreno\"\ntcp = { mss = 40 }"),
        "flow \"f1\".tcp.mss",
        &["at least 64"],
    );
    fails(
        &edit(
            "cc = \"newreno\"",
            "cc = \"newreno\"\ntcp = { mss = 70000 }",
        ),
        "flow \"f1\".tcp.mss",
        &[
            "must be at most 65495 bytes (an IPv4 packet holds 65535 bytes",
            "got 70000",
        ],
    );
    // One limit and one message, above and below 65535.
    let big = fails(
        &edit(
            "cc = \"newreno\"",
            "cc = \"newreno\"\ntcp = { mss = 65496 }",
        ),
        "flow \"f1\".tcp.mss",
        &["at most 65495"],
    );
    let huge = fails(
        &edit(
            "delay = \"1ms\"",
            "delay = \"1ms\"\n[defaults.tcp]\nmss = 9223372036854775807",
        ),
        "defaults.tcp.mss",
        &["got 9223372036854775807"],
    );
    assert_eq!(
        big.message.replace("65496", "N"),
        huge.message.replace("9223372036854775807", "N")
    );
    ok(&edit(
        "cc = \"newreno\"",
        "cc = \"newreno\"\ntcp = { mss = 65495 }\n",
    ));
    fails(
        &edit(
            "cc = \"newreno\"",
            "cc = \"newreno\"\ntcp = { recv_buffer = \"1kB\" }",
        ),
        "flow \"f1\".tcp.recv_buffer",
        &["smaller than one segment"],
    );
    fails(
        &edit(
            "delay = \"1ms\"",
            "delay = \"1ms\"\n[defaults.tcp]\nsend_buffer = 100",
        ),
        "defaults.tcp.send_buffer",
        &["smaller than one segment"],
    );
    fails(
        &edit(
            "cc = \"newreno\"",
            "cc = \"newreno\"\ntcp = { min_rto = \"2s\", max_rto = \"1s\" }",
        ),
        "flow \"f1\".tcp.max_rto",
        &["below min_rto"],
    );
    fails(
        &edit(
            "cc = \"newreno\"",
            "cc = \"newreno\"\ntcp = { initial_window = 0 }",
        ),
        "tcp.initial_window",
        &["at least 1"],
    );
    fails(
        &edit(
            "cc = \"newreno\"",
            "cc = \"newreno\"\ntcp = { dupthresh = 0 }",
        ),
        "tcp.dupthresh",
        &["at least 1"],
    );
    fails(
        &edit(
            "cc = \"newreno\"",
            "cc = \"newreno\"\ntcp = { delack_timeout = \"0s\" }",
        ),
        "tcp.delack_timeout",
        &["positive"],
    );
}

#[test]
fn io_errors_name_the_file() {
    let p = Path::new("/nonexistent/dir/missing.toml");
    let e = load(p, &[]).unwrap_err();
    assert_eq!(e.file, "/nonexistent/dir/missing.toml");
    assert!(
        e.to_string().contains("missing.toml") && e.message.contains("cannot read"),
        "{e}"
    );
}

#[test]
fn validate_checks_scenarios_built_in_code() {
    let mut s = ok(BASE);
    validate(&s, "code").unwrap();
    s.links[1].ba.loss = 1.5;
    let e = validate(&s, "code").unwrap_err();
    assert_eq!(e.key, "link[1] \"bottleneck\".ba.loss");
    assert_eq!(e.file, "code");
    let mut s = ok(BASE);
    s.links[1].ab.rate = Rate::from_bps(0);
    assert_eq!(
        validate(&s, "code").unwrap_err().key,
        "link[1] \"bottleneck\".ab.rate"
    );
    let mut s = ok(BASE);
    s.flows[0].tcp.mss = 10;
    assert_eq!(validate(&s, "code").unwrap_err().key, "flow \"f1\".tcp.mss");
    let mut s = ok(BASE);
    s.links[1].ab.queue = QueueSpec::AckFirst {
        classifier: AckClassifier::Len64,
        data_share: 0.0,
        throttle: 0.95,
        ack_limit: Limit::Packets(10),
        data_limit: Limit::Packets(10),
    };
    assert_eq!(
        validate(&s, "code").unwrap_err().key,
        "link[1] \"bottleneck\".ab.queue.data_share"
    );
    let mut s = ok(BASE);
    s.flows.clear();
    assert!(validate(&s, "code")
        .unwrap_err()
        .message
        .contains("no flows"));
    let mut s = ok(BASE);
    s.nodes.push(s.nodes[0].clone());
    assert!(validate(&s, "code")
        .unwrap_err()
        .message
        .contains("duplicate node name"));
}

// ---------------------------------------------------------------------------
// Overrides
// ---------------------------------------------------------------------------

#[test]
fn overrides_top_level() {
    let s = ok_with(&["duration=30s", "seed=7", "start_jitter=5ms", "name=renamed"]);
    assert_eq!(s.duration, Dur::from_secs(30));
    assert_eq!(s.seed, 7);
    assert_eq!(s.start_jitter, Dur::from_millis(5));
    assert_eq!(s.name, "renamed");
    let s = ok_with(&["measure.warmup=2s"]);
    assert_eq!(s.measure.warmup, Dur::from_secs(2));
}

/// `--set seed=N` takes any u64 (a TOML integer stops at i64::MAX); the
/// last seed override wins, whatever its size; a file cannot hold a seed
/// above i64::MAX, and the error says where a larger one can go.
#[test]
fn seed_overrides_take_the_whole_u64_range() {
    assert_eq!(ok_with(&["seed=9223372036854775808"]).seed, 1 << 63);
    assert_eq!(ok_with(&["seed=18446744073709551615"]).seed, u64::MAX);
    assert_eq!(ok_with(&["seed=18_446_744_073_709_551_615"]).seed, u64::MAX);
    assert_eq!(
        ok_with(&[" seed = 9223372036854775809 "]).seed,
        (1 << 63) + 1
    );
    assert_eq!(ok_with(&["seed=18446744073709551615", "seed=7"]).seed, 7);
    // Also when the later one is not plain digits.
    assert_eq!(
        ok_with(&["seed=18446744073709551615", "seed=0x10"]).seed,
        16
    );
    assert_eq!(ok_with(&["seed=18446744073709551615", "seed=+7"]).seed, 7);
    assert_eq!(
        ok_with(&["seed=7", "seed=18446744073709551615"]).seed,
        u64::MAX
    );
    // Even over a seed the file gets wrong.
    let bad = edit("duration = \"60s\"", "duration = \"60s\"\nseed = -3");
    let o = vec!["seed=18446744073709551615".to_string()];
    assert_eq!(parse(&bad, FILE, &o).unwrap().seed, u64::MAX);
    let e = fails_with(
        BASE,
        &["seed=18446744073709551616"],
        "--set seed=18446744073709551616",
        &["at most 18446744073709551615"],
    );
    assert!(!e.message.contains("string"), "{e}");
    fails_with(BASE, &["seed=-1"], "seed", &["must not be negative"]);
    // Other keys are not affected: a big number stays a string there.
    fails_with(
        BASE,
        &["flow.f1.tcp.mss=9223372036854775808"],
        "mss",
        &["whole number"],
    );
    let big = edit(
        "duration = \"60s\"",
        "duration = \"60s\"\nseed = 9223372036854775808",
    );
    let e = parse(&big, FILE, &[]).unwrap_err();
    let shown = e.to_string();
    for p in [
        "number too large",
        "up to 9223372036854775807",
        "--seed N",
        "--set seed=N",
    ] {
        assert!(shown.contains(p), "lacks `{p}`: {shown}");
    }
}

#[test]
fn overrides_by_index_and_by_name() {
    let s = ok_with(&["flow[0].cc=cubic"]);
    assert_eq!(s.flows[0].cc.name(), "cubic");
    let s = ok_with(&["flow.f1.cc=vegas", "flow.f2.start=3s"]);
    assert_eq!(s.flows[0].cc.name(), "vegas");
    assert_eq!(s.flows[1].start, Dur::from_secs(3));
    let s = ok_with(&["link.bottleneck.ba.queue=20pkt"]);
    assert_eq!(
        s.links[1].ba.queue,
        QueueSpec::DropTail {
            limit: Limit::Packets(20)
        }
    );
    assert_eq!(
        s.links[1].ab.queue,
        QueueSpec::DropTail {
            limit: Limit::Packets(17)
        }
    );
    // Unnamed links answer to their default name "<a>-<b>"; [name] also selects.
    let s = ok_with(&["link.h1-r1.delay=3ms", "link[bottleneck].rate=20Mbit"]);
    assert_eq!(s.links[0].ab.delay, Dur::from_millis(3));
    assert_eq!(s.links[1].ab.rate, Rate::from_mbps(20));
    let s = ok_with(&["node[0].name=h1", "flow[1].size=1MB"]);
    assert_eq!(s.flows[1].traffic, Traffic::Fixed(1_000_000));
}

#[test]
fn overrides_create_missing_tables() {
    let s = ok_with(&["defaults.tcp.sack=false"]);
    assert!(s.flows.iter().all(|f| !f.tcp.sack));
    let s = ok_with(&["link.bottleneck.ab.rate=1Mbit"]);
    assert_eq!(s.links[1].ab.rate, Rate::from_mbps(1));
    assert_eq!(s.links[1].ba.rate, Rate::from_mbps(10));
    let s = ok_with(&["flow.f1.tcp.mss=1000"]);
    assert_eq!(s.flows[0].tcp.mss, 1000);
    let s = ok_with(&["link.bottleneck.loss=0.05"]);
    assert_eq!(s.links[1].ab.loss, 0.05);
}

#[test]
fn overrides_turn_shorthands_into_tables() {
    let s = ok_with(&["flow[1].cc.target=50ms"]);
    let mut want = CcConfig::from_name("ledbat").unwrap();
    want.set("target", ParamValue::Str("50ms")).unwrap();
    assert_eq!(s.flows[1].cc, want);
    let s = ok_with(&["flow.f1.cc={ algo = \"vegas\", alpha = 1, beta = 3 }"]);
    let mut want = CcConfig::from_name("vegas").unwrap();
    want.set("alpha", ParamValue::Num(1.0)).unwrap();
    want.set("beta", ParamValue::Num(3.0)).unwrap();
    assert_eq!(s.flows[0].cc, want);
    let s = ok_with(&["link.bottleneck.queue.limit=5pkt"]);
    assert_eq!(
        s.links[1].ab.queue,
        QueueSpec::DropTail {
            limit: Limit::Packets(5)
        }
    );
    // A quoted value stays a string.
    let s = ok_with(&["flow.f1.name=\"g1\""]);
    assert_eq!(s.flows[0].name, "g1");
}

#[test]
fn bad_overrides_name_the_override() {
    let bad = |o: &str, phrase: &str| {
        let e = parse(BASE, FILE, &[o.to_string()]).unwrap_err();
        assert_eq!(e.key, format!("--set {o}"), "{e}");
        assert!(e.message.contains(phrase), "`{phrase}` missing: {e}");
        assert!(e.to_string().starts_with(FILE), "{e}");
    };
    bad("duration", "key=value");
    bad("=30s", "empty key");
    bad("flow[5].cc=cubic", "out of range");
    bad("flow.nope.cc=cubic", "named \"nope\"");
    bad("link.botleneck.rate=1Mbit", "did you mean `bottleneck`");
    bad("durtion=30s", "did you mean `duration`");
    bad("flow.f1.ccc=cubic", "did you mean `cc`");
    bad("defaults.tcp.sak=false", "did you mean `sack`");
    bad("duration.x=1", "not a table");
    bad("duration[0]=1", "not an array");
    bad("flow..cc=x", "empty key segment");
    bad("flow[1.cc=x", "unterminated");
    // A value of the wrong type is reported at its key.
    let e = parse(BASE, FILE, &["seed=abc".to_string()]).unwrap_err();
    assert_eq!(e.key, "seed");
    // An override that makes the scenario invalid is reported like a file error.
    let e = parse(BASE, FILE, &["flow.f1.to=h9".to_string()]).unwrap_err();
    assert!(
        e.key == "flow \"f1\".to" && e.message.contains("unknown node \"h9\""),
        "{e}"
    );
}

// ---------------------------------------------------------------------------
// Never panic
// ---------------------------------------------------------------------------

fn corpus() -> Vec<String> {
    let mut v: Vec<String> = scenario_files()
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    v.push(BASE.to_string());
    v
}

/// Tokens that make mutations reach deep into the reader.
const TOKENS: &[&str] = &[
    "\"0s\"",
    "\"-1s\"",
    "0",
    "-1",
    "1e308",
    "nan",
    "inf",
    "\"\"",
    "true",
    "[]",
    "{}",
    "\"0pkt\"",
    "\"0B\"",
    "\"1e30Gbit\"",
    "\"18446744073709551615B\"",
    "9223372036854775807",
    "{ type = \"tbf\" }",
    "{ algo = \"ledbat\", variant = \"++\" }",
    "\"h1\"",
    "\"r1\"",
    "[[flow]]",
    "[[link]]",
    "[link.ab]",
    "count = 100000",
    "\"1.5pkt\"",
    "\"µs\"",
    "1.5",
    "\"100%\"",
];

#[derive(Debug, Clone)]
enum Mutation {
    Delete {
        at: usize,
        len: usize,
    },
    Insert {
        at: usize,
        text: String,
    },
    /// Replace the value of the n-th `key = value` line.
    Value {
        line: usize,
        token: usize,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0usize..40).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), ".{0,12}").prop_map(|(at, text)| Mutation::Insert { at, text }),
        (any::<usize>(), any::<usize>()).prop_map(|(line, token)| Mutation::Value { line, token }),
    ]
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn mutate(mut s: String, m: &Mutation) -> String {
    match m {
        Mutation::Delete { at, len } => {
            let a = floor_boundary(&s, at % (s.len() + 1));
            let b = floor_boundary(&s, a + len);
            s.replace_range(a..b, "");
            s
        }
        Mutation::Insert { at, text } => {
            let a = floor_boundary(&s, at % (s.len() + 1));
            s.insert_str(a, text);
            s
        }
        Mutation::Value { line, token } => {
            let lines: Vec<&str> = s.lines().collect();
            let kv: Vec<usize> = (0..lines.len())
                .filter(|&i| lines[i].contains(" = "))
                .collect();
            if kv.is_empty() {
                return s;
            }
            let target = kv[line % kv.len()];
            let mut out = Vec::with_capacity(lines.len());
            for (i, l) in lines.iter().enumerate() {
                if i == target {
                    let key = l.split(" = ").next().unwrap_or("");
                    out.push(format!("{key} = {}", TOKENS[token % TOKENS.len()]));
                } else {
                    out.push(l.to_string());
                }
            }
            out.join("\n")
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_text_never_panics(text in ".{0,400}") {
        let _ = parse(&text, FILE, &[]);
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = parse(&String::from_utf8_lossy(&bytes), FILE, &[]);
    }

    #[test]
    fn mutated_scenarios_never_panic(
        pick in any::<usize>(),
        muts in proptest::collection::vec(mutation(), 1..6),
    ) {
        let corpus = corpus();
        let mut s = corpus[pick % corpus.len()].clone();
        for m in &muts {
            s = mutate(s, m);
        }
        let _ = parse(&s, FILE, &[]);
    }

    #[test]
    fn random_overrides_never_panic(
        o in proptest::collection::vec("[a-z0-9_\\[\\]\\.=\"{}, -]{0,30}", 0..4),
    ) {
        let _ = parse(BASE, FILE, &o);
    }

    #[test]
    fn structured_overrides_never_panic(
        key in prop::sample::select(vec![
            "duration", "seed", "flow[0].cc", "flow.f2.cc.target", "flow[1].count", "flow[1].start_step",
            "link.bottleneck.ab.queue", "link.bottleneck.queue.limit", "link[1].ba.loss",
            "defaults.tcp.mss", "defaults.link.rate", "node[0].kind", "measure.warmup", "flow.f1.tcp",
            "link.bottleneck.queue.burst", "flow[0].tcp.recv_buffer",
        ]),
        token in 0usize..TOKENS.len(),
    ) {
        let _ = parse(BASE, FILE, &[format!("{key}={}", TOKENS[token])]);
    }
}

#[test]
fn capture_entries_expand_and_bad_ones_name_the_entry() {
    let s = ok(&format!(
        "{BASE}\n[measure]\ncapture = [\"bottleneck\", \"h1-r1:ba\", \"bottleneck:ab\"]\ncapture_snaplen = 96\n"
    ));
    assert_eq!(s.measure.capture_snaplen, 96);
    assert_eq!(
        hopwise_sim::scenario::capture_ifaces(&s, &s.measure.capture).unwrap(),
        vec!["bottleneck:ab", "bottleneck:ba", "h1-r1:ba"]
    );
    let s = ok_with(&["measure.capture=[\"r2-h2:ab\"]"]);
    assert_eq!(s.measure.capture, vec!["r2-h2:ab"]);
    fails(
        &format!("{BASE}\n[measure]\ncapture = [\"botleneck\"]\n"),
        "measure.capture",
        &[
            "unknown link `botleneck`",
            "links: h1-r1, bottleneck, r2-h2",
        ],
    );
    fails(
        &format!("{BASE}\n[measure]\ncapture = [\"bottleneck:up\"]\n"),
        "measure.capture",
        &["unknown direction `up`", "<link>:ab"],
    );
    fails(
        &format!("{BASE}\n[measure]\ncapture = \"bottleneck\"\n"),
        "measure.capture",
        &["expected an array of strings"],
    );
    fails(
        &format!("{BASE}\n[measure]\ncapture = [\"\"]\n"),
        "measure.capture[0]",
        &["is empty (\"\"); a name needs a visible character"],
    );
    fails(
        &format!("{BASE}\n[measure]\ncapture_snaplen = 20\n"),
        "measure.capture_snaplen",
        &["40"],
    );
}

/// `[node]` with `[[node]]` is a TOML duplicate key; the error still says
/// to write double brackets, and where the single-bracket header is.
#[test]
fn single_and_double_bracket_headers_get_the_hint() {
    for (text, at, line) in [
        (
            "duration = \"1s\"\n[node]\nname = \"h1\"\n[[node]]\nname = \"h2\"\n",
            "node",
            2,
        ),
        (
            "duration = \"1s\"\n[[flow]]\nfrom = \"h1\"\n[ flow ] # one\nto = \"h2\"\n",
            "flow",
            4,
        ),
        (
            "duration = \"1s\"\n[link]\na = \"h1\"\n[link]\nb = \"h2\"\n",
            "link",
            2,
        ),
    ] {
        let e = fails(
            text,
            "",
            &[
                "line 4, column 1: TOML syntax error",
                &format!("[{at}] on line {line} makes a single table"),
                &format!("write [[{at}]] (double brackets) for each entry"),
            ],
        );
        assert_eq!(e.key, "");
    }
    // Other duplicate tables get no such hint.
    let e = fails(
        "duration = \"1s\"\n[measure]\n[measure]\n",
        "",
        &["duplicate key"],
    );
    assert!(!e.message.contains("double brackets"), "{e}");
}
