//! Starting with a broken setup fails with a message that names the file,
//! the key and the problem, never with a panic.

use hopwise_net::config::{ProxyConfig, RelayConfig};
use hopwise_net::testbed::{write_lab, LabOptions};
use hopwise_net::{spawn_proxy, spawn_relay};

#[test]
fn bad_key_file_port_in_use_and_unknown_relay() {
    let d = tempfile::tempdir().unwrap();
    let files = write_lab(&LabOptions::new(d.path())).unwrap();

    // A damaged key file.
    let key = d.path().join("relay1.key");
    std::fs::write(&key, "private = \"not a key\"\n").unwrap();
    let e = spawn_relay(RelayConfig::load(&files.relays[0]).unwrap()).unwrap_err();
    assert!(
        e.0.contains("relay1.key") && e.0.contains("private") && e.0.contains("64 hex digits"),
        "{e}"
    );

    // A key file others can read.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let k2 = d.path().join("relay2.key");
        std::fs::set_permissions(&k2, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = spawn_relay(RelayConfig::load(&files.relays[1]).unwrap()).unwrap_err();
        assert!(
            e.0.contains("relay2.key") && e.0.contains("chmod 600"),
            "{e}"
        );
    }

    // The UDP port is taken.
    let cfg = RelayConfig::load(&files.relays[2]).unwrap();
    let _squatter = std::net::UdpSocket::bind(cfg.listen).unwrap();
    let e = spawn_relay(cfg).unwrap_err();
    assert!(
        e.0.contains("relay3.toml: listen: cannot bind UDP 127.0.0.1:") && e.0.contains("in use"),
        "{e}"
    );

    // The SOCKS port is taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut p = ProxyConfig::load(&files.proxy).unwrap();
    p.socks = taken.local_addr().unwrap();
    let e = spawn_proxy(p).unwrap_err();
    assert!(
        e.0.contains("proxy.toml: socks: cannot listen on TCP") && e.0.contains("in use"),
        "{e}"
    );

    // An unknown relay in the path.
    let text = std::fs::read_to_string(&files.proxy)
        .unwrap()
        .replace("\"relay2\"", "\"relay9\"");
    std::fs::write(&files.proxy, text).unwrap();
    let e = ProxyConfig::load(&files.proxy).unwrap_err();
    assert_eq!(e.key, "path[1]");
    assert!(
        e.to_string()
            .contains("proxy.toml: path[1]: unknown relay `relay9`"),
        "{e}"
    );
}

#[test]
fn the_directory_and_key_file_keys_name_their_problems() {
    let d = tempfile::tempdir().unwrap();
    let files = write_lab(&LabOptions::new(d.path())).unwrap();
    let relay = std::fs::read_to_string(&files.relays[0]).unwrap();
    let proxy = std::fs::read_to_string(&files.proxy).unwrap();
    let with = |text: &str, from: &str, to: &str| {
        assert!(text.contains(from), "{from} not in\n{text}");
        text.replace(from, to)
    };
    let dir = "directory = \"directory.toml\"";
    let relay_err = |text: String| {
        std::fs::write(&files.relays[0], text).unwrap();
        RelayConfig::load(&files.relays[0]).unwrap_err().to_string()
    };

    // A directory file that does not exist: the relay file's key says so.
    let e = relay_err(with(&relay, dir, "directory = \"nodir.toml\""));
    assert!(
        e.contains("relay1.toml: directory: ") && e.contains("nodir.toml: cannot read"),
        "{e}"
    );
    // A directory (of the file system), a device, and nothing at all.
    let e = relay_err(with(&relay, dir, "directory = \".\""));
    assert!(
        e.contains("relay1.toml: directory: ") && e.contains("is a directory, not a file"),
        "{e}"
    );
    #[cfg(unix)]
    {
        let e = relay_err(with(&relay, dir, "directory = \"/dev/zero\""));
        assert!(
            e.contains("relay1.toml: directory: /dev/zero: is not a regular file"),
            "{e}"
        );
    }
    let e = relay_err(with(&relay, dir, "directory = \"\""));
    assert!(
        e.contains("relay1.toml: directory: is empty; name a file"),
        "{e}"
    );
    // Another relay's config where the directory belongs: the message says
    // the file was read as a directory.
    let e = relay_err(with(&relay, dir, "directory = \"relay2.toml\""));
    assert_eq!(
        e,
        format!(
            "{}: directory: {} is not a directory file: unknown key `authority` (a directory has a [directory] table and [[relay]] tables)",
            files.relays[0].display(),
            files.relays[1].display()
        )
    );
    // An oversized file is refused before it is read.
    let big = d.path().join("big.toml");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(17 << 20).unwrap();
    let e = relay_err(with(&relay, dir, "directory = \"big.toml\""));
    assert!(e.contains("a configuration file is at most 16 MiB"), "{e}");

    let key = relay
        .lines()
        .find(|l| l.starts_with("key_file"))
        .expect("a key_file line")
        .to_string();
    let e = relay_err(with(&relay, &key, "key_file = \"\""));
    assert!(
        e.contains("relay1.toml: key_file: is empty; name a file"),
        "{e}"
    );

    // The proxy's keys alike.
    std::fs::write(
        &files.proxy,
        with(&proxy, dir, "directory = \"nodir.toml\""),
    )
    .unwrap();
    let e = ProxyConfig::load(&files.proxy).unwrap_err().to_string();
    assert!(
        e.contains("proxy.toml: directory: ") && e.contains("nodir.toml: cannot read"),
        "{e}"
    );
    std::fs::write(&files.proxy, format!("key_file = \"\"\n{proxy}")).unwrap();
    let e = ProxyConfig::load(&files.proxy).unwrap_err().to_string();
    assert!(
        e.contains("proxy.toml: key_file: is empty; name a file"),
        "{e}"
    );
}

