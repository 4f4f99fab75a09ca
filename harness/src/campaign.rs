//! Campaigns: N seeded, generated scenarios ([`generator`]) played against the reference or an
//! agent, judged by the invariants and expectations alone (generated scenarios have no
//! goldens), and each requirement that failed shrunk, on the same implementation, to a smallest
//! scenario that still fails it, written as a scenario file to commit.
//!
//! A failure is confirmed by playing its scenario again before anything is shrunk: one that
//! passes the second time is reported as flaky, never shrunk into a reproduction that does not
//! reproduce. The shrunk scenario is confirmed the same way; when it does not fail again, the
//! confirmed original is the reproduction. The same seed gives the same scenarios in the same
//! order, so a campaign is reproducible bit for bit on the reference and scenario for scenario
//! on an agent.

pub mod generator;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gauntlet_mock_provider::Dialect;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde::{Deserialize, Serialize};

use crate::check::{self, Checked, Progress};
use crate::driver::Driver;
use crate::driver::reference::Reference;
use crate::interrupt;
use crate::origin::{Fingerprint, NotOneRun, Origin};
use crate::profile::Profile;
use gauntlet_judge::contract::{self, Tier};
use gauntlet_judge::judge;
use gauntlet_judge::scenario::{self, Capability, Scenario};
use gauntlet_judge::tool_map::AbstractTool;
use gauntlet_judge::verdict::{Layer, Verdict, VerdictKind};
use generator::{Generated, Space};

/// Plays one scenario on the implementation under test and judges it (without goldens).
pub type Play<'a> = dyn Fn(&str, &Scenario) -> Verdict + Sync + 'a;

/// How a campaign runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The implementation's name, for file names and reports.
    pub implementation: String,
    /// What it can meet.
    pub space: Space,
    /// How many scenarios.
    pub count: usize,
    /// The seed of the generator.
    pub seed: u64,
    /// Scenarios played at once.
    pub jobs: usize,
    /// Real time all shrinking together may take; a reproduction found when it is spent is
    /// kept as generated.
    pub shrink_budget: Duration,
    /// Where reproductions are written (`scenarios/regression/` of the corpus), or nowhere.
    pub write_to: Option<PathBuf>,
    /// The command that ran the campaign, without `--generate`, for the reproduction's header.
    pub command: String,
    /// The part of the seeded scenarios this run plays, when it is one shard of a campaign
    /// split across machines (`--shard K/N`: scenario `i` is shard `i mod N + 1`'s).
    pub shard: Option<crate::run::Shard>,
    /// What the implementation's version probe printed.
    pub version: Option<String>,
    /// What it is played with (its profile), fingerprinted: only shards of one campaign merge.
    pub profile_sha256: Fingerprint,
}

/// How many generated scenarios exercised a requirement (named it in `covers`, or failed it)
/// and how many failed it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// Scenarios that exercised it.
    pub exercised: usize,
    /// Scenarios that failed it.
    pub failed: usize,
}

/// A failure seen once that did not come again when its scenario was played a second time.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Flaky {
    /// The requirement.
    pub requirement: String,
    /// The scenario's index in the campaign.
    pub scenario: usize,
    /// The finding of the first play.
    pub finding: String,
}

/// A confirmed failure of one requirement and the smallest scenario found that still fails it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reproduction {
    /// The requirement.
    pub requirement: String,
    /// The index, in the campaign, of the scenario it was shrunk from.
    pub scenario: usize,
    /// The finding, as the reproduction's last confirming play gave it.
    pub finding: String,
    /// Smaller scenarios found on the way that still failed it.
    pub shrink_steps: usize,
    /// Turns of the reproduction, and of the scenario it came from.
    pub turns: (usize, usize),
    /// Where it was written, relative to the corpus root.
    pub path: Option<String>,
    /// The scenario file.
    pub toml: String,
}

/// The result of a campaign.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Campaign {
    /// The implementation.
    pub implementation: String,
    /// Its version, the shard this campaign is (if one), and what it was played from.
    #[serde(flatten)]
    pub origin: Origin,
    /// The generator's seed.
    pub seed: u64,
    /// Scenarios played.
    pub count: usize,
    /// Scenarios with a confirmed failure.
    pub failed: usize,
    /// Scenarios gauntlet could not play (`error`), a requirement `ERROR` of their own.
    pub errors: usize,
    /// Scenarios not played because gauntlet was stopped (SIGINT, SIGTERM), counted in no
    /// tally; a stopped campaign confirms and shrinks nothing.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub interrupted: usize,
    /// Real time the campaign took, shrinking included.
    pub elapsed_ms: u128,
    /// Per requirement, exercised and failed.
    pub requirements: BTreeMap<String, Tally>,
    /// One reproduction per failing requirement.
    pub reproductions: Vec<Reproduction>,
    /// Failures that did not come again.
    pub flaky: Vec<Flaky>,
}

