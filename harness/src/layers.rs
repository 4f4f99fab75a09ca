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

/// Reads the fenced `layers` block of ARCHITECTURE.md.
pub fn parse(architecture: &str) -> Result<Vec<Stack>, String> {
    let mut lines = architecture.lines().skip_while(|line| line.trim() != "```layers");
    if lines.next().is_none() {
        return Err("ARCHITECTURE.md has no ```layers block".to_owned());
    }
    let mut stacks = Vec::new();
    for line in lines.take_while(|line| line.trim() != "```") {
        let Some((krate, layers)) = line.split_once(':') else {
            return Err(format!("ARCHITECTURE.md layers: `{line}` is not `crate: a b < c`"));
        };
        let layers: Vec<Vec<String>> =
            layers.split('<').map(|layer| layer.split_whitespace().map(str::to_owned).collect::<Vec<_>>()).collect();
        if layers.iter().any(Vec::is_empty) {
            return Err(format!("ARCHITECTURE.md layers: `{line}` has an empty layer"));
        }
        stacks.push(Stack { krate: krate.trim().to_owned(), layers });
    }
    Ok(stacks)
}

/// The crate modules a source file uses: every `crate::<module>` path in its code.
pub fn imports(source: &str) -> BTreeSet<String> {
    let code: String = source
        .lines()
        .take_while(|line| line.trim() != "#[cfg(test)]")
        .map(|line| line.split_once("//").map_or(line, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n");
    let mut modules = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        let preceded_by_ident = rest[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_');
        rest = &rest[at + "crate::".len()..];
        if preceded_by_ident {
            continue; // e.g. `gauntlet_agent::...` is another crate
        }
        if let Some(group) = rest.strip_prefix('{') {
            modules.extend(group_heads(group));
        } else {
            modules.extend(head(rest));
        }
    }
    modules
}

/// The first identifier of a path, if it is one.
fn head(path: &str) -> Option<String> {
    let name: String = path.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!name.is_empty() && name != "self").then_some(name)
}

/// The head of each item of a `{a, b::c, d::{e}}` group, reading up to its closing brace.
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut item_start = true;
    for (index, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if item_start && !c.is_whitespace() => {
                item_start = false;
                heads.extend(head(&group[index..]));
            }
            _ => {}
        }
    }
    heads
}

/// The module a source file belongs to (`turn` for `turn.rs` and `turn/x.rs`); `None` for
/// the crate's roots.
fn module_of(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main" | "bin")).then(|| name.to_owned())
}

/// Checks the sources of one crate (paths relative to its `src/`) against its stacks; every
/// problem names the file that uses and the module it uses.
pub fn check_sources(krate: &str, sources: &[(PathBuf, String)], stacks: &[Stack]) -> Vec<String> {
    let mut places: BTreeMap<&str, Place> = BTreeMap::new();
    for (index, stack) in stacks.iter().filter(|stack| stack.krate == krate).enumerate() {
        for (layer, modules) in stack.layers.iter().enumerate() {
            for module in modules {
                places.insert(module, Place { stack: index, layer });
            }
        }
    }
    let file_of = |module: &str| -> String {
        sources
            .iter()
            .map(|(path, _)| path)
            .filter(|path| module_of(path).as_deref() == Some(module))
            .min_by_key(|path| path.components().count())
            .map_or_else(|| format!("{krate}/src/{module}"), |path| format!("{krate}/src/{}", path.display()))
    };
    let mut problems = Vec::new();
    for (path, source) in sources {
        let Some(module) = module_of(path) else { continue };
        let file = format!("{krate}/src/{}", path.display());
        let Some(&from) = places.get(module.as_str()) else {
            problems.push(format!("{file}: module `{module}` stands in no layer of ARCHITECTURE.md"));
            continue;
        };
        for used in imports(source) {
            if used == module {
                continue;
            }
            let Some(&to) = places.get(used.as_str()) else { continue }; // not a module: a macro or item at the root
            let relation = if to.stack != from.stack {
                "in another stack than"
            } else if to.layer == from.layer {
                "in the same layer as"
            } else if to.layer > from.layer {
                "in a higher layer than"
            } else {
                continue;
            };
            problems.push(format!("{file} uses `{used}` ({}), which stands {relation} `{module}`", file_of(&used)));
        }
    }
    problems.sort();
    problems.dedup();
    problems
}

/// Checks every crate ARCHITECTURE.md gives layers for, under the workspace `root`.
pub fn check(root: &Path) -> Result<Vec<String>, String> {
    let path = root.join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path).map_err(|error| format!("{}: {error}", path.display()))?;
    let stacks = parse(&text)?;
    let crates: BTreeSet<&str> = stacks.iter().map(|stack| stack.krate.as_str()).collect();
    let mut problems = Vec::new();
    for krate in crates {
        let src = root.join(krate).join("src");
        let mut files = Vec::new();
        crate::golden::walk(&src, &mut |file| {
            if file.extension().is_some_and(|ext| ext == "rs") {
                files.push(file.to_owned());
            }
        });
        let mut sources = Vec::new();
        for file in files {
            let source = std::fs::read_to_string(&file).map_err(|error| format!("{}: {error}", file.display()))?;
            let relative = file.strip_prefix(&src).map_err(|error| error.to_string())?.to_owned();
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

    #[test]
    fn imports_are_every_crate_path_in_code() {
        let source = "use crate::event::{Data, object};\nuse crate::{ids, log::LogError};\n\
                      use crate::{\n    session::{Session, STATE_DIR},\n    self,\n};\n\
                      fn f() { crate::canonical::to_string(&x); }\n\
                      /// [`crate::acp`] is a doc link, not a use\n\
                      use gauntlet_agent::turn; // another crate\n\
                      #[cfg(test)]\nmod tests { use crate::acp; }\n";
        let found: Vec<String> = imports(source).into_iter().collect();
        assert_eq!(found, ["canonical", "event", "ids", "log", "session"]);
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
        assert!(parse("# Architecture\n").is_err());
        assert!(parse("```layers\nruntime: a < < b\n```").is_err());
    }
}
