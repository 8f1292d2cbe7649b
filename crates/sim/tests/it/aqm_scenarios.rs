//! The AQM queue tables of scenario files: their defaults, every key, and
//! errors that name the key path and the problem.

use hopwise_proto::time::Dur;
use hopwise_sim::scenario::parse;
use hopwise_sim::spec::{Limit, QueueSpec};

const FILE: &str = "aqm.toml";

/// A two-host scenario whose one link has the queue `q`.
fn with_queue(q: &str) -> String {
    format!(
        r#"
duration = "10s"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
name = "l"
a = "a"
b = "b"
rate = "10Mbit"
delay = "5ms"
queue = {q}
[[flow]]
name = "f"
from = "a"
to = "b"
cc = "cubic"
"#
    )
}

fn queue(q: &str) -> QueueSpec {
    match parse(&with_queue(q), FILE, &[]) {
        Ok(s) => s.links[0].ab.queue.clone(),
        Err(e) => panic!("{q}: {e}"),
    }
}

#[track_caller]
fn fails(q: &str, key: &str, phrase: &str) {
    match parse(&with_queue(q), FILE, &[]) {
        Ok(_) => panic!("{q} parsed"),
        Err(e) => {
            let shown = e.to_string();
            assert!(shown.starts_with(FILE), "{shown}");
            assert!(e.key.ends_with(key), "key `{}` for {q}: {shown}", e.key);
            assert!(e.message.contains(phrase), "{shown}");
        }
    }
}

#[test]
fn aqm_defaults_are_linux_and_the_papers() {
    let ms = Dur::from_millis;
    assert_eq!(
        queue(r#"{ type = "codel" }"#),
        QueueSpec::Codel {
            target: ms(5),
            interval: ms(100),
            limit: Limit::Packets(1000),
            ecn: false
        }
    );
    assert_eq!(
        queue(r#"{ type = "fq_codel" }"#),
        QueueSpec::FqCodel {
            target: ms(5),
            interval: ms(100),
            limit: Limit::Packets(10_240),
            flows: 1024,
            quantum: 1514,
            ecn: true
        }
    );
    assert_eq!(
        queue(r#"{ type = "pie" }"#),
        QueueSpec::Pie {
            target: ms(15),
            tupdate: ms(15),
            alpha: 0.125,
            beta: 1.25,
            max_burst: ms(150),
            limit: Limit::Packets(1000),
            ecn: false
        }
    );
    assert_eq!(
        queue(r#"{ type = "red", min_th = "10000B" }"#),
        QueueSpec::Red {
            min_th: Limit::Bytes(10_000),
            max_th: Limit::Bytes(30_000),
            max_p: 0.1,
            weight: 0.002,
            gentle: true,
            limit: Limit::Packets(1000),
            ecn: false
        }
    );
}

#[test]
fn aqm_keys_are_read() {
    let ms = Dur::from_millis;
    assert_eq!(
        queue(
            r#"{ type = "fq_codel", target = "2ms", interval = "50ms", limit = "500pkt", flows = 64, quantum = "300B", ecn = false }"#
        ),
        QueueSpec::FqCodel {
            target: ms(2),
            interval: ms(50),
            limit: Limit::Packets(500),
            flows: 64,
            quantum: 300,
            ecn: false
        }
    );
    assert_eq!(
        queue(
            r#"{ type = "pie", target = "20ms", tupdate = "30ms", alpha = 0.25, beta = 2, max_burst = "0s", limit = "50pkt", ecn = true }"#
        ),
        QueueSpec::Pie {
            target: ms(20),
            tupdate: ms(30),
            alpha: 0.25,
            beta: 2.0,
            max_burst: Dur::ZERO,
            limit: Limit::Packets(50),
            ecn: true
        }
    );
    assert_eq!(
        queue(
            r#"{ type = "red", min_th = "3pkt", max_th = "9pkt", max_p = 0.2, weight = 0.01, gentle = false, ecn = true }"#
        ),
        QueueSpec::Red {
            min_th: Limit::Packets(3),
            max_th: Limit::Packets(9),
            max_p: 0.2,
            weight: 0.01,
            gentle: false,
            limit: Limit::Packets(1000),
            ecn: true
        }
    );
}

#[test]
fn aqm_errors_name_the_key() {
    fails(r#"{ type = "codell" }"#, "queue.type", "codel");
    fails(r#"{ type = "codel", tagret = "5ms" }"#, "tagret", "target");
    fails(
        r#"{ type = "codel", target = "0ms" }"#,
        "queue.target",
        "positive",
    );
    fails(
        r#"{ type = "codel", target = "100ms", interval = "100ms" }"#,
        "queue.target",
        "below the interval",
    );
    fails(
        r#"{ type = "codel", ecn = "yes" }"#,
        "queue.ecn",
        "true or false",
    );
    fails(r#"{ type = "fq_codel", flows = 0 }"#, "queue.flows", "");
    fails(r#"{ type = "fq_codel", quantum = 0 }"#, "queue.quantum", "");
    fails(
        r#"{ type = "fq_codel", limit = "0pkt" }"#,
        "queue.limit",
        "0",
    );
    fails(r#"{ type = "pie", alpha = -1 }"#, "queue.alpha", "gain");
    fails(
        r#"{ type = "pie", tupdate = "0s" }"#,
        "queue.tupdate",
        "positive",
    );
    fails(
        r#"{ type = "red", min_th = "5pkt", max_th = "15000B" }"#,
        "queue.max_th",
        "unit of min_th",
    );
    fails(
        r#"{ type = "red", min_th = "5pkt", max_th = "5pkt" }"#,
        "queue.max_th",
        "above min_th",
    );
    fails(
        r#"{ type = "red", max_p = 0 }"#,
        "queue.max_p",
        "probability",
    );
    fails(r#"{ type = "red", weight = 2 }"#, "queue.weight", "0.002");
}
