//! Serves a [`MockProvider`] over real HTTP/1.1 on a loopback socket, streaming its steps.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpSocket};
use tokio::task::{JoinHandle, JoinSet};

use crate::dialect::Step;
use crate::in_process::{Chunk, Playback};
use crate::provider::{MockProvider, MockReply, MockRequest};

/// The largest request body the mock reads: 32 MiB, far above a long conversation's request,
/// so a runaway client cannot make it hold unbounded memory. A larger body is answered 413
/// without reaching the script.
pub const MAX_BODY: usize = 32 * 1024 * 1024;

/// A running server; dropping it (or [`ServerHandle::shutdown`]) stops accepting and closes
/// open connections.
#[derive(Debug)]
pub struct ServerHandle {
    local_addr: SocketAddr,
    task: JoinHandle<()>,
}

impl ServerHandle {
    /// The bound address (with the real port when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `http://<addr>`, the base URL clients append `/v1/responses` to.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.local_addr)
    }

    /// Stops the server.
    pub fn shutdown(self) {}
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Binds `addr`, which must be a loopback address (e.g. `127.0.0.1:0`), and serves `provider`
/// on it until the returned handle is dropped. Non-loopback addresses are refused.
pub async fn serve<R: Responder>(provider: Arc<R>, addr: SocketAddr) -> io::Result<ServerHandle> {
    if !addr.ip().is_loopback() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{addr} is not a loopback address")));
    }
    let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    let listener = socket.listen(BACKLOG)?;
    let local_addr = listener.local_addr()?;
    let task = tokio::spawn(accept_loop(listener, provider));
    Ok(ServerHandle { local_addr, task })
}

/// How many connections may wait to be accepted: a client that opens a thousand at once (a
/// load test, a CI matrix starting together) finds them all accepted, where the 128 a plain
/// bind gives refused the rest. The kernel caps it at `net.core.somaxconn`.
pub const BACKLOG: u32 = 4096;

/// What answers the requests a server receives: one [`MockProvider`], or
/// [`crate::sessions::Sessions`], one per session.
pub trait Responder: Send + Sync + 'static {
    /// Decides the answer to `request`.
    fn respond(&self, request: MockRequest) -> MockReply;

    /// Connection `connection` (the [`CONNECTION_HEADER`] of its requests) closed, each of
    /// its responses ended: what only it could reach can go.
    fn closed(&self, _connection: u64) {}
}

impl Responder for MockProvider {
    fn respond(&self, request: MockRequest) -> MockReply {
        MockProvider::respond(self, request)
    }
}

/// The header the server adds to each request, naming the connection it came on (from 1), so
/// a responder can tell clients apart that name no Session.
pub const CONNECTION_HEADER: &str = "x-gauntlet-connection";

async fn accept_loop<R: Responder>(listener: TcpListener, provider: Arc<R>) {
    // Dropping the set (when this task is aborted) aborts every connection.
    let mut connections = JoinSet::new();
    let mut n_accepted = 0u64;
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    // Each step goes out when it is played: Nagle's algorithm would hold a small
                    // chunk back until the one before it is acknowledged (up to a delayed ACK,
                    // 40 ms or more), moving the waits a client sees and a recorder keeps.
                    let _ = stream.set_nodelay(true);
                    n_accepted += 1;
                    let (closing, connection) = (Arc::clone(&provider), n_accepted);
                    let serving = Arc::clone(&provider);
                    let service =
                        service_fn(move |request| handle(Arc::clone(&serving), connection, request));
                    connections.spawn(async move {
                        // Errors are client hang-ups or scripted aborts: both are expected.
                        let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
                        closing.closed(connection);
                    });
                }
                // Out of descriptors or similar: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            },
            Some(_) = connections.join_next() => {}
        }
    }
}

async fn handle<R: Responder>(
    provider: Arc<R>,
    connection: u64,
    request: Request<Incoming>,
) -> Result<hyper::Response<StepBody>, Box<dyn std::error::Error + Send + Sync>> {
    let (parts, body) = request.into_parts();
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(error) if error.is::<LengthLimitError>() => return Ok(too_large()),
        Err(error) => return Err(error),
    };
    let mut headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .filter_map(|(name, value)| Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned())))
        .collect();
    headers.push((CONNECTION_HEADER.to_owned(), connection.to_string()));
    let request =
        MockRequest { method: parts.method.as_str().to_owned(), path: parts.uri.path().to_owned(), headers, body };
    let reply = before_drop(provider.respond(request));
    let (status, headers) = (reply.status, reply.headers.clone());
    let mut response = hyper::Response::new(StepBody { playback: Playback::start(reply) });
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            response.headers_mut().append(name, value);
        }
    }
    Ok(response)
}

