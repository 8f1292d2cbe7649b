//! `hopwise bench --tor --grow`: the Tor-scale benchmark at growing sizes,
//! each in a process of its own (peak memory is a process's), as a table
//! and a plot of time and memory against the network's size.
//!
//! At each size (relays `R`, circuits `10·R/3`, the full size's ratio) it
//! runs the network busy for `--secs`, then twice idle (every circuit
//! built, its connections open, its application never started) for a few
//! seconds, with all the circuits and with a tenth of them. The idle runs
//! give the memory an idle circuit costs: the difference of their peak
//! memory over the circuits between them.

use anyhow::{Context, Result};
use hopwise_experiment::Outputs;
use hopwise_plot::{Chart, Figure, Series};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Simulated seconds of the idle runs: long enough for every connection's
/// handshake (the longest access delays are tens of milliseconds).
const IDLE_SECS: u64 = 5;

/// One size of the growth table (a row of growth.csv and summary.json).
#[derive(Clone, Debug, Default, Serialize)]
pub struct GrowthRow {
    pub transport: String,
    pub relays: usize,
    pub circuits: usize,
    pub simulated_s: f64,
    pub events: u64,
    pub packet_hops: u64,
    pub run_wall_s: f64,
    pub events_per_s: f64,
    pub packet_hops_per_s: f64,
    /// Wall time per packet-hop (ns): flat when time grows linearly in
    /// packet-hops.
    pub ns_per_packet_hop: f64,
    pub peak_rss_mib: f64,
    /// Peak memory of the idle network with all its circuits, and with a
    /// tenth of them.
    pub idle_peak_rss_mib: f64,
    pub idle_tenth_peak_rss_mib: f64,
    /// What one idle circuit adds: the difference of the two idle runs'
    /// peak memory over the circuits between them (KiB).
    pub idle_kib_per_circuit: f64,
    pub event_hash: String,
}

/// What a child run reported (the fields of its summary.json used here).
struct Child {
    events: u64,
    packet_hops: u64,
    run_wall_s: f64,
    peak_rss: f64,
    event_hash: String,
}

