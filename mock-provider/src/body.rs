//! A request body, parsed as deep as it is read: its raw bytes, the raw spans of its top-level
//! fields, and the whole body as a [`Value`] only when something reads it whole.
//!
//! A request of a long conversation carries the whole conversation, so parsing every body
//! whole costs the square of the conversation's length. The mock reads little of a body: the
//! answer reads a few small top-level fields ([`Body::field`]), and the journal's increment
//! (`crate::increment`) compares each top-level field with the previous body's as raw bytes,
//! parsing only what differs. The whole body is parsed for the first request of a route, for a
//! side request whose rule reads into it, and when a body is not a JSON object.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// A request body, shared (cheap to clone) between the answer and the journal's chain.
#[derive(Clone)]
pub struct Body(Arc<Inner>);

#[derive(Clone)]
struct Inner {
    /// The bytes as received; `None` for a body made from a [`Value`].
    raw: Option<Raw>,
    /// Set once the body is known to be JSON without parsing it whole: its increment parsed
    /// every part that differs from a JSON body before it.
    checked: OnceLock<()>,
    /// The whole body, parsed when first needed.
    whole: OnceLock<Whole>,
}

#[derive(Clone)]
struct Raw {
    bytes: Bytes,
    /// Each top-level field's key and the byte range of its value, in the order a parsed
    /// [`Value`] has them (a repeated key keeps its first place and its last value, as
    /// serde_json's map does); `None` when the bytes do not scan as a JSON object.
    fields: Option<Vec<(String, Range<usize>)>>,
}

#[derive(Clone)]
enum Whole {
    Json(Value),
    /// Not JSON: the journal keeps it as a JSON string of its text.
    NotJson {
        text: Value,
        error: String,
    },
}

/// One top-level field's value: raw bytes, or parsed (a body made from a [`Value`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Field<'a> {
    Raw(&'a [u8]),
    Parsed(&'a Value),
}

impl Body {
    /// A body received as `bytes`; only its top-level structure is scanned here.
    pub fn new(bytes: Bytes) -> Body {
        let fields = scan(&bytes);
        Body(Arc::new(Inner { raw: Some(Raw { bytes, fields }), checked: OnceLock::new(), whole: OnceLock::new() }))
    }

    /// The whole body, when it is JSON (parsed on first call).
    pub fn json(&self) -> Option<&Value> {
        match self.whole() {
            Whole::Json(value) => Some(value),
            Whole::NotJson { .. } => None,
        }
    }

    /// Why the body is not JSON; `None` when it is (known without parsing it whole once its
    /// increment checked it).
    pub fn not_json(&self) -> Option<&str> {
        if self.is_checked() {
            return None;
        }
        match self.whole() {
            Whole::Json(_) => None,
            Whole::NotJson { error, .. } => Some(error),
        }
    }

    /// The body as the journal keeps it: the JSON, or a JSON string of its text when it is not
    /// JSON.
    pub fn journaled(&self) -> &Value {
        match self.whole() {
            Whole::Json(value) | Whole::NotJson { text: value, .. } => value,
        }
    }

    /// The top-level field `key` of a JSON object body, parsing only that field when the body
    /// is known to be JSON (else the whole body, so a body that is not JSON has no field).
    pub fn field(&self, key: &str) -> Option<Cow<'_, Value>> {
        if self.is_checked()
            && let Some(Raw { bytes, fields: Some(fields) }) = &self.0.raw
        {
            let (_, range) = fields.iter().find(|(name, _)| name == key)?;
            return serde_json::from_slice(bytes.get(range.clone())?).ok().map(Cow::Owned);
        }
        self.json()?.get(key).map(Cow::Borrowed)
    }

    /// The top-level fields of a body that is (or scans as) a JSON object, raw when it has
    /// bytes; `None` for any other body, or one known not to be JSON.
    pub(crate) fn fields(&self) -> Option<Vec<(&str, Field<'_>)>> {
        if let Some(Whole::NotJson { .. }) = self.0.whole.get() {
            return None;
        }
        match &self.0.raw {
            Some(Raw { bytes, fields: Some(fields) }) => {
                fields.iter().map(|(key, range)| Some((key.as_str(), Field::Raw(bytes.get(range.clone())?)))).collect()
            }
            Some(Raw { fields: None, .. }) => None,
            None => self.parsed_fields(),
        }
    }

    /// The top-level fields of a JSON object body, parsed (the whole body, on first call).
    pub(crate) fn parsed_fields(&self) -> Option<Vec<(&str, Field<'_>)>> {
        match self.json()? {
            Value::Object(map) => Some(map.iter().map(|(key, value)| (key.as_str(), Field::Parsed(value))).collect()),
            _ => None,
        }
    }

    /// Records that the body is JSON: every part of it was parsed or equals, byte for byte, a
    /// part of a JSON body before it.
    pub(crate) fn mark_checked(&self) {
        let _ = self.0.checked.set(());
    }

    /// The whole body as a [`Value`], taken out (copied only if it is still shared).
    pub(crate) fn into_value(self) -> Value {
        self.journaled();
        let whole = match Arc::try_unwrap(self.0) {
            Ok(inner) => inner.whole.into_inner(),
            Err(shared) => shared.whole.get().cloned(),
        };
        match whole {
            Some(Whole::Json(value) | Whole::NotJson { text: value, .. }) => value,
            None => Value::Null,
        }
    }

    fn is_checked(&self) -> bool {
        self.0.checked.get().is_some() || matches!(self.0.whole.get(), Some(Whole::Json(_)))
    }

    fn whole(&self) -> &Whole {
        self.0.whole.get_or_init(|| {
            let bytes = self.0.raw.as_ref().map_or(&[][..], |raw| &raw.bytes[..]);
            match serde_json::from_slice(bytes) {
                Ok(value) => Whole::Json(value),
                Err(error) => Whole::NotJson {
                    text: Value::String(String::from_utf8_lossy(bytes).into_owned()),
                    error: error.to_string(),
                },
            }
        })
    }
}

