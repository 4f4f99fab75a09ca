//! Checking another implementation: every applicable scenario of the corpus against an agent
//! described by a profile, judged by the same invariants and expectations as the reference,
//! with goldens compared after the profile's masks (design.md "Checking another
//! implementation").
//!
//! `identical` means the goldens match after masks; `conformant` means every invariant and
//! expectation holds but an output differs; a scenario needing a capability the profile lacks
//! is `skipped`. The run then passes when it fails exactly where the expectations file says.
//!
//! Lifecycle scenarios (the monitor and bridge families) are not for ACP agents: an
//! implementation of those contracts is a command speaking the adapter protocol, checked by
//! [`check_adapter`] and judged, reported and compared with its expectations the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::driver::Driver;
use crate::driver::containment::Method;
use crate::golden;
use crate::interrupt::{self, Stop};
use crate::known_failures::{self, Comparison, KnownFailures};
use crate::lifecycle::adapter::Adapter;
use crate::origin::{Fingerprint, NotOneRun, Origin};
use crate::profile::Profile;
use crate::run::{AnyScenario, NothingSelected, Plan};
use gauntlet_judge::capture::Capture;
use gauntlet_judge::judge;
use gauntlet_judge::lifecycle::{self, Family, Kind};
use gauntlet_judge::locate::LoadError;
use gauntlet_judge::scenario::{Capability, Scenario};
use gauntlet_judge::verdict::{Finding, Layer, Verdict, VerdictKind};

/// One scenario's verdict, and the evidence behind it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Checked {
    /// The verdict.
    pub verdict: Verdict,
    /// The golden files of the run (transcripts, request bodies, Log), when it ran.
    pub evidence: Option<Value>,
    /// The profile's masks, `(file, pointer)`, that matched something in this scenario.
    #[serde(skip)]
    pub masks_matched: BTreeSet<(String, String)>,
    /// Models the agent's requests named that the scenario never told it to use.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub other_models: BTreeSet<String>,
    /// Processes the agent left running after it was stopped, which gauntlet killed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leftovers: Vec<String>,
    /// For a skipped scenario, what it needed that an agent declares at `initialize` and the
    /// profile does not list: read against what the agent declared once the run is over.
    #[serde(skip)]
    pub undeclared: Vec<Capability>,
}

impl Checked {
    /// A verdict with no evidence kept.
    pub fn of(verdict: Verdict) -> Checked {
        Checked {
            verdict,
            evidence: None,
            masks_matched: BTreeSet::new(),
            other_models: BTreeSet::new(),
            leftovers: Vec::new(),
            undeclared: Vec::new(),
        }
    }
}

/// A whole check run, or the shards of one merged ([`merge`]): `report.json` is this, with
/// each requirement's result beside it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckRun {
    /// The implementation's name.
    pub implementation: String,
    /// Its version, the shard this run is (if one), and what it was played from.
    #[serde(flatten)]
    pub origin: Origin,
    /// Whether the agents ran in a loopback-only network namespace.
    pub isolated: bool,
    /// How the processes of each scenario were held, so that none outlived it (a report
    /// written before there was a choice used the environment mark).
    #[serde(default = "marked_sweep")]
    pub containment: Method,
    /// Every scenario, in order.
    pub scenarios: Vec<Checked>,
    /// The run against the expectations file.
    pub comparison: Comparison,
    /// Warnings that change no verdict: each mask that matched nothing in the whole run (a
    /// pointer that names no field masks nothing), each model the agent called that `{model}`
    /// never passed, each process the agent left running that gauntlet killed.
    pub warnings: Vec<String>,
    /// The profile's masks, `(file, pointer)`, that matched nothing in any scenario of the
    /// run: kept apart so shards merge (a mask unmatched in the whole run is unmatched in every
    /// shard).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmatched_masks: Vec<(String, String)>,
    /// Whether the implementation keeps a gauntlet Log (its Log-only requirements are judged).
    #[serde(default)]
    pub logged: bool,
    /// Processes the profile's `version` command left running, which gauntlet killed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub version_leftovers: Vec<String>,
}

fn marked_sweep() -> Method {
    Method::MarkedSweep
}

impl CheckRun {
    /// The verdicts alone.
    pub fn verdicts(&self) -> Vec<Verdict> {
        self.scenarios.iter().map(|checked| checked.verdict.clone()).collect()
    }

