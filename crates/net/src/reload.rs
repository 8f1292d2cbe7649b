//! Reloading a running relay's configuration (`SIGHUP`): what may change
//! without dropping a circuit, and what needs a restart.
//!
//! [`crate::Handle::reload`] reads the file again; a file that does not load
//! is refused and the relay keeps the configuration it runs. Otherwise
//! [`diff`] compares the two. The exit policy (`[exit] policy`,
//! `reject_private`, `default`), `[exit] connect_timeout`, `[bandwidth]` and
//! `log_level` apply at once (new streams meet the new policy, circuits and
//! streams already open carry on); every other key keeps its running value
//! until the relay restarts, and the reload says which ones changed.

use crate::config::{ExitOptions, RelayConfig};
use hopwise_proto::backtap::BucketConfig;
use hopwise_proto::bucket::Refill;
use hopwise_proto::circuit::policy::{ExitPolicy, Verdict};
use std::fmt;
use std::sync::OnceLock;

/// What one reload changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReloadReport {
    /// The file reloaded.
    pub file: String,
    /// Keys applied now, each `key: old -> new`.
    pub applied: Vec<String>,
    /// Keys that changed in the file but keep their running value until a
    /// restart.
    pub needs_restart: Vec<String>,
    /// Problems applying a key that changed (e.g. `log_level` while
    /// `RUST_LOG` is set); the rest of the reload stands.
    pub not_applied: Vec<String>,
}

impl ReloadReport {
    /// Whether the file changed nothing.
    pub fn is_empty(&self) -> bool {
        self.applied.is_empty() && self.needs_restart.is_empty() && self.not_applied.is_empty()
    }
}

impl fmt::Display for ReloadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.file)?;
        if self.is_empty() {
            return f.write_str("nothing changed");
        }
        let mut parts = Vec::new();
        if !self.applied.is_empty() {
            parts.push(format!("applied {}", self.applied.join("; ")));
        }
        if !self.not_applied.is_empty() {
            parts.push(format!("not applied: {}", self.not_applied.join("; ")));
        }
        if !self.needs_restart.is_empty() {
            parts.push(format!(
                "changed but need a restart (running values kept): {}",
                self.needs_restart.join(", ")
            ));
        }
        f.write_str(&parts.join("; "))
    }
}

/// What the node task applies: the exit's options (policy and connect
/// timeout) and the token bucket.
#[derive(Clone, Debug)]
pub(crate) struct Apply {
    pub exit: Option<ExitOptions>,
    pub bandwidth: Option<BucketConfig>,
}

/// How a policy reads in a reload's log line.
fn policy_text(p: &ExitPolicy) -> String {
    let rules: Vec<String> = p.rules.iter().map(|r| format!("\"{r}\"")).collect();
    format!(
        "[{}] (reject_private = {}, default = {})",
        rules.join(", "),
        p.reject_private,
        match p.default {
            Verdict::Accept => "accept",
            Verdict::Reject => "reject",
        }
    )
}

fn bandwidth_text(b: &Option<BucketConfig>) -> String {
    match b {
        None => "unlimited".into(),
        Some(b) => {
            let refill = match b.refill {
                Refill::Periodic(t) => format!("refill {t}"),
                Refill::OnDemand { .. } => "refill on-demand".into(),
            };
            format!("rate {} B/s, burst {} B, {refill}", b.rate, b.burst)
        }
    }
}

fn level_text(l: &Option<String>) -> String {
    match l {
        Some(l) => format!("\"{l}\""),
        None => "unset".into(),
    }
}

/// Compares the running configuration `old` with the file's `new`: the keys
/// that apply now (`applied`, with old and new values) and those that need
/// a restart; `not_applied` gets exit keys changed on a relay that is not an
/// exit, and [`crate::Handle::reload`] adds what failed to apply.
pub fn diff(old: &RelayConfig, new: &RelayConfig) -> ReloadReport {
    let mut r = ReloadReport {
        file: new.origin.clone(),
        ..ReloadReport::default()
    };
    // A relay that is not an exit opens no streams: its policy is read
    // again, but applies to nothing until `[exit] enabled` (a restart).
    let exit_list = if old.exit.enabled {
        &mut r.applied
    } else {
        &mut r.not_applied
    };
    let not_exit = if old.exit.enabled {
        ""
    } else {
        " (this relay is not an exit: it applies to no stream)"
    };
    if old.exit.policy != new.exit.policy {
        exit_list.push(format!(
            "exit.policy: {} -> {}{not_exit}",
            policy_text(&old.exit.policy),
            policy_text(&new.exit.policy)
        ));
    }
    if old.exit.connect_timeout != new.exit.connect_timeout {
        exit_list.push(format!(
            "exit.connect_timeout: {:?} -> {:?}{not_exit}",
            old.exit.connect_timeout, new.exit.connect_timeout
        ));
    }
    if old.bandwidth != new.bandwidth {
        r.applied.push(format!(
            "bandwidth: {} -> {}",
            bandwidth_text(&old.bandwidth),
            bandwidth_text(&new.bandwidth)
        ));
    }
    if old.log_level != new.log_level {
        r.applied.push(format!(
            "log_level: {} -> {}",
            level_text(&old.log_level),
            level_text(&new.log_level)
        ));
    }
    let restart: [(&str, bool); 11] = [
        ("name", old.name != new.name),
        ("listen", old.listen != new.listen),
        ("key_file", old.key_file != new.key_file),
        ("directory (or authority)", old.directory != new.directory),
        ("accept_clients", old.accept_clients != new.accept_clients),
        ("exit.enabled", old.exit.enabled != new.exit.enabled),
        ("[limits]", old.limits != new.limits),
        ("[metrics]", old.metrics != new.metrics),
        ("[link]", old.link != new.link),
        ("[transport]", old.transport != new.transport),
        ("[emulation]", old.emulation != new.emulation),
    ];
    r.needs_restart = restart
        .iter()
        .filter(|(_, changed)| *changed)
        .map(|(k, _)| k.to_string())
        .collect();
    r
}