impl Campaign {
    /// True when no requirement failed and nothing was flaky.
    pub fn is_clean(&self) -> bool {
        self.reproductions.is_empty() && self.flaky.is_empty()
    }
}

/// Why the shards of a campaign do not merge.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// They are not every shard of one campaign, each once.
    #[error(transparent)]
    NotOneRun(#[from] NotOneRun),
    /// The campaigns are of different implementations or seeds.
    #[error("the campaigns are not shards of one: {0} (seed {1}) and {2} (seed {3})")]
    Different(String, u64, String, u64),
}

/// The shards of one campaign (`--shard K/N` with one seed) as the campaign that played them
/// all: the scenarios played, failed and in error add up, each requirement's tally adds up
/// (every scenario is one shard's), the flaky failures are all kept, and a requirement broken
/// in several shards keeps the reproduction with the smallest scenario file. Only every shard
/// of one campaign, each once, merges ([`Origin::merged`]).
pub fn merge(shards: Vec<Campaign>) -> Result<Campaign, MergeError> {
    let origin = Origin::merged(shards.iter().map(|shard| &shard.origin))?;
    let mut shards = shards.into_iter();
    let Some(mut merged) = shards.next() else { return Err(NotOneRun::Empty.into()) };
    merged.origin = origin;
    for shard in shards {
        if shard.implementation != merged.implementation || shard.seed != merged.seed {
            return Err(MergeError::Different(merged.implementation, merged.seed, shard.implementation, shard.seed));
        }
        merged.count += shard.count;
        merged.failed += shard.failed;
        merged.errors += shard.errors;
        merged.interrupted += shard.interrupted;
        merged.elapsed_ms = merged.elapsed_ms.max(shard.elapsed_ms);
        for (requirement, tally) in shard.requirements {
            let total = merged.requirements.entry(requirement).or_default();
            total.exercised += tally.exercised;
            total.failed += tally.failed;
        }
        merged.reproductions.extend(shard.reproductions);
        merged.flaky.extend(shard.flaky);
    }
    merged.reproductions.sort_by(|a, b| (&a.requirement, a.toml.len()).cmp(&(&b.requirement, b.toml.len())));
    merged.reproductions.dedup_by(|later, kept| later.requirement == kept.requirement);
    merged.flaky.sort_by(|a, b| (&a.requirement, a.scenario).cmp(&(&b.requirement, b.scenario)));
    Ok(merged)
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What a scenario gauntlet could not play (an `error` verdict) counts as.
pub const ERROR: &str = "ERROR";
/// What a failed expectation of the scenario's own (a terminal state, an error kind) counts
/// as, when no requirement names it.
pub const EXPECTED: &str = "EXPECTED";

/// What a verdict breaks: each requirement with its first finding's message. Golden
/// differences are not judged (generated scenarios have no goldens), nor are differences a
/// MAY allows.
pub fn broken(verdict: &Verdict) -> BTreeMap<String, String> {
    let mut broken = BTreeMap::new();
    for finding in &verdict.findings {
        let unnamed = match finding.layer {
            _ if finding.is_difference() => continue,
            Layer::Fault => ERROR,
            Layer::Invariant | Layer::Expectation => EXPECTED,
            _ => continue,
        };
        let requirement = finding.requirement.clone().unwrap_or_else(|| unnamed.to_owned());
        broken.entry(requirement).or_insert_with(|| finding.message.clone());
        // The other requirements the same behaviour breaks, but a MAY's, which is a difference.
        for breach in finding.also.iter().filter(|breach| contract::tier_of(&breach.requirement) != Some(Tier::May)) {
            broken.entry(breach.requirement.clone()).or_insert_with(|| breach.message.clone());
        }
    }
    broken
}

/// The `count` trees of a campaign with `seed` over `space`, in order: the same on every run.
fn trees(space: Space, seed: u64, count: usize) -> Vec<impl ValueTree<Value = Generated>> {
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let strategy = generator::generated(space);
    // A strategy without filters never rejects, so `new_tree` cannot fail.
    (0..count).filter_map(|_| strategy.new_tree(&mut runner).ok()).collect()
}

/// The name of a campaign's scenario `index`, as reports and progress show it.
pub fn name(seed: u64, index: usize) -> String {
    format!("generated/seed-{seed}-{index}")
}

/// A generated scenario as the loader reads it; the generator writing an invalid one is
/// gauntlet's bug, reported as the scenario's error.
fn scenario_of(name: &str, toml: &str) -> Result<Scenario, String> {
    scenario::parse(toml, Path::new(name))
        .map_err(|error| format!("the generator wrote an invalid scenario, a bug of gauntlet's: {error}\n{toml}"))
}

/// Plays `toml` and judges it; a panic of gauntlet's own is the scenario's error.
fn verdict_of(play: &Play<'_>, name: &str, toml: &str) -> Verdict {
    let started = Instant::now();
    let checked = check::contained(name, || match scenario_of(name, toml) {
        Ok(scenario) => Checked::of(play(name, &scenario)),
        Err(error) => check::unplayable(name, error),
    });
    Verdict { elapsed_ms: started.elapsed().as_millis(), ..checked.verdict }
}

/// Plays a scenario on the reference runtime (in process, on a paused clock).
pub fn on_reference(name: &str, scenario: &Scenario) -> Verdict {
    let capture = Reference::default().drive(scenario);
    judge::judge(name, scenario, &capture, Vec::new())
}

/// The generated scenarios the agent of `profile` can meet: no cancel or reload without the
/// capability, no tool call without the `read` it runs, no reasoning on Chat Completions, and
/// no stall past an idle timeout it is not told.
pub fn space_of(profile: &Profile) -> Space {
    Space {
        reasoning: profile.dialect != Dialect::ChatCompletions,
        tools: profile.capabilities.contains(&Capability::Tools)
            || profile.tools.contains_key(&AbstractTool::Read)
            || profile.mcp,
        wait: profile.capabilities.contains(&Capability::Tools)
            || profile.tools.contains_key(&AbstractTool::Wait)
            || profile.mcp,
        tool_outcomes: profile.mcp,
        cancel: profile.capabilities.contains(&Capability::Cancel),
        load: profile.capabilities.contains(&Capability::Load),
        stalls: profile.knobs().idle_timeout,
        raw_arguments: profile.dialect != Dialect::Gemini,
    }
}

/// Plays a scenario on the agent of `profile` through `driver`.
pub fn on_agent<'a>(profile: &'a Profile, driver: &'a dyn Driver) -> impl Fn(&str, &Scenario) -> Verdict + Sync + 'a {
    move |name, scenario| match check::play(profile, driver, scenario) {
        Ok((scenario, capture)) => judge::judge(name, &scenario, &capture, Vec::new()),
        Err(why) => Verdict::skipped(name, why),
    }
}

/// Plays `toml` and says what it broke.
fn play_toml(play: &Play<'_>, name: &str, toml: &str) -> BTreeMap<String, String> {
    broken(&verdict_of(play, name, toml))
}

/// Runs a campaign: plays every scenario (`jobs` at a time; `progress` hears of each), then
/// confirms and shrinks one failure per requirement.
pub fn run(options: &Options, play: &Play<'_>, progress: &mut Progress<'_>) -> Campaign {
    let started = Instant::now();
    let selected = generate(options);
    let covers: Vec<Vec<String>> = selected
        .iter()
        .map(|(name, toml)| scenario_of(name, toml).map(|scenario| scenario.covers).unwrap_or_default())
        .collect();
    let Shard { played, ran: mine, interrupted } = play_shard(options, play, progress, &selected);
    let (requirements, failures) = tally(&mine, &played, &covers);
    // A stopped campaign confirms and shrinks nothing: what it found is reported as found.
    let failures: Vec<(&String, &Vec<usize>)> =
        if interrupt::requested().is_some() { Vec::new() } else { failures.iter().collect() };
    let (reproductions, flaky) = reproduce_all(options, play, &selected, &played, failures);
    let failed = played.iter().filter(|broken| !broken.is_empty()).count();
    let errors = played.iter().filter(|broken| broken.contains_key(ERROR)).count();
    // Every shard generates every scenario: their files are the campaign's corpus.
    let origin = Origin {
        version: options.version.clone(),
        shard: options.shard,
        corpus_sha256: Fingerprint::of(selected.iter().map(|(_, toml)| toml.as_bytes())),
        profile_sha256: options.profile_sha256.clone(),
    };
    Campaign {
        implementation: options.implementation.clone(),
        origin,
        seed: options.seed,
        count: mine.len(),
        failed,
        errors,
        interrupted,
        elapsed_ms: started.elapsed().as_millis(),
        requirements,
        reproductions,
        flaky,
    }
}

/// The title of campaign scenario `index`.
fn title(seed: u64, index: usize) -> String {
    format!("Generated (seed {seed}, scenario {index})")
}

/// Every scenario of the campaign, as its name and file.
fn generate(options: &Options) -> Vec<(String, String)> {
    let generated: Vec<Generated> =
        trees(options.space, options.seed, options.count).iter().map(ValueTree::current).collect();
    generated
        .iter()
        .enumerate()
        .map(|(index, generated)| (name(options.seed, index), generated.toml(&title(options.seed, index))))
        .collect()
}

/// What this shard played.
struct Shard {
    /// What each campaign scenario broke (nothing for one this shard did not play).
    played: Vec<BTreeMap<String, String>>,
    /// The campaign indices of the scenarios it played through.
    ran: Vec<usize>,
    /// How many of its scenarios were stopped before they played.
    interrupted: usize,
}

/// Plays this shard's scenarios of `selected`, `jobs` at a time.
fn play_shard(options: &Options, play: &Play<'_>, progress: &mut Progress<'_>, selected: &[(String, String)]) -> Shard {
    // This shard's scenarios only; every index stays the campaign's, so a name, a title or a
    // reproduction is the same whichever machine played it.
    let mine: Vec<usize> =
        (0..selected.len()).filter(|index| options.shard.is_none_or(|shard| shard.holds(*index))).collect();
    let results = check::each_parallel(
        mine.iter().map(|&index| selected[index].clone()).collect(),
        options.jobs,
        progress,
        |name, toml: String| Checked::of(verdict_of(play, name, &toml)),
    );
    // A scenario gauntlet was stopped before it played is in no tally.
    let (mut played, mut ran) = (vec![BTreeMap::new(); selected.len()], Vec::new());
    for (&index, checked) in mine.iter().zip(&results) {
        if checked.verdict.kind != VerdictKind::Interrupted {
            played[index] = broken(&checked.verdict);
            ran.push(index);
        }
    }
    Shard { played, interrupted: mine.len() - ran.len(), ran }
}

/// Per requirement, how often the scenarios `mine` exercised and failed it, and which of them
/// failed it.
fn tally(
    mine: &[usize],
    played: &[BTreeMap<String, String>],
    covers: &[Vec<String>],
) -> (BTreeMap<String, Tally>, BTreeMap<String, Vec<usize>>) {
    let mut requirements: BTreeMap<String, Tally> = BTreeMap::new();
    let mut failures: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for &index in mine {
        let broken = &played[index];
        for requirement in &covers[index] {
            requirements.entry(requirement.clone()).or_default().exercised += 1;
        }
        for requirement in broken.keys() {
            let tally = requirements.entry(requirement.clone()).or_default();
            if !covers[index].contains(requirement) {
                tally.exercised += 1;
            }
            tally.failed += 1;
            failures.entry(requirement.clone()).or_default().push(index);
        }
    }
    (requirements, failures)
}

/// Confirms and shrinks each failing requirement on its own, `jobs` at a time, against one
/// deadline; the results keep the requirements' order.
fn reproduce_all(
    options: &Options,
    play: &Play<'_>,
    selected: &[(String, String)],
    played: &[BTreeMap<String, String>],
    failures: Vec<(&String, &Vec<usize>)>,
) -> (Vec<Reproduction>, Vec<Flaky>) {
    let deadline = Instant::now() + options.shrink_budget;
    // A reproduction that panicked (gauntlet's bug) leaves its requirement unreproduced.
    let results = crate::pool::map_in_order(
        failures,
        options.jobs,
        |_, (requirement, indices)| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                reproduce(options, play, selected, played, deadline, requirement, indices)
            }))
            .ok()
        },
        |_, _| {},
    );
    let (mut reproductions, mut flaky) = (Vec::new(), Vec::new());
    for (reproduction, seen) in results.into_iter().flatten() {
        reproductions.extend(reproduction);
        flaky.extend(seen);
    }
    (reproductions, flaky)
}

