//! The configuration parsers never panic, whatever the file says.

use hopwise_net::authority::{self, AuthoritySecret};
use hopwise_net::config::{Directory, ProxyConfig, RelayConfig};
use proptest::prelude::*;
use std::time::{Duration, UNIX_EPOCH};

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
    "authority",
    "[directory]",
    "valid_after",
    "valid_until",
    "signature",
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
    "\"2026-11-29T06:00:00Z\"",
    "\"2030-01-01T00:00:00Z\"",
    "\"ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c\"",
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
            let k = AuthoritySecret::from_seed(&[7; 32]);
            let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
            let _ = Directory::parse_verified(t, "dir.toml", &k.public(), now);
            if let Ok(s) = authority::sign_directory(t, "dir.toml", &k, now, now + Duration::from_secs(60)) {
                Directory::parse_verified(&s, "dir.toml", &k.public(), now).unwrap();
            }
        }
    }
}

const DIR: &str = "# two relays\n\n[[relay]]\nname = \"r1\"\naddress = \"127.0.0.1:9001\"\n\
    key = \"0101010101010101010101010101010101010101010101010101010101010101\"\nflags = [\"guard\"]\n\n\
    [[relay]]\nname = \"r2\"\naddress = \"[::1]:9002\"\n\
    key = \"0202020202020202020202020202020202020202020202020202020202020202\"\nflags = [\"exit\"]\n";

proptest! {
    /// Whichever byte of a signed directory changes (an ASCII bit), the
    /// directory is refused.
    #[test]
    fn any_changed_byte_of_a_signed_directory_is_refused(i in any::<prop::sample::Index>(), bit in 0..7u8) {
        let k = AuthoritySecret::from_seed(&[7; 32]);
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let signed = authority::sign_directory(DIR, "dir.toml", &k, now, now + Duration::from_secs(60)).unwrap();
        Directory::parse_verified(&signed, "dir.toml", &k.public(), now).unwrap();
        let mut b = signed.into_bytes();
        let i = i.index(b.len());
        b[i] ^= 1 << bit;
        let changed = String::from_utf8(b).unwrap();
        prop_assert!(Directory::parse_verified(&changed, "dir.toml", &k.public(), now).is_err());
    }
}
