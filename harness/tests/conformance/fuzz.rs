//! Fuzzing on stable Rust: seeded mutation of real inputs against the parsers that read
//! untrusted bytes: the SSE decoder, the JSON-RPC line reader and decoder, the Log fold, the
//! scenario and profile loaders, and the mock's reading of request bodies as increments. No panic on any input, and each target's properties hold.
//!
//! A small mutation loop rather than a fuzzing crate: seeds are the corpus's own files (and the
//! mock's encodings), mutations are byte flips, inserts of format tokens, deletions,
//! duplications, splices and truncations, driven by a fixed-seed SplitMix64, so every run is
//! reproducible. `cargo test` runs a bounded number of inputs per target; the long run is
//! `GAUNTLET_FUZZ_ITERATIONS=1000000 cargo test -p gauntlet --test conformance -- fuzz/`
//! (`GAUNTLET_FUZZ_SEED` picks another seed). A failure prints the input to replay.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use gauntlet::profile;
use gauntlet_agent::acp::lines::{Line, Lines};
use gauntlet_agent::acp::message;
use gauntlet_agent::log;
use gauntlet_agent::provider::sse::Decoder;
use gauntlet_judge::{lifecycle, scenario};
use gauntlet_mock_provider::increment::Chain;
use gauntlet_mock_provider::{Body, Call, MockProvider, MockRequest, Response, Script, Step};

/// Inputs per target under plain `cargo test` (debug build): together well under two seconds.
const DEFAULT_ITERATIONS: u64 = 1_500;

/// A fuzz target: a name, its seed inputs, format tokens worth inserting, and the check.
pub struct Target {
    /// `fuzz/<name>` is its trial.
    pub name: &'static str,
    seeds: fn(&Path) -> Vec<Vec<u8>>,
    tokens: &'static [&'static [u8]],
    check: fn(&[u8]) -> Result<(), String>,
}

/// Every target.
pub const TARGETS: [Target; 6] = [
    Target { name: "sse-decoder", seeds: sse_seeds, tokens: SSE_TOKENS, check: check_sse },
    Target { name: "jsonrpc-lines", seeds: jsonrpc_seeds, tokens: JSON_TOKENS, check: check_jsonrpc },
    Target { name: "log-fold", seeds: log_seeds, tokens: JSON_TOKENS, check: check_log },
    Target { name: "scenario-loader", seeds: scenario_seeds, tokens: TOML_TOKENS, check: check_scenario },
    Target { name: "profile-loader", seeds: profile_seeds, tokens: TOML_TOKENS, check: check_profile },
    Target { name: "request-bodies", seeds: body_seeds, tokens: JSON_TOKENS, check: check_bodies },
];

const SSE_TOKENS: &[&[u8]] =
    &[b"\n", b"\r", b"\r\n", b"\n\n", b"data: ", b"event: ", b":", b"\xEF\xBB\xBF", b"data", b"{\"type\":", b"\xff"];
const JSON_TOKENS: &[&[u8]] = &[
    b"\n",
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b":",
    b",",
    b"null",
    b"true",
    b"-1",
    b"18446744073709551616",
    b"1e999",
    b"\"seq\":",
    b"\"id\":",
    b"\"jsonrpc\":\"2.0\"",
    b"\"method\":",
    b"\\u0000",
    b"\xff",
    b"\"type\":\"turn_failed\"",
];
const TOML_TOKENS: &[&[u8]] = &[
    b"\n",
    b"=",
    b"\"",
    b"'''",
    b"\"\"\"",
    b"[",
    b"]",
    b"[[turn]]\n",
    b"{",
    b"}",
    b"#",
    b"18446744073709551615",
    b"-1",
    b"700",
    b"1e309",
    b"nan",
    b"inf",
    b"{provider_url}",
    b"{x}",
    b"~",
    b"/",
    b"\xff",
    b"covers = [\"X\"]\n",
];

/// SplitMix64: small, fast, and the same sequence everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
}

