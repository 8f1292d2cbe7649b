//! The same scenario and seed give byte-identical results; a different seed
//! gives a different event log.

use crate::common::*;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::report::{write_outputs, Summary};
use hopwise_sim::spec::{Limit, Scenario};
use hopwise_sim::Sim;
use std::path::Path;

fn scenario(seed: u64) -> Scenario {
    let mut s = dumbbell(
        3,
        Rate::from_mbps(10),
        Dur::from_millis(10),
        Dur::from_millis(1),
        Limit::Packets(30),
        Dur::from_secs(15),
    );
    s.seed = seed;
    s.start_jitter = Dur::from_millis(100);
    s.measure.trace_interval = Dur::from_millis(50);
    for (i, cc) in ["newreno", "cubic", "ledbat"].iter().enumerate() {
        // The LEDBAT flow runs the other way, so that data and ACKs share
        // both bottleneck queues (and they carry ACK bursts).
        let (from, to) = (format!("h{i}"), format!("d{i}"));
        let (from, to) = if i == 2 { (to, from) } else { (from, to) };
        s.flows.push(bulk(
            &format!("f{i}"),
            &from,
            &to,
            CcConfig::from_name(cc).unwrap(),
        ));
    }
    // Random loss on the reverse path exercises the per-link random streams.
    s.links.last_mut().unwrap().ba.loss = 0.01;
    s
}

