//! The settings Fig. 4 is run under: the two controller profiles (the
//! standards' constants, and the constants of the paper's simulator) and
//! the sensitivity variants that rerun the sweep with one thing changed.
//!
//! * [`RFC6817`], the default: the controllers at their documented
//!   defaults (`docs/congestion-control.md`): LEDBAT as RFC 6817 (MIN_CWND
//!   = 2), Vegas and NICE with Linux's α, β = 2, 4, TCP-LP as its INFOCOM
//!   2003 paper with a fixed delay range. What a standards-faithful stack
//!   does.
//! * [`PAPER_SETUP`]: the constants that the paper's simulator used, as far
//!   as its text and the code it cites show them, each with its source.
//!   Every constant is run by one of the sensitivity variants of
//!   `fig4_variants`, which take their parameters from here, so the
//!   profile's Fig. 4 rows are those variants' rows.

use super::net::{tcp_linux, tcp_ns2};
use super::LOW_PRIORITY;
use hopwise_proto::tcp::TcpConfig;
use serde::Serialize;

/// One controller constant of a profile, and where it comes from.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Constant {
    /// The controller it applies to.
    pub protocol: &'static str,
    /// The controller parameter (`docs/congestion-control.md`).
    pub param: &'static str,
    pub value: &'static str,
    /// The value in the default (RFC 6817) profile, and its source.
    pub default: &'static str,
    /// Why the paper's simulator had this value.
    pub source: &'static str,
    /// The Fig. 4 sensitivity variant that runs it.
    pub variant: &'static str,
}

/// A named set of controller constants for Fig. 4.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Profile {
    pub name: &'static str,
    /// How claims and figures name it: "RFC 6817 profile".
    pub label: &'static str,
    pub what: &'static str,
    /// The constants that differ from the controllers' defaults.
    pub constants: &'static [Constant],
}

impl Profile {
    /// The controller parameters of `protocol` under this profile.
    pub fn params(&self, protocol: &str) -> Vec<(&'static str, &'static str)> {
        self.constants
            .iter()
            .filter(|c| c.protocol == protocol)
            .map(|c| (c.param, c.value))
            .collect()
    }

    /// The Fig. 4 variant that runs `protocol` under this profile; `None`
    /// where the profile keeps the defaults (the main runs).
    pub fn variant(&self, protocol: &str) -> Option<&'static str> {
        self.constants
            .iter()
            .find(|c| c.protocol == protocol)
            .map(|c| c.variant)
    }

    /// The figure name of a claim judged under this profile.
    pub fn figure(&self, fig: &str) -> String {
        format!("{fig} ({})", self.label)
    }
}

/// The default profile: every controller at its documented defaults.
pub const RFC6817: Profile = Profile {
    name: "rfc6817",
    label: "RFC 6817 profile",
    what: "the controllers' documented defaults (docs/congestion-control.md): LEDBAT as RFC 6817 (MIN_CWND = 2 segments, §2.5), Vegas and NICE with Linux tcp_vegas.c's alpha, beta = 2, 4, TCP-LP as Kuzmanovic and Knightly (INFOCOM 2003) with a fixed delay range (calibrate on, no re-basing)",
    constants: &[],
};

