//! Generated scenarios: a seeded generator of valid Turn scenarios (prompts, text, reasoning,
//! tool calls, HTTP retries, in-band errors, failures, drops, EOFs, malformed frames, stalls
//! past the idle timeout, cancels) whose expected terminal states follow from the contract.
//! The reference must satisfy every invariant and expectation on each one. A failure is
//! shrunk by proptest to a smallest scenario and saved under `scenarios/regression/`, to be
//! fixed, blessed and reviewed like any reproduced bug.
//!
//! `cargo test -p gauntlet --test conformance -- generated` runs a fixed seed;
//! `GAUNTLET_GENERATED_CASES=10000 GAUNTLET_GENERATED_SEED=7 cargo test --release -p gauntlet
//! --test conformance -- generated` runs as long as asked.

use std::fmt::Write as _;
use std::path::Path;

use gauntlet::driver::Driver;
use gauntlet::driver::reference::Reference;
use gauntlet::judge;
use gauntlet::scenario;
use gauntlet::verdict::Layer;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};

/// The idle timeout of every generated scenario, and the stall that exceeds it (virtual ms).
const IDLE_TIMEOUT_MS: u64 = 1_000;
const STALL_MS: u64 = 5_000;
/// A cancel waits on a stream held open this long (virtual ms).
const HOLD_MS: u64 = 3_600_000;
/// The reference's `max_retries` in generated scenarios.
const MAX_RETRIES: usize = 2;

/// How the last response of a turn ends.
#[derive(Debug, Clone)]
enum Ending {
    /// `response.completed`, optionally after a reasoning item.
    Completed { reasoning: bool },
    /// `response.incomplete` (`max_output_tokens`): still a clean, truncated answer.
    Truncated,
    /// A stream that ends in this `then` after its text.
    Broken(&'static str),
    /// The stream holds after `shown` deltas past the idle timeout.
    Stall { shown: usize },
    /// The client cancels after the first delta of a held stream.
    Cancel,
}

/// One turn: HTTP failures first, then an optional tool loop, then the answer.
#[derive(Debug, Clone)]
struct Turn {
    /// Statuses answered before the real response (each retried while retries last).
    http: Vec<u16>,
    /// The model first calls `list`, then answers.
    tool: bool,
    /// The answer's text chunks (may be empty).
    chunks: usize,
    ending: Ending,
}

/// A generated scenario.
#[derive(Debug, Clone)]
struct Generated {
    turns: Vec<Turn>,
}

fn ending() -> impl Strategy<Value = Ending> {
    prop_oneof![
        3 => any::<bool>().prop_map(|reasoning| Ending::Completed { reasoning }),
        1 => Just(Ending::Truncated),
        3 => prop::sample::select(vec!["error", "failed", "disconnect", "eof", "malformed"]).prop_map(Ending::Broken),
        1 => (0usize..3).prop_map(|shown| Ending::Stall { shown }),
        1 => Just(Ending::Cancel),
    ]
}

fn turn() -> impl Strategy<Value = Turn> {
    let http = prop::collection::vec(prop::sample::select(vec![429u16, 500, 503]), 0..=MAX_RETRIES + 1);
    (http, any::<bool>(), 0usize..4, ending()).prop_map(|(http, tool, chunks, ending)| {
        // A cancel needs text to cancel after; a stall shows at most the text it has.
        let chunks = match ending {
            Ending::Cancel => chunks.max(2),
            Ending::Stall { shown } => chunks.max(shown),
            _ => chunks,
        };
        Turn { http, tool, chunks, ending }
    })
}

fn generated() -> impl Strategy<Value = Generated> {
    prop::collection::vec(turn(), 1..4).prop_map(|turns| Generated { turns })
}

impl Turn {
    /// True when the HTTP failures outlast the retries: the turn fails before any response.
    fn exhausted(&self) -> bool {
        self.http.len() > MAX_RETRIES
    }

