//! Unit tests of the relay, proxy and directory files.

use super::*;
use std::net::IpAddr;

const DIR: &str = r#"
[[relay]]
name = "r1"
address = "127.0.0.1:9001"
key = "0101010101010101010101010101010101010101010101010101010101010101"
flags = ["guard"]

[[relay]]
name = "r2"
address = "127.0.0.1:9002"
key = "0202020202020202020202020202020202020202020202020202020202020202"
flags = ["exit"]
"#;

/// The tests' authority key.
fn authority() -> crate::authority::AuthoritySecret {
    crate::authority::AuthoritySecret::from_seed(&[7; 32])
}

/// Its public key, as the configs of the tests write it.
const AUTHORITY: &str = "ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c";

/// A time `secs` seconds after 1970.
fn at(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

/// 2001-09-09 to 2033-05-18: now, for the tests.
const AFTER: u64 = 1_000_000_000;
const UNTIL: u64 = 2_000_000_000;

/// `text` signed by the tests' authority, valid from `AFTER` to `UNTIL`.
fn signed(text: &str) -> String {
    crate::authority::sign_directory(text, "dir.toml", &authority(), at(AFTER), at(UNTIL)).unwrap()
}

fn with_dir(f: impl FnOnce(&Path)) {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("dir.toml"), signed(DIR)).unwrap();
    f(d.path());
}

#[test]
fn paths_that_skip_guards_or_hops_are_warned_about() {
    let base = Directory::parse(DIR, "dir.toml").unwrap();
    let d = "the directory dir.toml";
    let w = |dir: &Directory, path: Option<&[&str]>| {
        let path: Option<Vec<String>> = path.map(|p| p.iter().map(|s| s.to_string()).collect());
        path_warnings(dir, d, path.as_deref())
    };
    // r1 guard, r2 exit: random paths have two relays.
    assert_eq!(
        w(&base, None),
        vec!["random paths will have 2 relays (the directory dir.toml lists 2; a full path is a guard, a middle and an exit)"]
    );
    let mut third = base.clone();
    let mut r3 = third.relays[0].clone();
    r3.name = "r3".into();
    r3.guard = false;
    third.relays.push(r3);
    assert!(w(&third, None).is_empty());
    // No guard at all; the only guard is the exit.
    let mut none = third.clone();
    none.relays[0].guard = false;
    let got = w(&none, None);
    assert_eq!(got.len(), 1);
    assert!(
        got[0].contains(
            "flags no relay as a guard, so the guard of random paths is any relay that is not an exit"
        ),
        "{got:?}"
    );
    let mut lone = none.clone();
    lone.relays[1].guard = true;
    let got = w(&lone, None);
    assert!(
        got[0].contains(
            "only the exit `r2` as a guard, so the guard of random paths is any relay that is not an exit"
        ),
        "{got:?}"
    );
    // An explicit path: its entry should be a guard.
    assert!(w(&base, Some(&["r1", "r2"])).is_empty());
    assert!(w(&base, Some(&["r2"])).is_empty());
    let got = w(&none, Some(&["r1", "r2"]));
    assert_eq!(
        got,
        vec!["path[0]: `r1` has no \"guard\" flag in the directory dir.toml, but it is this path's entry"]
    );
}

#[test]
fn a_relay_is_warned_where_its_directory_entry_disagrees() {
    with_dir(|base| {
        let r1 = [1u8; 32];
        let cfg = |extra: &str| {
            let text = format!(
                "name = \"r1\"\nlisten = \"127.0.0.1:9001\"\nkey_file = \"r1.key\"\ndirectory = \"dir.toml\"\nauthority = \"ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c\"\n{extra}"
            );
            RelayConfig::parse(&text, "relay.toml", base).unwrap()
        };
        // r1 as the directory has it: a guard, not an exit, at 9001.
        assert!(cfg("").start_warnings(&r1).is_empty());
        // Unspecified listen addresses match any directory address.
        let mut any = cfg("");
        any.listen = "0.0.0.0:9001".parse().unwrap();
        assert!(any.start_warnings(&r1).is_empty());
        let mut moved = cfg("");
        moved.listen = "127.0.0.1:9009".parse().unwrap();
        let w = moved.start_warnings(&r1);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("127.0.0.1:9001, differs from `listen` = 127.0.0.1:9009"));
        let w = cfg("[exit]\nenabled = true\n").start_warnings(&r1);
        assert_eq!(
            w,
            vec!["the directory's `exit` flag of r1 differs from [exit] enabled = true"]
        );
        let w = cfg("accept_clients = false\n").start_warnings(&r1);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("flags r1 as a guard, but accept_clients = false"));
        let w = cfg("").start_warnings(&[7u8; 32]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("relay `r1`) is not in the directory"),
            "{w:?}"
        );
        assert!(w[0].contains(&"07".repeat(32)), "{w:?}");
        let w = cfg("[link]\nencrypt = false\n").start_warnings(&r1);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("link encryption is OFF"));
    });
}

#[test]
fn a_file_that_is_not_text_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("relay.toml");
    std::fs::write(&p, b"name = \"r1\"\n\xff\xfe").unwrap();
    let e = RelayConfig::load(&p).unwrap_err().to_string();
    assert!(e.contains("is not UTF-8 text (byte 12 is not)"), "{e}");
}

#[test]
fn directory_round_trips() {
    let d = Directory::parse(DIR, "dir.toml").unwrap();
    assert_eq!(d.relays.len(), 2);
    assert!(d.relays[0].guard && d.relays[1].exit);
    assert_eq!(Directory::parse(&d.to_toml(), "x").unwrap(), d);
}