/// Confirms `requirement`'s failure on the scenarios `indices` and shrinks the first that
/// fails again; those that pass are flaky.
fn reproduce(
    options: &Options,
    play: &Play<'_>,
    selected: &[(String, String)],
    played: &[BTreeMap<String, String>],
    deadline: Instant,
    requirement: &String,
    indices: &[usize],
) -> (Option<Reproduction>, Vec<Flaky>) {
    let mut flaky = Vec::new();
    // The smallest scenario (by its file) whose failure comes again, so shrinking starts
    // nearest the end; at most three tries per requirement.
    let mut smallest = indices.to_vec();
    smallest.sort_by_key(|&index| selected[index].1.len());
    for &index in smallest.iter().take(3) {
        let (name, toml) = &selected[index];
        let again = play_toml(play, name, toml);
        if interrupt::requested().is_some() {
            break;
        }
        if !again.contains_key(requirement) {
            let finding = played[index].get(requirement).cloned().unwrap_or_default();
            flaky.push(Flaky { requirement: requirement.clone(), scenario: index, finding });
            continue;
        }
        // The scenario's own tree, generated again: shrinking walks it.
        let Some(tree) = trees(options.space, options.seed, index + 1).pop() else { break };
        let mut reproduction = shrink(options, play, requirement, index, tree, &title(options.seed, index), deadline);
        reproduction.path = write(options, &mut reproduction);
        return (Some(reproduction), flaky);
    }
    (None, flaky)
}

