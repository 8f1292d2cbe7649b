//! Any text as a directory file: the parser, the signed envelope and the
//! verification never panic; whatever parses can be signed, and what is
//! signed verifies (and stops verifying when a byte of it changes).
#![no_main]

use hopwise_net::authority::{self, AuthoritySecret};
use hopwise_net::config::Directory;
use libfuzzer_sys::fuzz_target;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let key = AuthoritySecret::from_seed(&[7; 32]);
    let public = key.public();
    let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let _ = authority::signed_message(text);
    let _ = Directory::parse_verified(text, "dir.toml", &public, now);
    let Ok(dir) = Directory::parse(text, "dir.toml") else {
        return;
    };
    let until: SystemTime = now + Duration::from_secs(86_400);
    // Signing may refuse a [directory] it cannot rewrite, never panic.
    if let Ok(signed) = authority::sign_directory(text, "dir.toml", &key, now, until) {
        let v = Directory::parse_verified(&signed, "dir.toml", &public, now)
            .expect("a directory just signed verifies");
        assert_eq!(v.relays, dir.relays);
        let i = data.len() % signed.len().max(1);
        if signed.as_bytes()[i].is_ascii() {
            let mut changed = signed.clone().into_bytes();
            changed[i] ^= 1;
            let changed = String::from_utf8(changed).expect("ASCII stays ASCII");
            assert!(Directory::parse_verified(&changed, "dir.toml", &public, now).is_err());
        }
    }
});
