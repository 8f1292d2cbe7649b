//! hopwise-overlay's integration tests: one binary, a module per overlay.

mod otcp;
mod swarm;
mod tor;

use hopwise_overlay::scenario::{self, OverlayRun, OverlayScenario};
use std::path::{Path, PathBuf};

/// A file of `scenarios/`.
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name)
}

/// Parses scenario text; the error as its message.
pub fn parse(text: &str) -> Result<OverlayScenario, String> {
    scenario::parse(text, "t.toml", &[]).map_err(|e| e.to_string())
}

/// The error a scenario text gives (it must give one).
pub fn error(text: &str) -> hopwise_config::Error {
    match scenario::parse(text, "t.toml", &[]) {
        Ok(_) => panic!("no error for:\n{text}"),
        Err(e) => e,
    }
}

/// Builds and runs a scenario to its end.
pub fn run(sc: &OverlayScenario) -> OverlayRun {
    let mut run = sc.build().expect("builds");
    run.run().expect("runs");
    run
}

/// A fresh directory for a test's outputs.
pub fn out_dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hopwise-overlay-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}
