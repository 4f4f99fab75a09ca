//! The conformance suite: one libtest-mimic trial per scenario file, named by its path
//! (`turn/partial-then-error`), plus the corpus checks: the contract registry covers every
//! MUST, no pending golden is left behind, and no golden folder lacks its scenario.
//!
//! `GAUNTLET_BLESS=1 cargo test -p gauntlet --test conformance` writes pending goldens for
//! review; `cargo run -p gauntlet -- accept` accepts them. CI (`CI` set) never writes.

mod generated;

use std::path::{Path, PathBuf};

use gauntlet::driver::Driver;
use gauntlet::driver::external::External;
use gauntlet::driver::reference::Reference;
use gauntlet::golden;
use gauntlet::known_failures::KnownFailures;
use gauntlet::lifecycle::adapter::Adapter;
use gauntlet::profile::{self, Profile};
use gauntlet::run::{self, Plan};
use gauntlet::{campaign, check};
use gauntlet_judge::lifecycle::Family;
use gauntlet_judge::scenario::AcpVersion;
use gauntlet_judge::verdict::{Layer, Verdict, VerdictKind};
use gauntlet_judge::{contract, scenario};
use gauntlet_mock_provider::Dialect;
use libtest_mimic::{Arguments, Failed, Trial};

#[path = "support/committed_reports.rs"]
mod committed_reports;
#[path = "conformance/crash.rs"]
mod crash;
#[path = "conformance/fuzz.rs"]
mod fuzz;

fn main() {
    let args = Arguments::from_args();
    let mut plan = Plan::repository();
    plan.bless =
        std::env::var_os("GAUNTLET_BLESS").is_some_and(|value| value == "1") && std::env::var_os("CI").is_none();
    let names = run::scenario_names(&plan);
    // Every Turn scenario in every dialect the mock and the runtime speak: the same Log,
    // outcome and ACP goldens, the dialect's own requests golden.
    let mut trials: Vec<Trial> = Vec::new();
    for (name, path) in &names {
        for play in run::plays(name, path) {
            let (plan, name, path) = (plan.clone(), name.clone(), path.clone());
            let skipped = play.skipped;
            let trial = Trial::test(play.title.clone(), move || scenario_trial(&plan, &name, &path, &play));
            trials.push(trial.with_kind("scenario").with_ignored_flag(skipped));
        }
    }
    for name in PROCESS_PARITY {
        if let Some((_, path)) = names.iter().find(|(scenario, _)| scenario == name) {
            for dialect in run::CORPUS_DIALECTS {
                let path = path.clone();
                let trial = Trial::test(format!("process/{}", run::trial_name(name, dialect)), move || {
                    process_trial(&path, dialect, AcpVersion::V1)
                });
                trials.push(trial.with_kind("process"));
            }
            // The same agent process over ACP v2, in the file's dialect.
            let path = path.clone();
            let trial = Trial::test(format!("process/{name} [acp v2]"), move || {
                process_trial(&path, Dialect::Responses, AcpVersion::V2)
            });
            trials.push(trial.with_kind("process"));
        }
    }
    for target in &fuzz::TARGETS {
        let root = plan.root.clone();
        trials.push(
            Trial::test(format!("fuzz/{}", target.name), move || fuzz::run(target, &root).map_err(Failed::from))
                .with_kind("fuzz"),
        );
    }
    let root = plan.root.clone();
    trials.push(Trial::test("cli/corpus-root-from-current-folder", move || cli_root(&root)).with_kind("cli"));
    trials.push(
        Trial::test("crash/kill-9-mid-turn-then-reload", || {
            crash::kill_nine(Path::new(env!("CARGO_BIN_EXE_gauntlet-agent"))).map_err(Failed::from)
        })
        .with_kind("crash"),
    );
    let root = plan.root.clone();
    trials.push(Trial::test("check/wrong-dialect", move || wrong_dialect(&root)).with_kind("check"));
    let root = plan.root.clone();
    trials.push(Trial::test("check/gauntlet-agent", move || reference_check(&root)).with_kind("check"));
    let root = plan.root.clone();
    trials.push(Trial::test("check/jobs-parity", move || jobs_parity(&root)).with_kind("check"));
    for (fault, evidence) in FAULTS {
        let root = plan.root.clone();
        trials.push(
            Trial::test(format!("check/fault/{fault}"), move || fault_check(&root, fault, evidence)).with_kind("check"),
        );
    }
    let root = plan.root.clone();
    trials.push(Trial::test("check/liar", move || liar_check(&root)).with_kind("check"));
    for bug in BUGS {
        let root = plan.root.clone();
        trials.push(
            Trial::test(format!("check/buggy/{}", bug.name), move || buggy_check(&root, &bug)).with_kind("check"),
        );
    }
    let root = plan.root.clone();
    trials.push(Trial::test("check/skips-images-undeclared", move || skips_images(&root)).with_kind("check"));
    let root = plan.root.clone();
    trials.push(Trial::test("check/delegation-honest", move || delegation_honest(&root)).with_kind("check"));
    let root = plan.root.clone();
    trials.push(Trial::test("check/contains-a-detached-daemon", move || contains_daemon(&root)).with_kind("check"));
    for (name, in_probe) in
        [("check/contains-a-daemon-that-clears-its-environment", false), ("check/contains-the-version-probe", true)]
    {
        let root = plan.root.clone();
        trials.push(Trial::test(name, move || contains_escaper(&root, in_probe)).with_kind("check"));
    }
    let root = plan.root.clone();
    trials.push(Trial::test("check/campaign/combination-bug", move || combination_bug(&root)).with_kind("check"));
    let root = plan.root.clone();
    trials.push(Trial::test("check/adapter/gauntlet-lifecycle", move || reference_adapter(&root)).with_kind("check"));
    let root = plan.root.clone();
    trials.push(Trial::test("check/adapter/wrong-monitor-in-python", move || wrong_monitor(&root)).with_kind("check"));
    for (fault, evidence) in ADAPTER_FAULTS {
        let root = plan.root.clone();
        trials.push(
            Trial::test(format!("check/adapter/fault/{fault}"), move || adapter_fault(&root, fault, evidence))
                .with_kind("check"),
        );
    }
    let root = plan.root.clone();
    trials.push(Trial::test("corpus/no-pending-goldens", move || no_pending(&root)).with_kind("corpus"));
    let corpus = names;
    let root = plan.root.clone();
    trials.push(Trial::test("corpus/no-orphan-goldens", move || no_orphans(&root, &corpus)).with_kind("corpus"));
    let root = plan.root.clone();
    trials.push(
        Trial::test("corpus/reports-list-the-corpus", move || reports_list_the_corpus(&root)).with_kind("corpus"),
    );
    let root = plan.root.clone();
    trials.push(Trial::test("generated/seeds", move || Ok(generated::trial(&root)?)).with_kind("generated"));
    libtest_mimic::run(&args, trials).exit();
}

