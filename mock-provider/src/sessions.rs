//! One script for many sessions: `mock-provider serve` plays the whole script to each new
//! session, so a second thread in an editor, or a restarted agent, gets its answers too
//! instead of a refusal. A session is the Session a request names in its `session_id` header,
//! or, for a client that names none, the connection it came on; a request naming one of the
//! script's child routes (`sub_1`, ...) belongs to the session that started last. Each session
//! gets its own [`MockProvider`], so its cursors, journal and strictness are its own. Every
//! reply's pauses pass at the [`Speed`] `serve` was given (`--speed`).
//!
//! A session only its connection could reach ends when that connection closes: its journal
//! goes to the journal file, if any (`--journal`), its counts into the totals, and nothing
//! else of it is kept, so memory stays flat over any number of connections. A session a
//! `session_id` header names lives on, for the next request that names it.
//!
//! The corpus never uses this: a scenario run has one root Session, and another one is a
//! MOCK-ROUTES refusal there.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use crate::dialect::Dialect;
use crate::provider::{MockProvider, MockReply, MockRequest, SESSION_HEADER};
use crate::script::Script;
use crate::server::{CONNECTION_HEADER, Responder};
use crate::speed::Speed;

/// A provider per session, each playing the script from its start.
pub struct Sessions {
    script: Script,
    dialect: Dialect,
    speed: Speed,
    /// Where each session's journal goes as it ends (`mock-provider serve --journal`).
    journal: Option<Mutex<Box<dyn Write + Send>>>,
    state: Mutex<State>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Sessions").field("dialect", &self.dialect).field("speed", &self.speed).finish()
    }
}

#[derive(Debug, Default)]
struct State {
    /// Each live session's provider, by session key, with its place among the sessions started.
    live: HashMap<String, (u64, Arc<MockProvider>)>,
    /// The key of the session that started last, while it lives.
    latest: Option<String>,
    /// How many sessions have started.
    started: u64,
    /// What the sessions that ended added up to.
    ended: Totals,
}

/// What ended sessions added up to: all that is kept of them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    /// Sessions.
    pub sessions: usize,
    /// Requests they received.
    pub requests: usize,
    /// Requests the script answered.
    pub served: usize,
    /// Requests it could not place.
    pub mismatched: usize,
}

impl Sessions {
    /// Serves `script` in `dialect` to every session.
    pub fn new(script: Script, dialect: Dialect) -> Sessions {
        Sessions { script, dialect, speed: Speed::default(), journal: None, state: Mutex::new(State::default()) }
    }

    /// Plays every pause at `speed` (`mock-provider serve --speed`); real time by default.
    pub fn with_speed(mut self, speed: Speed) -> Sessions {
        self.speed = speed;
        self
    }

    /// Writes each session's journal (what it received and answered) to `journal` as it ends,
    /// one JSON object a line: `{"session": KEY, "report": {"journal": [...], ...}}`.
    pub fn with_journal(mut self, journal: impl Write + Send + 'static) -> Sessions {
        self.journal = Some(Mutex::new(Box::new(journal)));
        self
    }

    /// The provider of the session `request` belongs to, started on first sight.
    fn provider_for(&self, request: &MockRequest) -> Arc<MockProvider> {
        let header = |name: &str| {
            request.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
        };
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let session = header(SESSION_HEADER);
        if let Some(session) = session
            && self.script.routes.contains_key(session)
            && let Some((_, latest)) = state.latest.as_ref().and_then(|key| state.live.get(key))
        {
            return Arc::clone(latest); // a child Session of the latest session
        }
        let key = match session {
            Some(session) => format!("session {session}"),
            None => connection_key(header(CONNECTION_HEADER).unwrap_or("0")),
        };
        if let Some((_, provider)) = state.live.get(&key) {
            return Arc::clone(provider);
        }
        let provider = Arc::new(MockProvider::new(self.script.clone()).with_dialect(self.dialect));
        state.started += 1;
        let order = state.started;
        state.live.insert(key.clone(), (order, Arc::clone(&provider)));
        state.latest = Some(key);
        provider
    }

