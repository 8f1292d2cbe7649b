//! Qdisc statistics from `tc -s -j qdisc show`.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// One qdisc's counters, as `tc -s -j` reports them.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct QdiscStats {
    pub kind: String,
    pub handle: String,
    /// Absent in older iproute2 output when the device was named on the command line.
    #[serde(default)]
    pub dev: String,
    /// "root" for a root qdisc, otherwise the parent class (e.g. "1:1").
    #[serde(default)]
    pub parent: Option<String>,
    /// Bytes and packets dequeued (sent) so far.
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub packets: u64,
    #[serde(default)]
    pub drops: u64,
    /// Bytes and packets queued now.
    #[serde(default)]
    pub backlog: u64,
    #[serde(default)]
    pub qlen: u64,
}

/// Parses `tc -s -j qdisc show` output. `what` names the source in errors.
pub fn parse(json: &str, what: &str) -> Result<Vec<QdiscStats>> {
    serde_json::from_str(json).with_context(|| {
        format!("{what}: not the JSON list of qdiscs that `tc -s -j qdisc show` prints")
    })
}

/// The leaf qdisc of `dev` with handle `handle` (e.g. "10:").
pub fn find<'a>(stats: &'a [QdiscStats], dev: &str, handle: &str) -> Option<&'a QdiscStats> {
    stats.iter().find(|q| q.dev == dev && q.handle == handle)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Output of iproute2 6.1 for the access-link router, trimmed.
    const SAMPLE: &str = r#"[{"kind":"noqueue","handle":"0:","dev":"lo","root":true,"refcnt":2,"options":{},"bytes":0,"packets":0,"drops":0,"overlimits":0,"requeues":0,"backlog":0,"qlen":0},{"kind":"htb","handle":"1:","dev":"r-inet","root":true,"refcnt":3,"options":{"r2q":10,"default":"0x1","direct_packets_stat":0,"direct_qlen":1000},"bytes":777074,"packets":2739,"drops":25,"overlimits":1147,"requeues":0,"backlog":0,"qlen":0},{"kind":"bfifo","handle":"10:","dev":"r-inet","parent":"1:1","options":{"limit":30000},"bytes":777074,"packets":2739,"drops":25,"overlimits":0,"requeues":0,"backlog":28948,"qlen":20}]"#;

    #[test]
    fn leaf_backlog_and_drops_are_read() {
        let s = parse(SAMPLE, "sample").unwrap();
        assert_eq!(s.len(), 3);
        let leaf = find(&s, "r-inet", "10:").unwrap();
        assert_eq!(leaf.kind, "bfifo");
        assert_eq!(leaf.parent.as_deref(), Some("1:1"));
        assert_eq!((leaf.backlog, leaf.qlen, leaf.drops), (28948, 20, 25));
        assert!(find(&s, "r-home", "10:").is_none());
    }

    #[test]
    fn garbage_is_an_error_naming_the_source() {
        let e = parse("Error: Cannot find device", "tc -n x -s -j qdisc show").unwrap_err();
        assert!(
            format!("{e:#}").contains("tc -n x -s -j qdisc show"),
            "{e:#}"
        );
    }
}
