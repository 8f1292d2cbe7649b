//! Circuit paths from the Tor Path Simulator (TorPS) over the Tor consensus
//! of 2015-08-04, as seed 002 used them ("TorPS paths over the 2015-08-04
//! consensus, as used by Tschorsch and Scheuermann (NSDI 2016)"; the files
//! come from nstor and are in `crates/tor/data/` with their README).
//!
//! Each line of a file is `index<TAB>guard<TAB>middle<TAB>exit`, each relay
//! `FINGERPRINT CONTINENT BANDWIDTH` (consensus bandwidth in bytes per
//! second). [`TorpsPaths`] holds the distinct relays (first appearance
//! decides a relay's continent and bandwidth; one relay of the 100-relay
//! file is listed with two continents) and the circuits as indexes into
//! them.

use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The 5000-circuit, 50-relay file (45 relays appear).
pub const CIRCUITS_50R: &str = include_str!("../data/circuits-5000c50r-20150804.dat");
/// The 10000-circuit, 100-relay file (85 relays appear).
pub const CIRCUITS_100R: &str = include_str!("../data/circuits-10000c100r-20150804.dat");

/// A relay of a path file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TorpsRelay {
    pub fingerprint: String,
    /// "EU", "NA", or (three relays of the 100-relay file) "AS" or "SA".
    pub continent: String,
    /// Consensus bandwidth, bytes per second.
    pub bandwidth: u64,
}

/// One circuit: guard, middle, exit as indexes into [`TorpsPaths::relays`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TorpsCircuit {
    /// The file's line index.
    pub index: u32,
    pub path: [usize; 3],
}

/// A parsed path file.
#[derive(Clone, Debug, Default)]
pub struct TorpsPaths {
    pub relays: Vec<TorpsRelay>,
    pub circuits: Vec<TorpsCircuit>,
}

impl TorpsPaths {
    /// Parses a path file; errors name the line.
    pub fn parse(text: &str) -> Result<TorpsPaths, String> {
        let mut out = TorpsPaths::default();
        let mut by_fp: BTreeMap<String, usize> = BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let err = |m: &str| format!("line {}: {m}", n + 1);
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() != 4 {
                return Err(err("expected 4 tab-separated fields"));
            }
            let index: u32 = f[0].trim().parse().map_err(|_| err("bad index"))?;
            let mut path = [0usize; 3];
            for (k, field) in f[1..].iter().enumerate() {
                let p: Vec<&str> = field.split_whitespace().collect();
                if p.len() != 3 {
                    return Err(err("a relay needs FINGERPRINT CONTINENT BANDWIDTH"));
                }
                let bandwidth: u64 = p[2].parse().map_err(|_| err("bad bandwidth"))?;
                let i = *by_fp.entry(p[0].to_string()).or_insert_with(|| {
                    out.relays.push(TorpsRelay {
                        fingerprint: p[0].to_string(),
                        continent: p[1].to_string(),
                        bandwidth,
                    });
                    out.relays.len() - 1
                });
                path[k] = i;
            }
            if path[0] == path[1] || path[1] == path[2] || path[0] == path[2] {
                return Err(err("a relay appears twice on the path"));
            }
            out.circuits.push(TorpsCircuit { index, path });
        }
        Ok(out)
    }

    /// The 50-relay file, parsed once.
    pub fn fifty() -> &'static TorpsPaths {
        static P: OnceLock<TorpsPaths> = OnceLock::new();
        P.get_or_init(|| TorpsPaths::parse(CIRCUITS_50R).expect("the bundled file parses"))
    }

    /// The 100-relay file, parsed once.
    pub fn hundred() -> &'static TorpsPaths {
        static P: OnceLock<TorpsPaths> = OnceLock::new();
        P.get_or_init(|| TorpsPaths::parse(CIRCUITS_100R).expect("the bundled file parses"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_files_parse() {
        let a = TorpsPaths::fifty();
        assert_eq!(a.circuits.len(), 5000);
        assert_eq!(a.relays.len(), 45);
        let b = TorpsPaths::hundred();
        assert_eq!(b.circuits.len(), 10000);
        assert_eq!(b.relays.len(), 85);
        assert!(b.relays.iter().all(|r| r.bandwidth >= 100_000));
        let eu = b.relays.iter().filter(|r| r.continent == "EU").count();
        assert!(eu > 50, "{eu} EU relays");
    }

    #[test]
    fn errors_name_the_line() {
        let e =
            TorpsPaths::parse("0\tA EU 1\tB EU 2\tC NA 3\n1\tA EU 1\tB EU\tC NA 3\n").unwrap_err();
        assert!(e.starts_with("line 2"), "{e}");
        let e = TorpsPaths::parse("0\tA EU 1\tA EU 1\tC NA 3\n").unwrap_err();
        assert!(e.contains("twice"), "{e}");
    }
}
