//! `hopwise otcp relay` and `hopwise otcp forward`: oTCP (seed 001) over
//! real TCP, thin wrappers around `hopwise_net::otcp` (docs/otcp-daemon.md).

use anyhow::{anyhow, bail, Result};
use clap::Subcommand;
use hopwise_net::daemon::wait_for_shutdown;
use hopwise_net::otcp::{
    select_relay, spawn_otcp_forward, spawn_otcp_relay, ForwardOptions, OtcpHandle, RelayOptions,
    Selection, MIN_SPLICE,
};
use hopwise_proto::circuit::policy::{ExitPolicy, Rule, Unreachable};
use hopwise_proto::time::Dur;
use hopwise_proto::units::{parse_bytes, parse_duration};
use std::net::{SocketAddr, SocketAddrV4, ToSocketAddrs};
use std::time::Duration;

#[derive(Subcommand)]
pub enum OtcpCmd {
    /// Relay oTCP connections: read each one's route header, connect to the next hop, copy both ways.
    Relay {
        /// TCP address to listen on.
        #[arg(long, default_value = "0.0.0.0:7000")]
        listen: SocketAddr,
        /// An exit-policy rule for next hops, e.g. `reject *:25` or `accept 192.0.2.0/24:*`
        /// (repeatable; first match wins; the rest is accepted; docs/relay.md, "Exit policy").
        #[arg(long = "policy", value_name = "RULE")]
        policy: Vec<String>,
        /// Also connect to private, loopback and link-local addresses (refused by default).
        #[arg(long)]
        allow_private: bool,
        /// How long a new connection may take to send its route header.
        #[arg(long, default_value = "10s")]
        header_timeout: String,
        #[command(flatten)]
        common: Common,
    },
    /// Accept local TCP connections and send each through oTCP relays to one destination.
    Forward {
        /// TCP address to listen on.
        #[arg(long, default_value = "127.0.0.1:7001")]
        listen: SocketAddr,
        /// The relays, in order (comma-separated HOST:PORT; none: connect directly).
        #[arg(
            long,
            value_delimiter = ',',
            value_name = "RELAYS",
            conflicts_with = "candidates"
        )]
        via: Vec<String>,
        /// Choose the route by RTT: probe these relays (comma-separated HOST:PORT) and go
        /// through the one with the lowest path RTT, or directly if that is as fast.
        #[arg(long, value_delimiter = ',', value_name = "RELAYS")]
        candidates: Vec<String>,
        /// With --candidates: measurements per RTT (the smallest is kept).
        #[arg(long, default_value_t = 3, requires = "candidates")]
        probes: usize,
        /// The destination, HOST:PORT (an IPv4 address, or a name with one).
        #[arg(long)]
        to: String,
        #[command(flatten)]
        common: Common,
    },
}

/// The flags both commands take.
#[derive(clap::Args)]
pub struct Common {
    /// Bytes each direction of a connection may hold here.
    #[arg(long, default_value = "256KiB")]
    buffer: String,
    /// How long connecting to the next hop may take.
    #[arg(long, default_value = "10s")]
    connect_timeout: String,
    /// Reset a connection that moves no byte either way for this long.
    #[arg(long, default_value = "10min")]
    idle_timeout: String,
    /// Connections served at once; more are closed when accepted.
    #[arg(long, default_value_t = 1024)]
    max_connections: usize,
    /// TCP congestion control of every connection accepted or made (TCP_CONGESTION), e.g. cubic;
    /// default: the system's (net.ipv4.tcp_congestion_control).
    #[arg(long)]
    cc: Option<String>,
    /// Shut down when the parent process is gone.
    #[arg(long, hide = true)]
    exit_with_parent: bool,
}

/// [`Common`], checked.
struct Checked {
    splice_bytes: usize,
    connect_timeout: Duration,
    idle_timeout: Duration,
    max_connections: usize,
    congestion: Option<String>,
    exit_with_parent: bool,
}

impl Common {
    fn check(&self) -> Result<Checked> {
        Ok(Checked {
            splice_bytes: buffer("buffer", &self.buffer)?,
            connect_timeout: timeout("connect-timeout", &self.connect_timeout)?,
            idle_timeout: timeout("idle-timeout", &self.idle_timeout)?,
            max_connections: self.max_connections,
            congestion: self.cc.clone(),
            exit_with_parent: self.exit_with_parent,
        })
    }
}

fn buffer(flag: &str, s: &str) -> Result<usize> {
    let b = parse_bytes(s).map_err(|e| anyhow!("--{flag}: {e}"))?;
    if b.0 < MIN_SPLICE as u64 || b.0 > (1 << 30) {
        bail!("--{flag}: `{s}`: must be {MIN_SPLICE} B to 1 GiB");
    }
    Ok(b.0 as usize)
}

fn timeout(flag: &str, s: &str) -> Result<Duration> {
    let d = parse_duration(s).map_err(|e| anyhow!("--{flag}: {e}"))?;
    if d.as_nanos() < 1_000_000 || d.as_nanos() > 3_600 * 1_000_000_000 {
        bail!("--{flag}: `{s}`: must be 1ms to 1h");
    }
    Ok(Duration::from_nanos(d.as_nanos()))
}

/// HOST:PORT to an IPv4 socket address (routes carry IPv4 addresses).
pub fn ipv4(flag: &str, s: &str) -> Result<SocketAddrV4> {
    let addrs: Vec<SocketAddr> = s
        .to_socket_addrs()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::InvalidInput {
                anyhow!("--{flag}: `{s}`: {e} (expected HOST:PORT)")
            } else {
                anyhow!("--{flag}: `{s}`: cannot resolve the name: {e}")
            }
        })?
        .collect();
    addrs
        .iter()
        .find_map(|a| match a {
            SocketAddr::V4(v) => Some(*v),
            SocketAddr::V6(_) => None,
        })
        .ok_or_else(|| {
            anyhow!("--{flag}: `{s}`: no IPv4 address (oTCP routes carry IPv4 addresses)")
        })
}