/// One to eight mutations of `input`.
fn mutate(rng: &mut Rng, input: &mut Vec<u8>, seeds: &[Vec<u8>], tokens: &[&[u8]]) {
    for _ in 0..=rng.below(8) {
        let at = rng.below(input.len() + 1);
        match rng.below(8) {
            0 if !input.is_empty() => {
                let idx = rng.below(input.len());
                input[idx] ^= 1 << rng.below(8);
            }
            1 if !input.is_empty() => {
                let idx = rng.below(input.len());
                input[idx] = rng.next() as u8;
            }
            2 => {
                let token = tokens[rng.below(tokens.len())];
                input.splice(at..at, token.iter().copied());
            }
            3 if at < input.len() => {
                let end = (at + 1 + rng.below(16)).min(input.len());
                input.drain(at..end);
            }
            4 if at < input.len() => {
                let end = (at + 1 + rng.below(64)).min(input.len());
                let copy = input[at..end].to_vec();
                let to = rng.below(input.len() + 1);
                input.splice(to..to, copy);
            }
            5 => {
                let other = &seeds[rng.below(seeds.len())];
                let from = rng.below(other.len());
                let end = (from + rng.below(256)).min(other.len());
                input.splice(at..at, other[from..end].iter().copied());
            }
            6 => input.truncate(at),
            _ => {
                let n = 1 + rng.below(4);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                input.splice(at..at, bytes);
            }
        }
    }
}

/// Runs `target` over `iterations` mutated inputs (and each seed as it is).
pub fn run(target: &Target, root: &Path) -> Result<(), String> {
    let iterations = std::env::var("GAUNTLET_FUZZ_ITERATIONS")
        .ok()
        .and_then(|value| value.parse::<u64>().ok())
        .unwrap_or(DEFAULT_ITERATIONS);
    let seed = std::env::var("GAUNTLET_FUZZ_SEED").ok().and_then(|value| value.parse::<u64>().ok()).unwrap_or(13);
    let seeds = (target.seeds)(root);
    if seeds.is_empty() {
        return Err(format!("{}: no seed inputs", target.name));
    }
    let mut rng =
        Rng(seed ^ target.name.bytes().fold(0u64, |hash, byte| hash.wrapping_mul(31).wrapping_add(u64::from(byte))));
    let started = std::time::Instant::now();
    let inputs = seeds.iter().cloned().chain((0..iterations).map(|_| {
        let mut input = seeds[rng.below(seeds.len())].clone();
        mutate(&mut rng, &mut input, &seeds, target.tokens);
        input
    }));
    let mut count = 0u64;
    for input in inputs {
        count += 1;
        let outcome = catch_unwind(AssertUnwindSafe(|| (target.check)(&input)));
        let problem = match outcome {
            Ok(Ok(())) => continue,
            Ok(Err(problem)) => problem,
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|text| (*text).to_owned()))
                    .unwrap_or_default();
                format!("panicked: {message}")
            }
        };
        return Err(format!(
            "{} input {count} (seed {seed}): {problem}\ninput ({} bytes): {:?}",
            target.name,
            input.len(),
            String::from_utf8_lossy(&input)
        ));
    }
    if std::env::var_os("GAUNTLET_FUZZ_ITERATIONS").is_some() {
        eprintln!("fuzz/{}: {count} inputs, 0 failures, {:.1} s", target.name, started.elapsed().as_secs_f64());
    }
    Ok(())
}

/// Files under `dir` with `ext`, sorted, at most `limit`.
fn files(dir: &Path, ext: &str, limit: usize) -> Vec<Vec<u8>> {
    let mut paths = Vec::new();
    gauntlet::golden::walk(dir, &mut |path| {
        if path.to_string_lossy().ends_with(ext) {
            paths.push(path.to_owned());
        }
    });
    paths.sort();
    paths.into_iter().take(limit).filter_map(|path| std::fs::read(path).ok()).collect()
}

