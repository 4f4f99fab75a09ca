//! The conformance suite: one libtest-mimic trial per scenario file, named by its path
//! (`turn/partial-then-error`), plus the corpus checks: the contract registry covers every
//! MUST, no pending golden is left behind, and no golden folder lacks its scenario.
//!
//! `GAUNTLET_BLESS=1 cargo test -p gauntlet --test conformance` writes pending goldens for
//! review; `cargo run -p gauntlet -- accept` accepts them. CI (`CI` set) never writes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use gauntlet::driver::Driver;
use gauntlet::driver::external::External;
use gauntlet::driver::reference::Reference;
use gauntlet::run::{self, Plan};
use gauntlet::verdict::VerdictKind;
use gauntlet::{contract, golden, scenario};
use libtest_mimic::{Arguments, Failed, Trial};

fn main() {
    let args = Arguments::from_args();
    let mut plan = Plan::repository();
    plan.bless =
        std::env::var_os("GAUNTLET_BLESS").is_some_and(|value| value == "1") && std::env::var_os("CI").is_none();
    let names = run::scenario_names(&plan);
    let mut trials: Vec<Trial> = names
        .iter()
        .map(|(name, path)| {
            let (plan, name, path) = (plan.clone(), name.clone(), path.clone());
            Trial::test(name.clone(), move || scenario_trial(&plan, &name, &path)).with_kind("scenario")
        })
        .collect();
    for name in PROCESS_PARITY {
        if let Some((_, path)) = names.iter().find(|(scenario, _)| scenario == name) {
            let path = path.clone();
            trials.push(Trial::test(format!("process/{name}"), move || process_trial(&path)).with_kind("process"));
        }
    }
    let corpus = names.clone();
    let root = plan.root.clone();
    trials.push(Trial::test("corpus/contract-coverage", move || contract_trial(&root, &corpus)).with_kind("corpus"));
    let root = plan.root.clone();
    trials.push(Trial::test("corpus/no-pending-goldens", move || no_pending(&root)).with_kind("corpus"));
    let corpus = names;
    let root = plan.root.clone();
    trials.push(Trial::test("corpus/no-orphan-goldens", move || no_orphans(&root, &corpus)).with_kind("corpus"));
    libtest_mimic::run(&args, trials).exit();
}

/// Scenarios also run through the built `gauntlet-agent` binary over real pipes, with the mock
/// Provider on a real loopback port, and compared with the in-process run.
const PROCESS_PARITY: [&str; 5] = [
    "turn/clean-completion",
    "turn/partial-then-error",
    "turn/tool-call-then-answer",
    "acp/cancel-mid-stream",
    "acp/malformed-line",
];

fn process_trial(path: &std::path::Path) -> Result<(), Failed> {
    let scenario = scenario::load(path).map_err(|error| error.to_string())?;
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

fn scenario_trial(plan: &Plan, name: &str, path: &std::path::Path) -> Result<(), Failed> {
    let verdict = run::run_scenario(plan, &Reference::default(), name, path);
    if verdict.kind == VerdictKind::Identical {
        return Ok(());
    }
    let findings: Vec<String> = verdict.findings.iter().map(ToString::to_string).collect();
    Err(format!("{} is {}:\n{}", name, verdict.kind.as_str(), findings.join("\n")).into())
}

fn contract_trial(root: &std::path::Path, names: &[(String, PathBuf)]) -> Result<(), Failed> {
    let path = root.join("docs/contract.md");
    let text = std::fs::read_to_string(&path).map_err(|error| format!("{}: {error}", path.display()))?;
    let requirements = contract::parse(&text)?;
    let mut covers = BTreeMap::new();
    for (name, path) in names {
        covers.insert(name.clone(), scenario::covers(path).map_err(|error| error.to_string())?);
    }
    let problems = contract::verify(&requirements, &covers, root);
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n").into()) }
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
