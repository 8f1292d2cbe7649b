//! End-to-end transfers over client → entry → middle → exit with BackTap,
//! checking every byte and the order, with and without random loss.

use crate::backtap_net;
use crate::backtap_net::{secs, LinkCfg, Net};
use hopwise_proto::backtap::{Config, Direction};
use hopwise_proto::time::Dur;

/// Four nodes in a line, one link config for every hop.
fn chain(cfg: Config, link: LinkCfg, seed: u64) -> (Net, backtap_net::Circ) {
    let mut net = Net::new(seed);
    let n: Vec<usize> = (0..4).map(|_| net.add_node(cfg.clone())).collect();
    for w in n.windows(2) {
        net.connect(w[0], w[1], link);
    }
    let c = net.add_circuit(&n);
    (net, c)
}

fn report(net: &Net, what: &str) {
    for (i, l) in net.links.iter().enumerate() {
        eprintln!(
            "{what}: link {i}: sent {} lost {} overflow {} max queue {}",
            l.sent, l.lost, l.overflow, l.max_queue
        );
    }
    for (i, f) in net.flows.iter().enumerate() {
        eprintln!(
            "{what}: flow {i}: got {} of {} done {:?} error {:?}",
            f.got, f.total, f.done_at, f.error
        );
    }
    for (i, node) in net.nodes.iter().enumerate() {
        eprintln!("{what}: node {i}: {:?}", node.ep.stats());
    }
}

fn transfer(bytes: u64, loss: f64, both: bool, seed: u64, limit_s: f64) -> Net {
    let link = LinkCfg::new(20_000_000, 5, loss);
    let (mut net, c) = chain(Config::default(), link, seed);
    net.start_flow(&c, Direction::Forward, bytes, 1);
    if both {
        net.start_flow(&c, Direction::Backward, bytes / 2, 2);
    }
    let ok = net.run_to_completion(secs(limit_s), Dur::from_millis(100));
    report(&net, "transfer");
    assert!(ok, "transfer did not complete byte-exact");
    for f in &net.flows {
        assert_eq!(f.got, f.total);
        assert!(f.error.is_none());
    }
    net
}

#[test]
fn clean_transfer_fills_the_path() {
    let net = transfer(5_000_000, 0.0, false, 1, 60.0);
    let done = net.flows[0].done_at.unwrap().as_secs_f64();
    let goodput = 5_000_000.0 * 8.0 / done;
    eprintln!("clean: {done:.3} s, goodput {:.2} Mbit/s", goodput / 1e6);
    for l in &net.links {
        assert_eq!(l.lost + l.overflow, 0);
    }
    for node in &net.nodes {
        let s = node.ep.stats();
        assert_eq!(
            s.decode_errors + s.invalid_items + s.unknown_circuit + s.drops,
            0,
            "{s:?}"
        );
    }
    let st = net.stats(0, net.flows[0].src.1, Direction::Forward);
    assert_eq!(st.retransmits, 0);
    // 20 Mbit/s links; cells are 498/547 of the wire bytes, and the window
    // needs a second or so to open from 2 cells.
    assert!(goodput > 15e6, "goodput {goodput}");
}

#[test]
fn five_percent_loss_5mb_byte_exact() {
    let net = transfer(5_000_000, 0.05, false, 2, 300.0);
    let done = net.flows[0].done_at.unwrap().as_secs_f64();
    eprintln!("5% loss, 5 MB: {done:.3} s simulated");
    let lost: u64 = net.links.iter().map(|l| l.lost).sum();
    assert!(lost > 100, "the links lost datagrams ({lost})");
    let retx: u64 = (0..3)
        .map(|i| {
            let s = net.stats(i, hopwise_proto::backtap::CircuitId(0), Direction::Forward);
            s.retransmits
        })
        .sum();
    assert!(retx > 0, "every hop repaired losses");
}

#[test]
fn five_percent_loss_both_directions_byte_exact() {
    transfer(3_000_000, 0.05, true, 3, 300.0);
}

/// 50 MB through three hops that each lose 5 % of the datagrams in both
/// directions (about 1 s of wall time in the test profile).
#[test]
fn five_percent_loss_50mb_byte_exact() {
    #[allow(clippy::disallowed_methods)]
    let t0 = std::time::Instant::now();
    let net = transfer(50_000_000, 0.05, false, 4, 3000.0);
    eprintln!(
        "50 MB at 5% loss: {:.1} s simulated, {:.1} s wall, {} datagrams",
        net.flows[0].done_at.unwrap().as_secs_f64(),
        t0.elapsed().as_secs_f64(),
        net.datagrams
    );
}