/// Each `(extra, want)`: the relay file `ok` with `extra` fails with an
/// error that starts with `want`.
fn relay_errors_start_with(base: &Path, ok: &str, cases: &[(&str, &str)]) {
    for (extra, want) in cases {
        let text = format!("{ok}{extra}");
        let e = RelayConfig::parse(&text, "relay.toml", base).unwrap_err();
        assert!(e.to_string().starts_with(want), "{extra:?}: got {e}");
    }
}

#[test]
fn relay_errors_name_file_key_and_problem() {
    with_dir(|base| {
        let ok = "name = \"r1\"\nlisten = \"127.0.0.1:9001\"\nkey_file = \"r1.key\"\ndirectory = \"dir.toml\"\nauthority = \"ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c\"\n";
        let c = RelayConfig::parse(ok, "relay.toml", base).unwrap();
        assert_eq!(c.key_file, base.join("r1.key"));
        let cases = [
            (
                "[bandwidth]\nrate = \"10 MBs\"\n",
                "relay.toml: bandwidth.rate: ",
            ),
            (
                "[bandwidth]\nrate = 10\n",
                "relay.toml: bandwidth.rate: a rate needs a unit: write \"10Mbit\", \"10kbit\" or \"10MB/s\" (a quoted string), not the bare number 10",
            ),
            (
                "listn = 3\n",
                "relay.toml: listn: unknown key; did you mean `listen`?",
            ),
            (
                "[exit]\npolicy = [\"allow *:*\"]\n",
                "relay.toml: exit.policy[0]: `allow *:*`: unknown verb",
            ),
            (
                "[metrics]\nlisten = \"0.0.0.0:9100\"\n",
                "relay.toml: metrics.listen: 0.0.0.0:9100 is not a loopback",
            ),
            (
                "[emulation.r9]\ndelay = \"1ms\"\n",
                "relay.toml: emulation.r9: `r9` is not a relay",
            ),
            (
                "[emulation.r2]\nloss = 2.0\n",
                "relay.toml: emulation.r2.loss: must be a probability in [0, 1) (0.01 drops 1 % of packets; a loss of 1 would drop every packet, so no connection could come up), got 2",
            ),
            (
                "[emulation.r2]\nloss = 1.0\n",
                "relay.toml: emulation.r2.loss: must be a probability in [0, 1) (0.01 drops 1 % of packets; a loss of 1 would drop every packet, so no connection could come up), got 1",
            ),
            (
                "[emulation.r2]\nloss = \"100%\"\n",
                "relay.toml: emulation.r2.loss: must be a probability in [0, 1) (",
            ),
            (
                "[emulation.r2]\nloss = -0.01\n",
                "relay.toml: emulation.r2.loss: must be a probability in [0, 1) (",
            ),
            (
                "[emulation.r2]\nqueue = \"64KiB\"\n",
                "relay.toml: emulation.r2.queue: has no effect without rate (it holds what waits for the rate limit); set rate, or leave queue out",
            ),
            (
                "[emulation.r2]\ndelay = \"1ms\"\n[emulation.\"127.0.0.1:9002\"]\nloss = 0.1\n",
                "relay.toml: emulation.r2: [emulation.\"127.0.0.1:9002\"] and [emulation.r2] are the same peer (127.0.0.1:9002); give each peer one section",
            ),
            (
                "[limits]\ncircuit_queue = 0\n",
                "relay.toml: limits.circuit_queue: must be 4 to",
            ),
            (
                "[limits]\nmax_queued_cells = 10\n",
                "relay.toml: limits.max_queued_cells: must be 1000 to 1099511627776, got 10",
            ),
            (
                "[limits]\nmax_circuits_per_client = 0\n",
                "relay.toml: limits.max_circuits_per_client: must be 1 to 10000000, got 0",
            ),
            (
                "[limits]\nmax_stream_buffers = \"1KiB\"\n",
                "relay.toml: limits.max_stream_buffers: must be 1MiB to 1TiB",
            ),
        ];
        relay_errors_start_with(base, ok, &cases);
        assert!(
            RelayConfig::parse(ok, "relay.toml", base)
                .unwrap()
                .transport
                .sack
        );
        let c = RelayConfig::parse(
            &format!("{ok}[transport]\nsack = false\n"),
            "relay.toml",
            base,
        )
        .unwrap();
        assert!(!c.transport.sack);
        let e = RelayConfig::parse(&format!("{ok}[transport]\nsack = 1\n"), "relay.toml", base)
            .unwrap_err();
        assert!(
            e.to_string().starts_with("relay.toml: transport.sack: "),
            "{e}"
        );
        let text =
            format!("{ok}[limits]\nmax_circuits_per_client = 8\nmax_stream_buffers = \"64MiB\"\n");
        let c = RelayConfig::parse(&text, "relay.toml", base).unwrap();
        assert_eq!(c.limits.max_circuits_per_client, 8);
        assert_eq!(c.limits.max_stream_buffers, 64 << 20);
        assert_eq!(c.limits.max_circuits, Limits::default().max_circuits);
        let e = RelayConfig::parse("name = \"r1\"\n", "relay.toml", base).unwrap_err();
        assert_eq!(e.key, "listen");
        let e = RelayConfig::parse("name = [\n", "relay.toml", base).unwrap_err();
        assert!(e.message.contains("TOML syntax error"), "{e}");
        let bad_dir = format!(
            "{}directory = \"missing.toml\"\nauthority = \"{AUTHORITY}\"\n",
            &ok[..ok.find("directory").unwrap()]
        );
        let e = RelayConfig::parse(&bad_dir, "relay.toml", base).unwrap_err();
        assert!(e.to_string().contains("missing.toml: cannot read"), "{e}");
    });
}

