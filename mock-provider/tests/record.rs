//! The recorder's acceptance test (issue 23): in every dialect, a scenario served by the mock
//! is recorded through `Recorder` as an agent's requests pass, and the recorded scenario,
//! served again, answers the same requests with the same bytes (status, the headers a client
//! reads, body, and whether the connection dropped). No credential the requests carried
//! reaches the file. A recording keeps the upstream's waits as pauses at the beats they came
//! before, which replay between the same chunks.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use gauntlet_mock_provider::{
    Chunk, Dialect, MockProvider, MockReply, MockRequest, Playback, ROOT, Recorder, Script, Sessions, Upstream, serve,
};
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

/// The scenario the upstream mock serves: a 429 with `retry-after` and its retry (reasoning,
/// text, a tool call and usage), the call's follow-up, an error after partial text, a
/// disconnect, a truncation, a failed response, an EOF and a malformed frame.
const SCENARIO: &str = r#"
title = "Everything a Provider may send"

[[turn]]
prompt = "Read a.txt"
respond = [
  { status = 429, retry_after = 2 },
  { reasoning = [{ summary = ["Let me ", "look."], encrypted = "sig-1" }], text = ["I'll read it."], calls = [{ name = "read", args = { path = "a.txt", limit = 5 } }], usage = { input = 120, cached = 20, output = 30, reasoning = 8 } },
  { text = ["It says ", "hello."], usage = { input = 150, cached = 100, output = 12 } },
]

[[turn]]
prompt = "Summarise"
respond = [{ text = ["Useful ", "partial"], cut_after = 5, then = { error = "server_is_overloaded" } }]

[[turn]]
prompt = "Again"
respond = [{ text = ["Half"], then = "disconnect" }]

[[turn]]
prompt = "Once more, with key sk-ant-secret-2"
respond = [{ text = ["Long"], then = { incomplete = "max_output_tokens" } }]

[[turn]]
prompt = "Fail"
respond = [{ text = ["No"], then = { failed = "rate_limit_exceeded" } }]

[[turn]]
prompt = "End early"
respond = [{ text = ["Cut"], then = "eof" }]

[[turn]]
prompt = "Garble"
respond = [{ text = ["Bad"], then = "malformed" }]
"#;

/// The credentials the client sends: in headers, and Gemini's in the URL.
const SECRETS: [&str; 4] = ["sk-openai-secret-1", "sk-ant-secret-2", "goog-secret-3", "goog-query-secret-4"];

