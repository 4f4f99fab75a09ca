//! `mock-provider record`: a proxy between an agent and a real Provider that forwards each
//! request, streams each answer back unchanged as it arrives, and, when stopped, writes a
//! scenario whose `respond` tables replay what the Provider sent (issue 23).
//!
//! Bottom first: `record/sse.rs` splits an event stream into frames; `record/draft.rs` rebuilds
//! a [`crate::Response`] beat by beat (`Draft`), with the `cut_after` that stops it where the
//! Provider stopped; `record/reader.rs` reads one answer (an HTTP error, a stream through one
//! reader per dialect under `record/reader/`, a whole JSON answer); `record/secrets.rs` gathers
//! the credentials requests carry and scrubs them; `record/scenario.rs` splits the calls into
//! turns and writes the TOML; `record/timing.rs` keeps when each chunk arrived and turns the
//! waits into pauses. Headers are forwarded and never written; no credential reaches the file,
//! even one a body repeats.
//!
//! The recorder speaks plain HTTP to its upstream: it has no TLS of its own (no heavy crate for
//! it), so an HTTPS Provider is reached through a local TLS forwarder (docs/reproduce-a-bug.md,
//! "Recording a real Provider").

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::{Duration, Instant};

use crate::dialect::Dialect;
use crate::server::MAX_BODY;

pub mod draft;
pub mod reader;
pub mod scenario;
pub mod secrets;
pub mod sse;
pub mod timing;

use draft::BodyEnd;
use scenario::Exchange;
use secrets::Secrets;
use timing::Arrivals;

/// Why the recorder cannot start.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The upstream URL is not one the recorder can forward to.
    #[error("upstream `{url}`: {problem}")]
    Upstream {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The listening socket could not be bound.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: io::Error,
    },
}

/// Where requests are forwarded: `http://host[:port][/base]`, the request's path and query
/// appended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    authority: String,
    base: String,
}

impl Upstream {
    /// Reads an upstream URL: plain HTTP, no query.
    pub fn parse(url: &str) -> Result<Upstream, RecordError> {
        let problem = |problem: &str| RecordError::Upstream { url: url.to_owned(), problem: problem.to_owned() };
        let uri: Uri = url.parse().map_err(|_| problem("not a URL"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(problem(
                    "the recorder speaks plain HTTP; reach an HTTPS Provider through a local TLS forwarder \
                     (docs/reproduce-a-bug.md, \"Recording a real Provider\")",
                ));
            }
            _ => return Err(problem("give an http:// URL")),
        }
        if uri.query().is_some() {
            return Err(problem("give the base URL without a query (an agent's own query is forwarded)"));
        }
        let authority = uri.authority().ok_or_else(|| problem("no host"))?.to_string();
        Ok(Upstream { authority, base: uri.path().trim_end_matches('/').to_owned() })
    }

    /// The URL a request to `path_and_query` goes to.
    fn uri(&self, path_and_query: &str) -> Result<Uri, hyper::http::Error> {
        Uri::builder()
            .scheme("http")
            .authority(self.authority.as_str())
            .path_and_query(format!("{}{path_and_query}", self.base))
            .build()
    }
}

impl std::fmt::Display for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http://{}{}", self.authority, self.base)
    }
}

/// One forwarded request and its answer as far as it came.
#[derive(Debug, Clone)]
struct Flight {
    method: String,
    path: String,
    body: Bytes,
    /// Why the upstream gave no answer, when it gave none.
    unreached: Option<String>,
    status: u16,
    content_type: Option<String>,
    retry_after: Option<String>,
    response: Vec<u8>,
    end: BodyEnd,
    /// When the request left for the upstream: the answer's times count from here.
    sent: Instant,
    /// When each chunk of the answer arrived.
    arrivals: Arrivals,
}

impl Flight {
    /// How long since the request left.
    fn elapsed(&self) -> Duration {
        self.sent.elapsed()
    }
}

#[derive(Debug, Default)]
struct State {
    flights: Vec<Arc<Mutex<Flight>>>,
    secrets: Secrets,
}

/// A running recorder; [`Recorder::finish`] stops it and renders the scenario.
#[derive(Debug)]
pub struct Recorder {
    local_addr: SocketAddr,
    dialect: Dialect,
    upstream: Upstream,
    state: Arc<Mutex<State>>,
    task: JoinHandle<()>,
    min_gap: Duration,
}

/// What a finished recording holds.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The scenario TOML.
    pub toml: String,
    /// How many requests were forwarded.
    pub requests: usize,
}