impl From<Value> for Body {
    fn from(value: Value) -> Body {
        Body(Arc::new(Inner { raw: None, checked: OnceLock::from(()), whole: OnceLock::from(Whole::Json(value)) }))
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Body");
        if let Some(raw) = &self.0.raw {
            debug.field("bytes", &raw.bytes.len());
        }
        debug.field("parsed", &self.0.whole.get().is_some()).finish()
    }
}

impl<'a> Field<'a> {
    /// The field as a [`Value`]; `None` when its bytes are not JSON.
    pub(crate) fn value(self) -> Option<Cow<'a, Value>> {
        match self {
            Field::Parsed(value) => Some(Cow::Borrowed(value)),
            Field::Raw(bytes) => {
                let Value::Array(mut wrapped) = parse_nested(b"[", bytes, b"]")? else { return None };
                wrapped.pop().map(Cow::Owned)
            }
        }
    }
}

/// The items `new` adds to the array `old`, when `new`'s bytes are `old`'s up to its closing
/// bracket and then more items: the bytes of those items and of the closing bracket.
pub(crate) fn appended_bytes<'a>(old: &[u8], new: &'a [u8]) -> Option<&'a [u8]> {
    let kept = old.strip_prefix(b"[")?.strip_suffix(b"]")?;
    let rest = new.strip_prefix(b"[")?.strip_prefix(kept)?;
    let rest = rest.trim_ascii_start();
    if kept.trim_ascii().is_empty() { (rest.first() != Some(&b']')).then_some(rest) } else { rest.strip_prefix(b",") }
}

/// Parses the items [`appended_bytes`] found; `None` when they are not JSON.
pub(crate) fn parse_items(tail: &[u8]) -> Option<Vec<Value>> {
    let Value::Array(mut wrapped) = parse_nested(b"[[", tail, b"]")? else { return None };
    match wrapped.pop()? {
        Value::Array(items) => Some(items),
        _ => None,
    }
}