fn run(seed: u64, out: &Path) -> (u64, Summary) {
    let sc = scenario(seed);
    let mut sim = Sim::new(&sc).unwrap();
    sim.run();
    let mut sum = Summary::of(&sim, "det", 0.0);
    sum.wall_s = 0.0;
    write_outputs(out, &sim, &sum).unwrap();
    (sim.event_hash(), sum)
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn same_seed_same_bytes_different_seed_different_hash() {
    let base = std::env::temp_dir().join(format!("hopwise-det-{}", std::process::id()));
    let (h1, s1) = run(7, &base.join("a"));
    let (h2, s2) = run(7, &base.join("b"));
    assert_eq!(h1, h2, "event-log hashes of identical runs");
    assert_eq!(s1, s2);
    let (fa, fb) = (files(&base.join("a")), files(&base.join("b")));
    assert!(
        fa.len() >= 8,
        "all outputs written: {:?}",
        fa.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    assert_eq!(fa, fb, "every output file is byte-identical");
    assert!(s1.events > 10_000);

    let (h3, s3) = run(8, &base.join("c"));
    assert_ne!(h1, h3, "a different seed changes the event log");
    assert_ne!(s1.flows[0].bytes_delivered, s3.flows[0].bytes_delivered);
    let _ = std::fs::remove_dir_all(&base);
}

/// `flows.csv` and `links.csv` hold a row per flow and link direction of the
/// summary, every row as wide as the header, with the summary's values.
#[test]
fn flow_and_link_tables_match_the_summary() {
    let out = std::env::temp_dir().join(format!("hopwise-csv-{}", std::process::id()));
    let (_, sum) = run(3, &out);
    let table = |name: &str| -> (Vec<String>, Vec<Vec<String>>) {
        let text = std::fs::read_to_string(out.join(name)).unwrap();
        let mut lines = text.lines();
        let head: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
        let rows: Vec<Vec<String>> = lines
            .map(|l| l.split(',').map(String::from).collect())
            .collect();
        for r in &rows {
            assert_eq!(
                r.len(),
                head.len(),
                "{name}: row {r:?} against header {head:?}"
            );
        }
        (head, rows)
    };
    let col = |head: &[String], name: &str| head.iter().position(|h| h == name).unwrap();

    let (head, rows) = table("flows.csv");
    assert_eq!(rows.len(), sum.flows.len());
    let (name, reset) = (col(&head, "flow"), col(&head, "reset"));
    for (r, f) in rows.iter().zip(&sum.flows) {
        assert_eq!(r[name], f.name);
        assert_eq!(r[reset], f.reset.to_string());
    }

    let (head, rows) = table("links.csv");
    assert_eq!(rows.len(), sum.links.len());
    let (name, drops, burst) = (
        col(&head, "link"),
        col(&head, "drops"),
        col(&head, "median_ack_burst"),
    );
    let mut bursts = 0;
    for (r, l) in rows.iter().zip(&sum.links) {
        assert_eq!(r[name], l.name);
        assert_eq!(r[drops], l.drops.to_string());
        assert_eq!(
            r[burst],
            l.median_ack_burst.map_or(String::new(), |b| b.to_string())
        );
        bursts += l.median_ack_burst.is_some() as u32;
    }
    assert!(bursts > 0, "some queue carried ACK bursts");
    let _ = std::fs::remove_dir_all(&out);
}

/// Every AQM, with and without ECN marking, on both directions of the
/// bottleneck of [`scenario`]: the same seed gives the same event log and
/// summary; PIE and RED draw their drops and FQ-CoDel keys its hash from
/// the seed, so another seed gives another log.
#[test]
fn aqm_runs_are_deterministic() {
    use hopwise_sim::spec::QueueSpec;
    let ms = Dur::from_millis;
    let queues = [
        QueueSpec::Codel {
            target: ms(5),
            interval: ms(100),
            limit: Limit::Packets(1000),
            ecn: false,
        },
        QueueSpec::FqCodel {
            target: ms(5),
            interval: ms(100),
            limit: Limit::Packets(1000),
            flows: 1024,
            quantum: 1514,
            ecn: true,
        },
        QueueSpec::Pie {
            target: ms(15),
            tupdate: ms(15),
            alpha: 0.125,
            beta: 1.25,
            max_burst: ms(150),
            limit: Limit::Packets(1000),
            ecn: false,
        },
        QueueSpec::Red {
            min_th: Limit::Packets(5),
            max_th: Limit::Packets(15),
            max_p: 0.1,
            weight: 0.002,
            gentle: true,
            limit: Limit::Packets(1000),
            ecn: false,
        },
    ];
    for q in queues {
        let go = |seed| {
            let mut sc = scenario(seed);
            sc.duration = Dur::from_secs(8);
            let l = sc
                .links
                .iter_mut()
                .find(|l| l.name == "bottleneck")
                .unwrap();
            l.ab.queue = q.clone();
            l.ba.queue = q.clone();
            let mut sim = Sim::new(&sc).unwrap();
            sim.run();
            let sum = Summary::of(&sim, "det", 0.0);
            (sim.event_hash(), sum)
        };
        let (h1, s1) = go(7);
        let (h2, s2) = go(7);
        assert_eq!(h1, h2, "{q:?}");
        assert_eq!(s1, s2, "{q:?}");
        let b = s1.link("bottleneck:ab").unwrap();
        assert!(b.aqm_drops > 0, "the AQM acted: {q:?} {b:?}");
        let (h3, _) = go(8);
        assert_ne!(h1, h3, "{q:?}");
    }
}

/// The same holds with every new TCP mechanism on: BBR (always paced, with
/// delivery-rate sampling), CUBIC with pacing and HyStart++, DCTCP and
/// NewReno with ECN negotiated, and NewReno and BBR with RACK-TLP.
#[test]
fn deterministic_with_bbr_pacing_hystart_and_ecn() {
    let run = |seed: u64| {
        let mut s = dumbbell(
            4,
            Rate::from_mbps(10),
            Dur::from_millis(10),
            Dur::from_millis(1),
            Limit::Packets(30),
            Dur::from_secs(10),
        );
        s.seed = seed;
        s.start_jitter = Dur::from_millis(100);
        for (i, cc) in ["bbr", "cubic", "dctcp", "newreno"].iter().enumerate() {
            let mut f = bulk(
                &format!("f{i}"),
                &format!("h{i}"),
                &format!("d{i}"),
                CcConfig::from_name(cc).unwrap(),
            );
            f.tcp.pacing = i == 1;
            f.tcp.hystart = i == 1;
            f.tcp.ecn = i >= 2;
            f.tcp.rack = i == 0 || i == 3;
            s.flows.push(f);
        }
        s.links.last_mut().unwrap().ba.loss = 0.01;
        let mut sim = Sim::new(&s).unwrap();
        sim.run();
        let mut sum = Summary::of(&sim, "det-new", 0.0);
        sum.wall_s = 0.0;
        (sim.event_hash(), sum)
    };
    let (h1, s1) = run(5);
    let (h2, s2) = run(5);
    assert_eq!(h1, h2);
    assert_eq!(s1, s2);
    assert!(
        s1.flows.iter().all(|f| f.bytes_delivered > 0),
        "every flow moved data"
    );
    let (h3, _) = run(6);
    assert_ne!(h1, h3);
}
