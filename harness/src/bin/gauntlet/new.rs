//! `gauntlet new`: a scenario file, a commented skeleton or the reproduction of a Log.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use gauntlet::authoring;
use gauntlet::cli::Cli;
use gauntlet_judge::log_file;

/// Writes `scenarios/FAMILY/NAME.toml`, never over an existing file, in a corpus of one's own:
/// never into the one this binary carries, which the next version replaces.
pub fn new(cli: &Cli, name: &str, from_log: Option<&Path>) -> anyhow::Result<ExitCode> {
    let plan = cli.plan(false)?;
    let (family, stem) = name
        .split_once('/')
        .filter(|(family, stem)| [*family, *stem].iter().all(|part| is_kebab(part)))
        .with_context(|| format!("`{name}` is not FAMILY/NAME in lowercase kebab case"))?;
    let path = plan.scenarios().join(family).join(format!("{stem}.toml"));
    anyhow::ensure!(!path.exists(), "{} exists; pick another name", path.display());
    let (text, notes) = match from_log {
        None => (authoring::checked_skeleton(family, stem, &path)?, Vec::new()),
        Some(log) => {
            let file = log_file::read(log)?;
            let written = authoring::from_log::scenario(&file, &log.display().to_string());
            gauntlet_judge::scenario::parse(&written.text, &path)?;
            (written.text, written.notes)
        }
    };
    std::fs::create_dir_all(plan.scenarios().join(family))
        .with_context(|| format!("creating {}", plan.scenarios().join(family).display()))?;
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {}", path.strip_prefix(&plan.root).unwrap_or(&path).display());
    for note in notes {
        println!("note: {note}");
    }
    println!("next: gauntlet run --bless {name}, read golden/{name}/*.new, then gauntlet accept");
    Ok(ExitCode::SUCCESS)
}

/// Lowercase letters, digits and single dashes inside: a scenario file or family name.
fn is_kebab(part: &str) -> bool {
    !part.is_empty()
        && !part.starts_with('-')
        && !part.ends_with('-')
        && part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}
