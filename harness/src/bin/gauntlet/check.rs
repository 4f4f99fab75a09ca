//! `gauntlet check`: another implementation against the corpus, an ACP agent through its
//! profile or a lifecycle monitor or bridge through the adapter protocol; its reports are
//! written to a folder, and the run passes when it fails exactly where its expectations say.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use gauntlet::check::{self, CheckRun};
use gauntlet::cli::{CheckArgs, Cli};
use gauntlet::known_failures::{self, KnownFailures};
use gauntlet::lifecycle::adapter::Adapter;
use gauntlet::profile::{self, Network};
use gauntlet::report::progress::{Format, Progress};
use gauntlet::report::{self, CheckReport};
use gauntlet::run::Plan;
use gauntlet::{interrupt, isolation, run};
use gauntlet_judge::contract;
use gauntlet_judge::lifecycle::Family;
use gauntlet_judge::verdict::{Layer, Verdict, VerdictKind};

/// What was checked: the run, its expectations file, the lifecycle family its report is about
/// (none for an agent), and its default report folder.
struct Checked {
    run: CheckRun,
    expectations: Option<PathBuf>,
    known: KnownFailures,
    about: Option<Family>,
    default_dir: PathBuf,
}

/// Checks the implementation `args` name, writes its reports, and prints the summary; exit 0
/// when it failed only where expected (or `--update-expectations`), 1 otherwise.
pub fn check(cli: &Cli, args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let jobs = jobs(args);
    let plan = crate::corpus::plan(cli, false)?;
    if args.probe {
        return probe(&plan, args);
    }
    let printer = Progress::new(args.format, run::scenario_names(&plan).iter().map(|(name, _)| name.as_str()));
    let mut progress = |idx: usize, total: usize, name: &str, verdict: Option<&Verdict>| match verdict {
        None => printer.start(idx, total, name),
        Some(verdict) => printer.finish(verdict),
    };
    let checked = match (&args.implementation, &args.adapter, args.family) {
        (Some(profile), _, _) => agent(&plan, args, profile, jobs, &mut progress)?,
        (None, Some(command), Some(family)) => adapter(&plan, args, command, family, &mut progress)?,
        _ => anyhow::bail!("check needs --impl PROFILE, or --adapter CMD with --family"),
    };
    // The registry this gauntlet judges by, compiled in: a corpus (the one the binary carries
    // included) has no docs/ of its own.
    let mut requirements = contract::requirements().to_vec();
    requirements.retain(|requirement| Family::of_requirement(&requirement.id) == checked.about);
    let report = CheckReport::new(&checked.run, &requirements, checked.run.logged);
    let dir = args.report_dir.clone().unwrap_or_else(|| checked.default_dir.clone());
    let files = report::files(&report);
    write(&dir, &files)?;
    if let Some(path) = &args.markdown {
        let markdown = files.iter().find(|(name, _)| *name == "report.md").map(|(_, text)| text.as_str());
        write_file(path, markdown.unwrap_or_default())?;
    }
    if args.update_expectations {
        update_expectations(&checked, &report.verdicts, args.format)?;
    }
    printer.end(&report.verdicts);
    let (passed, failed) = checked.run.counts();
    let code = if failed == 0 || args.update_expectations { ExitCode::SUCCESS } else { ExitCode::from(1) };
    if args.format == Format::Text {
        print!("\n{}", report::counts(&report.verdicts));
        print!("\n{}", report::requirements::text(&report.rows));
        print!("{}", report::check_summary(&checked.run, checked.expectations.as_deref(), &dir));
        println!("{passed} passed, {failed} failed");
    }
    Ok(code)
}

/// Scenarios played at once: `--jobs`, else the number of cores.
pub fn jobs(args: &CheckArgs) -> usize {
    args.jobs.map_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get), usize::from)
}

/// An ACP agent, through its profile.
fn agent(
    plan: &Plan,
    args: &CheckArgs,
    path: &Path,
    jobs: usize,
    progress: &mut check::Progress<'_>,
) -> anyhow::Result<Checked> {
    let profile = profile::load(path)?;
    // An agent that cannot start is one error, not one fault per scenario.
    profile.startable()?;
    let isolated = isolate(&profile.name, profile.network == Network::Loopback && !args.no_isolation);
    listen();
    let expectations = args.expectations.clone().unwrap_or_else(|| known_failures::path_for(path));
    let known = known_failures::load(&expectations)?;
    let run = check::check_jobs(plan, &profile, &known, &args.filters, isolated, jobs, progress)?;
    let default_dir = plan.root.join("target/gauntlet").join(&profile.name);
    Ok(Checked { run, expectations: Some(expectations), known, about: None, default_dir })
}