    /// Ends the session `key`: its journal written, its totals kept, the rest freed.
    fn end(&self, key: &str) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let Some((_, provider)) = state.live.remove(key) else { return };
        if state.latest.as_deref() == Some(key) {
            state.latest = None;
        }
        let report = provider.report();
        let ended = &mut state.ended;
        ended.sessions += 1;
        ended.requests += report.journal.len();
        ended.served += report.journal.iter().filter(|entry| entry.response_index.is_some()).count();
        ended.mismatched += report.mismatches.len();
        drop(state);
        self.write_journal(key, &report);
    }

    fn write_journal(&self, key: &str, report: &crate::provider::MockReport) {
        if let Some(journal) = &self.journal {
            let mut journal = journal.lock().unwrap_or_else(PoisonError::into_inner);
            let line = serde_json::json!({ "session": key, "report": report });
            // A journal that cannot be written loses lines, never the answers.
            let _ = writeln!(journal, "{line}").and_then(|()| journal.flush());
        }
    }

    /// Ends every session still live, so the journal holds them all (on shutdown).
    pub fn end_all(&self) {
        let keys: Vec<String> = {
            let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let mut live: Vec<(&u64, &String)> = state.live.iter().map(|(key, (order, _))| (order, key)).collect();
            live.sort();
            live.into_iter().map(|(_, key)| key.clone()).collect()
        };
        for key in keys {
            self.end(&key);
        }
    }

    /// Every live session's report, in the order they started, then what ended ones added up to.
    pub fn report(&self) -> String {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut live: Vec<(&u64, &String, &Arc<MockProvider>)> =
            state.live.iter().map(|(key, (order, provider))| (order, key, provider)).collect();
        live.sort_by_key(|(order, _, _)| **order);
        let mut text = String::new();
        for (_, key, provider) in live {
            let _ = write!(text, "{key}:\n{}", provider.report());
        }
        let Totals { sessions, requests, served, mismatched } = state.ended;
        if sessions > 0 {
            let _ = writeln!(
                text,
                "{sessions} ended sessions: {requests} requests ({served} served, {mismatched} mismatched)"
            );
        }
        text
    }

    /// What the sessions that ended added up to.
    pub fn ended(&self) -> Totals {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).ended
    }

    /// How many sessions are live: started, and still reachable.
    pub fn len(&self) -> usize {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).live.len()
    }

    /// True when no session is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The key of the session of a client that names none: its connection.
fn connection_key(connection: &str) -> String {
    format!("connection {connection}")
}

impl Responder for Sessions {
    fn respond(&self, request: MockRequest) -> MockReply {
        let mut reply = self.provider_for(&request).respond(request);
        reply.steps = self.speed.apply(std::mem::take(&mut reply.steps));
        reply
    }

    /// A session keyed by its connection can no longer be reached once the connection closed;
    /// one a `session_id` header names can be, by a new connection, and lives on.
    fn closed(&self, connection: u64) {
        self.end(&connection_key(&connection.to_string()));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};
    use hyper::Request;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;

    use super::*;
    use crate::script::{ROOT, Response};

    fn script() -> Script {
        let text = |t: &str| Response { text: vec![t.into()], ..Response::default() };
        let mut script = Script::root(vec![text("one")]);
        script.routes.insert("sub_1".into(), vec![text("child")]);
        script
    }