/// How long the connection stays open, silent, between a body's last bytes and its scripted
/// drop. A client's socket may discard what it had buffered when the reset comes with it (a
/// fetch that fails drops its unread chunk), so without this pause whether the agent sees the
/// text before the drop would depend on the machine's speed, and so would the verdict. On a
/// paused clock it costs nothing.
const BEFORE_DROP: Duration = Duration::from_millis(100);

/// `reply` with [`BEFORE_DROP`] before its scripted drop, if it has one.
fn before_drop(mut reply: MockReply) -> MockReply {
    if let Some(at) = reply.steps.iter().position(|step| *step == Step::Abort) {
        reply.steps.insert(at, Step::Pause(BEFORE_DROP));
    }
    reply
}

/// The answer to a body over [`MAX_BODY`]: 413 with an OpenAI-style JSON error.
fn too_large() -> hyper::Response<StepBody> {
    let body = serde_json::json!({ "error": {
        "type": "invalid_request_error", "code": "request_too_large",
        "message": format!("the request body is over the mock's {MAX_BODY}-byte limit"),
    }});
    let reply = MockReply {
        status: 413,
        headers: vec![("content-type".to_owned(), "application/json".to_owned())],
        steps: vec![Step::Bytes(Bytes::from(body.to_string()))],
        end: None,
    };
    let mut response = hyper::Response::new(StepBody { playback: Playback::start(reply) });
    *response.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
    if let Ok(value) = HeaderValue::try_from("application/json") {
        response.headers_mut().insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}

/// A response body fed by a [`Playback`]: pauses simply wait, an abort fails the body so hyper
/// drops the connection without ending the chunked body. Hyper drops it when the client closes
/// the connection mid-body, which the journal notes.
struct StepBody {
    playback: Playback,
}

/// The body error that makes hyper abort the connection.
#[derive(Debug, thiserror::Error)]
#[error("scripted disconnect")]
struct ScriptedDisconnect;

impl Body for StepBody {
    type Data = Bytes;
    type Error = ScriptedDisconnect;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.playback.poll_recv(cx).map(|chunk| {
            chunk.map(|chunk| match chunk {
                Chunk::Data(bytes) => Ok(Frame::data(bytes)),
                Chunk::Abort => Err(ScriptedDisconnect),
            })
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use http_body_util::Full;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    use serde_json::Value;

    use super::*;
    use crate::in_process::play;
    use crate::script::{Call, Ending, Pause, Response, Script};

    fn script() -> Script {
        let stream = Response {
            text: vec!["Hello, ".into(), "world".into()],
            calls: vec![Call {
                name: "shell".into(),
                args: serde_json::json!({ "cmd": "ls" }),
                call_id: None,
                raw_args: None,
                ..Call::default()
            }],
            pause: vec![Pause { after: 4, ms: 20 }],
            ..Response::default()
        };
        let limited = Response { status: Some(429), retry_after: Some(2), ..Response::default() };
        let dropped = Response { text: vec!["partial".into()], then: Ending::Disconnect, ..Response::default() };
        let mut script = Script::root(vec![stream, limited, dropped]);
        script.routes.insert("side".into(), vec![Response::default()]);
        script
    }

    fn request(base: &str, path: &str) -> Request<Full<Bytes>> {
        Request::post(format!("{base}{path}"))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(br#"{"model":"gpt-test","stream":true}"#)))
            .unwrap()
    }

    #[tokio::test]
    async fn http_matches_in_process_bytes_and_faults() {
        let provider = Arc::new(MockProvider::new(script()));
        let server = serve(Arc::clone(&provider), "127.0.0.1:0".parse().unwrap()).await.unwrap();
        let base = server.base_url();
        let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();

        // The same script served in-process gives the expected bytes.
        let twin = MockProvider::new(script());
        let reply = twin.respond(MockRequest {
            method: "POST".into(),
            path: "/v1/responses".into(),
            headers: vec![],
            body: Bytes::from_static(br#"{"model":"gpt-test"}"#),
        });
        assert!(reply.steps.iter().any(|s| matches!(s, Step::Pause(_))));
        let mut rx = play(reply.steps);
        let mut expected = Vec::new();
        while let Some(Chunk::Data(b)) = rx.recv().await {
            expected.extend_from_slice(&b);
        }

        let response = client.request(request(&base, "/v1/responses")).await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        assert_eq!(response.headers()["cache-control"], "no-cache");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, expected);

        let response = client.request(request(&base, "/v1/responses")).await.unwrap();
        assert_eq!(response.status(), 429);
        assert_eq!(response.headers()["retry-after"], "2");
        assert_eq!(response.headers()["content-type"], "application/json");
        let body: Value = serde_json::from_slice(&response.into_body().collect().await.unwrap().to_bytes()).unwrap();
        assert_eq!(body["error"]["code"], "rate_limit_exceeded");

        let response = client.request(request(&base, "/v1/responses")).await.unwrap();
        assert_eq!(response.status(), 200);
        assert!(response.into_body().collect().await.is_err(), "a scripted disconnect must not end cleanly");

        let response = client.request(request(&base, "/v2/chat")).await.unwrap();
        assert_eq!(response.status(), 404);
        let body: Value = serde_json::from_slice(&response.into_body().collect().await.unwrap().to_bytes()).unwrap();
        assert_eq!(body["error"]["type"], "gauntlet_unmatched_request");
        assert!(body["error"]["message"].as_str().unwrap().contains("POST /v1/responses"), "{body}");

        let report = provider.report();
        assert_eq!(report.journal.len(), 4);
        assert_eq!(report.journal[0].body.whole().unwrap()["model"], "gpt-test");
        assert_eq!(report.journal[0].content_type.as_deref(), Some("application/json"));
        assert_eq!(report.mismatches.len(), 1);
        assert_eq!(report.mismatches[0].path, "/v2/chat");
        assert_eq!(report.unconsumed.len(), 1);
        assert_eq!(report.unconsumed[0].route, "side");
        assert!(!report.is_strictly_satisfied());
        server.shutdown();
    }

    #[tokio::test]
    async fn a_client_closing_mid_body_is_noted_in_the_journal() {
        use crate::journal::StreamEnd;

        let held =
            Response { text: vec!["a".into()], pause: vec![Pause { after: 1, ms: 3_600_000 }], ..Response::default() };
        let provider = Arc::new(MockProvider::new(Script::root(vec![held, Response::default()])));
        let server = serve(Arc::clone(&provider), "127.0.0.1:0".parse().unwrap()).await.unwrap();
        let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();

        let response = client.request(request(&server.base_url(), "/v1/responses")).await.unwrap();
        let mut body = response.into_body();
        assert!(body.frame().await.unwrap().unwrap().is_data());
        let cancelled_at = tokio::time::Instant::now();
        drop(body);
        let mut ended = None;
        for _ in 0..200 {
            ended = provider.report().journal[0].timing.ended;
            if ended.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let ended = ended.expect("the server notices the closed connection");
        assert_eq!(ended.how, StreamEnd::ClientClosed);
        assert!(ended.at >= provider.since_start(cancelled_at));

        let response = client.request(request(&server.base_url(), "/v1/responses")).await.unwrap();
        response.into_body().collect().await.unwrap();
        let timing = provider.report().journal[1].timing;
        assert_eq!(timing.ended.map(|ended| ended.how), Some(StreamEnd::Finished));
        assert!(timing.received <= timing.ended.unwrap().at);
    }

    #[tokio::test]
    async fn a_scripted_drop_comes_apart_from_the_bytes_before_it() {
        let cut = Response { text: vec!["partial".into()], then: Ending::Disconnect, ..Response::default() };
        let provider = Arc::new(MockProvider::new(Script::root(vec![cut])));
        let server = serve(Arc::clone(&provider), "127.0.0.1:0".parse().unwrap()).await.unwrap();
        let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();

        let mut body = client.request(request(&server.base_url(), "/v1/responses")).await.unwrap().into_body();
        let mut text = Vec::new();
        let mut last_bytes = tokio::time::Instant::now();
        let dropped = loop {
            match body.frame().await {
                Some(Ok(frame)) => {
                    text.extend_from_slice(frame.data_ref().unwrap());
                    last_bytes = tokio::time::Instant::now();
                }
                Some(Err(_)) => break tokio::time::Instant::now(),
                None => panic!("the body ended cleanly instead of dropping"),
            }
        };
        assert!(String::from_utf8_lossy(&text).contains("partial"), "the bytes before the drop arrive");
        assert!(dropped - last_bytes >= BEFORE_DROP, "the drop comes {:?} after them", dropped - last_bytes);
        server.shutdown();
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_413_and_never_reaches_the_script() {
        let provider = Arc::new(MockProvider::new(Script::root(vec![Response::default()])));
        let server = serve(Arc::clone(&provider), "127.0.0.1:0".parse().unwrap()).await.unwrap();
        let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
        let huge = Request::post(format!("{}/v1/responses", server.base_url()))
            .body(Full::new(Bytes::from(vec![b' '; MAX_BODY + 1])))
            .unwrap();
        let response = client.request(huge).await.unwrap();
        assert_eq!(response.status(), 413);
        let body: Value = serde_json::from_slice(&response.into_body().collect().await.unwrap().to_bytes()).unwrap();
        assert_eq!(body["error"]["code"], "request_too_large");
        assert!(provider.report().journal.is_empty());
        // The script is untouched: the next, normal request gets its response.
        let response = client.request(request(&server.base_url(), "/v1/responses")).await.unwrap();
        assert_eq!(response.status(), 200);
    }

    #[tokio::test]
    async fn refuses_non_loopback() {
        let provider = Arc::new(MockProvider::new(Script::default()));
        assert!(serve(provider, "0.0.0.0:0".parse().unwrap()).await.is_err());
    }
}