/// Scenarios also run through the built `gauntlet-agent --dialect D` binary over real pipes,
/// with `mock-provider`'s server speaking D on a real loopback port, in every corpus dialect,
/// and compared with the in-process run: clean completion, partial failure, a tool call, a
/// cancel and a malformed client line.
const PROCESS_PARITY: [&str; 5] = [
    "turn/clean-completion",
    "turn/partial-then-error",
    "turn/tool-call-then-answer",
    "acp/cancel-mid-stream",
    "acp/malformed-line",
];

fn process_trial(path: &std::path::Path, dialect: Dialect, acp: AcpVersion) -> Result<(), Failed> {
    let scenario = scenario::load(path).map_err(|error| error.to_string())?.in_dialect(dialect)?.in_acp(acp)?;
    let agent = External::reference_agent(std::path::Path::new(env!("CARGO_BIN_EXE_gauntlet-agent")));
    let process = agent.drive(&scenario);
    let in_process = Reference::default().drive(&scenario);
    if !process.faults.is_empty() {
        return Err(format!("the agent process failed:\n{}", process.faults.join("\n")).into());
    }
    process
        .same_conversation(&in_process)
        .map_err(|difference| format!("{difference}\nprocess: {process:#?}\nin process: {in_process:#?}").into())
}

/// An agent that speaks Chat Completions checked under a profile that says `responses`: every
/// scenario it plays is `error`, and the finding names both dialects.
fn wrong_dialect(root: &Path) -> Result<(), Failed> {
    let mut agent = External::reference_agent(Path::new(env!("CARGO_BIN_EXE_gauntlet-agent")));
    agent.dialect = Some(Dialect::Responses);
    for arg in &mut agent.args {
        if arg.starts_with("--dialect=") {
            *arg = "--dialect=chat_completions".to_owned();
        }
    }
    let plan = Plan { root: root.to_owned(), bless: false, shard: None };
    let path = plan.scenarios().join("turn/clean-completion.toml");
    let verdict = run::run_scenario(&plan, &agent, "turn/clean-completion", &path);
    let expected = "the agent called POST /v1/chat/completions (OpenAI Chat Completions); its profile says responses";
    if verdict.kind != VerdictKind::Error || !verdict.findings.iter().any(|finding| finding.message.contains(expected))
    {
        return Err(format!("expected an error naming both dialects, got {:#?}", verdict).into());
    }
    // A requirement the run gave no evidence for is `not judged`, never `pass`.
    let registry = std::fs::read_to_string(root.join("docs/contract.md")).map_err(|error| error.to_string())?;
    let requirements = contract::parse(&registry)?;
    let rows = gauntlet::report::requirements::rows(&requirements, std::slice::from_ref(&verdict), false);
    let passed: Vec<&str> = rows
        .iter()
        .filter(|row| row.status == gauntlet::report::requirements::Status::Pass)
        .map(|row| row.id.as_str())
        .collect();
    if !passed.is_empty() {
        return Err(format!("requirements pass on a run with no evidence: {passed:?}").into());
    }
    Ok(())
}

/// The reference agent's profile, run on the built binary.
fn reference_profile(root: &Path) -> Result<Profile, Failed> {
    let mut profile =
        profile::load(&root.join("harness/implementations/gauntlet-agent.toml")).map_err(|error| error.to_string())?;
    profile.command = env!("CARGO_BIN_EXE_gauntlet-agent").to_owned();
    Ok(profile)
}

fn quiet(_: usize, _: usize, _: &str, _: Option<&Verdict>) {}

/// The profile of a fixture agent, `harness/tests/fixtures/agents/<name>.toml`.
fn fixture(root: &Path, name: &str) -> Result<Profile, Failed> {
    Ok(profile::load(&root.join(format!("harness/tests/fixtures/agents/{name}.toml")))
        .map_err(|error| error.to_string())?)
}

