//! `gauntlet`: thin glue from flags to [`gauntlet::run`], mapped to exit codes
//! (0 all identical, 1 something is not, 2 gauntlet itself failed).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use gauntlet::check::{self, CheckRun};
use gauntlet::cli::{Cli, Command};
use gauntlet::driver::reference::Reference;
use gauntlet::lifecycle::Family;
use gauntlet::lifecycle::adapter::Adapter;
use gauntlet::log_file::{self, LogReport};
use gauntlet::profile::{self, Network};
use gauntlet::report::progress::{Format, Progress};
use gauntlet::verdict::VerdictKind;
use gauntlet::{authoring, contract, golden, isolation, known_failures, report, run};

fn main() -> ExitCode {
    match dispatch(Cli::parse()) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("gauntlet: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Command::Run { filters, bless, format } => {
            let plan = cli.plan(*bless)?;
            // Each Turn scenario in every dialect, as `cargo test` plays it; filters match the
            // trial titles (`turn/partial-then-error [gemini]`).
            let selected: Vec<(String, std::path::PathBuf, run::Play)> = run::scenario_names(&plan)
                .into_iter()
                .flat_map(|(name, path)| {
                    run::plays(&name, &path).into_iter().map(move |play| (name.clone(), path.clone(), play))
                })
                .filter(|(_, _, play)| {
                    filters.is_empty() || filters.iter().any(|filter| play.title.contains(filter.as_str()))
                })
                .collect();
            anyhow::ensure!(
                !selected.is_empty(),
                "no scenario under {} matches {filters:?}",
                plan.scenarios().display()
            );
            let driver = Reference::default();
            let progress = Progress::new(*format, selected.iter().map(|(_, _, play)| play.title.as_str()));
            let mut verdicts = Vec::new();
            for (idx, (name, path, play)) in selected.iter().enumerate() {
                progress.start(idx, selected.len(), &play.title);
                let verdict = run::run_scenario_in(&plan, &driver, name, path, play.dialect);
                progress.finish(&verdict);
                verdicts.push(verdict);
            }
            progress.end(&verdicts);
            if *format == Format::Text {
                print!("\n{}", report::counts(&verdicts));
                print!("{}", report::findings(&verdicts));
            }
            // A play a dialect cannot express is skipped with its reason, not a failure.
            let all_identical =
                verdicts.iter().all(|verdict| matches!(verdict.kind, VerdictKind::Identical | VerdictKind::Skipped));
            Ok(if all_identical { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Command::Check {
            implementation,
            adapter,
            family,
            deadline_ms,
            filters,
            expectations,
            update_expectations,
            report_dir,
            markdown,
            no_isolation,
            jobs,
            format,
        } => {
            let jobs = jobs.map_or_else(
                || std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
                usize::from,
            );
            let plan = cli.plan(false)?;
            let names = run::scenario_names(&plan);
            let printer = Progress::new(*format, names.iter().map(|(name, _)| name.as_str()));
            let mut progress =
                |idx: usize, total: usize, name: &str, verdict: Option<&gauntlet::verdict::Verdict>| match verdict {
                    None => printer.start(idx, total, name),
                    Some(verdict) => printer.finish(verdict),
                };
            let isolate = |name: &str, wanted: bool| {
                wanted
                    && match isolation::enter_loopback_only() {
                        Ok(()) => true,
                        Err(why) => {
                            eprintln!("gauntlet: warning: {why}; {name} runs on the host network");
                            false
                        }
                    }
            };
            // What was checked: the run, its expectations file, the lifecycle family its report
            // is about (none for an agent), whether it keeps a gauntlet Log, and its report folder.
            let (run, expectations, known, about, logged, default_dir) = match (implementation, adapter, family) {
                (Some(implementation), _, _) => {
                    let profile = profile::load(implementation)?;
                    // An agent that cannot start is one error, not one fault per scenario.
                    profile.startable().map_err(anyhow::Error::msg)?;
                    let isolated = isolate(&profile.name, profile.network == Network::Loopback && !no_isolation);
                    let expectations = expectations.clone().unwrap_or_else(|| known_failures::path_for(implementation));
                    let known = known_failures::load(&expectations)?;
                    let run = check::check_jobs(&plan, &profile, &known, filters, isolated, jobs, &mut progress);
                    let dir = plan.root.join("target/gauntlet").join(&profile.name);
                    (run, Some(expectations), known, None, profile.log.is_some(), dir)
                }
                (None, Some(command), Some(family)) => {
                    let isolated = isolate("the adapter", !no_isolation);
                    let known = match expectations {
                        Some(path) => known_failures::load(path)?,
                        None => known_failures::KnownFailures::default(),
                    };
                    let mut adapter = Adapter::new(command);
                    adapter.deadline = Duration::from_millis(*deadline_ms);
                    let run = check::check_adapter(&plan, &adapter, *family, &known, filters, isolated, &mut progress);
                    anyhow::ensure!(!run.scenarios.is_empty(), "no {} scenario matches {filters:?}", family.as_str());
                    let dir = plan.root.join("target/gauntlet").join(format!("adapter-{}", family.as_str()));
                    (run, expectations.clone(), known, Some(*family), true, dir)
                }
                _ => anyhow::bail!("check needs --impl PROFILE, or --adapter CMD with --family"),
            };
            let registry =
                std::fs::read_to_string(plan.root.join("docs/contract.md")).context("reading docs/contract.md")?;
            let mut requirements = contract::parse(&registry).map_err(anyhow::Error::msg)?;
            requirements.retain(|requirement| Family::of_requirement(&requirement.id) == about);
            let verdicts = run.verdicts();
            let rows = report::requirements::rows(&requirements, &verdicts, logged);
            let dir = report_dir.clone().unwrap_or(default_dir);
            let mut markdown_text =
                report::requirements::markdown(&run.implementation, run.version.as_deref(), &rows, &verdicts);
            if !run.warnings.is_empty() {
                markdown_text.push_str("\n## Warnings\n\n");
                markdown_text.extend(run.warnings.iter().map(|warning| format!("- {warning}\n")));
            }
            write_reports(&dir, &run, &markdown_text)?;
            if let Some(path) = markdown {
                let parent = path.parent().filter(|parent| !parent.as_os_str().is_empty());
                parent
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .with_context(|| format!("creating {}", path.display()))?;
                std::fs::write(path, &markdown_text).with_context(|| format!("writing {}", path.display()))?;
            }
            if *update_expectations {
                let expectations =
                    expectations.as_ref().context("--update-expectations with --adapter needs --expectations FILE")?;
                let updated = known.updated(&known_failures::failures(&verdicts));
                std::fs::write(expectations, updated.to_toml(&run.implementation))
                    .with_context(|| format!("writing {}", expectations.display()))?;
                let note = format!(
                    "wrote {} ({} known failures): review every reason",
                    expectations.display(),
                    updated.failures.len()
                );
                // JSON output keeps stdout to JSON objects.
                if *format == Format::Json { eprintln!("{note}") } else { println!("{note}") }
            }
            printer.end(&verdicts);
            let (passed, failed) = run.counts();
            let code = if failed == 0 || *update_expectations { ExitCode::SUCCESS } else { ExitCode::from(1) };
            if *format == Format::Json {
                return Ok(code);
            }
            print!("\n{}", report::counts(&verdicts));
            print!("\n{}", report::requirements::text(&rows));
            print!("{}", summary(&run, expectations.as_deref(), &dir));
            println!("{passed} passed, {failed} failed");
            Ok(code)
        }
        Command::Accept => {
            let plan = cli.plan(false)?;
            let accepted = golden::accept(&plan.golden()).context("accepting pending goldens")?;
            for path in &accepted {
                println!("accepted {}", path.strip_prefix(&plan.root).unwrap_or(path).display());
            }
            if accepted.is_empty() {
                println!("no pending golden files under {}", plan.golden().display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Audit { logs, json } => {
            let (mut clean, mut unreadable) = (true, false);
            for path in logs {
                let file = match log_file::read(path) {
                    Ok(file) => file,
                    Err(error) => {
                        eprintln!("gauntlet: {error}");
                        unreadable = true;
                        continue;
                    }
                };
                let report = LogReport::of(&file);
                clean &= report.is_clean();
                if *json {
                    println!("{}", gauntlet_agent::canonical::to_string(&report));
                } else {
                    print!("{}", report.text());
                }
            }
            Ok(match (unreadable, clean) {
                (true, _) => ExitCode::from(2),
                (false, true) => ExitCode::SUCCESS,
                (false, false) => ExitCode::from(1),
            })
        }
        Command::New { name, from_log } => {
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
                    gauntlet::scenario::parse(&written.text, &path)?;
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
        Command::List => {
            for (name, _) in run::scenario_names(&cli.plan(false)?) {
                println!("{name}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Lowercase letters, digits and single dashes inside: a scenario file or family name.
fn is_kebab(part: &str) -> bool {
    !part.is_empty()
        && !part.starts_with('-')
        && !part.ends_with('-')
        && part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Writes `report.json`, `junit.xml` and `report.md` into `dir`.
fn write_reports(dir: &std::path::Path, run: &CheckRun, markdown: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let json = gauntlet_agent::canonical::to_string_pretty(run);
    for (name, text) in
        [("report.json", json), ("junit.xml", report::junit::junit(run)), ("report.md", markdown.to_owned())]
    {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// The findings of failing scenarios, the known failures and stale expectations.
fn summary(run: &CheckRun, expectations: Option<&std::path::Path>, dir: &std::path::Path) -> String {
    let expectations =
        expectations.map_or_else(|| "no expectations file".to_owned(), |path| path.display().to_string());
    let mut out = String::new();
    let failing = run.failing();
    let failing_verdicts: Vec<_> =
        run.verdicts().into_iter().filter(|verdict| failing.contains(&verdict.scenario.as_str())).collect();
    out.push_str(&report::findings(&failing_verdicts));
    if !run.comparison.expected.is_empty() {
        out.push_str(&format!("\n{} known failures (listed in {}):\n", run.comparison.expected.len(), expectations));
        for failure in &run.comparison.expected {
            out.push_str(&format!("  {} {}\n", failure.scenario, failure.requirement.as_deref().unwrap_or("(any)")));
        }
    }
    for failure in &run.comparison.unexpected {
        out.push_str(&format!(
            "\nunexpected failure: {} {}: {}\n",
            failure.scenario,
            failure.requirement.as_deref().unwrap_or("(fault or expectation)"),
            failure.message
        ));
    }
    for known in &run.comparison.stale {
        out.push_str(&format!(
            "\nstale expectation: {} {} passes now; remove it from {}\n",
            known.scenario,
            known.requirement.as_deref().unwrap_or("(any)"),
            expectations
        ));
    }
    for warning in &run.warnings {
        out.push_str(&format!("\nwarning: {warning}\n"));
    }
    let network = if run.isolated { "loopback-only network namespace" } else { "host network" };
    out.push_str(&format!("\n{} checked on the {network}; reports in {}\n", run.implementation, dir.display()));
    out
}
