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
//!
//! An overlay with a driver that must look at the simulation as it runs
//! (the swarm: arrivals, the tracker) also has
//! `Installed::run_until(&mut self, sim, until)`; run an [`OverlayRun`]
//! with [`OverlayRun::run_until`] or [`OverlayRun::run`], not through
//! `sim` directly.

pub mod otcp;
pub mod swarm;
pub mod tor;
pub mod tor_build;
mod tor_config;
pub mod tor_out;

use hopwise_proto::time::Time;
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
    /// `[tor]`, `[[relay]]`, `[[circuit]]`.
    pub tor: Option<tor::TorSection>,
    /// `[swarm]`.
    pub swarm: Option<swarm::Section>,
    /// `[[otcp]]`.
    pub otcp: Option<otcp::Section>,
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
    from_base(base, origin)
}

/// Reads the overlay sections of a scenario `hopwise-sim` has parsed
/// (`origin` names the file in errors).
pub fn from_base(base: Scenario, origin: &str) -> Result<OverlayScenario, ScenarioError> {
    let tor = tor::parse(&base).map_err(|e| e.in_file(origin))?;
    let swarm = swarm::parse(&base).map_err(|x| x.in_file(origin))?;
    let otcp = otcp::parse(&base).map_err(|x| x.in_file(origin))?;
    Ok(OverlayScenario {
        base,
        tor,
        swarm,
        otcp,
    })
}

impl OverlayScenario {
    /// Whether the file has any overlay section.
    pub fn has_overlay(&self) -> bool {
        !self.base.overlay.is_empty()
    }

    /// The scenario the simulation runs: the file's topology and flows
    /// with the nodes and links the overlays generate.
    pub fn scenario(&self) -> Result<Scenario, String> {
        let mut sc = self.base.clone();
        // Which part of the file made each node and link.
        let mut made = vec![("[[node]]", sc.nodes.len(), "[[link]]", sc.links.len())];
        if let Some(t) = &self.tor {
            t.net(sc.seed)?.net.extend(&mut sc)?;
            made.push((
                "[tor]/[[relay]]/[[circuit]] (generated hosts)",
                sc.nodes.len(),
                "[tor]/[[relay]]/[[circuit]] (generated access links)",
                sc.links.len(),
            ));
        }
        if let Some(s) = &self.swarm {
            s.extend(&mut sc);
            made.push((
                "[swarm] (generated peer hosts)",
                sc.nodes.len(),
                "[swarm] (generated access links)",
                sc.links.len(),
            ));
        }
        let by = |i: usize, node: bool| {
            made.iter()
                .find(|m| i < if node { m.1 } else { m.3 })
                .map_or("?", |m| if node { m.0 } else { m.2 })
        };
        unique(sc.nodes.iter().map(|n| n.name.as_str()), "node", |i| {
            by(i, true)
        })?;
        unique(sc.links.iter().map(|l| l.name.as_str()), "link", |i| {
            by(i, false)
        })?;
        Ok(sc)
    }

    /// Builds the simulation and installs every overlay's agents.
    pub fn build(&self) -> Result<OverlayRun, String> {
        let sc = self.scenario()?;
        let mut sim = Sim::new(&sc)?;
        let tor = match &self.tor {
            Some(t) => Some(t.install(&sc, &mut sim)?),
            None => None,
        };
        let swarm = match &self.swarm {
            Some(s) => Some(s.install(&mut sim)?),
            None => None,
        };
        let otcp = match &self.otcp {
            Some(s) => Some(s.install(&mut sim)?),
            None => None,
        };
        Ok(OverlayRun {
            sim,
            tor,
            swarm,
            otcp,
        })
    }
}

/// A list of names for error messages: `none`, or the first 12 and how
/// many there are in all.
pub(crate) fn short_list(items: &[&str]) -> String {
    const MAX: usize = 12;
    if items.is_empty() {
        "none".into()
    } else if items.len() > MAX {
        format!("{}, … ({} in all)", items[..MAX].join(", "), items.len())
    } else {
        items.join(", ")
    }
}

/// Checks that `names` are distinct; an error names the duplicate and the
/// sections that made both (`by(index)`).
fn unique<'a>(
    names: impl Iterator<Item = &'a str>,
    what: &str,
    by: impl Fn(usize) -> &'static str,
) -> Result<(), String> {
    let mut seen = std::collections::BTreeMap::new();
    for (i, n) in names.enumerate() {
        if let Some(j) = seen.insert(n, i) {
            let (a, b) = (by(j), by(i));
            let from = if a == b {
                format!("twice by {a}")
            } else {
                format!("by {a} and by {b}")
            };
            return Err(format!(
                "two {what}s are named `{n}`, made {from}; rename one (each {what} needs its \
                 own name)"
            ));
        }
    }
    Ok(())
}

/// A simulation with its overlays installed.
pub struct OverlayRun {
    pub sim: Sim,
    pub tor: Option<tor_out::TorInstalled>,
    pub swarm: Option<swarm::Installed>,
    pub otcp: Option<otcp::Installed>,
}

/// What the overlays measured, for `summary.json` (flattened beside
/// `hopwise-sim`'s summary: top-level `tor`, `swarm` and `otcp` objects).
#[derive(Clone, Debug, Default, Serialize)]
pub struct OverlaySummary {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tor: Option<tor_out::TorSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swarm: Option<swarm::Summary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub otcp: Option<otcp::Summary>,
}

impl OverlayRun {
    /// Runs the simulation to `until`; a swarm's driver looks at its
    /// peers every 100 ms of simulated time on the way (use this, not
    /// `sim.run_until`, with a swarm).
    pub fn run_until(&mut self, until: Time) -> Result<(), String> {
        match &mut self.swarm {
            Some(s) => s.run_until(&mut self.sim, until),
            None => {
                self.sim.run_until(until);
                Ok(())
            }
        }
    }

    /// Runs the simulation to its end.
    pub fn run(&mut self) -> Result<(), String> {
        let end = self.sim.end_time();
        self.run_until(end)
    }

    pub fn summary(&self) -> OverlaySummary {
        OverlaySummary {
            tor: self.tor.as_ref().map(|t| t.summary(&self.sim)),
            swarm: self.swarm.as_ref().map(|s| s.summary(&self.sim)),
            otcp: self.otcp.as_ref().map(|s| s.summary(&self.sim)),
        }
    }

    /// Writes the overlays' CSVs and plots into `dir`; returns the files.
    pub fn write_outputs(&self, dir: &Path, summary: &OverlaySummary) -> io::Result<Vec<String>> {
        let mut files = Vec::new();
        if let (Some(t), Some(s)) = (&self.tor, &summary.tor) {
            t.write(dir, &self.sim, s, &mut files)?;
        }
        if let (Some(s), Some(sum)) = (&self.swarm, &summary.swarm) {
            s.write(dir, sum, &mut files)?;
        }
        if let (Some(s), Some(sum)) = (&self.otcp, &summary.otcp) {
            s.write(dir, &self.sim, sum, &mut files)?;
        }
        Ok(files)
    }
}
