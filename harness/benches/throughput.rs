//! Throughput benchmarks (`cargo bench -p gauntlet`): measured here, never asserted in tests.
//!
//! - the Turn scenarios in process, as scenarios per second, in each corpus dialect, and the
//!   whole corpus (lifecycle scenarios once, Turn scenarios in every dialect) against the
//!   same corpus in Responses alone;
//! - the Log fold and the replay fold over a generated Log of 100k events, in events/s and
//!   MB/s, beside a plain `serde_json` parse of the same bytes and the ratio to it;
//! - the lifecycle monitor over a generated stream of 1M observations (working spells, idle
//!   flickers and unknown runs that stall), in observations/s;
//! - the bridge over 100k `thread/read` polls of a Telegram-origin turn (running, transiently
//!   interrupted, then final), in polls/s;
//! - long conversations: a generated scenario of 1,000 and 10,000 turns (every tenth a tool
//!   call) run in process like a corpus scenario (drive, golden files, golden comparison,
//!   judge) in each corpus dialect, as cost per turn, which must stay flat.
//!
//! Sections are chosen by name: `cargo bench -p gauntlet -- long` runs only the long
//! conversations; `GAUNTLET_BENCH_TURNS=10000` (a comma-separated list) runs those sizes instead.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use gauntlet::driver::Driver;
use gauntlet::driver::reference::Reference;
use gauntlet::run::{self, Plan};
use gauntlet_agent::canonical;
use gauntlet_agent::event::{Data, ErrorKind, Event, Payload, TerminalStatus};
use gauntlet_agent::{log, replay};
use gauntlet_bridge::{self as bridge, Bridge};
use gauntlet_mock_provider::increment::Chain;
use gauntlet_monitor::{self as monitor, Monitor, Phase};
use serde_json::json;

const N_EVENTS: usize = 100_000;

/// The allocator the `gauntlet` binary runs with, so the figures are the binary's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let filters: Vec<String> = std::env::args().skip(1).filter(|arg| !arg.starts_with("--")).collect();
    let wanted = |section: &str| filters.is_empty() || filters.iter().any(|filter| section.contains(filter.as_str()));
    if wanted("corpus") {
        corpus()?;
    }
    if wanted("folds") {
        folds()?;
    }
    if wanted("lifecycle") {
        lifecycle()?;
    }
    if wanted("long") {
        long_conversations()?;
    }
    Ok(())
}

/// The stages of one run of a long conversation.
#[derive(Debug, Default, Clone, Copy)]
struct Stages {
    drive: Duration,
    golden_files: Duration,
    compare: Duration,
    judge: Duration,
}

impl Stages {
    fn total(&self) -> Duration {
        self.drive + self.golden_files + self.compare + self.judge
    }
}