/// Runs `hopwise bench --tor` in a child process into `dir`, and reads its
/// summary.json.
fn child(
    exe: &Path,
    transport: &str,
    (relays, circuits, secs, seed): (usize, usize, u64, u64),
    idle: bool,
    dir: &Path,
) -> Result<Child> {
    let mut cmd = Command::new(exe);
    cmd.args(["bench", "--tor", "--transport", transport])
        .args(["--relays", &relays.to_string()])
        .args(["--circuits", &circuits.to_string()])
        .args(["--secs", &secs.to_string()])
        .args(["--seed", &seed.to_string()])
        .arg("--out")
        .arg(dir);
    if idle {
        cmd.arg("--idle");
    }
    let what = format!(
        "{transport}, {relays} relays, {circuits} circuits{}",
        if idle { ", idle" } else { "" }
    );
    let status = cmd
        .status()
        .with_context(|| format!("starting {}", exe.display()))?;
    anyhow::ensure!(status.success(), "the run of {what} failed ({status})");
    let path = dir.join("summary.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let r = &v[0];
    let num = |k: &str| -> Result<f64> {
        r[k].as_f64()
            .with_context(|| format!("{}: no number `{k}` in the first run", path.display()))
    };
    Ok(Child {
        events: num("events")? as u64,
        packet_hops: num("packet_hops")? as u64,
        run_wall_s: num("run_wall_s")?,
        peak_rss: num("peak_rss_bytes")?,
        event_hash: r["event_hash"].as_str().unwrap_or("").to_string(),
    })
}

/// The sizes of `--grow`: relay counts, each at least 30 (three relays per
/// ten circuits, a tenth of them idle, leaves at least one circuit).
pub fn parse_sizes(s: &str) -> Result<Vec<usize>> {
    let mut v = Vec::new();
    for part in s.split(',') {
        let n: usize = part.trim().parse().map_err(|_| {
            anyhow::anyhow!(
                "--grow {s}: `{part}` is not a number of relays (e.g. --grow 600,1200,2400,6000)"
            )
        })?;
        anyhow::ensure!(n >= 30, "--grow {s}: {n} relays is too few (at least 30)");
        v.push(n);
    }
    anyhow::ensure!(!v.is_empty(), "--grow: no sizes");
    Ok(v)
}

const MIB: f64 = (1u64 << 20) as f64;

/// Runs the growth benchmark and writes growth.csv, growth.svg,
/// summary.json and report.html into `out`.
pub fn run(transport: &str, sizes: &[usize], secs: u64, seed: u64, out: &Path) -> Result<()> {
    use hopwise_repro::backtap::network::scale::ScaleParams;
    // Bad flags are refused before anything is created.
    for &relays in sizes {
        ScaleParams::new(transport, relays, relays * 10 / 3, secs).check()?;
    }
    crate::run::prepare_out(out)?;
    let exe = std::env::current_exe().context("finding the hopwise binary")?;
    let mut rows: Vec<GrowthRow> = Vec::new();
    for &relays in sizes {
        let circuits = relays * 10 / 3;
        let runs: PathBuf = out.join("runs");
        let size = (relays, circuits, secs, seed);
        let busy = child(
            &exe,
            transport,
            size,
            false,
            &runs.join(format!("{relays}")),
        )?;
        let idle = child(
            &exe,
            transport,
            (relays, circuits, IDLE_SECS, seed),
            true,
            &runs.join(format!("{relays}-idle")),
        )?;
        let tenth = (circuits / 10).max(1);
        let idle_tenth = child(
            &exe,
            transport,
            (relays, tenth, IDLE_SECS, seed),
            true,
            &runs.join(format!("{relays}-idle-tenth")),
        )?;
        let row = GrowthRow {
            transport: transport.to_string(),
            relays,
            circuits,
            simulated_s: secs as f64,
            events: busy.events,
            packet_hops: busy.packet_hops,
            run_wall_s: busy.run_wall_s,
            events_per_s: busy.events as f64 / busy.run_wall_s.max(1e-9),
            packet_hops_per_s: busy.packet_hops as f64 / busy.run_wall_s.max(1e-9),
            ns_per_packet_hop: busy.run_wall_s * 1e9 / (busy.packet_hops.max(1) as f64),
            peak_rss_mib: busy.peak_rss / MIB,
            idle_peak_rss_mib: idle.peak_rss / MIB,
            idle_tenth_peak_rss_mib: idle_tenth.peak_rss / MIB,
            idle_kib_per_circuit: (idle.peak_rss - idle_tenth.peak_rss)
                / (circuits - tenth).max(1) as f64
                / 1024.0,
            event_hash: busy.event_hash,
        };
        println!("{}", line(&row));
        rows.push(row);
    }
    write(out, transport, &rows)
}

fn line(r: &GrowthRow) -> String {
    format!(
        "grow: {} relays, {} circuits | {} events, {} packet-hops | run {:.1} s wall | {:.2} M events/s, {:.2} M packet-hops/s, {:.0} ns per packet-hop | peak {:.0} MiB | idle {:.0} MiB ({:.1} KiB per idle circuit)",
        r.relays,
        r.circuits,
        r.events,
        r.packet_hops,
        r.run_wall_s,
        r.events_per_s / 1e6,
        r.packet_hops_per_s / 1e6,
        r.ns_per_packet_hop,
        r.peak_rss_mib,
        r.idle_peak_rss_mib,
        r.idle_kib_per_circuit
    )
}

/// growth.csv, growth.svg (time and memory against the size),
/// summary.json and report.html.
pub fn write(out: &Path, transport: &str, rows: &[GrowthRow]) -> Result<()> {
    let mut o = Outputs::new(out);
    o.csv("growth.csv", rows)?;
    let pts = |f: &dyn Fn(&GrowthRow) -> (f64, f64)| rows.iter().map(f).collect::<Vec<_>>();
    // Linear growth from the smallest size, for comparison.
    let first = &rows[0];
    let linear = |f: &dyn Fn(&GrowthRow) -> f64| {
        pts(&|r| {
            (
                r.relays as f64,
                f(first) * r.packet_hops as f64 / first.packet_hops.max(1) as f64,
            )
        })
    };
    // Every panel: a quantity against the relays, on a log axis.
    let chart = |title: &str, y: &str, log_y: bool| {
        Chart::new(title)
            .x_label("relays")
            .y_label(y)
            .log_x(true)
            .log_y(log_y)
    };
    let time = chart("Run time", "wall time (s)", true)
        .series(Series::line_points(
            "measured",
            pts(&|r| (r.relays as f64, r.run_wall_s)),
        ))
        .series(Series::line("linear in packet-hops", linear(&|r| r.run_wall_s)).dashed());
    let per_hop = chart("Wall time per packet-hop", "ns per packet-hop", false).series(
        Series::line_points("measured", pts(&|r| (r.relays as f64, r.ns_per_packet_hop))),
    );
    let mem = chart("Peak memory", "MiB", true)
        .series(Series::line_points(
            "busy",
            pts(&|r| (r.relays as f64, r.peak_rss_mib)),
        ))
        .series(Series::line_points(
            "idle",
            pts(&|r| (r.relays as f64, r.idle_peak_rss_mib)),
        ));
    let idle = chart("Memory per idle circuit", "KiB", false)
        .series(Series::line_points(
            "measured",
            pts(&|r| (r.relays as f64, r.idle_kib_per_circuit)),
        ))
        .series(Series::line("4 KiB", pts(&|r| (r.relays as f64, 4.0))).dashed());
    let fig = Figure::new(
        format!("hopwise bench --tor --grow ({transport}, circuits = 10/3 × relays)"),
        2,
    )
    .panel(time)
    .panel(per_hop)
    .panel(mem)
    .panel(idle);
    o.svg("growth.svg", &fig)?;
    hopwise_experiment::write_summary(out, &rows)
        .with_context(|| format!("writing {}", out.join("summary.json").display()))?;
    let text: Vec<String> = rows.iter().map(line).collect();
    let facts = vec![format!("command: {}", crate::run::command_line())];
    crate::run::text_report(
        out,
        "hopwise bench --tor --grow",
        &facts,
        &text.join("\n"),
        &[],
        o.files(),
    )?;
    println!("results: {}", out.join("report.html").display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_checked() {
        assert_eq!(parse_sizes("600, 1200,6000").unwrap(), [600, 1200, 6000]);
        let e = parse_sizes("600,x").unwrap_err().to_string();
        assert!(e.contains("`x`"), "{e}");
        let e = parse_sizes("600,10").unwrap_err().to_string();
        assert!(e.contains("10 relays is too few"), "{e}");
    }

    #[test]
    fn outputs_are_written() {
        let dir = std::env::temp_dir().join(format!("hopwise-grow-{}", std::process::id()));
        let row = |relays: usize, hops: u64, wall: f64| GrowthRow {
            transport: "vanilla".into(),
            relays,
            circuits: relays * 10 / 3,
            packet_hops: hops,
            run_wall_s: wall,
            ns_per_packet_hop: wall * 1e9 / hops as f64,
            peak_rss_mib: relays as f64,
            idle_peak_rss_mib: relays as f64 / 4.0,
            idle_kib_per_circuit: 3.0,
            ..Default::default()
        };
        let rows = [row(600, 1_000_000, 10.0), row(1200, 2_000_000, 21.0)];
        std::fs::create_dir_all(&dir).unwrap();
        write(&dir, "vanilla", &rows).unwrap();
        let csv = std::fs::read_to_string(dir.join("growth.csv")).unwrap();
        assert_eq!(csv.lines().count(), 3, "{csv}");
        assert!(csv.lines().next().unwrap().contains("ns_per_packet_hop"));
        let svg = std::fs::read_to_string(dir.join("growth.svg")).unwrap();
        assert!(svg.contains("Memory per idle circuit"));
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert!(html.contains("growth.svg") && html.contains("1200 relays"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