/// Parses `bytes` inside `open` and `close`: a part of a body parsed at the depth it has in
/// the body, so serde_json's nesting limit refuses it exactly when it refuses the whole body.
fn parse_nested(open: &[u8], bytes: &[u8], close: &[u8]) -> Option<Value> {
    let mut buffer = Vec::with_capacity(open.len() + bytes.len() + close.len());
    buffer.extend_from_slice(open);
    buffer.extend_from_slice(bytes);
    buffer.extend_from_slice(close);
    serde_json::from_slice(&buffer).ok()
}

/// The top-level fields of `bytes` when they scan as a JSON object: keys parsed, values
/// skipped over (serde_json checks their syntax, not every detail a parse checks).
fn scan(bytes: &Bytes) -> Option<Vec<(String, Range<usize>)>> {
    let TopLevel(fields) = serde_json::from_slice(bytes).ok()?;
    let start = bytes.as_ptr() as usize;
    fields
        .into_iter()
        .map(|(key, value)| {
            let offset = (value.get().as_ptr() as usize).checked_sub(start)?;
            Some((key, offset..offset + value.get().len()))
        })
        .collect()
}

/// A JSON object's fields as raw values, borrowed from the bytes.
struct TopLevel<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for TopLevel<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = TopLevel<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut fields: Vec<(String, &'de RawValue)> = Vec::new();
                let mut places: HashMap<String, usize> = HashMap::new();
                while let Some((key, value)) = map.next_entry::<String, &'de RawValue>()? {
                    match places.get(&key).and_then(|&place| fields.get_mut(place)) {
                        Some(field) => field.1 = value,
                        None => {
                            places.insert(key.clone(), fields.len());
                            fields.push((key, value));
                        }
                    }
                }
                Ok(TopLevel(fields))
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::increment::Chain;

    fn body(text: &'static str) -> Body {
        Body::new(Bytes::from_static(text.as_bytes()))
    }

    #[test]
    fn a_grown_body_is_checked_and_read_without_being_parsed_whole() {
        let mut chain = Chain::default();
        let first = body(r#"{"model":"m","input":[{"role":"user"}],"stream":true}"#);
        chain.push("root", first.clone());
        assert!(first.0.whole.get().is_some(), "the first body of a route is kept whole");
        let grown = body(r#"{"model":"m","input":[{"role":"user"},{"role":"assistant"}],"stream":true}"#);
        chain.push("root", grown.clone());
        assert_eq!(grown.not_json(), None);
        assert_eq!(grown.field("stream").as_deref(), Some(&json!(true)));
        assert_eq!(grown.field("model").as_deref(), Some(&json!("m")));
        assert_eq!(grown.field("tools"), None);
        assert!(grown.0.whole.get().is_none(), "parsed whole");
    }

    #[test]
    fn a_body_not_known_to_be_json_is_parsed_whole_before_a_field_is_read() {
        let lone_surrogate = body(r#"{"model":"m","title":"\ud800"}"#);
        assert_eq!(lone_surrogate.field("model"), None);
        assert!(lone_surrogate.not_json().is_some());
        assert_eq!(lone_surrogate.journaled(), &json!(r#"{"model":"m","title":"\ud800"}"#));
        let fine = body(r#"{"model":"m"}"#);
        assert_eq!(fine.field("model").as_deref(), Some(&json!("m")));
        assert_eq!(body("[1]").field("model"), None);
    }

    #[test]
    fn appended_bytes_are_the_items_after_the_kept_ones() {
        assert_eq!(appended_bytes(b"[1,2]", b"[1,2,3]"), Some(&b"3]"[..]));
        assert_eq!(appended_bytes(b"[1, 2 ]", b"[1, 2 , 3 ]"), Some(&b" 3 ]"[..]));
        assert_eq!(appended_bytes(b"[ ]", b"[ 1]"), Some(&b"1]"[..]));
        assert_eq!(appended_bytes(b"[]", b"[]"), None);
        assert_eq!(appended_bytes(b"[1]", b"[12]"), None);
        assert_eq!(appended_bytes(b"[1,2]", b"[1,3,4]"), None);
        assert_eq!(appended_bytes(b"{}", b"{}"), None);
        assert_eq!(parse_items(b" 3, {\"a\": 4} ]"), Some(vec![json!(3), json!({"a": 4})]));
    }
}
