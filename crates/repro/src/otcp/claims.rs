//! The paper's claims beside our values. The paper states no criteria of
//! its own (a poster), so each threshold below is ours, and the docs say so.
//!
//! Table 1's points and the size sweep run every path on the same seeds,
//! so gains and speedups are ratios of means with paired bootstrap
//! intervals over those seeds; the trace's analysis is one deterministic
//! computation.

use super::trace::{Relays, PROBES};
use super::{Regime, Results, SizeRow, Table1Row, TABLE1};
use hopwise_experiment::{plural, Claim, Cmp, Estimate};

/// The paper's 4-hop gain, ×1.74, may be met within this fraction.
const GAIN_TOLERANCE: f64 = 0.25;
/// Two relays should reach this share of the reduction with any number.
const TWO_RELAYS_SHARE: f64 = 0.75;
/// Probing one node per cluster should reach this share of the optimum.
const CLUSTER_SHARE: f64 = 0.8;

pub(super) fn claims(r: &Results) -> Vec<Claim> {
    let mut out = Vec::new();
    for regime in Regime::ALL {
        let rows: Vec<&Table1Row> = r.table1.iter().filter(|x| x.regime == regime).collect();
        if let Some(c) = table1(regime, &rows) {
            out.push(c);
        }
    }
    if let (Some(direct), Some(four)) = (
        r.table1
            .iter()
            .find(|x| x.regime == Regime::Loss && x.hops == 1),
        r.table1
            .iter()
            .find(|x| x.regime == Regime::Loss && x.hops == TABLE1.len()),
    ) {
        out.push(
            Claim::new(
                "§1-2",
                "oTCP can raise throughput even when the hops' RTTs add up to more than the direct RTT",
            )
            .measured(format!(
                "{}: 4 hops of {:.1} ms (sum {:.0} ms against 75.7 ms direct): ×{:.2}",
                Regime::Loss.describe(),
                four.path_rtt_ms,
                four.sum_rtt_ms,
                four.gain
            ))
            .above("the 4 hops' summed RTT (ms)", four.sum_rtt_ms, TABLE1[0].1)
            .above("4-hop gain", gain(regime_name(Regime::Loss), four, direct), 1.0),
        );
    }
    if let Some(c) = sizes(&r.sizes) {
        out.push(c);
    }
    out.extend(trace_claims(r));
    out
}

fn regime_name(r: Regime) -> &'static str {
    r.name()
}

/// The goodput of `row` over `base`'s, paired by seed.
fn gain(regime: &str, row: &Table1Row, base: &Table1Row) -> Estimate {
    Estimate::ratio_of_means(
        &format!("otcp/table1/{regime}/{}-over-{}", row.hops, base.hops),
        &row.samples_kbps,
        &base.samples_kbps,
    )
}