    /// Scenarios that fail the run: an unexpected failure, or a stale expectation (which may
    /// name a scenario the corpus does not have).
    pub fn failing(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .comparison
            .unexpected
            .iter()
            .map(|failure| failure.scenario.as_str())
            .chain(self.comparison.stale.iter().map(|stale| stale.entry.scenario.as_str()))
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// `(passed, failed)`, the closing line's numbers: the scenarios that do not fail the run
    /// (an interrupted one neither passes nor fails), and the names that do.
    pub fn counts(&self) -> (usize, usize) {
        let failing = self.failing();
        let passed = self
            .scenarios
            .iter()
            .filter(|checked| checked.verdict.kind != VerdictKind::Interrupted)
            .filter(|checked| !failing.contains(&checked.verdict.scenario.as_str()))
            .count();
        (passed, failing.len())
    }
}

/// Told `(index, total, scenario, None)` as a scenario starts and `Some(verdict)` as it ends.
pub type Progress<'a> = dyn FnMut(usize, usize, &str, Option<&Verdict>) + 'a;

/// Runs every Turn scenario of `plan` whose name contains one of `filters` (all when empty),
/// and each filter that names a scenario file, against `profile`; `progress` is told of each
/// scenario as it starts and ends. Filters that select nothing, in any shard, are an error.
pub fn check(
    plan: &Plan,
    profile: &Profile,
    known: &KnownFailures,
    filters: &[String],
    isolated: bool,
    progress: &mut Progress<'_>,
) -> Result<CheckRun, NothingSelected> {
    check_jobs(plan, profile, known, filters, isolated, 1, progress)
}

/// [`check`] with `jobs` scenarios at a time. Each scenario already runs in isolation (its own
/// mock on its own port, scratch folders, process group and tokio runtime), so running several
/// at once changes nothing a verdict reads; the report keeps the corpus order, and `progress`
/// hears of each scenario as it ends.
pub fn check_jobs(
    plan: &Plan,
    profile: &Profile,
    known: &KnownFailures,
    filters: &[String],
    isolated: bool,
    jobs: usize,
    progress: &mut Progress<'_>,
) -> Result<CheckRun, NothingSelected> {
    let Selection { corpus, fingerprint, mine } = selection(plan, filters, "Turn scenario", |kind| kind.is_none())?;
    let driver = profile.external();
    let one = |name: &str, loaded| check_one(plan, profile, &driver, name, loaded);
    let scenarios = if jobs > 1 { each_parallel(mine, jobs, progress, one) } else { each(mine, progress, one) };
    let probe = profile.probe_version();
    let origin = Origin {
        version: probe.version,
        shard: plan.shard,
        corpus_sha256: fingerprint,
        profile_sha256: judged_by(profile.source.as_bytes(), known),
    };
    let mut scenarios = scenarios;
    name_undeclared(&mut scenarios);
    let mut run = finish(profile.name.clone(), origin, isolated, scenarios, known, &corpus);
    run.unmatched_masks = unmatched_masks(profile, &run.scenarios);
    run.logged = profile.log.is_some();
    run.version_leftovers = probe.leftovers;
    run.warnings = warnings(&run);
    Ok(run)
}

/// The fingerprint of what a run is judged by besides its corpus: `what` (a profile's text, an
/// adapter's command and family) and the expectations.
fn judged_by(what: &[u8], known: &KnownFailures) -> Fingerprint {
    Fingerprint::of([what, serde_json::to_vec(known).unwrap_or_default().as_slice()])
}

/// What changes no verdict but a user should know, from the run: each mask that matched
/// nothing, each model never passed, each process left running, and a containment that a
/// process can escape by clearing its environment (neither a cgroup nor a PID namespace).
fn warnings(run: &CheckRun) -> Vec<String> {
    let masks = run
        .unmatched_masks
        .iter()
        .map(|(file, pointer)| format!("the mask `{pointer}` on {file} matched nothing in the whole run"));
    let probe = (!run.version_leftovers.is_empty()).then(|| leftovers("the version command", &run.version_leftovers));
    let containment = (run.containment == Method::MarkedSweep).then(|| {
        format!(
            "neither a cgroup nor a PID namespace could be made here (cgroup v2 writable, or root or unprivileged user namespaces, and gauntlet-contain beside gauntlet): processes were contained with {}, which {}",
            run.containment.describe(),
            run.containment.weakness()
        )
    });
    let scenarios = run
        .scenarios
        .iter()
        .filter(|checked| !checked.leftovers.is_empty())
        .map(|checked| leftovers(&checked.verdict.scenario, &checked.leftovers));
    masks.chain(model_warnings(&run.scenarios)).chain(probe).chain(scenarios).chain(containment).collect()
}

/// Why shards do not merge.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// They are not every shard of one run, each once.
    #[error(transparent)]
    NotOneRun(#[from] NotOneRun),
    /// The reports are of different implementations.
    #[error("the reports are of different implementations: {0} and {1}")]
    Implementations(String, String),
    /// Two shards played the same scenario.
    #[error("two reports hold scenario {0}: shards of one run never overlap")]
    Overlap(String),
}

/// The shards of one run (`--shard K/N`) as the one run that played them all: its scenarios in
/// corpus order, its comparison with the expectations (each failure and stale entry of a
/// scenario played is that scenario's, so shards add up; an entry naming no scenario of the
/// corpus is every shard's, and kept once), a mask unmatched only where no shard matched it,
/// and the warnings again. Only every shard of one run, each once, merges ([`Origin::merged`]).
pub fn merge(shards: Vec<CheckRun>) -> Result<CheckRun, MergeError> {
    let origin = Origin::merged(shards.iter().map(|shard| &shard.origin))?;
    let mut shards = shards.into_iter();
    let Some(mut merged) = shards.next() else { return Err(NotOneRun::Empty.into()) };
    merged.origin = origin;
    for shard in shards {
        if shard.implementation != merged.implementation {
            return Err(MergeError::Implementations(merged.implementation, shard.implementation));
        }
        merged.isolated &= shard.isolated;
        merged.containment = merged.containment.max(shard.containment);
        merged.version_leftovers.extend(shard.version_leftovers);
        merged.scenarios.extend(shard.scenarios);
        merged.comparison.expected.extend(shard.comparison.expected);
        merged.comparison.unexpected.extend(shard.comparison.unexpected);
        merged.comparison.stale.extend(shard.comparison.stale);
        merged.unmatched_masks.retain(|mask| shard.unmatched_masks.contains(mask));
    }
    merged.scenarios.sort_by(|a, b| a.verdict.scenario.cmp(&b.verdict.scenario));
    if let Some(pair) = merged.scenarios.windows(2).find(|pair| pair[0].verdict.scenario == pair[1].verdict.scenario) {
        return Err(MergeError::Overlap(pair[0].verdict.scenario.clone()));
    }
    merged.comparison.expected.sort();
    merged.comparison.unexpected.sort();
    merged.comparison.stale.sort();
    merged.comparison.stale.dedup();
    merged.warnings = warnings(&merged);
    Ok(merged)
}

/// The profile's masks that matched nothing in any scenario that ran.
fn unmatched_masks(profile: &Profile, scenarios: &[Checked]) -> Vec<(String, String)> {
    if scenarios.iter().all(|checked| checked.evidence.is_none()) {
        return Vec::new(); // nothing ran: nothing could match
    }
    let matched: BTreeSet<&(String, String)> = scenarios.iter().flat_map(|checked| &checked.masks_matched).collect();
    profile
        .masks
        .iter()
        .flat_map(|(file, pointers)| pointers.iter().map(move |pointer| (file.clone(), pointer.clone())))
        .filter(|mask| !matched.contains(mask))
        .collect()
}

/// Runs every lifecycle scenario of `family` (filtered likewise) through `adapter`, the
/// adapter protocol (docs/adapters.md).
pub fn check_adapter(
    plan: &Plan,
    adapter: &Adapter,
    family: Family,
    known: &KnownFailures,
    filters: &[String],
    isolated: bool,
    progress: &mut Progress<'_>,
) -> Result<CheckRun, NothingSelected> {
    let what = format!("{} scenario", family.as_str());
    let wanted = |kind: Option<Kind>| kind.is_some_and(|kind| kind.family() == family);
    let Selection { corpus, fingerprint, mine } = selection(plan, filters, &what, wanted)?;
    let scenarios = each(mine, progress, |name, loaded| adapter_one(plan, adapter, name, loaded));
    let command = format!("{}\n{}", adapter.command, family.as_str());
    let origin = Origin {
        version: None,
        shard: plan.shard,
        corpus_sha256: fingerprint,
        profile_sha256: judged_by(command.as_bytes(), known),
    };
    // A lifecycle capture is judged whole: no requirement of its family is about a Log it lacks.
    let mut run =
        CheckRun { logged: true, ..finish(adapter.command.clone(), origin, isolated, scenarios, known, &corpus) };
    run.warnings = warnings(&run);
    Ok(run)
}

/// A scenario file as [`selection`] loaded it, once; a file that cannot be loaded keeps its
/// error for its verdict.
type Loaded = Result<AnyScenario, LoadError>;

/// The names of the scenarios a check plays: an agent's (`None`: every Turn scenario) or a
/// lifecycle family's through an adapter; a report lists exactly these.
pub fn scenarios_of(plan: &Plan, family: Option<Family>) -> Vec<String> {
    let wanted = |kind: Option<Kind>| kind.map(Kind::family) == family;
    let mine = selection(plan, &[], "scenario", wanted).map(|selection| selection.mine).unwrap_or_default();
    mine.into_iter().map(|(name, _)| name).collect()
}

/// What a check plays, chosen before anything runs.
struct Selection {
    /// Every scenario name of the corpus (and each scenario file a filter names), filters and
    /// shards aside: an expectation naming none of them is stale.
    corpus: Vec<String>,
    /// The scenarios the whole run plays (every shard's) and their goldens.
    fingerprint: Fingerprint,
    /// This shard's part of them, in corpus order, each loaded once.
    mine: Vec<(String, Loaded)>,
}

/// The scenarios `filters` select whose lifecycle kind (`None` for a Turn scenario) `wanted`
/// accepts: corpus scenarios whose name contains a filter (all without one), and each filter
/// that names a scenario file outside the corpus (a campaign's reproduction, say), played under
/// its path without goldens, after the corpus. A file that does not load and whose kind cannot
/// be read counts as a Turn scenario, so an agent's check shows its error. None selected in the
/// whole run is an error naming `what` was looked for; a shard may hold none of them.
fn selection(
    plan: &Plan,
    filters: &[String],
    what: &str,
    wanted: impl Fn(Option<Kind>) -> bool,
) -> Result<Selection, NothingSelected> {
    let (files, names): (Vec<&String>, Vec<&String>) =
        filters.iter().partition(|filter| filter.ends_with(".toml") && Path::new(filter).is_file());
    let whole = crate::run::scenario_names(&Plan { shard: None, ..plan.clone() });
    let in_corpus = whole.len();
    let candidates: Vec<(String, PathBuf)> =
        whole.into_iter().chain(files.into_iter().map(|file| (file.clone(), PathBuf::from(file)))).collect();
    let corpus = candidates.iter().map(|(name, _)| name.clone()).collect();
    let named = |place: usize, name: &str| {
        place >= in_corpus || filters.is_empty() || names.iter().any(|filter| name.contains(filter.as_str()))
    };
    // A scenario's shard is its place among the candidates, filters aside, as every shard sees it.
    let chosen: Vec<(usize, String, PathBuf, Loaded)> = candidates
        .into_iter()
        .enumerate()
        .filter(|(place, (name, _))| named(*place, name))
        .filter_map(|(place, (name, path))| {
            let (loaded, kind) = load_with_kind(&path);
            wanted(kind).then_some((place, name, path, loaded))
        })
        .collect();
    NothingSelected::unless(chosen.len(), what, plan, filters)?;
    let fingerprint =
        Fingerprint::of_scenarios(&plan.root, chosen.iter().map(|(_, name, path, _)| (name.as_str(), path.as_path())));
    let mine = chosen
        .into_iter()
        .filter(|(place, ..)| plan.shard.is_none_or(|shard| shard.holds(*place)))
        .map(|(_, name, _, loaded)| (name, loaded))
        .collect();
    Ok(Selection { corpus, fingerprint, mine })
}

/// A scenario file, loaded once, and its lifecycle kind (`None` for a Turn scenario, or a file
/// whose kind cannot be read).
fn load_with_kind(path: &Path) -> (Loaded, Option<Kind>) {
    let loaded = crate::run::load(path);
    let kind = match &loaded {
        Ok(AnyScenario::Lifecycle(scenario)) => Some(scenario.kind),
        Ok(AnyScenario::Turn(_)) => None,
        // Only a broken file is read again, to tell which run its error belongs to.
        Err(_) => std::fs::read_to_string(path).ok().and_then(|text| lifecycle::kind_of(&text, path).ok().flatten()),
    };
    (loaded, kind)
}

/// Runs `one` on each selected scenario in turn, inside [`contained`], telling `progress` as
/// each starts and ends; the verdicts come back in the order selected.
fn each(
    selected: Vec<(String, Loaded)>,
    progress: &mut Progress<'_>,
    mut one: impl FnMut(&str, Loaded) -> Checked,
) -> Vec<Checked> {
    let total = selected.len();
    let mut scenarios = Vec::new();
    for (idx, (name, loaded)) in selected.into_iter().enumerate() {
        progress(idx, total, &name, None);
        let checked = contained(&name, || one(&name, loaded));
        progress(idx, total, &name, Some(&checked.verdict));
        scenarios.push(checked);
    }
    scenarios
}

/// [`each`] on `jobs` threads of the [`pool`](crate::pool): workers take the next scenario in
/// corpus order, and the results land in that order whatever order they end in.
pub(crate) fn each_parallel<T: Send>(
    selected: Vec<(String, T)>,
    jobs: usize,
    progress: &mut Progress<'_>,
    one: impl Fn(&str, T) -> Checked + Sync,
) -> Vec<Checked> {
    let total = selected.len();
    let names: Vec<String> = selected.iter().map(|(name, _)| name.clone()).collect();
    crate::pool::map_in_order(
        selected,
        jobs,
        |_, (name, loaded)| contained(&name, || one(&name, loaded)),
        |idx, checked| {
            progress(idx, total, &names[idx], None);
            progress(idx, total, &names[idx], Some(&checked.verdict));
        },
    )
}

/// Runs one scenario's check so that a panic of gauntlet's own (in a driver or the judge) is
/// that scenario's `error`, named as gauntlet's bug, and the rest of the run goes on. Once
/// gauntlet is stopped ([`interrupt`]) no scenario starts, and one in play when it was is
/// `interrupted`, not judged on what was cut short.
pub(crate) fn contained(name: &str, check: impl FnOnce() -> Checked) -> Checked {
    let interrupted = |stop: Stop| Checked::of(Verdict::interrupted(name, &stop.to_string()));
    if let Some(stop) = interrupt::requested() {
        return interrupted(stop);
    }
    let checked = caught(name, check);
    interrupt::requested().map_or(checked, interrupted)
}

/// A check, a panic of gauntlet's own caught as the scenario's `error`.
fn caught(name: &str, check: impl FnOnce() -> Checked) -> Checked {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(check)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        unplayable(
            name,
            format!(
                "gauntlet itself panicked on this scenario, a bug of gauntlet's, not the implementation's: {message}"
            ),
        )
    })
}

