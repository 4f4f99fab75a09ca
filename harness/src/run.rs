//! Running scenarios: load, drive, golden, judge. Both the CLI and `cargo test` call this, so
//! they cannot disagree.

use std::path::{Path, PathBuf};
use std::time::Instant;

use gauntlet_mock_provider::Dialect;
use serde::{Deserialize, Serialize};

use crate::driver::Driver;
use crate::golden;
use gauntlet_judge::lifecycle::capture::LifecycleCapture;
use gauntlet_judge::lifecycle::{self, LifecycleScenario};
use gauntlet_judge::locate::{self, LoadError};
use gauntlet_judge::scenario::{AcpVersion, Scenario};
use gauntlet_judge::verdict::{Finding, Layer, Verdict};
use gauntlet_judge::{judge, scenario};

/// Where the corpus lives and how to treat goldens.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The folder holding `scenarios/` and `golden/`.
    pub root: PathBuf,
    /// Write pending golden files for mismatches.
    pub bless: bool,
    /// The part of the corpus this invocation plays, when it is one shard of a run split
    /// across machines (`--shard K/N`).
    pub shard: Option<Shard>,
}

/// One of `count` deterministic parts of the corpus (`--shard K/N`, K from 1): the scenarios
/// whose place in the corpus's name order is K-1 modulo N. Every scenario is in exactly one
/// shard, on every machine, so `gauntlet merge` of the N reports is the one run. Reports write
/// it as `"K/N"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Shard {
    /// K, from 1.
    pub index: usize,
    /// N.
    pub count: usize,
}

impl Shard {
    /// Whether the scenario at `place` of the corpus's name order is this shard's.
    pub fn holds(self, place: usize) -> bool {
        place % self.count == self.index - 1
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}/{}", self.index, self.count)
    }
}

impl From<Shard> for String {
    fn from(shard: Shard) -> String {
        shard.to_string()
    }
}

impl TryFrom<String> for Shard {
    type Error = String;

    fn try_from(text: String) -> Result<Shard, String> {
        text.parse()
    }
}

impl schemars::JsonSchema for Shard {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Shard".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "`K/N`: the K-th of N parts of the corpus (`--shard K/N`).",
            "type": "string",
            "pattern": "^[1-9][0-9]*/[1-9][0-9]*$"
        })
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Shard, String> {
        let parsed = text.split_once('/').and_then(|(k, n)| Some((k.parse::<usize>().ok()?, n.parse::<usize>().ok()?)));
        match parsed {
            Some((index, count)) if count > 0 && (1..=count).contains(&index) => Ok(Shard { index, count }),
            _ => Err(format!("`{text}` is not a shard K/N with 1 <= K <= N")),
        }
    }
}

/// A command that selects no scenario: gauntlet's own failure (exit 2), never a pass, since
/// nothing checked proves nothing (issue 40).
#[derive(Debug, thiserror::Error)]
#[error("no {what} under {} matches {filters:?}: nothing to check", scenarios.display())]
pub struct NothingSelected {
    /// What was looked for: `scenario`, `Turn scenario`, `monitor scenario`.
    pub what: String,
    /// The corpus's scenarios folder.
    pub scenarios: PathBuf,
    /// The filters given.
    pub filters: Vec<String>,
}

impl NothingSelected {
    /// `Err` when `selected` is none: no `what` of `plan` matches `filters`.
    pub fn unless(selected: usize, what: &str, plan: &Plan, filters: &[String]) -> Result<(), NothingSelected> {
        if selected > 0 {
            return Ok(());
        }
        Err(NothingSelected { what: what.to_owned(), scenarios: plan.scenarios(), filters: filters.to_vec() })
    }
}

/// Why no corpus root was found.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    /// No folder at or above `start` holds [`CORPUS_MARKER`].
    #[error(
        "no gauntlet corpus (a folder holding `{CORPUS_MARKER}`, as `gauntlet export` writes it) in {} \
         or any folder above it; run inside a corpus or give one with --root or GAUNTLET_ROOT",
        start.display()
    )]
    NotFound {
        /// Where the search began.
        start: PathBuf,
    },
    /// A root given by `--root` or `GAUNTLET_ROOT` without `scenarios/`.
    #[error("{} is not a gauntlet corpus: it has no `scenarios/` folder", root.display())]
    NoScenarios {
        /// The root given.
        root: PathBuf,
    },
    /// The current folder could not be read.
    #[error("reading the current folder: {0}")]
    CurrentDir(std::io::Error),
}

/// The file that marks a corpus root, as `Cargo.toml` marks a package for cargo: gauntlet's
/// own, since a `scenarios/` folder alone may be anyone's (an agent repository's tests).
pub const CORPUS_MARKER: &str = "scenarios/.gauntlet-corpus";

