//! The directory authority: an Ed25519 key (ed25519-dalek) that signs the
//! directory file, and the signed envelope around the directory's TOML.
//!
//! A signed directory has a `[directory]` table:
//!
//! ```toml
//! [directory]
//! valid_after = "2026-11-29T06:00:00Z"
//! valid_until = "2026-12-06T06:00:00Z"
//! signature = "<128 hex digits>"
//! ```
//!
//! The signature is Ed25519 over the bytes `hopwise directory v1\n`
//! ([`CONTEXT`]) followed by the file's bytes with the one line that starts
//! with `signature = ` removed (the line and its `\n`). Everything else, the
//! validity period and comments included, is signed as it is, byte for
//! byte. A file with more than one such line is refused, and the line must
//! be the `signature` key of the `[directory]` table, so the signature line
//! cannot be moved to change what the rest of the file means.
//!
//! Relays and proxies hold the authority's public key (their `authority`
//! key) and refuse a directory that is unsigned, signed by another key,
//! changed after signing, not yet valid or expired
//! ([`Directory::parse_verified`]). `docs/relay.md` describes the commands
//! `hopwise authority keygen` and `hopwise directory sign`.

use crate::config::{ConfigError, Directory};
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use hopwise_proto::link::{hex, parse_key};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What the signature covers first: the format's name and version, so that
/// a signature over a directory can never be taken for one over anything
/// else the key might sign.
pub const CONTEXT: &[u8] = b"hopwise directory v1\n";

/// How the signature line starts (at the start of a line).
pub const SIGNATURE_LINE: &str = "signature = ";

/// An authority's public key, as relays and proxies hold it (the `authority`
/// key of their config files).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuthorityKey(VerifyingKey);

impl AuthorityKey {
    /// 64 hex digits; a weak (small-order) key is refused.
    pub fn parse(s: &str) -> Result<AuthorityKey, String> {
        let bytes = parse_key(s).ok_or_else(|| {
            format!("`{s}` is not an Ed25519 public key (64 hex digits, as `hopwise authority keygen` prints)")
        })?;
        let k = VerifyingKey::from_bytes(&bytes).map_err(|_| {
            format!("`{s}` is not an Ed25519 public key (not a point of the curve)")
        })?;
        if k.is_weak() {
            return Err(format!(
                "`{s}` is a weak Ed25519 key (a point of small order), which anybody could sign for"
            ));
        }
        Ok(AuthorityKey(k))
    }

    pub fn to_bytes(&self) -> [u8; 32] {
        self.0.to_bytes()
    }

    pub fn to_hex(&self) -> String {
        hex(&self.0.to_bytes())
    }

    /// Whether `signature` is this key's over `message` (RFC 8032 with
    /// ed25519-dalek's strict checks: no malleable or weak-key signatures).
    pub fn verifies(&self, message: &[u8], signature: &[u8; 64]) -> bool {
        let sig = ed25519_dalek::Signature::from_bytes(signature);
        self.0.verify_strict(message, &sig).is_ok()
    }
}

impl std::fmt::Display for AuthorityKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// An authority's secret key.
pub struct AuthoritySecret(SigningKey);

impl AuthoritySecret {
    /// The key of a 32-byte secret seed (RFC 8032 §5.1.5).
    pub fn from_seed(seed: &[u8; 32]) -> AuthoritySecret {
        AuthoritySecret(SigningKey::from_bytes(seed))
    }

    /// A new key from the operating system's random source.
    pub fn generate() -> Result<AuthoritySecret, String> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| format!("the OS random source failed: {e}"))?;
        let k = AuthoritySecret::from_seed(&seed);
        seed.fill(0);
        Ok(k)
    }

    pub fn public(&self) -> AuthorityKey {
        AuthorityKey(self.0.verifying_key())
    }

    fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.0.sign(message).to_bytes()
    }
}

impl std::fmt::Debug for AuthoritySecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AuthoritySecret(public {})", self.public())
    }
}

// ---------------------------------------------------------------------------
// Key files

