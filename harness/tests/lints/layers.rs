//! The layer check: each crate's modules stand in the layers ARCHITECTURE.md lists, and a
//! module uses only modules of lower layers, so no import points up and none forms a cycle
//! (the tidy-test habit of rust-analyzer: a rule about the code, checked as an ordinary test).
//!
//! ARCHITECTURE.md holds the layers in a fenced `layers` block, one stack per line, bottom
//! first: `runtime: canonical ids < event < log`. A crate may have several stacks (the
//! runtime's monitor and bridge stand apart); modules of different stacks may not use each
//! other. A module is a top-level file or folder of `src/`; `lib.rs`, `main.rs` and `bin/`
//! are the crate's roots and may use anything. A dependency is any `crate::<module>`,
//! `super::` or `self::` path in code, not only `use` lines; comments and `#[cfg(test)]` code
//! (tests may reach up; a test-only file opens with `#![cfg(test)]`) are not code here.
//!
//! A line keyed by a module (`judge::judge: evidence < views < invariants::* < invariants`)
//! places the modules inside that one the same way, each file or folder of `src/judge/judge/`
//! a unit; the module's own file (`judge.rs`) is their root, above them all, and nothing inside
//! may use an item of it. `invariants::*` makes each file of `invariants/` a unit of its own in
//! that layer, so one may not use another (a rule never imports a rule), while `invariants`
//! alone is `invariants.rs` (the list of them), which stands above.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One stack of one crate: its layers, bottom first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stack {
    /// The crate's folder, e.g. `runtime`.
    pub krate: String,
    /// The module whose inside it places, e.g. `["judge"]`; empty for the crate's top level.
    pub inside: Vec<String>,
    /// Module names per layer, bottom first (`name::*`: each file of folder `name/` apart).
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
        let Some((key, layers)) = split_key(line) else {
            return Err(BlockError::NotAStack { line: line.to_owned() });
        };
        let layers: Vec<Vec<String>> =
            layers.split('<').map(|layer| layer.split_whitespace().map(str::to_owned).collect::<Vec<_>>()).collect();
        if layers.iter().any(Vec::is_empty) {
            return Err(BlockError::EmptyLayer { line: line.to_owned() });
        }
        let mut key = key.trim().split("::").map(str::to_owned);
        let krate = key.next().unwrap_or_default();
        stacks.push(Stack { krate, inside: key.collect(), layers });
    }
    Ok(stacks)
}

