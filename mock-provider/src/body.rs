//! A request body, parsed as deep as it is read: its raw bytes, the raw spans of its top-level
//! fields, and the whole body as a [`Value`] only when something reads it whole.
//!
//! A request of a long conversation carries the whole conversation, so parsing every body
//! whole costs the square of the conversation's length. The mock reads little of a body: the
//! answer reads a few small top-level fields ([`Body::field`]), and the journal's increment
//! (`crate::increment`) compares each top-level field with the previous body's as raw bytes,
//! parsing only what differs. A body that only grew one array of the route's previous body is
//! not even scanned: its structure is the previous body's, found from where the bytes differ.
//! The whole body is parsed for the first request of a route, for a side request whose rule
//! reads into it, and when a body is not a JSON object.

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
    /// The top-level structure: found from the previous body of the route when this body only
    /// grew one of its arrays ([`Body::grow_from`]), else scanned on first read.
    structure: OnceLock<Option<Structure>>,
}

/// A JSON object body's top-level structure, as its bytes scan.
#[derive(Clone)]
struct Structure {
    /// Each top-level field's key and the byte range of its value, in the order a parsed
    /// [`Value`] has them (a repeated key keeps its first place and its last value, as
    /// serde_json's map does).
    fields: Vec<(String, Range<usize>)>,
    /// True when no key is repeated: then every top-level value's range is in `fields`.
    unique: bool,
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
    /// A body received as `bytes`; nothing is scanned or parsed until it is read.
    pub fn new(bytes: Bytes) -> Body {
        let raw = Raw { bytes, structure: OnceLock::new() };
        Body(Arc::new(Inner { raw: Some(raw), checked: OnceLock::new(), whole: OnceLock::new() }))
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
            && let Some(raw) = &self.0.raw
            && let Some(Structure { fields, .. }) = raw.structure()
        {
            let (_, range) = fields.iter().find(|(name, _)| name == key)?;
            return serde_json::from_slice(raw.bytes.get(range.clone())?).ok().map(Cow::Owned);
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
            Some(raw) => raw
                .structure()?
                .fields
                .iter()
                .map(|(key, range)| Some((key.as_str(), Field::Raw(raw.bytes.get(range.clone())?))))
                .collect(),
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

    /// This body's structure found from `previous`, the route's body before it, without
    /// scanning this body whole: when this body is `previous` with items appended to one of
    /// its top-level arrays and every other byte the same, sets this body's structure, records
    /// it as JSON, and returns that array's key and new items (what its increment appends).
    /// `None`, with nothing set, in any other case: the body is then scanned when read.
    ///
    /// Why this is sound. `previous` is known to be a JSON object (checked, or parsed whole)
    /// with no repeated key, so its structure lists every top-level value with its span. Let
    /// the array field's value be `[K]` with its closing bracket at `close`, and let this body
    /// be `d > 0` bytes longer. The common prefix reaching `close` and the suffixes from
    /// `close` (old) and `close + d` (new) being equal mean this body is `previous` with the
    /// `d` bytes `I` inserted just before that bracket: everything but that one value is the
    /// same bytes in the same place, shifted by `d` after it. The value is now `[K I]`, and
    /// it is a JSON array exactly when `I` is JSON whitespace, a comma (none when `K` is
    /// blank) and then items `T` that with the bracket make a JSON array `[T]`: `K` is valid
    /// items (part of a JSON body), and the comma ends them. `T]` is parsed as `[[T]]`: one
    /// element, at the depth the items have in the body (so serde_json's nesting limit
    /// applies as in a whole parse), which also proves that nothing in `T` closes the array
    /// early (`1],"x":[2` parses as two elements, or not at all) and gives the new items with
    /// every check a parse makes (numbers, escapes, surrogates). Replacing one JSON value of a
    /// JSON text by another leaves a JSON text whose other values, keys and order are
    /// unchanged: this body's structure is `previous`'s with that span grown by `d` and the
    /// later ones shifted, exactly what a scan finds, and this body is JSON. `I` never begins
    /// with `]`, so the bodies first differ exactly at `close`: the only candidate is the
    /// field whose value ends there.
    pub(crate) fn grow_from(&self, previous: &Body) -> Option<(String, Vec<Value>)> {
        let (old, new) = (previous.0.raw.as_ref()?, self.0.raw.as_ref()?);
        if !previous.is_checked() || new.structure.get().is_some() {
            return None;
        }
        let structure = old.structure()?;
        if !structure.unique {
            return None;
        }
        let (old_bytes, new_bytes) = (&old.bytes[..], &new.bytes[..]);
        let grown = new_bytes.len().checked_sub(old_bytes.len()).filter(|&grown| grown > 0)?;
        let prefix = common_prefix(old_bytes, new_bytes);
        // The inserted bytes begin with whitespace, a comma or an item, never a bracket: the
        // bytes first differ at the grown array's closing bracket.
        let (place, (key, range)) =
            structure.fields.iter().enumerate().find(|(_, (_, range))| range.end == prefix + 1)?;
        let close = range.end - 1;
        let kept = old_bytes.get(range.clone())?.strip_prefix(b"[")?.strip_suffix(b"]")?;
        if new_bytes.get(close + grown..)? != old_bytes.get(close..)? {
            return None;
        }
        let items = parse_items(items_after(kept, new_bytes.get(close..range.end + grown)?)?)?;
        let fields = structure
            .fields
            .iter()
            .enumerate()
            .map(|(index, (name, span))| {
                let span = match index.cmp(&place) {
                    std::cmp::Ordering::Less => span.clone(),
                    std::cmp::Ordering::Equal => span.start..span.end + grown,
                    std::cmp::Ordering::Greater => span.start + grown..span.end + grown,
                };
                (name.clone(), span)
            })
            .collect();
        new.structure.set(Some(Structure { fields, unique: true })).ok()?;
        self.mark_checked();
        Some((key.clone(), items))
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
    items_after(kept, new.strip_prefix(b"[")?.strip_prefix(kept)?)
}

/// The bytes of the items after an array's items `kept`, and of its closing bracket, in
/// `rest`, what follows `kept` in the grown array: JSON whitespace and a comma (none after no
/// item) come first.
fn items_after<'a>(kept: &[u8], rest: &'a [u8]) -> Option<&'a [u8]> {
    let rest = trim_start(rest);
    if trim_start(kept).is_empty() { (rest.first() != Some(&b']')).then_some(rest) } else { rest.strip_prefix(b",") }
}

/// `bytes` without their leading JSON whitespace (not every ASCII space is: a form feed is
/// not).
fn trim_start(bytes: &[u8]) -> &[u8] {
    let blank = bytes.iter().take_while(|byte| matches!(byte, b' ' | b'\t' | b'\n' | b'\r')).count();
    bytes.get(blank..).unwrap_or_default()
}

/// Parses the items [`appended_bytes`] found, the bytes of at least one item and then of the
/// array's closing bracket; `None` when they are not JSON, hold no item, or close the array
/// before their end.
pub(crate) fn parse_items(tail: &[u8]) -> Option<Vec<Value>> {
    let Value::Array(mut wrapped) = parse_nested(b"[[", tail, b"]")? else { return None };
    match (wrapped.pop()?, wrapped.is_empty()) {
        (Value::Array(items), true) if !items.is_empty() => Some(items),
        _ => None,
    }
}

/// How many bytes `a` and `b` begin with in common, compared a block at a time (memcmp speed).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 512;
    let same = a.chunks(BLOCK).zip(b.chunks(BLOCK)).take_while(|(a, b)| a == b).count() * BLOCK;
    let (a, b) = (a.get(same..).unwrap_or_default(), b.get(same..).unwrap_or_default());
    same + a.iter().zip(b).take_while(|(a, b)| a == b).count()
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

impl Raw {
    /// The structure, scanned on first call unless [`Body::grow_from`] found it.
    fn structure(&self) -> Option<&Structure> {
        self.structure.get_or_init(|| scan(&self.bytes)).as_ref()
    }
}

/// The top-level structure of `bytes` when they scan as a JSON object: keys parsed, values
/// skipped over (serde_json checks their syntax, not every detail a parse checks).
fn scan(bytes: &[u8]) -> Option<Structure> {
    let TopLevel { fields, unique } = serde_json::from_slice(bytes).ok()?;
    let start = bytes.as_ptr() as usize;
    let fields = fields
        .into_iter()
        .map(|(key, value)| {
            let offset = (value.get().as_ptr() as usize).checked_sub(start)?;
            Some((key, offset..offset + value.get().len()))
        })
        .collect::<Option<_>>()?;
    Some(Structure { fields, unique })
}

/// A JSON object's fields as raw values, borrowed from the bytes, and whether no key repeats.
struct TopLevel<'a> {
    fields: Vec<(String, &'a RawValue)>,
    unique: bool,
}

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
                let mut unique = true;
                while let Some((key, value)) = map.next_entry::<String, &'de RawValue>()? {
                    match places.get(&key).and_then(|&place| fields.get_mut(place)) {
                        Some(field) => {
                            field.1 = value;
                            unique = false;
                        }
                        None => {
                            places.insert(key.clone(), fields.len());
                            fields.push((key, value));
                        }
                    }
                }
                Ok(TopLevel { fields, unique })
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

    /// Pushes `bodies` through a chain of raw bodies and one of parsed [`Value`]s, and returns
    /// for each whether its structure was found from the body before it. Either way its
    /// increment, structure, fields and JSON verdict must be those a full scan and parse give.
    #[track_caller]
    fn grown(bodies: &[&str]) -> Vec<bool> {
        let (mut raw, mut parsed) = (Chain::default(), Chain::default());
        let mut previous: Option<Body> = None;
        let mut found = Vec::new();
        for (index, text) in bodies.iter().enumerate() {
            let bytes = Bytes::from(text.to_string());
            let whole: Option<Value> = serde_json::from_str(text).ok();
            let value = whole.clone().unwrap_or_else(|| Value::String((*text).to_owned()));
            let probe = Body::new(bytes.clone());
            found.push(previous.as_ref().and_then(|previous| probe.grow_from(previous)).is_some());
            let body = Body::new(bytes.clone());
            let increment = raw.push("root", body.clone());
            assert_eq!(increment, parsed.push("root", Body::from(value.clone())), "body {index}: {text}");
            let spans = |body: &Body| body.0.raw.as_ref().unwrap().structure().map(|found| found.fields.clone());
            let scanned = scan(&bytes).map(|found| found.fields);
            assert_eq!(spans(&body), scanned, "body {index}: {text}");
            assert_eq!(body.not_json().is_some(), whole.is_none(), "body {index}: {text}");
            if let Some(Value::Object(map)) = &whole {
                for key in map.keys().map(String::as_str).chain(["absent"]) {
                    assert_eq!(body.field(key).as_deref(), map.get(key), "body {index}, {key}: {text}");
                }
            }
            previous = Some(body);
        }
        found
    }

    #[test]
    fn a_grown_body_is_found_from_the_previous_as_a_full_scan_finds_it() {
        let responses = [
            r#"{"model":"m","instructions":"be brief","input":[{"role":"user","content":"hi"}],"tools":[{"type":"function","name":"read"}],"stream":true}"#,
            r#"{"model":"m","instructions":"be brief","input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c1","arguments":"{\"path\":\"a]\"}"},{"type":"function_call_output","call_id":"c1","output":"x"}],"tools":[{"type":"function","name":"read"}],"stream":true}"#,
            r#"{"model":"m","instructions":"be brief","input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c1","arguments":"{\"path\":\"a]\"}"},{"type":"function_call_output","call_id":"c1","output":"x"} , {"role":"user","content":"caf\u00e9 [1]"}],"tools":[{"type":"function","name":"read"}],"stream":true}"#,
        ];
        assert_eq!(grown(&responses), [false, true, true]);
        let chat = [
            r#"{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"q"}],"stream":true,"stream_options":{"include_usage":true}}"#,
            r#"{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"user","content":"q2"}],"stream":true,"stream_options":{"include_usage":true}}"#,
            r#"{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"user","content":"q2"},{"role":"assistant","content":null,"tool_calls":[{"id":"t","function":{"name":"f","arguments":"{}"}}]}],"stream":true,"stream_options":{"include_usage":true}}"#,
        ];
        assert_eq!(grown(&chat), [false, true, true]);
        let gemini = [
            r#"{"contents":[{"role":"user","parts":[{"text":"q"}]}],"systemInstruction":{"parts":[{"text":"s"}]},"generationConfig":{}}"#,
            r#"{"contents":[{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"text":"a"}]},{"role":"user","parts":[{"text":"q2"}]}],"systemInstruction":{"parts":[{"text":"s"}]},"generationConfig":{}}"#,
            r#"{"contents":[{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"text":"a"}]},{"role":"user","parts":[{"text":"q2"}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]}],"systemInstruction":{"parts":[{"text":"s"}]},"generationConfig":{}}"#,
        ];
        assert_eq!(grown(&gemini), [false, true, true]);
        // An empty array grows by its first items; whitespace inside the array is kept.
        assert_eq!(
            grown(&[r#"{"input":[ ],"n":1}"#, r#"{"input":[ 1 ],"n":1}"#, r#"{"input":[ 1 ,2 ],"n":1}"#]),
            [false, true, true]
        );
    }

    #[test]
    fn anything_but_a_grown_array_is_scanned() {
        let base = r#"{"model":"m","input":[0,1],"n":1}"#;
        let cases: &[(&str, &str)] = &[
            ("a retry", base),
            ("an array changed in the middle", r#"{"model":"m","input":[0,7,2],"n":1}"#),
            ("a grown array and another change", r#"{"model":"x","input":[0,1,2],"n":1}"#),
            ("a grown array and a new field", r#"{"model":"m","input":[0,1,2],"n":1,"o":2}"#),
            ("appended bytes that close the array", r#"{"model":"m","input":[0,1,1],"x":[2],"n":1}"#),
            ("appended bytes that close it badly", r#"{"model":"m","input":[0,1,1],[2],"n":1}"#),
            ("no comma", r#"{"model":"m","input":[0,12],"n":1}"#),
            ("a trailing comma", r#"{"model":"m","input":[0,1,],"n":1}"#),
            ("a comma and nothing", r#"{"model":"m","input":[0,1, ],"n":1}"#),
            ("a form feed, not JSON whitespace", "{\"model\":\"m\",\"input\":[0,1\x0c,2],\"n\":1}"),
            ("whitespace elsewhere", r#"{"model":"m", "input":[0,1,2],"n":1}"#),
            ("a lone surrogate", r#"{"model":"m","input":[0,1,"\ud800"],"n":1}"#),
            ("a number out of range", r#"{"model":"m","input":[0,1,1e999],"n":1}"#),
            ("a shrunk array", r#"{"model":"m","input":[0],"n":1}"#),
            ("a grown inner array", r#"{"model":"m","input":[0,1],"n":[1,2]}"#),
            ("a grown string", r#"{"model":"m,","input":[0,1],"n":1}"#),
            ("not JSON at the end", r#"{"model":"m","input":[0,1,2],"n":1}}"#),
        ];
        for (name, text) in cases {
            assert_eq!(grown(&[base, text]), [false, false], "{name}");
        }
        let nested = |depth: usize| format!(r#"{{"input":[1,{}{}]}}"#, "[".repeat(depth), "]".repeat(depth));
        assert_eq!(grown(&[r#"{"input":[1]}"#, &nested(125)]), [false, true], "the deepest item parsed");
        assert_eq!(grown(&[r#"{"input":[1]}"#, &nested(126)]), [false, false], "past the nesting limit");
        let others: &[(&str, [&str; 2])] = &[
            ("an empty array and a comma", [r#"{"input":[]}"#, r#"{"input":[,1]}"#]),
            ("an empty array that stays empty", [r#"{"input":[]}"#, r#"{"input":[ ]}"#]),
            ("a repeated key", [r#"{"input":[0],"input":[1]}"#, r#"{"input":[0],"input":[1,2]}"#]),
            ("a repeated key, the first grown", [r#"{"input":[0],"input":[1]}"#, r#"{"input":[0,2],"input":[1]}"#]),
            ("not an object", ["[0]", "[0,1]"]),
            ("after a body that is not JSON", [r#"{"input":["\ud800"]}"#, r#"{"input":["\ud800",1]}"#]),
            ("an inner array grown at its end", [r#"{"input":[[0]]}"#, r#"{"input":[[0,1]]}"#]),
            ("a bracket in a string", [r#"{"input":["a]"]}"#, r#"{"input":["a,1]"]}"#]),
        ];
        for (name, texts) in others {
            assert_eq!(grown(texts), [false, false], "{name}");
        }
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
        assert_eq!(appended_bytes(b"[1]", b"[1\x0c,2]"), None, "a form feed is not JSON whitespace");
        assert_eq!(parse_items(b" 3, {\"a\": 4} ]"), Some(vec![json!(3), json!({"a": 4})]));
        assert_eq!(parse_items(b"1],[2]"), None, "closes the array early");
        assert_eq!(parse_items(b" ]"), None, "no item");
    }
}