/// Writes a new authority key to `path` (mode 0600); refuses to overwrite
/// a file that exists.
pub fn keygen(path: &Path) -> Result<AuthorityKey, ConfigError> {
    let key = AuthoritySecret::generate().map_err(|m| ConfigError::new(path.display(), "", m))?;
    write_secret(path, &key)?;
    Ok(key.public())
}

fn write_secret(path: &Path, key: &AuthoritySecret) -> Result<(), ConfigError> {
    let text = format!(
        "# hopwise directory authority key (Ed25519). Keep this file private: whoever\n\
         # has it can sign directories that the relays and proxies trust. The public key\n\
         # goes into their configs as `authority`.\n\
         private = \"{}\"\npublic = \"{}\"\n",
        hex(key.0.as_bytes()),
        key.public()
    );
    crate::keys::write_private(
        path,
        &text,
        "exists; not overwriting it (an authority key is replaced only on purpose: remove the file first)",
    )
}

/// Reads an authority key file; refuses one that other users can read.
pub fn load_secret(path: &Path) -> Result<AuthoritySecret, ConfigError> {
    let file = path.display().to_string();
    let e = |key: &str, m: String| ConfigError::new(&file, key, m);
    let meta =
        std::fs::metadata(path).map_err(|x| e("", format!("cannot read the key file: {x}")))?;
    if !meta.is_file() {
        return Err(e(
            "",
            "is not a regular file, so it cannot be a key file".into(),
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(e(
                "",
                format!(
                    "the key file is accessible by other users (mode {:o}); run `chmod 600 {file}`",
                    mode & 0o777
                ),
            ));
        }
    }
    let text = hopwise_config::read(path)?;
    let not_key = || {
        e(
            "",
            "not a hopwise authority key file (expected `private = \"<64 hex digits>\"`, as `hopwise authority keygen` writes)".into(),
        )
    };
    let t: toml::Table = text.parse().map_err(|_| not_key())?;
    let seed = match t.get("private") {
        Some(toml::Value::String(s)) => {
            parse_key(s).ok_or_else(|| e("private", "not a key (64 hex digits)".into()))?
        }
        _ => return Err(not_key()),
    };
    let key = AuthoritySecret::from_seed(&seed);
    if let Some(p) = t.get("public") {
        if p.as_str().and_then(parse_key) != Some(key.public().to_bytes()) {
            return Err(e(
                "public",
                "does not belong to the private key (the file is damaged)".into(),
            ));
        }
    }
    Ok(key)
}

/// The key at `path`, created if there is no file (the test bed's
/// authority).
pub fn load_or_create(path: &Path) -> Result<AuthoritySecret, ConfigError> {
    if path.exists() {
        return load_secret(path);
    }
    let key = AuthoritySecret::generate().map_err(|m| ConfigError::new(path.display(), "", m))?;
    write_secret(path, &key)?;
    Ok(key)
}

// ---------------------------------------------------------------------------
// Times

/// `t` as RFC 3339 in UTC, to the second (`2026-11-29T06:00:00Z`).
pub fn format_time(t: SystemTime) -> String {
    match t.duration_since(UNIX_EPOCH) {
        // humantime writes years up to 9999.
        Ok(d) if d.as_secs() < 253_402_300_800 => {
            humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(d.as_secs()))
                .to_string()
        }
        Ok(d) => format!("{} s after 1970", d.as_secs()),
        Err(e) => format!("{} s before 1970", e.duration().as_secs()),
    }
}

/// An RFC 3339 time in UTC (`2026-11-29T06:00:00Z`).
pub fn parse_time(s: &str) -> Result<SystemTime, String> {
    match humantime::parse_rfc3339(s) {
        Ok(t) => Ok(t),
        Err(e) => Err(format!(
            "`{s}` is not an RFC 3339 time in UTC such as \"2026-11-29T06:00:00Z\" ({e})"
        )),
    }
}

// ---------------------------------------------------------------------------
// The envelope

