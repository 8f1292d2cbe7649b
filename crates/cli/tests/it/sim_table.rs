//! `hopwise sim`'s text table: the AQM's drops and ECN marks appear as
//! columns only when a scenario's AQM acted.

use std::path::Path;
use std::process::Command;

fn sim_stdout(scenario: &Path, sets: &[&str], out: &Path) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hopwise"));
    cmd.arg("sim").arg(scenario).args(["--set", "duration=15s"]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    let o = cmd.arg("--out").arg(out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn aqm_columns_appear_when_an_aqm_dropped_or_marked() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let sc = root.join("scenarios/codel-cubic.toml");
    let d = std::env::temp_dir().join(format!("hopwise-cli-table-{}", std::process::id()));
    let codel = sim_stdout(&sc, &[], &d.join("codel"));
    let header = codel
        .lines()
        .find(|l| l.starts_with("link direction"))
        .unwrap();
    assert!(header.ends_with("aqm drops ECN marks"), "{header}");
    let row = codel
        .lines()
        .find(|l| l.starts_with("bottleneck:ab"))
        .unwrap();
    let cols: Vec<u64> = row
        .split_whitespace()
        .rev()
        .take(3)
        .map(|c| c.parse().unwrap())
        .collect();
    // Reversed: ECN marks, aqm drops, drops. CoDel without ECN drops, never marks.
    assert_eq!(cols[0], 0, "{row}");
    assert!(cols[1] > 0 && cols[1] <= cols[2], "{row}");

    let ecn = sim_stdout(
        &sc,
        &["link.bottleneck.queue.ecn=true", "flow.cubic.tcp.ecn=true"],
        &d.join("ecn"),
    );
    let row = ecn
        .lines()
        .find(|l| l.starts_with("bottleneck:ab"))
        .unwrap();
    let marks: u64 = row.split_whitespace().last().unwrap().parse().unwrap();
    assert!(marks > 0, "{row}");

    let tail = sim_stdout(&sc, &["link.bottleneck.queue=100pkt"], &d.join("tail"));
    let header = tail
        .lines()
        .find(|l| l.starts_with("link direction"))
        .unwrap();
    assert!(
        header.ends_with("drops") && !header.contains("ECN"),
        "{header}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