/// The verdict of a scenario that could not be played: an `error` verdict whose one finding,
/// a fault, says `why` (a file that does not load, a scenario of the wrong kind, gauntlet's
/// own panic).
pub(crate) fn unplayable(name: &str, why: String) -> Checked {
    Checked::of(Verdict::from_findings(name, Vec::new(), vec![Finding::new(Layer::Fault, None, why)]))
}

/// Says, for each skipped scenario that needed what an agent declares at `initialize`, whether
/// this agent declared it (the profile's to list, then) or not (the agent's limit), as its
/// first played scenario's `initialize` answer has it (issue 42).
fn name_undeclared(scenarios: &mut [Checked]) {
    let Some(declared) = scenarios.iter().find_map(|checked| declared(checked.evidence.as_ref()?)) else { return };
    for checked in scenarios.iter_mut().filter(|checked| !checked.undeclared.is_empty()) {
        let (listed, lacked): (Vec<Capability>, Vec<Capability>) =
            checked.undeclared.iter().partition(|capability| declared.contains(capability));
        let names = |capabilities: &[Capability]| {
            capabilities.iter().map(|capability| format!("`{}`", capability.as_str())).collect::<Vec<_>>().join(", ")
        };
        let mut why = Vec::new();
        if !listed.is_empty() {
            why.push(format!(
                "the agent declares {} at `initialize`, the profile's `capabilities` does not list it",
                names(&listed)
            ));
        }
        if !lacked.is_empty() {
            why.push(format!("the agent does not declare {} at `initialize`", names(&lacked)));
        }
        if let Some(skipped) = checked.verdict.skipped.as_mut() {
            skipped.push_str(&format!(" ({})", why.join("; ")));
        }
    }
}

