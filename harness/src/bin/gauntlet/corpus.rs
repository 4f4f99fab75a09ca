//! The corpus a command works on, and `gauntlet accept`, `list` and `export`: the corpus's
//! files, read, renamed or written out.
//!
//! The binary carries the corpus it was built with (`build.rs` embeds `scenarios/` and
//! `golden/`): with no corpus at or above the current folder and none given, a command plays
//! that one, unpacked once into the user's cache, so an installed `gauntlet` checks an agent
//! from the agent's own repository (issue 33).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use gauntlet::cli::Cli;
use gauntlet::run::{Plan, RootError};
use gauntlet::{golden, run};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/corpus.rs"));
}

/// The corpus for `cli`: `--root` or `GAUNTLET_ROOT`, else the nearest at or above the current
/// folder, else the one this binary carries.
pub fn plan(cli: &Cli, bless: bool) -> anyhow::Result<Plan> {
    match cli.plan(bless) {
        Err(RootError::NotFound { start }) if !embedded::FILES.is_empty() => {
            anyhow::ensure!(
                !bless,
                "no corpus in {} or above it to bless into; `gauntlet export DIR` writes the one this binary carries",
                start.display()
            );
            let root = unpacked().context("unpacking the corpus this binary carries")?;
            Ok(Plan { shard: cli.shard, ..Plan::at(&root)? })
        }
        plan => Ok(plan?),
    }
}

/// The embedded corpus, unpacked into `$XDG_CACHE_HOME/gauntlet` (or `~/.cache/gauntlet`)
/// under a name that changes with its content, once: a later run, or a shard beside it, finds
/// it there.
fn unpacked() -> std::io::Result<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("gauntlet");
    let root = cache.join(format!("corpus-{}-{:016x}", env!("CARGO_PKG_VERSION"), fingerprint()));
    if root.join("scenarios").is_dir() {
        return Ok(root);
    }
    std::fs::create_dir_all(&cache)?;
    // Written beside, then renamed into place, so two shards starting at once never see half.
    let staging = tempfile::tempdir_in(&cache)?;
    write_files(staging.path())?;
    match std::fs::rename(staging.path(), &root) {
        Ok(()) => {}
        Err(_) if root.join("scenarios").is_dir() => {} // another process won the race
        Err(error) => return Err(error),
    }
    Ok(root)
}

/// FNV-1a over the embedded paths and bytes.
fn fingerprint() -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, bytes) in embedded::FILES {
        for byte in name.bytes().chain([0]).chain(bytes.iter().copied()) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// Writes every embedded file under `root`.
fn write_files(root: &Path) -> std::io::Result<()> {
    for (name, bytes) in embedded::FILES {
        let path = root.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, bytes)?;
    }
    Ok(())
}

/// Writes the corpus this binary carries into `dir`, its marker (`run::CORPUS_MARKER`, under
/// `scenarios/`) with it, so a command run inside `dir` finds it.
pub fn export(dir: &Path) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(!embedded::FILES.is_empty(), "this gauntlet was built without a corpus to export");
    anyhow::ensure!(!dir.join("scenarios").exists(), "{} holds a corpus already", dir.display());
    write_files(dir).with_context(|| format!("writing the corpus into {}", dir.display()))?;
    println!("wrote {} files of the corpus into {}", embedded::FILES.len(), dir.display());
    Ok(ExitCode::SUCCESS)
}

/// Renames every pending `<file>.new` golden over its golden.
pub fn accept(cli: &Cli) -> anyhow::Result<ExitCode> {
    let plan = plan(cli, false)?;
    let accepted = golden::accept(&plan.golden()).context("accepting pending goldens")?;
    for path in &accepted {
        println!("accepted {}", path.strip_prefix(&plan.root).unwrap_or(path).display());
    }
    if accepted.is_empty() {
        println!("no pending golden files under {}", plan.golden().display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints every scenario name.
pub fn list(cli: &Cli) -> anyhow::Result<ExitCode> {
    for (name, _) in run::scenario_names(&plan(cli, false)?) {
        println!("{name}");
    }
    Ok(ExitCode::SUCCESS)
}
