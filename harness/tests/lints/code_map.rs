//! The code-map check: ARCHITECTURE.md's code map names every source file of the workspace,
//! and every file or folder it names exists, so the map cannot go stale unnoticed.
//!
//! The map is the `## Code map` section: one `### `<crate folder>/`` heading per crate, whose
//! backticked names ending in `.rs` or `/` are paths relative to that crate's `src/` (a folder
//! covers every file under it: "one rule per file in `judge/invariants/`"), except those that
//! start with the crate's folder, which are from the workspace root, as are all the names of
//! the `## Entry points` section. A crate's roots (`lib.rs`, `main.rs`)
//! are the crate itself and need no line.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What the map names: per crate folder, the paths it names under that crate's `src/`; and
/// the paths named from the workspace root.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Map {
    /// `(crate folder, path under src/)`, e.g. `("runtime/agent", "provider/sse.rs")`.
    pub crate_paths: BTreeSet<(String, String)>,
    /// Paths from the workspace root, e.g. `harness/tests/cli.rs`.
    pub root_paths: BTreeSet<String>,
}

/// Reads the code map and entry points out of ARCHITECTURE.md.
pub fn parse(architecture: &str) -> Map {
    let mut map = Map::default();
    let mut section = "";
    let mut krate: Option<String> = None;
    for line in architecture.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            section = title.trim();
            krate = None;
            continue;
        }
        if let Some(title) = line.strip_prefix("### ") {
            krate = backticked(title).next().and_then(|name| name.strip_suffix('/')).map(str::to_owned);
            continue;
        }
        for name in backticked(line).filter(|name| name.ends_with(".rs") || name.ends_with('/')) {
            match (section, &krate) {
                ("Code map", Some(krate)) if name.starts_with(&format!("{krate}/")) => {
                    map.root_paths.insert(name.to_owned());
                }
                ("Code map", Some(krate)) => {
                    map.crate_paths.insert((krate.clone(), name.to_owned()));
                }
                ("Entry points", _) => {
                    map.root_paths.insert(name.to_owned());
                }
                _ => {}
            }
        }
    }
    map
}

/// The backticked spans of a line that look like paths (no spaces).
fn backticked(line: &str) -> impl Iterator<Item = &str> {
    line.split('`').skip(1).step_by(2).filter(|span| !span.is_empty() && !span.contains(' '))
}

/// Every problem of the map against the workspace at `root`, for the crate folders in
/// `crates`: each source file no line names, each named path that does not exist.
pub fn check_map(root: &Path, crates: &[String], map: &Map) -> Vec<String> {
    let mut problems = Vec::new();
    for krate in crates {
        let src = root.join(krate).join("src");
        let mut files = Vec::new();
        gauntlet::golden::walk(&src, &mut |file| {
            if file.extension().is_some_and(|ext| ext == "rs") {
                files.push(file.to_owned());
            }
        });
        let named = |relative: &str| {
            map.crate_paths.iter().any(|(k, path)| k == krate && covers(path, relative))
                || map.root_paths.iter().any(|path| covers(path, &format!("{krate}/src/{relative}")))
        };
        for file in files {
            let Ok(relative) = file.strip_prefix(&src) else { continue };
            let relative = relative.to_string_lossy().replace('\\', "/");
            if !matches!(relative.as_str(), "lib.rs" | "main.rs") && !named(&relative) {
                problems.push(format!("{krate}/src/{relative} is in no line of ARCHITECTURE.md's code map"));
            }
        }
    }
    for (krate, path) in &map.crate_paths {
        if !crates.contains(krate) {
            problems
                .push(format!("ARCHITECTURE.md's code map has a section for `{krate}/`, which is no workspace member"));
        } else if !root.join(krate).join("src").join(path).exists() {
            problems.push(format!(
                "ARCHITECTURE.md's code map names `{path}` under `{krate}/`, but {krate}/src/{path} does not exist"
            ));
        }
    }
    for path in &map.root_paths {
        if !root.join(path).exists() {
            problems.push(format!("ARCHITECTURE.md's entry points name `{path}`, which does not exist"));
        }
    }
    problems
}