/// What an agent declared at `initialize`, of the capabilities a profile lists, from a played
/// scenario's live transcript: v1's `loadSession` and `sessionCapabilities`; v2 serves
/// `session/resume`, `close` and `list` to every client.
fn declared(evidence: &Value) -> Option<BTreeSet<Capability>> {
    let transcript = evidence.pointer("/files/acp.jsonl")?.as_array()?;
    let answer = transcript.iter().find(|entry| {
        entry.get("from").and_then(Value::as_str) == Some("agent")
            && entry.pointer("/message/result/protocolVersion").is_some()
    })?;
    let capabilities = answer.pointer("/message/result/agentCapabilities")?;
    let v2 = answer.pointer("/message/result/protocolVersion").and_then(Value::as_u64) == Some(2);
    let session = capabilities.get("sessionCapabilities");
    let has = |key: &str| v2 || session.and_then(|session| session.get(key)).is_some_and(|value| !value.is_null());
    let mut declared = BTreeSet::new();
    if capabilities.get("loadSession").and_then(Value::as_bool) == Some(true) {
        declared.insert(Capability::Load);
    }
    for (key, capability) in [("resume", Capability::Resume), ("close", Capability::Close), ("list", Capability::List)]
    {
        if has(key) {
            declared.insert(capability);
        }
    }
    Some(declared)
}