/// One conversation item, before any wire format.
#[derive(Clone)]
enum Item {
    User(&'static str),
    Assistant(&'static str),
    Call,
    Result,
}

/// The conversation of each request an agent makes for [`SCENARIO`]: retries repeat a
/// request, a tool result continues it, a prompt starts a turn.
fn conversations() -> Vec<Vec<Item>> {
    use Item::*;
    let first = vec![User("Read a.txt")];
    let with_result = [first.clone(), vec![Call, Result]].concat();
    let mut requests = vec![first.clone(), first, with_result.clone()];
    let mut conversation = [with_result, vec![Assistant("It says hello.")]].concat();
    for prompt in ["Summarise", "Again", "Once more, with key sk-ant-secret-2", "Fail", "End early", "Garble"] {
        conversation.push(User(prompt));
        requests.push(conversation.clone());
    }
    requests
}

/// The call the model makes and its id as the mock numbers it (reasoning 1, message 2, call 3).
const CALL_ID: &str = "call_3";

/// A request's path and body in `dialect`, streamed or asking for a whole answer.
fn request(dialect: Dialect, items: &[Item], stream: bool) -> (String, Value) {
    let args = json!({ "path": "a.txt", "limit": 5 });
    match dialect {
        Dialect::Responses => {
            let input: Vec<Value> = items
                .iter()
                .map(|item| match item {
                    Item::User(text) => json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": text }] }),
                    Item::Assistant(text) => json!({ "type": "message", "role": "assistant", "content": [{ "type": "output_text", "text": text }] }),
                    Item::Call => json!({ "type": "function_call", "call_id": CALL_ID, "name": "read", "arguments": args.to_string() }),
                    Item::Result => json!({ "type": "function_call_output", "call_id": CALL_ID, "output": "hello" }),
                })
                .collect();
            ("/v1/responses".into(), json!({ "model": "gpt-test", "stream": stream, "input": input }))
        }
        Dialect::ChatCompletions => {
            let messages: Vec<Value> = items
                .iter()
                .map(|item| match item {
                    Item::User(text) => json!({ "role": "user", "content": text }),
                    Item::Assistant(text) => json!({ "role": "assistant", "content": text }),
                    Item::Call => json!({ "role": "assistant", "content": null, "tool_calls": [{ "id": CALL_ID, "type": "function", "function": { "name": "read", "arguments": args.to_string() } }] }),
                    Item::Result => json!({ "role": "tool", "tool_call_id": CALL_ID, "content": "hello" }),
                })
                .collect();
            let mut body = json!({ "model": "gpt-test", "stream": stream, "messages": messages });
            if stream {
                body["stream_options"] = json!({ "include_usage": true });
            }
            ("/v1/chat/completions".into(), body)
        }
        Dialect::AnthropicMessages => {
            let messages: Vec<Value> = items
                .iter()
                .map(|item| match item {
                    Item::User(text) => json!({ "role": "user", "content": text }),
                    Item::Assistant(text) => json!({ "role": "assistant", "content": [{ "type": "text", "text": text }] }),
                    Item::Call => json!({ "role": "assistant", "content": [{ "type": "tool_use", "id": CALL_ID, "name": "read", "input": args }] }),
                    Item::Result => json!({ "role": "user", "content": [{ "type": "tool_result", "tool_use_id": CALL_ID, "content": "hello" }] }),
                })
                .collect();
            (
                "/v1/messages".into(),
                json!({ "model": "claude-test", "stream": stream, "max_tokens": 1024, "messages": messages }),
            )
        }
        Dialect::Gemini => {
            let contents: Vec<Value> = items
                .iter()
                .map(|item| match item {
                    Item::User(text) => json!({ "role": "user", "parts": [{ "text": text }] }),
                    Item::Assistant(text) => json!({ "role": "model", "parts": [{ "text": text }] }),
                    Item::Call => json!({ "role": "model", "parts": [{ "functionCall": { "id": CALL_ID, "name": "read", "args": args } }] }),
                    Item::Result => json!({ "role": "user", "parts": [{ "functionResponse": { "id": CALL_ID, "name": "read", "response": { "output": "hello" } } }] }),
                })
                .collect();
            let method = if stream { "streamGenerateContent?alt=sse&" } else { "generateContent?" };
            let path = format!("/v1beta/models/gemini-test:{method}key={}", SECRETS[3]);
            (path, json!({ "contents": contents }))
        }
    }
}

/// What a client saw of one answer.
#[derive(Debug, PartialEq)]
struct Play {
    status: u16,
    /// `content-type`, `cache-control` and `retry-after`, as sent.
    headers: Vec<Option<String>>,
    body: String,
    dropped: bool,
}

/// Sends the first `n_requests` requests of the scenario to `base` as an agent would,
/// credentials included.
async fn play(
    client: &Client<HttpConnector, Full<Bytes>>,
    base: &str,
    dialect: Dialect,
    stream: bool,
    n_requests: usize,
) -> Vec<Play> {
    let mut plays = Vec::new();
    for items in conversations().into_iter().take(n_requests) {
        let (path, body) = request(dialect, &items, stream);
        let request = Request::post(format!("{base}{path}"))
            .header("content-type", "application/json")
            .header("session_id", "session-1")
            .header("authorization", format!("Bearer {}", SECRETS[0]))
            .header("x-api-key", SECRETS[1])
            .header("x-goog-api-key", SECRETS[2])
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap();
        let response = client.request(request).await.unwrap();
        let headers = ["content-type", "cache-control", "retry-after"]
            .iter()
            .map(|name| response.headers().get(*name).map(|value| value.to_str().unwrap().to_owned()))
            .collect();
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let (mut bytes, mut dropped) = (Vec::new(), false);
        loop {
            match body.frame().await {
                Some(Ok(frame)) => bytes.extend_from_slice(frame.data_ref().map_or(&[][..], |data| &data[..])),
                Some(Err(_)) => {
                    dropped = true;
                    break;
                }
                None => break,
            }
        }
        plays.push(Play { status, headers, body: String::from_utf8_lossy(&bytes).into_owned(), dropped });
    }
    plays
}

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

#[tokio::test]
async fn a_recorded_scenario_replays_identically_in_every_dialect() {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    for dialect in Dialect::ALL {
        let script = Script::from_scenario_toml(SCENARIO).unwrap();
        let upstream = serve(Arc::new(Sessions::new(script, dialect)), loopback()).await.unwrap();
        let recorder =
            Recorder::start(Upstream::parse(&upstream.base_url()).unwrap(), dialect, loopback()).await.unwrap();
        let recorded_play = play(&client, &recorder.base_url(), dialect, true, usize::MAX).await;
        let recording = recorder.finish();
        if std::env::var_os("RECORD_DUMP").is_some() {
            eprintln!("{}", recording.toml);
        }
        assert_eq!(recording.requests, 9, "{dialect}");
        for secret in SECRETS {
            assert!(!recording.toml.contains(secret), "{dialect}: the recording holds {secret}:\n{}", recording.toml);
        }
        assert!(recording.toml.contains("[redacted]"), "{dialect}: the prompt's key is redacted:\n{}", recording.toml);
        let replayed = Script::from_scenario_toml(&recording.toml)
            .unwrap_or_else(|error| panic!("{dialect}: {error}\n{}", recording.toml));
        let turns: toml::Table = recording.toml.parse().unwrap();
        assert_eq!(turns["turn"].as_array().unwrap().len(), 7, "{dialect}: one turn per prompt:\n{}", recording.toml);
        let replay = serve(Arc::new(Sessions::new(replayed, dialect)), loopback()).await.unwrap();
        let replay_play = play(&client, &replay.base_url(), dialect, true, usize::MAX).await;
        assert_eq!(recorded_play.len(), replay_play.len());
        for (index, (recorded, replayed)) in recorded_play.iter().zip(&replay_play).enumerate() {
            assert_eq!(recorded, replayed, "{dialect}, request {}:\n{}", index + 1, recording.toml);
        }
        assert!(recorded_play.iter().any(|play| play.dropped), "{dialect}: the disconnect reached the client");
        assert_eq!(recorded_play[0].headers[2].as_deref(), Some("2"), "{dialect}: retry-after");
    }
}

/// Whole (non-streamed) answers replay too: a 429, then reasoning, text, a call and usage in
/// one body, then the call's follow-up, in each dialect that answers whole (the mock always
/// streams the Responses API).
#[tokio::test]
async fn a_recorded_whole_answer_replays_identically() {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    for dialect in [Dialect::ChatCompletions, Dialect::AnthropicMessages, Dialect::Gemini] {
        let script = Script::from_scenario_toml(SCENARIO).unwrap();
        let upstream = serve(Arc::new(Sessions::new(script, dialect)), loopback()).await.unwrap();
        let recorder =
            Recorder::start(Upstream::parse(&upstream.base_url()).unwrap(), dialect, loopback()).await.unwrap();
        let recorded_play = play(&client, &recorder.base_url(), dialect, false, 3).await;
        let toml = recorder.finish().toml;
        assert!(SECRETS.iter().all(|secret| !toml.contains(secret)), "{dialect}: {toml}");
        let replayed = Script::from_scenario_toml(&toml).unwrap_or_else(|error| panic!("{dialect}: {error}\n{toml}"));
        let replay = serve(Arc::new(Sessions::new(replayed, dialect)), loopback()).await.unwrap();
        let replay_play = play(&client, &replay.base_url(), dialect, false, 3).await;
        assert_eq!(recorded_play, replay_play, "{dialect}:\n{toml}");
        assert!(
            recorded_play[1].body.contains("a.txt"),
            "{dialect}: the call was answered whole: {:?}",
            recorded_play[1]
        );
    }
}

/// An upstream that answers each request with the next of its canned (status, content type,
/// body) answers, whatever was asked.
struct Garbage {
    answers: Vec<(u16, &'static str, &'static [u8])>,
    next: std::sync::Mutex<usize>,
}

impl gauntlet_mock_provider::Responder for Garbage {
    fn respond(&self, _request: gauntlet_mock_provider::MockRequest) -> gauntlet_mock_provider::MockReply {
        let mut next = self.next.lock().unwrap();
        let (status, content_type, body) = self.answers[*next % self.answers.len()];
        *next += 1;
        gauntlet_mock_provider::MockReply {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            steps: vec![gauntlet_mock_provider::Step::Bytes(Bytes::from_static(body))],
            end: None,
        }
    }
}

/// Garbage from upstream is forwarded unchanged (the agent's experience is the Provider's, not
/// the recorder's), and the file says what could not be read instead of failing the recording:
/// a recording is made once, from traffic that may not come again.
#[tokio::test]
async fn garbage_from_upstream_is_forwarded_and_named_in_the_file() {
    let answers: Vec<(u16, &str, &[u8])> = vec![
        (200, "text/html", b"<html>upstream confused</html>"),
        (
            200,
            "text/event-stream",
            b"event: response.created\ndata: {\"type\":\"response.created\"}\n\ndata: <<garbage>>\n\ndata: {}\n\n",
        ),
        (502, "text/html", b"<html>bad gateway</html>"),
    ];
    let upstream = Arc::new(Garbage { answers: answers.clone(), next: std::sync::Mutex::new(0) });
    let upstream = serve(upstream, loopback()).await.unwrap();
    // What is read is the point here, not when it came: a slow machine's wait is no pause.
    let recorder = Recorder::start(Upstream::parse(&upstream.base_url()).unwrap(), Dialect::Responses, loopback())
        .await
        .unwrap()
        .with_min_gap(Duration::MAX);
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let plays = play(&client, &recorder.base_url(), Dialect::Responses, true, 3).await;
    for (play, (status, _, body)) in plays.iter().zip(&answers) {
        assert_eq!((play.status, play.body.as_bytes()), (*status, *body));
    }
    let toml = recorder.finish().toml;
    if std::env::var_os("RECORD_DUMP").is_some() {
        eprintln!("{toml}");
    }
    Script::from_scenario_toml(&toml).unwrap_or_else(|error| panic!("{error}\n{toml}"));
    for expected in [
        "the body is neither an event stream nor JSON (\"text/html\"), recorded as `malformed`: <html>upstream confused</html>",
        "frame 1 is not JSON, recorded as `malformed`: <<garbage>>",
        "the 1 frame(s) after it were left out",
        "HTTP 502 body (the mock sends its own): <html>bad gateway</html>",
        "{ status = 502 }",
        "{ then = \"malformed\", cut_after = 1 }",
    ] {
        assert!(toml.contains(expected), "missing {expected:?} in:\n{toml}");
    }
}

/// An upstream that cannot be reached: the agent gets the recorder's own 502 saying so, and
/// the file names the request it left out.
#[tokio::test]
async fn an_unreachable_upstream_is_a_clear_502_and_a_note() {
    let closed = std::net::TcpListener::bind(loopback()).unwrap().local_addr().unwrap();
    let recorder =
        Recorder::start(Upstream::parse(&format!("http://{closed}")).unwrap(), Dialect::Responses, loopback())
            .await
            .unwrap();
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let plays = play(&client, &recorder.base_url(), Dialect::Responses, true, 1).await;
    assert_eq!(plays[0].status, 502);
    assert!(plays[0].body.contains("the upstream gave no answer"), "{:?}", plays[0]);
    let toml = recorder.finish().toml;
    assert!(toml.contains("# Note: request 1 (POST /v1/responses) left out: the upstream gave no answer"), "{toml}");
    assert!(Upstream::parse("https://api.openai.com").unwrap_err().to_string().contains("TLS forwarder"));
}

/// The upstream's answers, each held half a second by its pause: between its two text chunks,
/// before an in-band error, and before the end of a body that never sends its terminal event.
const STALLS: &str = r#"
title = "A Provider that stalls"

[[turn]]
prompt = "Read a.txt"
respond = [
  { text = ["Hello ", "world"], pause = { after = 5, ms = 500 } },
  { text = ["Useful "], then = { error = "server_error" }, pause = { after = 8, ms = 500 } },
  { text = ["Cut"], then = "eof", pause = { after = 8, ms = 500 } },
]
"#;

/// Each wait of `reply`'s body on the clock, with the chunk that ended it (`""` for the end of
/// the body); empty chunks (beats a dialect sends nothing for, which HTTP never sends) are none.
async fn waits(reply: MockReply) -> Vec<(Duration, String)> {
    let mut playback = Playback::start(reply);
    let (mut last, mut waits) = (tokio::time::Instant::now(), Vec::new());
    loop {
        let chunk = playback.recv().await;
        let text = match &chunk {
            Some(Chunk::Data(data)) if data.is_empty() => continue,
            Some(Chunk::Data(data)) => String::from_utf8_lossy(data).into_owned(),
            Some(Chunk::Abort) | None => String::new(),
        };
        if !last.elapsed().is_zero() {
            waits.push((last.elapsed(), text));
        }
        last = tokio::time::Instant::now();
        if chunk.is_none() {
            return waits;
        }
    }
}

/// A real upstream that stalls (the mock over HTTP, on the real clock) is recorded in every
/// dialect: each stall is a pause at the beat it came before, whatever the wire (between the
/// chunks, before the error, before the end of the body), as long as the upstream held it (less
/// the slack of a busy machine's scheduling), and rounded. Replayed on a paused clock, each pause
/// is a wait of exactly its length before the same chunk.
#[test]
fn a_recorded_stall_is_a_pause_at_its_beat_and_replays_on_the_virtual_clock() {
    const STALL_MS: u64 = 500;
    let recorded = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let mut recordings = tokio::task::JoinSet::new();
        for dialect in Dialect::ALL {
            recordings.spawn(async move {
                let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
                let script = Script::from_scenario_toml(STALLS).unwrap();
                let upstream = serve(Arc::new(Sessions::new(script, dialect)), loopback()).await.unwrap();
                // Half the stall: far above a loopback's jitter, so only the stalls are kept.
                let recorder = Recorder::start(Upstream::parse(&upstream.base_url()).unwrap(), dialect, loopback())
                    .await
                    .unwrap()
                    .with_min_gap(Duration::from_millis(STALL_MS / 2));
                play(&client, &recorder.base_url(), dialect, true, 3).await;
                (dialect, recorder.finish().toml)
            });
        }
        recordings.join_all().await
    });
    let paused = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
    for (dialect, toml) in recorded {
        if std::env::var_os("RECORD_DUMP").is_some() {
            eprintln!("{toml}");
        }
        let script = Script::from_scenario_toml(&toml).unwrap_or_else(|error| panic!("{dialect}: {error}\n{toml}"));
        let responses = &script.routes[ROOT];
        let placed: Vec<Vec<usize>> =
            responses.iter().map(|response| response.pause.iter().map(|pause| pause.after).collect()).collect();
        assert_eq!(placed, [[5], [8], [8]], "{dialect}: one pause each, at the beat it held back:\n{toml}");
        let lengths: Vec<u64> = responses.iter().map(|response| response.pause[0].ms).collect();
        for ms in &lengths {
            assert!(*ms >= STALL_MS - 50 && ms % 10 == 0, "{dialect}: a pause of {ms} ms:\n{toml}");
        }

        let provider = MockProvider::new(script.clone()).with_dialect(dialect);
        let replayed: Vec<Vec<(Duration, String)>> = paused.block_on(async {
            let mut replayed = Vec::new();
            for items in conversations().into_iter().take(3) {
                let (path, body) = request(dialect, &items, true);
                let path = path.split('?').next().unwrap_or_default().to_owned();
                let body = Bytes::from(body.to_string());
                let request = MockRequest { method: "POST".into(), path, headers: Vec::new(), body };
                replayed.push(waits(provider.respond(request)).await);
            }
            replayed
        });
        let context = format!("{dialect}: {replayed:?}\n{toml}");
        let replayed_lengths: Vec<Vec<Duration>> =
            replayed.iter().map(|waits| waits.iter().map(|(wait, _)| *wait).collect()).collect();
        let recorded_lengths: Vec<Vec<Duration>> = lengths.iter().map(|ms| vec![Duration::from_millis(*ms)]).collect();
        assert_eq!(replayed_lengths, recorded_lengths, "{context}");
        assert!(replayed[0][0].1.contains("world") && !replayed[0][0].1.contains("Hello"), "{context}");
        assert!(replayed[1][0].1.contains("The server had an error"), "the error after its pause: {context}");
        assert_eq!(replayed[2][0].1, "", "the end of the body after its pause: {context}");
    }
}