impl Plan {
    /// The corpus at `root`, which must hold `scenarios/` (given by name, it needs no
    /// [`CORPUS_MARKER`]); blessing off.
    pub fn at(root: &Path) -> Result<Plan, RootError> {
        if !root.join("scenarios").is_dir() {
            return Err(RootError::NoScenarios { root: root.to_owned() });
        }
        Ok(Plan { root: root.to_owned(), bless: false, shard: None })
    }

    /// The nearest corpus at or above `start` (the first folder holding [`CORPUS_MARKER`], the
    /// way cargo finds `Cargo.toml`); blessing off. The CLI starts from the current folder, never
    /// from where it was built, so an installed `gauntlet` works on any checkout.
    pub fn find(start: &Path) -> Result<Plan, RootError> {
        start
            .ancestors()
            .find(|folder| folder.join(CORPUS_MARKER).is_file())
            .map(|root| Plan { root: root.to_owned(), bless: false, shard: None })
            .ok_or_else(|| RootError::NotFound { start: start.to_owned() })
    }

    /// This repository's own corpus (the workspace above this crate), for its tests and
    /// benches only: the CLI uses [`Plan::at`] or [`Plan::find`].
    pub fn repository() -> Plan {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().map_or_else(|| PathBuf::from("."), Path::to_owned);
        Plan { root, bless: false, shard: None }
    }

    /// The scenarios folder.
    pub fn scenarios(&self) -> PathBuf {
        self.root.join("scenarios")
    }

    /// The golden folder.
    pub fn golden(&self) -> PathBuf {
        self.root.join("golden")
    }
}

/// Every scenario as `(name, path)`, sorted by name (of the plan's shard only, when it is
/// one); the name is the path under `scenarios/` without `.toml`, e.g. `turn/partial-then-error`.
pub fn scenario_names(plan: &Plan) -> Vec<(String, PathBuf)> {
    let base = plan.scenarios();
    let mut found = Vec::new();
    golden::walk(&base, &mut |path| {
        if path.extension().is_some_and(|ext| ext == "toml")
            && let Ok(relative) = path.strip_prefix(&base)
        {
            let name = relative.with_extension("").to_string_lossy().replace('\\', "/");
            found.push((name, path.to_owned()));
        }
    });
    found.sort();
    if let Some(shard) = plan.shard {
        found =
            found.into_iter().enumerate().filter(|(place, _)| shard.holds(*place)).map(|(_, found)| found).collect();
    }
    found
}

/// A scenario file of any family: a Turn scenario, or a lifecycle one (it has a `kind`).
#[derive(Debug, Clone)]
pub enum AnyScenario {
    /// Prompts against a scripted Provider, played as an ACP client.
    Turn(Box<Scenario>),
    /// A config and timed steps, answered with records.
    Lifecycle(LifecycleScenario),
}

/// Reads a scenario file of any family.
pub fn load(path: &Path) -> Result<AnyScenario, LoadError> {
    let text = locate::read_text(path)?;
    match lifecycle::kind_of(&text, path)? {
        Some(kind) => Ok(AnyScenario::Lifecycle(lifecycle::parse_as(&text, path, kind)?)),
        None => Ok(AnyScenario::Turn(Box::new(scenario::parse(&text, path)?))),
    }
}

/// Runs one scenario against the reference (lifecycle scenarios) or `driver` (Turn scenarios)
/// and judges it, in the dialect its file names.
pub fn run_scenario(plan: &Plan, driver: &dyn Driver, name: &str, path: &Path) -> Verdict {
    run_scenario_in(plan, driver, name, path, None)
}

/// The dialects the corpus plays every Turn scenario in: those both the mock and the reference
/// runtime speak, all four.
pub const CORPUS_DIALECTS: [Dialect; 4] = Dialect::ALL;

/// The name of a scenario's trial in a dialect: `turn/partial-then-error [chat_completions]`;
/// the plain name for `responses`.
pub fn trial_name(name: &str, dialect: Dialect) -> String {
    match dialect {
        Dialect::Responses => name.to_owned(),
        other => format!("{name} [{other}]"),
    }
}

/// One way the corpus plays a scenario file: `cargo test` makes it a trial, `gauntlet run` a
/// line of its table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Play {
    /// The trial's title: the scenario's name, with `[dialect]` after it for a dialect other
    /// than the file's.
    pub title: String,
    /// The dialect to play it in; `None` for the file's own (and for lifecycle scenarios).
    pub dialect: Option<Dialect>,
    /// The ACP version the client speaks.
    pub acp: AcpVersion,
    /// The dialect cannot express the scenario (its `skip_dialects`): the play is `skipped`.
    pub skipped: bool,
}

