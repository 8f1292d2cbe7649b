//! `[[otcp]]`: split paths deliver and beat one connection over lossy
//! links; relays follow the topology; mistakes are caught with file, key
//! and a suggestion.

use super::{error, example, out_dir, parse, run};
use hopwise_overlay::scenario;

#[test]
fn the_split_path_example_runs() {
    let sc = scenario::load(&example("otcp-split.toml"), &[]).expect("loads");
    let paths = &sc.otcp.as_ref().expect("[[otcp]]").paths;
    // Relay choice by RTT: via r1, hops of 20 and 40 ms beat the direct
    // 60 ms (and tie with r2, which comes later).
    assert_eq!(paths[1].relays, ["r1"]);
    let r = run(&sc);
    let s = r.summary();
    let o = s.otcp.as_ref().expect("otcp summary");
    let split = &o.paths[0];
    assert_eq!((split.hops, split.relays.as_str()), (3, "r1 r2"));
    assert_eq!(split.path_rtt_ms, 20.0);
    assert_eq!(split.direct_rtt_ms, 60.0);
    assert!(split.errors.is_empty(), "{}", split.errors);
    assert!(
        split.received_bytes > 10_000_000,
        "{}",
        split.received_bytes
    );
    assert_eq!(split.completion_s, None);
    let chosen = &o.paths[1];
    assert_eq!(chosen.received_bytes, 4_000_000);
    let t = chosen.completion_s.expect("4 MB in 25 s");
    assert!(t > 0.1 && t < 25.0, "{t}");
    assert!(chosen.first_byte_s.unwrap() < t);
    // The [[flow]] beside it: one connection over the same three lossy
    // links, slower than the split path.
    let flows = hopwise_sim::report::Summary::of(&r.sim, "otcp-split", 0.0).flows;
    let direct = flows.iter().find(|f| f.name == "direct").expect("the flow");
    assert!(direct.bytes_delivered > 0);
    assert!(split.goodput_bps > 2.0 * direct.goodput_bps);
    let dir = out_dir("otcp-example");
    let files = r.write_outputs(&dir, &s).unwrap();
    assert_eq!(
        files,
        [
            "otcp_paths.csv",
            "otcp_goodput.csv",
            "otcp_goodput.svg",
            "otcp_completion.svg"
        ]
    );
    // The goodput series adds up to what arrived (1 s bins).
    let csv = std::fs::read_to_string(dir.join("otcp_goodput.csv")).unwrap();
    let bytes: f64 = csv
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("split,"))
        .map(|l| l.rsplit(',').next().unwrap().parse::<f64>().unwrap() / 8.0)
        .sum();
    assert!((bytes - split.received_bytes as f64).abs() < 1.0, "{bytes}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Seed 001's point: over lossy links, three short connections beat one
/// long one. Both here are oTCP paths (`relays = []` is one connection).
#[test]
fn a_split_path_beats_the_direct_one_over_lossy_links() {
    let text = r#"
        duration = "20s"
        [defaults.link]
        rate = "100Mbit"
        delay = "10ms"
        loss = 0.003
        [[node]]
        name = "c"
        [[node]]
        name = "r1"
        [[node]]
        name = "r2"
        [[node]]
        name = "s"
        [[link]]
        a = "c"
        b = "r1"
        [[link]]
        a = "r1"
        b = "r2"
        [[link]]
        a = "r2"
        b = "s"
        [[otcp]]
        name = "split"
        from = "c"
        to = "s"
        relays = ["r1", "r2"]
        [[otcp]]
        name = "direct"
        from = "c"
        to = "s"
        relays = []
    "#;
    let r = run(&parse(text).unwrap());
    let o = r.summary().otcp.unwrap();
    let (split, direct) = (&o.paths[0], &o.paths[1]);
    assert_eq!(direct.hops, 1);
    assert!(split.errors.is_empty() && direct.errors.is_empty());
    assert!(
        split.goodput_bps > 2.0 * direct.goodput_bps,
        "split {} direct {}",
        split.goodput_bps,
        direct.goodput_bps
    );
}

/// c - r1 - s, and a detour x off the route.
const NET: &str = r#"
    duration = "10s"
    [defaults.link]
    rate = "10Mbit"
    delay = "5ms"
    [[node]]
    name = "c"
    [[node]]
    name = "r1"
    [[node]]
    name = "s"
    [[node]]
    name = "x"
    [[node]]
    name = "y"
    [[link]]
    a = "c"
    b = "r1"
    [[link]]
    a = "r1"
    b = "s"
    [[link]]
    a = "x"
    b = "r1"
"#;

fn err(otcp: &str) -> hopwise_config::Error {
    error(&format!(
        "{NET}\n[[otcp]]\nname = \"p\"\nfrom = \"c\"\nto = \"s\"\n{otcp}"
    ))
}

#[test]
fn a_relay_off_the_path_is_an_error() {
    let e = err("relays = [\"x\"]");
    assert_eq!(e.file, "t.toml");
    assert_eq!(e.key, "otcp[0] \"p\".relays[0]");
    assert!(
        e.message
            .contains("relay `x` is not on the path from `c` to `s`"),
        "{e}"
    );
    assert!(e.message.contains("c → r1 → s"), "{e}");
    assert!(
        e.message.contains("(r1)") && e.message.contains("candidates"),
        "{e}"
    );
    // A near miss is named.
    let e = error(&format!(
        "{NET}\n[[node]]\nname = \"r2\"\n[[link]]\na = \"r2\"\nb = \"x\"\n[[otcp]]\nfrom = \"c\"\nto = \"s\"\nrelays = [\"r2\"]"
    ));
    assert_eq!(e.key, "otcp[0] \"otcp0\".relays[0]");
    assert!(e.message.contains("did you mean `r1`?"), "{e}");
    // An unreachable one, and relays out of order.
    let e = err("relays = [\"y\"]");
    assert!(e.message.contains("not on the path"), "{e}");
    let e = err("relays = [\"s\"]");
    assert!(e.message.contains("an end of the path"), "{e}");
}

#[test]
fn relays_out_of_route_order_are_an_error() {
    let text = r#"
        duration = "10s"
        [defaults.link]
        rate = "10Mbit"
        delay = "5ms"
        [[node]]
        name = "a"
        [[node]]
        name = "b"
        [[node]]
        name = "c"
        [[node]]
        name = "d"
        [[link]]
        a = "a"
        b = "b"
        [[link]]
        a = "b"
        b = "c"
        [[link]]
        a = "c"
        b = "d"
        [[otcp]]
        name = "p"
        from = "a"
        to = "d"
        relays = ["c", "b"]
    "#;
    let e = error(text);
    assert_eq!(e.key, "otcp[0] \"p\".relays[1]");
    assert!(e.message.contains("`b` comes before `c`"), "{e}");
}

#[test]
fn candidates_may_be_off_the_route() {
    // The detour through x is longer: the direct path wins.
    let sc = parse(&format!(
        "{NET}\n[[otcp]]\nfrom = \"c\"\nto = \"s\"\ncandidates = [\"x\"]"
    ))
    .unwrap();
    assert!(sc.otcp.unwrap().paths[0].relays.is_empty());
}

#[test]
fn unknown_nodes_are_errors() {
    let e = error(&format!(
        "{NET}\n[[otcp]]\nname = \"p\"\nfrom = \"cc\"\nto = \"s\"\nrelays = []"
    ));
    assert_eq!(e.key, "otcp[0] \"p\".from");
    assert!(
        e.message.contains("unknown node `cc`; did you mean `c`?"),
        "{e}"
    );
    let e = err("relays = [\"r2\"]");
    assert_eq!(e.key, "otcp[0] \"p\".relays[0]");
    assert!(
        e.message.contains("unknown node `r2`; did you mean `r1`?"),
        "{e}"
    );
    let e = err("candidates = [\"xx\"]");
    assert_eq!(e.key, "otcp[0] \"p\".candidates[0]");
    assert!(e.message.contains("did you mean `x`?"), "{e}");
}

#[test]
fn unknown_cc_names_are_errors() {
    let e = err("relays = []\ncc = \"cubc\"");
    assert_eq!(e.key, "otcp[0] \"p\".cc");
    assert!(e.message.contains("did you mean `cubic`?"), "{e}");
}

#[test]
fn bad_sizes_are_errors() {
    let e = err("relays = []\nsize = 0");
    assert_eq!(e.key, "otcp[0] \"p\".size");
    assert!(
        e.message.contains("leave `size` out for a bulk transfer"),
        "{e}"
    );
    let e = err("relays = []\nsize = \"4 MBB\"");
    assert_eq!(e.key, "otcp[0] \"p\".size");
    let e = err("relays = []\nsplice = \"100B\"");
    assert_eq!(e.key, "otcp[0] \"p\".splice");
    assert!(e.message.contains("64KiB"), "{e}");
}

#[test]
fn other_mistakes_are_caught() {
    let e = err("");
    assert_eq!(e.key, "otcp[0] \"p\"");
    assert!(e.message.contains("relays = ["), "{e}");
    let e = err("relays = []\ncandidates = [\"x\"]");
    assert_eq!(e.key, "otcp[0] \"p\".candidates");
    let e = err("relays = []\nrelay = [\"r1\"]");
    assert_eq!(e.key, "otcp[0] \"p\".relay");
    assert!(e.message.contains("did you mean `relays`?"), "{e}");
    let e = error(&format!("{NET}\n[otcp]\nfrom = \"c\""));
    assert!(e.message.contains("[[otcp]]"), "{e}");
}

/// `otcp = []` alone would run nothing.
#[test]
fn an_empty_list_of_paths_is_an_error() {
    // A top-level key, so before the tables.
    let e = error(&format!("otcp = []\n{NET}"));
    assert_eq!(e.key, "otcp", "{e}");
    assert!(e.message.contains("nothing would run"), "{e}");
}