#[test]
fn log_level_takes_levels_and_directives() {
    with_dir(|base| {
        let ok = "name = \"r1\"\nlisten = \"127.0.0.1:9001\"\nkey_file = \"r1.key\"\ndirectory = \"dir.toml\"\nauthority = \"ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c\"\n";
        assert_eq!(
            RelayConfig::parse(ok, "relay.toml", base)
                .unwrap()
                .log_level,
            None
        );
        for good in [
            "debug",
            "WARN",
            "warn,hopwise_net=debug",
            "hopwise_net::core=trace",
        ] {
            let c =
                RelayConfig::parse(&format!("{ok}log_level = \"{good}\"\n"), "relay.toml", base)
                    .unwrap();
            assert_eq!(c.log_level.as_deref(), Some(good));
        }
        relay_errors_start_with(
            base,
            ok,
            &[
                (
                    "log_level = \"verbose\"\n",
                    "relay.toml: log_level: `verbose` is not a level; use a level (off, error, warn, info, debug, trace)",
                ),
                (
                    "log_level = \"debg\"\n",
                    "relay.toml: log_level: `debg` is not a level; did you mean `debug`?",
                ),
                ("log_level = \"\"\n", "relay.toml: log_level: is empty"),
                (
                    "log_level = \"info,debug\"\n",
                    "relay.toml: log_level: `info,debug` names more than one default level",
                ),
                (
                    "log_level = \"hop wise=info\"\n",
                    "relay.toml: log_level: `hop wise=info` does not name a target",
                ),
            ],
        );
    });
}

#[test]
fn exit_rules_that_can_never_match_are_refused() {
    with_dir(|base| {
        let ok = "name = \"r1\"\nlisten = \"127.0.0.1:9001\"\nkey_file = \"r1.key\"\ndirectory = \"dir.toml\"\nauthority = \"ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c\"\n[exit]\nenabled = true\n";
        for (extra, want) in [
            (
                "policy = [\"accept *:*\", \"reject *:18080\"]\n",
                "relay.toml: exit.policy[1]: `reject *:18080` can never match: exit.policy[0] `accept *:*` matches every address and port first (remove the rules after it)",
            ),
            (
                "policy = [\"reject *:25\", \"reject *:0-65535\", \"accept 1.2.3.4/32:80\"]\nreject_private = false\n",
                "relay.toml: exit.policy[2]: `accept 1.2.3.4/32:80` can never match: exit.policy[1] `reject *:*` matches every address and port first (remove the rules after it)",
            ),
            (
                "policy = [\"accept 127.0.0.1/32:*\"]\n",
                "relay.toml: exit.policy[0]: `accept 127.0.0.1/32:*` can never match: reject_private (true by default) refuses 127.0.0.0/8 (a private range) before the rules; to reach it set reject_private = false, and put \"reject private:*\" right after the rules for private ranges (before any other rule) to keep refusing the rest",
            ),
            (
                "policy = [\"accept private:22\"]\nreject_private = true\n",
                "relay.toml: exit.policy[0]: `accept private:22` can never match: reject_private (true by default) refuses the private ranges before the rules; to reach it set reject_private = false, and put \"reject private:*\" right after the rules for private ranges (before any other rule) to keep refusing the rest",
            ),
            (
                "policy = [\"accept 10.0.0.1/8:*\"]\n",
                "relay.toml: exit.policy[0]: `accept 10.0.0.1/8:*`: `10.0.0.1/8` has bits set after the /8 prefix; did you mean 10.0.0.0/8?",
            ),
        ] {
            let e = RelayConfig::parse(&format!("{ok}{extra}"), "relay.toml", base).unwrap_err();
            assert_eq!(e.to_string(), want, "{extra:?}");
        }
        // The review's policy, without its dead rule: reject_private
        // still refuses loopback and link-local addresses first.
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let c = RelayConfig::parse(
            &format!("{ok}policy = [\"reject *:18080\", \"accept *:*\"]\ndefault = \"reject\"\n"),
            "relay.toml",
            base,
        )
        .unwrap();
        assert!(!c.exit.policy.allows(ip("127.0.0.1"), 80));
        assert!(!c.exit.policy.allows(ip("169.254.169.254"), 80));
        assert!(!c.exit.policy.allows(ip("8.8.8.8"), 18080));
        assert!(c.exit.policy.allows(ip("8.8.8.8"), 80));
        // With reject_private off, a rule reaches loopback.
        let c = RelayConfig::parse(
            &format!("{ok}reject_private = false\npolicy = [\"accept 127.0.0.1/32:*\", \"reject private:*\"]\n"),
            "relay.toml",
            base,
        )
        .unwrap();
        assert!(c.exit.policy.allows(ip("127.0.0.1"), 80));
        assert!(!c.exit.policy.allows(ip("127.0.0.2"), 80));
    });
}

#[test]
fn exit_keys_of_a_relay_that_is_not_an_exit_are_warned_about() {
    let table = |s: &str| s.parse::<Table>().unwrap();
    let t = table("enabled = false\npolicy = [\"reject *:25\"]\n");
    assert_eq!(
        disabled_exit_warning(Some(&t), false).as_deref(),
        Some("this relay is not an exit (exit.enabled is false), so exit.policy has no effect (set enabled = true to make it one)")
    );
    let t = table("policy = []\ndefault = \"reject\"\n");
    assert_eq!(
        disabled_exit_warning(Some(&t), false).as_deref(),
        Some("this relay is not an exit (exit.enabled is false), so exit.default, exit.policy have no effect (set enabled = true to make it one)")
    );
    assert_eq!(disabled_exit_warning(Some(&t), true), None);
    assert_eq!(
        disabled_exit_warning(Some(&table("enabled = false\n")), false),
        None
    );
    assert_eq!(disabled_exit_warning(None, false), None);
}

