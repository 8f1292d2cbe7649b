//! `hopwise`: the command-line front end.

// The CLI reads the wall clock to report how long a run took and to decide
// when a progress bar is worth showing (docs/architecture.md lists the other
// places that may).
#![allow(clippy::disallowed_methods)]

mod bt;
mod directory;
mod grow;
mod lab;
mod logging;
mod model;
mod net;
mod otcp;
mod overlay;
mod reproduce;
mod run;
mod sweep;
mod utp;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc instead of the C library's allocator. A simulation makes
/// millions of short-lived allocations of many sizes (segments, cells,
/// write buffers); with glibc's malloc a Tor-sized run kept about a third
/// of its resident memory as free but unreturned fragments (the figures
/// are in docs/reproductions/backtap-network.md, "Scale").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "hopwise",
    version,
    about = "Transports for overlays, and a deterministic packet-level simulator to study them"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// How relay, proxy and quickstart write their logs on stderr: text, or
    /// json (one JSON object per line).
    #[arg(
        long,
        global = true,
        value_enum,
        env = "HOPWISE_LOG_FORMAT",
        default_value = "text"
    )]
    log_format: logging::LogFormat,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario file (or the built-in demo) and write summary.json, CSVs and SVG plots.
    Sim {
        /// Scenario file (TOML). Without it, runs the built-in demo scenario.
        file: Option<PathBuf>,
        /// Override the scenario's seed.
        #[arg(long, allow_negative_numbers = true)]
        seed: Option<u64>,
        /// Output directory.
        #[arg(long, default_value = "out")]
        out: PathBuf,
        /// Override a scenario key, e.g. `--set duration=30s --set flow.f1.cc=cubic`. Repeatable.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Print only the summary path (no tables).
        #[arg(long)]
        quiet: bool,
        /// Capture a link's packets as pcap into the output directory:
        /// `LINK` (both directions), `LINK:ab` or `LINK:ba`. Repeatable; adds
        /// to the scenario's `measure.capture`.
        #[arg(long, value_name = "LINK[:DIR]")]
        capture: Vec<String>,
    },
    /// Run a scenario (or the demo) over a grid of parameter values and seeds; write
    /// means with 90 % confidence intervals, CSVs, plots and report.html. On many machines:
    /// `--plan DIR`, then `sweep shard` (or `sweep slurm`), `sweep merge`.
    #[command(args_conflicts_with_subcommands = true)]
    Sweep {
        #[command(subcommand)]
        cmd: Option<sweep::SweepCmd>,
        /// Scenario file (TOML). Without it, sweeps the built-in demo scenario.
        file: Option<PathBuf>,
        /// A scenario key and the values to try, e.g. `--vary link.bottleneck.queue=20pkt,50pkt,100pkt`.
        /// Repeatable: the grid is every combination (the first key varies slowest).
        /// Without any, the scenario runs as it is over `--seeds N` seeds.
        #[arg(long, value_name = "KEY=V1,V2,...", value_parser = sweep::parse_vary)]
        vary: Vec<sweep::Axis>,
        /// Seeds per point: the scenario's seed, then the next ones.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        seeds: u32,
        /// Override a scenario key for every run. Repeatable.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Output directory.
        #[arg(long, default_value = "out/sweep")]
        out: PathBuf,
        /// Worker threads (default: all cores).
        #[arg(long, value_parser = at_least_one)]
        jobs: Option<usize>,
        /// Print only the results path (no table, no progress bar).
        #[arg(long)]
        quiet: bool,
        /// Refuse grids of more runs (points × seeds) than this (at most 1000000; grids over 100 000 points are refused whatever this says, since each point's means stay in memory).
        #[arg(long, default_value_t = sweep::DEFAULT_MAX_RUNS, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        max_runs: u64,
        /// Check the sweep and write DIR/plan.json for shards to run (`hopwise sweep shard`,
        /// `hopwise sweep slurm`); runs nothing.
        #[arg(long, value_name = "DIR", conflicts_with = "out")]
        plan: Option<PathBuf>,
    },
    /// Reproduce a seed paper's experiments with built-in scenarios (`--list` shows them).
    Reproduce {
        /// Which reproduction, e.g. `pendulum`, or `all` for every one.
        #[arg(required_unless_present = "list")]
        name: Option<String>,
        /// List the reproductions.
        #[arg(long, conflicts_with_all = ["name", "quick", "seeds", "out", "jobs", "strict"])]
        list: bool,
        /// A short variant (a couple of minutes) for CI and a first look.
        #[arg(long)]
        quick: bool,
        /// Seeds (independent runs) per data point (1 to 10000).
        #[arg(long, alias = "runs", value_parser = clap::value_parser!(u32).range(1..=10_000))]
        seeds: Option<u32>,
        /// Output directory (default out/<name>; with `all`, out, one subdirectory each).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Worker threads (default: all cores).
        #[arg(long, value_parser = at_least_one)]
        jobs: Option<usize>,
        /// Exit with an error if any claim differs from the paper.
        #[arg(long)]
        strict: bool,
    },
    /// Run experiments on the kernel's own TCP in Linux network namespaces (needs root; `hopwise lab check`).
    Lab {
        #[command(subcommand)]
        lab: lab::LabCmd,
    },
    /// Evaluate an analytical model from a seed paper, e.g. `hopwise model pendulum ...`.
    Model {
        #[command(subcommand)]
        model: model::ModelCmd,
    },
    /// Run the fixed scale benchmark (scenarios/scale.toml, built in) and report simulator speed;
    /// with `--tor`, a Tor-sized network (6000 relays, 20 000 circuits, 60 s).
    Bench {
        /// Override a scenario key of the benchmark, e.g. `--set duration=10s` (not with `--tor`).
        #[arg(long = "set", value_name = "KEY=VALUE", conflicts_with = "tor")]
        sets: Vec<String>,
        /// Repeat the run this many times and report each.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        repeat: u32,
        /// Benchmark a Tor-sized network instead: wall time of setup and run, events/s, peak memory.
        #[arg(long)]
        tor: bool,
        /// With `--tor`: the transport (backtap, vanilla, pctcp, n23, tor-vegas, or a variant such as backtap-100ms).
        #[arg(long, default_value = "backtap", requires = "tor")]
        transport: String,
        /// With `--tor`: relays.
        #[arg(long, default_value_t = 6000, requires = "tor")]
        relays: usize,
        /// With `--tor`: concurrent circuits (one client each; 10 % bulk, 90 % web).
        #[arg(long, default_value_t = 20_000, requires = "tor")]
        circuits: usize,
        /// With `--tor`: simulated seconds.
        #[arg(long, default_value_t = 60, requires = "tor")]
        secs: u64,
        /// With `--tor`: seed of the network's draws and the simulation.
        #[arg(
            long,
            default_value_t = 1,
            requires = "tor",
            allow_negative_numbers = true
        )]
        seed: u64,
        /// With `--tor`: write summary.json (one entry per run) into this directory
        /// (with `--grow`, default out/bench-tor-grow).
        #[arg(long, requires = "tor")]
        out: Option<PathBuf>,
        /// With `--tor`: build every circuit but never start its application
        /// (the memory of an idle network).
        #[arg(long, requires = "tor")]
        idle: bool,
        /// With `--tor`: run at each of these relay counts (circuits 10/3 of
        /// the relays, as at full size), busy and idle, each in a process of its
        /// own, and write a table and a plot of time and peak memory, e.g.
        /// `--grow 600,1200,2400,6000`.
        #[arg(long, value_name = "RELAYS,...", requires = "tor", conflicts_with_all = ["relays", "circuits", "idle", "repeat"])]
        grow: Option<String>,
    },
    /// Run a relay: BackTap over UDP with encrypted links (docs/relay.md).
    Relay {
        /// Relay configuration file (TOML).
        #[arg(long)]
        config: PathBuf,
        /// Print the relay's public key (creating the key file if needed) and exit.
        #[arg(long)]
        show_key: bool,
        /// Check the configuration (the file, its signed directory, the key
        /// file) without binding sockets or starting; print "ok" and a summary,
        /// or the error (exit status 1).
        #[arg(long, conflicts_with = "show_key")]
        check_config: bool,
        /// Shut down when the parent process is gone (used by `hopwise lab`).
        #[arg(long, hide = true)]
        exit_with_parent: bool,
    },
    /// Run a SOCKS5 proxy that sends each connection through a circuit of relays.
    Proxy {
        /// Proxy configuration file (TOML).
        #[arg(long)]
        config: PathBuf,
        /// Check the configuration (the file, its signed directory, the key
        /// and state files) without binding sockets or starting; print "ok"
        /// and a summary, or the error (exit status 1).
        #[arg(long)]
        check_config: bool,
        /// Shut down when the parent process is gone (used by `hopwise lab`).
        #[arg(long, hide = true)]
        exit_with_parent: bool,
    },
    /// oTCP over real TCP: `relay` splices a connection to the next hop of its route header,
    /// `forward` sends local connections through relays (docs/otcp-daemon.md).
    Otcp {
        #[command(subcommand)]
        otcp: otcp::OtcpCmd,
    },
    /// A bulk µTP (BEP 29) transfer: `recv --listen ADDR`, `send --to ADDR --bytes N` (with
    /// `--delay/--loss/--rate` emulated on what this process sends, `--json` for a summary line).
    Utp {
        #[command(subcommand)]
        utp: utp::UtpCmd,
    },
    /// BitTorrent with one peer: `make` a single-file torrent, `seed` a file, `download`
    /// a torrent with every piece SHA-1-checked (docs/bt.md).
    Bt {
        #[command(subcommand)]
        bt: bt::BtCmd,
    },
    /// The directory authority's key, which signs the directory (`hopwise authority keygen --out FILE`).
    Authority {
        #[command(subcommand)]
        cmd: directory::AuthorityCmd,
    },
    /// Sign the directory file with the authority's key (`hopwise directory sign --key FILE --valid-for 7d FILE`).
    Directory {
        #[command(subcommand)]
        cmd: directory::DirectoryCmd,
    },
    /// Start three relays and a proxy on loopback, with generated keys, a generated authority key and a directory it signs.
    Quickstart {
        /// Where keys, the directory and config files go (default: a folder in the temp directory).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// The proxy's SOCKS5 address.
        #[arg(long, default_value = "127.0.0.1:1080")]
        socks: std::net::SocketAddr,
        /// Download a file from a local server through the circuit, check it, report MiB/s, exit.
        #[arg(long)]
        self_test: bool,
        /// Let the exit connect to loopback and private addresses (local test servers); prints a warning.
        #[arg(long)]
        allow_local: bool,
        /// Size of the self-test's file.
        #[arg(long, default_value = "256MiB")]
        size: String,
    },
    /// Benchmark one circuit through three relay processes on loopback: MB/s and CPU s/GB.
    BenchRelay {
        /// Bytes to download per measurement.
        #[arg(long, default_value = "1GB")]
        size: String,
        /// both, encrypted or plaintext (the test-only mode without link crypto).
        #[arg(long, default_value = "both")]
        mode: String,
        /// Measurements per mode (each a fresh overlay); the median is reported.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
        runs: u32,
    },
}

