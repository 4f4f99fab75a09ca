//! Rules about the repository, not about any agent: the layers of ARCHITECTURE.md hold for every
//! import, it names every crate and top-level module and only paths that exist, every Rust file
//! opens with what it is for, every MUST of docs/contract.md has a check, and no code of the
//! judge or the harness writes a Log type as a string or reads a Log payload by key outside
//! its typed views. They ship in no crate.

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

/// The judge's promise, "no IO but reading files, no async runtime, no HTTP, no process
/// control" (judge/src/lib.rs), in its dependency tree as cargo resolves it for the judge
/// alone: none of the crates that would break it, whatever a new dependency pulls in.
#[test]
fn the_judge_depends_on_no_runtime_http_or_process_crate() -> Result<(), Failed> {
    const FORBIDDEN: [&str; 8] = ["tokio", "hyper", "reqwest", "ureq", "mio", "rmcp", "nix", "async-std"];
    let output = std::process::Command::new(env!("CARGO"))
        .args(["tree", "-p", "gauntlet-judge", "-e", "normal", "--prefix", "none", "--locked", "--offline"])
        .current_dir(root())
        .output()?;
    if !output.status.success() {
        return Err(format!("cargo tree failed: {}", String::from_utf8_lossy(&output.stderr)).into());
    }
    let tree = String::from_utf8(output.stdout)?;
    let crates: Vec<&str> = tree.lines().filter_map(|line| line.split_whitespace().next()).collect();
    if !crates.contains(&"gauntlet-judge") {
        return Err(format!("cargo tree did not list the judge:\n{tree}").into());
    }
    let found: Vec<&&str> = FORBIDDEN.iter().filter(|name| crates.contains(name)).collect();
    if !found.is_empty() {
        return Err(format!(
            "the judge depends on {found:?}; `cargo tree -p gauntlet-judge -i <crate>` says through what"
        )
        .into());
    }
    Ok(())
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
/// `EventType` through `EventKind` (`judge/src/event_kind.rs`, the one module exempt), so a
/// misspelt type does not compile. Every wire name with an underscore is linted, in the code
/// before a file's `#[cfg(test)]` line (tests may spell Logs out); the one-word types (`plan`,
/// `status`, `reasoning`) are common words and left to review. The same name in another
/// vocabulary (ACP's `tool_call` update, the scenario trigger named for it) is a constant whose
/// line says it is `not a Log type`.
#[test]
fn no_event_type_is_a_string_literal() -> Result<(), Failed> {
    let names: Vec<String> = gauntlet_agent::EventType::ALL
        .iter()
        .map(|kind| kind.as_str())
        .filter(|name| name.contains('_'))
        .map(|name| format!("\"{name}\""))
        .collect();
    let lines_of = |text: &str| -> Vec<(usize, String)> {
        code_lines(text)
            .filter(|(_, line)| !line.contains("not a Log type"))
            .filter_map(|(at, line)| {
                names.iter().find(|name| line.contains(name.as_str())).map(|name| (at, name.clone()))
            })
            .collect()
    };
    let planted = "fn f() {}\nlet a = kind == \"turn_failed\";\n#[cfg(test)]\nlet b = \"turn_failed\";\n";
    assert_eq!(lines_of(planted), [(2, "\"turn_failed\"".to_owned())], "the lint sees nothing");
    let found = found_in_code("judge/src/event_kind.rs", &lines_of)?;
    if found.is_empty() { Ok(()) } else { Err(format!("Log types written as strings:\n{}", found.join("\n")).into()) }
}

/// The judge reads a Log payload's fields through the typed views of `judge/src/log_line.rs`,
/// where each key is named once: a keyed read of a line's `data` anywhere else in the judge or
/// the harness (before a file's `#[cfg(test)]` line, on one line or split over two as rustfmt
/// splits a chain) fails this lint. What takes a payload whole (a key-presence rule, a value
/// compared with its copy elsewhere, the runtime's own readers) is no keyed read.
#[test]
fn log_payloads_are_read_through_views() -> Result<(), Failed> {
    const READS: [&str; 4] = [".data.get(", ".data.pointer(", ".data[", ".str_field("];
    let lines_of = |text: &str| -> Vec<(usize, String)> {
        let lines: Vec<(usize, &str)> = code_lines(text).collect();
        let with_next = |at: usize| {
            let next = lines.get(at + 1).map_or("", |(_, line)| line.trim());
            format!("{}{next}", lines[at].1.trim())
        };
        (0..lines.len())
            .map(|at| (lines[at].0, with_next(at)))
            .filter(|(_, joined)| READS.iter().any(|read| joined.contains(read)))
            .collect()
    };
    let planted =
        "fn f() {}\nlet a = line\n    .data\n    .pointer(\"/ok\");\n#[cfg(test)]\nlet b = line.str_field(\"x\");\n";
    assert_eq!(lines_of(planted), [(3, ".data.pointer(\"/ok\");".to_owned())], "the lint sees nothing");
    let found = found_in_code("judge/src/log_line.rs", &lines_of)?;
    if found.is_empty() {
        Ok(())
    } else {
        Err(format!("Log payload fields read by key outside judge/src/log_line.rs:\n{}", found.join("\n")).into())
    }
}

/// What `lines_of` finds in the judge's and the harness's Rust files but `exempt`, as
/// `path:line: what`, sorted; an error when no file was read or `exempt` is gone.
fn found_in_code(exempt: &str, lines_of: &dyn Fn(&str) -> Vec<(usize, String)>) -> Result<Vec<String>, Failed> {
    let root = root();
    let exempt = root.join(exempt);
    let (mut read, mut found) = (0, Vec::new());
    for crate_dir in ["judge/src", "harness/src"] {
        golden::walk(&root.join(crate_dir), &mut |path| {
            if path.extension().is_none_or(|ext| ext != "rs") || path == exempt {
                return;
            }
            read += 1;
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let shown = path.strip_prefix(&root).unwrap_or(path).display().to_string();
            found.extend(lines_of(&text).into_iter().map(|(line, what)| format!("{shown}:{line}: {what}")));
        });
    }
    if read == 0 || !exempt.is_file() {
        return Err(format!("no Rust file read under {}, or no {}", root.display(), exempt.display()).into());
    }
    found.sort();
    Ok(found)
}

/// Each line of `text`'s code, 1-based, before its `#[cfg(test)]` line (a test-only file opens
/// with `#![cfg(test)]`): tests may spell a Log out.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .take_while(|line| !matches!(line.trim(), "#[cfg(test)]" | "#![cfg(test)]"))
        .enumerate()
        .map(|(idx, line)| (idx + 1, line))
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

/// ARCHITECTURE.md names every workspace crate and top-level module, and every path it names
/// exists (`code_map`).
#[test]
fn code_map_holds() -> Result<(), Failed> {
    let problems = code_map::check(&root())?;
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("ARCHITECTURE.md's map against the workspace:\n{}", problems.join("\n")).into())
    }
}