#[test]
fn proxy_path_must_name_known_relays() {
    with_dir(|base| {
        let e = ProxyConfig::parse(
            "directory = \"dir.toml\"\nauthority = \"ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c\"\npath = [\"r1\", \"r3\"]\n",
            "proxy.toml",
            base,
        )
        .unwrap_err();
        assert_eq!(e.key, "path[1]");
        // r1 and r2 are equally close to r3: no suggestion, the list.
        assert!(
            e.message.contains("unknown relay `r3` (the directory ")
                && e.message.ends_with("dir.toml lists: r1, r2)"),
            "{e}"
        );
        let c = ProxyConfig::parse(
            "directory = \"dir.toml\"\nauthority = \"ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c\"\npath = [\"r1\", \"r2\"]\nsocks = \"127.0.0.1:0\"\n[emulation.\"*\"]\ndelay = \"20ms\"\nloss = \"5%\"\n",
            "proxy.toml",
            base,
        )
        .unwrap();
        assert_eq!(c.emulation[0].1.loss, 0.05);
        assert_eq!(c.emulation[0].0, PeerSel::All);
    });
}

#[test]
fn durations_and_sizes_out_of_range_are_refused() {
    with_dir(|base| {
        let ok = "name = \"r1\"\nlisten = \"127.0.0.1:9001\"\nkey_file = \"r1.key\"\ndirectory = \"dir.toml\"\nauthority = \"ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c\"\n";
        let cases = [
            (
                "[link]\nhandshake_timeout = \"0s\"\n",
                "relay.toml: link.handshake_timeout: must be positive (1ms to 1h), got `0s`",
            ),
            (
                "[link]\nhandshake_timeout = \"2h\"\n",
                "relay.toml: link.handshake_timeout: must be 1ms to 1h, got `2h`",
            ),
            (
                "[exit]\nenabled = true\nconnect_timeout = \"0s\"\n",
                "relay.toml: exit.connect_timeout: must be positive (1ms to 1h), got `0s`",
            ),
            (
                "[link]\nkeepalive = \"0ms\"\n",
                "relay.toml: link.keepalive: must be positive",
            ),
            (
                "[link]\nidle_timeout = \"0.1ns\"\n",
                "relay.toml: link.idle_timeout: must be positive",
            ),
            (
                "[link]\nhandshakes_per_second = 0\n",
                "relay.toml: link.handshakes_per_second: must be 1 to 1000000, got 0",
            ),
            (
                "[link]\nidle_timeout = \"1000h\"\n",
                "relay.toml: link.idle_timeout: must be 1ms to 1h, got `1000h`",
            ),
            // Only keepalive set, beyond the default idle_timeout (30s).
            (
                "[link]\nkeepalive = \"40s\"\n",
                "relay.toml: link.keepalive: must be shorter than link.idle_timeout (30s by default)",
            ),
            (
                "[link]\nkeepalive = \"10s\"\nidle_timeout = \"10s\"\n",
                "relay.toml: link.idle_timeout: must be longer than link.keepalive (10s)",
            ),
            (
                "[link]\nsocket_buffer = 0\n",
                "relay.toml: link.socket_buffer: must be 64KiB to 1GiB, got 0 bytes",
            ),
            (
                "[transport]\npack_delay = \"1min\"\n",
                "relay.toml: transport.pack_delay: must be 0s to 1s, got `1min`",
            ),
            (
                "[bandwidth]\nrate = \"1MB/s\"\nrefill = \"10s\"\n",
                "relay.toml: bandwidth.refill: must be 100us to 1s",
            ),
            (
                "[bandwidth]\nrate = \"1MB/s\"\nrefill = \"0s\"\n",
                "relay.toml: bandwidth.refill: must be 100us to 1s",
            ),
            (
                "[emulation.r2]\ndelay = \"1h\"\n",
                "relay.toml: emulation.r2.delay: must be 0s to 10s, got `1h`",
            ),
            (
                "[emulation.r2]\nrate = \"1MB/s\"\nqueue = 0\n",
                "relay.toml: emulation.r2.queue: must be 1500 bytes (one datagram) to 1GiB, got 0 bytes",
            ),
        ];
        relay_errors_start_with(base, ok, &cases);
        // The bounds themselves, and a zero where zero means "off", pass.
        let edges = "[link]\nhandshake_timeout = \"1ms\"\nkeepalive = \"1ms\"\nidle_timeout = \"1h\"\nsocket_buffer = \"64KiB\"\n[exit]\nconnect_timeout = \"1h\"\n[transport]\npack_delay = \"0s\"\n[emulation.r2]\ndelay = \"10s\"\nloss = 0.999\nrate = \"1MB/s\"\nqueue = 1500\n[emulation.\"127.0.0.1:9001\"]\nloss = 0\n";
        let c = RelayConfig::parse(&format!("{ok}{edges}"), "relay.toml", base).unwrap();
        assert_eq!(c.link.handshake_timeout, Duration::from_millis(1));
        assert_eq!(c.link.idle_timeout, Duration::from_secs(3600));
        assert_eq!(c.link.socket_buffer, 64 << 10);
        assert_eq!(c.exit.connect_timeout, Duration::from_secs(3600));
        assert_eq!(c.emulation[1].1.delay, Duration::from_secs(10));
        assert_eq!(c.emulation[1].1.loss, 0.999);
        assert_eq!(c.emulation[1].1.queue, 1500);
        // Two peers (r1's address and r2), two sections.
        assert_eq!(c.emulation.len(), 2);

        let proxy = "directory = \"dir.toml\"\nauthority = \"ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c\"\n";
        let e = ProxyConfig::parse(
            &format!("{proxy}connect_timeout = \"0s\"\n"),
            "proxy.toml",
            base,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "proxy.toml: connect_timeout: must be positive (1ms to 1h), got `0s`"
        );
        let e = ProxyConfig::parse(
            &format!("{proxy}[link]\nhandshake_timeout = \"0s\"\n"),
            "proxy.toml",
            base,
        )
        .unwrap_err();
        assert_eq!(e.key, "link.handshake_timeout");
        for (text, msg) in [
            (
                "socks_max_connections = 0\n",
                "proxy.toml: socks_max_connections: must be 1 to 1000000, got 0",
            ),
            (
                "socks_handshake_timeout = \"2h\"\n",
                "proxy.toml: socks_handshake_timeout: must be 1ms to 1h, got `2h`",
            ),
        ] {
            let e = ProxyConfig::parse(&format!("{proxy}{text}"), "proxy.toml", base).unwrap_err();
            assert_eq!(e.to_string(), msg);
        }
        let c = ProxyConfig::parse(
            &format!("{proxy}socks_max_connections = 64\nsocks_handshake_timeout = \"2s\"\n"),
            "proxy.toml",
            base,
        )
        .unwrap();
        assert_eq!(c.socks_max_connections, 64);
        assert_eq!(c.socks_handshake_timeout, Duration::from_secs(2));
        let d = ProxyConfig::parse(proxy, "proxy.toml", base).unwrap();
        assert_eq!(d.socks_max_connections, 1000);
        assert_eq!(d.socks_handshake_timeout, Duration::from_secs(10));
    });
}

