//! `hopwise sim`, `hopwise bench` and `hopwise bench --tor`.

use anyhow::{Context, Result};
use hopwise_experiment::plural;
use hopwise_overlay::scenario::OverlayRun;
use hopwise_proto::time::{Dur, Time};
use hopwise_sim::report::{write_outputs, Summary};
use hopwise_sim::spec::Scenario;
use hopwise_sim::{scenario, Sim};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::Path;
use std::time::{Duration, Instant};

/// The scenario `hopwise sim` runs without a file.
pub const DEMO: &str = include_str!("../../../scenarios/demo.toml");
/// The benchmark scenario.
pub const SCALE: &str = include_str!("../../../scenarios/scale.toml");

/// Runs a simulation to its end, showing a progress bar once it has taken
/// more than two seconds of wall time.
pub fn run_with_progress(sim: &mut Sim, label: &str) -> f64 {
    let (start, end) = (sim.now(), sim.end_time());
    drive(start, end, label, |t| {
        sim.run_until(t);
        Some(sim.events())
    })
}

/// Runs a simulation with overlays to its end (their drivers step with it),
/// with [`run_with_progress`]'s progress bar.
pub fn run_overlay_with_progress(run: &mut OverlayRun, label: &str) -> Result<f64> {
    let (start, end) = (run.sim.now(), run.sim.end_time());
    let mut failed = None;
    let wall = drive(start, end, label, |t| match run.run_until(t) {
        Ok(()) => Some(run.sim.events()),
        Err(e) => {
            failed = Some(e);
            None
        }
    });
    match failed {
        Some(e) => Err(anyhow::Error::msg(e)),
        None => Ok(wall),
    }
}