/// The lab's directory is signed by its authority key, which its configs
/// name; a directory that is unsigned, signed by another authority,
/// changed, expired or not yet valid is refused with an error that names
/// the file (and `authority` where the key may be what is wrong).
#[test]
#[allow(clippy::disallowed_methods)] // signs directories valid around the wall clock's now, as loading checks
fn the_lab_directory_is_signed_and_checked() {
    use hopwise_net::authority::{self, AuthoritySecret};
    use std::time::{Duration, SystemTime};
    let d = tempfile::tempdir().unwrap();
    let files = write_lab(&LabOptions::new(d.path())).unwrap();
    let key = authority::load_secret(&d.path().join("authority.key")).unwrap();
    let relay = std::fs::read_to_string(&files.relays[0]).unwrap();
    assert!(
        relay.contains(&format!("authority = \"{}\"", key.public())),
        "{relay}"
    );
    let proxy = std::fs::read_to_string(&files.proxy).unwrap();
    assert!(
        proxy.contains(&format!("authority = \"{}\"", key.public())),
        "{proxy}"
    );
    RelayConfig::load(&files.relays[0]).unwrap();
    ProxyConfig::load(&files.proxy).unwrap();

    let signed = std::fs::read_to_string(&files.directory).unwrap();
    let dir = files.directory.display().to_string();
    let relay_err = |text: &str| {
        std::fs::write(&files.directory, text).unwrap();
        RelayConfig::load(&files.relays[0]).unwrap_err().to_string()
    };
    // Writing the lab again re-signs the directory with the same key.
    write_lab(&LabOptions::new(d.path())).unwrap();
    assert_eq!(
        authority::load_secret(&d.path().join("authority.key"))
            .unwrap()
            .public(),
        key.public()
    );
    // Changed after signing.
    let e = relay_err(&signed.replacen("127.0.0.1:", "127.0.0.2:", 1));
    assert!(
        e.starts_with(&format!(
            "{}: authority: the directory {dir} is not signed by this key",
            files.relays[0].display()
        )),
        "{e}"
    );
    // Signed by another authority.
    let other = AuthoritySecret::from_seed(&[9; 32]);
    let now = SystemTime::now();
    let day = Duration::from_secs(86_400);
    let e = relay_err(&authority::sign_directory(&signed, &dir, &other, now, now + day).unwrap());
    assert!(
        e.contains(": authority: the directory ") && e.contains("its signature does not verify"),
        "{e}"
    );
    // Unsigned.
    let unsigned: String = signed
        .lines()
        .filter(|l| !l.starts_with("signature = "))
        .map(|l| format!("{l}\n"))
        .collect();
    let e = relay_err(&unsigned);
    assert!(
        e.starts_with(&format!("{dir}: directory: the directory is not signed")),
        "{e}"
    );
    // Expired, and not yet valid.
    let e = relay_err(
        &authority::sign_directory(&signed, &dir, &key, now - 2 * day, now - day).unwrap(),
    );
    assert!(
        e.starts_with(&format!(
            "{dir}: directory.valid_until: the directory expired at "
        )),
        "{e}"
    );
    let e = relay_err(
        &authority::sign_directory(&signed, &dir, &key, now + day, now + 2 * day).unwrap(),
    );
    assert!(
        e.starts_with(&format!(
            "{dir}: directory.valid_after: the directory is not valid yet"
        )),
        "{e}"
    );
    // The proxy alike.
    std::fs::write(&files.directory, &unsigned).unwrap();
    let e = ProxyConfig::load(&files.proxy).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{dir}: directory: the directory is not signed")),
        "{e}"
    );
    let no_authority: String = proxy
        .lines()
        .filter(|l| !l.starts_with("authority"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&files.proxy, no_authority).unwrap();
    let e = ProxyConfig::load(&files.proxy).unwrap_err().to_string();
    assert!(
        e.contains("proxy.toml: authority: missing required key"),
        "{e}"
    );
}

