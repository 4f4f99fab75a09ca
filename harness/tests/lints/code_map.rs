//! The code-map check: ARCHITECTURE.md is a map, not a file list. Every repository path it
//! names exists, and it names every workspace crate and every top-level module of each crate,
//! so a new crate or module cannot go unmapped and a moved file cannot leave the map stale.
//! The files inside a module are the module's own business: the map need not name them.
//!
//! A name is a backticked span outside fenced blocks. It is a path from the workspace root
//! when it ends in `.rs`, `.md` or `.toml`, ends in `/`, or holds a `/` after a first part that
//! is a file or folder at the root; so `session/list` (an ACP method) is no path. A span with
//! anything but letters, digits, `_`, `-`, `.` and `/` is no path either (`scenarios/<family>/`,
//! `judge::judge`).
//!
//! A crate is named by its folder (`runtime/agent/`). Its top-level modules are each `src/*.rs`
//! file and `src/*/` folder but the roots (`lib.rs`, `main.rs`, `bin/`), and its binaries each
//! file or folder of `src/bin/`; one is named by its file, its folder or any path inside that
//! folder (`harness/src/driver.rs`, `harness/src/driver/`, `harness/src/bin/gauntlet/main.rs`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The repository paths `architecture` names, as written (a folder keeps its `/`). `top` is
/// what stands at the workspace root, so a span such as `session/list` is told from a path.
pub fn named_paths(architecture: &str, top: &BTreeSet<String>) -> BTreeSet<String> {
    let mut paths = BTreeSet::new();
    let mut fenced = false;
    for line in architecture.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for span in line.split('`').skip(1).step_by(2) {
            if is_path(span, top) {
                paths.insert(span.to_owned());
            }
        }
    }
    paths
}

/// Whether a backticked `span` is a repository path (see the module's docs).
fn is_path(span: &str, top: &BTreeSet<String>) -> bool {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    if span.is_empty() || !span.chars().all(plain) {
        return false;
    }
    let first = span.split('/').next().unwrap_or_default();
    [".rs", ".md", ".toml", "/"].iter().any(|end| span.ends_with(end)) || (span.contains('/') && top.contains(first))
}

/// A top-level module or binary of a crate: `<crate>/src/<name>` or `<crate>/src/bin/<name>`,
/// without an extension.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Module {
    /// E.g. `runtime/agent/src/event`.
    pub stem: String,
    /// What stands on disk: `event.rs`, `event/` or both, for the message.
    pub forms: Vec<String>,
}

impl Module {
    /// Whether the named `path` names this module: its file, its folder or a path inside it.
    fn named_by(&self, path: &str) -> bool {
        let path = path.trim_end_matches('/');
        path == self.stem || path == format!("{}.rs", self.stem) || path.starts_with(&format!("{}/", self.stem))
    }
}

/// The top-level modules and binaries of the crate in folder `krate` under `root`.
pub fn modules(root: &Path, krate: &str) -> Result<Vec<Module>, CheckError> {
    let mut found: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (dir, roots) in [("src", &["lib.rs", "main.rs", "bin"][..]), ("src/bin", &[][..])] {
        let folder = root.join(krate).join(dir);
        if dir == "src/bin" && !folder.is_dir() {
            continue;
        }
        let entries = std::fs::read_dir(&folder).map_err(|source| CheckError::Read { path: folder.clone(), source })?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_dir = entry.path().is_dir();
            let stem = match name.strip_suffix(".rs") {
                _ if roots.contains(&name.as_str()) => continue,
                _ if is_dir => name.clone(),
                Some(stem) => stem.to_owned(),
                None => continue,
            };
            let form = if is_dir { format!("{name}/") } else { name };
            found.entry(format!("{krate}/{dir}/{stem}")).or_default().push(form);
        }
    }
    Ok(found
        .into_iter()
        .map(|(stem, mut forms)| {
            forms.sort();
            Module { stem, forms }
        })
        .collect())
}