/// `hopwise ... | head`: Rust's print macros panic when the reader has gone
/// (the runtime ignores SIGPIPE, and `unsafe_code = "forbid"` keeps us from
/// restoring it). Exit quietly with the status of a Unix tool killed by
/// SIGPIPE (141) instead of a panic message and 101. Other panics go to the
/// default hook.
fn quiet_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let p = info.payload();
        let msg = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    quiet_on_broken_pipe();
    let cli = Cli::parse();
    logging::set_format(cli.log_format);
    let res = match cli.cmd {
        Cmd::Sim {
            file,
            seed,
            out,
            sets,
            quiet,
            capture,
        } => run::sim(file.as_deref(), seed, &out, &sets, &capture, quiet),
        Cmd::Bench {
            tor: true,
            transport,
            secs,
            seed,
            out,
            grow: Some(sizes),
            ..
        } => grow::parse_sizes(&sizes).and_then(|sizes| {
            let out = out.unwrap_or_else(|| PathBuf::from("out/bench-tor-grow"));
            grow::run(&transport, &sizes, secs, seed, &out)
        }),
        Cmd::Bench {
            tor: true,
            transport,
            relays,
            circuits,
            secs,
            seed,
            out,
            repeat,
            idle,
            ..
        } => run::bench_tor(
            &transport,
            (relays, circuits, secs, seed, idle),
            repeat,
            out.as_deref(),
        ),
        Cmd::Bench { sets, repeat, .. } => run::bench(&sets, repeat),
        Cmd::Relay {
            config,
            show_key,
            check_config,
            exit_with_parent,
        } => {
            logging::init();
            net::relay(&config, show_key, check_config, exit_with_parent)
        }
        Cmd::Proxy {
            config,
            check_config,
            exit_with_parent,
        } => {
            logging::init();
            net::proxy(&config, check_config, exit_with_parent)
        }
        Cmd::Quickstart {
            dir,
            socks,
            self_test,
            allow_local,
            size,
        } => {
            logging::init();
            net::quickstart(dir, socks, self_test, allow_local, &size)
        }
        Cmd::Authority { cmd } => directory::authority(cmd),
        Cmd::Directory { cmd } => directory::directory(cmd),
        Cmd::BenchRelay { size, mode, runs } => net::bench_relay(&size, &mode, runs),
        Cmd::Otcp { otcp } => otcp::run(otcp),
        Cmd::Utp { utp } => utp::run(utp),
        Cmd::Bt { bt } => bt::run(bt),
        Cmd::Model { model } => model::run(model),
        Cmd::Lab { lab } => lab::run(lab),
        Cmd::Sweep { cmd: Some(cmd), .. } => sweep::run_cmd(cmd),
        Cmd::Sweep {
            cmd: None,
            file,
            vary,
            seeds,
            sets,
            out,
            jobs,
            quiet,
            max_runs,
            plan,
        } => sweep::sweep(
            file.as_deref(),
            &vary,
            seeds,
            &sets,
            &out,
            plan.as_deref(),
            sweep::RunOpts {
                jobs,
                quiet,
                max_runs,
            },
        ),
        Cmd::Reproduce { list: true, .. } => {
            reproduce::list();
            Ok(())
        }
        Cmd::Reproduce {
            name,
            quick,
            seeds,
            out,
            jobs,
            strict,
            ..
        } => reproduce::run(
            name.as_deref().unwrap_or_default(),
            quick,
            seeds,
            out,
            jobs,
            strict,
        ),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A count of at least one (`--jobs`).
pub(crate) fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}