#[test]
fn proxy_path_must_make_a_circuit() {
    with_dir(|base| {
        let parse = |path: &str| {
            ProxyConfig::parse(
                &format!("directory = \"dir.toml\"\nauthority = \"ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c\"\npath = {path}\n"),
                "proxy.toml",
                base,
            )
        };
        let e = parse("[\"r1\", \"r1\", \"r2\"]").unwrap_err();
        assert_eq!(e.key, "path[1]");
        assert!(
            e.message
                .contains("`r1` is already path[0]; a circuit passes through each relay once"),
            "{e}"
        );
        let e = parse("[\"r2\", \"r1\"]").unwrap_err();
        assert_eq!(e.key, "path[1]");
        assert!(
            e.message.starts_with("`r1` is not an exit")
                && e.message.contains("lists these exits: r2"),
            "{e}"
        );
        let e = parse("[]").unwrap_err();
        assert_eq!(e.key, "path");
        let e = parse(&format!("[{}]", ["\"r1\""; MAX_PATH + 1].join(", "))).unwrap_err();
        assert_eq!(e.to_string(), "proxy.toml: path: at most 9 relays, got 10");
        // One relay, an exit, is a circuit (entry and exit at once).
        assert_eq!(
            parse("[\"r2\"]").unwrap().path,
            Some(vec!["r2".to_string()])
        );
        // A random path needs an exit in the directory.
        std::fs::write(
            base.join("noexit.toml"),
            signed(&DIR.replace("[\"exit\"]", "[]")),
        )
        .unwrap();
        let e =
            ProxyConfig::parse("directory = \"noexit.toml\"\nauthority = \"ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c\"\n", "proxy.toml", base).unwrap_err();
        assert_eq!(e.key, "directory");
        assert!(
            e.message.contains("noexit.toml flags no relay as an exit"),
            "{e}"
        );
        // A path set in code is checked as well (spawn_proxy calls this).
        let mut c = parse("[\"r1\", \"r2\"]").unwrap();
        assert!(c.check().is_ok());
        c.path = Some(vec!["r2".into(), "r2".into()]);
        let e = c.check().unwrap_err();
        assert_eq!(e.file, "proxy.toml");
        assert_eq!(e.key, "path[1]");
    });
}

#[test]
fn generated_keys_are_accepted_in_the_directory() {
    for i in 0..8 {
        let key = hopwise_proto::link::Keypair::generate().public;
        let text = format!(
            "[[relay]]\nname = \"a\"\naddress = \"127.0.0.1:1\"\nkey = \"{}\"\n",
            hopwise_proto::link::hex(&key)
        );
        let d = Directory::parse(&text, "d.toml").unwrap_or_else(|e| panic!("{i}: {e}"));
        assert_eq!(d.relays[0].key, key);
    }
}