/// The constants of the paper's simulator (ns-2 with TCP-Linux), where
/// they differ from the defaults.
pub const PAPER_SETUP: Profile = Profile {
    name: "paper-setup",
    label: "paper-setup profile",
    what: "the constants of the paper's simulator, ns-2 with TCP-Linux, where they differ from the defaults: LEDBAT with a one-packet floor, ns-2's Vegas alpha, beta = 1, 3 (also the Nice prototype's), and Linux's TCP-LP re-basing; TCP as in the main runs (tcp_ns2)",
    constants: &[
        Constant {
            protocol: "ledbat",
            param: "min_cwnd",
            value: "1",
            default: "2 (RFC 6817 §2.5)",
            source: "the authors' LEDBAT, a TCP-Linux module that runs in ns-2 (github.com/silviov/TCP-LEDBAT, linked from their LEDBAT page), decrements the window only while it is above one packet; the paper's Fig. 6 shows a starved flow at 0",
            variant: "ledbat-min-cwnd-1",
        },
        Constant {
            protocol: "vegas",
            param: "alpha",
            value: "1",
            default: "2 (Linux tcp_vegas.c)",
            source: "ns-2's Agent/TCP/Vegas default v_alpha_ 1 (ns-default.tcl); the paper runs Vegas as ns-2 implements it",
            variant: "vegas-alpha1-beta3",
        },
        Constant {
            protocol: "vegas",
            param: "beta",
            value: "3",
            default: "4 (Linux tcp_vegas.c)",
            source: "ns-2's Agent/TCP/Vegas default v_beta_ 3 (ns-default.tcl)",
            variant: "vegas-alpha1-beta3",
        },
        Constant {
            protocol: "nice",
            param: "alpha",
            value: "1",
            default: "2 (Linux tcp_vegas.c, as Vegas)",
            source: "the Nice prototype builds on Vegas with alpha = 1 (Venkataramani et al., OSDI 2002, §2.3), as ns-2's Vegas",
            variant: "vegas-alpha1-beta3",
        },
        Constant {
            protocol: "nice",
            param: "beta",
            value: "3",
            default: "4 (Linux tcp_vegas.c, as Vegas)",
            source: "the Nice prototype's beta = 3 (OSDI 2002, §2.3), as ns-2's Vegas",
            variant: "vegas-alpha1-beta3",
        },
        Constant {
            protocol: "lp",
            param: "rebase",
            value: "true",
            default: "false (INFOCOM 2003's fixed delay range)",
            source: "Linux tcp_lp.c re-bases owd_min = sowd, owd_max = 2 sowd after each reaction (tcp_lp_pkts_acked); ns-2's TCP-Linux, on which the authors built their LEDBAT, runs Linux's modules (the paper says only that LP was already implemented in its ns-2)",
            variant: "lp-linux",
        },
        Constant {
            protocol: "lp",
            param: "calibrate",
            value: "false",
            default: "true (ours: no early-congestion action before the first loss)",
            source: "Linux tcp_lp.c reacts from the first delay sample, as INFOCOM 2003 §III does",
            variant: "lp-linux",
        },
    ],
};

/// The profiles, default first.
pub const PROFILES: [Profile; 2] = [RFC6817, PAPER_SETUP];

/// A Fig. 4 setting: TCP options and per-protocol controller overrides.
#[derive(Clone)]
pub(super) struct Fig4Setting {
    pub name: &'static str,
    /// A short name for the figure (at most 24 characters, a bar's label).
    pub label: &'static str,
    pub what: &'static str,
    pub tcp: TcpConfig,
    /// Protocols this variant applies to (others are not rerun).
    pub protocols: Vec<&'static str>,
    pub params: fn(&str) -> Vec<(&'static str, &'static str)>,
}

fn no_params(_: &str) -> Vec<(&'static str, &'static str)> {
    Vec::new()
}

/// The paper-setup constants of `protocol`.
fn paper_setup(protocol: &str) -> Vec<(&'static str, &'static str)> {
    PAPER_SETUP.params(protocol)
}