/// The shared front-end's three kinds of mistake in a relay file: a unit,
/// an unknown key (with the key it resembles), and a value of the wrong
/// type. Each names the file, the key path and the problem.
#[test]
fn units_unknown_keys_and_types_name_file_key_and_problem() {
    let d = tempfile::tempdir().unwrap();
    let relay = &write_lab(&LabOptions::new(d.path())).unwrap().relays[0];
    // The top-level keys (name, listen, key_file, directory, ...).
    let top: String = std::fs::read_to_string(relay)
        .unwrap()
        .lines()
        .take_while(|l| !l.starts_with('['))
        .map(|l| format!("{l}\n"))
        .collect();
    let err = |extra: &str| {
        RelayConfig::parse(&format!("{top}{extra}"), "relay.toml", d.path()).unwrap_err()
    };

    let e = err("[bandwidth]\nrate = \"10 Mbti\"\n");
    assert_eq!(
        (e.file.as_str(), e.key.as_str()),
        ("relay.toml", "bandwidth.rate")
    );
    assert_eq!(
        e.to_string(),
        "relay.toml: bandwidth.rate: invalid rate: `10 Mbti`: unknown rate unit `Mbti` \
         (use bit/kbit/Mbit/Gbit, or kB/s, MB/s)"
    );

    let e = err("[link]\nkeepalve = \"5s\"\n");
    assert_eq!(e.key, "link.keepalve");
    assert_eq!(e.suggestion.as_deref(), Some("keepalive"));
    assert!(
        e.to_string().starts_with(
            "relay.toml: link.keepalve: unknown key; did you mean `keepalive`? (allowed here: "
        ),
        "{e}"
    );

    let e = err("[limits]\nmax_streams = \"many\"\n");
    assert_eq!(
        e.to_string(),
        "relay.toml: limits.max_streams: expected a whole number, got the string \"many\""
    );
    let e = err("accept_clients = 1\n");
    assert_eq!(
        e.to_string(),
        "relay.toml: accept_clients: expected true or false, got the integer 1"
    );
}

/// `[transport]`'s start-up and loss-response keys: the accepted names, and a
/// bad name or an out-of-range `loss_bound` named with file and key.
#[test]
fn transport_startup_and_loss_keys_name_their_problems() {
    let d = tempfile::tempdir().unwrap();
    let relay = &write_lab(&LabOptions::new(d.path())).unwrap().relays[0];
    let top: String = std::fs::read_to_string(relay)
        .unwrap()
        .lines()
        .take_while(|l| !l.starts_with('['))
        .map(|l| format!("{l}\n"))
        .collect();
    let parse = |extra: &str| RelayConfig::parse(&format!("{top}{extra}"), "relay.toml", d.path());

    let c = parse(
        "[transport]\nstartup = \"hystart\"\nloss_response = \"delay-qualified\"\nloss_bound = \"5%\"\n",
    )
    .unwrap();
    use hopwise_net::config::{LossResponse, Startup};
    assert_eq!(c.transport.startup, Startup::HyStart);
    assert_eq!(c.transport.loss_response, LossResponse::DelayQualified);
    assert_eq!(c.transport.loss_bound, 0.05);
    // The daemon's defaults: HyStart, the delay-qualified loss response, SACK
    // (docs/relay.md; the paper's linear start and delay-only window are
    // `startup = "linear"`, `loss_response = "none"`, `sack = false`).
    let c = parse("").unwrap();
    assert_eq!(
        (
            c.transport.startup,
            c.transport.loss_response,
            c.transport.sack
        ),
        (Startup::HyStart, LossResponse::DelayQualified, true)
    );

    let e = parse("[transport]\nloss_response = \"ignore\"\n").unwrap_err();
    assert_eq!(e.key, "transport.loss_response");
    assert!(
        e.to_string()
            .starts_with("relay.toml: transport.loss_response: ")
            && e.to_string().contains("delay-qualified"),
        "{e}"
    );
    let e = parse("[transport]\nstartup = \"hystart++\"\n").unwrap_err();
    assert_eq!(e.key, "transport.startup");
    assert!(e.to_string().contains("hystart"), "{e}");
    let e = parse("[transport]\nloss_bound = 1.5\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "relay.toml: transport.loss_bound: must be a fraction in (0, 1] (0.1 or \"10%\" is a tenth), got 1.5"
    );
    let e = parse("[transport]\nloss_bound = \"ten\"\n").unwrap_err();
    assert_eq!(e.key, "transport.loss_bound");
    assert!(e.to_string().contains("\"10%\""), "{e}");
}