/// Shrinks campaign scenario `index` (its value `tree`), which failed `requirement` twice, to
/// the smallest scenario that still fails it, until `deadline`; then confirms the result once
/// more.
fn shrink(
    options: &Options,
    play: &Play<'_>,
    requirement: &str,
    index: usize,
    mut tree: impl ValueTree<Value = Generated>,
    title: &str,
    deadline: Instant,
) -> Reproduction {
    let original = tree.current();
    let name = name(options.seed, index);
    let fails = |generated: &Generated| play_toml(play, &name, &generated.toml(title)).get(requirement).cloned();
    let mut smallest = original.clone();
    let mut steps = 0;
    // proptest's own shrinking walk: simplify while it still fails, step back when it passes.
    if tree.simplify() {
        while Instant::now() < deadline && interrupt::requested().is_none() {
            let candidate = tree.current();
            // Stepping back can land on the smallest failure itself: no need to play it again.
            let still = candidate == smallest || fails(&candidate).is_some();
            if still {
                if candidate != smallest {
                    smallest = candidate;
                    steps += 1;
                }
                if !tree.simplify() {
                    break;
                }
            } else if !tree.complicate() {
                break;
            }
        }
    }
    let shrunk_title = format!("{title}, shrunk: {requirement} on {}", options.implementation);
    // The reproduction must fail once more as written; if the shrunk one does not, the
    // original (confirmed twice already) is the reproduction.
    let (chosen, finding) = match fails(&smallest) {
        Some(finding) => (smallest, finding),
        None => {
            steps = 0;
            let finding = fails(&original).unwrap_or_default();
            (original.clone(), finding)
        }
    };
    Reproduction {
        requirement: requirement.to_owned(),
        scenario: index,
        finding,
        shrink_steps: steps,
        turns: (chosen.turns.len(), original.turns.len()),
        path: None,
        toml: chosen.toml(&shrunk_title),
    }
}

