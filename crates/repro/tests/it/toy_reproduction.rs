//! The worked example of docs/architecture.md ("Adding a reproduction"):
//! a toy reproduction of one claim about one scenario file, judged over
//! seeds. The code between the markers is the one the doc shows; a test
//! below keeps the two the same.

// example begins
mod toy {
    use hopwise_experiment::stats::mean;
    use hopwise_experiment::{Claim, Ctx, Estimate, Outputs, Reproduction};
    use hopwise_sim::{report::Summary, scenario, spec::Scenario, Sim};
    use serde::Serialize;
    use std::path::PathBuf;

    /// "LEDBAT yields to NewReno" on `scenarios/newreno-vs-ledbat.toml`.
    pub struct Toy;

    /// The plan: which file, which seeds. summary.json records it.
    #[derive(Serialize)]
    pub struct Plan {
        pub scenario: PathBuf,
        pub seeds: Vec<u64>,
    }

    /// One run: a row of `shares.csv` and of summary.json's `runs`.
    #[derive(Default, Serialize)]
    pub struct Run {
        pub seed: u64,
        pub newreno_bps: f64,
        pub ledbat_bps: f64,
        pub newreno_share: f64,
    }

    #[derive(Serialize)]
    pub struct Results {
        pub runs: Vec<Run>,
    }

    impl Reproduction for Toy {
        type Plan = Plan;
        type Results = Results;
        const NAME: &'static str = "toy";
        const ABOUT: &'static str = "seed 003's question on one scenario file: does LEDBAT yield?";
        const PAPER: &'static str = "seed 003: Testa and Rossi, delay-based congestion control";
        const WALL: &'static str = "quick under 1 s";

        fn plan(&self, quick: bool, seeds: Option<u32>) -> Plan {
            let n = seeds.unwrap_or(if quick { 3 } else { 10 });
            Plan {
                scenario: concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../../scenarios/newreno-vs-ledbat.toml"
                )
                .into(),
                seeds: (1..=n as u64).collect(),
            }
        }

        fn run(&self, plan: &Plan, ctx: &Ctx<'_, Results>) -> anyhow::Result<Results> {
            // Start each flow up to 2 s late, drawn from the seed.
            let sc = scenario::load(&plan.scenario, &["start_jitter=2s".into()])?;
            ctx.progress.start("seeds", plan.seeds.len() as u64);
            let runs = ctx.par_map(plan.seeds.clone(), |seed| {
                let mut sim = Sim::new(&Scenario { seed, ..sc.clone() }).expect("valid");
                sim.run();
                let s = Summary::of(&sim, &sc.name, 0.0);
                let bps = |f: &str| s.flow(f).map_or(f64::NAN, |f| f.goodput_bps);
                let (n, l) = (bps("newreno"), bps("ledbat"));
                Run {
                    seed,
                    newreno_bps: n,
                    ledbat_bps: l,
                    newreno_share: n / (n + l),
                }
            });
            Ok(Results { runs })
        }

        fn claims(&self, _: &Plan, r: &Results) -> Vec<Claim> {
            let shares: Vec<f64> = r.runs.iter().map(|x| x.newreno_share).collect();
            vec![
                Claim::new("§4", "LEDBAT yields: NewReno keeps nearly all of the link")
                    .measured(format!(
                        "NewReno's share, mean of {} seeds: {:.3}",
                        shares.len(),
                        mean(&shares)
                    ))
                    .at_least("NewReno's share", Estimate::mean_t90(&shares), 0.9),
            ]
        }

        fn outputs(&self, _: &Plan, r: &Results, out: &mut Outputs) -> anyhow::Result<()> {
            out.csv("shares.csv", &r.runs)
        }
    }
}
// example ends

use hopwise_experiment::{Experiment, Opts, Silent, Verdict};

#[test]
fn the_toy_runs_under_the_driver_and_judges_over_seeds() {
    let dir = std::env::temp_dir().join(format!("hopwise-toy-{}", std::process::id()));
    let o = toy::Toy.run(&Opts::new(&dir, true), &Silent).unwrap();
    assert_eq!(o.files, ["summary.json", "shares.csv", "report.html"]);
    let c = &o.claims[0];
    assert_eq!(c.criterion.as_deref(), Some("NewReno's share ≥ 0.9"));
    // Three seeds, each with its own start jitter: an interval, not a point.
    let [lo, hi] = c.checks[0].items[0].estimate.ci90.expect("an interval");
    assert!(lo < hi, "{lo} {hi}");
    assert_ne!(c.verdict, Verdict::Info);
    let csv = std::fs::read_to_string(dir.join("shares.csv")).unwrap();
    assert!(
        csv.starts_with("seed,newreno_bps,ledbat_bps,newreno_share\n1,"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_architecture_doc_shows_this_example() {
    let me = include_str!("toy_reproduction.rs");
    let code = me
        .split("// example begins\n")
        .nth(1)
        .and_then(|s| s.split("// example ends").next())
        .unwrap();
    let doc = include_str!("../../../../docs/architecture.md");
    assert!(
        doc.contains(code),
        "docs/architecture.md must show the example of crates/repro/tests/it/toy_reproduction.rs as it is"
    );
}
