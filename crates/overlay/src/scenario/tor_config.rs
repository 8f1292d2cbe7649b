//! The `[tor]` table's transport, its parameters, and what it generates:
//! the keys that say how relays forward (`transport`, `refill`, windows,
//! `[tor.n23]`, `[tor.vegas]`, `[tor.backtap]`, `response_delay`), the
//! access links of generated hosts, workloads, and the `[tor.torps]` and
//! `[tor.generate]` generators. `tor` reads where relays and circuits are.

use super::tor::{AccessSpec, GenerateSpec, RawAccess, RawTor, TorpsSpec, TRANSPORTS};
use hopwise_config::{self as cfg, did_you_mean, Duration, Size, Text};
use hopwise_proto::bucket::Refill;
use hopwise_proto::time::Dur;
use hopwise_sim::scenario::ScenarioError;
use hopwise_tor::{
    N23Gating, ResponseDelay, Think, TorConfig, TorVegasConfig, Traffic, TransportConfig, Window,
};
use toml::Value;

type R<T> = Result<T, ScenarioError>;

fn e(key: impl Into<String>, msg: impl Into<String>) -> ScenarioError {
    ScenarioError::new("", key, msg)
}

pub(super) fn access(raw: Option<&RawAccess>, base: AccessSpec, key: &str) -> R<AccessSpec> {
    let Some(r) = raw else { return Ok(base) };
    let mut a = base;
    if let Some(x) = r.rate {
        a.rate = x.0;
    }
    if let Some(x) = r.up {
        a.up = Some(x.0);
    }
    match (&r.delay, &r.rtt) {
        (Some(_), Some(_)) => {
            return Err(e(
                format!("{key}.rtt"),
                "give `delay` (one way, per access link) or `rtt` (between two hosts of the \
                 switch: each access link gets rtt/4), not both",
            ))
        }
        (Some(d), None) => a.delay = d.value,
        (None, Some(r)) => a.delay = Dur::from_nanos(r.value.as_nanos() / 4),
        (None, None) => {}
    }
    if let Some(q) = r.queue {
        a.queue = q;
    }
    Ok(a)
}

fn refill(v: &Value, key: &str) -> R<Refill> {
    if v.as_str() == Some("on-demand") {
        return Ok(Refill::OnDemand {
            reenable: Dur::from_millis(100),
        });
    }
    let d = Duration::read(v).map_err(|m| {
        e(
            key,
            format!("{m} (the refill period, e.g. \"100ms\", or \"on-demand\")"),
        )
    })?;
    if d.value.is_zero() {
        return Err(e(key, "the refill period must be positive"));
    }
    Ok(Refill::Periodic(d.value))
}

fn response_delay(v: &Value, key: &str) -> R<ResponseDelay> {
    if let Some(t) = v.as_table() {
        let mut mean = None;
        let mut max = None;
        for (k, x) in t {
            let d = Duration::read(x).map_err(|m| e(format!("{key}.{k}"), m))?;
            match k.as_str() {
                "mean" => mean = Some(d.value),
                "max" => max = Some(d.value),
                _ => {
                    return Err(e(
                        format!("{key}.{k}"),
                        format!(
                            "unknown key{} (allowed here: mean, max)",
                            did_you_mean(k, &["mean", "max"])
                        ),
                    ))
                }
            }
        }
        let mean = cfg::required(mean, &format!("{key}.mean"), "exponential delay's mean")?;
        let max = max.unwrap_or(Dur::from_secs(3600));
        return Ok(ResponseDelay::Exp { mean, max });
    }
    let d = Duration::read(v).map_err(|m| {
        e(
            key,
            format!(
                "{m} (a fixed delay such as \"20ms\", or {{ mean = \"20ms\", max = \"200ms\" }})"
            ),
        )
    })?;
    Ok(if d.value.is_zero() {
        ResponseDelay::None
    } else {
        ResponseDelay::Fixed(d.value)
    })
}

/// Workload keys shared by `[[circuit]]` and `[tor.torps]`.
pub(super) struct Work<'a> {
    pub workload: Option<&'a Text>,
    pub size: Option<Size>,
    pub think_min: Option<&'a Duration>,
    pub think_max: Option<&'a Duration>,
    pub requests: Option<u64>,
}

pub(super) fn traffic(w: Work, key: &str) -> R<Traffic> {
    let kind = match w.workload.map(|t| t.0.as_str()) {
        None | Some("bulk") => "bulk",
        Some("web") => "web",
        Some(o) => {
            return Err(e(
                format!("{key}.workload"),
                format!(
                    "unknown workload {o:?}{} (known: bulk, web)",
                    did_you_mean(o, &["bulk", "web"])
                ),
            ))
        }
    };
    let size = match (w.size, kind) {
        (Some(s), _) => s.0,
        (None, "bulk") => 5 << 20,
        (None, _) => 320 << 10,
    };
    if size == 0 {
        return Err(e(format!("{key}.size"), "requests of 0 bytes"));
    }
    let think = if kind == "bulk" {
        for (k, v) in [("think_min", w.think_min), ("think_max", w.think_max)] {
            if v.is_some() {
                return Err(e(
                    format!("{key}.{k}"),
                    "bulk downloads follow each other without think time; set \
                     `workload = \"web\"` for think times",
                ));
            }
        }
        Think::Zero
    } else {
        let lo = w.think_min.map_or(Dur::from_secs(1), |d| d.value);
        let hi = w.think_max.map_or(Dur::from_secs(20), |d| d.value);
        if hi < lo {
            return Err(e(
                format!("{key}.think_max"),
                format!("{hi} is below think_min {lo}"),
            ));
        }
        Think::Uniform(lo, hi)
    };
    Ok(Traffic {
        size,
        think,
        count: w.requests.map(|n| n as u32),
    })
}

