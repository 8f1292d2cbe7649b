//! The kernel's TCP counters in one namespace: `/proc/net/snmp` and
//! `/proc/net/netstat` (what `nstat` reads), which a network namespace
//! keeps for itself, from zero when it is created.

use crate::cmd::{args, run};
use crate::netns::Netns;
use anyhow::Result;
use std::collections::BTreeMap;

/// The counters kept: retransmissions, timeouts, recoveries, and the undo
/// of window reductions found spurious (Eifel / DSACK / F-RTO).
pub const KEYS: [&str; 10] = [
    "Tcp:RetransSegs",
    "TcpExt:TCPTimeouts",
    "TcpExt:TCPSackRecovery",
    "TcpExt:TCPLossProbes",
    "TcpExt:TCPSpuriousRTOs",
    "TcpExt:TCPLossUndo",
    "TcpExt:TCPFullUndo",
    "TcpExt:TCPPartialUndo",
    "TcpExt:TCPDSACKUndo",
    "TcpExt:TCPSackRecoveryFail",
];

/// The running kernel's release (`uname -r`), or "unknown".
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Parses the files' pairs of lines (`Prefix: name name …` then
/// `Prefix: value value …`) into `Prefix:name` → value, keeping [`KEYS`].
/// Lines that do not pair up are skipped.
pub fn parse(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let lines: Vec<&str> = text.lines().collect();
    for pair in lines.windows(2) {
        let (Some((p1, names)), Some((p2, values))) =
            (pair[0].split_once(':'), pair[1].split_once(':'))
        else {
            continue;
        };
        if p1 != p2 {
            continue;
        }
        for (n, v) in names.split_whitespace().zip(values.split_whitespace()) {
            let key = format!("{p1}:{n}");
            if KEYS.contains(&key.as_str()) {
                if let Ok(v) = v.parse() {
                    out.insert(key, v);
                }
            }
        }
    }
    out
}

/// Reads [`KEYS`] in `ns`.
pub fn read(ns: &Netns) -> Result<BTreeMap<String, u64>> {
    let out = run(
        "ip",
        &args(&[
            "netns",
            "exec",
            ns.name(),
            "cat",
            "/proc/net/snmp",
            "/proc/net/netstat",
        ]),
    )?;
    Ok(parse(&out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_pair_with_the_values_below_them() {
        let text = "Tcp: RtoAlgorithm RetransSegs InErrs\n\
                    Tcp: 1 42 0\n\
                    TcpExt: SyncookiesSent TCPTimeouts TCPFullUndo\n\
                    TcpExt: 0 7 3\n\
                    IpExt: InNoRoutes\n\
                    IpExt: 5\n";
        let m = parse(text);
        assert_eq!(m.get("Tcp:RetransSegs"), Some(&42));
        assert_eq!(m.get("TcpExt:TCPTimeouts"), Some(&7));
        assert_eq!(m.get("TcpExt:TCPFullUndo"), Some(&3));
        // Only the listed counters; a value line is not read as names.
        assert_eq!(m.len(), 3, "{m:?}");
        assert!(parse("Tcp: RetransSegs\nTcpExt: 4\n").is_empty());
        assert!(parse("garbage\n\nTcp: RetransSegs\nTcp: x\n").is_empty());
    }
}