fn sse_seeds(_: &Path) -> Vec<Vec<u8>> {
    let call = Call { name: "read".into(), args: serde_json::json!({"path": "a"}), ..Call::default() };
    let responses = vec![
        Response { text: vec!["Hello".into(), ", world".into()], ..Response::default() },
        Response { calls: vec![call], ..Response::default() },
        Response { status: Some(429), retry_after: Some(1), ..Response::default() },
    ];
    let provider = MockProvider::new(Script::root(responses.clone()));
    (0..responses.len())
        .map(|_| {
            let request = MockRequest {
                method: "POST".into(),
                path: "/v1/responses".into(),
                headers: Vec::new(),
                body: bytes::Bytes::from_static(br#"{"model":"m"}"#),
            };
            provider
                .respond(request)
                .steps
                .into_iter()
                .filter_map(|step| match step {
                    Step::Bytes(bytes) => Some(bytes.to_vec()),
                    _ => None,
                })
                .flatten()
                .collect()
        })
        .collect()
}

/// Decoding in one piece and in many gives the same frames and the same pending state
/// (WIRE-SSE-FRAMING: framing never depends on how the bytes arrived).
/// Two request bodies of one route, the second grown by a tool call and its result, as the
/// reference runtime sends them in each dialect, joined by a NUL byte (see [`check_bodies`]).
fn body_seeds(_: &Path) -> Vec<Vec<u8>> {
    use gauntlet_agent::provider::{Call as ProviderCall, Dialect, Transcript};
    use serde_json::json;
    let call = ProviderCall {
        model: "m".into(),
        instructions: "Be brief.".into(),
        tools: json!([{"type": "function", "name": "read", "description": "Read", "parameters": {"type": "object"}}]),
        cache_key: "k".into(),
    };
    let items = [
        json!({"role": "user", "content": [{"type": "input_text", "text": "Read \"a\" ]"}]}),
        json!({"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{\"path\":\"a\"}"}),
        json!({"type": "function_call_output", "call_id": "c1", "output": "A\n"}),
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}),
    ];
    Dialect::ALL
        .into_iter()
        .flat_map(|dialect| {
            [0, 1].map(|first| {
                let mut input = Transcript::of(dialect, &items[..first]).request(&call, &[]).body.to_vec();
                input.push(0);
                input.extend_from_slice(&Transcript::of(dialect, &items[..first + 3]).request(&call, &[]).body);
                input
            })
        })
        .collect()
}

/// The input is two bodies of one route joined by the first NUL byte (without one, the whole
/// input follows a fixed body), then the second grown by one more item before its last `]`.
/// Read as raw bytes, each gives the increment, the journaled form and the JSON verdict that
/// parsing it whole gives.
fn check_bodies(input: &[u8]) -> Result<(), String> {
    let (previous, next) = match input.iter().position(|&byte| byte == 0) {
        Some(at) => (&input[..at], &input[at + 1..]),
        None => (&br#"{"input":[],"model":"m"}"#[..], input),
    };
    let mut grown = next.to_vec();
    if let Some(close) = grown.iter().rposition(|&byte| byte == b']') {
        grown.splice(close..close, b",{\"z\":1}".iter().copied());
    }
    let (mut raw, mut parsed) = (Chain::default(), Chain::default());
    for (index, bytes) in [previous, next, &grown].into_iter().enumerate() {
        let body = Body::new(bytes::Bytes::copy_from_slice(bytes));
        let value = serde_json::from_slice::<serde_json::Value>(bytes);
        let json = value.is_ok();
        let value = value.unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(bytes).into_owned()));
        let increment = raw.push("root", body.clone());
        let expected = parsed.push("root", Body::from(value.clone()));
        if increment != expected {
            return Err(format!("body {index}: raw increment {increment:?}, parsed {expected:?}"));
        }
        if body.journaled() != &value || body.not_json().is_none() != json {
            return Err(format!("body {index}: journaled {:?}, not_json {:?}", body.journaled(), body.not_json()));
        }
    }
    Ok(())
}

fn check_sse(input: &[u8]) -> Result<(), String> {
    let mut whole = Decoder::default();
    let frames = whole.push(input);
    let mut pieces = Decoder::default();
    let mut split = Vec::new();
    let mut rest = input;
    let mut n = input.len();
    while !rest.is_empty() {
        // Split points from the input itself, so the check is a pure function of it.
        n = n.wrapping_mul(31).wrapping_add(7);
        let take = 1 + n % rest.len().clamp(1, 7);
        let (head, tail) = rest.split_at(take.min(rest.len()));
        split.extend(pieces.push(head));
        rest = tail;
    }
    if frames != split || whole.has_pending() != pieces.has_pending() {
        return Err(format!("frames differ by chunking:\n  whole: {frames:?}\n  split: {split:?}"));
    }
    Ok(())
}

