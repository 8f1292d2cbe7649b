//! The relay's long-term static key: generated on first start, stored with
//! mode 0600, refused if other users can read it.
//!
//! ```text
//! # hopwise static key (X25519). Keep this file private.
//! private = "64 hex digits"
//! public = "64 hex digits"
//! ```

use crate::config::ConfigError;
use hopwise_proto::link::{hex, parse_key, Keypair};
use std::io::Write;
use std::path::Path;

/// The operating system's random source, for the ephemeral keys of the
/// circuit handshakes (the sans-IO node takes its keys from outside).
pub struct OsKeys;

impl hopwise_proto::circuit::onion::KeySource for OsKeys {
    fn fill_bytes(&mut self, out: &mut [u8]) {
        // Without a random source no key can be made safely: stop.
        getrandom::fill(out).expect("the operating system's random source failed");
    }
}

/// Loads the key at `path`, or creates it (and its directory) if there is
/// no file. `origin` names the config file and key for messages.
pub fn load_or_create(path: &Path) -> Result<Keypair, ConfigError> {
    match load_existing(path)? {
        Some(kp) => Ok(kp),
        None => create(path),
    }
}

/// Loads the key at `path` with the checks of [`load_or_create`], or
/// `None` if there is no file (nothing is created).
pub fn load_existing(path: &Path) -> Result<Option<Keypair>, ConfigError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(ConfigError::new(
            path.display(),
            "",
            "is a directory, not a key file (key_file names the file itself, e.g. relay1.key)",
        )),
        // A FIFO or a device would block or feed the reader forever.
        Ok(m) if !m.is_file() => Err(ConfigError::new(
            path.display(),
            "",
            "is not a regular file, so it cannot be a key file",
        )),
        Ok(_) => load(path).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConfigError::new(
            path.display(),
            "",
            format!("cannot read the key file: {e}"),
        )),
    }
}

fn create(path: &Path) -> Result<Keypair, ConfigError> {
    let kp = Keypair::generate();
    let text = format!(
        "# hopwise static key (X25519). Keep this file private: whoever has it can\n\
         # impersonate this node. The public key goes into the directory.\n\
         private = \"{}\"\npublic = \"{}\"\n",
        hex(&kp.private),
        hex(&kp.public)
    );
    write_private(path, &text, "exists")?;
    tracing::info!(path = %path.display(), public = %hex(&kp.public), "generated a new static key");
    Ok(kp)
}

/// Writes `text` to a new file at `path` with mode 0600 (and creates its
/// directory); never overwrites: a file already there is an error ending
/// in `on_exists`.
pub(crate) fn write_private(path: &Path, text: &str, on_exists: &str) -> Result<(), ConfigError> {
    let err = |e: std::io::Error| {
        let why = if e.kind() == std::io::ErrorKind::AlreadyExists {
            on_exists.to_string()
        } else {
            format!("cannot create the key file: {e}")
        };
        ConfigError::new(path.display(), "", why)
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path).map_err(err)?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(err)
}

fn load(path: &Path) -> Result<Keypair, ConfigError> {
    let file = path.display().to_string();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map_err(|e| ConfigError::new(&file, "", format!("cannot read the key file: {e}")))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(ConfigError::new(
                &file,
                "",
                format!(
                    "the key file is accessible by other users (mode {:o}); run `chmod 600 {file}`",
                    mode & 0o777
                ),
            ));
        }
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::new(&file, "", format!("cannot read the key file: {e}")))?;
    let t: toml::Table = text.parse().map_err(|_| {
        ConfigError::new(
            &file,
            "",
            "not a hopwise key file (expected `private = \"<64 hex digits>\"`)",
        )
    })?;
    let private = match t.get("private") {
        Some(toml::Value::String(s)) => parse_key(s)
            .ok_or_else(|| ConfigError::new(&file, "private", "not a key (64 hex digits)"))?,
        _ => {
            return Err(ConfigError::new(
                &file,
                "private",
                "missing: not a hopwise key file",
            ))
        }
    };
    let kp = Keypair::from_private(private);
    if let Some(toml::Value::String(s)) = t.get("public") {
        if parse_key(s) != Some(kp.public) {
            return Err(ConfigError::new(
                &file,
                "public",
                "does not belong to the private key (the file is damaged)",
            ));
        }
    }
    Ok(kp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_private_and_reloaded() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/relay.key");
        let k = load_or_create(&p).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(load_or_create(&p).unwrap(), k);
    }

    #[test]
    fn a_directory_is_not_a_key_file() {
        let d = tempfile::tempdir().unwrap();
        // Mode 755: the permission check must not be what answers.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let e = load_or_create(d.path()).unwrap_err();
        assert_eq!(e.file, d.path().display().to_string());
        assert!(
            e.message.starts_with("is a directory, not a key file"),
            "{e}"
        );
        assert!(!e.message.contains("chmod"), "{e}");
        // A device, which would feed the reader forever, is refused too.
        #[cfg(unix)]
        {
            let e = load_or_create(Path::new("/dev/zero")).unwrap_err();
            assert!(e.message.contains("not a regular file"), "{e}");
        }
    }

    #[test]
    fn bad_key_files_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("k");
        let write = |s: &str, mode: u32| {
            std::fs::write(&p, s).unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            }
        };
        write("garbage garbage", 0o600);
        assert!(load_or_create(&p)
            .unwrap_err()
            .message
            .contains("not a hopwise key file"));
        write("private = \"1234\"\n", 0o600);
        assert!(load_or_create(&p)
            .unwrap_err()
            .message
            .contains("64 hex digits"));
        let k = Keypair::generate();
        write(&format!("private = \"{}\"\n", hex(&k.private)), 0o644);
        #[cfg(unix)]
        assert!(load_or_create(&p)
            .unwrap_err()
            .message
            .contains("chmod 600"));
        write(
            &format!(
                "private = \"{}\"\npublic = \"{}\"\n",
                hex(&k.private),
                hex(&[7; 32])
            ),
            0o600,
        );
        assert!(load_or_create(&p)
            .unwrap_err()
            .message
            .contains("does not belong"));
    }
}