/// A lifecycle monitor or bridge, through the adapter protocol.
fn adapter(
    plan: &Plan,
    args: &CheckArgs,
    command: &str,
    family: Family,
    progress: &mut check::Progress<'_>,
) -> anyhow::Result<Checked> {
    let isolated = isolate("the adapter", !args.no_isolation);
    listen();
    let known = match &args.expectations {
        Some(path) => known_failures::load(path)?,
        None => KnownFailures::default(),
    };
    let mut adapter = Adapter::new(command);
    adapter.deadline = Duration::from_millis(args.deadline_ms);
    let run = check::check_adapter(plan, &adapter, family, &known, &args.filters, isolated, progress)?;
    let default_dir = plan.root.join("target/gauntlet").join(format!("adapter-{}", family.as_str()));
    Ok(Checked { run, expectations: args.expectations.clone(), known, about: Some(family), default_dir })
}

/// Moves the process into a loopback-only network namespace when `wanted`; where the kernel
/// refuses, says so and runs on the host network.
pub fn isolate(name: &str, wanted: bool) -> bool {
    wanted
        && match isolation::enter_loopback_only() {
            Ok(()) => true,
            Err(why) => {
                eprintln!("gauntlet: warning: {why}; {name} runs on the host network");
                false
            }
        }
}

/// Hears SIGINT and SIGTERM ([`interrupt::listen`]), once the process is in its namespaces:
/// from then on they stop every agent, and the reports are written of what finished; where it
/// cannot, says so.
pub fn listen() {
    if let Err(error) = interrupt::listen() {
        eprintln!(
            "gauntlet: warning: cannot listen for SIGINT and SIGTERM ({error}): stopping gauntlet may leave agents running"
        );
    }
}

/// Rewrites the expectations file from this run, keeping the reasons already written.
fn update_expectations(checked: &Checked, verdicts: &[Verdict], format: Format) -> anyhow::Result<()> {
    let expectations =
        checked.expectations.as_ref().context("--update-expectations with --adapter needs --expectations FILE")?;
    let updated = checked.known.updated(&known_failures::failures(verdicts));
    write_file(expectations, &updated.to_toml(&checked.run.implementation))?;
    let note =
        format!("wrote {} ({} known failures): review every reason", expectations.display(), updated.failures.len());
    // JSON output keeps stdout to JSON objects.
    if format == Format::Json {
        eprintln!("{note}")
    } else {
        println!("{note}")
    }
    Ok(())
}

/// Writes each report file into `dir`.
pub fn write(dir: &Path, files: &[(&str, String)]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    files.iter().try_for_each(|(name, text)| write_file(&dir.join(name), text))
}

/// Writes `text` to `path`, creating its folder.
fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// `check --probe`: the clean completion alone, and what it shows of the profile: whether the
/// agent reached the mock, on which wire and model, and what its stderr said when it did not.
fn probe(plan: &Plan, args: &CheckArgs) -> anyhow::Result<ExitCode> {
    const SCENARIO: &str = "turn/clean-completion";
    let path = args.implementation.as_deref().context("--probe needs --impl PROFILE")?;
    let profile = profile::load(path)?;
    profile.startable()?;
    let isolated = isolate(&profile.name, profile.network == Network::Loopback && !args.no_isolation);
    listen();
    let filters = [SCENARIO.to_owned()];
    let run = check::check(plan, &profile, &KnownFailures::default(), &filters, isolated, &mut |_, _, _, _| {})?;
    let checked = run.scenarios.first().context("the clean completion is not in this shard")?;
    let files = checked.evidence.as_ref().map(|evidence| &evidence["files"]);
    let requests: usize = files
        .and_then(serde_json::Value::as_object)
        .map(|files| {
            files
                .iter()
                .filter(|(name, _)| name.starts_with("requests"))
                .filter_map(|(_, lines)| lines.as_array())
                .flatten()
                .filter(|request| !request["response_index"].is_null())
                .count()
        })
        .unwrap_or(0);
    let unmatched = files
        .and_then(|files| files["outcome.json"]["diagnostics"]["unmatched_requests"].as_array())
        .map_or(0, Vec::len);
    println!("{SCENARIO} on {}: {}", profile.name, checked.verdict.kind.as_str());
    println!("the profile says the wire is {}", profile.dialect.key());
    if requests + unmatched == 0 {
        println!(
            "the agent never reached the mock Provider: check how it takes {{provider_url}} (an argument, [env], a [[files]] config) and that it needs no login"
        );
        if let Some(tail) = checked.evidence.as_ref().and_then(|evidence| evidence["stderr_tail"].as_str()) {
            let last: Vec<&str> = tail.lines().rev().take(8).collect();
            println!("its stderr ended with:\n  {}", last.into_iter().rev().collect::<Vec<_>>().join("\n  "));
        }
    } else {
        println!("the agent sent {requests} request(s) the script answered and {unmatched} it could not place");
    }
    for model in &checked.other_models {
        println!(
            "it called the model `{model}`, which the profile's {{model}} never passed: pass {{model}} where the agent takes its model"
        );
    }
    // The goldens differ for any agent but the reference: what the agent did is the rest.
    for finding in checked.verdict.findings.iter().filter(|finding| finding.layer != Layer::Golden) {
        println!("- {}", finding.message.lines().next().unwrap_or_default());
    }
    Ok(if matches!(checked.verdict.kind, VerdictKind::Identical | VerdictKind::Conformant) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