/// The run's verdicts gathered into a [`CheckRun`] and compared with the expectations file;
/// skipped scenarios count as not run, so their expectations are not stale, but an expectation
/// naming no scenario of the `corpus` is.
fn finish(
    implementation: String,
    origin: Origin,
    isolated: bool,
    scenarios: Vec<Checked>,
    known: &KnownFailures,
    corpus: &[String],
) -> CheckRun {
    let verdicts: Vec<Verdict> = scenarios.iter().map(|checked| checked.verdict.clone()).collect();
    let ran: Vec<String> =
        verdicts.iter().filter(|verdict| verdict.skipped.is_none()).map(|verdict| verdict.scenario.clone()).collect();
    let comparison = known.compare(&known_failures::failures(&verdicts), &ran, corpus);
    CheckRun {
        implementation,
        origin,
        isolated,
        containment: Method::here(),
        scenarios,
        comparison,
        warnings: Vec::new(),
        unmatched_masks: Vec::new(),
        logged: false,
        version_leftovers: Vec::new(),
    }
}

/// Plays one lifecycle scenario through `adapter` and judges it like the reference; the
/// evidence is the records it wrote and its stderr tail.
fn adapter_one(plan: &Plan, adapter: &Adapter, name: &str, loaded: Loaded) -> Checked {
    let started = Instant::now();
    let scenario = match loaded {
        Ok(AnyScenario::Lifecycle(scenario)) => scenario,
        Ok(AnyScenario::Turn(_)) => return unplayable(name, "not a lifecycle scenario".to_owned()),
        Err(error) => return unplayable(name, error.to_string()),
    };
    let capture = adapter.run(&scenario);
    let plan = Plan { bless: false, ..plan.clone() };
    let mut verdict = crate::run::judge_lifecycle(&plan, name, &scenario, &capture);
    verdict.elapsed_ms = started.elapsed().as_millis();
    let evidence = json!({
        "files": { "results.jsonl": capture.records },
        "stderr_tail": capture.stderr_tail,
    });
    Checked { evidence: Some(evidence), leftovers: capture.leftovers, ..Checked::of(verdict) }
}