fn jsonrpc_seeds(root: &Path) -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for transcript in files(&root.join("golden/acp"), "acp.jsonl", 8) {
        let mut lines = Vec::new();
        for line in String::from_utf8_lossy(&transcript).lines() {
            if let Ok(entry) = serde_json::from_str::<serde_json::Value>(line)
                && entry["from"] == "client"
            {
                match (&entry["message"], &entry["raw"]) {
                    (serde_json::Value::Null, serde_json::Value::String(raw)) => lines.push(raw.clone()),
                    (message, _) => lines.push(message.to_string()),
                }
            }
        }
        seeds.push(format!("{}\n", lines.join("\n")).into_bytes());
    }
    seeds
}

/// Lines never exceed the limit, account for every input byte, and each decodes to a request,
/// a client response or a -32700 / -32600 error: never a panic.
fn check_jsonrpc(input: &[u8]) -> Result<(), String> {
    const LIMIT: usize = 96;
    let runtime = tokio::runtime::Builder::new_current_thread().build().map_err(|error| error.to_string())?;
    let lines = runtime.block_on(async {
        let mut reader = Lines::new(input, LIMIT);
        let mut lines = Vec::new();
        while let Some(line) = reader.next().await.map_err(|error| error.to_string())? {
            lines.push(line);
        }
        Ok::<_, String>(lines)
    })?;
    let mut total = 0u64;
    for line in &lines {
        match line {
            Line::Text(text) => {
                if text.len() > LIMIT {
                    return Err(format!("a line of {} bytes passed the {LIMIT}-byte limit", text.len()));
                }
                total += text.len() as u64;
                if let Err((_, error)) = message::decode(text) {
                    let code = i32::from(error.code);
                    if code != -32700 && code != -32600 {
                        return Err(format!("decode answered {code}"));
                    }
                }
            }
            Line::TooLong(length) => {
                if *length <= LIMIT as u64 {
                    return Err(format!("a line of {length} bytes was called too long"));
                }
                total += length;
            }
        }
    }
    if total != input.len() as u64 {
        return Err(format!("lines account for {total} of {} bytes", input.len()));
    }
    Ok(())
}

fn log_seeds(root: &Path) -> Vec<Vec<u8>> {
    files(&root.join("golden"), "log.ndjson", 24)
}

/// A folded Log counts seq 0, 1, 2, ... in order; a torn tail is only ever the last line.
fn check_log(input: &[u8]) -> Result<(), String> {
    let Ok(folded) = log::fold(input, Path::new("fuzz.ndjson")) else { return Ok(()) };
    for (expected, event) in folded.events.iter().enumerate() {
        if event.seq() != Some(expected as u64) {
            return Err(format!("event {expected} has seq {:?}", event.seq()));
        }
    }
    if let Some(torn) = &folded.torn {
        let start = usize::try_from(torn.offset).unwrap_or(usize::MAX);
        if start > input.len() || input[start..].contains(&b'\n') {
            return Err(format!("torn tail at {start} is not the last line"));
        }
    }
    Ok(())
}

fn scenario_seeds(root: &Path) -> Vec<Vec<u8>> {
    let scenarios = root.join("scenarios");
    ["turn", "acp", "subagent", "workflow", "monitor", "bridge"]
        .iter()
        .flat_map(|family| files(&scenarios.join(family), ".toml", 4))
        .collect()
}

/// Any text loads or is refused with a positioned error; a loaded scenario can be scripted,
/// scaled and asked what it needs.
fn check_scenario(input: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(input);
    let path = Path::new("scenarios/fuzz/x.toml");
    match lifecycle::kind_of(&text, path) {
        Ok(Some(kind)) => {
            let _ = lifecycle::parse_as(&text, path, kind);
        }
        Ok(None) => {
            if let Ok(loaded) = scenario::parse(&text, path) {
                let _ = (loaded.script(), loaded.needs(), loaded.scaled(0.01), loaded.scaled(1000.0));
            }
        }
        Err(_) => {}
    }
    Ok(())
}

fn profile_seeds(root: &Path) -> Vec<Vec<u8>> {
    files(&root.join("harness/implementations"), ".toml", 8)
}

/// Any text loads as a profile or is refused; a loaded one gives its driver.
fn check_profile(input: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(input);
    if let Ok(loaded) = profile::parse(&text, Path::new("harness/implementations/fuzz.toml")) {
        let _ = loaded.external();
    }
    Ok(())
}
