//! Fig. 5's claims (seed 002 §4): the paper's three curves, judged point
//! by point over the seeds of each point (t intervals), and the shapes of
//! the curves (knee, linear backlog) with bootstrap intervals over seeds;
//! the refill variants, the start-up and Tor Vegas for information.

use super::fig5::{Fig5Out, Fig5Row, Fig5Run};
use super::{f3, kbs, Plan};
use crate::backtap::common::{
    payload_rate, RefillMode, ALPHA, BACKTAP_CELL, BETA, C, CELL_DATA, VANILLA_CELL,
};
use hopwise_experiment::stats::quantile;
use hopwise_experiment::{plural, Claim, Cmp, Estimate};

/// Names the points whose fit window began before the circuit reached 95 %
/// of the payload rate (their rate and queue are not the steady state's).
/// `ramp_s` counts from the circuit's start, at most 1 s into the run
/// ([`crate::backtap::common::start_offset`]); NaN (never reached) counts as ramping.
fn ramping_note(rows: &[&Fig5Row]) -> String {
    let ramping: Vec<String> = rows
        .iter()
        .filter(|r| r.ramp_s.is_nan() || r.ramp_s + 1.0 > r.fit_from_s)
        .map(|r| format!("{} ms", r.rtt_ms))
        .collect();
    if ramping.is_empty() {
        String::new()
    } else {
        format!(
            " (still ramping up when the fit began at {}: not steady state)",
            ramping.join(", ")
        )
    }
}

/// Least-squares line y = a + b x and its R².
pub fn linear_fit(pts: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return None;
    }
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let syy: f64 = pts.iter().map(|p| (p.1 - my) * (p.1 - my)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let b = sxy / sxx;
    let r2 = if syy > 0.0 {
        sxy * sxy / (sxx * syy)
    } else {
        1.0
    };
    Some((my - b * mx, b, r2))
}

/// The stream window's knee: the bytes per RTT the window delivers where it
/// limits (points below 90 % of the payload rate), over the payload rate.
pub fn knee_ms(curve: &[&Fig5Row], payload: f64) -> Option<f64> {
    let pts: Vec<(u64, f64)> = curve.iter().map(|r| (r.rtt_ms, r.rate)).collect();
    knee_of(&pts, payload)
}

/// [`knee_ms`] of `(RTT in ms, rate)` points.
fn knee_of(pts: &[(u64, f64)], payload: f64) -> Option<f64> {
    let per_rtt: Vec<f64> = pts
        .iter()
        .filter(|p| p.1 < 0.9 * payload)
        .map(|p| p.1 * p.0 as f64 / 1e3)
        .collect();
    if per_rtt.is_empty() {
        return None;
    }
    let k = quantile(&per_rtt, 0.5);
    Some(k / payload * 1e3)
}

/// `f` of every run of a curve's points: one row per point, one column per
/// seed (the runs of a point are in seed order, and every point has the
/// same seeds).
fn by_seed(out: &Fig5Out, curve: &[&Fig5Row], f: impl Fn(&Fig5Run) -> f64) -> Vec<Vec<f64>> {
    curve
        .iter()
        .map(|r| out.samples(r.variant, r.rtt_ms, &f))
        .collect()
}

/// The seeds of [`by_seed`]'s table.
fn seed_count(table: &[Vec<f64>]) -> usize {
    table.iter().map(Vec::len).min().unwrap_or(0)
}

/// Each point's mean over the resampled seeds `idx`.
fn resampled(table: &[Vec<f64>], idx: &[usize]) -> Vec<f64> {
    table
        .iter()
        .map(|v| idx.iter().map(|&i| v[i]).sum::<f64>() / idx.len() as f64)
        .collect()
}

/// Each point's values over seeds, as its mean with a t interval, labelled
/// by RTT.
fn by_point(
    out: &Fig5Out,
    curve: &[&Fig5Row],
    f: impl Fn(&Fig5Run) -> f64,
) -> Vec<(String, Estimate)> {
    curve
        .iter()
        .map(|r| {
            (
                format!("{} ms", r.rtt_ms),
                Estimate::mean_t90(&out.samples(r.variant, r.rtt_ms, &f)),
            )
        })
        .collect()
}

/// Where the rate first falls below 95 % of `payload`, by linear
/// interpolation between sweep points.
pub fn crossing_ms(curve: &[&Fig5Row], payload: f64) -> Option<f64> {
    let th = 0.95 * payload;
    curve.windows(2).find_map(|w| {
        let (a, b) = (w[0], w[1]);
        (a.rate >= th && b.rate < th).then(|| {
            a.rtt_ms as f64
                + (a.rate - th) / (a.rate - b.rate) * (b.rtt_ms as f64 - a.rtt_ms as f64)
        })
    })
}

