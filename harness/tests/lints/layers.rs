//! The layer check: each crate's modules stand in the layers ARCHITECTURE.md lists, and a
//! module uses only modules of lower layers, so no import points up and none forms a cycle
//! (the tidy-test habit of rust-analyzer: a rule about the code, checked as an ordinary test).
//!
//! ARCHITECTURE.md holds the layers in a fenced `layers` block, one stack per line, bottom
//! first: `runtime: canonical ids < event < log`. A crate may have several stacks (the
//! runtime's monitor and bridge stand apart); modules of different stacks may not use each
//! other. A module is a top-level file or folder of `src/`; `lib.rs`, `main.rs` and `bin/`
//! are the crate's roots and may use anything. A dependency is any `crate::<module>` path in
//! code, not only `use` lines; comments and `#[cfg(test)]` code (tests may reach up) are not
//! code here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One stack of one crate: its layers, bottom first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stack {
    /// The crate's folder, e.g. `runtime`.
    pub krate: String,
    /// Module names per layer, bottom first.
    pub layers: Vec<Vec<String>>,
}

/// Where a module stands: its stack (index into the crate's stacks) and layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Place {
    stack: usize,
    layer: usize,
}

/// Why ARCHITECTURE.md's `layers` block cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockError {
    /// There is no such block.
    #[error("ARCHITECTURE.md has no ```layers block")]
    Missing,
    /// A line of it is not a stack.
    #[error("ARCHITECTURE.md layers: `{line}` is not `crate: a b < c`")]
    NotAStack {
        /// The line.
        line: String,
    },
    /// A stack with nothing between two `<`, or at an end.
    #[error("ARCHITECTURE.md layers: `{line}` has an empty layer")]
    EmptyLayer {
        /// The line.
        line: String,
    },
}

/// Why the layer check could not run (its findings are [`check`]'s `Ok`).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The `layers` block cannot be read.
    #[error(transparent)]
    Block(#[from] BlockError),
    /// ARCHITECTURE.md or a source file cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A source file found outside its crate's `src/`.
    #[error("{source}")]
    OutsideSrc {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::path::StripPrefixError,
    },
}

/// Reads the fenced `layers` block of ARCHITECTURE.md.
pub fn parse(architecture: &str) -> Result<Vec<Stack>, BlockError> {
    let mut lines = architecture.lines().skip_while(|line| line.trim() != "```layers");
    if lines.next().is_none() {
        return Err(BlockError::Missing);
    }
    let mut stacks = Vec::new();
    for line in lines.take_while(|line| line.trim() != "```") {
        let Some((krate, layers)) = line.split_once(':') else {
            return Err(BlockError::NotAStack { line: line.to_owned() });
        };
        let layers: Vec<Vec<String>> =
            layers.split('<').map(|layer| layer.split_whitespace().map(str::to_owned).collect::<Vec<_>>()).collect();
        if layers.iter().any(Vec::is_empty) {
            return Err(BlockError::EmptyLayer { line: line.to_owned() });
        }
        stacks.push(Stack { krate: krate.trim().to_owned(), layers });
    }
    Ok(stacks)
}

/// A module's path from its crate's root: `["provider", "dialect"]` for `provider/dialect.rs`;
/// empty for the roots (`lib.rs`, `main.rs`), `None` for `bin/`, which holds crates of its own.
fn module_path(relative: &Path) -> Option<Vec<String>> {
    let mut path = Vec::new();
    for component in relative.components() {
        let name = component.as_os_str().to_str()?;
        path.push(name.strip_suffix(".rs").unwrap_or(name).to_owned());
    }
    match path.first().map(String::as_str) {
        Some("bin") => None,
        Some("lib" | "main") if path.len() == 1 => Some(Vec::new()),
        _ => Some(path),
    }
}