/// Long conversations: cost per turn at 1,000 and 10,000 turns (or `GAUNTLET_BENCH_TURNS`), in
/// each corpus dialect.
fn long_conversations() -> anyhow::Result<()> {
    let sizes: Vec<usize> = match std::env::var("GAUNTLET_BENCH_TURNS") {
        Ok(list) => list.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
        Err(_) => vec![1000, 10_000],
    };
    let scratch = tempfile::tempdir()?;
    std::fs::create_dir_all(scratch.path().join("scenarios"))?;
    let driver = Reference { deadline: Duration::from_secs(3600), ..Reference::default() };
    for (n_turns, dialect) in sizes.iter().flat_map(|&n| run::CORPUS_DIALECTS.map(|dialect| (n, dialect))) {
        let text = long_conversation(n_turns);
        let path = scratch.path().join("scenarios").join(format!("long-{n_turns}.toml"));
        std::fs::write(&path, &text)?;
        let scenario = gauntlet_judge::scenario::parse(&text, &path)?.in_dialect(dialect)?;
        let golden_dir = Path::new("golden").join(format!("long-{n_turns}-{dialect}"));
        let rounds = (2000 / n_turns).clamp(1, 20);
        let (mut best, mut wire_bytes): (Option<Stages>, usize) = (None, 0);
        for round in 0..rounds {
            let mut stages = Stages::default();
            let (elapsed, capture) = time(|| driver.drive(&scenario));
            stages.drive = elapsed;
            anyhow::ensure!(capture.faults.is_empty(), "{n_turns} turns: {:?}", capture.faults);
            let (elapsed, files) = time(|| capture.golden_files());
            stages.golden_files = elapsed;
            if round == 0 {
                // The first run writes the goldens (untimed) that every run is compared with, as
                // a corpus run would be, and counts the bytes of the bodies the agent sent.
                for (name, content) in &files {
                    let file = scratch.path().join(&golden_dir).join(name);
                    std::fs::create_dir_all(file.parent().unwrap_or(scratch.path()))?;
                    std::fs::write(file, content)?;
                }
                let mut bodies = Chain::default();
                wire_bytes = capture
                    .requests
                    .iter()
                    .map(|request| canonical::value_to_string(bodies.apply(&request.route, &request.body)).len())
                    .sum();
            }
            let (elapsed, findings) = time(|| gauntlet::golden::compare(scratch.path(), &golden_dir, &files, false));
            stages.compare = elapsed;
            let (elapsed, verdict) = time(|| gauntlet_judge::judge::judge("long", &scenario, &capture, findings));
            stages.judge = elapsed;
            anyhow::ensure!(
                verdict.kind == gauntlet_judge::verdict::VerdictKind::Identical,
                "{n_turns} turns: {:#?}",
                verdict.findings
            );
            if best.is_none_or(|best| stages.total() < best.total()) {
                best = Some(stages);
            }
        }
        let best = best.unwrap_or_default();
        let per_turn = |duration: Duration| duration.as_secs_f64() * 1e6 / n_turns as f64;
        let harness = best.golden_files + best.compare + best.judge;
        let wire_mb = wire_bytes as f64 / 1e6;
        println!(
            "long conversation {n_turns:>5} turns [{dialect}]: {:>9.1} ms, {:>7.1} us/turn; agent and mock {:>7.1} us/turn \
             ({wire_mb:.1} MB of request bodies, {:.0} ms/MB); harness {:>5.1} us/turn \
             (golden files {:.1}, compare {:.1}, judge {:.1})",
            ms(best.total()),
            per_turn(best.total()),
            per_turn(best.drive),
            ms(best.drive) / wire_mb.max(1e-9),
            per_turn(harness),
            per_turn(best.golden_files),
            per_turn(best.compare),
            per_turn(best.judge),
        );
    }
    Ok(())
}

/// A Turn scenario of `n_turns` prompts, each answered in two text chunks; every tenth turn
/// reads a workspace file through a tool first.
fn long_conversation(n_turns: usize) -> String {
    let mut text = format!(
        "title = \"A conversation of {n_turns} turns\"\ncovers = [\"REPLAY-CARRIES-CONVERSATION\"]\n\n\
         [workspace]\n\"notes.txt\" = \"The build is green.\"\n"
    );
    for turn in 1..=n_turns {
        text.push_str(&format!("\n[[turn]]\nprompt = \"Question {turn}: what changed in module {turn}?\"\n"));
        if turn % 10 == 0 {
            text.push_str("respond = [\n  { calls = [{ name = \"read\", args = { path = \"notes.txt\" } }] },\n");
            text.push_str(&format!("  {{ text = [\"The notes say \", \"the build is green ({turn}).\"] }},\n]\n"));
        } else {
            text.push_str(&format!(
                "respond = [{{ text = [\"Module {turn} gained \", \"a retry loop and lost a flag.\"] }}]\n"
            ));
        }
    }
    text
}

/// The Turn scenarios in process, per dialect, and the whole corpus.
fn corpus() -> anyhow::Result<()> {
    let plan = Plan::repository();
    let names = run::scenario_names(&plan);
    anyhow::ensure!(!names.is_empty(), "no scenarios under {}", plan.scenarios().display());
    let driver = Reference::default();
    let rounds = 20;
    // Each dialect plays the Turn scenarios (lifecycle scenarios have no Provider); the whole
    // corpus is the lifecycle scenarios once and the Turn scenarios in every dialect.
    let turns: Vec<_> =
        names.iter().filter(|(_, path)| matches!(run::load(path), Ok(run::AnyScenario::Turn(_)))).collect();
    let mut per_dialect = Vec::new();
    for dialect in run::CORPUS_DIALECTS {
        let (elapsed, _) = time(|| {
            for _ in 0..rounds {
                for (name, path) in &turns {
                    black_box(run::run_scenario_in(&plan, &driver, name, path, Some(dialect)));
                }
            }
        });
        let n_runs = (rounds * turns.len()) as f64;
        println!(
            "turn scenarios [{dialect}]: {} x {rounds} rounds in {:.1} ms: {:.0} scenarios/s",
            turns.len(),
            ms(elapsed),
            n_runs / elapsed.as_secs_f64()
        );
        per_dialect.push(elapsed);
    }
    let (lifecycle, _) = time(|| {
        for _ in 0..rounds {
            for (name, path) in names.iter().filter(|(name, _)| !turns.iter().any(|(turn, _)| turn == name)) {
                black_box(run::run_scenario(&plan, &driver, name, path));
            }
        }
    });
    let single = lifecycle + per_dialect[0];
    let all = lifecycle + per_dialect.iter().sum::<Duration>();
    println!(
        "corpus per round: {:.1} ms in responses alone, {:.1} ms in all {} dialects ({:.2}x)",
        ms(single) / rounds as f64,
        ms(all) / rounds as f64,
        per_dialect.len(),
        all.as_secs_f64() / single.as_secs_f64()
    );
    Ok(())
}