/// Every problem of ARCHITECTURE.md's `named` paths against the workspace at `root`, whose
/// crates are `crates` with their `modules`: each named path that does not exist, each crate
/// whose folder is not named, each module nothing names.
pub fn check_map(root: &Path, crates: &[(String, Vec<Module>)], named: &BTreeSet<String>) -> Vec<String> {
    let mut problems = Vec::new();
    for path in named {
        if !root.join(path).exists() {
            problems.push(format!("ARCHITECTURE.md names `{path}`, which does not exist"));
        }
    }
    for (krate, modules) in crates {
        if !named.iter().any(|path| path.trim_end_matches('/') == krate) {
            problems.push(format!("workspace crate `{krate}/` is not named in ARCHITECTURE.md"));
        }
        for module in modules.iter().filter(|module| !named.iter().any(|path| module.named_by(path))) {
            let (folder, name) = module.stem.rsplit_once('/').unwrap_or(("", &module.stem));
            let forms: Vec<String> = module.forms.iter().map(|form| format!("`{folder}/{form}`")).collect();
            problems.push(format!(
                "module `{name}` of `{krate}/` is not named in ARCHITECTURE.md: name {}",
                forms.join(" or ")
            ));
        }
    }
    problems
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
    /// A file or folder cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// The file or folder.
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

/// What stands at the workspace root: its files and folders, by name.
fn top_level(root: &Path) -> Result<BTreeSet<String>, CheckError> {
    let entries = std::fs::read_dir(root).map_err(|source| CheckError::Read { path: root.to_owned(), source })?;
    Ok(entries.flatten().map(|entry| entry.file_name().to_string_lossy().into_owned()).collect())
}

/// Checks ARCHITECTURE.md against the workspace at `root`.
pub fn check(root: &Path) -> Result<Vec<String>, CheckError> {
    let read = |name: &str| {
        let path: PathBuf = root.join(name);
        std::fs::read_to_string(&path).map_err(|source| CheckError::Read { path, source })
    };
    let mut crates = Vec::new();
    for krate in members(&read("Cargo.toml")?)? {
        let modules = modules(root, &krate)?;
        crates.push((krate, modules));
    }
    let named = named_paths(&read("ARCHITECTURE.md")?, &top_level(root)?);
    Ok(check_map(root, &crates, &named))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAP: &str = "# Architecture\n\n`a/` is the crate: `a/src/one.rs`, its `a/src/two/x.rs` and \
                       the binary `a/src/bin/tool/`; see `docs/gone.md` and `a/src/old.rs`.\n\
                       ACP's `session/list`, `scenarios/<family>/`, `judge::judge` and `lib.rs`'s `a.b` \
                       are no paths, nor is anything in a fence:\n```layers\n`a/src/three.rs`\n```\n";

    fn top() -> BTreeSet<String> {
        ["a", "docs", "Cargo.toml"].map(str::to_owned).into()
    }

    /// A workspace with crate `a`: modules `one` (file and folder), `two` (folder), `three`,
    /// the binaries `tool` (folder) and `run`, and `b`, a crate with only its root.
    fn workspace() -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for file in [
            "a/src/lib.rs",
            "a/src/one.rs",
            "a/src/one/part.rs",
            "a/src/two/x.rs",
            "a/src/three.rs",
            "a/src/bin/tool/main.rs",
            "a/src/bin/run.rs",
            "a/src/notes.txt",
            "b/src/lib.rs",
        ] {
            let path = root.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "//! x").unwrap();
        }
        root
    }

    #[test]
    fn names_are_backticked_paths_outside_fences() {
        let named: Vec<String> = named_paths(MAP, &top()).into_iter().collect();
        assert_eq!(
            named,
            ["a/", "a/src/bin/tool/", "a/src/old.rs", "a/src/one.rs", "a/src/two/x.rs", "docs/gone.md", "lib.rs"]
        );
    }

    #[test]
    fn modules_are_the_top_level_files_folders_and_binaries() {
        let root = workspace();
        let found = modules(root.path(), "a").unwrap();
        let shown: Vec<(&str, Vec<&str>)> =
            found.iter().map(|m| (m.stem.as_str(), m.forms.iter().map(String::as_str).collect())).collect();
        assert_eq!(
            shown,
            [
                ("a/src/bin/run", vec!["run.rs"]),
                ("a/src/bin/tool", vec!["tool/"]),
                ("a/src/one", vec!["one.rs", "one/"]),
                ("a/src/three", vec!["three.rs"]),
                ("a/src/two", vec!["two/"]),
            ]
        );
        assert_eq!(modules(root.path(), "b").unwrap(), Vec::<Module>::new());
    }

    /// A stale path, an unnamed crate and unnamed modules are each a problem naming what is
    /// missing; a module named by a file inside its folder (`two`) is named.
    #[test]
    fn a_stale_path_an_unnamed_crate_and_an_unnamed_module_are_problems() {
        let root = workspace();
        let crates: Vec<(String, Vec<Module>)> =
            ["a", "b"].iter().map(|krate| (krate.to_string(), modules(root.path(), krate).unwrap())).collect();
        let named = named_paths(MAP, &top());
        assert_eq!(
            check_map(root.path(), &crates, &named),
            [
                "ARCHITECTURE.md names `a/src/old.rs`, which does not exist",
                "ARCHITECTURE.md names `docs/gone.md`, which does not exist",
                "ARCHITECTURE.md names `lib.rs`, which does not exist",
                "module `run` of `a/` is not named in ARCHITECTURE.md: name `a/src/bin/run.rs`",
                "module `three` of `a/` is not named in ARCHITECTURE.md: name `a/src/three.rs`",
                "workspace crate `b/` is not named in ARCHITECTURE.md",
            ]
        );
        let whole = "`a/` `b/` `a/src/one/` `a/src/two/` `a/src/three.rs` `a/src/bin/run.rs` `a/src/bin/tool/main.rs`";
        assert_eq!(check_map(root.path(), &crates, &named_paths(whole, &top())), Vec::<String>::new());
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