/// Plays one Turn scenario on the agent of `profile` and judges it, goldens compared after
/// the profile's masks.
fn check_one(plan: &Plan, profile: &Profile, driver: &dyn Driver, name: &str, loaded: Loaded) -> Checked {
    let started = Instant::now();
    let scenario = match loaded {
        Ok(AnyScenario::Turn(scenario)) => scenario,
        Ok(AnyScenario::Lifecycle(_)) => return unplayable(name, "a lifecycle scenario, for adapters".to_owned()),
        Err(error) => return unplayable(name, error.to_string()),
    };
    let (scenario, capture) = match play(profile, driver, &scenario) {
        Ok(played) => played,
        Err(why) => {
            let undeclared = profile.undeclared(&scenario);
            return Checked { undeclared, ..Checked::of(Verdict::skipped(name, why)) };
        }
    };
    // Known only once the agent answered `initialize`: a prompt's image was not sent, so the
    // scenario was not played as written, and nothing of it is judged.
    if capture.images_withheld {
        let why = format!(
            "{} does not declare `promptCapabilities.image` at initialize, so the prompt's image was not sent (ACP: a client sends image content only to an agent that declares it)",
            profile.name
        );
        return Checked::of(Verdict::skipped(name, why));
    }
    let files = capture.golden_files();
    let mut masks_matched = BTreeSet::new();
    let dir = Path::new("golden").join(name);
    let golden = golden::compare_noting_masks(&plan.root, &dir, &files, &profile.masks, false, &mut masks_matched);
    let mut verdict = judge::judge(name, &scenario, &capture, golden);
    verdict.elapsed_ms = started.elapsed().as_millis();
    let other_models = if profile.passes_model() { other_models(&scenario, &capture) } else { BTreeSet::new() };
    let leftovers = capture.leftovers.clone();
    Checked {
        verdict,
        evidence: Some(evidence(&capture)),
        masks_matched,
        other_models,
        leftovers,
        undeclared: Vec::new(),
    }
}