fn table1(regime: Regime, rows: &[&Table1Row]) -> Option<Claim> {
    let direct = rows.first()?;
    let last = rows.last()?;
    let gains = rows[1..]
        .iter()
        .map(|r| {
            format!(
                "{} hops ×{:.2} (1/RTT ×{:.2}; {:.0} % of one hop alone)",
                r.hops,
                r.gain,
                r.rtt_ratio,
                r.pipeline_efficiency * 100.0
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let figure = match regime {
        Regime::Loss => "Table 1 (loss per link)",
        Regime::LossRtt => "Table 1 (loss ∝ RTT)",
        Regime::Window => "Table 1 (window-limited)",
    };
    let steps = rows.windows(2).map(|w| {
        (
            format!("{} over {} hops", w[1].hops, w[0].hops),
            gain(regime.name(), w[1], w[0]),
        )
    });
    let paper_gain = TABLE1[TABLE1.len() - 1].2 / TABLE1[0].2;
    Some(
        Claim::new(
            figure,
            "Splitting NCSU-Caltech into 2, 3, 4 hops (path RTT 75.7 → 63.5, 47.1, 39.3 ms) raises a 4 MB transfer from 3097 to 3505, 4695, 5391 kbit/s (×1.13, ×1.52, ×1.74); the thresholds are ours",
        )
        .measured(format!(
            "{}: direct {:.0} kbit/s; {gains}",
            regime.describe(),
            direct.goodput_kbps
        ))
        .each("goodput gain of each added hop", steps, Cmp::Above(1.0))
        .within(
            "4-hop gain",
            gain(regime.name(), last, direct),
            paper_gain,
            GAIN_TOLERANCE,
        ),
    )
}

/// §3: the 4-hop path (relays connecting on demand) beats the direct path
/// at 1 MB.
fn sizes(rows: &[SizeRow]) -> Option<Claim> {
    let four: Vec<&SizeRow> = rows.iter().filter(|r| r.hops == 4).collect();
    let first = four.first()?;
    let first_win = four.iter().find(|r| r.speedup > 1.0).map(|r| r.size_bytes);
    let list = four
        .iter()
        .map(|r| format!("{} kB ×{:.2}", r.size_bytes / 1000, r.speedup))
        .collect::<Vec<_>>()
        .join(", ");
    let speedup = four
        .iter()
        .find(|r| r.size_bytes == 1_000_000)
        .and_then(|r| {
            let direct = rows
                .iter()
                .find(|d| d.hops == 1 && d.size_bytes == r.size_bytes)?;
            Some(Estimate::ratio_of_means(
                "otcp/sizes/1MB",
                &direct.samples_s,
                &r.samples_s,
            ))
        })
        .unwrap_or(Estimate::exact(f64::NAN));
    Some(
        Claim::new(
            "§3 (sizes)",
            "The benefit is apparent even in medium-sized transfers (ours: the 4-hop path, its relays connecting on demand, finishes a 1 MB transfer faster than the direct path)",
        )
        .measured(format!(
            "{}: speedup of 4 hops over direct: {list}; first wins at {}; {} per size and path, on seeds of their own (one transfer under loss varies several-fold with where its first losses fall, so with few runs these and Table 1's differ)",
            Regime::Loss.describe(),
            first_win.map_or("no size".into(), |s| format!("{} kB", s / 1000)),
            plural(first.runs, "run")
        ))
        .above("1 MB speedup of 4 hops over direct", speedup, 1.0),
    )
}

/// Table 2 and §3 on the synthetic trace (deterministic).
fn trace_claims(r: &Results) -> Vec<Claim> {
    let mut out = Vec::new();
    let budgets = &r.trace.budgets;
    let nodes = r.trace.nodes;
    if let Some(any) = budgets.iter().find(|b| b.max_relays == Relays::Any) {
        out.push(Claim::info(
            "Table 2",
            "In a 313-node PlanetLab RTT trace 99.2 % of 88 841 pairs have a lower path RTT through intermediaries; the path RTT falls by 56.2 % on average",
            format!(
                "synthetic {nodes}-node trace (ours, docs/reproductions/otcp.md): {:.1} % of pairs, mean reduction {:.1} % (median {:.1} %)",
                any.benefit_frac * 100.0,
                any.mean_reduction * 100.0,
                any.median_reduction * 100.0
            ),
        ));
        if let Some(two) = budgets.iter().find(|b| b.max_relays == Relays::Up(2)) {
            let one = budgets.iter().find(|b| b.max_relays == Relays::Up(1));
            let share = two.mean_reduction / any.mean_reduction;
            out.push(
                Claim::new(
                    "§3 (hops)",
                    "1 or 2 intermediaries give most of the benefit, more give diminishing returns",
                )
                .measured(format!(
                    "mean path-RTT reduction: 1 relay {:.1} %, 2 relays {:.1} %, any {:.1} % (2 relays reach {:.0} %)",
                    one.map_or(f64::NAN, |o| o.mean_reduction * 100.0),
                    two.mean_reduction * 100.0,
                    any.mean_reduction * 100.0,
                    share * 100.0
                ))
                .at_least(
                    "2 relays' mean reduction over any number's",
                    share,
                    TWO_RELAYS_SHARE,
                ),
            );
        }
    }
    let sel = &r.trace.selection;
    let at = |s: &str, m: usize| sel.iter().find(|x| x.strategy == s && x.probes == m);
    if let (Some(random), Some(cluster)) = (at("random", 10), at("cluster", 10)) {
        let c = cluster.share_of_optimal;
        out.push(
            Claim::new(
                "§3 (selection)",
                "Random intermediaries need a large sample; one node per geographic cluster works well",
            )
            .measured(format!(
                "10 probes: cluster {:.0} %, random {:.0} % of the optimum (random needs {} probes to match)",
                c * 100.0,
                random.share_of_optimal * 100.0,
                sel.iter()
                    .filter(|x| x.strategy == "random" && x.share_of_optimal >= c)
                    .map(|x| x.probes.to_string())
                    .next()
                    .unwrap_or_else(|| format!("more than {}", PROBES[PROBES.len() - 1]))
            ))
            .increasing(
                "share of the optimal one-relay reduction with 10 probes",
                [("random", random.share_of_optimal), ("cluster", c)],
            )
            .at_least("cluster's share with 10 probes", c, CLUSTER_SHARE),
        );
    }
    let pairs = &r.pairs;
    if !pairs.is_empty() {
        let n = pairs.len() as f64;
        let better = pairs.iter().filter(|p| p.gain > 1.0).count() as f64 / n;
        let big = pairs.iter().filter(|p| p.gain > 1.25).count() as f64 / n;
        let worse = pairs.iter().filter(|p| p.gain < 0.99).count();
        let split = pairs.iter().filter(|p| p.relays > 0).count();
        let split_better = pairs
            .iter()
            .filter(|p| p.relays > 0 && p.gain > 1.0)
            .count();
        out.push(Claim::info(
            "§3 (prototype)",
            "Over a week of web downloads oTCP sped up 85 % of transfers, half by more than 25 %, and never made one slower",
            format!(
                "{} of the trace (4 MB each, {}, relay from 10 cluster representatives, {} split; the others stay direct, gain 1): {:.0} % faster, {:.0} % by more than 25 %, {} slower by more than 1 %; {} of the {} split pairs faster",
                plural(pairs.len(), "pair"),
                Regime::Loss.describe(),
                split,
                better * 100.0,
                big * 100.0,
                worse,
                split_better,
                split
            ),
        ));
    }
    out
}
