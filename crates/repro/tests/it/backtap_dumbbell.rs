//! Fig. 7 / Table 2 of `backtap-network`: a tiny dumbbell (fast), and the
//! quick plan's 375-circuit run for exploration (`--ignored`).

use hopwise_experiment::{Ctx, Outputs, Silent, Verdict};
use hopwise_repro::backtap::network::dumbbell::{self, DumbbellOut, KINDS};
use hopwise_repro::backtap::network::{dumbbell_claims, transport, Plan};
use std::path::PathBuf;

fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hopwise-dumbbell-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Runs `ts` on `plan` into `dir`: the results and the files written.
fn run(
    plan: &Plan,
    ts: &[hopwise_repro::backtap::network::Transport],
    dir: &PathBuf,
) -> (DumbbellOut, Vec<String>) {
    std::fs::create_dir_all(dir).unwrap();
    let out = dumbbell::run_transports(plan, ts, &Ctx::new(dir, 2, &Silent)).unwrap();
    let mut o = Outputs::new(dir);
    dumbbell::outputs(plan, &out, &mut o).unwrap();
    (out, o.files().to_vec())
}

fn print(out: &DumbbellOut) {
    for r in &out.rows {
        println!(
            "{:>4} {:<10} {:<4} issued {:>7.1} completed {:>7.1} rate {:>8.0} B/s ttfb med {:.3} p90 {:.3} (excess {:.3}) ttlb med {:.3} p90 {:.3} e2e {:.3}",
            r.circuits,
            r.transport,
            r.kind,
            r.issued,
            r.completed,
            r.mean_rate,
            r.ttfb_median_s,
            r.ttfb_p90_s,
            r.ttfb_excess_median_s,
            r.ttlb_median_s,
            r.ttlb_p90_s,
            r.e2e_rtt_median_s
        );
    }
    for s in &out.speed {
        println!(
            "{} {}: {:.1} s/run, {:.0} events/run, {:.2} M events/s",
            s.experiment,
            s.transport,
            s.wall_s_per_run,
            s.events_per_run,
            s.events_per_s / 1e6
        );
    }
}