/// Steps from `start` to `end` in 200 steps (`step(t)` runs up to `t` and
/// returns the events so far, or `None` to stop), with a progress bar once
/// more than two seconds of wall time have passed; returns the wall time.
fn drive(start: Time, end: Time, label: &str, mut step: impl FnMut(Time) -> Option<u64>) -> f64 {
    let t0 = Instant::now();
    let steps = 200u64;
    let stride = Dur::from_nanos((end.as_nanos() / steps).max(1));
    let mut bar: Option<ProgressBar> = None;
    let mut t = start;
    while t < end {
        t = (t + stride).min(end);
        let Some(events) = step(t) else { break };
        if bar.is_none() && t0.elapsed() > Duration::from_secs(2) && t < end {
            let b = ProgressBar::new(end.as_nanos() / 1_000_000);
            // Our own estimate of the time left, from the average speed so
            // far: the bar appears part way through, and indicatif would
            // count that first jump as progress made in no time.
            b.set_style(
                ProgressStyle::with_template("{prefix} [{bar:40}] {pos}/{len} ms simulated, {msg}")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            b.set_prefix(label.to_string());
            bar = Some(b);
        }
        if let Some(b) = &bar {
            b.set_position(t.as_nanos() / 1_000_000);
            let wall = t0.elapsed().as_secs_f64();
            let left = wall * (end.as_nanos() - t.as_nanos()) as f64 / t.as_nanos().max(1) as f64;
            b.set_message(format!(
                "{:.1} M events/s (eta {})",
                events as f64 / wall / 1e6,
                indicatif::HumanDuration(Duration::from_secs_f64(left))
            ));
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    t0.elapsed().as_secs_f64()
}

/// Writes `out/report.html` for a run without claims: `facts`, the printed
/// summary `text`, then the figures among `files` (see
/// [`hopwise_experiment::report`]).
pub(crate) fn text_report(
    out: &Path,
    title: &str,
    facts: &[String],
    text: &str,
    data: &[(&str, &str)],
    files: &[String],
) -> Result<()> {
    let meta = hopwise_experiment::report::ReportMeta {
        title,
        about: "",
        facts,
        text: Some(text),
        data,
    };
    hopwise_experiment::report::write(out, &meta, &[], files)
}

/// This process's command line as a shell would take it back: `hopwise`
/// and its arguments, each quoted when it holds anything but plain
/// characters.
pub(crate) fn command_line() -> String {
    std::iter::once("hopwise".to_string())
        .chain(std::env::args().skip(1).map(|a| shell_word(&a)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `a` quoted for a POSIX shell when needed.
pub(crate) fn shell_word(a: &str) -> String {
    let plain = !a.is_empty()
        && a.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '-' | '_' | '.' | '/' | ',' | '=' | ':' | '+' | '%' | '@')
        });
    if plain {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

pub(crate) fn load(file: Option<&Path>, sets: &[String]) -> Result<(Scenario, String)> {
    match file {
        Some(f) => {
            let sc = scenario::load(f, sets)?;
            Ok((sc, f.display().to_string()))
        }
        None => Ok((
            scenario::parse(DEMO, "<built-in demo>", sets)?,
            "<built-in demo>".to_string(),
        )),
    }
}

pub fn sim(
    file: Option<&Path>,
    seed: Option<u64>,
    out: &Path,
    sets: &[String],
    capture: &[String],
    quiet: bool,
) -> Result<()> {
    // Before the run, so that a bad directory does not waste it.
    prepare_out(out)?;
    let (mut sc, origin) = load(file, sets)?;
    if let Some(s) = seed {
        sc.seed = s;
    }
    // Overlay sections add nodes, links and agents (see crate::overlay).
    let (overlays, sc) = crate::overlay::prepare(sc, &origin)?;
    // The scenario's own entries were checked when it loaded; a bad entry
    // here comes from the flag.
    let ifaces = scenario::capture_ifaces(&sc, &[sc.measure.capture.as_slice(), capture].concat())
        .map_err(anyhow::Error::msg)
        .context("--capture")?;
    if !quiet {
        eprintln!(
            "running `{}` ({}): {}, {}, {}, {} simulated",
            sc.name,
            origin,
            plural(sc.nodes.len(), "node"),
            plural(sc.links.len(), "link"),
            plural(sc.flows.len(), "flow"),
            sc.duration
        );
    }
    let mut run = crate::overlay::build(&overlays, &origin)?;
    let sim = &mut run.sim;
    // The previous run's captures that this run does not overwrite would
    // pass for this run's: removed, and said so (even with --quiet). Only
    // now, once the scenario has loaded and built, so that a run that
    // fails before writing anything removes nothing.
    let stale = remove_stale_captures(out, &capture_files(&ifaces), !ifaces.is_empty())?;
    if !stale.is_empty() {
        eprintln!(
            "removed {} capture file{} of an earlier run from {} (this run does not write them): {}",
            stale.len(),
            if stale.len() == 1 { "" } else { "s" },
            out.display(),
            stale.join(", ")
        );
    }
    attach_captures(sim, &ifaces, sc.measure.capture_snaplen, out)?;
    let wall = run_overlay_with_progress(&mut run, &sc.name)?;
    let sim = &mut run.sim;
    sim.finish_captures()
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("writing captures to {}", out.display()))?;
    let mut summary = Summary::of(sim, &sc.name, wall);
    summary.command = Some(command_line());
    let mut files = write_outputs(out, sim, &summary)
        .with_context(|| format!("writing results to {}", out.display()))?;
    let (more, overlay_text) = crate::overlay::write(out, &run, &summary)?;
    files.extend(more);
    let text = summary_text(&summary) + &overlay_text;
    if !quiet {
        print!("{text}");
    }
    files.extend(capture_files(&ifaces));
    let facts = [
        format!("command: {}", command_line()),
        format!("scenario: {origin}"),
        format!("hopwise {}", env!("CARGO_PKG_VERSION")),
    ];
    text_report(
        out,
        &format!("hopwise sim: {}", sc.name),
        &facts,
        &text,
        &[("queue.svg", "queues.csv"), ("rtt.svg", "cwnd.csv")],
        &files,
    )?;
    println!(
        "results: {} (open {})",
        out.join("summary.json").display(),
        out.join("report.html").display()
    );
    if !ifaces.is_empty() {
        files.push("capture-hosts".into());
    }
    if let Some(note) = leftovers(out, &files) {
        eprintln!("{note}");
    }
    Ok(())
}

/// Whether `name` has the shape of a file [`capture_files`] makes:
/// `capture-<link>-<ab|ba>.pcap`, perhaps numbered (`…-ab-2.pcap`).
fn is_capture_file(name: &str) -> bool {
    let Some(mid) = name
        .strip_prefix("capture-")
        .and_then(|n| n.strip_suffix(".pcap"))
    else {
        return false;
    };
    let mid = match mid.rsplit_once('-') {
        Some((head, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => mid,
    };
    ["-ab", "-ba"]
        .iter()
        .any(|d| mid.len() > d.len() && mid.ends_with(d))
}

/// Whether `name` names a file directly inside a directory: not empty,
/// no path separator (`/`, `\`) or NUL, and not `.` or `..`.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['/', '\\', '\0']) && name != "." && name != ".."
}

/// The capture files the previous `hopwise sim` in `out` recorded as its
/// own in `out/summary.json`: the `file` of each entry of its `captures`,
/// and `capture-hosts` when that list is not empty (a run that captures
/// writes it). Nothing when there is no `summary.json`, it is not JSON, or
/// it has no `command` (which only `hopwise sim` records: the file is not
/// a `hopwise sim` run's).
fn previous_captures(out: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(out.join("summary.json")) else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    if !v.get("command").is_some_and(|c| c.is_string()) {
        return Vec::new();
    }
    let Some(caps) = v.get("captures").and_then(|c| c.as_array()) else {
        return Vec::new();
    };
    let mut names: Vec<String> = caps
        .iter()
        .filter_map(|c| c.get("file")?.as_str())
        .map(str::to_string)
        .collect();
    if !caps.is_empty() {
        names.push("capture-hosts".to_string());
    }
    names
}

/// Removes from `out` the capture files the previous `hopwise sim` there
/// recorded as its own (see [`previous_captures`]) that this run does not
/// overwrite: pcaps not among `written`, and `capture-hosts` unless this run
/// writes it (`hosts`). Only plain file names of those shapes
/// (`capture-<link>-<ab|ba>[-N].pcap`, `capture-hosts`) that are regular
/// files (not links or directories); any other file stays, whatever its name.
/// Returns the names removed, sorted.
fn remove_stale_captures(out: &Path, written: &[String], hosts: bool) -> Result<Vec<String>> {
    let mut v: Vec<String> = previous_captures(out)
        .into_iter()
        .filter(|n| is_plain_name(n))
        .filter(|n| {
            (is_capture_file(n) && !written.contains(n)) || (n == "capture-hosts" && !hosts)
        })
        .filter(|n| std::fs::symlink_metadata(out.join(n)).is_ok_and(|m| m.is_file()))
        .collect();
    v.sort();
    v.dedup();
    for n in &v {
        let p = out.join(n);
        std::fs::remove_file(&p)
            .with_context(|| format!("removing {} (left by an earlier run)", p.display()))?;
    }
    Ok(v)
}

/// Longest link name kept whole in a capture file name: file systems allow
/// 255 bytes per name, and `capture-`, the direction and a number are added.
const CAPTURE_NAME_MAX: usize = 100;
/// Characters of a longer name kept before its hash.
const CAPTURE_NAME_KEEP: usize = 80;

/// The file a capture of link direction `iface` (`<link>:<dir>`) goes to:
/// `capture-<link>-<dir>.pcap`, with characters of the link's name other
/// than letters, digits, `.`, `_` and `-` replaced by `_`. A name longer
/// than [`CAPTURE_NAME_MAX`] characters is cut to its first
/// [`CAPTURE_NAME_KEEP`] and `~` and 8 hex digits of a hash of the whole
/// name (FNV-1a), so that the file can be created.
pub fn capture_file(iface: &str) -> String {
    let (link, dir) = iface.rsplit_once(':').unwrap_or((iface, ""));
    let mut safe: String = link
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.chars().count() > CAPTURE_NAME_MAX {
        let h = hopwise_proto::rng::fnv1a(link.as_bytes());
        safe = format!(
            "{}~{:08x}",
            safe.chars().take(CAPTURE_NAME_KEEP).collect::<String>(),
            (h ^ (h >> 32)) as u32
        );
    }
    format!("capture-{safe}-{dir}.pcap")
}

/// [`capture_file`] for each link direction, numbering later ones whose
/// names sanitise to a file name already taken (`…-2.pcap`).
pub fn capture_files(ifaces: &[String]) -> Vec<String> {
    let mut used: Vec<String> = Vec::new();
    for iface in ifaces {
        let base = capture_file(iface);
        let mut name = base.clone();
        let mut k = 2;
        while used.contains(&name) {
            name = format!("{}-{k}.pcap", base.trim_end_matches(".pcap"));
            k += 1;
        }
        used.push(name);
    }
    used
}

/// Creates the output directory `out` (given by `--out`, or the default)
/// and checks that files can be written into it, with an error that names it.
pub fn prepare_out(out: &Path) -> Result<()> {
    let shown = out.display();
    if out.exists() && !out.is_dir() {
        anyhow::bail!("--out {shown}: exists and is not a directory");
    }
    std::fs::create_dir_all(out)
        .with_context(|| format!("--out {shown}: cannot create the directory"))?;
    let probe = out.join(".hopwise-write-test");
    std::fs::write(&probe, b"")
        .with_context(|| format!("--out {shown}: cannot write into the directory"))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// A note naming the files in `out` that this run did not write (an
/// earlier run's, perhaps of another reproduction), which report.html does
/// not show; `None` if there are none. Nothing is deleted: they may be the
/// user's.
pub(crate) fn leftovers(out: &std::path::Path, written: &[String]) -> Option<String> {
    let mut other: Vec<String> = std::fs::read_dir(out)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "report.html" && !written.contains(n))
        .collect();
    if other.is_empty() {
        return None;
    }
    other.sort();
    let n = other.len();
    let shown = other.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    Some(format!(
        "note: {} also holds {} this run did not write (from an earlier run?): {shown}{}",
        out.display(),
        hopwise_experiment::plural(n, "file"),
        if n > 5 {
            format!(" and {} more", n - 5)
        } else {
            String::new()
        }
    ))
}

/// Opens a pcap file in `out` for each link direction in `ifaces` (from
/// [`scenario::capture_ifaces`]), and writes `capture-hosts` (the nodes'
/// capture addresses, in /etc/hosts format, for Wireshark's name resolution).
/// `out` exists: [`prepare_out`] made it.
fn attach_captures(sim: &mut Sim, ifaces: &[String], snaplen: u32, out: &Path) -> Result<()> {
    if ifaces.is_empty() {
        return Ok(());
    }
    for (iface, name) in ifaces.iter().zip(capture_files(ifaces)) {
        let path = out.join(&name);
        let f =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        sim.attach_capture(iface, &name, Box::new(std::io::BufWriter::new(f)), snaplen)
            .map_err(anyhow::Error::msg)?;
    }
    let hosts: String = sim
        .nodes()
        .map(|n| {
            let a = hopwise_sim::pcap::node_addr(n);
            // A hosts file splits on blanks and comments from `#`.
            let name: String = sim
                .node_name(n)
                .chars()
                .map(|c| {
                    if c.is_whitespace() || c == '#' {
                        '_'
                    } else {
                        c
                    }
                })
                .collect();
            format!("{}.{}.{}.{}\t{}\n", a[0], a[1], a[2], a[3], name)
        })
        .collect();
    let path = out.join("capture-hosts");
    std::fs::write(&path, hosts).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

fn mbps(x: f64) -> String {
    format!("{:.3}", x / 1e6)
}

/// The run's summary as the terminal shows it (and `report.html` repeats).
pub fn summary_text(s: &Summary) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}: {:.0} s simulated in {:.2} s wall ({} events, {:.2} M events/s), seed {}, event hash {}",
        s.scenario,
        s.duration_s,
        s.wall_s,
        s.events,
        s.events as f64 / s.wall_s.max(1e-9) / 1e6,
        s.seed,
        s.event_hash
    );
    o.push('\n');
    let _ = writeln!(
        o,
        "{:<24} {:<12} {:>14} {:>12} {:>8} {:>15} {:>15}",
        "flow",
        "cc",
        "goodput Mbit/s",
        "delivered MB",
        "retx",
        "RTT ms med/p99",
        "queue ms med/p99"
    );
    // Median and 99th percentile, ms (see docs/scenario-format.md, "Latency").
    let ms = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => format!("{a:.1}/{b:.1}"),
        _ => "–".to_string(),
    };
    for f in s.flows.iter().take(40) {
        let _ = writeln!(
            o,
            "{:<24} {:<12} {:>14} {:>12.3} {:>8} {:>15} {:>15}{}",
            f.name,
            f.cc,
            mbps(f.goodput_bps),
            f.bytes_delivered as f64 / 1e6,
            f.retransmits,
            ms(f.rtt_median_ms, f.rtt_p99_ms),
            ms(f.queue_delay_median_ms, f.queue_delay_p99_ms),
            if f.corrupt_bytes > 0 { "  CORRUPT" } else { "" }
        );
    }
    if s.flows.len() > 40 {
        let _ = writeln!(o, "... {} more flows in flows.csv", s.flows.len() - 40);
    }
    if let Some(j) = s.jain {
        let _ = writeln!(o, "Jain's fairness index over flows: {j:.4}");
    }
    o.push('\n');
    // The AQM's share of the drops and its ECN marks, only where a
    // scenario has an AQM that acted.
    let aqm = s.links.iter().any(|l| l.aqm_drops > 0 || l.ecn_marks > 0);
    let _ = write!(
        o,
        "{:<28} {:>10} {:>8} {:>12} {:>10} {:>8}",
        "link direction", "Mbit/s", "util", "mean queue B", "mean pkts", "drops"
    );
    let _ = if aqm {
        writeln!(o, " {:>9} {:>9}", "aqm drops", "ECN marks")
    } else {
        writeln!(o)
    };
    let busy: Vec<_> = s
        .links
        .iter()
        .filter(|l| l.utilization > 0.01 || l.drops > 0 || l.ecn_marks > 0)
        .collect();
    for l in busy.iter().take(20) {
        let _ = write!(
            o,
            "{:<28} {:>10} {:>8.3} {:>12.0} {:>10.1} {:>8}",
            l.name,
            mbps(l.rate_bps as f64),
            l.utilization,
            l.mean_queue_bytes,
            l.mean_queue_packets,
            l.drops
        );
        let _ = if aqm {
            writeln!(o, " {:>9} {:>9}", l.aqm_drops, l.ecn_marks)
        } else {
            writeln!(o)
        };
    }
    if busy.len() > 20 {
        let _ = writeln!(o, "... {} more in links.csv", busy.len() - 20);
    }
    for c in &s.captures {
        let _ = writeln!(
            o,
            "capture {}: {} ({})",
            c.link,
            c.file,
            plural(c.packets as usize, "packet")
        );
    }
    o.push('\n');
    o
}

pub fn bench(sets: &[String], repeat: u32) -> Result<()> {
    let sc = scenario::parse(SCALE, "scenarios/scale.toml", sets)?;
    println!(
        "bench: {} ({}, {} simulated)",
        sc.name,
        plural(sc.flows.len(), "flow"),
        sc.duration
    );
    for i in 0..repeat.max(1) {
        let mut sim = Sim::new(&sc).map_err(anyhow::Error::msg)?;
        let wall = run_with_progress(&mut sim, "bench");
        let s = Summary::of(&sim, &sc.name, wall);
        let bott = s
            .links
            .iter()
            .filter(|l| l.name.starts_with("bottleneck"))
            .max_by(|a, b| a.utilization.total_cmp(&b.utilization));
        let hops = sim.transmissions();
        println!(
            "run {}: wall {:.3} s | {} events | {:.3} M events/s | {} packet-hops, {:.3} M/s | {:.2} simulated s per wall s | bottleneck utilisation {} | Jain {} | event hash {}",
            i + 1,
            wall,
            s.events,
            s.events as f64 / wall / 1e6,
            hops,
            hops as f64 / wall / 1e6,
            s.duration_s / wall,
            bott.map_or("n/a".into(), |l| format!("{:.4}", l.utilization)),
            s.jain.map_or("n/a".into(), |j| format!("{j:.4}")),
            s.event_hash
        );
    }
    Ok(())
}

fn mib(b: Option<u64>) -> String {
    b.map_or("n/a".into(), |b| {
        format!("{:.0} MiB", b as f64 / (1u64 << 20) as f64)
    })
}

/// `hopwise bench --tor`: the Tor-scale benchmark
/// (`hopwise_repro::backtap::network::scale`).
pub fn bench_tor(
    transport: &str,
    (relays, circuits, secs, seed, idle): (usize, usize, u64, u64, bool),
    repeat: u32,
    out: Option<&Path>,
) -> Result<()> {
    use hopwise_repro::backtap::network::scale::{run_with, ScaleParams};
    let p = ScaleParams {
        seed,
        idle,
        ..ScaleParams::new(transport, relays, circuits, secs)
    };
    // Bad flags are refused before anything is printed or created.
    p.check()?;
    if let Some(out) = out {
        // Before the run, which takes minutes at the defaults.
        prepare_out(out)?;
    }
    if idle {
        println!(
            "bench --tor: {transport}, {relays} relays, {circuits} idle circuits (built, never started), {secs} s simulated, seed {seed}"
        );
    } else {
        println!(
            "bench --tor: {transport}, {relays} relays, {circuits} circuits ({:.0} % bulk 5 MiB, the rest web 320 KiB, think 1–20 s, starts over the first {} s), {secs} s simulated, seed {seed}",
            100.0 * p.bulk_fraction,
            p.start_window_s()
        );
    }
    let mut reports = Vec::new();
    for i in 0..repeat.max(1) {
        if i > 0 {
            eprintln!("(peak RSS is the process's: it covers the earlier runs too)");
        }
        eprintln!("building the network ...");
        let r = run_with(&p, &mut |sim| {
            eprintln!("running ...");
            run_with_progress(sim, "bench --tor");
        })?;
        println!(
            "run {}: setup {:.2} s wall (peak RSS {}) | run {:.2} s wall | {} events | {:.3} M events/s | {} packet-hops, {:.3} M/s | {:.2} simulated s per wall s | peak RSS {} | {} relays used | requests {} issued, {} completed ({} bulk, {} web; web TTLB median {}) | goodput {:.1} MB | event hash {:016x}",
            i + 1,
            r.setup_wall_s,
            mib(r.peak_rss_setup_bytes),
            r.run_wall_s,
            r.events,
            r.events_per_s / 1e6,
            r.packet_hops,
            r.packet_hops_per_s / 1e6,
            r.sim_s_per_wall_s,
            mib(r.peak_rss_bytes),
            r.relays_used,
            r.requests_issued,
            r.requests_completed,
            r.bulk_completed,
            r.web_completed,
            if r.web_completed == 0 {
                "n/a: none completed".to_string()
            } else {
                format!("{:.2} s", r.web_ttlb_median_s)
            },
            r.goodput_bytes as f64 / 1e6,
            r.event_hash
        );
        anyhow::ensure!(r.corrupt_bytes == 0, "{} corrupt bytes", r.corrupt_bytes);
        reports.push(r);
    }
    if let Some(dir) = out {
        hopwise_experiment::write_summary(dir, &reports)
            .with_context(|| format!("writing {}", dir.join("summary.json").display()))?;
        println!("results: {}", dir.join("summary.json").display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_word("--set"), "--set");
        assert_eq!(
            shell_word("link.b.queue=20pkt,50pkt"),
            "link.b.queue=20pkt,50pkt"
        );
        assert_eq!(shell_word("out dir"), "'out dir'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word("a;rm"), "'a;rm'");
    }

    #[test]
    fn capture_file_names_are_safe_and_distinct() {
        let ifaces: Vec<String> = ["a b:ab", "a_b:ab", "a/b:ab", "r1.r2:ba", "x:y:ab"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            capture_files(&ifaces),
            [
                "capture-a_b-ab.pcap",
                "capture-a_b-ab-2.pcap",
                "capture-a_b-ab-3.pcap",
                "capture-r1.r2-ba.pcap",
                "capture-x_y-ab.pcap",
            ]
        );
    }

    #[test]
    fn capture_file_shapes() {
        for n in [
            "capture-bottleneck-ab.pcap",
            "capture-a_b-ba-2.pcap",
            "capture-x-ab-ab.pcap",
            "capture-LLL~0123abcd-ba.pcap",
        ] {
            assert!(is_capture_file(n), "{n}");
        }
        for n in [
            "capture-hosts",
            "capture-notes.pcap",
            "capture--ab.pcap",
            "capture-x-ab.pcapng",
            "mycapture-x-ab.pcap",
            "capture-x-ab-.pcap",
        ] {
            assert!(!is_capture_file(n), "{n}");
        }
    }

    /// Only what the previous run's `summary.json` lists, of a capture's
    /// shape, a plain name and a regular file, and not rewritten now, goes.
    #[test]
    fn only_the_previous_runs_own_captures_are_removed() {
        let d = std::env::temp_dir().join(format!("hopwise-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let out = d.join("out");
        std::fs::create_dir_all(out.join("capture-dir-ab.pcap")).unwrap();
        for f in [
            "capture-old-ab.pcap",
            "capture-kept-ba.pcap",
            "capture-eth0-ab.pcap",
            "capture-hosts",
            "notes.pcap",
        ] {
            std::fs::write(out.join(f), b"x").unwrap();
        }
        std::fs::write(d.join("capture-up-ab.pcap"), b"x").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(d.join("capture-up-ab.pcap"), out.join("capture-ln-ab.pcap"))
            .unwrap();
        let written = ["capture-kept-ba.pcap".to_string()];
        // No summary, or one that is not JSON or not `hopwise sim`'s:
        // nothing goes.
        assert!(remove_stale_captures(&out, &written, false)
            .unwrap()
            .is_empty());
        std::fs::write(out.join("summary.json"), "{not json").unwrap();
        assert!(remove_stale_captures(&out, &written, false)
            .unwrap()
            .is_empty());
        let files = [
            "capture-old-ab.pcap",
            "capture-kept-ba.pcap",
            "capture-dir-ab.pcap",
            "capture-gone-ab.pcap",
            "notes.pcap",
            "../capture-up-ab.pcap",
            "sub/capture-x-ab.pcap",
            "capture-ln-ab.pcap",
            "capture-hosts",
        ];
        let caps: Vec<serde_json::Value> = files
            .iter()
            .map(|f| serde_json::json!({"link": "l:ab", "file": f, "packets": 0, "bytes": 0}))
            .collect();
        let lib = serde_json::json!({"scenario": "s", "captures": caps});
        std::fs::write(out.join("summary.json"), lib.to_string()).unwrap();
        assert!(remove_stale_captures(&out, &written, false)
            .unwrap()
            .is_empty());
        let mut sim = lib.clone();
        sim["command"] = "hopwise sim".into();
        std::fs::write(out.join("summary.json"), sim.to_string()).unwrap();
        // A run that writes `capture-hosts` itself keeps it.
        assert_eq!(
            remove_stale_captures(&out, &written, true).unwrap(),
            ["capture-old-ab.pcap"]
        );
        std::fs::write(out.join("capture-old-ab.pcap"), b"x").unwrap();
        assert_eq!(
            remove_stale_captures(&out, &written, false).unwrap(),
            ["capture-hosts", "capture-old-ab.pcap"]
        );
        for keep in ["capture-kept-ba.pcap", "capture-eth0-ab.pcap", "notes.pcap"] {
            assert!(out.join(keep).is_file(), "{keep}");
        }
        assert!(out.join("capture-dir-ab.pcap").is_dir());
        assert!(d.join("capture-up-ab.pcap").is_file());
        #[cfg(unix)]
        assert!(std::fs::symlink_metadata(out.join("capture-ln-ab.pcap")).is_ok());
        // A run without captures recorded no `capture-hosts`.
        std::fs::write(out.join("capture-hosts"), b"x").unwrap();
        sim["captures"] = serde_json::json!([]);
        std::fs::write(out.join("summary.json"), sim.to_string()).unwrap();
        assert!(remove_stale_captures(&out, &[], false).unwrap().is_empty());
        assert!(out.join("capture-hosts").is_file());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn plain_names() {
        for n in ["capture-a..b-ab.pcap", "capture-hosts", "..x"] {
            assert!(is_plain_name(n), "{n}");
        }
        for n in ["", ".", "..", "../x", "a/b", "a\\b", "/abs", "a\0b"] {
            assert!(!is_plain_name(n), "{n:?}");
        }
    }

    #[test]
    fn long_link_names_give_short_distinct_capture_files() {
        let long = "L".repeat(300);
        let other = format!("{}M", "L".repeat(299));
        let ifaces = [
            format!("{long}:ab"),
            format!("{long}:ba"),
            format!("{other}:ab"),
        ];
        let files = capture_files(&ifaces);
        for f in &files {
            assert!(f.len() <= 120, "{f}");
            assert!(
                f.starts_with(&format!("capture-{}~", "L".repeat(80))),
                "{f}"
            );
        }
        assert!(files[0].ends_with("-ab.pcap") && files[1].ends_with("-ba.pcap"));
        // The hash tells names with the same first characters apart, and
        // is the same for both directions of one link.
        assert_ne!(files[0], files[2]);
        assert_eq!(
            files[0].trim_end_matches("-ab.pcap"),
            files[1].trim_end_matches("-ba.pcap")
        );
        // Names up to the limit stay whole.
        let edge = "e".repeat(100);
        assert_eq!(
            capture_file(&format!("{edge}:ab")),
            format!("capture-{edge}-ab.pcap")
        );
    }
}
