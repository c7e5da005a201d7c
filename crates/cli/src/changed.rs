//! `--changed`: run only the stages whose spec sections differ from the spec at a git
//! revision, as Terramate's change detection picks the stacks changed since a base ref.
//!
//! Git is run as a command, like Terramate does: the repository, its remotes and credentials
//! are the user's own, and a library (libgit2, gitoxide) would add a large build for three
//! read-only questions.

use engine::spec::SpecSource;
use miette::{Result, miette};
use std::path::Path;
use std::process::Command;

/// The revision `--changed` compares with when none is given: the previous commit on the
/// default branch, else the remote's default branch (Terramate's defaults).
pub fn default_reference(dir: &Path) -> Result<String> {
    let branch = git(dir, &["rev-parse", "--abbrev-ref", "HEAD"])?;
    if branch.trim() == "main" {
        return Ok("HEAD^".into());
    }
    for candidate in ["origin/main", "main"] {
        if resolves(dir, candidate) {
            return Ok(candidate.into());
        }
    }
    Err(miette!(
        "--changed: no origin/main or main to compare with; name a revision (--changed=REV)"
    ))
}

/// The spec (with its overlay) as it was at `reference`, or `None` when the spec file did not
/// exist then. An overlay not tracked at `reference` is taken as it is now.
pub fn spec_at(reference: &str, path: &Path, overlay: Option<&Path>) -> Result<Option<SpecSource>> {
    let Some(text) = file_at(reference, path)? else {
        return Ok(None);
    };
    let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let file = format!("{}@{reference}", path.display());
    let spec = SpecSource::from_text(&file, &name, text);
    let Some(overlay) = overlay else {
        return Ok(Some(spec));
    };
    let overlay_text = match file_at(reference, overlay)? {
        Some(text) => text,
        None => std::fs::read_to_string(overlay)
            .map_err(|e| miette!("reading {}: {e}", overlay.display()))?,
    };
    let overlay_name = overlay.display().to_string();
    // An overlay that no longer parses at `reference` counts as the spec having changed.
    Ok(spec.with_overlay(SpecSource::from_text(&overlay_name, &name, overlay_text)).ok())
}

/// `path`'s content at `reference`; `None` when it did not exist there. An unknown revision or
/// a path outside any repository is an error.
fn file_at(reference: &str, path: &Path) -> Result<Option<String>> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| miette!("{}: not a file", path.display()))?;
    if !resolves(dir, &format!("{reference}^{{commit}}")) {
        return Err(miette!(
            "--changed={reference}: not a revision of the git repository at {}",
            dir.display()
        ));
    }
    let object = format!("{reference}:./{}", name.to_string_lossy());
    if !resolves(dir, &object) {
        return Ok(None);
    }
    git(dir, &["show", &object]).map(Some)
}

fn resolves(dir: &Path, revision: &str) -> bool {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "--verify", "--quiet", revision])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| miette!("--changed needs git: {e}"))?;
    if !out.status.success() {
        return Err(miette!(
            "git {} (in {}): {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    String::from_utf8(out.stdout).map_err(|_| miette!("git {}: not UTF-8", args.join(" ")))
}