    /// A response with a first-token wait, a stall between its two chunks and a wait before
    /// its in-band error, served in every dialect: on the paused clock the waits between its
    /// chunks are its pauses, each before the chunk it holds back, at every `--speed`.
    #[tokio::test(start_paused = true)]
    async fn pauses_replay_between_the_same_chunks_in_every_dialect_at_any_speed() {
        use std::time::Duration;

        use tokio::time::Instant;

        use crate::in_process::{Chunk, Playback};
        use crate::speed::Speed;

        let scenario = r#"
title = "Recorded timing"
[[turn]]
prompt = "hi"
respond = [{ text = ["Hello ", "world"], then = { error = "server_error" }, pause = [
  { after = 0, ms = 800 }, { after = 5, ms = 3000 }, { after = 9, ms = 400 },
] }]
"#;
        let script = Script::from_scenario_toml(scenario).unwrap();
        for dialect in Dialect::ALL {
            for (speed, factor) in [(Speed::default(), 1), (Speed::Factor(2.0), 2), (Speed::Max, 0)] {
                let (path, body) = match dialect {
                    Dialect::Responses => ("/v1/responses", r#"{"model":"m","stream":true}"#),
                    Dialect::ChatCompletions => ("/v1/chat/completions", r#"{"model":"m","stream":true}"#),
                    Dialect::AnthropicMessages => ("/v1/messages", r#"{"model":"m","stream":true}"#),
                    Dialect::Gemini => ("/v1beta/models/m:streamGenerateContent", "{}"),
                };
                let sessions = Sessions::new(script.clone(), dialect).with_speed(speed);
                let request = MockRequest {
                    method: "POST".into(),
                    path: path.into(),
                    headers: Vec::new(),
                    body: Bytes::from_static(body.as_bytes()),
                };
                let reply = sessions.respond(request);
                assert_eq!(reply.status, 200, "{dialect}");
                // Each wait, how many chunks came before it, and the chunk that ended it ("" for
                // the end of the body).
                let start = Instant::now();
                let mut last = start;
                let (mut waits, mut n_chunks) = (Vec::new(), 0);
                let mut playback = Playback::start(reply);
                loop {
                    let chunk = playback.recv().await;
                    let wait = last.elapsed();
                    let text = match &chunk {
                        // A beat the dialect sends nothing for: HTTP would not send it.
                        Some(Chunk::Data(data)) if data.is_empty() => continue,
                        Some(Chunk::Data(data)) => String::from_utf8_lossy(data).into_owned(),
                        Some(Chunk::Abort) | None => String::new(),
                    };
                    last = Instant::now();
                    if !wait.is_zero() {
                        waits.push((wait, n_chunks, text));
                    }
                    n_chunks += 1;
                    if chunk.is_none() {
                        break;
                    }
                }
                let context = format!("{dialect} at speed {speed}: {waits:?}");
                let expected: Vec<Duration> = match factor {
                    0 => Vec::new(),
                    factor => [800, 3000, 400].map(|ms| Duration::from_millis(ms / factor)).to_vec(),
                };
                assert_eq!(waits.iter().map(|(wait, _, _)| *wait).collect::<Vec<_>>(), expected, "{context}");
                assert_eq!(start.elapsed(), expected.iter().sum(), "{context}");
                if factor > 0 {
                    assert_eq!(waits[0].1, 0, "the first wait is before the first chunk: {context}");
                    assert!(waits[1].2.contains("world") && !waits[1].2.contains("Hello"), "{context}");
                    let error = &waits[2].2;
                    assert!(error.contains("The server had an error"), "the error comes after its pause: {context}");
                }
            }
        }
    }

    /// One request on a connection of its own, closed after the answer: its status line and
    /// body. `session` names a Session in the header, or none.
    async fn ask_once(addr: std::net::SocketAddr, session: Option<&str>) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let header = session.map_or_else(String::new, |session| format!("{SESSION_HEADER}: {session}\r\n"));
        let request = format!(
            "POST /v1/responses HTTP/1.1\r\nhost: mock\r\ncontent-type: application/json\r\n{header}content-length: 2\r\nconnection: close\r\n\r\n{{}}"
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    /// A journal kept in memory, for the test to read.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Each connection of a client that names no Session is a session of its own, freed once
    /// the connection closes: after any number of them no session is live, and the journal holds
    /// each one's request and answer. A Session a header names lives on.
    #[tokio::test]
    async fn a_session_only_its_closed_connection_could_reach_is_freed_into_the_journal() {
        let journal = Shared::default();
        let sessions = Arc::new(Sessions::new(script(), Dialect::Responses).with_journal(journal.clone()));
        let server = crate::serve(Arc::clone(&sessions), "127.0.0.1:0".parse().unwrap()).await.unwrap();
        let connections = 50;
        for _ in 0..connections {
            let answer = ask_once(server.local_addr(), None).await;
            assert!(answer.starts_with("HTTP/1.1 200") && answer.contains("\"one\""), "{answer}");
        }
        let named = ask_once(server.local_addr(), Some("thread-a")).await;
        assert!(named.starts_with("HTTP/1.1 200"), "{named}");
        // The server notes a close once it has read it; the client closed before.
        for _ in 0..500 {
            if sessions.len() == 1 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        assert_eq!(sessions.len(), 1, "only the named session lives on");
        let ended = sessions.ended();
        assert_eq!(
            (ended.sessions, ended.requests, ended.served, ended.mismatched),
            (connections, connections, connections, 0)
        );
        let lines: Vec<serde_json::Value> = String::from_utf8(journal.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), connections);
        assert!(lines.iter().all(|line| line["report"]["journal"][0]["response_index"] == 0), "{:?}", lines[0]);
        sessions.end_all();
        assert!(sessions.is_empty());
        let last = String::from_utf8(journal.0.lock().unwrap().clone()).unwrap();
        assert!(last.lines().last().unwrap().contains("\"session thread-a\""), "{last}");
        assert!(sessions.report().contains("51 ended sessions: 51 requests (51 served, 0 mismatched)"));
    }

    /// `exhausted = "repeat_last"` in a scenario's `[config]` holds under `serve`, which begins
    /// no turn: every request past the script gets its last response again.
    #[tokio::test]
    async fn repeat_last_repeats_the_last_response_under_serve() {
        let scenario =
            "[config]\nexhausted = \"repeat_last\"\n[[turn]]\nprompt = \"p\"\nrespond = [{ status = 503 }]\n";
        let script = Script::from_scenario_toml(scenario).unwrap();
        let sessions = Arc::new(Sessions::new(script, Dialect::Responses));
        let server = crate::serve(Arc::clone(&sessions), "127.0.0.1:0".parse().unwrap()).await.unwrap();
        for _ in 0..3 {
            let answer = ask_once(server.local_addr(), Some("thread-a")).await;
            assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        }
    }

    #[tokio::test]
    async fn a_second_session_over_real_http_plays_the_script_from_its_start() {
        let sessions = Arc::new(Sessions::new(script(), Dialect::Responses));
        let server = crate::serve(Arc::clone(&sessions), "127.0.0.1:0".parse().unwrap()).await.unwrap();
        let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
        let ask = |session: &str| {
            let request = Request::post(format!("{}/v1/responses", server.base_url()))
                .header("content-type", "application/json")
                .header(SESSION_HEADER, session)
                .body(Full::new(Bytes::from_static(b"{}")))
                .unwrap();
            let client = client.clone();
            async move {
                let response = client.request(request).await.unwrap();
                let status = response.status().as_u16();
                let body = response.into_body().collect().await.unwrap().to_bytes();
                (status, String::from_utf8_lossy(&body).into_owned())
            }
        };
        let (first, first_body) = ask("thread-a").await;
        let (second, second_body) = ask("thread-b").await;
        let (child, child_body) = ask("sub_1").await;
        let (again, _) = ask("thread-a").await;
        assert_eq!((first, second, child), (200, 200, 200));
        assert!(first_body.contains("\"one\"") && second_body.contains("\"one\""), "{second_body}");
        assert!(child_body.contains("\"child\""), "{child_body}");
        assert_eq!(again, 404, "thread-a's one response was served already");
        assert_eq!(sessions.len(), 2);
        let report = sessions.report();
        assert!(report.starts_with("session thread-a:") && report.contains("session thread-b:"), "{report}");
        assert!(script().routes.contains_key(ROOT));
    }
}