    /// The terminal state and error kind the contract (and the reference's choices of kind)
    /// give this turn.
    fn expected(&self) -> (&'static str, Option<&'static str>) {
        if self.exhausted() {
            let kind = if self.http.last() == Some(&429) { "rate_limited" } else { "provider_http_error" };
            return ("failed", Some(kind));
        }
        let broken = |kind| if self.chunks > 0 { ("partial_failed", Some(kind)) } else { ("failed", Some(kind)) };
        match &self.ending {
            Ending::Completed { .. } | Ending::Truncated => ("completed", None),
            Ending::Broken("error" | "failed") => broken("provider_http_error"),
            Ending::Broken("disconnect") => broken("network"),
            Ending::Broken("eof") => broken("incomplete_stream"),
            Ending::Broken(_) => broken("invalid_response"),
            Ending::Stall { .. } => ("timed_out", Some("stream_idle_timeout")),
            Ending::Cancel => ("interrupted", Some("cancelled")),
        }
    }
}

impl Generated {
    /// The scenario file.
    fn toml(&self) -> String {
        let mut text = String::from("title = \"A generated scenario\"\n\n[config]\n");
        let _ = writeln!(text, "max_retries = {MAX_RETRIES}\nstream_idle_timeout_ms = {IDLE_TIMEOUT_MS}");
        for (n, turn) in self.turns.iter().enumerate() {
            let (expect, kind) = turn.expected();
            let _ = write!(text, "\n[[turn]]\nprompt = \"Question number {n} please\"\nexpect = \"{expect}\"\n");
            if let Some(kind) = kind {
                let _ = writeln!(text, "error_kind = \"{kind}\"");
            }
            if matches!(turn.ending, Ending::Cancel) && !turn.exhausted() {
                text.push_str("cancel = \"first_delta\"\n");
            }
            text.push_str("respond = [\n");
            for status in turn.http.iter().take(MAX_RETRIES + 1) {
                let _ = writeln!(text, "  {{ status = {status} }},");
            }
            if !turn.exhausted() {
                if turn.tool {
                    let _ = writeln!(
                        text,
                        "  {{ calls = [{{ name = \"list\", args = {{}}, call_id = \"call_t{n}\" }}] }},"
                    );
                }
                let _ = writeln!(text, "  {},", answer(n, turn));
            }
            text.push_str("]\n");
        }
        text
    }
}

/// The answer of turn `n`: unique text per turn and chunk, and its ending.
fn answer(n: usize, turn: &Turn) -> String {
    let chunks: Vec<String> = (0..turn.chunks).map(|i| format!("\"t{n}c{i} \"")).collect();
    let text = format!("text = [{}]", chunks.join(", "));
    // Frames before the first delta: created, in_progress, the message's item and part added.
    let first_delta = 4;
    match &turn.ending {
        Ending::Completed { reasoning: true } => {
            format!("{{ reasoning = [{{ summary = [\"Thinking {n}.\"], encrypted = \"enc{n}\" }}], {text} }}")
        }
        Ending::Completed { reasoning: false } => format!("{{ {text} }}"),
        Ending::Truncated => format!("{{ {text}, then = {{ incomplete = \"max_output_tokens\" }} }}"),
        Ending::Broken(then @ ("error" | "failed")) => format!("{{ {text}, then = {{ {then} = \"server_error\" }} }}"),
        Ending::Broken(then) => format!("{{ {text}, then = \"{then}\" }}"),
        Ending::Stall { shown } => {
            let after = if *shown == 0 { 2 } else { first_delta + shown };
            format!("{{ {text}, pause = {{ after = {after}, ms = {STALL_MS} }} }}")
        }
        Ending::Cancel => format!("{{ {text}, pause = {{ after = {}, ms = {HOLD_MS} }} }}", first_delta + 1),
    }
}

/// Runs one generated scenario on the reference; every invariant and expectation must hold.
fn holds(generated: &Generated) -> Result<(), TestCaseError> {
    let text = generated.toml();
    let scenario = scenario::parse(&text, Path::new("generated.toml"))
        .map_err(|error| TestCaseError::fail(format!("the generator wrote an invalid scenario: {error}\n{text}")))?;
    let capture = Reference::default().drive(&scenario);
    let verdict = judge::judge("generated", &scenario, &capture, Vec::new());
    let broken: Vec<String> = verdict
        .findings
        .iter()
        .filter(|finding| matches!(finding.layer, Layer::Fault | Layer::Invariant | Layer::Expectation))
        .map(ToString::to_string)
        .collect();
    if broken.is_empty() { Ok(()) } else { Err(TestCaseError::fail(broken.join("\n"))) }
}

fn number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|value| value.parse().ok()).unwrap_or(default)
}

/// The trial: a fixed seed and case count unless the environment asks for more.
pub fn trial(root: &Path) -> Result<(), String> {
    let cases = u32::try_from(number("GAUNTLET_GENERATED_CASES", 96)).unwrap_or(u32::MAX);
    let seed = number("GAUNTLET_GENERATED_SEED", 0);
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes));
    match runner.run(&generated(), |generated| holds(&generated)) {
        Ok(()) => Ok(()),
        Err(TestError::Abort(reason)) => Err(format!("the generator gave up: {reason}")),
        Err(TestError::Fail(reason, smallest)) => {
            let text = smallest.toml().replace("A generated scenario", &format!("Generated (seed {seed}), shrunk"));
            let name = format!("scenarios/regression/generated-seed-{seed}.toml");
            // Like blessing, CI never writes into the corpus.
            let saved = if std::env::var_os("CI").is_some() {
                "not saved in CI".to_owned()
            } else {
                std::fs::create_dir_all(root.join("scenarios/regression"))
                    .and_then(|()| std::fs::write(root.join(&name), &text))
                    .map_or_else(|error| format!("could not save {name}: {error}"), |()| format!("saved as {name}"))
            };
            Err(format!("a generated scenario breaks the contract on the reference ({saved}):\n{reason}\n\n{text}"))
        }
    }
}