#[test]
fn bad_directories() {
    for (text, want) in [
        ("", "relay: the directory lists no relays"),
        ("[[relay]]\nname = \"a\"\naddress = \"x\"\n", "relay.a.address: `x` is not an address"),
        ("[[relay]]\nname = \"a\"\naddress = \"127.0.0.1:1\"\nkey = \"00\"\n", "relay.a.key: `00` is not a public key"),
        ("[[relay]]\nname = \"a\"\naddress = \"127.0.0.1:1\"\nkey = \"0101010101010101010101010101010101010101010101010101010101010101\"\nflags = [\"exiit\"]\n", "relay.a.flags: unknown flag `exiit`; did you mean `exit`?"),
        ("[[relays]]\nname = \"a\"\n", "relays: unknown key; did you mean `relay`? (a directory has a [directory] table and [[relay]] tables)"),
        ("name = \"r1\"\nlisten = \"127.0.0.1:9001\"\n", "is not a directory file: unknown key `listen` (a directory has a [directory] table and [[relay]] tables)"),
        ("directory = \"dir.toml\"\n", "is not a directory file: `directory` is not a table"),
        ("[directory]\nvalid_after = \"yesterday\"\n", "directory.valid_after: `yesterday` is not an RFC 3339 time in UTC"),
        ("[directory]\nvalid_after = \"2026-01-02T00:00:00Z\"\nvalid_until = \"2026-01-01T00:00:00Z\"\n", "directory.valid_until: 2026-01-01T00:00:00Z is not after valid_after = 2026-01-02T00:00:00Z"),
        ("[directory]\nsignature = \"00\"\n", "directory.signature: `00` is not a signature (128 lowercase hex digits)"),
        ("[directory]\nsigned = true\n", "directory.signed: unknown key"),
        ("[[relay]]\nname = \" \"\n", "relay[0].name: is empty"),
        ("[[relay]]\naddress = \"127.0.0.1:1\"\n", "relay[0].name: missing required key (every relay needs a name)"),
        ("[[relay]]\nname = \"a\"\naddress = \"0.0.0.0:19101\"\n", "relay.a.address: 0.0.0.0:19101: 0.0.0.0 is the unspecified address, which nobody can send to; give the address the relay is reached at"),
        ("[[relay]]\nname = \"a\"\naddress = \"[::]:19101\"\n", "relay.a.address: [::]:19101: :: is the unspecified address"),
        ("[[relay]]\nname = \"a\"\naddress = \"127.0.0.1:0\"\n", "relay.a.address: 127.0.0.1:0: port 0 is not a port anybody can send to; give the port the relay listens on"),
        (&*format!("[[relay]]\nname = \"a\"\naddress = \"127.0.0.1:1\"\nkey = \"{}\"\n", "0".repeat(64)), "relay.a.key: all zeros is not a usable public key"),
        (&*format!("[[relay]]\nname = \"a\"\naddress = \"127.0.0.1:1\"\nkey = \"01{}\"\n", "0".repeat(62)), "relay.a.key: `0100000000000000000000000000000000000000000000000000000000000000` is an X25519 point of small order, not a usable public key (every handshake secret with it would be zero)"),
        ("[[relay]]\nname = \"a\"\naddress = \"127.0.0.1:1\"\nkey = \"e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800\"\n", "relay.a.key: `e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800` is an X25519 point of small order"),
        (&*format!("{DIR}\n[[relay]]\nname = \"r3\"\naddress = \"127.0.0.1:9003\"\nkey = \"{}\"\n", "02".repeat(32)), "relay.r3.key: the same key is listed for relay `r2`"),
        (&*format!("{DIR}\n[[relay]]\nname = \"r3\"\naddress = \"127.0.0.1:9002\"\nkey = \"{}\"\n", "03".repeat(32)), "relay.r3.address: 127.0.0.1:9002 is also relay `r2`'s address"),
    ] {
        let e = Directory::parse(text, "d.toml").unwrap_err();
        assert!(e.to_string().starts_with(&format!("d.toml: {want}")), "got {e}");
    }
}

#[test]
fn directory_path_fields_are_read_and_written() {
    let text = format!(
        "{DIR}\n[[relay]]\nname = \"r3\"\naddress = \"127.0.0.1:9003\"\nkey = \"{}\"\nflags = [\"exit\"]\n\
         bandwidth = 5000\nfamily = \"ops\"\nexit_policy = [\"accept *:80\", \"accept 10.0.0.0/8:*\", \"reject *:*\"]\n",
        "03".repeat(32)
    );
    let d = Directory::parse(&text, "dir.toml").unwrap();
    let (r1, r3) = (&d.relays[0], &d.relays[2]);
    assert_eq!(r1.bandwidth, DEFAULT_BANDWIDTH);
    assert_eq!(r1.family, None);
    assert_eq!(r1.exit_policy, ExitPolicy::default());
    assert_eq!(r3.bandwidth, 5000);
    assert_eq!(r3.family.as_deref(), Some("ops"));
    // The directory's rules decide alone: no built-in private rejection.
    let p = &r3.exit_policy;
    assert!(!p.reject_private);
    assert!(p.allows("10.1.2.3".parse().unwrap(), 25));
    assert!(p.allows("192.0.2.1".parse().unwrap(), 80));
    assert!(!p.allows("192.0.2.1".parse().unwrap(), 25));
    assert_eq!(Directory::parse(&d.to_toml(), "x").unwrap(), d);
    // A policy with reject_private and a reject default is written as rules.
    let mut d2 = d.clone();
    d2.relays[2].exit_policy = ExitPolicy {
        reject_private: true,
        rules: vec![Rule::parse("accept *:443").unwrap()],
        default: Verdict::Reject,
    };
    let back = Directory::parse(&d2.to_toml(), "x").unwrap();
    let p = &back.relays[2].exit_policy;
    for (ip, port) in [("127.0.0.1", 443), ("192.0.2.1", 443), ("192.0.2.1", 80)] {
        let ip: IpAddr = ip.parse().unwrap();
        assert_eq!(p.check(ip, port), d2.relays[2].exit_policy.check(ip, port));
    }
    // An empty list accepts everything.
    let open = text.replace(
        "exit_policy = [\"accept *:80\", \"accept 10.0.0.0/8:*\", \"reject *:*\"]",
        "exit_policy = []",
    );
    let d = Directory::parse(&open, "dir.toml").unwrap();
    assert!(d.relays[2]
        .exit_policy
        .allows("127.0.0.1".parse().unwrap(), 25));
}

