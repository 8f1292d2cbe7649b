//! Running the system's network tools. Every error names the command line
//! and repeats what the tool printed on stderr.

use anyhow::{bail, Context, Result};
use std::process::Command;

/// The command line as a user would type it (for messages).
pub fn display(program: &str, args: &[String]) -> String {
    let mut s = program.to_string();
    for a in args {
        s.push(' ');
        s.push_str(a);
    }
    s
}

/// Runs `program args…` and returns its stdout. A missing program, a
/// non-zero exit or non-UTF-8 output is an error naming the command.
pub fn run(program: &str, args: &[String]) -> Result<String> {
    let line = display(program, args);
    let out = Command::new(program).args(args).output().with_context(|| {
        format!("`{line}`: cannot start {program} (is it installed and on PATH?)")
    })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let err = err.trim();
        bail!(
            "`{line}` failed ({}){}{}",
            out.status,
            if err.is_empty() { "" } else { ": " },
            err
        );
    }
    String::from_utf8(out.stdout).with_context(|| format!("`{line}`: output is not UTF-8"))
}

/// `args` as owned strings.
pub fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}