/// The models `capture`'s requests named that `scenario` never told the agent to use (its
/// `config.model`, a turn's `model`): an agent that falls back to a default of its own is not
/// running what its user configured (issue 31).
fn other_models(scenario: &Scenario, capture: &Capture) -> BTreeSet<String> {
    let told: BTreeSet<&str> = std::iter::once(scenario.config.model.as_str())
        .chain(scenario.turns.iter().filter_map(|turn| turn.model.as_deref()))
        .collect();
    let conversations = gauntlet_judge::judge::conversations::Conversations::read(capture.dialect, &capture.requests);
    (0..capture.requests.len())
        .filter_map(|idx| conversations.get(idx)?.model)
        .filter(|model| !told.contains(model))
        .map(str::to_owned)
        .collect()
}

/// The warning for the processes `what` (a scenario, the version command) left running after
/// it ended: gauntlet killed them, and a CI runner would otherwise collect them (issue 33).
fn leftovers(what: &str, commands: &[String]) -> String {
    let quoted: Vec<String> = commands.iter().map(|command| format!("`{command}`")).collect();
    let (left, them) = if quoted.len() == 1 { ("a process", "it") } else { ("processes", "them") };
    format!("{what}: {left} still running when it ended, and gauntlet killed {them}: {}", quoted.join(", "))
}

/// One warning per model the agent called that no scenario told it to, naming where.
fn model_warnings(scenarios: &[Checked]) -> Vec<String> {
    let mut by_model: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for checked in scenarios {
        for model in &checked.other_models {
            by_model.entry(model).or_default().push(&checked.verdict.scenario);
        }
    }
    by_model
        .into_iter()
        .map(|(model, names)| {
            let shown: Vec<&str> = names.iter().take(3).copied().collect();
            let more = if names.len() > 3 { format!(" and {} more", names.len() - 3) } else { String::new() };
            format!(
                "requests named the model `{model}`, which the profile's `{{model}}` never passed ({}{more}): the agent called a model of its own choosing, so those runs do not test what its user configured",
                shown.join(", ")
            )
        })
        .collect()
}

/// Plays `scenario` on the agent of `profile`: the scenario as the agent played it (on its
/// clock, with its tools) and the capture, or why it is skipped (a capability it lacks).
pub fn play(profile: &Profile, driver: &dyn Driver, scenario: &Scenario) -> Result<(Scenario, Capture), String> {
    let missing = profile.missing(scenario);
    if !missing.is_empty() {
        return Err(format!("{} lacks {}", profile.name, missing.join(", ")));
    }
    // A scenario the agent's wire cannot express (`skip_dialects`) is skipped with its reason,
    // as the corpus skips it in that dialect: played anyway, the mock would send what the wire
    // has no shape for.
    let scenario = profile.adapt(scenario).in_dialect(profile.dialect).map_err(|why| why.to_string())?;
    let scenario = scenario.in_acp(profile.acp_version.0)?;
    let capture = driver.drive(&scenario);
    Ok((scenario, capture))
}