#[test]
fn bad_directory_path_fields() {
    let r3 = |extra: &str, flags: &str| {
        format!(
            "{DIR}\n[[relay]]\nname = \"r3\"\naddress = \"127.0.0.1:9003\"\nkey = \"{}\"\nflags = [{flags}]\n{extra}",
            "03".repeat(32)
        )
    };
    for (text, want) in [
        (r3("bandwidth = 0\n", ""), "relay.r3.bandwidth: must be 1 to 100000000, got 0"),
        (r3("bandwidth = \"10MB/s\"\n", ""), "relay.r3.bandwidth: expected a whole number"),
        (r3("family = \" \"\n", ""), "relay.r3.family: is empty"),
        (r3("exit_policy = [\"accept *:80\"]\n", ""), "relay.r3.exit_policy: relay `r3` has no \"exit\" flag, so no path ends there and its exit policy is never read"),
        (r3("exit_policy = [\"accept *:80\", \"allow *:25\"]\n", "\"exit\""), "relay.r3.exit_policy[1]: `allow *:25`: unknown verb `allow`"),
        (r3("exit_policy = [\"reject *:*\", \"accept *:80\"]\n", "\"exit\""), "relay.r3.exit_policy[1]: `accept *:80` can never match: relay.r3.exit_policy[0] `reject *:*` matches every address and port first"),
        (r3("exit_policy = \"accept *:80\"\n", "\"exit\""), "relay.r3.exit_policy: expected"),
    ] {
        let e = Directory::parse(&text, "d.toml").unwrap_err();
        assert!(e.to_string().starts_with(&format!("d.toml: {want}")), "got {e}");
    }
}

#[test]
fn proxy_path_selection_keys() {
    with_dir(|base| {
        let c = ProxyConfig::parse(
            &format!("directory = \"dir.toml\"\nauthority = \"{AUTHORITY}\"\n"),
            "proxy.toml",
            base,
        )
        .unwrap();
        assert!(c.path_subnet_rule);
        assert_eq!(c.state_file, None);
        let c = ProxyConfig::parse(
            &format!("directory = \"dir.toml\"\nauthority = \"{AUTHORITY}\"\npath_subnet_rule = false\nstate_file = \"state/guard.toml\"\n"),
            "proxy.toml",
            base,
        )
        .unwrap();
        assert!(!c.path_subnet_rule);
        assert_eq!(c.state_file, Some(base.join("state/guard.toml")));
        for (extra, want) in [
            (
                "path_subnet_rule = \"no\"\n",
                "proxy.toml: path_subnet_rule: expected true or false",
            ),
            (
                "state_file = \"\"\n",
                "proxy.toml: state_file: is empty; name a file",
            ),
        ] {
            let e = ProxyConfig::parse(
                &format!("directory = \"dir.toml\"\nauthority = \"{AUTHORITY}\"\n{extra}"),
                "proxy.toml",
                base,
            )
            .unwrap_err();
            assert!(e.to_string().starts_with(want), "{extra:?}: {e}");
        }
    });
}

// ---------------------------------------------------------------------------
// The signed directory

/// What `Directory::parse_verified` says of `text` with the tests'
/// authority at `now` (seconds after 1970).
fn verify(text: &str, now: u64) -> Result<Directory, ConfigError> {
    let k = crate::authority::AuthorityKey::parse(AUTHORITY).unwrap();
    Directory::parse_verified(text, "dir.toml", &k, at(now))
}

#[test]
fn the_tests_authority_is_the_one_they_name() {
    assert_eq!(authority().public().to_hex(), AUTHORITY);
}

#[test]
fn a_signed_directory_verifies_within_its_validity_period() {
    let s = signed(DIR);
    let d = verify(&s, AFTER).unwrap();
    assert_eq!(d.relays, Directory::parse(DIR, "x").unwrap().relays);
    assert_eq!(d.header.valid_after, Some(at(AFTER)));
    assert_eq!(d.header.valid_until, Some(at(UNTIL)));
    assert!(d.header.signature.is_some());
    verify(&s, UNTIL - 1).unwrap();
    // Signing again replaces the table in place; the rest stays byte for byte.
    let again =
        crate::authority::sign_directory(&s, "dir.toml", &authority(), at(5), at(6)).unwrap();
    assert_eq!(
        again.replace("2033-05-18T03:33:20Z", "x"),
        again,
        "the old table is gone"
    );
    assert!(again.ends_with(DIR), "{again}");
    assert_eq!(again.matches("[directory]").count(), 1);
    verify(&again, 5).unwrap();
    // Comments and the file's own layout are signed as they are.
    let commented = signed(&format!("# the lab's relays\n{DIR}# end\n"));
    assert!(
        commented.starts_with("# the lab's relays\n\n[directory]\n"),
        "{commented}"
    );
    verify(&commented, AFTER).unwrap();
}

