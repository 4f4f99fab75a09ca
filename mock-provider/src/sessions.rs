//! One script for many sessions: `mock-provider serve` plays the whole script to each new
//! session, so a second thread in an editor, or a restarted agent, gets its answers too
//! instead of a refusal. A session is the Session a request names in its `session_id` header,
//! or, for a client that names none, the connection it came on; a request naming one of the
//! script's child routes (`sub_1`, ...) belongs to the session that started last. Each session
//! gets its own [`MockProvider`], so its cursors, journal and strictness are its own. Every
//! reply's pauses pass at the [`Speed`] `serve` was given (`--speed`).
//!
//! The corpus never uses this: a scenario run has one root Session, and another one is a
//! MOCK-ROUTES refusal there.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use crate::dialect::Dialect;
use crate::provider::{MockProvider, MockReply, MockRequest, SESSION_HEADER};
use crate::script::Script;
use crate::server::{CONNECTION_HEADER, Responder};
use crate::speed::Speed;

/// A provider per session, each playing the script from its start.
#[derive(Debug)]
pub struct Sessions {
    script: Script,
    dialect: Dialect,
    speed: Speed,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Each session's provider, by session key, in the order they started.
    providers: Vec<(String, Arc<MockProvider>)>,
}

impl Sessions {
    /// Serves `script` in `dialect` to every session.
    pub fn new(script: Script, dialect: Dialect) -> Sessions {
        Sessions { script, dialect, speed: Speed::default(), state: Mutex::new(State::default()) }
    }

    /// Plays every pause at `speed` (`mock-provider serve --speed`); real time by default.
    pub fn with_speed(mut self, speed: Speed) -> Sessions {
        self.speed = speed;
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
            && let Some((_, latest)) = state.providers.last()
        {
            return Arc::clone(latest); // a child Session of the latest session
        }
        let key = match session {
            Some(session) => format!("session {session}"),
            None => format!("connection {}", header(CONNECTION_HEADER).unwrap_or("0")),
        };
        if let Some((_, provider)) = state.providers.iter().find(|(known, _)| *known == key) {
            return Arc::clone(provider);
        }
        let provider = Arc::new(MockProvider::new(self.script.clone()).with_dialect(self.dialect));
        state.providers.push((key, Arc::clone(&provider)));
        provider
    }

    /// Every session's report, in the order they started.
    pub fn report(&self) -> String {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut text = String::new();
        for (key, provider) in &state.providers {
            let _ = write!(text, "{key}:\n{}", provider.report());
        }
        text
    }

    /// How many sessions have started.
    pub fn len(&self) -> usize {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).providers.len()
    }

    /// True before any session started.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Responder for Sessions {
    fn respond(&self, request: MockRequest) -> MockReply {
        let mut reply = self.provider_for(&request).respond(request);
        reply.steps = self.speed.apply(std::mem::take(&mut reply.steps));
        reply
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
