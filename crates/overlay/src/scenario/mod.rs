//! Scenario files with overlay sections.
//!
//! `hopwise-sim` reads a scenario's topology, flows and measurement options
//! and keeps the overlay sections as TOML ([`Scenario::overlay`]). [`parse`]
//! reads those sections here, one module per overlay, with the same kind of
//! errors (file, key path, problem, suggestion); [`OverlayScenario::build`]
//! adds the nodes and links the overlays generate, builds the [`Sim`] and
//! installs each overlay's agents; [`OverlayRun`] gives their summaries and
//! writes their CSVs and plots.
//!
//! Each overlay module follows one shape:
//! - `parse(base: &Scenario) -> Result<Option<Section>, ScenarioError>`
//!   reads its keys from `base.overlay` (errors carry key paths; the file is
//!   attached here);
//! - `Section::extend(&self, sc: &mut Scenario)` adds generated nodes and
//!   links (before the simulation is built);
//! - `Section::install(&self, sim: &mut Sim) -> Result<Installed, String>`
//!   adds the agents;
//! - `Installed::summary(&self, sim: &Sim) -> Summary` and
//!   `Installed::write(&self, dir, sim, &summary, files)` report.

use hopwise_sim::scenario::{self as sim_scenario, ScenarioError};
use hopwise_sim::spec::Scenario;
use hopwise_sim::Sim;
use serde::Serialize;
use std::io;
use std::path::Path;

/// A scenario with its overlay sections read.
#[derive(Clone, Debug)]
pub struct OverlayScenario {
    /// Topology, flows and measurement options (`hopwise-sim`'s part).
    pub base: Scenario,
}

/// Reads, overrides, parses and validates a scenario file, overlay sections
/// included.
pub fn load(path: &Path, overrides: &[String]) -> Result<OverlayScenario, ScenarioError> {
    parse(
        &sim_scenario::read(path)?,
        &path.display().to_string(),
        overrides,
    )
}

/// Parses scenario text (see [`hopwise_sim::scenario::parse`]), then its
/// overlay sections.
pub fn parse(
    text: &str,
    origin: &str,
    overrides: &[String],
) -> Result<OverlayScenario, ScenarioError> {
    let base = sim_scenario::parse(text, origin, overrides)?;
    Ok(OverlayScenario { base })
}

impl OverlayScenario {
    /// Whether the file has any overlay section.
    pub fn has_overlay(&self) -> bool {
        !self.base.overlay.is_empty()
    }

    /// The scenario the simulation runs: the file's topology and flows
    /// with the nodes and links the overlays generate.
    pub fn scenario(&self) -> Result<Scenario, String> {
        Ok(self.base.clone())
    }

    /// Builds the simulation and installs every overlay's agents.
    pub fn build(&self) -> Result<OverlayRun, String> {
        let sc = self.scenario()?;
        let sim = Sim::new(&sc)?;
        Ok(OverlayRun { sim })
    }
}

/// A simulation with its overlays installed.
pub struct OverlayRun {
    pub sim: Sim,
}

/// What the overlays measured, for `summary.json` (flattened beside
/// `hopwise-sim`'s summary).
#[derive(Clone, Debug, Default, Serialize)]
pub struct OverlaySummary {}

impl OverlayRun {
    pub fn summary(&self) -> OverlaySummary {
        OverlaySummary::default()
    }

    /// Writes the overlays' CSVs and plots into `dir`; returns the files.
    pub fn write_outputs(&self, _dir: &Path, _summary: &OverlaySummary) -> io::Result<Vec<String>> {
        Ok(Vec::new())
    }
}