/// `old` with the keys a reload applies taken from `new`: what the relay
/// runs after the reload.
pub(crate) fn merged(old: &RelayConfig, new: &RelayConfig) -> RelayConfig {
    let mut m = old.clone();
    m.exit.policy = new.exit.policy.clone();
    m.exit.connect_timeout = new.exit.connect_timeout;
    m.bandwidth = new.bandwidth;
    m.log_level = new.log_level.clone();
    m
}

/// Sets the process's log filter to a `log_level` (`None`: the default);
/// returns the filter in effect, or why it was not changed.
pub type LogFilterHook = Box<dyn Fn(Option<&str>) -> Result<String, String> + Send + Sync>;

static LOG_FILTER: OnceLock<LogFilterHook> = OnceLock::new();

/// Installs the function a reload calls when `log_level` changed (the CLI's
/// `tracing_subscriber` reload handle). Once per process; later calls are
/// ignored. Without one, a changed `log_level` is reported as not applied.
pub fn set_log_filter_hook(f: LogFilterHook) {
    let _ = LOG_FILTER.set(f);
}

/// Applies `level` through the installed hook.
pub(crate) fn apply_log_level(level: Option<&str>) -> Result<String, String> {
    match LOG_FILTER.get() {
        Some(f) => f(level),
        None => Err("this process has no reloadable log filter".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Directory;
    use hopwise_proto::circuit::policy::Rule;
    use std::path::PathBuf;

    fn relay() -> RelayConfig {
        let mut c = RelayConfig::new(
            "r",
            "127.0.0.1:9001".parse().unwrap(),
            PathBuf::from("r.key"),
            Directory::default(),
        );
        c.origin = "r.toml".into();
        c
    }

    #[test]
    fn the_diff_names_what_applies_and_what_needs_a_restart() {
        // A relay that is not an exit: its policy applies to no stream.
        let plain = relay();
        let mut changed = plain.clone();
        changed
            .exit
            .policy
            .rules
            .push(Rule::parse("reject *:25").unwrap());
        let d = diff(&plain, &changed);
        assert!(d.applied.is_empty(), "{d}");
        assert_eq!(d.not_applied.len(), 1, "{d}");
        assert!(d.not_applied[0].ends_with("(this relay is not an exit: it applies to no stream)"));

        let mut old = relay();
        old.exit.enabled = true;
        assert!(diff(&old, &old).is_empty());
        assert_eq!(diff(&old, &old).to_string(), "r.toml: nothing changed");
        let mut new = old.clone();
        new.exit
            .policy
            .rules
            .push(Rule::parse("reject *:25").unwrap());
        new.bandwidth = Some(BucketConfig {
            rate: 1_000_000,
            burst: 2_000_000,
            refill: Refill::Periodic(hopwise_proto::time::Dur::from_millis(1)),
        });
        new.log_level = Some("debug".into());
        new.listen = "127.0.0.1:9002".parse().unwrap();
        new.limits.max_streams = 7;
        let d = diff(&old, &new);
        assert_eq!(d.applied.len(), 3, "{d}");
        assert_eq!(
            d.applied[0],
            "exit.policy: [] (reject_private = true, default = accept) -> \
             [\"reject *:25\"] (reject_private = true, default = accept)"
        );
        assert_eq!(
            d.applied[1],
            "bandwidth: unlimited -> rate 1000000 B/s, burst 2000000 B, refill 1ms"
        );
        assert_eq!(d.applied[2], "log_level: unset -> \"debug\"");
        assert_eq!(d.needs_restart, ["listen", "[limits]"]);
        let m = merged(&old, &new);
        assert_eq!(m.exit.policy, new.exit.policy);
        assert_eq!(m.bandwidth, new.bandwidth);
        assert_eq!(
            m.listen, old.listen,
            "a restart key keeps its running value"
        );
        assert_eq!(m.limits, old.limits);
        // Reloading the same file again names the restart keys again.
        assert_eq!(diff(&m, &new).needs_restart, ["listen", "[limits]"]);
        assert!(diff(&m, &new).applied.is_empty());
    }
}