pub fn policy(rules: &[String], allow_private: bool) -> Result<ExitPolicy> {
    let rules = rules
        .iter()
        .map(|r| Rule::parse(r).map_err(|e| anyhow!("--policy: {e}")))
        .collect::<Result<Vec<_>>>()?;
    Ok(ExitPolicy {
        reject_private: !allow_private,
        rules,
        ..ExitPolicy::default()
    })
}

/// A rule that can never match, said at start.
fn policy_warning(p: &ExitPolicy) -> Option<String> {
    let (i, why) = p.unreachable_rule()?;
    let rule = &p.rules[i];
    Some(match why {
        Unreachable::AfterCatchAll(j) => format!(
            "--policy `{rule}` can never match: `{}` before it matches every address and port",
            p.rules[j]
        ),
        Unreachable::PrivateRejected(_) => format!(
            "--policy `{rule}` can never match: private, loopback and link-local addresses are refused before the rules (add --allow-private)"
        ),
    })
}

fn ms(r: &Result<Dur, String>) -> String {
    match r {
        Ok(d) => format!("{:.3} ms", d.as_secs_f64() * 1e3),
        Err(e) => e.clone(),
    }
}

/// The probe results and the choice, one line per path.
fn print_selection(sel: &Selection, dest: SocketAddrV4) {
    println!("handshake RTTs (smallest of each set of probes):");
    println!("  direct to {dest}: {}", ms(&sel.direct));
    for c in &sel.candidates {
        let path = match (&c.to_relay, &c.to_destination) {
            (Ok(a), Ok(b)) => format!("; path RTT {:.3} ms", (*a).max(*b).as_secs_f64() * 1e3),
            _ => String::new(),
        };
        println!(
            "  via {}: here → relay {}, relay → destination {}{path}",
            c.relay,
            ms(&c.to_relay),
            ms(&c.to_destination)
        );
    }
    let how = match sel.chosen {
        Some(r) => format!("via {r}"),
        None => "direct".into(),
    };
    println!(
        "chosen: {how} (path RTT {:.3} ms: the largest hop RTT, seed 001 §2)",
        sel.path_rtt.as_secs_f64() * 1e3
    );
}

fn serve(h: OtcpHandle, exit_with_parent: bool) {
    wait_for_shutdown(exit_with_parent);
    let s = h.stats();
    tracing::info!(
        accepted = s.accepted,
        spliced = s.spliced,
        cut = s.open,
        forward_bytes = s.bytes_forward,
        back_bytes = s.bytes_back,
        bad_headers = s.bad_header,
        header_timeouts = s.header_timeout,
        refused = s.refused,
        unreachable = s.connect_failed,
        idle = s.idle,
        reset = s.reset,
        probes = s.probes,
        over_cap = s.over_cap,
        "stopping{}",
        match s.open {
            0 => String::new(),
            1 => ": the connection still open is reset".into(),
            n => format!(": the {n} connections still open are reset"),
        }
    );
    h.shutdown();
}

pub fn run(cmd: OtcpCmd) -> Result<()> {
    match cmd {
        OtcpCmd::Relay {
            listen,
            policy: rules,
            allow_private,
            header_timeout,
            common,
        } => {
            let c = common.check()?;
            let mut o = RelayOptions::new(listen);
            o.policy = policy(&rules, allow_private)?;
            o.header_timeout = timeout("header-timeout", &header_timeout)?;
            o.splice_bytes = c.splice_bytes;
            o.connect_timeout = c.connect_timeout;
            o.idle_timeout = c.idle_timeout;
            o.max_connections = c.max_connections;
            o.congestion = c.congestion.clone();
            crate::logging::init();
            if let Some(w) = policy_warning(&o.policy) {
                tracing::warn!("{w}");
            }
            let h = spawn_otcp_relay(o)?;
            serve(h, c.exit_with_parent);
        }
        OtcpCmd::Forward {
            listen,
            via,
            candidates,
            probes,
            to,
            common,
        } => {
            let addrs = |flag: &str, v: &[String]| {
                v.iter()
                    .map(|v| {
                        if v.trim().is_empty() {
                            bail!("--{flag}: an empty entry (give HOST:PORT, comma-separated)");
                        }
                        ipv4(flag, v)
                    })
                    .collect::<Result<Vec<_>>>()
            };
            let mut relays = addrs("via", &via)?;
            let candidates = addrs("candidates", &candidates)?;
            let dest = ipv4("to", &to)?;
            let c = common.check()?;
            if !(1..=100).contains(&probes) {
                bail!("--probes: {probes}: must be 1 to 100");
            }
            crate::logging::init();
            if !candidates.is_empty() {
                let sel = select_relay(&candidates, dest, c.connect_timeout, probes)?;
                print_selection(&sel, dest);
                relays = sel.chosen.into_iter().collect();
            }
            let mut o = ForwardOptions::new(listen, relays, dest);
            o.splice_bytes = c.splice_bytes;
            o.connect_timeout = c.connect_timeout;
            o.idle_timeout = c.idle_timeout;
            o.max_connections = c.max_connections;
            o.congestion = c.congestion.clone();
            let route = o
                .relays
                .iter()
                .map(|r| r.to_string())
                .chain(std::iter::once(o.destination.to_string()))
                .collect::<Vec<_>>()
                .join(" → ");
            let h = spawn_otcp_forward(o)?;
            tracing::info!("forwarding {} → {route}", h.addr);
            serve(h, c.exit_with_parent);
        }
    }
    Ok(())
}
