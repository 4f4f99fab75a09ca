//! The credentials a recording must never hold: every value of the headers that carry an API
//! key (`authorization`, `x-api-key`, `x-goog-api-key`, ...) and of Gemini's `key` query
//! parameter, gathered as requests pass and removed from everything written, bodies included
//! (an agent may echo its key into a prompt or a tool call).

use std::collections::BTreeSet;

/// The headers whose values are credentials, lowercase.
pub const HEADERS: [&str; 6] =
    ["authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie"];

/// The shortest value taken for a credential: no real key is shorter, and scrubbing a shorter
/// one (a test's `x`) would scrub the file's words.
pub const MIN_LEN: usize = 4;

/// What a credential is replaced with.
pub const REDACTED: &str = "[redacted]";

/// The credentials seen so far.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    values: BTreeSet<String>,
}

impl Secrets {
    /// Notes a header's value when it is a credential: the whole value, and the token after an
    /// auth scheme (`Bearer sk-...`).
    pub fn header(&mut self, name: &str, value: &str) {
        if !HEADERS.iter().any(|header| name.eq_ignore_ascii_case(header)) {
            return;
        }
        self.add(value);
        if let Some((_, token)) = value.trim().split_once(' ') {
            self.add(token);
        }
    }

    /// Notes the `key` parameter of a query string (Gemini's API key), raw and decoded.
    pub fn query(&mut self, query: &str) {
        for pair in query.split('&') {
            if let Some(("key", value)) = pair.split_once('=') {
                self.add(value);
                self.add(&percent_decoded(value));
            }
        }
    }

    fn add(&mut self, value: &str) {
        let value = value.trim();
        if value.chars().count() >= MIN_LEN {
            self.values.insert(value.to_owned());
        }
    }

    /// `text` with every credential replaced, longest first (a token inside its header value
    /// goes with the value).
    pub fn scrub(&self, text: &str) -> String {
        let mut values: Vec<&String> = self.values.iter().collect();
        values.sort_by_key(|value| std::cmp::Reverse(value.len()));
        let mut text = text.to_owned();
        for value in values {
            text = text.replace(value.as_str(), REDACTED);
        }
        text
    }

    /// Whether `text` holds any credential.
    pub fn found_in(&self, text: &str) -> bool {
        self.values.iter().any(|value| text.contains(value.as_str()))
    }
}

/// `%XX` sequences decoded (bytes that do not decode are kept as they are).
fn percent_decoded(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex =
            bytes.get(index + 1..index + 3).and_then(|hex| u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok());
        match (bytes[index], hex) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                index += 3;
            }
            (b'+', _) => {
                decoded.push(b' ');
                index += 1;
            }
            (byte, _) => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_tokens_and_query_keys_are_scrubbed() {
        let mut secrets = Secrets::default();
        secrets.header("Authorization", "Bearer sk-test-123");
        secrets.header("content-type", "application/json");
        secrets.header("x-goog-api-key", "AIza-1");
        secrets.query("alt=sse&key=AIza%2D2");
        let text = "say sk-test-123 and AIza-1 and AIza-2 and AIza%2D2 as application/json";
        let scrubbed = secrets.scrub(text);
        assert_eq!(scrubbed, "say [redacted] and [redacted] and [redacted] and [redacted] as application/json");
        assert!(secrets.found_in(text) && !secrets.found_in(&scrubbed));
    }
}