/// The Fig. 4 sensitivity variants, in the order of `fig4_variants.csv`.
pub(super) fn fig4_variants() -> Vec<Fig4Setting> {
    vec![
        Fig4Setting {
            name: "delayed-acks",
            label: "delayed ACKs",
            what: "receivers delay ACKs (RFC 5681, 40 ms timer); otherwise as the main runs",
            tcp: TcpConfig {
                delayed_ack: true,
                ..tcp_ns2()
            },
            protocols: LOW_PRIORITY.to_vec(),
            params: no_params,
        },
        Fig4Setting {
            name: "sack",
            label: "SACK",
            what: "SACK on every flow (ns-2's Agent/TCP/Newreno and TCPSink have none); otherwise as the main runs",
            tcp: TcpConfig {
                sack: true,
                ..tcp_ns2()
            },
            protocols: LOW_PRIORITY.to_vec(),
            params: no_params,
        },
        Fig4Setting {
            name: "linux-tcp",
            label: "our TCP defaults",
            what: "our TCP model's defaults: delayed ACKs, an initial window of 10 and SACK",
            tcp: tcp_linux(),
            protocols: LOW_PRIORITY.to_vec(),
            params: no_params,
        },
        Fig4Setting {
            name: "ledbat-min-cwnd-1",
            label: "MIN_CWND = 1",
            what: "LEDBAT with MIN_CWND = 1 segment (the floor of the authors' TCP-Linux LEDBAT) instead of RFC 6817's 2",
            tcp: tcp_ns2(),
            protocols: vec!["ledbat"],
            params: paper_setup,
        },
        Fig4Setting {
            name: "vegas-alpha1-beta3",
            label: "alpha, beta = 1, 3",
            what: "Vegas and NICE with alpha, beta = 1, 3 packets (ns-2 Agent/TCP/Vegas defaults, the Nice prototype) instead of Linux's 2, 4",
            tcp: tcp_ns2(),
            protocols: vec!["vegas", "nice"],
            params: paper_setup,
        },
        Fig4Setting {
            name: "lp-linux",
            label: "LP re-basing (Linux)",
            what: "TCP-LP with Linux tcp_lp.c's re-basing rule (rebase = true, calibrate = false): every ACK above the threshold reacts and restarts the delay range at [sowd, 2 sowd]; other differences from Linux's module remain (docs/congestion-control.md)",
            tcp: tcp_ns2(),
            protocols: vec!["lp"],
            params: paper_setup,
        },
        Fig4Setting {
            name: "paper-literal-lp-nice",
            label: "papers' literal rules",
            what: "TCP-LP with calibrate = false and TCP-NICE with delay = rtt (the papers' literal rules), delayed ACKs on so that the NICE RTT artefact can show",
            tcp: TcpConfig {
                delayed_ack: true,
                ..tcp_ns2()
            },
            protocols: vec!["lp", "nice"],
            params: |p| match p {
                "lp" => vec![("calibrate", "false")],
                "nice" => vec![("delay", "rtt")],
                _ => vec![],
            },
        },
    ]
}

/// The figure's name for the Fig. 4 setting `name`.
pub(super) fn fig4_variant_label(name: &str) -> &str {
    fig4_variants()
        .into_iter()
        .find(|v| v.name == name)
        .map_or(name, |v| v.label)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every paper-setup constant is run by a variant that applies to its
    /// protocol and sets exactly the profile's constants for it, with the
    /// main runs' TCP; so the profile's rows are those variants' rows.
    #[test]
    fn each_paper_setup_constant_is_run_by_its_variant() {
        let variants = fig4_variants();
        for c in PAPER_SETUP.constants {
            let v = variants
                .iter()
                .find(|v| v.name == c.variant)
                .unwrap_or_else(|| panic!("no variant {}", c.variant));
            assert!(v.protocols.contains(&c.protocol), "{}", c.variant);
            assert_eq!((v.params)(c.protocol), PAPER_SETUP.params(c.protocol));
            assert_eq!(format!("{:?}", v.tcp), format!("{:?}", tcp_ns2()));
            assert!(!c.source.is_empty() && !c.default.is_empty());
        }
        // One variant per protocol, and every low-priority protocol has one.
        for p in LOW_PRIORITY {
            let names: Vec<&str> = PAPER_SETUP
                .constants
                .iter()
                .filter(|c| c.protocol == p)
                .map(|c| c.variant)
                .collect();
            assert!(!names.is_empty(), "{p}");
            assert!(names.iter().all(|n| *n == names[0]), "{p}: {names:?}");
        }
        assert!(RFC6817.params("ledbat").is_empty());
        assert_eq!(PAPER_SETUP.variant("lp"), Some("lp-linux"));
        assert_eq!(PAPER_SETUP.figure("Fig. 4"), "Fig. 4 (paper-setup profile)");
    }
}