/// The plays of a scenario file: a Turn scenario in its own dialect and then in every other
/// corpus dialect, then once more over ACP v2 in its own dialect; a lifecycle scenario (or an
/// unreadable file) once.
pub fn plays(name: &str, path: &Path) -> Vec<Play> {
    let mut plays = vec![Play { title: name.to_owned(), dialect: None, acp: AcpVersion::V1, skipped: false }];
    if let Ok(AnyScenario::Turn(scenario)) = load(path) {
        // A scenario v1 cannot express (a prompt's `idempotencyKey`) is played in v2 alone.
        let no_v1 = scenario.in_acp(AcpVersion::V1).is_err();
        plays[0].skipped = no_v1;
        let others = CORPUS_DIALECTS.into_iter().filter(|dialect| *dialect != Dialect::Responses);
        plays.extend(others.map(|dialect| Play {
            title: trial_name(name, dialect),
            dialect: Some(dialect),
            acp: AcpVersion::V1,
            skipped: no_v1 || scenario.config.skip_dialects.contains_key(&dialect),
        }));
        let skipped = scenario.in_acp(AcpVersion::V2).is_err();
        plays.push(Play { title: format!("{name} [acp v2]"), dialect: None, acp: AcpVersion::V2, skipped });
    }
    plays
}

/// [`run_scenario`] in `dialect` (`None`: the file's): a Turn scenario the dialect cannot
/// express is `skipped` with the file's reason. The Log, `outcome.json` and ACP goldens are
/// the same files in every dialect; the requests golden is the dialect's own.
pub fn run_scenario_in(plan: &Plan, driver: &dyn Driver, name: &str, path: &Path, dialect: Option<Dialect>) -> Verdict {
    let title = dialect.map_or_else(|| name.to_owned(), |dialect| trial_name(name, dialect));
    run_play(plan, driver, name, path, &Play { title, dialect, acp: AcpVersion::V1, skipped: false })
}

/// [`run_scenario`] as `play` says: in its dialect and ACP version, under its title. A Turn
/// scenario the dialect cannot express is `skipped` with the file's reason.
pub fn run_play(plan: &Plan, driver: &dyn Driver, name: &str, path: &Path, play: &Play) -> Verdict {
    let started = Instant::now();
    let (title, dialect) = (play.title.clone(), play.dialect);
    let mut verdict = match load(path) {
        Err(error) => {
            Verdict::from_findings(&title, Vec::new(), vec![Finding::new(Layer::Fault, None, error.to_string())])
        }
        Ok(AnyScenario::Turn(scenario)) => match dialect.map_or(Ok((*scenario).clone()), |d| scenario.in_dialect(d)) {
            Err(inexpressible) => Verdict::skipped(&title, inexpressible.to_string()),
            Ok(scenario) => match scenario.in_acp(play.acp) {
                Err(inexpressible) => Verdict::skipped(&title, inexpressible),
                Ok(scenario) => {
                    let capture = driver.drive(&scenario);
                    let golden = golden::compare(
                        &plan.root,
                        &Path::new("golden").join(name),
                        &capture.golden_files(),
                        plan.bless,
                    );
                    judge::judge(&title, &scenario, &capture, golden)
                }
            },
        },
        Ok(AnyScenario::Lifecycle(scenario)) => {
            judge_lifecycle(plan, name, &scenario, &crate::lifecycle::reference::run(&scenario))
        }
    };
    verdict.elapsed_ms = started.elapsed().as_millis();
    verdict
}