/// Whether the named `path` (a file, or a folder ending in `/`) is or holds `file`.
fn covers(path: &str, file: &str) -> bool {
    path == file || (path.ends_with('/') && file.starts_with(path))
}

/// Why the workspace members cannot be read from the root `Cargo.toml`.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// It is not TOML.
    #[error("Cargo.toml: {source}")]
    Toml {
        /// Why.
        source: toml::de::Error,
    },
    /// It has no `[workspace]` with a `members` array.
    #[error("Cargo.toml has no [workspace] members")]
    NoMembers,
}

/// Why the code-map check could not run (its findings are [`check`]'s `Ok`).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// `Cargo.toml` or ARCHITECTURE.md cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `Cargo.toml` names no members.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
}

/// The workspace members of the root `Cargo.toml`.
pub fn members(manifest: &str) -> Result<Vec<String>, ManifestError> {
    let value: toml::Table = toml::from_str(manifest).map_err(|source| ManifestError::Toml { source })?;
    let members = value
        .get("workspace")
        .and_then(|workspace| workspace.get("members"))
        .and_then(toml::Value::as_array)
        .ok_or(ManifestError::NoMembers)?;
    Ok(members.iter().filter_map(toml::Value::as_str).map(str::to_owned).collect())
}

/// Checks ARCHITECTURE.md's code map against the workspace at `root`.
pub fn check(root: &Path) -> Result<Vec<String>, CheckError> {
    let read = |name: &str| {
        let path: PathBuf = root.join(name);
        std::fs::read_to_string(&path).map_err(|source| CheckError::Read { path, source })
    };
    let crates = members(&read("Cargo.toml")?)?;
    Ok(check_map(root, &crates, &parse(&read("ARCHITECTURE.md")?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAP: &str = "# Architecture\n\n## Entry points\n\n- `a/src/bin/x.rs`: a binary; `a/tests/`.\n\n\
                       ## Code map\n\n### `a/` (`crate-a`)\n\n- `one.rs`: `One`; `one/part.rs` and `two/` (the `Two`s), tested in `a/tests/x.rs`.\n\
                       - `gone.rs`: removed.\n\n## Layers\n\n`lib.rs` and `three.rs` are not map lines here.\n";

    #[test]
    fn the_map_reads_crate_paths_and_entry_points() {
        let map = parse(MAP);
        let crate_paths: Vec<&str> = map.crate_paths.iter().map(|(_, path)| path.as_str()).collect();
        assert_eq!(crate_paths, ["gone.rs", "one.rs", "one/part.rs", "two/"]);
        assert!(map.crate_paths.iter().all(|(krate, _)| krate == "a"));
        assert_eq!(map.root_paths.iter().collect::<Vec<_>>(), ["a/src/bin/x.rs", "a/tests/", "a/tests/x.rs"]);
    }

    #[test]
    fn an_unnamed_file_and_a_named_file_that_is_gone_are_both_problems() {
        let root = tempfile::tempdir().unwrap();
        for file in
            ["a/src/lib.rs", "a/src/one.rs", "a/src/one/part.rs", "a/src/two/x.rs", "a/src/three.rs", "a/src/bin/x.rs"]
        {
            let path = root.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "//! x").unwrap();
        }
        std::fs::create_dir_all(root.path().join("a/tests")).unwrap();
        std::fs::write(root.path().join("a/tests/x.rs"), "//! t").unwrap();
        assert_eq!(
            check_map(root.path(), &["a".into()], &parse(MAP)),
            [
                "a/src/three.rs is in no line of ARCHITECTURE.md's code map",
                "ARCHITECTURE.md's code map names `gone.rs` under `a/`, but a/src/gone.rs does not exist",
            ]
        );
    }

    #[test]
    fn members_come_from_the_workspace_manifest() {
        assert_eq!(
            members("[workspace]\nmembers = [\"runtime/agent\", \"harness\"]\n").unwrap(),
            ["runtime/agent", "harness"]
        );
        let error = members("[package]\nname = \"x\"\n").unwrap_err();
        assert!(matches!(error, ManifestError::NoMembers));
        assert_eq!(error.to_string(), "Cargo.toml has no [workspace] members");
        assert!(members("[workspace").unwrap_err().to_string().starts_with("Cargo.toml: "));
    }
}
