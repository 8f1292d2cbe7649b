//! `report.html` beside a run's results: every figure and data file the run
//! wrote is on the page, and a reproduction's page carries its claims.

use std::path::Path;
use std::process::Command;

fn run(args: &[&str]) {
    let o = Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .args(args)
        .output()
        .expect("hopwise runs");
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The page, and the names of the files in `dir` with extension `ext`.
fn page_and(dir: &Path, ext: &str) -> (String, Vec<String>) {
    let page = std::fs::read_to_string(dir.join("report.html")).expect("report.html written");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(ext))
        .collect();
    names.sort();
    (page, names)
}

/// Checks that `dir/report.html` shows every SVG (at least `min_svgs`),
/// links every CSV, and that every figure links the CSV with its data;
/// returns the page.
fn page_shows_every_file(dir: &Path, min_svgs: usize) -> String {
    let (page, svgs) = page_and(dir, ".svg");
    assert!(svgs.len() >= min_svgs, "{svgs:?}");
    for f in &svgs {
        assert!(page.contains(&format!("<img src=\"{f}\"")), "{f} missing");
    }
    for f in page_and(dir, ".csv").1 {
        assert!(page.contains(&format!("href=\"{f}\"")), "{f} missing");
    }
    for fig in page.lines().filter(|l| l.starts_with("<figure")) {
        assert!(fig.contains(" · data: <a href="), "{fig}");
    }
    page
}

#[test]
fn sim_and_reproduce_write_a_page_with_every_figure() {
    let d = std::env::temp_dir().join(format!("hopwise-report-html-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);

    let sim = d.join("sim");
    run(&["sim", "--quiet", "--out", sim.to_str().unwrap()]);
    let page = page_shows_every_file(&sim, 3);
    // The terminal summary is on the page, without claims.
    assert!(page.contains("<pre>") && page.contains("goodput Mbit/s"));
    assert!(!page.contains("<h2>Claims</h2>"));

    let rep = d.join("lf");
    run(&[
        "reproduce",
        "ledbat-flow",
        "--quick",
        "--seeds",
        "1",
        "--out",
        rep.to_str().unwrap(),
    ]);
    let page = page_shows_every_file(&rep, 5);
    // One table row per claim in summary.json.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rep.join("summary.json")).unwrap()).unwrap();
    let claims = summary["claims"].as_array().expect("claims").len();
    assert!(claims > 5);
    assert_eq!(page.matches("<td class=\"v ").count(), claims, "{page}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Files in the output directory that the run did not write (another
/// command's, here) are named in a note, and left alone; a run into a
/// directory of its own names none, so its list of files is complete.
#[test]
fn files_an_earlier_run_left_are_named() {
    let d = std::env::temp_dir().join(format!("hopwise-report-leftover-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("stray.csv"), "x\n1\n").unwrap();
    let out = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_hopwise"))
            .args(args)
            .output()
            .expect("hopwise runs");
        assert!(o.status.success());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let dir = d.to_str().unwrap();
    let e = out(&["reproduce", "otcp", "--quick", "--out", dir]);
    assert!(
        e.contains("also holds 1 file this run did not write") && e.contains("stray.csv"),
        "{e}"
    );
    assert!(d.join("stray.csv").exists());
    std::fs::remove_file(d.join("stray.csv")).unwrap();
    let e = out(&["reproduce", "otcp", "--quick", "--out", dir]);
    assert!(!e.contains("note:"), "{e}");
    // The same for `sim`, whose own files (captures and their hosts file
    // too) are not named, while the reproduction's are.
    let s = d.join("sim");
    let sdir = s.to_str().unwrap();
    let e = out(&["sim", "--quiet", "--out", sdir, "--capture", "bottleneck"]);
    assert!(!e.contains("note:"), "{e}");
    let e = out(&["sim", "--quiet", "--out", sdir]);
    assert!(!e.contains("note:"), "{e}");
    let e = out(&["sim", "--quiet", "--out", dir]);
    assert!(e.contains("note:") && e.contains("pairs.csv"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}
