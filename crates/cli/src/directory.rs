//! `hopwise authority keygen` and `hopwise directory sign`: the directory
//! authority's key and the signed directory (docs/relay.md, "The
//! directory"), thin wrappers around `hopwise_net::authority`.

use anyhow::{anyhow, bail, Context, Result};
use clap::Subcommand;
use hopwise_net::authority;
use hopwise_proto::units::parse_duration;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

#[derive(Subcommand)]
pub enum AuthorityCmd {
    /// Write a new authority key (Ed25519) to FILE (mode 0600; never overwrites) and print its public key.
    Keygen {
        /// The secret key file to create.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
}

#[derive(Subcommand)]
pub enum DirectoryCmd {
    /// Sign a directory file: set its [directory] table (valid_after = now, valid_until, signature).
    Sign {
        /// The authority's secret key file (`hopwise authority keygen`).
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// How long the directory is valid: days (`7`, `7d`) or a duration (`12h`, `90min`).
        #[arg(long, value_name = "DAYS|DURATION", value_parser = parse_valid_for)]
        valid_for: Duration,
        /// Write the signed directory here instead of rewriting DIRECTORY_FILE in place.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// The directory file.
        directory_file: PathBuf,
    },
}

/// The longest `--valid-for`: ten years.
const MAX_VALIDITY: Duration = Duration::from_secs(3650 * 86_400);

/// `--valid-for`: a number of days (`7`, `7d`, `1.5d`) or a duration with
/// a unit (`12h`), from one minute to ten years.
pub fn parse_valid_for(s: &str) -> Result<Duration, String> {
    let days = s.strip_suffix('d').unwrap_or(s).trim();
    let d = match days.parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 && n <= 3650.0 => Duration::from_secs_f64(n * 86_400.0),
        Ok(_) => return Err(format!("`{s}`: must be more than 0 and at most 3650 days")),
        Err(_) => parse_duration(s)
            .map(|d| Duration::from_nanos(d.as_nanos()))
            .map_err(|e| format!("{e} (or a number of days, e.g. 7 or 7d)"))?,
    };
    if d < Duration::from_secs(60) || d > MAX_VALIDITY {
        return Err(format!("`{s}`: must be one minute to 3650 days"));
    }
    Ok(d)
}

pub fn authority(cmd: AuthorityCmd) -> Result<()> {
    match cmd {
        AuthorityCmd::Keygen { out } => {
            let public = authority::keygen(&out)?;
            eprintln!(
                "wrote the authority's secret key to {} (keep it private); its public key goes into \
                 every relay and proxy config as `authority = \"{public}\"`",
                out.display()
            );
            println!("{public}");
            Ok(())
        }
    }
}

pub fn directory(cmd: DirectoryCmd) -> Result<()> {
    match cmd {
        DirectoryCmd::Sign {
            key,
            valid_for,
            out,
            directory_file,
        } => sign(&key, valid_for, out.as_deref(), &directory_file),
    }
}

fn sign(key: &Path, valid_for: Duration, out: Option<&Path>, file: &Path) -> Result<()> {
    let secret = authority::load_secret(key)?;
    let text = hopwise_config::read(file)?;
    // The signing time: the start of the validity period.
    let now = SystemTime::now();
    let signed = authority::sign_directory(
        &text,
        &file.display().to_string(),
        &secret,
        now,
        now + valid_for,
    )?;
    let target = out.unwrap_or(file);
    // In place: a whole new file or none, never half of one.
    let tmp = match target.file_name() {
        Some(n) => target.with_file_name(format!(".{}.signing", n.to_string_lossy())),
        None => bail!("{}: not a file name", target.display()),
    };
    std::fs::write(&tmp, &signed)
        .and_then(|_| match std::fs::metadata(target) {
            // Rewritten in place: with the permissions it had.
            Ok(m) => std::fs::set_permissions(&tmp, m.permissions()),
            Err(_) => Ok(()),
        })
        .and_then(|_| std::fs::rename(&tmp, target))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            anyhow!(e)
        })
        .with_context(|| format!("{}: cannot write the signed directory", target.display()))?;
    println!(
        "signed {}: valid from {} until {} (authority {})",
        target.display(),
        authority::format_time(now),
        authority::format_time(now + valid_for),
        secret.public()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_for_takes_days_or_a_duration() {
        assert_eq!(parse_valid_for("7"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_valid_for("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_valid_for("12h"), Ok(Duration::from_secs(12 * 3600)));
        assert_eq!(parse_valid_for("90min"), Ok(Duration::from_secs(90 * 60)));
        assert!(parse_valid_for("0").is_err());
        assert!(parse_valid_for("30s").unwrap_err().contains("one minute"));
        assert!(parse_valid_for("4000").is_err());
        assert!(parse_valid_for("NaN").is_err());
        assert!(parse_valid_for("week").is_err());
    }
}
