//! The Tor sections of scenario files: errors, the examples, outputs and
//! the latency metrics against a hand-computed case.

use hopwise_overlay::scenario::{load, parse, OverlayScenario};
use hopwise_sim::scenario::ScenarioError;
use std::path::{Path, PathBuf};

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

/// Two hosts and a switch, three relays on generated hosts, one circuit.
const BASE: &str = r#"
duration = "5s"
[[node]]
name = "h1"
[[node]]
name = "sw"
kind = "switch"
[[link]]
a = "h1"
b = "sw"
rate = "100Mbit"
delay = "2ms"
[tor]
transport = "vanilla"
switch = "sw"
access = { rate = "1Gbit", delay = "3ms" }
[[relay]]
name = "guard"
bandwidth = "80Mbit"
[[relay]]
name = "middle"
bandwidth = "80Mbit"
[[relay]]
name = "exit"
bandwidth = "80Mbit"
[[circuit]]
name = "web"
client = "h1"
path = ["guard", "middle", "exit"]
workload = "web"
size = "50KB"
think_min = "100ms"
think_max = "200ms"
"#;

fn err(text: &str, sets: &[&str]) -> ScenarioError {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    match parse(text, "t.toml", &sets) {
        Ok(_) => panic!("accepted: {sets:?}"),
        Err(e) => {
            assert_eq!(e.file, "t.toml", "{e}");
            e
        }
    }
}

fn check(e: &ScenarioError, key: &str, phrases: &[&str]) {
    assert_eq!(e.key, key, "{e}");
    for p in phrases {
        assert!(e.message.contains(p), "`{e}` lacks `{p}`");
    }
}

#[test]
fn the_base_scenario_parses() {
    let s = parse(BASE, "t.toml", &[]).unwrap();
    let t = s.tor.as_ref().unwrap();
    assert_eq!(t.relays.len(), 3);
    assert_eq!(t.circuits.len(), 1);
    assert!(s.has_overlay());
}

/// A Tor network alone needs no `[[node]]` and no `[[flow]]`: every host
/// is generated; without an overlay, the file is still refused.
#[test]
fn an_overlay_alone_needs_no_nodes_or_flows() {
    let text = r#"
duration = "3s"
[tor]
transport = "backtap"
[[relay]]
name = "a"
bandwidth = "1MB/s"
[[relay]]
name = "b"
bandwidth = "1MB/s"
[[relay]]
name = "c"
bandwidth = "1MB/s"
[[circuit]]
name = "x"
path = ["a", "b", "c"]
workload = "bulk"
size = "200KB"
"#;
    let s = parse(text, "t.toml", &[]).unwrap();
    assert!(s.base.nodes.is_empty() && s.base.flows.is_empty());
    let mut run = s.build().unwrap();
    run.run().unwrap();
    let tor = run.summary().tor.unwrap();
    assert!(tor.completed >= 1, "{} requests completed", tor.completed);
    let e = err("duration = \"3s\"\n", &[]);
    assert_eq!(e.key, "node", "{e}");
}

#[test]
fn a_circuit_through_an_unknown_relay() {
    let text = BASE.replace(
        r#"["guard", "middle", "exit"]"#,
        r#"["guard", "midle", "exit"]"#,
    );
    let e = err(&text, &[]);
    check(
        &e,
        r#"circuit "web".path[1]"#,
        &["unknown relay `midle`", "did you mean `middle`?"],
    );
}

#[test]
fn a_relay_on_an_unknown_node() {
    let text = BASE.replace("name = \"guard\"\n", "name = \"guard\"\nnode = \"h2\"\n");
    let e = err(&text, &[]);
    check(
        &e,
        r#"relay "guard".node"#,
        &["unknown node `h2`", "did you mean `h1`?"],
    );
}

#[test]
fn an_unknown_transport() {
    let e = err(BASE, &["tor.transport=backtab"]);
    check(
        &e,
        "tor.transport",
        &[
            "unknown transport \"backtab\"",
            "did you mean `backtap`?",
            "tor-vegas",
        ],
    );
}

