//! `[swarm]`: the example runs and every leecher gets the file; mistakes
//! are caught with file, key and a suggestion.

use super::{error, example, out_dir, parse, run};
use hopwise_overlay::scenario;

#[test]
fn the_small_swarm_example_completes() {
    let sc = scenario::load(&example("swarm-small.toml"), &[]).expect("loads");
    let swarm = sc.swarm.as_ref().expect("a [swarm] section");
    assert_eq!(swarm.pieces, 8);
    // Generated hosts and their links join the file's three nodes.
    let full = sc.scenario().unwrap();
    assert_eq!(full.nodes.len(), 3 + 5 + 3);
    let r = run(&sc);
    let s = r.summary();
    let sw = s.swarm.as_ref().expect("swarm summary");
    assert!(sw.errors.is_empty(), "{:?}", sw.errors);
    let leechers: Vec<_> = sw.peers.iter().filter(|p| !p.seed).collect();
    assert_eq!(leechers.len(), 8);
    for p in &leechers {
        // Every byte of the file, and the duplicates of the end game.
        assert_eq!(
            p.downloaded_bytes - p.duplicate_blocks * (16 << 10),
            2 << 20,
            "{}",
            p.peer
        );
        let d = p.download_s.expect("completed");
        assert!(d > 0.0 && d < 120.0, "{}: {d}", p.peer);
    }
    // The seed uploads; every block received was sent (some sent ones were
    // lost with a peer that left).
    let up: u64 = sw.peers.iter().map(|p| p.uploaded_bytes).sum();
    let down: u64 = sw.peers.iter().map(|p| p.downloaded_bytes).sum();
    assert!(sw.peers.iter().any(|p| p.seed && p.uploaded_bytes > 0));
    assert!(up >= down && down >= 8 * (2 << 20), "{up} {down}");
    let home = sw
        .peers
        .iter()
        .find(|p| p.node == "home")
        .expect("the peer on home");
    assert_eq!(home.class, "home");
    let classes: Vec<(&str, usize)> = sw
        .classes
        .iter()
        .map(|c| (c.class.as_str(), c.completed))
        .collect();
    assert_eq!(classes, [("newreno", 4), ("ledbat", 3), ("home", 1)]);
    // The TCP flow ran beside it.
    let dir = out_dir("swarm-example");
    let files = r.write_outputs(&dir, &s).unwrap();
    assert_eq!(
        files,
        [
            "swarm_peers.csv",
            "swarm_completion.csv",
            "swarm_completion.svg"
        ]
    );
    let cdf = std::fs::read_to_string(dir.join("swarm_completion.csv")).unwrap();
    let mut lines = cdf.lines();
    assert_eq!(lines.next(), Some("class,download_s,fraction"));
    assert_eq!(lines.clone().count(), 8);
    assert!(
        cdf.contains("home,")
            && cdf
                .lines()
                .any(|l| l.starts_with("newreno,") && l.ends_with(",1"))
    );
    let json = serde_json::to_value(&s).unwrap();
    assert!(
        json["swarm"]["classes"][0]["download_median_s"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn overrides_reach_the_swarm() {
    let sets = [
        "swarm.seed_policy=immediate-leave".to_string(),
        "swarm.class[1].cc=nice".to_string(),
    ];
    let sc = scenario::load(&example("swarm-small.toml"), &sets).expect("loads");
    assert_eq!(sc.swarm.as_ref().unwrap().classes[1].cc_name, "nice");
    let s = run(&sc).summary().swarm.unwrap();
    // Every leecher left as soon as it had the file; the seed stayed.
    for p in &s.peers {
        assert_eq!(p.left_s.is_some(), !p.seed, "{}", p.peer);
        if !p.seed {
            assert_eq!(p.left_s, p.completed_s, "{}", p.peer);
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_swarm() {
    let text = r#"
        duration = "60s"
        [[node]]
        name = "sw"
        kind = "switch"
        [swarm]
        size = "512KiB"
        arrival_mean = "1s"
        [[swarm.class]]
        name = "a"
        attach = "sw"
        seeds = 1
        peers = 3
    "#;
    let times = |seed: u64| {
        let mut sc = parse(text).unwrap();
        sc.base.seed = seed;
        let r = run(&sc);
        let s = r.summary().swarm.unwrap();
        s.peers.iter().map(|p| p.download_s).collect::<Vec<_>>()
    };
    let a = times(1);
    assert!(a.iter().skip(1).all(|t| t.is_some()), "{a:?}");
    assert_eq!(a, times(1));
    assert_ne!(a, times(2));
}

/// Base topology for the error tests.
const NET: &str = r#"
    duration = "10s"
    [[node]]
    name = "sw"
    kind = "switch"
    [[node]]
    name = "h1"
    [[link]]
    a = "h1"
    b = "sw"
    rate = "10Mbit"
    delay = "1ms"
"#;

fn err(swarm: &str) -> hopwise_config::Error {
    error(&format!("{NET}\n{swarm}"))
}

#[test]
fn a_swarm_without_peers_is_an_error() {
    let e = err("[swarm]\nsize = \"1MiB\"");
    assert_eq!(e.file, "t.toml");
    assert_eq!(e.key, "swarm");
    assert!(e.message.contains("a swarm without peers"), "{e}");
    assert!(e.message.contains("[[swarm.class]]"), "{e}");
    let e = err("[swarm]\nsize = \"1MiB\"\n[[swarm.class]]\nattach = \"sw\"\nseeds = 1\npeers = 0");
    assert_eq!(e.key, "swarm.class");
    assert!(e.message.contains("a swarm without peers"), "{e}");
}

#[test]
fn no_seed_is_an_error() {
    let e =
        err("[swarm]\nsize = \"1MiB\"\n[[swarm.class]]\nname = \"a\"\nattach = \"sw\"\npeers = 2");
    assert_eq!(e.key, "swarm.class");
    assert!(e.message.contains("seeds = 1"), "{e}");
}

#[test]
fn unknown_nodes_are_errors() {
    let e = err("[swarm]\nsize = \"1MiB\"\n[[swarm.class]]\nname = \"a\"\nattach = \"sww\"\nseeds = 1\npeers = 2");
    assert_eq!(e.key, "swarm.class[0] \"a\".attach");
    assert!(
        e.message.contains("unknown node `sww`; did you mean `sw`?"),
        "{e}"
    );
    let e = err("[swarm]\nsize = \"1MiB\"\n[[swarm.class]]\nname = \"a\"\nnodes = [\"h1\", \"h2\"]\nseeds = 1");
    assert_eq!(e.key, "swarm.class[0] \"a\".nodes[1]");
    assert!(
        e.message.contains("unknown node `h2`; did you mean `h1`?"),
        "{e}"
    );
}

#[test]
fn unknown_cc_names_are_errors() {
    let e = err("[swarm]\nsize = \"1MiB\"\n[[swarm.class]]\nname = \"a\"\nattach = \"sw\"\nseeds = 1\npeers = 2\ncc = \"ledbt\"");
    assert_eq!(e.key, "swarm.class[0] \"a\".cc");
    assert!(e.message.contains("did you mean `ledbat`?"), "{e}");
}

#[test]
fn bad_sizes_are_errors() {
    let cls = "[[swarm.class]]\nattach = \"sw\"\nseeds = 1\npeers = 2";
    let e = err(&format!("[swarm]\nsize = \"1000kB\"\n{cls}"));
    assert_eq!(e.key, "swarm.size");
    assert!(
        e.message.contains("did you mean 786432 B (3 pieces)?"),
        "{e}"
    );
    let e = err(&format!(
        "[swarm]\nsize = \"1MiB\"\npiece_size = \"10kB\"\n{cls}"
    ));
    assert_eq!(e.key, "swarm.piece_size");
    assert!(e.message.contains("did you mean 16384 B?"), "{e}");
    let e = err(&format!("[swarm]\nsize = \"1 MiBB\"\n{cls}"));
    assert_eq!(e.key, "swarm.size");
    let e = err(&format!("[swarm]\n{cls}"));
    assert_eq!(e.key, "swarm.size");
    assert!(e.message.contains("missing required key"), "{e}");
}

#[test]
fn other_mistakes_are_caught() {
    // A misspelt key, with the keys allowed.
    let e = err("[swarm]\nsize = \"1MiB\"\nseed_polcy = \"never-leave\"");
    assert_eq!(e.key, "swarm.seed_polcy");
    assert!(e.message.contains("seed_policy"), "{e}");
    // An unknown seed policy.
    let e = err("[swarm]\nsize = \"1MiB\"\nseed_policy = \"random\"\n[[swarm.class]]\nattach = \"sw\"\nseeds = 1\npeers = 1");
    assert_eq!(e.key, "swarm.seed_policy");
    assert!(e.message.contains("random-stay"), "{e}");
    // Access-link keys on a [[node]] peer.
    let e = err("[swarm]\nsize = \"1MiB\"\n[[swarm.class]]\nname = \"a\"\nnodes = [\"h1\"]\nseeds = 1\nup = \"1Mbit\"");
    assert_eq!(e.key, "swarm.class[0] \"a\".up");
    // Two peers on one node.
    let e = err("[swarm]\nsize = \"1MiB\"\n[[swarm.class]]\nname = \"a\"\nnodes = [\"h1\", \"h1\"]\nseeds = 1");
    assert_eq!(e.key, "swarm.class[0] \"a\".nodes[1]");
    assert!(e.message.contains("already runs a peer"), "{e}");
    // Nowhere to run.
    let e = err("[swarm]\nsize = \"1MiB\"\n[[swarm.class]]\nname = \"a\"\nseeds = 1\npeers = 1");
    assert_eq!(e.key, "swarm.class[0] \"a\"");
    assert!(e.message.contains("attach"), "{e}");
}

/// A run shorter than the arrivals: each class reports its configured
/// leechers beside those that arrived.
#[test]
fn leecher_counts_include_those_not_yet_arrived() {
    let sets = [
        "duration=\"30s\"",
        "swarm.arrival_mean=\"20s\"",
        "flow.download.stop=\"25s\"",
    ];
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = scenario::load(&example("swarm-small.toml"), &sets).unwrap();
    let s = run(&sc).summary();
    let sw = s.swarm.as_ref().unwrap();
    let counts: Vec<(&str, usize)> = sw
        .classes
        .iter()
        .map(|c| (c.class.as_str(), c.leechers))
        .collect();
    assert_eq!(counts, [("newreno", 4), ("ledbat", 3), ("home", 1)]);
    let arrived: usize = sw.classes.iter().map(|c| c.arrived).sum();
    let joined = sw.peers.iter().filter(|p| !p.seed).count();
    assert_eq!(arrived, joined);
    assert!(arrived < 8, "all 8 leechers arrived within 30 s");
    for c in &sw.classes {
        assert!(c.completed <= c.arrived && c.arrived <= c.leechers, "{c:?}");
    }
}