/// The Log fold and the replay fold against a plain parse.
fn folds() -> anyhow::Result<()> {
    let bytes = generated_log();
    let mb = bytes.len() as f64 / 1e6;
    println!("log: {N_EVENTS} events, {mb:.1} MB");
    let (parse, _) = best_of(5, || {
        let n: usize = bytes
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .filter_map(|line| serde_json::from_slice::<serde_json::Value>(line).ok())
            .count();
        black_box(n);
    });
    report("serde_json parse (baseline)", parse, mb, parse);
    let (fold, folded) = best_of(5, || log::fold(&bytes, Path::new("bench.ndjson")));
    report("log fold", fold, mb, parse);
    let events = folded?.events;
    let (replay, items) = best_of(5, || replay::fold(&events, "gpt-5.5"));
    report("replay fold (from folded events)", replay, mb, parse);
    println!("replay produced {} input items", items.len());
    Ok(())
}

/// The lifecycle monitor and the bridge.
fn lifecycle() -> anyhow::Result<()> {
    let steps = generated_observations();
    let (elapsed, n_results) = best_of(3, || {
        let mut monitor = Monitor::new(Phase::Completion, monitor::Config::default());
        steps.iter().enumerate().map(|(idx, step)| monitor.apply(idx, step).len()).sum::<usize>()
    });
    println!(
        "monitor: {} observations in {:.1} ms: {:.0} observations/s ({n_results} results)",
        steps.len(),
        ms(elapsed),
        steps.len() as f64 / elapsed.as_secs_f64()
    );

    let polls = generated_polls()?;
    let config: bridge::Config = serde_json::from_value(json!({
        "thread": { "id": "thread-1", "status": "active", "active_turn_id": "turn-1" },
        "telegram_origin": [{ "thread_id": "thread-1", "turn_id": "turn-1" }],
    }))?;
    let (elapsed, n_records) = best_of(3, || {
        let mut bridge = Bridge::new(config.clone());
        polls.iter().enumerate().map(|(idx, step)| bridge.apply(idx, step).len()).sum::<usize>()
    });
    println!(
        "bridge: {} polls in {:.1} ms: {:.0} polls/s ({n_records} records)",
        polls.len(),
        ms(elapsed),
        polls.len() as f64 / elapsed.as_secs_f64()
    );
    Ok(())
}

/// `thread/read` polls every second: the turn running, then read `interrupted` (deferred by the
/// gate), then completed with a final answer, over and over.
fn generated_polls() -> anyhow::Result<Vec<bridge::Step>> {
    (0..100_000u64)
        .map(|idx| {
            let status = ["inProgress", "interrupted", "completed"][(idx % 3) as usize];
            let mut items = vec![json!({ "id": "user-1", "type": "userMessage", "text": "hello" })];
            if status == "completed" {
                items.push(json!({ "id": "final", "type": "agentMessage", "phase": "final_answer", "text": "Done." }));
            }
            let result = json!({ "thread": { "id": "thread-1", "status": "active",
                "turns": [{ "id": "turn-1", "status": status, "items": items }] } });
            Ok(serde_json::from_value(json!({ "at_ms": idx * 1000, "do": { "poll": { "result": result } } }))?)
        })
        .collect()
}