#[test]
fn other_mistakes_are_named() {
    let dup_relay = BASE.replace("name = \"middle\"", "name = \"guard\"");
    check(
        &err(&dup_relay, &[]),
        r#"relay "guard".name"#,
        &["defined above"],
    );
    let dup_circ =
        format!("{BASE}\n[[circuit]]\nname = \"web\"\nclient = \"h1\"\npath = [\"exit\"]\n");
    check(
        &err(&dup_circ, &[]),
        r#"circuit "web".name"#,
        &["defined above"],
    );
    let empty = BASE.replace(r#"["guard", "middle", "exit"]"#, "[]");
    check(&err(&empty, &[]), r#"circuit "web".path"#, &["empty path"]);
    let long = BASE.replace(
        r#"["guard", "middle", "exit"]"#,
        r#"["guard", "middle", "exit", "guard", "middle", "exit", "guard", "middle", "exit"]"#,
    );
    check(&err(&long, &[]), r#"circuit "web".path"#, &["at most 8"]);
    let twice = BASE.replace(
        r#"["guard", "middle", "exit"]"#,
        r#"["guard", "middle", "guard"]"#,
    );
    check(
        &err(&twice, &[]),
        r#"circuit "web".path[2]"#,
        &["`guard` appears twice"],
    );
    check(
        &err(BASE, &["tor.n23.n2=10"]),
        "tor.n23",
        &["transport is \"vanilla\""],
    );
    check(
        &err(BASE, &["tor.relay_count=3"]),
        "tor.relay_count",
        &["unknown key"],
    );
    check(
        &err(BASE, &["tor.circuit_window=0", "tor.stream_window=0"]),
        "tor.circuit_window",
        &["without", "bound"],
    );
    check(
        &err(BASE, &["tor.switch=sx"]),
        "tor.switch",
        &["apart from the file's nodes", "did you mean `sw`?"],
    );
    let client = BASE.replace("client = \"h1\"", "client = \"h9\"");
    check(
        &err(&client, &[]),
        r#"circuit "web".client"#,
        &["unknown node `h9`"],
    );
    let bulk_think = BASE.replace("workload = \"web\"", "workload = \"bulk\"");
    check(
        &err(&bulk_think, &[]),
        r#"circuit "web".think_min"#,
        &["without think time"],
    );
    let wl = BASE.replace("workload = \"web\"", "workload = \"webb\"");
    check(
        &err(&wl, &[]),
        r#"circuit "web".workload"#,
        &["did you mean `web`?"],
    );
    let on_switch = BASE.replace("name = \"exit\"\n", "name = \"exit\"\nnode = \"sw\"\n");
    check(
        &err(&on_switch, &[]),
        r#"relay "exit".node"#,
        &["is a switch"],
    );
}

fn run(s: &OverlayScenario, dir: &Path) -> (serde_json::Value, Vec<String>) {
    let mut run = s.build().unwrap();
    run.sim.run();
    let summary = run.summary();
    let files = run.write_outputs(dir, &summary).unwrap();
    (serde_json::to_value(&summary).unwrap(), files)
}

/// One circuit on an otherwise idle network, 50 kB requests, a fixed 20 ms
/// response delay, starting at 1 s (once the relays' connections are up):
/// every request's RTT sample is the propagation round trip plus
/// transmission times. Propagation: client → guard 2 + 3 ms, guard →
/// middle 3 + 3, middle → exit 3 + 3: 17 ms one way, 34 ms RTT. A cell
/// (512 B and TCP/IP headers) takes about 45 µs at 100 Mbit/s, 4.5 µs at
/// 1 Gbit/s; the BEGIN and request cells and the first response cell cross
/// six links each way: well under a millisecond of queueing delay, and the
/// same for every request.
#[test]
fn latency_of_an_idle_circuit_is_its_propagation_round_trip() {
    let text = BASE.replace("workload = \"web\"", "workload = \"web\"\nstart = \"1s\"");
    let s = parse(&text, "t.toml", &["tor.response_delay=\"20ms\"".into()]).unwrap();
    let dir = std::env::temp_dir().join(format!("hopwise-overlay-tor-idle-{}", std::process::id()));
    let (v, files) = run(&s, &dir);
    let c = &v["tor"]["circuits"][0];
    assert_eq!(c["prop_rtt_ms"].as_f64(), Some(34.0), "{c}");
    let n = c["completed"].as_u64().unwrap();
    assert!(n >= 10, "{n} requests completed in 5 s");
    for k in ["rtt_mean_ms", "rtt_median_ms", "rtt_p95_ms", "rtt_p99_ms"] {
        let x = c[k].as_f64().unwrap();
        assert!((34.0..36.0).contains(&x), "{k} = {x}");
    }
    for k in [
        "queueing_mean_ms",
        "queueing_median_ms",
        "queueing_p95_ms",
        "queueing_p99_ms",
    ] {
        let x = c[k].as_f64().unwrap();
        // A cell's transmission on the 100 Mbit/s link is 0.04 ms; the
        // BEGIN, the request and the first response cell cross six links.
        assert!((0.0..1.0).contains(&x), "{k} = {x}");
    }
    assert_eq!(c["rtt_median_ms"], c["rtt_p99_ms"], "{c}");
    assert_eq!(
        v["tor"]["rtt_ms"]["samples"].as_u64(),
        c["requests"].as_u64().map(|r| r.min(n + 1))
    );
    for f in [
        "tor_circuits.csv",
        "tor_requests.csv",
        "tor_goodput.csv",
        "tor_relay_queues.csv",
        "tor_relays.csv",
        "tor_goodput.svg",
        "tor_requests.svg",
        "tor_relay_queues.svg",
    ] {
        assert!(files.iter().any(|x| x == f), "{f} not in {files:?}");
        assert!(dir.join(f).exists(), "{f}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The example with a CUBIC download: both get a share of the home link,
/// and the circuit's queueing delay is that of the shared buffer.
#[test]
fn a_circuit_shares_a_bottleneck_with_cubic() {
    let s = load(
        &scenarios().join("tor-cubic-bottleneck.toml"),
        &["duration=\"20s\"".into()],
    )
    .unwrap();
    let dir =
        std::env::temp_dir().join(format!("hopwise-overlay-tor-cubic-{}", std::process::id()));
    let sc = s.scenario().unwrap();
    assert_eq!(sc.flows.len(), 1);
    let mut run = s.build().unwrap();
    run.sim.run();
    let flows = hopwise_sim::report::Summary::of(&run.sim, "x", 0.0);
    let summary = run.summary();
    let t = summary.tor.as_ref().unwrap();
    let c = &t.circuits[0];
    // home → isp → core → guard: 5 + 10 + 5, guard → middle 10, middle → exit 10.
    assert_eq!(c.prop_rtt_ms, 80.0);
    let cubic = flows.flows[0].goodput_bps;
    assert!(c.goodput_bps > 1e6, "circuit {}", c.goodput_bps);
    assert!(cubic > 1e6, "cubic {cubic}");
    assert!(c.goodput_bps + cubic < 20e6, "{} + {cubic}", c.goodput_bps);
    assert!(c.queueing_median_ms > 5.0, "{}", c.queueing_median_ms);
    run.write_outputs(&dir, &summary).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The 50-relay example, shortened: circuits from the TorPS file, goodput,
/// TTLB and fairness in the summary.
#[test]
fn the_fifty_relay_example_runs() {
    let s = load(
        &scenarios().join("tor-50-relays.toml"),
        &[
            "duration=\"12s\"".into(),
            "measure.warmup=\"6s\"".into(),
            "tor.torps.circuits=12".into(),
            "tor.torps.start_window=\"2s\"".into(),
        ],
    )
    .unwrap();
    let mut run = s.build().unwrap();
    run.sim.run();
    let t = run.summary().tor.unwrap();
    assert_eq!(t.circuits.len(), 12);
    assert!(
        t.relays.len() >= 3 && t.relays.len() <= 36,
        "{}",
        t.relays.len()
    );
    assert!(t.goodput_bps > 1e6, "{}", t.goodput_bps);
    let j = t.jain.unwrap();
    assert!(j > 0.0 && j <= 1.0, "{j}");
    assert!(t.completed > 0 && t.ttlb_s.median > 0.0, "{:?}", t.ttlb_s);
    for c in &t.circuits {
        // Three hops of the star, 40 ms each.
        assert!((c.prop_rtt_ms - 120.0).abs() < 1e-9, "{}", c.name);
        assert!(c.path.starts_with('r'), "{}", c.path);
    }
}

#[test]
fn a_node_plays_one_role() {
    let relay_node = BASE.replace("name = \"guard\"\n", "name = \"guard\"\nnode = \"h1\"\n");
    check(
        &err(&relay_node, &[]),
        r#"circuit "web".client"#,
        &["runs a relay"],
    );
    let server_is_client = BASE.replace("client = \"h1\"", "client = \"h1\"\nserver = \"h1\"");
    check(
        &err(&server_is_client, &[]),
        r#"circuit "web".server"#,
        &["runs a client"],
    );
}

/// `count` and `"by-bandwidth"`: circuits named `<name>-k`, each with its
/// own generated client and a path of distinct relays that depends on the
/// seed.
#[test]
fn replicated_circuits_draw_paths_by_bandwidth() {
    let text = BASE.replace(
        "client = \"h1\"\npath = [\"guard\", \"middle\", \"exit\"]",
        "count = 20\npath = \"by-bandwidth\"\nhops = 2",
    );
    let s = parse(&text, "t.toml", &[]).unwrap();
    let t = s.tor.as_ref().unwrap();
    assert_eq!(t.circuits.len(), 20);
    assert_eq!(t.circuits[3].name, "web-3");
    assert_eq!(t.circuits[3].client_name, "op-web-3");
    let a = t.net(1).unwrap();
    let b = t.net(2).unwrap();
    let paths = |x: &hopwise_overlay::scenario::tor_build::Built| -> Vec<Vec<String>> {
        x.circuits.iter().map(|c| c.relays.clone()).collect()
    };
    for p in paths(&a) {
        assert_eq!(p.len(), 2);
        assert_ne!(p[0], p[1]);
    }
    assert_ne!(paths(&a), paths(&b));
    assert_eq!(paths(&a), paths(&t.net(1).unwrap()));
    let sc = s.scenario().unwrap();
    // h1, sw; 3 relays and 20 clients generated, each with a link.
    assert_eq!(sc.nodes.len(), 2 + 3 + 20);
    assert_eq!(sc.links.len(), 1 + 23);
}

/// `[tor.generate]`: relays `g<i>` with log-uniform bandwidths join the
/// pool of "by-bandwidth" paths, and the faster ones carry more circuits.
#[test]
fn generated_relays_carry_paths_by_bandwidth() {
    let text = BASE.replace(
        "client = \"h1\"\npath = [\"guard\", \"middle\", \"exit\"]",
        "count = 300\npath = \"by-bandwidth\"",
    )
        + "\n[tor.generate]\nrelays = 40\nbandwidth_min = \"1Mbit\"\nbandwidth_max = \"1Gbit\"\n";
    // [tor.generate] after [[circuit]] is still a table of [tor].
    let s = parse(&text, "t.toml", &[]).unwrap();
    let t = s.tor.as_ref().unwrap();
    let g = t.generate.unwrap();
    let bw = g.bandwidths(1);
    assert_eq!(bw.len(), 40);
    assert!(
        bw.iter().all(|&b| (125_000..=125_000_000).contains(&b)),
        "{bw:?}"
    );
    let built = t.net(1).unwrap();
    let mut uses = vec![0usize; 40];
    for c in &built.circuits {
        for r in &c.relays {
            if let Some(i) = r.strip_prefix('g').and_then(|i| i.parse::<usize>().ok()) {
                uses[i] += 1;
            }
        }
    }
    let (fast, slow): (Vec<usize>, Vec<usize>) = (0..40).partition(|&i| bw[i] > 12_500_000);
    let mean = |v: &[usize]| v.iter().map(|&i| uses[i] as f64).sum::<f64>() / v.len().max(1) as f64;
    assert!(!fast.is_empty() && !slow.is_empty());
    assert!(mean(&fast) > 3.0 * mean(&slow), "{uses:?} {bw:?}");
    let sc = s.scenario().unwrap();
    assert!(sc.nodes.iter().any(|n| n.name == "g39"));
}

/// Latency statistics count only the requests issued at or after
/// `measure.warmup`; `tor_requests.csv` lists every request.
#[test]
fn latency_counts_requests_after_the_warm_up() {
    let text = BASE.replace("workload = \"web\"", "workload = \"web\"\nstart = \"1s\"");
    let sets = [
        "tor.response_delay=\"20ms\"".to_string(),
        "measure.warmup=\"3s\"".to_string(),
    ];
    let s = parse(&text, "t.toml", &sets).unwrap();
    let dir = std::env::temp_dir().join(format!("hopwise-overlay-tor-warm-{}", std::process::id()));
    let (v, _) = run(&s, &dir);
    let csv = std::fs::read_to_string(dir.join("tor_requests.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let (issued, ttfb, ttlb) = (col("issued_s"), col("ttfb_s"), col("ttlb_s"));
    let rows: Vec<Vec<f64>> = lines
        .map(|l| {
            l.split(',')
                .map(|x| x.parse().unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    let count = |k: usize, after: bool| {
        rows.iter()
            .filter(|r| (!after || r[issued] >= 3.0) && r[k].is_finite())
            .count() as u64
    };
    assert!(
        count(ttfb, false) > count(ttfb, true),
        "no request before 3 s"
    );
    assert!(count(ttfb, true) >= 5, "{}", count(ttfb, true));
    let t = &v["tor"];
    assert_eq!(
        t["ttfb_s"]["samples"].as_u64(),
        Some(count(ttfb, true)),
        "{t}"
    );
    assert_eq!(
        t["ttlb_s"]["samples"].as_u64(),
        Some(count(ttlb, true)),
        "{t}"
    );
    assert_eq!(
        t["rtt_ms"]["samples"].as_u64(),
        Some(count(ttfb, true)),
        "{t}"
    );
    assert_eq!(
        t["queueing_ms"]["samples"].as_u64(),
        Some(count(ttfb, true))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `count` copies are named `<name>-<i>`: a clash with another circuit, or
/// of their generated client hosts, is reported at the entry's key path.
#[test]
fn replicated_circuit_names_are_unique() {
    let counted = |first: &str, second: &str| {
        format!(
            "{}\n{first}\n{second}\n",
            BASE.replace("client = \"h1\"\n", "")
        )
    };
    let web1 = "[[circuit]]\nname = \"web-1\"\npath = [\"exit\"]\nworkload = \"bulk\"";
    let webs = "[[circuit]]\nname = \"web\"\ncount = 2\npath = [\"exit\"]\nworkload = \"bulk\"";
    // BASE's `web` becomes `web2` so that the two below are the only clash.
    let fix = |t: String| t.replacen("name = \"web\"", "name = \"web2\"", 1);
    check(
        &err(&fix(counted(web1, webs)), &[]),
        r#"circuit "web".count"#,
        &["`web-1` is also the name of a circuit defined above (circuit \"web-1\")"],
    );
    check(
        &err(&fix(counted(webs, web1)), &[]),
        r#"circuit "web-1".name"#,
        &["`web-1` is also the name of a circuit defined above (circuit \"web\")"],
    );
    let late = BASE.replace(
        "workload = \"web\"",
        "workload = \"web\"\ncount = 3\nstart_step = \"3s\"",
    );
    check(
        &err(&late, &[]),
        r#"circuit "web".start_step"#,
        &["circuit 2 would start at 6s", "duration = 5s"],
    );
    // 4 × 5e18 ns does not fit in 64 bits: saturates, then is refused.
    let huge = BASE.replace(
        "workload = \"web\"",
        "workload = \"web\"\ncount = 5\nstart_step = \"5000000000s\"",
    );
    check(
        &err(&huge, &[]),
        r#"circuit "web".start_step"#,
        &["circuit 4 would start at"],
    );
    check(
        &err(BASE, &["circuit[0].start=\"5s\""]),
        r#"circuit "web".start"#,
        &["at or after the end"],
    );
}

/// Names generated by different overlays are checked against each other:
/// the relay `x-0`'s host and the swarm class `x`'s first peer host.
#[test]
fn generated_names_of_two_overlays_clash() {
    let text = format!(
        "{}\n[swarm]\nsize = \"1MiB\"\n[[swarm.class]]\nname = \"x\"\nseeds = 1\npeers = 1\n\
         attach = \"sw\"\nup = \"1Mbit\"\ndown = \"1Mbit\"\n",
        BASE.replace("\"guard\"", "\"x-0\"")
    );
    let s = parse(&text, "t.toml", &[]).unwrap();
    let msg = s.scenario().unwrap_err();
    for p in [
        "two nodes are named `x-0`",
        "[tor]/[[relay]]/[[circuit]]",
        "[swarm]",
    ] {
        assert!(msg.contains(p), "`{msg}` lacks `{p}`");
    }
    assert!(s.build().is_err());
}

/// Series kept in memory are bounded like hopwise-sim's traces.
#[test]
fn sampling_intervals_fit_the_memory_budget() {
    check(
        &err(BASE, &["tor.goodput_interval=\"1ns\""]),
        "tor.goodput_interval",
        &["1 circuits", "MB of samples", "at least"],
    );
    check(
        &err(BASE, &["tor.queue_interval=\"1ns\""]),
        "tor.queue_interval",
        &["3 relays and 1 circuits", "or 0s"],
    );
    // The suggested interval is accepted.
    parse(BASE, "t.toml", &["tor.queue_interval=\"1ms\"".into()]).unwrap();
}

/// A bandwidth under 8 bit/s is a rate of 0 B/s: blamed on `bandwidth`.
#[test]
fn a_relay_bandwidth_below_one_byte_per_second() {
    check(
        &err(BASE, &["relay.guard.bandwidth=\"7bit\""]),
        r#"relay "guard".bandwidth"#,
        &["less than one byte per second"],
    );
    parse(BASE, "t.toml", &["relay.guard.bandwidth=\"8bit\"".into()]).unwrap();
}

/// `relay = []` or `circuit = []` alone would run nothing.
#[test]
fn empty_tor_lists_are_errors() {
    let net = &BASE[..BASE.find("[tor]").unwrap()];
    for empty in ["relay = []", "circuit = []"] {
        let text = format!("{empty}\n{net}");
        check(&err(&text, &[]), "circuit", &["no circuits"]);
    }
}