/// `scenario` of the corpus played on `profile`'s agent, with no expectations: its one verdict.
fn check_one(root: &Path, profile: &Profile, scenario: &str) -> Result<gauntlet::check::Checked, Failed> {
    let plan = Plan { root: root.to_owned(), bless: false, shard: None };
    let filters = [scenario.to_owned()];
    let run = check::check(&plan, profile, &KnownFailures::default(), &filters, false, &mut quiet)?;
    let verdicts = format!("{:#?}", run.verdicts());
    match <[gauntlet::check::Checked; 1]>::try_from(run.scenarios) {
        Ok([checked]) => Ok(checked),
        Err(_) => Err(verdicts.into()),
    }
}

/// The external path can never rot: the reference agent, checked like any other implementation
/// through its profile, is `identical` on every scenario it supports.
fn reference_check(root: &Path) -> Result<(), Failed> {
    let plan = Plan { root: root.to_owned(), bless: false, shard: None };
    let run = check::check(&plan, &reference_profile(root)?, &KnownFailures::default(), &[], false, &mut quiet)?;
    let unlike: Vec<String> = run
        .scenarios
        .iter()
        .filter(|checked| !matches!(checked.verdict.kind, VerdictKind::Identical | VerdictKind::Skipped))
        .map(|checked| {
            let findings: Vec<String> = checked.verdict.findings.iter().map(ToString::to_string).collect();
            format!("{} is {}:\n{}", checked.verdict.scenario, checked.verdict.kind.as_str(), findings.join("\n"))
        })
        .collect();
    if unlike.is_empty() && run.counts().1 == 0 { Ok(()) } else { Err(unlike.join("\n\n").into()) }
}

/// `--jobs 4` gives the verdicts `--jobs 1` gives, in the same order: scenario, verdict and
/// every rule finding (only wall times differ), for the reference agent's profile. On real
/// time, a scripted pause scaled to a few milliseconds can let an interleaving change under the
/// load of four jobs (acp/prompt-while-busy's refusal and its stream's second chunk), which is
/// a golden difference only: `identical` and `conformant` count as one verdict here, and golden
/// findings are left out.
fn jobs_parity(root: &Path) -> Result<(), Failed> {
    let plan = Plan { root: root.to_owned(), bless: false, shard: None };
    let profile = reference_profile(root)?;
    let known = KnownFailures::default();
    let judged = |jobs: usize| -> Result<Vec<(String, VerdictKind, Vec<String>)>, Failed> {
        let run = check::check_jobs(&plan, &profile, &known, &[], false, jobs, &mut quiet)?;
        Ok(run
            .verdicts()
            .into_iter()
            .map(|verdict| {
                let kind = if verdict.kind == VerdictKind::Conformant { VerdictKind::Identical } else { verdict.kind };
                let rules = verdict.findings.iter().filter(|finding| finding.layer != Layer::Golden);
                (verdict.scenario, kind, rules.map(ToString::to_string).collect())
            })
            .collect())
    };
    let (one, four) = (judged(1)?, judged(4)?);
    if one.is_empty() {
        return Err("no scenario ran".into());
    }
    if one == four { Ok(()) } else { Err(format!("--jobs 1: {one:#?}\n--jobs 4: {four:#?}").into()) }
}

/// `gauntlet` finds its corpus from the current folder upward or from `GAUNTLET_ROOT`, never
/// from where it was built: run in a copy of one scenario, it lists and blesses that copy only.
fn cli_root(repository: &Path) -> Result<(), Failed> {
    let dir = tempfile::tempdir().map_err(|error| error.to_string())?;
    let corpus = dir.path().join("corpus");
    let name = "turn/clean-completion";
    std::fs::create_dir_all(corpus.join("scenarios/turn")).map_err(|error| error.to_string())?;
    std::fs::create_dir_all(corpus.join("nested/deeper")).map_err(|error| error.to_string())?;
    std::fs::copy(repository.join(format!("scenarios/{name}.toml")), corpus.join(format!("scenarios/{name}.toml")))
        .map_err(|error| error.to_string())?;
    std::fs::copy(repository.join(run::CORPUS_MARKER), corpus.join(run::CORPUS_MARKER))
        .map_err(|error| error.to_string())?;
    let gauntlet = |current: &Path, args: &[&str], root: Option<&Path>| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_gauntlet"));
        command
            .args(args)
            .current_dir(current)
            .env_remove("GAUNTLET_ROOT")
            .env("XDG_CACHE_HOME", dir.path().join("cache"));
        if let Some(root) = root {
            command.env("GAUNTLET_ROOT", root);
        }
        command.output().map_err(|error| error.to_string())
    };
    let listed = gauntlet(&corpus.join("nested/deeper"), &["list"], None)?;
    if String::from_utf8_lossy(&listed.stdout) != format!("{name}\n") {
        return Err(format!("`gauntlet list` in the copy listed: {listed:?}").into());
    }
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).map_err(|error| error.to_string())?;
    let by_env = gauntlet(&outside, &["list"], Some(&corpus))?;
    if String::from_utf8_lossy(&by_env.stdout) != format!("{name}\n") {
        return Err(format!("`GAUNTLET_ROOT=<copy> gauntlet list` listed: {by_env:?}").into());
    }
    if !dir.path().ancestors().any(|folder| folder.join(run::CORPUS_MARKER).is_file()) {
        // Outside any corpus, the one the binary carries: the whole corpus, not the copy.
        let carried = gauntlet(&outside, &["list"], None)?;
        let names = String::from_utf8_lossy(&carried.stdout).lines().count();
        if !carried.status.success() || names < 10 {
            return Err(format!("outside any corpus, `gauntlet list` gave {carried:?}").into());
        }
    }
    // Blessing writes the copy's pending goldens, and nothing in the repository it was built from.
    let before = golden::pending(&repository.join("golden"));
    let blessed = gauntlet(&corpus, &["run", "--bless"], None)?;
    // Log, outcome, two ACP transcripts per protocol version, and a requests file per
    // dialect: 2 + 4 + 4.
    if blessed.status.code() != Some(1) || golden::pending(&corpus.join("golden")).len() != 10 {
        return Err(format!("`gauntlet run --bless` in the copy gave {blessed:?}").into());
    }
    if golden::pending(&repository.join("golden")) != before {
        return Err("blessing a copy wrote pending goldens into the repository".into());
    }
    Ok(())
}