/// 40 circuits (4 bulk), 40 s, vanilla, BackTap and BackTap with slow start.
#[test]
fn tiny_dumbbell() {
    let mut plan = Plan::quick(Some(1));
    plan.dumbbell_circuits = vec![40];
    plan.dumbbell_secs = 40;
    plan.dumbbell_start_s = 10;
    plan.dumbbell_from_s = 10;
    let ts: Vec<_> = ["vanilla", "backtap", "backtap-slowstart"]
        .iter()
        .map(|k| transport(k).unwrap())
        .collect();
    let dir = out_dir("tiny");
    let (out, files) = run(&plan, &ts, &dir);
    print(&out);

    assert_eq!(out.rows.len(), 6);
    assert_eq!(out.runs.len(), 3);
    assert_eq!(out.speed.len(), 3);
    for r in &out.rows {
        assert_eq!(r.main, r.transport != "backtap-slowstart", "{r:?}");
    }
    for t in ["vanilla", "backtap", "backtap-slowstart"] {
        let web = out.row(40, t, "web").unwrap();
        let bulk = out.row(40, t, "bulk").unwrap();
        assert_eq!(web.runs, 1);
        assert!(web.completed >= 10.0, "{t}: {web:?}");
        assert!(web.completed <= web.issued && bulk.completed <= bulk.issued);
        assert!((web.unfinished - (web.issued - web.completed)).abs() < 1e-9);
        assert!(bulk.issued >= 1.0, "{t}: {bulk:?}");
        // A 320 KiB download over a circuit with ≥ 1 Mbit/s access takes
        // longer than its first byte, and no faster than the client link.
        assert!(web.ttfb_median_s < web.ttlb_median_s, "{t}: {web:?}");
        assert!(
            web.mean_rate > 10e3 && web.mean_rate < 47e6 / 8.0,
            "{t}: {web:?}"
        );
        assert!(
            web.ttfb_median_s >= web.e2e_rtt_median_s * 0.5,
            "{t}: {web:?}"
        );
    }
    // The draw is the same for every transport.
    assert_eq!(out.e2e_rtts(40, None).len(), 40);
    for r in &out.runs {
        assert_eq!(r.kinds[0].circuits + r.kinds[1].circuits, 40);
        assert_eq!(r.kinds[1].circuits, 4);
        assert!(r.events > 0 && r.wall_s > 0.0);
        for (k, kind) in KINDS.iter().enumerate() {
            let x = &r.kinds[k];
            assert_eq!(x.ttfb_s.len(), x.ttfb_excess_s.len());
            assert_eq!(x.ttlb_s.len(), x.completed);
            // Loss counters exist for BackTap's per-circuit hops only.
            let backtap = r.transport.starts_with("backtap");
            assert_eq!(x.hop_retransmits.is_some(), backtap, "{}", r.transport);
            assert_eq!(x.lossy_circuits.is_some(), backtap, "{}", r.transport);
            if let (Some(n), Some(l)) = (x.hop_retransmits, x.lossy_circuits) {
                assert!(l <= x.circuits && (l > 0) == (n > 0), "{n} {l}");
            }
            // No response arrives before a round trip over the circuit.
            assert!(
                x.ttfb_excess_s.iter().all(|&e| e >= 0.0),
                "{} {kind}: TTFB below the propagation RTT: {:?}",
                r.transport,
                x.ttfb_excess_s
            );
        }
    }
    for f in [
        "dumbbell.csv",
        "dumbbell_runs.csv",
        "dumbbell_cdf.csv",
        "fig7_ttfb_40.svg",
        "fig7_ttlb_web_40.svg",
        "fig7_ttlb_bulk_40.svg",
        "fig7_e2e_rtt.svg",
    ] {
        assert!(files.iter().any(|x| x == f), "{f} not listed");
        assert!(dir.join(f).is_file(), "{f} not written");
    }
    let cdf = std::fs::read_to_string(dir.join("dumbbell_cdf.csv")).unwrap();
    assert!(cdf.starts_with("circuits,transport,kind,metric,x,F\n"));
    assert!(cdf.contains("40,backtap,web,ttfb_s,"));
    assert!(cdf.contains("40,all,bulk,e2e_rtt_s,"));

    let claims = dumbbell_claims::claims(&plan, &out);
    // TTFB, web TTLB and completions for BackTap, each of the latter two
    // also for BackTap with slow start (verdicts), the mean rate, BackTap's
    // hop retransmissions and the variant beside BackTap and vanilla (info);
    // the other transports did not run.
    assert_eq!(claims.len(), 8, "{claims:#?}");
    assert!(claims[..5].iter().all(|c| c.verdict != Verdict::Info));
    assert!(claims[5..].iter().all(|c| c.verdict == Verdict::Info));
    for i in [2, 4] {
        assert!(
            claims[i].claim.starts_with("BackTap with slow start"),
            "{:?}",
            claims[i]
        );
        assert!(
            claims[i].measured.contains("backtap-slowstart"),
            "{:?}",
            claims[i]
        );
    }
    let l = &claims[6];
    assert!(l.claim.contains("retransmissions"), "{l:?}");
    assert!(
        l.measured.contains("of 36 circuits") && l.measured.contains("of 4 circuits"),
        "{l:?}"
    );
    let v = &claims[7];
    assert!(v.claim.contains("slow start"), "{v:?}");
    for k in ["backtap-slowstart: web", "backtap: web", "vanilla: web"] {
        assert!(v.measured.contains(k), "{k} missing: {v:?}");
    }
    // The variant is not judged: the web TTLB claim names only the compared
    // transports.
    assert!(!claims[1].measured.contains("slowstart"), "{:?}", claims[1]);
    // Wall time is reported, never judged.
    let sp = dumbbell_claims::speed_claim(&plan, &out);
    assert_eq!(sp.verdict, Verdict::Info, "{sp:?}");
    assert!(sp.measured.contains("M events/s"), "{sp:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The quick plan's first configuration (375 circuits, 90 s) for the
/// transports in `T` (default vanilla,backtap): `cargo test --release -p
/// hopwise-repro --test it -- --ignored --nocapture backtap_dumbbell::`.
#[test]
#[ignore]
fn quick_375() {
    let mut plan = Plan::quick(Some(1));
    if let Ok(c) = std::env::var("CIRCUITS") {
        plan.dumbbell_circuits = c.split(',').map(|x| x.parse().unwrap()).collect();
    } else {
        plan.dumbbell_circuits.truncate(1);
    }
    let keys = std::env::var("T").unwrap_or("vanilla,backtap".into());
    let ts: Vec<_> = keys.split(',').map(|k| transport(k).unwrap()).collect();
    let dir = std::env::var("OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|_| out_dir("quick"));
    let (out, _) = run(&plan, &ts, &dir);
    print(&out);
    for c in dumbbell_claims::claims(&plan, &out) {
        println!(
            "[{:?}] {}: {}\n    {}",
            c.verdict, c.figure, c.claim, c.measured
        );
    }
    let c = dumbbell_claims::speed_claim(&plan, &out);
    println!("[{:?}] {}: {}", c.verdict, c.claim, c.measured);
    println!("output in {}", dir.display());
}