impl Recorder {
    /// Listens on `addr` (a loopback address) and forwards every request to `upstream`,
    /// reading answers as `dialect`.
    pub async fn start(upstream: Upstream, dialect: Dialect, addr: SocketAddr) -> Result<Recorder, RecordError> {
        let bind = |source| RecordError::Bind { addr, source };
        if !addr.ip().is_loopback() {
            return Err(bind(io::Error::new(io::ErrorKind::InvalidInput, "not a loopback address")));
        }
        let listener = TcpListener::bind(addr).await.map_err(bind)?;
        let local_addr = listener.local_addr().map_err(bind)?;
        let state = Arc::new(Mutex::new(State::default()));
        let proxy = Arc::new(Proxy {
            upstream: upstream.clone(),
            client: Client::builder(TokioExecutor::new()).build_http(),
            state: Arc::clone(&state),
        });
        let task = tokio::spawn(accept_loop(listener, proxy));
        Ok(Recorder { local_addr, dialect, upstream, state, task, min_gap: timing::MIN_GAP })
    }

    /// Keeps as a pause only a wait of at least `min_gap` before a chunk ([`timing::MIN_GAP`]
    /// unless told; `Duration::MAX` keeps none).
    pub fn with_min_gap(mut self, min_gap: Duration) -> Recorder {
        self.min_gap = min_gap;
        self
    }

    /// `http://<addr>`, the base URL an agent is pointed at.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.local_addr)
    }

    /// Stops forwarding and renders what was recorded; an answer still streaming is recorded
    /// as far as it came.
    pub fn finish(self) -> Recording {
        let (flights, secrets) = {
            let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let flights: Vec<Flight> = state
                .flights
                .iter()
                .map(|flight| flight.lock().unwrap_or_else(PoisonError::into_inner).clone())
                .collect();
            (flights, state.secrets.clone())
        };
        self.task.abort();
        let mut exchanges = Vec::new();
        let mut notes = Vec::new();
        for (index, flight) in flights.iter().enumerate() {
            let number = index + 1;
            let unreached = match (&flight.unreached, flight.status) {
                (Some(why), _) => Some(why.as_str()),
                (None, 0) => Some("none had come when the recording stopped"),
                (None, _) => None,
            };
            if let Some(why) = unreached {
                notes.push(format!(
                    "request {number} ({} {}) left out: the upstream gave no answer: {why}",
                    flight.method, flight.path
                ));
                continue;
            }
            let answer = reader::Answer {
                status: flight.status,
                content_type: flight.content_type.as_deref(),
                retry_after: flight.retry_after.as_deref(),
                body: &flight.response,
                end: flight.end,
                arrivals: &flight.arrivals,
            };
            let recorded = reader::read(self.dialect, &answer, self.min_gap);
            exchanges.push(Exchange {
                number,
                method: flight.method.clone(),
                path: flight.path.clone(),
                body: flight.body.clone(),
                recorded,
            });
        }
        let toml = scenario::render(self.dialect, &self.upstream.to_string(), &exchanges, notes, &secrets);
        Recording { toml, requests: flights.len() }
    }
}

impl Drop for Recorder {
    /// A recorder dropped unfinished stops forwarding too.
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Proxy {
    upstream: Upstream,
    client: Client<HttpConnector, Full<Bytes>>,
    state: Arc<Mutex<State>>,
}

async fn accept_loop(listener: TcpListener, proxy: Arc<Proxy>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    // Each chunk goes on to the agent as it came, not held back by Nagle's algorithm.
                    let _ = stream.set_nodelay(true);
                    let proxy = Arc::clone(&proxy);
                    let service = service_fn(move |request| forward(Arc::clone(&proxy), request));
                    connections.spawn(async move {
                        // Errors are hang-ups and forwarded drops: both are the wire's story.
                        let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
                    });
                }
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            },
            Some(_) = connections.join_next() => {}
        }
    }
}

/// Headers that belong to one connection, not to the message: never forwarded either way.
const HOP_BY_HOP: [&str; 8] =
    ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "host"];

