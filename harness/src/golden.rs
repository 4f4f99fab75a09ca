//! Golden files: read, compare with unified diffs, write pending files, accept them.
//!
//! A mismatch never overwrites a golden. With blessing on, the new content is written beside
//! the golden as `<file>.new` (a pending file) and the trial still fails; `gauntlet accept`
//! renames pending files over their goldens. CI fails on any pending file.

use std::path::{Path, PathBuf};

use similar::TextDiff;

use crate::verdict::{Finding, Layer};

/// The suffix of a pending golden file.
pub const PENDING_SUFFIX: &str = ".new";

/// The command that accepts pending goldens, named in every mismatch.
pub const ACCEPT_COMMAND: &str = "cargo run -p gauntlet -- accept";

/// Compares `files` with the goldens in `root/dir`; with `bless`, writes pending files for
/// mismatches. Messages name files relative to `root`, e.g. `golden/turn/x/log.ndjson`.
pub fn compare(root: &Path, dir: &Path, files: &[(&str, String)], bless: bool) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (name, actual) in files {
        let path = root.join(dir).join(name);
        let expected = std::fs::read_to_string(&path).ok();
        if expected.as_deref() == Some(actual.as_str()) {
            continue;
        }
        let label = dir.join(name).display().to_string();
        let mut message = match &expected {
            Some(expected) => format!(
                "{label} differs:\n{}",
                TextDiff::from_lines(expected, actual).unified_diff().context_radius(2).header(&label, "actual")
            ),
            None => format!("{label} is missing"),
        };
        if bless {
            let pending = pending_path(&path);
            match std::fs::create_dir_all(root.join(dir)).and_then(|()| std::fs::write(&pending, actual)) {
                Ok(()) => message
                    .push_str(&format!("\nwrote {label}{PENDING_SUFFIX}: review it, then run `{ACCEPT_COMMAND}`")),
                Err(error) => message.push_str(&format!("\ncould not write {}: {error}", pending.display())),
            }
        } else {
            message.push_str(&format!(
                "\nto review the new output, rerun with GAUNTLET_BLESS=1 (or `gauntlet run --bless`), then `{ACCEPT_COMMAND}`"
            ));
        }
        findings.push(Finding::new(Layer::Golden, None, message));
    }
    findings
}

fn pending_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(PENDING_SUFFIX);
    PathBuf::from(name)
}

/// Every pending golden file under `root`, sorted.
pub fn pending(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    walk(root, &mut |path| {
        if path.to_string_lossy().ends_with(PENDING_SUFFIX) {
            found.push(path.to_owned());
        }
    });
    found.sort();
    found
}

/// Renames every pending file under `root` over its golden; returns the goldens written.
pub fn accept(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut accepted = Vec::new();
    for pending in pending(root) {
        let text = pending.to_string_lossy();
        let golden = PathBuf::from(&text[..text.len() - PENDING_SUFFIX.len()]);
        std::fs::rename(&pending, &golden)?;
        accepted.push(golden);
    }
    Ok(accepted)
}

/// Calls `visit` for every file under `dir`, recursively; unreadable folders are skipped.
pub fn walk(dir: &Path, visit: &mut dyn FnMut(&Path)) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, visit);
        } else {
            visit(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_byte_change_shows_as_a_diff_and_blessing_writes_pending() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("log.ndjson"), "a\nb\n").unwrap();
        let files = [("log.ndjson", "a\nc\n".to_owned())];
        let findings = compare(dir.path(), Path::new(""), &files, false);
        assert_eq!(findings.len(), 1);
        assert!(findings[0].message.contains("-b\n+c\n"), "{}", findings[0].message);
        assert!(pending(dir.path()).is_empty());
        compare(dir.path(), Path::new(""), &files, true);
        assert_eq!(pending(dir.path()).len(), 1);
        accept(dir.path()).unwrap();
        assert!(compare(dir.path(), Path::new(""), &files, false).is_empty());
        assert!(pending(dir.path()).is_empty());
    }
}
