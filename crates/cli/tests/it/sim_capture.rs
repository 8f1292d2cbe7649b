//! `hopwise sim --capture` end to end: pcap files, the hosts file and the
//! summary's capture list; the scenario's own `measure.capture` adds to it.

use std::process::Command;

#[test]
fn sim_writes_pcap_files_for_flag_and_scenario_captures() {
    let d = std::env::temp_dir().join(format!("hopwise-cli-capture-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let sc = d.join("two.toml");
    std::fs::write(
        &sc,
        r#"
duration = "5s"
[[node]]
name = "h1"
[[node]]
name = "r"
kind = "switch"
[[node]]
name = "h2"
[[link]]
a = "h1"
b = "r"
rate = "100Mbit"
delay = "1ms"
[[link]]
name = "bottleneck"
a = "r"
b = "h2"
rate = "10Mbit"
delay = "10ms"
queue = "50pkt"
[[flow]]
from = "h1"
to = "h2"
cc = "cubic"
[measure]
capture = ["h1-r:ab"]
"#,
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .arg("sim")
        .arg(&sc)
        .args(["--quiet", "--capture", "bottleneck:ab", "--out"])
        .arg(d.join("out"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("out/summary.json")).unwrap())
            .unwrap();
    let caps = summary["captures"].as_array().unwrap();
    let names: Vec<&str> = caps.iter().map(|c| c["file"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["capture-h1-r-ab.pcap", "capture-bottleneck-ab.pcap"]
    );
    for c in caps {
        let f = std::fs::read(d.join("out").join(c["file"].as_str().unwrap())).unwrap();
        assert_eq!(&f[0..4], &0xA1B2_3C4Du32.to_le_bytes());
        // As many records as the summary says, nothing left over, original
        // lengths adding up to its byte count.
        let recs = hopwise_sim::pcap::read(&f).unwrap();
        let n = recs.len() as u64;
        let bytes: u64 = recs.iter().map(|r| u64::from(r.orig_len)).sum();
        assert_eq!(n, c["packets"].as_u64().unwrap(), "{c}");
        assert_eq!(bytes, c["bytes"].as_u64().unwrap(), "{c}");
        assert!(n > 1000, "{c}");
    }
    let hosts = std::fs::read_to_string(d.join("out/capture-hosts")).unwrap();
    assert!(hosts.starts_with("10.0.0.1\t"), "{hosts}");
    // Files that only look like captures, or are not this program's, stay:
    // `capture-eth0-ab.pcap` has a capture's name, but no run of hopwise
    // recorded it in summary.json (tcpdump wrote it, say).
    for keep in [
        "capture-notes.pcap",
        "notes.txt",
        "capture-x-ab.pcapng",
        "capture-eth0-ab.pcap",
    ] {
        std::fs::write(d.join("out").join(keep), b"mine").unwrap();
    }
    // Run again without the flag: the bottleneck's capture is now an
    // earlier run's, so it is removed, and the run says so in one line.
    let again = Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .arg("sim")
        .arg(&sc)
        .args(["--quiet", "--out"])
        .arg(d.join("out"))
        .output()
        .unwrap();
    assert!(again.status.success());
    let note = String::from_utf8_lossy(&again.stderr);
    let lines: Vec<&str> = note.lines().filter(|l| l.starts_with("removed")).collect();
    assert_eq!(lines.len(), 1, "{note}");
    assert!(
        lines[0].starts_with("removed 1 capture file of an earlier run from ")
            && lines[0].ends_with(": capture-bottleneck-ab.pcap"),
        "{note}"
    );
    // The files kept are named as not this run's, in a line of their own.
    let kept: Vec<&str> = note.lines().filter(|l| l.starts_with("note:")).collect();
    assert_eq!(kept.len(), 1, "{note}");
    assert!(
        kept[0].ends_with(
            "also holds 4 files this run did not write (from an earlier run?): \
             capture-eth0-ab.pcap, capture-notes.pcap, capture-x-ab.pcapng, notes.txt"
        ),
        "{note}"
    );
    assert!(!d.join("out/capture-bottleneck-ab.pcap").exists());
    // The scenario's own capture and the hosts file are this run's again.
    assert!(d.join("out/capture-h1-r-ab.pcap").exists());
    assert!(d.join("out/capture-hosts").exists());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("out/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["captures"].as_array().unwrap().len(), 1);
    // Without any capture, the hosts file goes too; the user's files stay.
    let none = Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .arg("sim")
        .arg(&sc)
        .args(["--quiet", "--set", "measure.capture=[]", "--out"])
        .arg(d.join("out"))
        .output()
        .unwrap();
    assert!(none.status.success());
    let note = String::from_utf8_lossy(&none.stderr);
    assert!(
        note.contains("removed 2 capture files of an earlier run")
            && note.contains(": capture-h1-r-ab.pcap, capture-hosts"),
        "{note}"
    );
    assert!(!d.join("out/capture-h1-r-ab.pcap").exists());
    assert!(!d.join("out/capture-hosts").exists());
    for keep in [
        "capture-notes.pcap",
        "notes.txt",
        "capture-x-ab.pcapng",
        "capture-eth0-ab.pcap",
    ] {
        assert_eq!(std::fs::read(d.join("out").join(keep)).unwrap(), b"mine");
    }
    // Nothing stale, nothing said.
    let quiet = Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .arg("sim")
        .arg(&sc)
        .args(["--quiet", "--set", "measure.capture=[]", "--out"])
        .arg(d.join("out"))
        .output()
        .unwrap();
    assert!(quiet.status.success());
    let note = String::from_utf8_lossy(&quiet.stderr);
    assert!(!note.contains("removed"), "{note}");
    // A bad link is refused before anything runs, naming the flag.
    let bad = Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .args(["sim", "--capture", "nolink", "--out"])
        .arg(d.join("bad"))
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("--capture") && err.contains("unknown link `nolink`"),
        "{err}"
    );
    assert!(!err.contains("running"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Only a run that loads and builds its scenario removes anything, and
/// only what the previous run's summary.json lists: a scenario that fails
/// to load or to build, or a missing or unreadable summary.json, leaves
/// every file where it was.
#[test]
fn failed_runs_and_unknown_files_remove_nothing() {
    let d = std::env::temp_dir().join(format!("hopwise-cli-capture-keep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let out_dir = d.join("out");
    let two = r#"
duration = "1s"
[[node]]
name = "h1"
[[node]]
name = "h2"
[[link]]
name = "bottleneck"
a = "h1"
b = "h2"
rate = "10Mbit"
delay = "5ms"
[[flow]]
from = "h1"
to = "h2"
cc = "cubic"
"#;
    let sc = d.join("two.toml");
    std::fs::write(&sc, two).unwrap();
    let run = |scenario: &std::path::Path, extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_hopwise"))
            .arg("sim")
            .arg(scenario)
            .arg("--quiet")
            .args(extra)
            .arg("--out")
            .arg(&out_dir)
            .output()
            .unwrap()
    };
    let first = run(&sc, &["--capture", "bottleneck:ab"]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    std::fs::write(out_dir.join("capture-eth0-ab.pcap"), b"tcpdump").unwrap();
    let ours = ["capture-bottleneck-ab.pcap", "capture-hosts"];
    let all_there = || {
        for f in ours {
            assert!(out_dir.join(f).is_file(), "{f}");
        }
        assert_eq!(
            std::fs::read(out_dir.join("capture-eth0-ab.pcap")).unwrap(),
            b"tcpdump"
        );
    };
    // A scenario that does not parse, a bad --set, and a scenario that
    // parses but is refused (no path between the flow's ends).
    let broken = d.join("broken.toml");
    std::fs::write(&broken, "duration = \"1s\"\n[[node]\n").unwrap();
    let unrouted = d.join("unrouted.toml");
    std::fs::write(
        &unrouted,
        two.replace("[[flow]]", "[[node]]\nname = \"h3\"\n[[flow]]")
            .replace("to = \"h2\"", "to = \"h3\""),
    )
    .unwrap();
    for (scenario, extra, why) in [
        (&broken, &[][..], "broken"),
        (&sc, &["--set", "nosuchkey=1"][..], "nosuchkey"),
        (&unrouted, &[][..], "no path"),
    ] {
        let o = run(scenario, extra);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{why}: {err}");
        assert!(!err.contains("removed"), "{why}: {err}");
        if why == "no path" {
            assert!(err.contains("no path"), "{err}");
        }
        all_there();
    }
    // summary.json unreadable, then missing: nothing is known to be an
    // earlier run's, so nothing goes (and the run writes a new one).
    for summary in [Some("{ not json"), None] {
        match summary {
            Some(text) => std::fs::write(out_dir.join("summary.json"), text).unwrap(),
            None => std::fs::remove_file(out_dir.join("summary.json")).unwrap(),
        }
        let o = run(&sc, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        assert!(!err.contains("removed"), "{err}");
        all_there();
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A link name too long for a file name still gets its capture (the name
/// cut, with a hash), and the run line counts in the singular.
#[test]
fn long_link_names_are_captured() {
    let d = std::env::temp_dir().join(format!("hopwise-cli-capture-long-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let long = "L".repeat(300);
    let sc = d.join("long.toml");
    std::fs::write(
        &sc,
        format!(
            r#"
duration = "2s"
[[node]]
name = "h1"
[[node]]
name = "h2"
[[link]]
name = "{long}"
a = "h1"
b = "h2"
rate = "10Mbit"
delay = "5ms"
[[flow]]
from = "h1"
to = "h2"
cc = "cubic"
"#
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .arg("sim")
        .arg(&sc)
        .args(["--capture", &long, "--out"])
        .arg(d.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(": 2 nodes, 1 link, 1 flow, 2s simulated"),
        "{err}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("out/summary.json")).unwrap())
            .unwrap();
    let caps = summary["captures"].as_array().unwrap();
    assert_eq!(caps.len(), 2);
    for (c, dir) in caps.iter().zip(["ab", "ba"]) {
        assert_eq!(c["link"].as_str().unwrap(), format!("{long}:{dir}"));
        let file = c["file"].as_str().unwrap();
        assert!(file.len() < 120, "{file}");
        assert!(file.ends_with(&format!("-{dir}.pcap")), "{file}");
        let recs =
            hopwise_sim::pcap::read(&std::fs::read(d.join("out").join(file)).unwrap()).unwrap();
        assert!(recs.len() > 100, "{file}: {} packets", recs.len());
    }
    let _ = std::fs::remove_dir_all(&d);
}
