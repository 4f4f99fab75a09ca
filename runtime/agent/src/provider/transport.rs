//! The transport seam: how request bytes reach a Provider and response bytes come back.
//!
//! [`HttpTransport`] is real HTTP (hyper). The harness plugs in an in-process transport that
//! carries the same bytes without a socket, so scenarios can run on a paused clock.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// A transport-level failure: the bytes did not arrive.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TransportError(pub String);

/// One POST to the Provider.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    /// The full URL, e.g. `http://127.0.0.1:4000/v1/responses`.
    pub url: String,
    /// Header names (lowercase) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Bytes,
}

/// The head of a response and its body, still streaming.
#[derive(Debug)]
pub struct HttpResponse {
    /// The HTTP status code.
    pub status: u16,
    /// Header names (lowercase) and values.
    pub headers: Vec<(String, String)>,
    /// The body, read chunk by chunk.
    pub body: Body,
}

impl HttpResponse {
    /// The first value of a header, by lowercase name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }
}

/// A response body from a socket or from an in-process channel. Dropping it closes the stream.
#[derive(Debug)]
pub enum Body {
    /// A hyper body from a real connection.
    Http(hyper::body::Incoming),
    /// Chunks sent by an in-process transport; an `Err` is a dropped connection.
    Channel(tokio::sync::mpsc::Receiver<Result<Bytes, TransportError>>),
}

impl Body {
    /// The next chunk; `None` at a clean end of body.
    pub async fn next(&mut self) -> Option<Result<Bytes, TransportError>> {
        match self {
            Body::Channel(receiver) => receiver.recv().await,
            Body::Http(incoming) => loop {
                match incoming.frame().await? {
                    Ok(frame) => match frame.into_data() {
                        Ok(data) => return Some(Ok(data)),
                        Err(_trailers) => continue,
                    },
                    Err(error) => return Some(Err(TransportError(error_chain(&error)))),
                }
            },
        }
    }

    /// Reads the rest of the body, up to `limit` bytes, for error evidence.
    pub async fn read_to_limit(&mut self, limit: usize) -> Bytes {
        let mut out = Vec::new();
        while out.len() < limit {
            match self.next().await {
                Some(Ok(chunk)) => out.extend_from_slice(&chunk),
                _ => break,
            }
        }
        out.truncate(limit);
        Bytes::from(out)
    }
}

/// Boxed future returned by [`Transport::send`].
pub type SendFuture<'a> = Pin<Box<dyn Future<Output = Result<HttpResponse, TransportError>> + Send + 'a>>;

/// Sends one request and yields the response head; the body streams afterwards.
pub trait Transport: Send + Sync {
    /// Sends `request`.
    fn send(&self, request: HttpRequest) -> SendFuture<'_>;
}

/// Real HTTP/1.1 over TCP.
#[derive(Debug, Clone)]
pub struct HttpTransport {
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Default for HttpTransport {
    fn default() -> Self {
        HttpTransport { client: Client::builder(TokioExecutor::new()).build_http() }
    }
}

impl Transport for HttpTransport {
    fn send(&self, request: HttpRequest) -> SendFuture<'_> {
        Box::pin(async move {
            let mut builder = hyper::Request::post(&request.url);
            for (name, value) in &request.headers {
                builder = builder.header(name, value);
            }
            let http_request =
                builder.body(Full::new(request.body)).map_err(|error| TransportError(error.to_string()))?;
            let response =
                self.client.request(http_request).await.map_err(|error| TransportError(error_chain(&error)))?;
            let status = response.status().as_u16();
            let headers = response
                .headers()
                .iter()
                .map(|(name, value)| (name.as_str().to_owned(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
                .collect();
            Ok(HttpResponse { status, headers, body: Body::Http(response.into_body()) })
        })
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
