//! Seed 002 §4 (backtap-network): Fig. 6b/c inter-fairness against TCP
//! downloads on the relay's host, and Tor Vegas's standing queue in the
//! single circuit of Fig. 5, on tiny plans.

use hopwise_experiment::{Ctx, Outputs, Silent, Verdict};
use hopwise_repro::backtap::network::{inter, single, transport, FairnessOut, Plan};
use std::path::PathBuf;

/// One setting (bucket 1 MB/s on the 2 MB/s link), one circuit against two
/// downloads, short; two RTTs of the single circuit, short.
fn tiny_plan() -> Plan {
    Plan {
        inter_circuits: vec![1],
        inter_n_tcp: vec![2],
        inter_transports: vec!["vanilla", "backtap"],
        inter_variants: vec!["backtap-slowstart"],
        inter_secs: 14,
        inter_from_s: 6,
        inter_seeds: 1,
        single_rtts_ms: vec![100],
        single_secs: 20,
        single_fit_from: 10,
        ..Plan::quick(Some(1))
    }
}

fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hopwise-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn backtap_leaves_tcp_more_than_vanilla_and_vegas_holds_a_standing_queue() {
    let plan = tiny_plan();
    let dir = out_dir("backtap-inter");
    let mut o = Outputs::new(&dir);
    let bucket: Vec<inter::Setting> = inter::settings()
        .into_iter()
        .filter(|s| s.key == "bucket")
        .collect();
    let io = inter::run_settings(&plan, &bucket, &Ctx::new(&dir, 2, &Silent)).unwrap();
    inter::outputs(&plan, &io, &mut o).unwrap();
    assert_eq!(io.rows.len(), 3);
    let va = io.row("bucket", "vanilla", 1, 2).unwrap();
    let bt = io.row("bucket", "backtap", 1, 2).unwrap();
    let ss = io.row("bucket", "backtap-slowstart", 1, 2).unwrap();
    for r in [va, bt, ss] {
        assert!(r.tcp_share > 0.0 && r.tcp_share < 1.0, "{r:?}");
        // Loss-based downloads keep the relay's access link busy.
        assert!(r.link_util > 0.85, "{r:?}");
        // The 1 MB/s bucket bounds the circuits' payload rate.
        assert!(r.tor_rate < 1.0e6, "{r:?}");
    }
    // Vanilla's loss-based exit → relay connection gets roughly a TCP flow's
    // share of the 2 MB/s link (1/3 against two downloads); BackTap's
    // delay-based hop backs off and leaves the downloads more.
    assert!(va.tor_rate > 0.6 * 2.0e6 / 3.0, "{va:?}");
    assert!(bt.tcp_share > va.tcp_share + 0.05, "{bt:?} vs {va:?}");
    let ic = inter::claims(&plan, &io);
    assert_eq!(ic[0].verdict, Verdict::Holds, "{:?}", ic[0]);
    // The variant is compared with BackTap in an info claim, and the
    // judged claim names only the compared transports.
    assert!(!ic[0].measured.contains("slow"), "{:?}", ic[0]);
    let v = ic
        .iter()
        .find(|c| c.claim.contains("Sensitivity"))
        .expect("a sensitivity claim");
    assert_eq!(v.verdict, Verdict::Info);
    assert!(v.claim.contains("slow start"), "{v:?}");
    assert!(
        v.measured
            .contains(&format!("1: {:.3} ({:.3})", ss.tcp_share, bt.tcp_share)),
        "{v:?}"
    );
    for f in ["inter.csv", "fig6b_bucket.svg"] {
        assert!(dir.join(f).exists(), "{f} missing");
        assert!(o.files().iter().any(|x| x == f), "{f} not listed");
    }

    let so = single::run(&plan, &Ctx::new(&dir, 2, &Silent)).unwrap();
    single::outputs(&so, &mut o).unwrap();
    let tv = so.row("tor-vegas-on-demand", 100).unwrap();
    let bt = so.row("backtap", 100).unwrap();
    // Tor Vegas runs on relays that refill on demand (Tor ≥ 0.3.3), with the
    // periodic 100 ms refill beside it.
    assert_eq!(tv.refill, "on-demand");
    assert_eq!(so.row("tor-vegas", 100).unwrap().refill, "100 ms");
    assert!(tv.bottleneck_queue_cells >= 100.0, "{tv:?}");
    assert!(bt.bottleneck_queue_cells <= single::backtap_few(), "{bt:?}");
    assert!(tv.rate_frac >= 0.8 && bt.rate_frac >= 0.8, "{tv:?} {bt:?}");
    let sc = single::claims(&plan, &so, &FairnessOut::default());
    assert!(sc.iter().all(|c| c.verdict != Verdict::Differs), "{sc:?}");
    assert!(dir.join("single.csv").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Development aid: one inter-fairness point, `T`, `SETTING`, `N`, `K`,
/// `SECS`, `FROM` from the environment.
#[test]
#[ignore]
fn explore_inter() {
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or(d.into());
    let mut plan = Plan::quick(None);
    plan.inter_secs = env("SECS", "40").parse().unwrap();
    plan.inter_from_s = env("FROM", "15").parse().unwrap();
    let s = inter::settings()
        .into_iter()
        .find(|s| s.key == env("SETTING", "bucket"))
        .unwrap();
    for k in env("T", "vanilla,backtap").split(',') {
        let t = transport(k).unwrap();
        let n = env("N", "1").parse().unwrap();
        let ntcp = env("K", "1").parse().unwrap();
        let r = inter::run_one(&plan, &s, &t, n, ntcp, 1).unwrap();
        println!("{r:?}");
    }
}

/// The quick plan's inter-fairness and single-circuit parts (run with
/// `--release -- --ignored`), printing the tables and wall times.
#[test]
#[ignore]
fn quick_plan_inter_and_single() {
    let plan = Plan::quick(None);
    let dir = out_dir("backtap-inter-quick");
    let mut o = Outputs::new(&dir);
    let ctx: Ctx<()> = Ctx::new(&dir, 2, &Silent);
    #[allow(clippy::disallowed_methods)]
    let t0 = std::time::Instant::now();
    let io = inter::run(&plan, &ctx.part()).unwrap();
    inter::outputs(&plan, &io, &mut o).unwrap();
    let t_inter = t0.elapsed().as_secs_f64();
    for r in &io.rows {
        println!(
            "{:12} {:8} circuits {:3} nTcp {} share {:.3} tcp {:8.0} tor {:8.0} util {:.3} drops {:.0}",
            r.setting, r.transport, r.circuits, r.n_tcp, r.tcp_share, r.tcp_rate, r.tor_rate, r.link_util, r.drops
        );
    }
    for s in &io.speed {
        println!("{s:?}");
    }
    #[allow(clippy::disallowed_methods)]
    let t1 = std::time::Instant::now();
    let so = single::run(&plan, &ctx.part()).unwrap();
    single::outputs(&so, &mut o).unwrap();
    let t_single = t1.elapsed().as_secs_f64();
    for r in &so.rows {
        println!("{r:?}");
    }
    for c in inter::claims(&plan, &io)
        .iter()
        .chain(single::claims(&plan, &so, &FairnessOut::default()).iter())
    {
        println!(
            "[{:?}] {}: {}\n    {}",
            c.verdict, c.figure, c.claim, c.measured
        );
    }
    println!(
        "wall: inter {t_inter:.1} s, single {t_single:.1} s; files {:?} in {}",
        o.files(),
        dir.display()
    );
}

/// Development aid: the single circuit at `RTT` for `SECS`, fit from `FROM`.
#[test]
#[ignore]
fn explore_single() {
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or(d.into());
    let (rtt, secs, from) = (
        env("RTT", "683").parse().unwrap(),
        env("SECS", "60").parse().unwrap(),
        env("FROM", "30").parse().unwrap(),
    );
    for v in single::variants() {
        if env("T", "tor-vegas,backtap").split(',').any(|k| k == v.key) {
            println!("{:?}", single::run_one(&v, rtt, secs, from).unwrap());
        }
    }
}