/// Faulty agents and the evidence their scenarios' errors must show (harness/tests/fixtures/agents).
const FAULTS: [(&str, &str); 5] = [
    ("crash", "fatal: no configuration found"),
    ("hang", "no message from the agent within 1000 ms while waiting for the answer to initialize"),
    ("not-json", "not JSON-RPC: Starting agent v1.0"),
    ("flood", "more than 8388608 bytes (flooding)"),
    ("survivor", "ignored its input closing and SIGTERM for 200 ms each, and was killed"),
];

/// Processes whose command line is `sleep <mark>`: what `survivor.sh` (313) or the hanging
/// adapter (317) leave if their group survives.
fn marked_sleepers(mark: &str) -> usize {
    let cmdline_of_mark = format!("sleep\x00{mark}\x00").into_bytes();
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    entries
        .flatten()
        .filter(|entry| {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            cmdline == cmdline_of_mark
        })
        .filter(|entry| {
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            !stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .count()
}

/// An agent whose daemon leaves its process group and session (`setsid`) leaves nothing
/// running once its scenario ends: the daemon is killed and the report warns with its command
/// line; the agent's verdict is its own (issue 33).
fn contains_daemon(root: &Path) -> Result<(), Failed> {
    let plan = Plan { root: root.to_owned(), bless: false, shard: None };
    let profile = fixture(root, "daemon")?;
    let filters = ["turn/clean-completion".to_owned()];
    let run = check::check(&plan, &profile, &KnownFailures::default(), &filters, false, &mut quiet)?;
    if marked_sleepers("319") > 0 {
        return Err("the daemon of the agent outlived the check".into());
    }
    let warned = run.warnings.iter().any(|warning| {
        warning.starts_with("turn/clean-completion: processes still running when it ended")
            && warning.contains("`sleep 319`")
    });
    if !warned || run.verdicts().iter().any(|verdict| verdict.kind == VerdictKind::Error) {
        return Err(format!(
            "no warning naming `sleep 319`: {:?}
{:#?}",
            run.warnings,
            run.verdicts()
        )
        .into());
    }
    Ok(())
}

/// A daemon that leaves its session and group, clears its environment (`env -i`) and forks
/// again, started by a fixture agent written here (outside the repository) or, `in_probe`, by
/// its profile's `version` command: nothing of it runs after the check, and the report names
/// each process killed (issue 40). Without a PID namespace or a cgroup (the mark alone, which
/// such a daemon sheds) there is nothing to prove.
fn contains_escaper(root: &Path, in_probe: bool) -> Result<(), Failed> {
    if gauntlet::driver::containment::Method::here() == gauntlet::driver::containment::Method::MarkedSweep {
        eprintln!("no PID namespace nor cgroup here: the environment mark alone cannot hold this daemon");
        return Ok(());
    }
    let (first, second) = if in_probe { (4713, 4714) } else { (4711, 4712) };
    let dir = tempfile::tempdir().map_err(|error| error.to_string())?;
    // The agent (or the version command) goes on once the daemon has forked again.
    let ready = dir.path().join("ready");
    let daemon = format!(
        "setsid env -i /bin/sh -c '(sleep {first} &); : > {ready}; exec sleep {second}' </dev/null >/dev/null 2>&1 &\nwhile [ ! -e {ready} ]; do sleep 0.01; done",
        ready = ready.display()
    );
    let (agent, version) = if in_probe { (String::new(), daemon) } else { (daemon, String::new()) };
    let write =
        |name: &str, text: String| std::fs::write(dir.path().join(name), text).map_err(|error| error.to_string());
    write("agent.sh", format!("{agent}\nexec sleep 600\n"))?;
    write("version.sh", format!("{version}\necho escaper 1.0\n"))?;
    write(
        "escaper.toml",
        "name = \"escaper\"\ncommand = \"/bin/sh\"\nargs = [\"{profile_dir}/agent.sh\"]\nversion = [\"/bin/sh\", \"{profile_dir}/version.sh\"]\nnetwork = \"host\"\npatience_ms = 1000\ndeadline_ms = 10000\ngrace_ms = 200\n".to_owned(),
    )?;
    let profile = profile::load(&dir.path().join("escaper.toml")).map_err(|error| error.to_string())?;
    let plan = Plan { root: root.to_owned(), bless: false, shard: None };
    let filters = ["turn/clean-completion".to_owned()];
    let run = check::check(&plan, &profile, &KnownFailures::default(), &filters, false, &mut quiet)?;
    let left = marked_sleepers(&first.to_string()) + marked_sleepers(&second.to_string());
    if left > 0 {
        return Err(format!("{left} processes of the daemon outlived the check").into());
    }
    let source = if in_probe { "the version command: " } else { "turn/clean-completion: " };
    // Named as they were when killed: the daemon may not have become `sleep` yet.
    let warned =
        run.warnings.iter().any(|warning| warning.starts_with(source) && warning.contains(&format!("sleep {second}")));
    if !warned || run.origin.version.as_deref() != Some("escaper 1.0") {
        return Err(format!(
            "the daemon's processes are not named: {:?} (version {:?})",
            run.warnings, run.origin.version
        )
        .into());
    }
    Ok(())
}

/// A faulty agent is that scenario's `error`, with evidence, and the run goes on to the next
/// scenario; no process it started survives the check.
fn fault_check(root: &Path, fault: &str, evidence: &str) -> Result<(), Failed> {
    let plan = Plan { root: root.to_owned(), bless: false, shard: None };
    let profile = fixture(root, fault)?;
    let filters = ["turn/clean-completion".to_owned(), "turn/partial-then-error".to_owned()];
    let run = check::check(&plan, &profile, &KnownFailures::default(), &filters, false, &mut quiet)?;
    if run.scenarios.len() != 2 {
        return Err(format!("{fault}: {} scenarios ran, not 2", run.scenarios.len()).into());
    }
    every_error_shows(fault, &run.verdicts(), evidence)?;
    if fault == "survivor" && marked_sleepers("313") > 0 {
        return Err("processes of the survivor agent outlived the check".into());
    }
    if run.counts() != (0, 2) {
        return Err(format!("{fault}: expected 0 passed, 2 failed, got {:?}", run.counts()).into());
    }
    Ok(())
}

/// Every verdict is an `error` whose findings show `evidence`.
fn every_error_shows(fault: &str, verdicts: &[Verdict], evidence: &str) -> Result<(), Failed> {
    for verdict in verdicts {
        let text: Vec<String> = verdict.findings.iter().map(ToString::to_string).collect();
        let text = text.join("\n");
        if verdict.kind != VerdictKind::Error || !text.contains(evidence) {
            return Err(format!(
                "{fault}: {} is {}, expected error with {evidence:?}:\n{text}",
                verdict.scenario,
                verdict.kind.as_str()
            )
            .into());
        }
    }
    Ok(())
}

/// An agent that never calls its Provider and answers `end_turn` is caught on the wire alone;
/// the scripted responses it never asked for are reported as such (MOCK-UNPLACED).
fn liar_check(root: &Path) -> Result<(), Failed> {
    let plan = Plan { root: root.to_owned(), bless: false, shard: None };
    let profile = fixture(root, "liar")?;
    let filters = ["turn/partial-then-error".to_owned(), "acp/cancel-mid-stream".to_owned()];
    let run = check::check(&plan, &profile, &KnownFailures::default(), &filters, false, &mut quiet)?;
    let [cancel, partial] = &run.scenarios[..] else { return Err(format!("{:#?}", run.verdicts()).into()) };
    if cancel.verdict.kind != VerdictKind::Skipped {
        return Err(format!("a cancel scenario ran without the cancel capability: {:?}", cancel.verdict).into());
    }
    let ids: Vec<&str> = partial.verdict.findings.iter().filter_map(|finding| finding.requirement.as_deref()).collect();
    if partial.verdict.kind != VerdictKind::Nonconformant
        || !ids.contains(&"ACP-STOP-REASON")
        || !ids.contains(&"MOCK-UNPLACED")
    {
        return Err(format!("the liar was not caught: {:#?}", partial.verdict).into());
    }
    Ok(())
}

/// A real agent with one bug (harness/tests/fixtures/agents/buggy.py), the scenario that shows
/// it, the requirement that must catch it, and the evidence its finding must show.
struct Bug {
    name: &'static str,
    scenario: &'static str,
    requirement: &'static str,
    evidence: &'static str,
}

const BUGS: [Bug; 15] = [
    Bug {
        name: "late",
        scenario: "turn/two-turn-conversation",
        requirement: "ACP-ANSWER-IN-TURN",
        evidence: "turn 2 was shown turn 1's answer \"Seven.\"",
    },
    Bug {
        name: "silent",
        scenario: "turn/clean-completion",
        requirement: "ACP-ANSWER-SHOWN",
        evidence: "turn 1 completed (the script forces) but its answer \"Hello, world.\" was never shown",
    },
    Bug {
        name: "load-differs",
        scenario: "turn/two-turn-conversation",
        requirement: "ACP-LOAD-MATCHES-LIVE",
        evidence: "turn 2 (completed): load replayed assistant text \"Seven.\", not what the client was shown live, \"Eleven.\"",
    },
    Bug {
        name: "refuses-load",
        scenario: "turn/two-turn-conversation",
        requirement: "ACP-LOAD-MATCHES-LIVE",
        evidence: "session/load of the Session it had just served was refused, by an agent that advertises `loadSession`",
    },
    Bug {
        name: "impatient",
        scenario: "turn/stall-past-idle-timeout",
        requirement: "WIRE-NO-RETRY-AFTER-TEXT",
        evidence: "streamed \"Let me think\" and was closed by the client during a stall (its own idle timeout)",
    },
    Bug {
        name: "error-as-answer",
        scenario: "turn/partial-then-error",
        requirement: "REPLAY-NO-DIAGNOSTIC",
        evidence: "request 2 carries the Provider's error message (request 1) back to the model as assistant content: \"The server had an error while processing your request.\"",
    },
    Bug {
        name: "false-recovery",
        scenario: "turn/http-500-retries-exhausted",
        requirement: "ACP-NOTICE-MATCHES-OUTCOME",
        evidence: "yet the agent showed in its own words that it recovered: \"Retry finished, resuming.\"",
    },
    Bug {
        name: "compacts-partial",
        scenario: "compaction/after-failed-turn",
        requirement: "REPLAY-COMPACTION-NO-PARTIAL",
        evidence: "request 4 carries the partial text of the failed response to request 1 beside a compaction: \"Half-written summary of the log\"",
    },
    Bug {
        name: "ignores-malformed",
        scenario: "acp/malformed-line",
        requirement: "ACP-JSONRPC-ERRORS",
        evidence: "which is not JSON, got no Parse error (-32700 with id null)",
    },
    Bug {
        name: "plan-delta",
        scenario: "acp/plan-whole-list",
        requirement: "ACP-PLAN-WHOLE-LIST",
        evidence: r#"drops ["Write an index"], entries of plan update 1 that the model's latest plan call (call 2) still holds"#,
    },
    Bug {
        name: "resume-replays",
        scenario: "acp/resume-mid-conversation",
        requirement: "ACP-RESUME-NO-REPLAY",
        evidence: "replayed 2 update(s) before its answer (user_message_chunk, agent_message_chunk)",
    },
    Bug {
        name: "closed-still-prompts",
        scenario: "acp/close-then-prompt",
        requirement: "ACP-CLOSE-REFUSES-PROMPT",
        evidence: "after it was closed was answered with stop reason `end_turn`",
    },
    Bug {
        name: "list-forgets",
        scenario: "acp/list-sessions",
        requirement: "ACP-LIST-SERVED",
        evidence: "does not list Session `buggy-1`, which the agent served in that workspace",
    },
    Bug {
        name: "delegate-lies",
        scenario: "subagent/delegate-fails-after-partial",
        requirement: "SUB-ACP-ITEM",
        evidence: "(`delegate` as `task`) ends `completed` in ACP, but its child ended `failed`",
    },
    Bug {
        name: "drops-image",
        scenario: "acp/image-prompt",
        requirement: "REPLAY-CARRIES-IMAGE",
        evidence: "turn 1: the prompt carried 1 image(s), but none of the turn's 1 Provider request(s)",
    },
];

/// Each buggy agent is `nonconformant` on its scenario (`conformant` with the finding, for a
/// MAY: the reference's own choice never fails another agent), caught by the named requirement
/// with the evidence, within the client's patience and without a fault: the scenario went on to its
/// end. A bug the client sees live is caught whatever the profile declares: with its
/// capabilities, and with none (no Log, no `session/load`).
fn buggy_check(root: &Path, bug: &Bug) -> Result<(), Failed> {
    let declared = fixture(root, bug.name)?;
    let mut bare = declared.clone();
    bare.capabilities.clear();
    // A bug only a declared capability lets the client see (a load, a resume, a close, a list)
    // is looked for with it alone: without it the scenario is skipped.
    let needs_capability = bug.requirement == "ACP-LOAD-MATCHES-LIVE"
        || ["acp/resume-mid-conversation", "acp/close-then-prompt", "acp/list-sessions"].contains(&bug.scenario);
    let profiles = if needs_capability { vec![declared] } else { vec![declared, bare] };
    for profile in profiles {
        let checked = check_one(root, &profile, bug.scenario)?;
        let caught =
            checked.verdict.findings.iter().any(|finding| {
                finding.evidence_for(bug.requirement).is_some_and(|message| message.contains(bug.evidence))
            });
        let faulted =
            checked.verdict.findings.iter().any(|finding| finding.layer == gauntlet_judge::verdict::Layer::Fault);
        let patient = checked.verdict.elapsed_ms < u128::from(profile.patience_ms);
        let may = contract::tier_of(bug.requirement) == Some(gauntlet_judge::contract::Tier::May);
        let expected = if may { VerdictKind::Conformant } else { VerdictKind::Nonconformant };
        if checked.verdict.kind != expected || !caught || faulted || !patient {
            return Err(format!(
                "{} with capabilities {:?} was not caught by {} with {:?}: {:#?}",
                bug.name, profile.capabilities, bug.requirement, bug.evidence, checked.verdict
            )
            .into());
        }
    }
    Ok(())
}

/// The delegating agent of `delegate-lies`, in its honest mode, is judged on the same
/// delegation without a SUB finding: the rule reads what the agent reported, not that it
/// delegated (issue 42).
fn delegation_honest(root: &Path) -> Result<(), Failed> {
    let checked = check_one(root, &fixture(root, "delegate-honest")?, "subagent/delegate-fails-after-partial")?;
    let sub = checked
        .verdict
        .findings
        .iter()
        .any(|finding| ["SUB-ACP-ITEM", "SUB-WAIT-OUTCOME"].iter().any(|id| finding.evidence_for(id).is_some()));
    if checked.verdict.kind == VerdictKind::Skipped || sub {
        return Err(format!("the honest delegation was not judged clean: {:#?}", checked.verdict).into());
    }
    Ok(())
}

/// An agent that does not declare `promptCapabilities.image` is not sent a prompt's image, and
/// its play of an image scenario is `skipped` with that reason, not judged as a conversation
/// the scenario did not mean.
fn skips_images(root: &Path) -> Result<(), Failed> {
    let checked = check_one(root, &fixture(root, "late")?, "acp/image-prompt")?;
    let why = checked.verdict.skipped.as_deref().unwrap_or_default();
    if checked.verdict.kind != VerdictKind::Skipped || !why.contains("does not declare `promptCapabilities.image`") {
        return Err(format!("expected a skip naming the capability: {:#?}", checked.verdict).into());
    }
    Ok(())
}

/// A real agent whose bug only a combination shows (buggy.py `partial-after-429`: it keeps a
/// failed stream's partial text as the answer only when an HTTP 429 came earlier in the turn)
/// passes the corpus's Turn scenarios on REPLAY-NO-PARTIAL, and a campaign catches it with a
/// confirmed reproduction that holds the combination.
fn combination_bug(root: &Path) -> Result<(), Failed> {
    let plan = Plan { root: root.to_owned(), bless: false, shard: None };
    let profile = fixture(root, "partial-after-429")?;
    let corpus =
        check::check_jobs(&plan, &profile, &KnownFailures::default(), &["turn/".to_owned()], false, 2, &mut quiet)?;
    let replayed: Vec<&Verdict> = corpus
        .scenarios
        .iter()
        .map(|checked| &checked.verdict)
        .filter(|verdict| verdict.findings.iter().any(|f| f.requirement.as_deref() == Some("REPLAY-NO-PARTIAL")))
        .collect();
    if corpus.scenarios.len() < 10 || !replayed.is_empty() {
        return Err(format!("the corpus was to miss the bug: {replayed:#?}").into());
    }
    let driver = profile.external();
    let options = campaign::Options {
        implementation: profile.name.clone(),
        space: campaign::space_of(&profile),
        count: 10,
        seed: 1,
        jobs: 2,
        shrink_budget: std::time::Duration::from_secs(20),
        write_to: None,
        command: "gauntlet check --impl partial-after-429.toml".to_owned(),
        shard: None,
        version: None,
        profile_sha256: gauntlet::origin::Fingerprint::of([]),
    };
    let found = campaign::run(&options, &campaign::on_agent(&profile, &driver), &mut quiet);
    let reproduction = found.reproductions.iter().find(|reproduction| reproduction.requirement == "REPLAY-NO-PARTIAL");
    match reproduction {
        Some(reproduction)
            if reproduction.toml.contains("status = 429") && reproduction.toml.contains("\"partial_failed\"") =>
        {
            Ok(())
        }
        _ => Err(format!("the campaign missed the bug:\n{}", gauntlet::report::campaign::text(&found)).into()),
    }
}

/// The adapter path can never rot: the reference behind the adapter protocol is `identical`
/// on every scenario of every lifecycle family.
fn reference_adapter(root: &Path) -> Result<(), Failed> {
    let plan = Plan { root: root.to_owned(), bless: false, shard: None };
    let adapter = Adapter::new(env!("CARGO_BIN_EXE_gauntlet-lifecycle"));
    for family in Family::ALL {
        let run = check::check_adapter(&plan, &adapter, family, &KnownFailures::default(), &[], false, &mut quiet)?;
        let unlike: Vec<String> = run
            .verdicts()
            .iter()
            .filter(|verdict| verdict.kind != VerdictKind::Identical)
            .map(|verdict| format!("{} is {}: {:#?}", verdict.scenario, verdict.kind.as_str(), verdict.findings))
            .collect();
        if run.scenarios.is_empty() {
            return Err(format!("no {} scenario ran", family.as_str()).into());
        }
        if !unlike.is_empty() {
            return Err(unlike.join("\n\n").into());
        }
    }
    Ok(())
}

/// A monitor in another language with three deliberate bugs (harness/tests/fixtures/adapters/
/// wrong_monitor.py): each bug is reported in the scenarios that show it, against the right
/// requirement and with both sides of the difference, and the correct cases stay identical.
fn wrong_monitor(root: &Path) -> Result<(), Failed> {
    let plan = Plan { root: root.to_owned(), bless: false, shard: None };
    let command = format!("python3 {}", root.join("harness/tests/fixtures/adapters/wrong_monitor.py").display());
    let run = check::check_adapter(
        &plan,
        &Adapter::new(&command),
        Family::Monitor,
        &KnownFailures::default(),
        &[],
        false,
        &mut quiet,
    )?;
    let verdict = |name: &str| run.verdicts().into_iter().find(|verdict| verdict.scenario == format!("monitor/{name}"));
    let wrong = [
        ("readiness-stall-timer-follows-the-last-unknown", "MON-STALL-TIMER"),
        ("readiness-unknown-input-mode-never-stalls", "MON-UNKNOWN-INPUT-NOT-STALL"),
        ("completion-transient-idle-flicker-does-not-complete", "MON-STABILITY-WINDOW"),
        ("completion-projection-change-resets-stability", "MON-STABILITY-WINDOW"),
    ];
    for (name, requirement) in wrong {
        let Some(verdict) = verdict(name) else { return Err(format!("{name} did not run").into()) };
        let caught = verdict.findings.iter().any(|finding| {
            finding.requirement.as_deref() == Some(requirement)
                && finding.message.contains("expected")
                && finding.message.contains("but the implementation gave")
        });
        if verdict.kind != VerdictKind::Nonconformant || !caught {
            return Err(format!("{name}: the bug against {requirement} was not reported: {verdict:#?}").into());
        }
    }
    let right =
        ["readiness-unknown-to-stalled", "readiness-recovers-after-stall", "completion-observer-bypasses-stability"];
    for name in right {
        match verdict(name) {
            Some(verdict) if verdict.kind == VerdictKind::Identical => {}
            other => return Err(format!("{name} should be identical: {other:#?}").into()),
        }
    }
    if let Some(error) = run.verdicts().iter().find(|verdict| verdict.kind == VerdictKind::Error) {
        return Err(format!("a wrong but well-formed adapter got an error: {error:#?}").into());
    }
    Ok(())
}

/// Broken adapters (harness/tests/fixtures/adapters) and the evidence their errors must show.
const ADAPTER_FAULTS: [(&str, &str); 4] = [
    ("banner", "output line 1: not JSON (expected value at line 1 column 1): monitor adapter v0.1 starting"),
    ("flood", "more than 8388608 bytes of output (flooding)"),
    ("missing-field", "no integer `at_ms`: {\"step\":0,\"status\":\"ready\""),
    ("hang", "no end of output within the deadline of 1000 ms"),
];

/// A broken adapter is that scenario's `error` with the offending output, the run goes on to
/// the next scenario, and nothing of its process group survives.
fn adapter_fault(root: &Path, fault: &str, evidence: &str) -> Result<(), Failed> {
    let plan = Plan { root: root.to_owned(), bless: false, shard: None };
    let mut adapter =
        Adapter::new(&format!("sh {}", root.join(format!("harness/tests/fixtures/adapters/{fault}.sh")).display()));
    adapter.deadline = std::time::Duration::from_millis(1000);
    let filters = [
        "monitor/readiness-ready-for-submit-ready-surface".to_owned(),
        "monitor/readiness-unknown-to-stalled".to_owned(),
    ];
    let run =
        check::check_adapter(&plan, &adapter, Family::Monitor, &KnownFailures::default(), &filters, false, &mut quiet)?;
    if run.scenarios.len() != 2 {
        return Err(format!("{fault}: {} scenarios ran, not 2", run.scenarios.len()).into());
    }
    every_error_shows(fault, &run.verdicts(), evidence)?;
    if fault == "hang" && marked_sleepers("317") > 0 {
        return Err("processes of the hanging adapter outlived the check".into());
    }
    Ok(())
}

fn scenario_trial(plan: &Plan, name: &str, path: &std::path::Path, play: &run::Play) -> Result<(), Failed> {
    let verdict = run::run_play(plan, &Reference::default(), name, path, play);
    if matches!(verdict.kind, VerdictKind::Identical | VerdictKind::Skipped) {
        return Ok(());
    }
    let findings: Vec<String> = verdict.findings.iter().map(ToString::to_string).collect();
    Err(format!("{} is {}:\n{}", verdict.scenario, verdict.kind.as_str(), findings.join("\n")).into())
}

/// Every committed report (docs/reports/*.md) lists only scenarios the corpus has, in corpus
/// order: a scenario removed or renamed since is caught (regenerate with `scripts/reports`).
/// One added since is not checked yet by that agent: said here, never a failure, so a new
/// scenario keeps `cargo test` green offline.
fn reports_list_the_corpus(root: &Path) -> Result<(), Failed> {
    for (report, names) in committed_reports::not_checked_yet(root)? {
        if !names.is_empty() {
            eprintln!("{}: not checked yet: {}", report.display(), names.join(", "));
        }
    }
    Ok(())
}

fn no_pending(root: &std::path::Path) -> Result<(), Failed> {
    let pending = golden::pending(&root.join("golden"));
    if pending.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = pending.iter().map(|path| path.display().to_string()).collect();
    Err(format!(
        "pending golden files: review each, then `{}` or delete it:\n{}",
        golden::ACCEPT_COMMAND,
        list.join("\n")
    )
    .into())
}

fn no_orphans(root: &std::path::Path, names: &[(String, PathBuf)]) -> Result<(), Failed> {
    let base = root.join("golden");
    let mut orphans = Vec::new();
    golden::walk(&base, &mut |file| {
        let Some(dir) = file.parent().and_then(|dir| dir.strip_prefix(&base).ok()) else { return };
        let name = dir.to_string_lossy().replace('\\', "/");
        // Child Logs live in `<scenario>/children/`.
        let name = name.strip_suffix("/children").unwrap_or(&name).to_owned();
        if !names.iter().any(|(scenario, _)| *scenario == name) {
            orphans.push(file.display().to_string());
        }
    });
    orphans.sort();
    if orphans.is_empty() {
        Ok(())
    } else {
        Err(format!("golden files without a scenario:\n{}", orphans.join("\n")).into())
    }
}
