//! `gauntlet run`: the corpus against the reference runtime, each Turn scenario in every
//! dialect, as `cargo test` plays it.

use std::path::PathBuf;
use std::process::ExitCode;

use gauntlet::cli::Cli;
use gauntlet::driver::reference::Reference;
use gauntlet::interrupt;
use gauntlet::report::progress::{Format, Progress};
use gauntlet::{report, run as plays};
use gauntlet_judge::verdict::{Verdict, VerdictKind};

/// Runs the plays whose title contains a filter (all without one); exit 0 when every one is
/// identical to its goldens or skipped, 1 otherwise.
pub fn run(cli: &Cli, filters: &[String], bless: bool, format: Format) -> anyhow::Result<ExitCode> {
    let plan = crate::corpus::plan(cli, bless)?;
    // Filters match the trial titles (`turn/partial-then-error [gemini]`).
    let selected: Vec<(String, PathBuf, plays::Play)> = plays::scenario_names(&plan)
        .into_iter()
        .flat_map(|(name, path)| {
            plays::plays(&name, &path).into_iter().map(move |play| (name.clone(), path.clone(), play))
        })
        .filter(|(_, _, play)| filters.is_empty() || filters.iter().any(|filter| play.title.contains(filter.as_str())))
        .collect();
    plays::NothingSelected::unless(selected.len(), "scenario", &plan, filters)?;
    crate::check::listen();
    let driver = Reference::default();
    let progress = Progress::new(format, selected.iter().map(|(_, _, play)| play.title.as_str()));
    let mut verdicts = Vec::new();
    for (idx, (name, path, play)) in selected.iter().enumerate() {
        progress.start(idx, selected.len(), &play.title);
        // Once gauntlet is stopped, the plays not begun are interrupted (the one in play, in
        // process, ends first: a paused clock makes it quick).
        let verdict = match interrupt::requested() {
            Some(stop) => Verdict::interrupted(&play.title, &stop.to_string()),
            None => plays::run_play(&plan, &driver, name, path, play),
        };
        progress.finish(&verdict);
        verdicts.push(verdict);
    }
    progress.end(&verdicts);
    if format == Format::Text {
        print!("\n{}", report::counts(&verdicts));
        print!("{}", report::findings(&verdicts));
    }
    // A play a dialect cannot express is skipped with its reason, not a failure.
    let all_identical =
        verdicts.iter().all(|verdict| matches!(verdict.kind, VerdictKind::Identical | VerdictKind::Skipped));
    Ok(if all_identical { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
