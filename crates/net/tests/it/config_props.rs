//! The configuration parsers never panic, whatever the file says.

use hopwise_net::config::{Directory, ProxyConfig, RelayConfig};
use proptest::prelude::*;

const KEYS: &[&str] = &[
    "name",
    "listen",
    "key_file",
    "directory",
    "accept_clients",
    "socks",
    "path",
    "[exit]",
    "enabled",
    "policy",
    "reject_private",
    "default",
    "[bandwidth]",
    "rate",
    "burst",
    "refill",
    "[limits]",
    "circuit_queue",
    "stream_window",
    "[link]",
    "encrypt",
    "payload_budget",
    "[transport]",
    "alpha",
    "beta",
    "startup",
    "loss_response",
    "loss_bound",
    "[emulation.\"*\"]",
    "delay",
    "loss",
    "queue",
    "[metrics]",
    "[[relay]]",
    "key",
    "flags",
];
const VALUES: &[&str] = &[
    "\"x\"",
    "1",
    "-1",
    "0.5",
    "true",
    "[\"a\"]",
    "[1]",
    "\"127.0.0.1:1\"",
    "\"10MB/s\"",
    "\"5%\"",
    "\"20ms\"",
    "\"accept *:*\"",
    "[\"accept 1.2.3.4:*\"]",
    "{}",
    "\"\"",
    "1e400",
    "\"slow-start\"",
    "\"hystart\"",
    "\"delay-qualified\"",
];

fn toml_ish() -> impl Strategy<Value = String> {
    proptest::collection::vec((0..KEYS.len(), 0..VALUES.len(), any::<bool>()), 0..20).prop_map(
        |v| {
            let mut s = String::new();
            for (k, val, header) in v {
                let k = KEYS[k];
                if k.starts_with('[') || header {
                    s.push_str(&format!(
                        "{}\n",
                        if k.starts_with('[') {
                            k.to_string()
                        } else {
                            format!("[{k}]")
                        }
                    ));
                } else {
                    s.push_str(&format!("{k} = {}\n", VALUES[val]));
                }
            }
            s
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn parsers_never_panic(text in toml_ish(), junk in "\\PC{0,200}") {
        let base = std::env::temp_dir();
        for t in [&text, &junk] {
            let _ = RelayConfig::parse(t, "relay.toml", &base);
            let _ = ProxyConfig::parse(t, "proxy.toml", &base);
            let _ = Directory::parse(t, "dir.toml");
        }
    }
}