/// Writes `reproduction` as `<write_to>/<implementation>-<requirement>-<seed>.toml`, with a
/// header saying what it reproduces and how to run it; returns its path (relative to the
/// current folder when under it), or `None` when the campaign writes nothing or could not.
fn write(options: &Options, reproduction: &mut Reproduction) -> Option<String> {
    let folder = options.write_to.as_ref()?;
    let stem = format!("{}-{}-{}", options.implementation, reproduction.requirement.to_lowercase(), options.seed)
        .replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "-");
    let path = folder.join(format!("{stem}.toml"));
    // In the corpus, its scenario name (which `run` and `check` select); elsewhere its path.
    let in_corpus = folder.parent().and_then(Path::file_name).is_some_and(|name| name == "scenarios");
    let shown = match folder.file_name() {
        Some(family) if in_corpus => format!("{}/{stem}", family.to_string_lossy()),
        _ => {
            let here = std::env::current_dir().ok();
            here.as_deref().and_then(|here| path.strip_prefix(here).ok()).unwrap_or(&path).display().to_string()
        }
    };
    let finding = reproduction.finding.replace('\n', " ");
    // The schema beside the corpus, for editors, where the file's place says where it is.
    let schema = if in_corpus { "#:schema ../../docs/schema/scenario.schema.json\n" } else { "" };
    let header = format!(
        "{schema}# Reproduces {requirement} on {implementation}: {finding}\n\
         # Found by `{command} --generate {count} --seed {seed}` (scenario {index}), shrunk in {steps} steps.\n\
         # Run it: `{command} {shown}`.\n",
        requirement = reproduction.requirement,
        implementation = options.implementation,
        command = options.command,
        count = options.count,
        seed = options.seed,
        index = reproduction.scenario,
        steps = reproduction.shrink_steps,
    );
    reproduction.toml = format!("{header}{}", reproduction.toml);
    std::fs::create_dir_all(folder).ok()?;
    std::fs::write(&path, &reproduction.toml).ok()?;
    Some(shown)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Mutex;

    use super::*;
    use gauntlet_agent::TerminalStatus;
    use gauntlet_judge::verdict::Finding;

    fn options(count: usize, write_to: Option<PathBuf>) -> Options {
        Options {
            implementation: "fake".to_owned(),
            space: Space::ALL,
            count,
            seed: 3,
            jobs: 2,
            shrink_budget: Duration::from_secs(60),
            write_to,
            command: "gauntlet check --impl fake.toml".to_owned(),
            shard: None,
            version: None,
            profile_sha256: Fingerprint::of([]),
        }
    }

    /// A fake implementation with a bug only a combination shows: it replays a partial answer
    /// when an HTTP 429 came earlier in the same turn. It also fails `FLAKY-ONCE` the first
    /// time it plays any scenario of four turns, never again.
    fn fake(seen: &Mutex<BTreeSet<String>>) -> impl Fn(&str, &Scenario) -> Verdict + Sync + '_ {
        move |name, scenario| {
            let mut findings = Vec::new();
            let combination = scenario.turns.iter().any(|turn| {
                turn.expect == TerminalStatus::PartialFailed
                    && turn.respond.iter().any(|response| response.status == Some(429))
            });
            if combination {
                findings.push(Finding::new(
                    Layer::Invariant,
                    Some("REPLAY-NO-PARTIAL"),
                    "the partial text was replayed",
                ));
            }
            let first = seen.lock().map(|mut seen| seen.insert(name.to_owned())).unwrap_or(false);
            if scenario.turns.len() == 4 && first {
                findings.push(Finding::new(Layer::Invariant, Some("FLAKY-ONCE"), "a race"));
            }
            Verdict::from_findings(name, Vec::new(), findings)
        }
    }

    #[test]
    fn a_combination_is_found_confirmed_shrunk_and_written_and_a_flaky_failure_only_reported() {
        let folder = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let seen = Mutex::new(BTreeSet::new());
        let campaign = run(&options(60, Some(folder.path().to_owned())), &fake(&seen), &mut |_, _, _, _| {});

        let [reproduction] = &campaign.reproductions[..] else { panic!("{campaign:#?}") };
        assert_eq!(reproduction.requirement, "REPLAY-NO-PARTIAL");
        // Shrunk to the one turn that shows it, and confirmed by a last play.
        assert_eq!(reproduction.turns.0, 1, "{}", reproduction.toml);
        assert!(reproduction.toml.contains("status = 429"), "{}", reproduction.toml);
        assert!(reproduction.toml.contains("expect = \"partial_failed\""), "{}", reproduction.toml);
        let file = folder.path().join("fake-replay-no-partial-3.toml");
        let written = std::fs::read_to_string(&file).unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        assert_eq!(written, reproduction.toml);
        assert!(written.contains("# Reproduces REPLAY-NO-PARTIAL on fake: the partial text was replayed"));
        assert!(written.contains("--generate 60 --seed 3"));
        scenario::parse(&written, &file).unwrap_or_else(|error| panic!("{error}"));

        let tally = &campaign.requirements["REPLAY-NO-PARTIAL"];
        assert!(tally.failed > 0 && tally.exercised >= tally.failed, "{tally:?}");
        // The flaky failure is reported once per requirement tried, never shrunk nor written.
        assert!(campaign.flaky.iter().all(|flaky| flaky.requirement == "FLAKY-ONCE"), "{:?}", campaign.flaky);
        assert!(!campaign.flaky.is_empty());
        assert_eq!(std::fs::read_dir(folder.path()).map(Iterator::count).unwrap_or(0), 1);
    }

    #[test]
    fn the_same_seed_gives_the_same_scenarios() {
        let toml = |seed| trees(Space::ALL, seed, 20).iter().map(|tree| tree.current().toml("t")).collect::<Vec<_>>();
        assert_eq!(toml(5), toml(5));
        assert_ne!(toml(5), toml(6));
    }

    #[test]
    fn cancels_come_while_text_streams_while_a_tool_runs_and_while_a_retry_waits() {
        let texts: Vec<String> = trees(Space::ALL, 3, 200).iter().map(|tree| tree.current().toml("t")).collect();
        for at in ["cancel = \"first_delta\"", "cancel = \"tool_call\"", "cancel = \"retry_wait\""] {
            assert!(texts.iter().any(|text| text.contains(at)), "no {at} in 200 scenarios");
        }
        let without_wait = Space { wait: false, ..Space::ALL };
        for tree in trees(without_wait, 3, 200) {
            assert!(!tree.current().toml("t").contains("tool_call"), "a wait call without a mapped wait tool");
        }
    }

    /// The model's own misbehaviour is drawn too: an empty answer, a call to a tool nobody
    /// offered, a call the output limit cuts (only where the agent runs the corpus's `read`).
    #[test]
    fn the_models_misbehaviour_is_drawn() {
        let texts: Vec<String> = trees(Space::ALL, 5, 200).iter().map(|tree| tree.current().toml("t")).collect();
        let drawn = |needle: &str| texts.iter().any(|text| text.contains(needle));
        assert!(drawn("name = \"deploy_to_production\""), "no call to an unknown tool in 200 scenarios");
        assert!(drawn("cut_after = 4, then = { incomplete"), "no call cut by the output limit in 200 scenarios");
        assert!(drawn("{ text = [] }"), "no empty answer in 200 scenarios");
        assert!(drawn("raw_args = '{\"path\": \"notes.txt\"'"), "no call with invalid arguments in 200 scenarios");
        assert!(drawn("call_id = \"call_r"), "no repeated call id in 200 scenarios");
        assert!(drawn("{ refusal = ["), "no refusal in 200 scenarios");
        let on_gemini = Space { raw_arguments: false, ..Space::ALL };
        for tree in trees(on_gemini, 5, 200) {
            assert!(
                !tree.current().toml("t").contains("raw_args"),
                "invalid arguments on a wire that cannot carry them"
            );
        }
        let without_tools = Space { tools: false, ..Space::ALL };
        for tree in trees(without_tools, 5, 200) {
            assert!(!tree.current().toml("t").contains("cut_after = 4"), "a cut read call without a mapped read tool");
        }
    }

    /// Tool faults are drawn where gauntlet's MCP server answers, written as scenarios that
    /// parse; never where it does not.
    #[test]
    fn tool_outcomes_are_drawn_only_where_the_mcp_server_answers() {
        let with: Vec<String> = trees(Space::ALL, 7, 200).iter().map(|tree| tree.current().toml("t")).collect();
        for text in &with {
            assert!(scenario_of("g", text).is_ok(), "{text}");
        }
        let faults = [
            "outcome = { error",
            "outcome = { rpc_error",
            "outcome = { result",
            "outcome = { slow_ms",
            "outcome = \"hang\"",
        ];
        for fault in faults {
            assert!(with.iter().any(|text| text.contains(fault)), "no scenario draws {fault}");
        }
        let without = Space { tool_outcomes: false, ..Space::ALL };
        assert!(trees(without, 7, 200).iter().all(|tree| !tree.current().toml("t").contains("outcome =")));
    }

    #[test]
    fn a_space_without_cancel_tools_or_stalls_never_generates_them() {
        let space = Space {
            reasoning: false,
            tools: false,
            wait: false,
            cancel: false,
            load: false,
            stalls: false,
            raw_arguments: false,
            tool_outcomes: false,
        };
        for tree in trees(space, 1, 200) {
            let text = tree.current().toml("t");
            // A call to a tool nobody offered needs no tool of the agent's: only the corpus's do.
            let absent =
                ["cancel =", "name = \"read\"", "name = \"wait\"", "reasoning =", "reload =", "ms = 5000", "timed_out"];
            for absent in absent {
                assert!(!text.contains(absent), "{absent} in\n{text}");
            }
        }
    }
}