#[test]
fn unsigned_forged_and_stale_directories_are_refused() {
    let s = signed(DIR);
    let msg = |r: Result<Directory, ConfigError>| r.unwrap_err().to_string();
    // Unsigned.
    let e = msg(verify(DIR, AFTER));
    assert!(
        e.starts_with("dir.toml: directory: the directory is not signed (no [directory] signature); sign it: hopwise directory sign --key AUTHORITY_KEY_FILE --valid-for 7d dir.toml"),
        "{e}"
    );
    // Signed by another key.
    let other = crate::authority::AuthoritySecret::from_seed(&[8; 32]);
    let by_other =
        crate::authority::sign_directory(DIR, "dir.toml", &other, at(AFTER), at(UNTIL)).unwrap();
    let e = msg(verify(&by_other, AFTER));
    assert!(
        e.starts_with(&format!("dir.toml: directory.signature: does not verify with the authority key {AUTHORITY}: the file was changed after it was signed, or another authority signed it")),
        "{e}"
    );
    // Changed after signing: a relay's address, a byte of the validity
    // period, a comment, a byte of the signature.
    for (from, to) in [
        ("127.0.0.1:9002", "127.0.0.1:9003"),
        ("valid_until = \"2033", "valid_until = \"2034"),
        (
            "[[relay]]\nname = \"r2\"",
            "# a comment\n[[relay]]\nname = \"r2\"",
        ),
    ] {
        let changed = s.replacen(from, to, 1);
        assert_ne!(changed, s);
        let e = msg(verify(&changed, AFTER));
        assert!(
            e.contains("directory.signature: does not verify"),
            "{from}: {e}"
        );
    }
    let i = s.find("signature = \"").unwrap() + 13;
    let mut flipped = s.clone().into_bytes();
    flipped[i] = if flipped[i] == b'0' { b'1' } else { b'0' };
    let e = msg(verify(&String::from_utf8(flipped).unwrap(), AFTER));
    assert!(e.contains("directory.signature: does not verify"), "{e}");
    // Not yet valid, expired.
    let e = msg(verify(&s, AFTER - 1));
    assert_eq!(
        e,
        "dir.toml: directory.valid_after: the directory is not valid yet: it is valid from 2001-09-09T01:46:40Z and it is now 2001-09-09T01:46:39Z (is this machine's clock right?)"
    );
    let e = msg(verify(&s, UNTIL));
    assert_eq!(
        e,
        "dir.toml: directory.valid_until: the directory expired at 2033-05-18T03:33:20Z (it is now 2033-05-18T03:33:20Z); the authority signs it again: hopwise directory sign --key AUTHORITY_KEY_FILE --valid-for 7d dir.toml"
    );
    // The signature line moved, doubled, or not on a line of its own.
    let line = s.lines().find(|l| l.starts_with("signature = ")).unwrap();
    let moved = s.replace(&format!("{line}\n"), "").replace(
        "[[relay]]\nname = \"r1\"",
        &format!("[[relay]]\n{line}\nname = \"r1\""),
    );
    let e = msg(verify(&moved, AFTER));
    assert!(
        e.contains("relay.r1.signature: unknown key"),
        "{moved}\n{e}"
    );
    let e = msg(verify(&format!("{s}{line}\n"), AFTER));
    assert!(e.contains("relay.r2.signature: unknown key"), "{e}");
    let e = msg(verify(&s.replace("signature = ", "signature =  "), AFTER));
    assert!(
        e.contains("directory.signature: `signature =  \"")
            && e.contains("is not a signature: the line must be"),
        "{e}"
    );
    let inline = s.replace("signature = ", "signature=");
    let e = msg(verify(&inline, AFTER));
    assert!(
        e.contains("directory.signature: must be a line of its own"),
        "{e}"
    );
    // A signature without a validity period.
    let no_period: String = s
        .lines()
        .filter(|l| !l.starts_with("valid_"))
        .map(|l| format!("{l}\n"))
        .collect();
    let e = msg(verify(&no_period, AFTER));
    assert!(e.contains("directory.signature: does not verify"), "{e}");
}

#[test]
fn configs_need_the_authority_that_signed_their_directory() {
    with_dir(|base| {
        let top = "name = \"r1\"\nlisten = \"127.0.0.1:9001\"\nkey_file = \"r1.key\"\ndirectory = \"dir.toml\"\n";
        let relay = |extra: &str, now: u64| {
            RelayConfig::parse_at(&format!("{top}{extra}"), "relay.toml", base, at(now))
        };
        relay(&format!("authority = \"{AUTHORITY}\"\n"), AFTER).unwrap();
        let e = relay("", AFTER).unwrap_err().to_string();
        assert!(e.starts_with("relay.toml: authority: missing required key (the directory authority's Ed25519 public key"), "{e}");
        let e = relay("authority = \"ab\"\n", AFTER)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("relay.toml: authority: `ab` is not an Ed25519 public key"),
            "{e}"
        );
        let other = crate::authority::AuthoritySecret::from_seed(&[8; 32]).public();
        let e = relay(&format!("authority = \"{other}\"\n"), AFTER)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("relay.toml: authority: the directory {} is not signed by this key: its signature does not verify", base.join("dir.toml").display())),
            "{e}"
        );
        let e = relay(&format!("authority = \"{AUTHORITY}\"\n"), UNTIL + 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "{}: directory.valid_until: the directory expired",
                base.join("dir.toml").display()
            )),
            "{e}"
        );
        let proxy = |extra: &str| {
            ProxyConfig::parse_at(
                &format!("directory = \"dir.toml\"\n{extra}"),
                "proxy.toml",
                base,
                at(AFTER),
            )
        };
        proxy(&format!("authority = \"{AUTHORITY}\"\n")).unwrap();
        let e = proxy(&format!("authority = \"{other}\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("proxy.toml: authority: the directory "),
            "{e}"
        );
        std::fs::write(base.join("dir.toml"), DIR).unwrap();
        let e = proxy(&format!("authority = \"{AUTHORITY}\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("dir.toml: directory: the directory is not signed"),
            "{e}"
        );
    });
}

#[test]
fn signing_refuses_what_it_cannot_rewrite() {
    let k = authority();
    let sign = |t: &str| crate::authority::sign_directory(t, "dir.toml", &k, at(AFTER), at(UNTIL));
    // Not a directory: the parser's error.
    let e = sign("[[relay]]\nname = \"a\"\n").unwrap_err().to_string();
    assert!(
        e.starts_with("dir.toml: relay.a.address: missing required key"),
        "{e}"
    );
    // A [directory] written as dotted keys is not a table of its own.
    let dotted = format!("directory.valid_after = \"2020-01-01T00:00:00Z\"\n{DIR}");
    let e = sign(&dotted).unwrap_err().to_string();
    assert!(e.contains("cannot be rewritten in place"), "{e}");
    // An empty period.
    let e = crate::authority::sign_directory(DIR, "dir.toml", &k, at(5), at(5))
        .unwrap_err()
        .to_string();
    assert!(e.contains("the validity period is empty"), "{e}");
    // Without a trailing newline, CRLF line ends.
    verify(&sign(DIR.trim_end()).unwrap(), AFTER).unwrap();
    verify(&sign(&DIR.replace('\n', "\r\n")).unwrap(), AFTER).unwrap();
}