/// The signed message of a directory file's `text` (see the module doc)
/// and the signature of its signature line, if it has one.
pub fn signed_message(text: &str) -> Result<(Vec<u8>, Option<[u8; 64]>), String> {
    let mut message = CONTEXT.to_vec();
    let mut signature = None;
    let mut lines = 0;
    for line in text.split_inclusive('\n') {
        let Some(value) = line.strip_prefix(SIGNATURE_LINE) else {
            message.extend_from_slice(line.as_bytes());
            continue;
        };
        lines += 1;
        if lines > 1 {
            return Err(format!(
                "more than one line starts with `{SIGNATURE_LINE}`; a signed directory has one"
            ));
        }
        let value = value.trim_end_matches(['\n', '\r']);
        let sig = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            // Lowercase only: one way to write a signature.
            .filter(|v| v.len() == 128 && v.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')))
            .and_then(parse_signature);
        match sig {
            Some(s) => signature = Some(s),
            None => {
                return Err(format!(
                    "`{}` is not a signature: the line must be `signature = \"<128 lowercase hex digits>\"` \
                     as `hopwise directory sign` writes it",
                    line.trim_end()
                ))
            }
        }
    }
    Ok((message, signature))
}

fn parse_signature(s: &str) -> Option<[u8; 64]> {
    let (a, b) = s.split_at_checked(64)?;
    let mut out = [0u8; 64];
    out[..32].copy_from_slice(&parse_key(a)?);
    out[32..].copy_from_slice(&parse_key(b)?);
    Some(out)
}

fn is_table_header(line: &str) -> bool {
    line.trim_start().starts_with('[')
}

fn is_directory_header(line: &str) -> bool {
    let l = line.trim();
    let l = l.split('#').next().unwrap_or("").trim();
    l.strip_prefix('[')
        .and_then(|l| l.strip_suffix(']'))
        .is_some_and(|name| name.trim() == "directory")
}

/// `text` (a directory file named `file`) with its `[directory]` table set
/// to `valid_after`, `valid_until` and a signature by `key`: the table
/// replaces the file's own `[directory]` table where it was, or goes before
/// the first table. Everything else stays as it was. The result is checked
/// as relays and proxies check it.
pub fn sign_directory(
    text: &str,
    file: &str,
    key: &AuthoritySecret,
    valid_after: SystemTime,
    valid_until: SystemTime,
) -> Result<String, ConfigError> {
    let e = |key: &str, m: String| ConfigError::new(file, key, m);
    let before = Directory::parse(text, file)?;
    if valid_until <= valid_after {
        return Err(e(
            "directory.valid_until",
            "the validity period is empty".into(),
        ));
    }
    // Drop the old table: its header line up to the next table header.
    let mut kept: Vec<&str> = Vec::new();
    let mut at = None;
    let mut in_table = false;
    for line in text.split_inclusive('\n') {
        if is_directory_header(line) {
            at.get_or_insert(kept.len());
            in_table = true;
            continue;
        }
        if in_table && is_table_header(line) {
            in_table = false;
        }
        if !in_table {
            kept.push(line);
        }
    }
    let at = at.unwrap_or_else(|| {
        kept.iter()
            .position(|l| is_table_header(l))
            .unwrap_or(kept.len())
    });
    let head: String = kept[..at].concat();
    let tail: String = kept[at..].concat();
    let sep = if !head.is_empty() && !head.ends_with('\n') {
        "\n"
    } else {
        ""
    };
    let gap = if tail.is_empty() || tail.starts_with('\n') || tail.starts_with("\r\n") {
        ""
    } else {
        "\n"
    };
    let table = format!(
        "[directory]\nvalid_after = \"{}\"\nvalid_until = \"{}\"\n",
        format_time(valid_after),
        format_time(valid_until)
    );
    let unsigned = format!("{head}{sep}{table}{gap}{tail}");
    let (message, old) = signed_message(&unsigned).map_err(|m| e("directory.signature", m))?;
    if old.is_some() {
        return Err(e(
            "directory.signature",
            format!("a line starting with `{SIGNATURE_LINE}` is outside the [directory] table"),
        ));
    }
    let sig = key.sign(&message);
    let signed = format!(
        "{head}{sep}{table}{SIGNATURE_LINE}\"{}{}\"\n{gap}{tail}",
        hex(sig[..32].try_into().expect("32 bytes")),
        hex(sig[32..].try_into().expect("32 bytes"))
    );
    // The file must mean what it meant, now signed and valid.
    let after =
        Directory::parse_verified(&signed, file, &key.public(), valid_after).map_err(|x| {
            e(
                "directory",
                format!(
                    "the [directory] table cannot be rewritten in place ({}: {}); \
                     write it as a table of its own (`[directory]` on a line) or remove it",
                    x.key, x.message
                ),
            )
        })?;
    if after.relays != before.relays {
        return Err(e(
            "directory",
            "rewriting the [directory] table would change the relays; write it as a table of its own (`[directory]` on a line) or remove it".into(),
        ));
    }
    Ok(signed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_to_the_second() {
        let t = parse_time("2026-11-29T06:00:00Z").unwrap();
        assert_eq!(format_time(t), "2026-11-29T06:00:00Z");
        assert!(parse_time("2026-11-29 06:00").is_err());
        assert_eq!(
            format_time(UNIX_EPOCH - Duration::from_secs(5)),
            "5 s before 1970"
        );
        assert!(format_time(UNIX_EPOCH + Duration::from_secs(u64::MAX / 4)).ends_with("after 1970"));
    }

    #[test]
    fn envelope_removes_only_the_signature_line() {
        let sig = "ab".repeat(64);
        let text = format!("# c\n[directory]\n{SIGNATURE_LINE}\"{sig}\"\n[[relay]]\n");
        let (m, s) = signed_message(&text).unwrap();
        assert_eq!(m, [CONTEXT, b"# c\n[directory]\n[[relay]]\n"].concat());
        assert_eq!(s, Some([0xab; 64]));
        // The last line without a newline.
        let (m, s) = signed_message(&format!("x\n{SIGNATURE_LINE}\"{sig}\"")).unwrap();
        assert_eq!(m, [CONTEXT, b"x\n"].concat());
        assert!(s.is_some());
        let twice = format!("{SIGNATURE_LINE}\"{sig}\"\n{SIGNATURE_LINE}\"{sig}\"\n");
        assert!(signed_message(&twice)
            .unwrap_err()
            .contains("more than one"));
        let short = format!("{SIGNATURE_LINE}\"{}\"\n", "ab".repeat(63));
        assert!(signed_message(&short)
            .unwrap_err()
            .contains("is not a signature"));
        assert_eq!(signed_message("a\n").unwrap().1, None);
    }

    #[test]
    fn authority_keys_parse_and_weak_ones_are_refused() {
        let k = AuthoritySecret::from_seed(&[7; 32]).public();
        assert_eq!(AuthorityKey::parse(&k.to_hex()), Ok(k));
        assert!(AuthorityKey::parse("00").is_err());
        // The identity point (small order).
        let weak = format!("01{}", "0".repeat(62));
        assert!(AuthorityKey::parse(&weak).unwrap_err().contains("weak"));
    }

    #[test]
    fn key_files_are_private_and_never_overwritten() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/authority.key");
        let public = keygen(&p).unwrap();
        assert_eq!(load_secret(&p).unwrap().public(), public);
        assert_eq!(load_or_create(&p).unwrap().public(), public);
        let e = keygen(&p).unwrap_err().to_string();
        assert!(e.contains("exists; not overwriting it"), "{e}");
        assert_eq!(load_secret(&p).unwrap().public(), public);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
            let e = load_secret(&p).unwrap_err().to_string();
            assert!(e.contains("accessible by other users (mode 644)"), "{e}");
        }
        let q = d.path().join("junk.key");
        std::fs::write(&q, "hello").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&q, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let e = load_secret(&q).unwrap_err().to_string();
        assert!(e.contains("not a hopwise authority key file"), "{e}");
    }
}