/// A stack line cut at the `:` that ends its key (`judge::judge: a < b`), not at a `::`.
fn split_key(line: &str) -> Option<(&str, &str)> {
    let bytes = line.as_bytes();
    let at = (0..bytes.len())
        .find(|&at| bytes[at] == b':' && bytes.get(at + 1) != Some(&b':') && (at == 0 || bytes[at - 1] != b':'))?;
    Some((&line[..at], &line[at + 1..]))
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
        .take_while(|line| !matches!(line.trim(), "#[cfg(test)]" | "#![cfg(test)]"))
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
    let own = stacks.iter().filter(|stack| stack.krate == krate);
    for (index, stack) in own.clone().filter(|stack| stack.inside.is_empty()).enumerate() {
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
    for stack in own.filter(|stack| !stack.inside.is_empty()) {
        let inside: Vec<(Vec<String>, String, &String)> = modules
            .iter()
            .map(|(path, file, source)| (path.clone(), format!("{krate}/src/{}", file.display()), *source))
            .collect();
        problems.extend(check_inside(stack, &inside, &file_of));
    }
    problems.sort();
    problems.dedup();
    problems
}

/// The problems of the files inside `stack.inside` against that stack: each file whose unit
/// stands in no layer, and each use of a unit of a higher or the same layer, or of an item of
/// the module's own file. `files` are `(module path, file, source)`; `file_of` names a module's
/// file.
fn check_inside(
    stack: &Stack,
    files: &[(Vec<String>, String, &String)],
    file_of: &dyn Fn(&[String]) -> String,
) -> Vec<String> {
    let depth = stack.inside.len();
    let is_module = |module: &[String]| files.iter().any(|(path, ..)| path.starts_with(module));
    let starred = |name: &str| stack.layers.iter().flatten().any(|unit| *unit == format!("{name}::*"));
    // A path's unit: `views`, or `invariants::no_retry` for a file of a starred folder; `None`
    // for an item of the module's own file.
    let unit_of = |path: &[String]| -> Option<String> {
        let name = path.get(depth)?;
        if starred(name) && path.len() > depth + 1 && is_module(&path[..depth + 2]) {
            return Some(format!("{name}::{}", path[depth + 1]));
        }
        is_module(&path[..=depth]).then(|| name.clone())
    };
    // A file of a starred folder stands where its folder's `name::*` does.
    let layer_of = |unit: &str| {
        let listed = unit.split_once("::").map_or_else(|| unit.to_owned(), |(folder, _)| format!("{folder}::*"));
        stack.layers.iter().position(|layer| layer.contains(&listed))
    };
    let shown = |unit: &str| format!("{}::{unit}", stack.inside.join("::"));
    let mut problems = Vec::new();
    for (path, file, source) in files.iter().filter(|(path, ..)| path.len() > depth && path.starts_with(&stack.inside))
    {
        let Some(from) = unit_of(path) else { continue };
        let Some(from_layer) = layer_of(&from) else {
            problems.push(format!("{file}: module `{}` stands in no layer of ARCHITECTURE.md", shown(&from)));
            continue;
        };
        for used in uses(source, path) {
            if used.len() <= depth || !used.starts_with(&stack.inside) {
                continue;
            }
            let Some(to) = unit_of(&used) else {
                problems.push(format!(
                    "{file} uses `{}`, an item of {}, which stands above everything inside it",
                    used.join("::"),
                    file_of(&stack.inside)
                ));
                continue;
            };
            let Some(to_layer) = layer_of(&to).filter(|_| to != from) else { continue };
            let relation = match to_layer.cmp(&from_layer) {
                std::cmp::Ordering::Less => continue,
                std::cmp::Ordering::Equal => "in the same layer as",
                std::cmp::Ordering::Greater => "in a higher layer than",
            };
            let target: Vec<String> = shown(&to).split("::").map(str::to_owned).collect();
            let folder = |unit: &str| unit.split_once("::").map(|(folder, _)| folder.to_owned());
            let why = match (folder(&from), folder(&to)) {
                (Some(a), Some(b)) if a == b => format!("is another file of `{}::*`, which stand apart", shown(&a)),
                _ => format!("stands {relation} `{}`", shown(&from)),
            };
            problems.push(format!("{file} uses `{}` ({}), which {why}", used.join("::"), file_of(&target)));
        }
    }
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

    /// Inside a module: a rule may use the readings below it, not another rule nor the list of
    /// rules; a reading may use no rule; nothing inside uses the module's own file.
    #[test]
    fn inside_a_module_a_rule_uses_no_rule_and_a_reading_no_rule_nor_the_list() {
        let stacks =
            parse("```layers\njudge: judge\njudge::judge: evidence < views < invariants::* < invariants\n```").unwrap();
        let files = sources(&[
            ("judge.rs", "use self::invariants::ALL;"),
            ("judge/evidence.rs", "//! e"),
            ("judge/views.rs", "use crate::judge::evidence::Evidence;\nuse super::invariants::ALL;"),
            ("judge/invariants.rs", "use self::a::INVARIANT;"),
            ("judge/invariants/a.rs", "use crate::judge::evidence::Evidence;\nuse super::b::helper;"),
            ("judge/invariants/b.rs", "use super::super::evidence::Evidence;\nuse crate::judge::Shared;"),
        ]);
        assert_eq!(
            check_sources("judge", &files, &stacks),
            [
                "judge/src/judge/invariants/a.rs uses `judge::invariants::b::helper` (judge/src/judge/invariants/b.rs), which is another file of `judge::invariants::*`, which stand apart",
                "judge/src/judge/invariants/b.rs uses `judge::Shared`, an item of judge/src/judge.rs, which stands above everything inside it",
                "judge/src/judge/views.rs uses `judge::invariants::ALL` (judge/src/judge/invariants.rs), which stands in a higher layer than `judge::views`",
            ]
        );
        let unplaced = sources(&[("judge.rs", "//! j"), ("judge/extra.rs", "//! x")]);
        assert_eq!(
            check_sources("judge", &unplaced, &stacks),
            ["judge/src/judge/extra.rs: module `judge::extra` stands in no layer of ARCHITECTURE.md"]
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