/// The transport's configuration and the relays' refill (`[tor]`).
pub(super) fn transport(t: &RawTor) -> R<(TorConfig, Refill)> {
    let name = t.transport.as_ref().map_or("vanilla", |x| x.0.as_str());
    let mut config = match name {
        "vanilla" => TorConfig::new(TransportConfig::vanilla()),
        "pctcp" => TorConfig::new(TransportConfig::pctcp()),
        "n23" => TorConfig::new(TransportConfig::n23()),
        "tor-vegas" => TorConfig::tor_vegas(),
        "backtap" => TorConfig::new(TransportConfig::backtap()),
        o => {
            return Err(e(
                "tor.transport",
                format!(
                    "unknown transport {o:?}{} (known: {})",
                    did_you_mean(o, &TRANSPORTS),
                    TRANSPORTS.join(", ")
                ),
            ))
        }
    };
    let backtap = name == "backtap";
    let refill_v = match &t.refill {
        Some(v) => refill(v, "tor.refill")?,
        // nstor's BackTap relays refill every 10 ms, Tor ≤ 0.3.2 every 100 ms.
        None if backtap => Refill::Periodic(Dur::from_millis(10)),
        None => Refill::Periodic(Dur::from_millis(100)),
    };
    if let Some(v) = &t.response_delay {
        config.response_delay = response_delay(v, "tor.response_delay")?;
    }
    config.rw_interval = Dur::from_millis(100);
    if let Some(d) = &t.goodput_interval {
        if d.value.is_zero() {
            return Err(e("tor.goodput_interval", "must be positive"));
        }
        config.rw_interval = d.value;
    }
    config.queue_interval = Some(Dur::from_millis(100));
    if let Some(d) = &t.queue_interval {
        config.queue_interval = (!d.value.is_zero()).then_some(d.value);
    }
    let windows = config.circuit_window.is_some();
    for (key, val, inc, dflt, field) in [
        (
            "circuit_window",
            t.circuit_window,
            t.circuit_sendme,
            Window::CIRCUIT,
            0,
        ),
        (
            "stream_window",
            t.stream_window,
            t.stream_sendme,
            Window::STREAM,
            1,
        ),
    ] {
        if val.is_none() && inc.is_none() {
            continue;
        }
        if !windows {
            return Err(e(
                format!("tor.{key}"),
                format!("transport {name:?} has no end-to-end windows (only vanilla and pctcp do)"),
            ));
        }
        let start = val.map_or(dflt.start, |v| v.0 as u32);
        let increment = inc.map_or(dflt.increment, |v| v.0 as u32);
        let w = (start > 0).then_some(Window { start, increment });
        if let Some(w) = w {
            if w.increment > w.start {
                return Err(e(
                    format!("tor.{}", key.replace("window", "sendme")),
                    format!(
                        "the SENDME increment {} exceeds the window {}",
                        w.increment, w.start
                    ),
                ));
            }
        }
        if field == 0 {
            config.circuit_window = w;
        } else {
            config.stream_window = w;
        }
    }
    if windows && config.circuit_window.is_none() && config.stream_window.is_none() {
        return Err(e(
            "tor.circuit_window",
            "with neither a circuit nor a stream window the exit would package without \
             bound; keep one, or choose a transport with its own control (n23, tor-vegas, \
             backtap)",
        ));
    }
    if let Some(f) = t.optimistic_data {
        config.optimistic_data = f.0;
    }
    if let Some(f) = t.nagle {
        match config.tcp_mut() {
            Some(tcp) => tcp.tcp.nagle = f.0,
            None => {
                return Err(e(
                    "tor.nagle",
                    "backtap has no TCP connections between relays",
                ))
            }
        }
    }
    let only = |key: &str, want: &str| {
        e(
            format!("tor.{key}"),
            format!("[tor.{key}] sets {want}'s parameters, but the transport is {name:?}"),
        )
    };
    if let Some(n) = &t.n23 {
        let TransportConfig::Tcp(tcp) = &mut config.transport else {
            return Err(only("n23", "n23"));
        };
        let Some(c) = tcp.credits.as_mut() else {
            return Err(only("n23", "n23"));
        };
        if let Some(x) = n.n2 {
            c.n2 = x.0 as u32;
        }
        if let Some(x) = n.n3 {
            c.n3 = x.0 as u32;
        }
        if let Some(g) = &n.gating {
            c.gating = match g.0.as_str() {
                "per-hop" => N23Gating::PerHop,
                "edge-only" => N23Gating::EdgeOnly,
                o => {
                    return Err(e(
                        "tor.n23.gating",
                        format!(
                            "unknown gating {o:?}{} (known: per-hop, edge-only)",
                            did_you_mean(o, &["per-hop", "edge-only"])
                        ),
                    ))
                }
            };
        }
    }
    if let Some(v) = &t.vegas {
        let Some(c) = config.vegas.as_mut() else {
            return Err(only("vegas", "tor-vegas"));
        };
        let c: &mut TorVegasConfig = c;
        cfg::apply!(c, v, |x| x.0 as u32; alpha, beta, gamma, delta, cwnd_init, cwnd_min, sendme_inc);
        if !(c.alpha <= c.beta && c.beta <= c.delta && c.gamma <= c.delta) {
            return Err(e(
                "tor.vegas",
                format!(
                    "Tor Vegas needs alpha ≤ beta ≤ delta and gamma ≤ delta (got {}, {}, {}, {})",
                    c.alpha, c.beta, c.gamma, c.delta
                ),
            ));
        }
        if c.cwnd_min < c.sendme_inc || c.cwnd_init < c.cwnd_min {
            return Err(e(
                "tor.vegas",
                format!(
                    "Tor Vegas needs cwnd_init ≥ cwnd_min ≥ sendme_inc (got {}, {}, {})",
                    c.cwnd_init, c.cwnd_min, c.sendme_inc
                ),
            ));
        }
    }
    if let Some(b) = &t.backtap {
        let TransportConfig::Backtap(bt) = &mut config.transport else {
            return Err(only("backtap", "backtap"));
        };
        let c = &mut bt.endpoint;
        cfg::apply!(c, b, |x| x.0 as u32; alpha, beta, initial_window, max_window);
        if let Some(d) = &b.min_rto {
            c.min_rto = d.value;
        }
        if c.alpha > c.beta {
            return Err(e(
                "tor.backtap.beta",
                format!(
                    "BackTap needs alpha ≤ beta (got {} and {})",
                    c.alpha, c.beta
                ),
            ));
        }
        if c.initial_window > c.max_window {
            return Err(e(
                "tor.backtap.initial_window",
                format!("{} exceeds max_window {}", c.initial_window, c.max_window),
            ));
        }
    }
    Ok((config, refill_v))
}