fn list(rows: &[&Fig5Row], f: impl Fn(&Fig5Row) -> String) -> String {
    rows.iter()
        .map(|r| format!("{} ms: {}", r.rtt_ms, f(r)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Fig. 5's claims.
pub fn claims(plan: &Plan, out: &Fig5Out) -> Vec<Claim> {
    let mut c = Vec::new();
    let seeds = plan.fig5_seeds;
    let per_point = if seeds == 1 {
        "1 run per point".to_string()
    } else {
        format!("mean of {seeds} runs per point")
    };
    let refill_runs = format!(
        "{} per point",
        plural(plan.fig5_refill_seeds as usize, "run")
    );
    let pct = |x: f64| format!("{:.1} %", 100.0 * x);
    let pv = payload_rate(VANILLA_CELL);
    let pb = payload_rate(BACKTAP_CELL);

    // Vanilla, circuit window.
    let circ = out.curve("vanilla-circuit");
    if !circ.is_empty() {
        let below: Vec<&Fig5Row> = circ.iter().copied().filter(|r| r.rtt_ms < 300).collect();
        let worst = below.iter().map(|r| r.rate).fold(f64::INFINITY, f64::min);
        c.push(
            Claim::new(
                "Fig. 5a",
                "Vanilla, circuit window 1000: the rate is the bottleneck's payload rate C·498/512 at every RTT below 300 ms",
            )
            .measured(format!(
                "{} of C·498/512 = {}; lowest {}; {per_point}",
                list(&below, |r| pct(r.rate / pv)),
                kbs(pv),
                pct(worst / pv)
            ))
            .each(
                "rate / (C·498/512)",
                by_point(out, &below, |r| r.rate / pv),
                Cmp::AtLeast(0.95),
            ),
        );
        if let Some(r) = out.row("vanilla-circuit", 683) {
            let expect = 1000.0 * CELL_DATA / 0.683;
            c.push(
                Claim::new(
                    "Fig. 5a",
                    "Vanilla, circuit window: at 683 ms the window limits the rate to 1000·498 B / RTT",
                )
                .measured(format!(
                    "{} vs {} ({:+.1} %)",
                    kbs(r.rate),
                    kbs(expect),
                    100.0 * (r.rate / expect - 1.0)
                ))
                .within(
                    "rate / (1000·498 B / RTT)",
                    Estimate::mean_t90(&out.samples(r.variant, r.rtt_ms, |x| x.rate / expect)),
                    1.0,
                    0.15,
                ),
            );
        }
        let max = circ.iter().map(|r| r.max_backlog).max().unwrap_or(0);
        c.push(
            Claim::new(
                "Fig. 5b",
                "Vanilla, circuit window: the backlog never exceeds the window (1000 cells = 498 000 B)",
            )
            .measured(format!(
                "largest R(t) − W(t) over every run and sample: {max} B (window exhausted: the exit waits for a SENDME)"
            ))
            .at_most(
                "largest R(t) − W(t) (B)",
                max as f64,
                1000.0 * CELL_DATA,
            ),
        );
        let low: Vec<&Fig5Row> = circ.iter().copied().filter(|r| r.rtt_ms < 100).collect();
        let high: Vec<&Fig5Row> = circ.iter().copied().filter(|r| r.rtt_ms >= 171).collect();
        let mid: Vec<&Fig5Row> = circ
            .iter()
            .copied()
            .filter(|r| (100..171).contains(&r.rtt_ms))
            .collect();
        let near = |target: f64| Cmp::Within { target, rel: 0.15 };
        c.push(
            Claim::new(
                "Fig. 5b",
                "Vanilla, circuit window (100 ms refill): the backlog plateaus near 350 kB below 100 ms RTT and near 250 kB beyond (judged below 100 ms and from 171 ms on)",
            )
            .measured(format!(
                "below 100 ms: {}; from 171 ms: {}; in between (transition, not judged): {}",
                list(&low, |r| format!("{:.0} kB", r.backlog / 1e3)),
                list(&high, |r| format!("{:.0} kB", r.backlog / 1e3)),
                list(&mid, |r| format!("{:.0} kB", r.backlog / 1e3)),
            ))
            .each(
                "backlog (kB) below 100 ms",
                by_point(out, &low, |r| r.backlog / 1e3),
                near(350.0),
            )
            .each(
                "backlog (kB) from 171 ms",
                by_point(out, &high, |r| r.backlog / 1e3),
                near(250.0),
            ),
        );
        // The paper's explanation: without 100 ms bursts, no 350 kB plateau.
        for key in ["vanilla-circuit-10ms", "vanilla-circuit-on-demand"] {
            let cv = out.curve(key);
            if cv.is_empty() {
                continue;
            }
            let theory = |r: &Fig5Row| (1000.0 - 50.0) * CELL_DATA - r.rate * r.rtt_ms as f64 / 2e3;
            let low: Vec<&Fig5Row> = cv.iter().copied().filter(|r| r.rtt_ms < 341).collect();
            let dev = low
                .iter()
                .map(|r| (r.backlog / theory(r) - 1.0).abs())
                .fold(0.0, f64::max);
            let (first, last) = (low.first(), low.last());
            let verdict = match (first, last) {
                (Some(a), Some(b)) if a.backlog > 1.15 * 350e3 || b.backlog < 0.85 * 350e3 => format!(
                    "no 350 kB plateau: the backlog falls from {:.0} kB at {} ms to {:.0} kB at {} ms, within {:.0} % of the smooth-window value (1000 − 50)·498 B − rate·RTT/2, and is 250 kB where the window limits",
                    a.backlog / 1e3,
                    a.rtt_ms,
                    b.backlog / 1e3,
                    b.rtt_ms,
                    100.0 * dev
                ),
                _ => format!(
                    "a plateau near 350 kB remains (largest deviation from the smooth-window value {:.0} %)",
                    100.0 * dev
                ),
            };
            c.push(Claim::info(
                "Fig. 5b (§4 explanation)",
                format!(
                    "With {} refill the 350 kB plateau should disappear. It comes from the 100 ms refill: 300 cells arrive per refill and only three SENDMEs travel back",
                    if key.ends_with("10ms") { "a 10 ms" } else { "an on-demand" }
                ),
                format!(
                    "{} ({refill_runs}); {verdict}",
                    list(&cv, |r| format!("{:.0} kB", r.backlog / 1e3)),
                ),
            ));
        }
    }

    // Vanilla, stream window.
    let stream = out.curve("vanilla-stream");
    if !stream.is_empty() {
        let knee = knee_ms(&stream, pv);
        let cross = crossing_ms(&stream, pv);
        // The knee of the mean curve, with a bootstrap over seeds (each
        // resample's mean curve and its knee).
        let rates = by_seed(out, &stream, |r| r.rate);
        let rtts: Vec<u64> = stream.iter().map(|r| r.rtt_ms).collect();
        let knee_est = Estimate::resampled_at(
            knee.unwrap_or(f64::NAN),
            "backtap-circuit stream knee",
            seed_count(&rates),
            |idx| {
                let pts: Vec<(u64, f64)> =
                    rtts.iter().copied().zip(resampled(&rates, idx)).collect();
                knee_of(&pts, pv).unwrap_or(f64::NAN)
            },
        );
        c.push(
            Claim::new(
                "Fig. 5a",
                "Vanilla, stream window 500: the knee is near 500·512 B / 1500 kB/s ≈ 171 ms",
            )
            .measured(format!(
                "knee {} ms (bytes per RTT where the window limits, over C·498/512); the rate first falls below 95 % at {} ms; rates (of C·498/512): {}",
                knee.map_or("-".into(), |k| format!("{k:.0}")),
                cross.map_or("-".into(), |k| format!("{k:.0}")),
                list(&stream, |r| pct(r.rate / pv))
            ))
            .within("knee (ms)", knee_est, 171.0, 0.10),
        );
        let low: Vec<&Fig5Row> = stream.iter().copied().filter(|r| r.rtt_ms < 100).collect();
        let high: Vec<&Fig5Row> = stream.iter().copied().filter(|r| r.rtt_ms >= 171).collect();
        c.push(Claim::info(
            "Fig. 5b",
            "Vanilla, stream window: about 100 kB of backlog below 100 ms, 125 kB (half the window) beyond",
            format!(
                "below 100 ms: {}; from 171 ms: {}; largest R − W {} B (window 249 000 B)",
                list(&low, |r| format!("{:.0} kB", r.backlog / 1e3)),
                list(&high, |r| format!("{:.0} kB", r.backlog / 1e3)),
                stream.iter().map(|r| r.max_backlog).max().unwrap_or(0)
            ),
        ));
    }

    // BackTap.
    let bt = out.curve("backtap");
    if !bt.is_empty() {
        let worst = bt.iter().map(|r| r.rate).fold(f64::INFINITY, f64::min);
        c.push(Claim::new(
            "Fig. 5a",
            "BackTap, after ramp-up: the rate is the bottleneck's payload rate at every RTT up to 900 ms",
        )
        .measured(format!(
                "{} of C·498/519 = {} (the bucket charges the 519-byte BackTap cell); lowest {} ({} of C·498/512); fits start {:.0}–{:.0} s into the runs",
                list(&bt, |r| pct(r.rate / pb)),
                kbs(pb),
                pct(worst / pb),
                pct(worst / pv),
                bt.first().map_or(0.0, |r| r.fit_from_s),
                bt.last().map_or(0.0, |r| r.fit_from_s)
            ))
            .each(
                "rate / (C·498/519)",
                by_point(out, &bt, |r| r.rate / pb),
                Cmp::AtLeast(0.95),
            )
            .fact("the sweep reaches 900 ms", bt.iter().any(|r| r.rtt_ms >= 900)),
        );
        let pts: Vec<(f64, f64)> = bt
            .iter()
            .map(|r| (r.rtt_ms as f64 / 1e3, r.backlog))
            .collect();
        let fit = linear_fit(&pts);
        // The line through the mean curve, with a bootstrap over seeds.
        let backlogs = by_seed(out, &bt, |r| r.backlog);
        let xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
        let refit = |idx: &[usize]| {
            let pts: Vec<(f64, f64)> = xs.iter().copied().zip(resampled(&backlogs, idx)).collect();
            linear_fit(&pts)
        };
        let n = seed_count(&backlogs);
        let slope = Estimate::resampled_at(
            fit.map_or(f64::NAN, |f| f.1 / 1e4),
            "backtap-circuit backlog slope",
            n,
            |idx| refit(idx).map_or(f64::NAN, |f| f.1 / 1e4),
        );
        let r2 = Estimate::resampled_at(
            fit.map_or(f64::NAN, |f| f.2),
            "backtap-circuit backlog r2",
            n,
            |idx| refit(idx).map_or(f64::NAN, |f| f.2),
        );
        c.push(Claim::new(
            "Fig. 5b",
            "BackTap: the backlog grows linearly with the RTT (a least-squares line)",
        )
        .measured(match fit {
                Some((a, b, r2)) => format!(
                    "backlog = {:.1} kB + {:.1} kB per 100 ms of RTT, R² = {r2:.4} (rate·RTT/2 would be {:.1} kB per 100 ms); {}",
                    a / 1e3,
                    b / 1e4,
                    pb / 2e4,
                    list(&bt, |r| format!("{:.0} kB", r.backlog / 1e3))
                ),
                None => "no fit".into(),
            })
            .above("slope (kB per 100 ms of RTT)", slope, 0.0)
            .at_least("R²", r2, 0.99),
        );
        c.push(
            Claim::new(
                "Fig. 5c",
                "BackTap: the delay stays just above RTT/2, the one-way propagation delay, at every RTT",
            )
            .measured(format!(
                "delay − RTT/2: {}",
                list(&bt, |r| format!(
                    "{:+.1} ms",
                    r.delay_ms - r.rtt_ms as f64 / 2.0
                ))
            ))
            .each(
                "delay − RTT/2 (ms)",
                by_point(out, &bt, |r| r.delay_ms - r.rtt_ms as f64 / 2.0),
                Cmp::Between(0.0, 30.0),
            ),
        );
        let quantum = C as f64 * RefillMode::Periodic10.interval().as_secs_f64() / BACKTAP_CELL;
        let lo = ALPHA as f64;
        let hi = BETA as f64 + quantum;
        c.push(
            Claim::new(
                "§3, Eq. 1",
                format!(
                    "BackTap: the bottleneck hop's mean queue stays within the α–β band (α = {ALPHA}, β = {BETA} cells) plus the token-bucket burst, the {:.1} cells one 10 ms refill releases",
                    hi - BETA as f64
                ),
            )
            .measured(format!(
                "mean cells in the middle's queue: {}",
                list(&bt, |r| format!("{:.1}", r.bottleneck_queue_cells))
            ))
            .each(
                "mean cells queued at the middle",
                by_point(out, &bt, |r| r.bottleneck_queue_cells),
                Cmp::Between(lo, hi),
            ),
        );
    }
    if !out.ramp.is_empty() {
        let by = |name: &str| {
            out.ramp
                .iter()
                .filter(|r| r.startup == name)
                .map(|r| format!("{} ms: {:.0} s", r.rtt_ms, r.ramp_s))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let at_max = |name: &str| {
            out.ramp
                .iter()
                .filter(|r| r.startup == name)
                .max_by_key(|r| r.rtt_ms)
                .map_or(f64::NAN, |r| r.ramp_s)
        };
        let (lin, ss) = (at_max("linear"), at_max("slow-start"));
        let verdict = if ss < 0.7 * lin {
            format!(
                "the slow start shortens the ramp at the largest RTT from {lin:.0} s to {ss:.0} s"
            )
        } else {
            format!(
                "the slow start does not shorten it ({ss:.0} s against {lin:.0} s at the largest RTT): it ends within the first rounds at the exit and middle hops, whose FORWARD-RTT includes the wait behind the next hop's still-small window; the sweep therefore uses the paper's linear start-up with runs long enough to ramp up"
            )
        };
        c.push(Claim::info(
            "§3 start-up",
            "BackTap's window opens by one cell per round from 2 (paper): at 900 ms the per-hop BDP of ≈ 870 cells takes hundreds of seconds; the optional slow start should shorten it",
            format!(
                "time to 95 % of the payload rate, linear: {}; slow start (γ = 1): {}; {verdict}",
                by("linear"),
                by("slow-start")
            ),
        ));
    }
    let hs: Vec<&(u64, &str, Fig5Run)> =
        out.ramp_runs.iter().filter(|r| r.1 == "hystart").collect();
    if !hs.is_empty() {
        let lin = |rtt: u64| {
            out.ramp
                .iter()
                .find(|r| r.startup == "linear" && r.rtt_ms == rtt)
                .map_or(f64::NAN, |r| r.ramp_s)
        };
        c.push(Claim::info(
            "§3 start-up (hopwise HyStart)",
            "BackTap whose hops start with HyStart++ (RFC 9406 on BackTap's rounds) and answer loss with the delay-qualified rule (docs/backtap.md, [hopwise]; the paper's constants otherwise): time to fill the circuit, and the queue it keeps at the bottleneck once it has (the paper's BackTap: a few cells)",
            hs.iter()
                .map(|(rtt, _, r)| {
                    format!(
                        "{rtt} ms: 95 % of the payload rate after {:.1} s (linear {:.0} s), exit window {:.0} cells, mean middle queue {:.1} cells, backlog {:.0} kB, rate/payload {:.3} (from {:.0} s of {:.0} s)",
                        r.ramp_s,
                        lin(*rtt),
                        r.exit_swnd,
                        r.bottleneck_queue_cells,
                        r.backlog / 1e3,
                        r.rate / pb,
                        r.fit_from_s,
                        r.duration_s,
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
        ));
    }
    for key in ["backtap-100ms", "backtap-on-demand"] {
        let cv = out.curve(key);
        if cv.is_empty() {
            continue;
        }
        c.push(Claim::info(
            "Fig. 5 (refill sensitivity)",
            format!(
                "BackTap with Tor's {} refill instead of nstor's 10 ms",
                if key.ends_with("100ms") {
                    "100 ms periodic"
                } else {
                    "on-demand (100 ms re-enable)"
                }
            ),
            format!(
                "{refill_runs}. rate/payload: {}; delay − RTT/2: {}; mean middle queue: {}",
                list(&cv, |r| f3(r.rate / pb)),
                list(&cv, |r| format!(
                    "{:+.0} ms",
                    r.delay_ms - r.rtt_ms as f64 / 2.0
                )),
                list(&cv, |r| format!("{:.0}", r.bottleneck_queue_cells))
            ),
        ));
    }
    let tv = out.curve("tor-vegas");
    if !tv.is_empty() {
        c.push(Claim::info(
            "Fig. 5 (Tor Vegas)",
            "Tor Vegas (proposal 324, 100 ms refill) keeps the rate under high RTT but holds a standing queue of 100+ cells, where BackTap holds a few",
            format!(
                "{refill_runs}. rate/payload: {}; mean cells the middle holds (circuit queue, unsent and unread): {}; BackTap: {}{}",
                list(&tv, |r| f3(r.rate / pv)),
                list(&tv, |r| format!("{:.0}", r.bottleneck_queue_cells)),
                list(&bt, |r| format!("{:.0}", r.bottleneck_queue_cells)),
                ramping_note(&tv),
            ),
        ));
    }
    c
}