/// Compares a lifecycle capture with its golden and judges it.
pub fn judge_lifecycle(plan: &Plan, name: &str, scenario: &LifecycleScenario, capture: &LifecycleCapture) -> Verdict {
    let golden = golden::compare(&plan.root, &Path::new("golden").join(name), &capture.golden_files(), plan.bless);
    judge::lifecycle::judge(name, scenario, capture, golden)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_corpus_is_found_at_or_above_a_folder_never_from_the_build_path() {
        let dir = tempfile::tempdir().unwrap();
        let corpus = dir.path().join("corpus");
        std::fs::create_dir_all(corpus.join("scenarios/turn")).unwrap();
        std::fs::write(corpus.join(CORPUS_MARKER), "").unwrap();
        std::fs::create_dir_all(corpus.join("deep/er")).unwrap();
        // An agent's repository inside the corpus, with a `scenarios/` folder of its own.
        let agent = corpus.join("agent");
        std::fs::create_dir_all(agent.join("scenarios")).unwrap();
        for start in [corpus.clone(), corpus.join("deep/er"), corpus.join("scenarios/turn"), agent.clone()] {
            let found = Plan::find(&start).unwrap().root;
            // `scenarios/turn` and `agent` hold no marker: the corpus above them is found.
            assert_eq!(found, corpus, "from {}", start.display());
        }
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(elsewhere.join("scenarios")).unwrap();
        if !dir.path().ancestors().any(|folder| folder.join(CORPUS_MARKER).is_file()) {
            // A `scenarios/` folder without the marker is not a corpus found by walking up.
            assert!(matches!(Plan::find(&elsewhere), Err(RootError::NotFound { .. })));
        }
        // Named, it is one; a folder without `scenarios/` is not.
        assert_eq!(Plan::at(&elsewhere).unwrap().root, elsewhere);
        assert!(matches!(Plan::at(&dir.path().join("corpus/deep")), Err(RootError::NoScenarios { .. })));
        assert_eq!(Plan::at(&corpus).unwrap().root, corpus);
    }

    use super::*;
    use crate::driver::Driver;
    use crate::driver::reference::Reference;
    use gauntlet_judge::verdict::VerdictKind;

    /// A copy of the repository's scenarios and goldens in a scratch folder.
    fn scratch_corpus() -> (tempfile::TempDir, Plan) {
        let dir = tempfile::tempdir().unwrap();
        let source = Plan::repository();
        for folder in ["scenarios", "golden"] {
            let base = source.root.join(folder);
            golden::walk(&base, &mut |path| {
                let target = dir.path().join(folder).join(path.strip_prefix(&base).unwrap());
                std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                std::fs::copy(path, target).unwrap();
            });
        }
        let root = dir.path().to_owned();
        (dir, Plan { root, bless: false, shard: None })
    }

    fn run_all(plan: &Plan) -> Vec<Verdict> {
        scenario_names(plan).iter().map(|(name, path)| run_scenario(plan, &Reference::default(), name, path)).collect()
    }

    #[test]
    fn editing_one_golden_byte_fails_exactly_that_scenario_with_a_diff() {
        let (_dir, plan) = scratch_corpus();
        let log = plan.golden().join("turn/partial-then-error/log.ndjson");
        let text = std::fs::read_to_string(&log).unwrap();
        std::fs::write(&log, text.replacen("Useful partial", "Useful partiaL", 1)).unwrap();
        // A scenario v1 cannot express is skipped in v1, the play `run_scenario` plays.
        let failing: Vec<Verdict> = run_all(&plan)
            .into_iter()
            .filter(|v| !matches!(v.kind, VerdictKind::Identical | VerdictKind::Skipped))
            .collect();
        assert_eq!(failing.len(), 1, "{failing:#?}");
        assert_eq!(failing[0].scenario, "turn/partial-then-error");
        assert_eq!(failing[0].kind, VerdictKind::Conformant);
        let message = &failing[0].findings[0].message;
        assert!(message.contains("-{") && message.contains("Useful partiaL") && message.contains("+{"), "{message}");
        let blessing = Plan { bless: true, ..plan.clone() };
        let path = plan.scenarios().join("turn/partial-then-error.toml");
        run_scenario(&blessing, &Reference::default(), "turn/partial-then-error", &path);
        assert_eq!(golden::pending(&plan.golden()), [log.with_file_name("log.ndjson.new")]);
    }

    #[test]
    fn the_corpus_is_byte_deterministic() {
        let plan = Plan::repository();
        for (name, path) in scenario_names(&plan) {
            let (first, second) = match load(&path).unwrap() {
                AnyScenario::Turn(scenario) => (
                    Reference::default().drive(&scenario).golden_files(),
                    Reference::default().drive(&scenario).golden_files(),
                ),
                AnyScenario::Lifecycle(scenario) => (
                    crate::lifecycle::reference::run(&scenario).golden_files(),
                    crate::lifecycle::reference::run(&scenario).golden_files(),
                ),
            };
            assert_eq!(first, second, "{name} differs between two runs");
        }
    }

    #[test]
    fn a_misspelt_key_fails_its_scenario_with_file_line_and_key() {
        let (_dir, plan) = scratch_corpus();
        let path = plan.scenarios().join("turn/clean-completion.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("prompt =", "promt =")).unwrap();
        let verdict = run_scenario(&plan, &Reference::default(), "turn/clean-completion", &path);
        assert_eq!(verdict.kind, VerdictKind::Error);
        let message = &verdict.findings[0].message;
        assert!(message.contains("turn/clean-completion.toml:5:1: key `promt`"), "{message}");
    }
}