/// Every path the code of a file at module path `at` names through `crate::`, `super::` or
/// `self::`, absolute from the crate's root (`use` groups expanded), whether or not it ends in
/// a module: the caller knows which names are modules.
pub fn uses(source: &str, at: &[String]) -> BTreeSet<Vec<String>> {
    let code: String = source
        .lines()
        .take_while(|line| line.trim() != "#[cfg(test)]")
        .map(|line| line.split_once("//").map_or(line, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n");
    let mut paths = BTreeSet::new();
    let mut index = 0;
    while index < code.len() {
        let rest = &code[index..];
        let preceded = code[..index].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        let base = if preceded {
            None
        } else if rest.starts_with("crate::") {
            Some((Vec::new(), "crate::".len()))
        } else if rest.starts_with("self::") {
            Some((at.to_vec(), "self::".len()))
        } else if rest.starts_with("super::") {
            let mut base = at.to_vec();
            let mut length = 0;
            while rest[length..].starts_with("super::") {
                base.pop();
                length += "super::".len();
            }
            Some((base, length))
        } else {
            None
        };
        match base {
            Some((base, length)) => {
                tree(&rest[length..], &base, &mut paths);
                index += length;
            }
            None => index += rest.chars().next().map_or(1, char::len_utf8),
        }
    }
    paths
}

/// Expands one use tree (`a::b`, `{a, b::c}`, `a::{b, c::d}`) after `prefix` into `paths`;
/// returns how many bytes it read.
fn tree(text: &str, prefix: &[String], paths: &mut BTreeSet<Vec<String>>) -> usize {
    let mut path = prefix.to_vec();
    let mut at = 0;
    loop {
        if text[at..].starts_with('{') {
            at += 1;
            loop {
                at += text[at..].len() - text[at..].trim_start().len();
                if at >= text.len() || text[at..].starts_with('}') {
                    return (at + 1).min(text.len());
                }
                at += tree(&text[at..], &path, paths);
                match text[at..].find([',', '}']) {
                    Some(skipped) => at += skipped,
                    None => return text.len(),
                }
                if text[at..].starts_with(',') {
                    at += 1;
                }
            }
        }
        let name: String = text[at..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if name.is_empty() {
            break;
        }
        at += name.len();
        if name != "self" {
            path.push(name);
        }
        if !text[at..].starts_with("::") {
            break;
        }
        at += "::".len();
    }
    paths.insert(path);
    at
}

/// Checks the sources of one crate (paths relative to its `src/`): each top-level module
/// against the crate's stacks, and the files inside each module folder for circles, which no
/// stack lists; every problem names the file that uses and the file it uses.
pub fn check_sources(krate: &str, sources: &[(PathBuf, String)], stacks: &[Stack]) -> Vec<String> {
    let mut places: BTreeMap<&str, Place> = BTreeMap::new();
    for (index, stack) in stacks.iter().filter(|stack| stack.krate == krate).enumerate() {
        for (layer, modules) in stack.layers.iter().enumerate() {
            for module in modules {
                places.insert(module, Place { stack: index, layer });
            }
        }
    }
    let modules: Vec<(Vec<String>, &PathBuf, &String)> =
        sources.iter().filter_map(|(path, source)| module_path(path).map(|module| (module, path, source))).collect();
    // The file of a module: `a/b.rs` rather than a file inside `a/b/`.
    let file_of = |module: &[String]| -> String {
        modules.iter().filter(|(path, ..)| path.starts_with(module)).min_by_key(|(path, ..)| path.len()).map_or_else(
            || format!("{krate}/src/{}", module.join("/")),
            |(_, file, _)| format!("{krate}/src/{}", file.display()),
        )
    };
    let is_module = |module: &[String]| modules.iter().any(|(path, ..)| path.starts_with(module));
    let mut problems = Vec::new();
    // Imports between the files of one folder: (folder, from, to) to the first file that uses.
    let mut inside: BTreeMap<(Vec<String>, String, String), String> = BTreeMap::new();
    for (path, file, source) in &modules {
        let Some(module) = path.first() else { continue };
        let file = format!("{krate}/src/{}", file.display());
        let Some(&from) = places.get(module.as_str()) else {
            problems.push(format!("{file}: module `{module}` stands in no layer of ARCHITECTURE.md"));
            continue;
        };
        for used in uses(source, path) {
            let shared = path.iter().zip(&used).take_while(|(a, b)| a == b).count();
            if shared == path.len() || shared == used.len() || !is_module(&used[..=shared]) {
                continue; // its own module, an ancestor, or an item rather than a module
            }
            if shared > 0 {
                let key = (used[..shared].to_vec(), path[shared].clone(), used[shared].clone());
                inside.entry(key).or_insert_with(|| file.clone());
                continue;
            }
            let Some(&to) = places.get(used[0].as_str()) else { continue };
            let relation = if to.stack != from.stack {
                "in another stack than"
            } else if to.layer == from.layer {
                "in the same layer as"
            } else if to.layer > from.layer {
                "in a higher layer than"
            } else {
                continue;
            };
            problems.push(format!(
                "{file} uses `{}` ({}), which stands {relation} `{module}`",
                used[0],
                file_of(&used[..1])
            ));
        }
    }
    for ((folder, from, to), file) in &inside {
        if reaches(&inside, folder, to, from) {
            let mut target = folder.clone();
            target.push(to.clone());
            problems.push(format!(
                "{file} uses `{}` ({}), which leads back to `{from}`: a circle inside `{}/`",
                target.join("::"),
                file_of(&target),
                folder.join("/")
            ));
        }
    }
    problems.sort();
    problems.dedup();
    problems
}

/// Whether module `from` of `folder` reaches module `to` by imports inside that folder.
fn reaches(inside: &BTreeMap<(Vec<String>, String, String), String>, folder: &[String], from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut next = vec![from.to_owned()];
    while let Some(module) = next.pop() {
        if module == to {
            return true;
        }
        if seen.insert(module.clone()) {
            next.extend(inside.keys().filter(|(f, a, _)| f == folder && *a == module).map(|(_, _, b)| b.clone()));
        }
    }
    false
}

/// Checks every crate ARCHITECTURE.md gives layers for, under the workspace `root`, and that every
/// workspace member has its line.
pub fn check(root: &Path) -> Result<Vec<String>, CheckError> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|source| CheckError::Read { path: path.to_owned(), source })
    };
    let text = read(&root.join("ARCHITECTURE.md"))?;
    let stacks = parse(&text)?;
    let crates: BTreeSet<&str> = stacks.iter().map(|stack| stack.krate.as_str()).collect();
    let mut problems = Vec::new();
    let members = crate::code_map::members(&read(&root.join("Cargo.toml"))?).unwrap_or_default();
    for member in members.iter().filter(|member| !crates.contains(member.as_str())) {
        problems.push(format!("workspace member `{member}` has no line in ARCHITECTURE.md's layers block"));
    }
    for krate in crates {
        let src = root.join(krate).join("src");
        let mut files = Vec::new();
        gauntlet::golden::walk(&src, &mut |file| {
            if file.extension().is_some_and(|ext| ext == "rs") {
                files.push(file.to_owned());
            }
        });
        let mut sources = Vec::new();
        for file in files {
            let source = read(&file)?;
            let relative = match file.strip_prefix(&src) {
                Ok(relative) => relative.to_owned(),
                Err(error) => return Err(CheckError::OutsideSrc { file, source: error }),
            };
            sources.push((relative, source));
        }
        problems.extend(check_sources(krate, &sources, &stacks));
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stacks() -> Vec<Stack> {
        parse("text\n```layers\nruntime: event ids < session < turn < acp\nruntime: bridge\n```\n").unwrap()
    }

    fn sources(files: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
        files.iter().map(|(path, source)| (PathBuf::from(path), (*source).to_owned())).collect()
    }

    fn at(path: &str) -> Vec<String> {
        path.split("::").map(str::to_owned).collect()
    }

    #[test]
    fn uses_are_every_crate_super_and_self_path_in_code() {
        let source = "use crate::event::{Data, object};\nuse crate::{ids, log::LogError};\n\
                      use crate::{\n    session::{Session, STATE_DIR},\n    self,\n};\n\
                      fn f() { crate::canonical::to_string(&x); }\n\
                      use super::{transcript::Envelope, Usage};\nuse super::super::acp;\n\
                      use self::inner::X;\n\
                      /// [`crate::turn`] is a doc link, not a use\n\
                      use gauntlet_agent::turn; // another crate\n\
                      #[cfg(test)]\nmod tests { use crate::acp; }\n";
        let found: Vec<String> =
            uses(source, &at("provider::dialect")).into_iter().map(|path| path.join("::")).collect();
        assert_eq!(
            found,
            [
                "",
                "acp",
                "canonical::to_string",
                "event::Data",
                "event::object",
                "ids",
                "log::LogError",
                "provider::Usage",
                "provider::dialect::inner::X",
                "provider::transcript::Envelope",
                "session::STATE_DIR",
                "session::Session",
            ]
        );
    }

    #[test]
    fn downward_uses_pass() {
        let files = sources(&[
            ("event.rs", "//! e"),
            ("turn.rs", "use crate::session::Session;\nuse crate::{event, ids};"),
            ("turn/inner.rs", "use crate::turn::x; use super::y;"),
            ("lib.rs", "pub mod acp; use crate::acp::serve;"),
        ]);
        assert_eq!(check_sources("runtime", &files, &stacks()), Vec::<String>::new());
    }

    #[test]
    fn an_upward_use_is_named_with_both_files() {
        let files = sources(&[("turn.rs", "//! t"), ("session.rs", "use crate::turn::prompt;")]);
        assert_eq!(
            check_sources("runtime", &files, &stacks()),
            ["runtime/src/session.rs uses `turn` (runtime/src/turn.rs), which stands in a higher layer than `session`"]
        );
    }

    #[test]
    fn a_circle_inside_a_folder_is_named_with_both_files() {
        let files = sources(&[
            ("session.rs", "//! s"),
            ("session/dialect.rs", "use super::responses::Decoder;\nuse super::Usage;"),
            ("session/responses.rs", "use crate::session::dialect::{Decode, Envelope};"),
            ("session/sse.rs", "//! a leaf both may use"),
        ]);
        assert_eq!(
            check_sources("runtime", &files, &stacks()),
            [
                "runtime/src/session/dialect.rs uses `session::responses` (runtime/src/session/responses.rs), which leads back to `dialect`: a circle inside `session/`",
                "runtime/src/session/responses.rs uses `session::dialect` (runtime/src/session/dialect.rs), which leads back to `responses`: a circle inside `session/`",
            ]
        );
    }

    #[test]
    fn a_longer_circle_through_nested_files_is_caught_and_parents_may_use_children() {
        let files = sources(&[
            ("turn.rs", "use self::a::A; use crate::turn::b::B;"),
            ("turn/a.rs", "use super::b::B; use super::Turn;"),
            ("turn/b.rs", "use super::c::C;"),
            ("turn/c/deep.rs", "use crate::turn::a::A;"),
            ("turn/c.rs", "mod deep;"),
        ]);
        let problems = check_sources("runtime", &files, &stacks());
        assert_eq!(problems.len(), 3, "{problems:#?}");
        assert!(
            problems[2].starts_with("runtime/src/turn/c/deep.rs uses `turn::a` (runtime/src/turn/a.rs)"),
            "{problems:#?}"
        );
        let acyclic = sources(&[
            ("turn.rs", "use self::a::A;"),
            ("turn/a.rs", "use super::b::B; use super::Turn;"),
            ("turn/b.rs", "//! b"),
        ]);
        assert_eq!(check_sources("runtime", &acyclic, &stacks()), Vec::<String>::new());
    }

    #[test]
    fn sideways_and_cross_stack_uses_and_unplaced_modules_fail() {
        let files = sources(&[
            ("event.rs", "use crate::ids::Clock;"),
            ("ids.rs", "//! i"),
            ("bridge/poll.rs", "use crate::session::Session;"),
            ("session.rs", "//! s"),
            ("extra.rs", "//! x"),
        ]);
        assert_eq!(
            check_sources("runtime", &files, &stacks()),
            [
                "runtime/src/bridge/poll.rs uses `session` (runtime/src/session.rs), which stands in another stack than `bridge`",
                "runtime/src/event.rs uses `ids` (runtime/src/ids.rs), which stands in the same layer as `event`",
                "runtime/src/extra.rs: module `extra` stands in no layer of ARCHITECTURE.md",
            ]
        );
    }

    #[test]
    fn a_missing_block_is_an_error() {
        assert_eq!(parse("# Architecture\n"), Err(BlockError::Missing));
        let empty = parse("```layers\nruntime: a < < b\n```").unwrap_err();
        assert_eq!(empty, BlockError::EmptyLayer { line: "runtime: a < < b".to_owned() });
        assert_eq!(empty.to_string(), "ARCHITECTURE.md layers: `runtime: a < < b` has an empty layer");
        let error = check(Path::new("/no/such/workspace")).unwrap_err();
        assert!(matches!(&error, CheckError::Read { path, .. } if path.ends_with("ARCHITECTURE.md")));
        assert!(error.to_string().starts_with("/no/such/workspace/ARCHITECTURE.md: "), "{error}");
    }
}
