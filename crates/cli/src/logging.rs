//! The daemons' logs on stderr: text (colours only on a terminal without
//! `NO_COLOR`) or JSON lines (`--log-format json`), with a filter that
//! `RUST_LOG` sets, or else the config's `log_level` (reloaded on `SIGHUP`),
//! or else `info`.

use std::sync::OnceLock;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{fmt, reload, EnvFilter, Registry};

/// `--log-format` (or `HOPWISE_LOG_FORMAT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line (timestamp, level, target, fields).
    Json,
}

static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// The format [`init`] uses (the global `--log-format`); set once in `main`.
pub fn set_format(f: LogFormat) {
    let _ = FORMAT.set(f);
}

static FILTER: OnceLock<reload::Handle<EnvFilter, Registry>> = OnceLock::new();

/// `RUST_LOG`, if set and not empty: it takes precedence over `log_level`.
fn rust_log() -> Option<String> {
    std::env::var("RUST_LOG")
        .ok()
        .filter(|s| !s.trim().is_empty())
}

/// Installs the logger (once; later calls do nothing) and the hook that
/// lets a relay's reload change its filter.
pub fn init() {
    let format = FORMAT.get().copied().unwrap_or(LogFormat::Text);
    let filter = match rust_log() {
        Some(s) => EnvFilter::try_new(&s).unwrap_or_else(|e| {
            eprintln!("warning: RUST_LOG: {e}; logging at info");
            EnvFilter::new("info")
        }),
        None => EnvFilter::new("info"),
    };
    let (filter, handle) = reload::Layer::new(filter);
    let (text, json) = match format {
        LogFormat::Text => (
            Some(
                fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(hopwise_net::daemon::stderr_colours()),
            ),
            None,
        ),
        LogFormat::Json => (
            None,
            Some(
                fmt::layer()
                    .json()
                    .with_current_span(false)
                    .with_span_list(false)
                    .with_writer(std::io::stderr),
            ),
        ),
    };
    if tracing_subscriber::registry()
        .with(filter)
        .with(text)
        .with(json)
        .try_init()
        .is_ok()
    {
        let _ = FILTER.set(handle);
        hopwise_net::reload::set_log_filter_hook(Box::new(set_level));
    }
}

/// Sets the filter to a config's `log_level` (`None`: info), unless
/// `RUST_LOG` is set; returns the filter in effect, or why not.
pub fn set_level(level: Option<&str>) -> Result<String, String> {
    if let Some(env) = rust_log() {
        return Err(format!(
            "RUST_LOG is set (\"{env}\") and takes precedence over log_level"
        ));
    }
    let level = level.unwrap_or("info");
    let f = EnvFilter::try_new(level).map_err(|e| format!("`{level}`: {e}"))?;
    let h = FILTER.get().ok_or("the logger is not installed")?;
    h.reload(f).map_err(|e| e.to_string())?;
    Ok(level.to_string())
}

/// At start: the config's `log_level`, if it has one (a warning if
/// `RUST_LOG` overrides it).
pub fn apply_config_level(level: Option<&str>) {
    if let Some(l) = level {
        if let Err(e) = set_level(Some(l)) {
            tracing::warn!("log_level = \"{l}\" not applied: {e}");
        }
    }
}