/// Forwards one request and tees its answer into a [`Flight`].
async fn forward(proxy: Arc<Proxy>, request: Request<Incoming>) -> Result<Response<Tee>, hyper::Error> {
    let (parts, body) = request.into_parts();
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => {
            return Ok(refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body could not be read whole (over 32 MiB, or cut)",
            ));
        }
    };
    let flight = Arc::new(Mutex::new(Flight {
        method: parts.method.as_str().to_owned(),
        path: parts.uri.path().to_owned(),
        body: body.clone(),
        unreached: None,
        status: 0,
        content_type: None,
        retry_after: None,
        response: Vec::new(),
        end: BodyEnd::Unfinished,
        sent: Instant::now(),
        arrivals: Arrivals::default(),
    }));
    {
        let mut state = proxy.state.lock().unwrap_or_else(PoisonError::into_inner);
        for (name, value) in &parts.headers {
            state.secrets.header(name.as_str(), &String::from_utf8_lossy(value.as_bytes()));
        }
        state.secrets.query(parts.uri.query().unwrap_or_default());
        state.flights.push(Arc::clone(&flight));
    }
    let unreached = |why: String| {
        flight.lock().unwrap_or_else(PoisonError::into_inner).unreached = Some(why.clone());
        Ok(refusal(StatusCode::BAD_GATEWAY, &format!("mock-provider record: the upstream gave no answer: {why}")))
    };
    let path_and_query = parts.uri.path_and_query().map_or("/", |path| path.as_str());
    let uri = match proxy.upstream.uri(path_and_query) {
        Ok(uri) => uri,
        Err(error) => return unreached(error.to_string()),
    };
    let mut upstream = Request::builder().method(parts.method.clone()).uri(uri);
    for (name, value) in &parts.headers {
        // The recorder reads answers as they are, so it asks for no compression.
        if !HOP_BY_HOP.contains(&name.as_str()) && name != header::ACCEPT_ENCODING && name != header::CONTENT_LENGTH {
            upstream = upstream.header(name, value);
        }
    }
    let upstream = match upstream.body(Full::new(body)) {
        Ok(request) => request,
        Err(error) => return unreached(error.to_string()),
    };
    flight.lock().unwrap_or_else(PoisonError::into_inner).sent = Instant::now();
    let answer = match proxy.client.request(upstream).await {
        Ok(answer) => answer,
        Err(error) => return unreached(format!("{error:#}")),
    };
    let (parts, body) = answer.into_parts();
    {
        let mut flight = flight.lock().unwrap_or_else(PoisonError::into_inner);
        let text = |name: HeaderName| {
            parts.headers.get(name).map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        };
        flight.status = parts.status.as_u16();
        flight.content_type = text(header::CONTENT_TYPE);
        flight.retry_after = text(header::RETRY_AFTER);
    }
    let mut response = Response::new(Tee { source: Source::Upstream(body), flight: Some(flight) });
    *response.status_mut() = parts.status;
    for (name, value) in &parts.headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            response.headers_mut().append(name, value.clone());
        }
    }
    Ok(response)
}

/// The recorder's own answer (not the Provider's) to a request it could not forward.
fn refusal(status: StatusCode, message: &str) -> Response<Tee> {
    let body = serde_json::json!({ "error": { "type": "recorder_error", "message": message } }).to_string();
    let mut response = Response::new(Tee { source: Source::Own(Some(Bytes::from(body))), flight: None });
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// An answer body on its way to the agent: the upstream's frames passed on as they come and
/// copied into their [`Flight`], which notes how the body ended (dropped or closed early too).
struct Tee {
    source: Source,
    /// `None` once the end is noted, and for the recorder's own answers.
    flight: Option<Arc<Mutex<Flight>>>,
}

enum Source {
    Upstream(Incoming),
    Own(Option<Bytes>),
}

impl Tee {
    fn end(&mut self, end: BodyEnd) {
        if let Some(flight) = self.flight.take() {
            let mut flight = flight.lock().unwrap_or_else(PoisonError::into_inner);
            flight.end = end;
            let at = flight.elapsed();
            flight.arrivals.end(at);
        }
    }
}

impl Body for Tee {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let polled = match &mut self.source {
            Source::Own(bytes) => return Poll::Ready(bytes.take().map(|bytes| Ok(Frame::data(bytes)))),
            Source::Upstream(body) => Pin::new(body).poll_frame(cx),
        };
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(flight)) = (frame.data_ref(), &self.flight) {
                    let mut flight = flight.lock().unwrap_or_else(PoisonError::into_inner);
                    flight.response.extend_from_slice(data);
                    let at = flight.elapsed();
                    flight.arrivals.chunk(data.len(), at);
                }
            }
            // The agent sees the drop too: hyper ends its connection on a body error.
            Poll::Ready(Some(Err(_))) => self.end(BodyEnd::Dropped),
            Poll::Ready(None) => self.end(BodyEnd::Finished),
            Poll::Pending => {}
        }
        polled
    }
}

impl Drop for Tee {
    fn drop(&mut self) {
        self.end(BodyEnd::ClientClosed);
    }
}
