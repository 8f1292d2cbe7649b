//! `hopwise relay --check-config` and `hopwise proxy --check-config`: load a
//! configuration as a start would (the file, its directory and the
//! directory's signature and validity, the key file, the proxy's state
//! file) without binding a socket or creating a file, and summarise it.

use crate::config::{ConfigError, ProxyConfig, RelayConfig};
use crate::keys;
use hopwise_proto::link::hex;
use std::fmt::Write as _;
use std::path::Path;

/// What a checked configuration would run: the lines of the summary, and
/// the warnings a start would log.
#[derive(Clone, Debug, Default)]
pub struct Checked {
    pub summary: Vec<String>,
    pub warnings: Vec<String>,
}

fn directory_line(d: &crate::config::Directory) -> String {
    let exits = d.relays.iter().filter(|r| r.exit).count();
    let mut s = format!(
        "directory: {} relays ({exits} exit{}), signature verified",
        d.relays.len(),
        if exits == 1 { "" } else { "s" }
    );
    if let Some(t) = d.header.valid_until {
        let _ = write!(s, ", valid until {}", humantime::format_rfc3339_seconds(t));
    }
    s
}

fn key_line(path: &Path) -> Result<(String, Option<[u8; 32]>), ConfigError> {
    Ok(match keys::load_existing(path)? {
        Some(kp) => (
            format!(
                "key_file: {} (public key {})",
                path.display(),
                hex(&kp.public)
            ),
            Some(kp.public),
        ),
        None => (
            format!(
                "key_file: {} does not exist yet; the first start creates it",
                path.display()
            ),
            None,
        ),
    })
}

fn log_line(level: &Option<String>) -> String {
    match level {
        Some(l) => format!("log_level: {l}"),
        None => "log_level: not set (RUST_LOG, or info)".into(),
    }
}

/// Checks a relay file.
pub fn relay(path: &Path) -> Result<Checked, ConfigError> {
    let cfg = RelayConfig::load(path)?;
    let mut c = Checked::default();
    c.summary.push(format!(
        "relay {}: listen {} (UDP), accept_clients {}",
        cfg.name, cfg.listen, cfg.accept_clients
    ));
    let (line, public) = key_line(&cfg.key_file)?;
    c.summary.push(line);
    c.summary.push(directory_line(&cfg.directory));
    c.summary.push(if cfg.exit.enabled {
        let rules: Vec<String> = cfg
            .exit
            .policy
            .rules
            .iter()
            .map(|r| format!("\"{r}\""))
            .collect();
        format!(
            "exit: on, policy [{}], reject_private {}, connect_timeout {:?}",
            rules.join(", "),
            cfg.exit.policy.reject_private,
            cfg.exit.connect_timeout
        )
    } else {
        "exit: off".into()
    });
    c.summary.push(match cfg.bandwidth {
        Some(b) => format!("bandwidth: rate {} B/s, burst {} B", b.rate, b.burst),
        None => "bandwidth: unlimited".into(),
    });
    c.summary.push(match cfg.metrics {
        Some(a) => format!("metrics: http://{a}/metrics"),
        None => "metrics: off".into(),
    });
    c.summary.push(log_line(&cfg.log_level));
    if let Some(p) = public {
        c.warnings = cfg.start_warnings(&p);
    } else if !cfg.link.encrypt {
        c.warnings.push("link encryption is OFF (test-only)".into());
    }
    Ok(c)
}

/// Checks a proxy file.
pub fn proxy(path: &Path) -> Result<Checked, ConfigError> {
    let cfg = ProxyConfig::load(path)?;
    cfg.check()?;
    let mut c = Checked::default();
    c.summary.push(format!(
        "proxy: SOCKS5 {}, listen {} (UDP)",
        cfg.socks, cfg.listen
    ));
    match &cfg.key_file {
        Some(k) => {
            let (line, public) = key_line(k)?;
            if public.is_some_and(|p| cfg.directory.relays.iter().any(|r| r.key == p)) {
                return Err(ConfigError::new(
                    &cfg.origin,
                    "key_file",
                    "the proxy's key is a relay's key",
                ));
            }
            c.summary.push(line);
        }
        None => c
            .summary
            .push("key_file: not set (a fresh key at every start)".into()),
    }
    c.summary.push(directory_line(&cfg.directory));
    c.summary.push(match &cfg.path {
        Some(p) => format!("path: {}", p.join(" -> ")),
        None => {
            let file = cfg
                .state_file
                .clone()
                .or_else(|| crate::path::default_state_file(cfg.key_file.as_deref()));
            crate::path::GuardState::load(file.clone())
                .map_err(|m| ConfigError::new(&cfg.origin, "state_file", m))?;
            match file {
                Some(f) => format!("path: random, guard kept in {}", f.display()),
                None => "path: random, guard chosen anew at every start".into(),
            }
        }
    });
    c.summary.push(match cfg.metrics {
        Some(a) => format!("metrics: http://{a}/metrics"),
        None => "metrics: off".into(),
    });
    c.summary.push(log_line(&cfg.log_level));
    if !cfg.link.encrypt {
        c.warnings.push("link encryption is OFF (test-only)".into());
    }
    Ok(c)
}