/// A completion phase's observations every 500 ms: working, an idle flicker, more work, a
/// ready surface, and now and then an unknown run long enough to stall and recover.
fn generated_observations() -> Vec<monitor::Step> {
    use monitor::{BusinessState, InputMode, Observation};
    let pattern = [
        (BusinessState::Working, InputMode::Freeform),
        (BusinessState::Idle, InputMode::Freeform),
        (BusinessState::Working, InputMode::Modal),
        (BusinessState::Idle, InputMode::Freeform),
        (BusinessState::Idle, InputMode::Freeform),
        (BusinessState::Idle, InputMode::Freeform),
    ];
    (0..1_000_000u64)
        .map(|idx| {
            let (business_state, input_mode) = if idx % 1000 >= 900 {
                (BusinessState::Unknown, InputMode::Unknown)
            } else {
                pattern[(idx % pattern.len() as u64) as usize]
            };
            let observation = Observation {
                availability: monitor::Availability::Supported,
                business_state,
                input_mode,
                ui_context: "normal_prompt".to_owned(),
                projection_text: Some(format!("answer {}", idx / 6)),
                baseline_invalidated: false,
                raw_output: None,
            };
            monitor::Step { at_ms: idx * 500, observe: Some(observation) }
        })
        .collect()
}

/// A Log of `N_EVENTS` events shaped like real turns: prompts, usage, tool pairs, answers,
/// and now and then a partial answer with its `turn_failed`.
fn generated_log() -> Vec<u8> {
    let mut payloads = Vec::with_capacity(N_EVENTS + 8);
    let mut turn = 0usize;
    while payloads.len() < N_EVENTS {
        turn += 1;
        payloads.push(Payload::user_message(&format!(
            "Please look at file {turn} and summarise what changed since yesterday."
        )));
        let mut usage = Data::new();
        usage.insert("usage_summary".into(), json!({"input_tokens": 1200, "output_tokens": 80, "total_tokens": 1280}));
        payloads.push(Payload::provider_usage(usage.clone()));
        let call_id = format!("call_{turn}");
        payloads.push(Payload::tool_call(&call_id, "read", json!({"path": format!("src/file_{turn}.rs")})));
        let mut result = Data::new();
        result.insert("ok".into(), json!(true));
        result.insert("output".into(), json!("fn main() {\n    println!(\"hello\");\n}\n".repeat(4)));
        payloads.push(Payload::tool_result(&call_id, result));
        payloads.push(Payload::provider_usage(usage));
        if turn.is_multiple_of(10) {
            payloads.push(Payload::partial_assistant_message(
                "The file changed in two places: the",
                TerminalStatus::PartialFailed,
                ErrorKind::Network,
                "the provider stream failed before a terminal event",
            ));
            payloads.push(Payload::turn_failed(
                TerminalStatus::PartialFailed,
                ErrorKind::Network,
                "stream failed",
                Data::new(),
            ));
        } else {
            payloads.push(Payload::assistant_message(
                "The file changed in two places: the greeting and the loop bound.",
                Data::new(),
            ));
        }
    }
    payloads.truncate(N_EVENTS);
    let mut out = Vec::new();
    for (seq, payload) in payloads.into_iter().enumerate() {
        let event = Event::stamp(
            payload,
            "bench",
            format!("{seq:016x}"),
            "2026-01-01T00:00:00.000000Z".into(),
            Some(seq as u64),
        );
        out.extend_from_slice(event.to_json_line().as_bytes());
        out.push(b'\n');
    }
    out
}

fn time<T>(work: impl FnOnce() -> T) -> (Duration, T) {
    let started = Instant::now();
    let value = work();
    (started.elapsed(), value)
}

fn best_of<T>(rounds: usize, mut work: impl FnMut() -> T) -> (Duration, T) {
    let (mut best, mut value) = time(&mut work);
    for _ in 1..rounds {
        let (elapsed, next) = time(&mut work);
        if elapsed < best {
            best = elapsed;
            value = next;
        }
    }
    (best, value)
}

fn report(label: &str, elapsed: Duration, mb: f64, baseline: Duration) {
    let seconds = elapsed.as_secs_f64();
    println!(
        "{label:<34} {:>8.1} ms  {:>10.0} events/s  {:>7.1} MB/s  {:>5.2}x parse time",
        ms(elapsed),
        N_EVENTS as f64 / seconds,
        mb / seconds,
        seconds / baseline.as_secs_f64()
    );
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}