/// The evidence kept for the JSON report: the golden files as JSON, the stderr tail, the side
/// requests answered, when cancels were sent and each request's response ended, and the calls
/// gauntlet's MCP server received.
fn evidence(capture: &Capture) -> Value {
    let parse_lines = |text: &str| -> Vec<Value> {
        text.lines().map(|line| serde_json::from_str(line).unwrap_or(json!(line))).collect()
    };
    let mut files = serde_json::Map::new();
    for (name, text) in capture.golden_files() {
        let value = if name.ends_with(".json") {
            serde_json::from_str(&text).unwrap_or(json!(text))
        } else {
            Value::Array(parse_lines(&text))
        };
        files.insert(name, value);
    }
    let mut evidence = json!({
        "files": files,
        "stderr_tail": capture.stderr_tail,
        "side_requests": capture.side_requests,
        "cancels": capture.cancels.iter().map(|cancel| json!({
            "turn": cancel.turn + 1,
            "sent_ms": cancel.sent.as_secs_f64() * 1000.0,
        })).collect::<Vec<_>>(),
        "timings": capture.timings,
    });
    // What gauntlet's MCP server received and answered, when the agent called it.
    if !capture.tool_calls.is_empty() {
        evidence["tool_calls"] = json!(capture.tool_calls);
    }
    evidence
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A skip for want of what the agent declares at `initialize` says so, and names the
    /// profile's omission apart from the agent's limit (issue 42).
    #[test]
    fn a_skip_says_whether_the_agent_declares_what_it_needed() {
        let initialize = json!({"from": "agent", "message": {"jsonrpc": "2.0", "id": 1, "result": {
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": true, "sessionCapabilities": {"resume": {}, "close": null}},
        }}});
        let played = Checked {
            evidence: Some(json!({"files": {"acp.jsonl": [initialize]}})),
            ..Checked::of(Verdict::skipped("played", "-".to_owned()))
        };
        let skipped = |undeclared: Vec<Capability>| Checked {
            undeclared,
            ..Checked::of(Verdict::skipped("s", "agent lacks resume, list, close".to_owned()))
        };
        let mut scenarios = vec![played, skipped(vec![Capability::Resume, Capability::List, Capability::Close])];
        name_undeclared(&mut scenarios);
        assert_eq!(
            scenarios[1].verdict.skipped.as_deref(),
            Some(
                "agent lacks resume, list, close (the agent declares `resume` at `initialize`, the profile's `capabilities` does not list it; the agent does not declare `list`, `close` at `initialize`)"
            )
        );
        // Without a played scenario nothing is known of the agent: the reason stays.
        let mut alone = vec![skipped(vec![Capability::Resume])];
        name_undeclared(&mut alone);
        assert_eq!(alone[0].verdict.skipped.as_deref(), Some("agent lacks resume, list, close"));
    }

    /// An agent that calls a model of its own (a default it falls back to) is named with the
    /// scenarios where it did, once per model (issue 31).
    #[test]
    fn a_request_naming_a_model_never_passed_is_a_warning() {
        let text = "title = \"t\"\nconfig = { model = \"gpt-test\" }\n[[turn]]\nprompt = \"p\"\nrespond = [{ text = [\"x\"] }]\n";
        let scenario =
            gauntlet_judge::scenario::parse(text, Path::new("t.toml")).unwrap_or_else(|error| panic!("{error}"));
        let body = |model: &str| json!({"model": model, "input": [{"role": "user", "content": "p"}]});
        let capture = Capture {
            requests: gauntlet_judge::capture::Request::chained([
                ("root".to_owned(), Some(0), body("gpt-test")),
                ("root".to_owned(), Some(0), body("their-default")),
            ]),
            ..Capture::default()
        };
        let other = other_models(&scenario, &capture);
        assert_eq!(other.iter().map(String::as_str).collect::<Vec<_>>(), ["their-default"]);
        let mut checked = Checked::of(Verdict::from_findings("turn/x", Vec::new(), Vec::new()));
        checked.other_models = other;
        let warnings = model_warnings(&[checked]);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].starts_with("requests named the model `their-default`"), "{warnings:?}");
        assert!(warnings[0].contains("(turn/x)"), "{warnings:?}");
    }

    /// A filter naming a scenario file outside the corpus (a campaign's reproduction) plays
    /// that file, under its path, and only it when no other filter names corpus scenarios.
    #[test]
    fn a_filter_naming_a_scenario_file_plays_that_file() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let plan = Plan { root, bless: false, shard: None };
        let folder = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let file = folder.path().join("repro.toml");
        std::fs::write(&file, "title = \"t\"\n[[turn]]\nprompt = \"hi\"\nrespond = [{ text = [\"Hello.\"] }]\n")
            .unwrap_or_else(|error| panic!("{error}"));
        let name = file.display().to_string();
        let chosen = selection(&plan, std::slice::from_ref(&name), "scenario", |_| true).unwrap().mine;
        let names: Vec<&str> = chosen.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, [name.as_str()]);
        assert!(matches!(chosen[0].1, Ok(AnyScenario::Turn(_))));
        let filters = [name.clone(), "turn/clean-completion".to_owned()];
        let with_corpus = selection(&plan, &filters, "scenario", |_| true).unwrap().mine;
        assert_eq!(with_corpus.len(), 2);
    }

    /// gauntlet's own panic on one scenario is that scenario's `error`, named as gauntlet's
    /// bug; the run goes on.
    #[test]
    fn a_panic_of_gauntlets_own_is_that_scenarios_error() {
        let checked = contained("turn/x", || panic!("index out of bounds: the len is 1 but the index is 1"));
        assert_eq!(checked.verdict.kind, VerdictKind::Error);
        assert!(checked.verdict.findings[0].message.contains("a bug of gauntlet's"), "{:?}", checked.verdict);
        assert!(checked.verdict.findings[0].message.contains("index out of bounds"), "{:?}", checked.verdict);
    }
}