/// `[tor.torps]` and `[tor.generate]`.
pub(super) fn generators(t: &RawTor) -> R<(Option<TorpsSpec>, Option<GenerateSpec>)> {
    let torps = match &t.torps {
        None => None,
        Some(p) => {
            let file = p.file.map_or(50, |x| x.0 as u32);
            if file != 50 && file != 100 {
                return Err(e(
                    "tor.torps.file",
                    format!("no TorPS file with {file} relays (known: 50, 100)"),
                ));
            }
            let paths = if file == 50 {
                hopwise_tor::TorpsPaths::fifty()
            } else {
                hopwise_tor::TorpsPaths::hundred()
            };
            let circuits =
                cfg::required(p.circuits, "tor.torps.circuits", "how many circuits")?.0 as usize;
            if circuits > paths.circuits.len() {
                return Err(e(
                    "tor.torps.circuits",
                    format!(
                        "the {file}-relay file has {} circuits; at most that many can be drawn",
                        paths.circuits.len()
                    ),
                ));
            }
            let traffic = traffic(
                Work {
                    workload: p.workload.as_ref(),
                    size: p.size,
                    think_min: p.think_min.as_ref(),
                    think_max: p.think_max.as_ref(),
                    requests: p.requests.map(|x| x.0),
                },
                "tor.torps",
            )?;
            Some(TorpsSpec {
                file,
                circuits,
                traffic,
                start_window: p.start_window.as_ref().map_or(Dur::ZERO, |d| d.value),
                stream: p
                    .stream
                    .as_ref()
                    .map_or("tor/torps".into(), |s| s.0.clone()),
            })
        }
    };

    let generate = match &t.generate {
        None => None,
        Some(g) => {
            let relays = cfg::required(g.relays, "tor.generate.relays", "how many relays")?.0;
            let min = cfg::required(
                g.bandwidth_min,
                "tor.generate.bandwidth_min",
                "the smallest bandwidth",
            )?;
            let max = cfg::required(
                g.bandwidth_max,
                "tor.generate.bandwidth_max",
                "the largest bandwidth",
            )?;
            let (min, max) = (min.0.bps() / 8, max.0.bps() / 8);
            if max < min || min == 0 {
                return Err(e(
                    "tor.generate.bandwidth_max",
                    "needs 0 < bandwidth_min ≤ bandwidth_max (at least 8 bit/s)",
                ));
            }
            Some(GenerateSpec {
                relays: relays as usize,
                min,
                max,
            })
        }
    };

    Ok((torps, generate))
}
