//! Rules about the repository, not about any agent: the layers of ARCHITECTURE.md hold for every
//! import, its code map names every source file, every Rust file opens with what it is for, and
//! every MUST of docs/contract.md has a check. They ship in no crate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gauntlet::golden;
use gauntlet::run::{self, Plan};
use gauntlet_judge::{contract, scenario};

#[path = "lints/code_map.rs"]
mod code_map;
#[path = "lints/coverage.rs"]
mod coverage;
#[path = "lints/layers.rs"]
mod layers;

type Failed = Box<dyn std::error::Error>;

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// Every MUST of docs/contract.md has a check, and every check it names exists (`coverage`).
#[test]
fn contract_is_covered() -> Result<(), Failed> {
    let root = root();
    let root = root.as_path();
    let names = run::scenario_names(&Plan { root: root.to_owned(), bless: false, shard: None });
    let path = root.join("docs/contract.md");
    let text = std::fs::read_to_string(&path).map_err(|error| format!("{}: {error}", path.display()))?;
    let requirements = contract::parse(&text)?;
    let mut covers = BTreeMap::new();
    for (name, path) in &names {
        covers.insert(name.clone(), scenario::covers(path).map_err(|error| error.to_string())?);
    }
    let problems = coverage::verify(&requirements, &covers, root);
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n").into()) }
}

/// No Log `type` is written as a string in the judge or the harness: rules compare with
/// `EventType` through `EventKind` (`judge/src/event_kind.rs`), so a misspelt type does not
/// compile. Tests may spell Logs out. `tool_call` is also an ACP update and a scenario trigger
/// name, and the one-word types (`plan`, `status`, `reasoning`) are common words: the lint
/// leaves those to review.
#[test]
fn no_event_type_is_a_string_literal() -> Result<(), Failed> {
    let root = root();
    let names: Vec<String> = gauntlet_agent::EventType::ALL
        .iter()
        .map(|kind| kind.as_str())
        .filter(|name| name.contains('_') && *name != "tool_call")
        .map(|name| format!("\"{name}\""))
        .collect();
    let mut found = Vec::new();
    for crate_dir in ["judge/src", "harness/src"] {
        golden::walk(&root.join(crate_dir), &mut |path| {
            if path.extension().is_none_or(|ext| ext != "rs") || path.ends_with("event_kind.rs") {
                return;
            }
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (idx, line) in code.lines().enumerate() {
                if let Some(name) = names.iter().find(|name| line.contains(name.as_str())) {
                    found.push(format!("{}:{}: {name}", path.display(), idx + 1));
                }
            }
        });
    }
    found.sort();
    if found.is_empty() { Ok(()) } else { Err(format!("Log types written as strings:\n{}", found.join("\n")).into()) }
}

/// Every Rust file of the workspace opens with a `//!` line saying what it is for.
#[test]
fn rust_files_open_with_docs() -> Result<(), Failed> {
    let root = root();
    let root = root.as_path();
    let mut bare = Vec::new();
    for crate_dir in ["runtime", "mock-provider", "judge", "harness"] {
        golden::walk(&root.join(crate_dir), &mut |path| {
            if path.extension().is_some_and(|ext| ext == "rs") {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                if !text.starts_with("//!") {
                    bare.push(path.display().to_string());
                }
            }
        });
    }
    bare.sort();
    if bare.is_empty() { Ok(()) } else { Err(format!("files without a `//!` first line:\n{}", bare.join("\n")).into()) }
}

/// No module uses one of a higher layer, as ARCHITECTURE.md lists them (`layers`).
#[test]
fn layers_hold() -> Result<(), Failed> {
    let problems = layers::check(&root())?;
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("imports against the layers:\n{}", problems.join("\n")).into())
    }
}

/// ARCHITECTURE.md's code map names every source file and no file that is gone
/// (`code_map`).
#[test]
fn code_map_holds() -> Result<(), Failed> {
    let problems = code_map::check(&root())?;
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("ARCHITECTURE.md's code map against the files:\n{}", problems.join("\n")).into())
    }
}
