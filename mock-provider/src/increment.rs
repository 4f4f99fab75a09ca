//! Request bodies as increments: what a request changed from the previous request of its
//! route, so a long conversation costs its new items per request, not its whole history.
//!
//! A request body carries the whole conversation, so the bytes of a Session's requests grow
//! with the square of its length. The journal keeps, and the requests golden shows, each
//! request as an [`Increment`] instead: the first request of a route whole, every later one as
//! the top-level fields it changed, with an array that only grew given as its new items. A
//! [`Chain`] turns bodies into increments and back, route by route, in arrival order.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::body::{self, Body, Field};

/// One request body, as the journal and the requests golden keep it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Increment {
    /// The whole body: the first request of its route, or a body that is not a JSON object
    /// (or follows one that is not).
    Whole {
        /// The body (a JSON string of the raw text when it is not JSON).
        body: Value,
    },
    /// The body as a change to the previous body of its route.
    Since(Changes),
}

/// The top-level fields in which a body differs from the previous body of its route; a field
/// named in none of them is the same. All empty: the same body again (a retry).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Changes {
    /// Arrays that kept every earlier item and gained some at their end: only the new items
    /// (for a conversation, the turn's new messages).
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub appended: Map<String, Value>,
    /// Fields that are new or differ otherwise, whole.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub changed: Map<String, Value>,
    /// Fields the previous body had and this one lacks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
}

/// How one top-level field of a body differs from the previous body's.
enum Change {
    Same,
    Appended(Vec<Value>),
    Changed(Value),
}

impl Changes {
    /// `next`'s fields as changes to `previous`'s, both read by `fields`; `None` when either is
    /// not a JSON object or a part of them does not parse.
    fn between<'b>(
        previous: Option<&'b Body>,
        next: &'b Body,
        fields: impl Fn(&'b Body) -> Option<Vec<(&'b str, Field<'b>)>>,
    ) -> Option<Changes> {
        let old_fields = fields(previous?)?;
        let old: HashMap<&str, Field<'_>> = old_fields.iter().copied().collect();
        let new = fields(next)?;
        let mut changes = Changes::default();
        for (key, field) in &new {
            match Change::of(old.get(key).copied(), *field)? {
                Change::Same => {}
                Change::Appended(items) => {
                    changes.appended.insert((*key).to_owned(), Value::Array(items));
                }
                Change::Changed(value) => {
                    changes.changed.insert((*key).to_owned(), value);
                }
            }
        }
        let kept: HashSet<&str> = new.iter().map(|(key, _)| *key).collect();
        changes.removed =
            old_fields.into_iter().filter(|(key, _)| !kept.contains(key)).map(|(key, _)| key.to_owned()).collect();
        Some(changes)
    }
}

impl Change {
    /// The one rule: the same value, an array that kept every earlier item and gained some at
    /// its end, or anything else. Raw bytes decide the first two when they can; the parsed
    /// values decide otherwise. `None` when a field does not parse.
    fn of(old: Option<Field<'_>>, new: Field<'_>) -> Option<Change> {
        if let (Some(Field::Raw(old)), Field::Raw(new)) = (old, new) {
            if old == new {
                return Some(Change::Same);
            }
            if let Some(tail) = body::appended_bytes(old, new) {
                return body::parse_items(tail).map(Change::Appended);
            }
        }
        let new = new.value()?;
        let old = match old {
            Some(old) => Some(old.value()?),
            None => None,
        };
        Some(match (old.as_deref(), new.as_ref()) {
            (Some(old), new) if old == new => Change::Same,
            (Some(Value::Array(old)), Value::Array(new)) if new.len() > old.len() && new[..old.len()] == old[..] => {
                Change::Appended(new[old.len()..].to_vec())
            }
            _ => Change::Changed(new.into_owned()),
        })
    }
}

impl Increment {
    /// `next` as a change to `previous` (`None`: the first request of its route).
    ///
    /// Each top-level field is compared as raw bytes first, so a long conversation's unchanged
    /// history is compared, never parsed (docs/dialects.md, "What a long conversation costs"):
    /// equal bytes are the same field, and an array whose bytes keep all of the previous
    /// array's items has only its new items parsed. Anything else is compared as parsed
    /// [`Value`]s, so equal values written in other bytes are the same, exactly as when whole
    /// bodies are compared. A part that does not parse, or a body that is not an object, sends
    /// the comparison to the whole bodies.
    ///
    /// A body that only grew one array of the previous body's is found so from the two
    /// bodies' bytes ([`Body::grow_from`]) and never scanned whole.
    pub fn between(previous: Option<&Body>, next: &Body) -> Increment {
        if let Some((key, items)) = previous.and_then(|previous| next.grow_from(previous)) {
            let appended = Map::from_iter([(key, Value::Array(items))]);
            return Increment::Since(Changes { appended, ..Changes::default() });
        }
        let changes = Changes::between(previous, next, Body::fields)
            .inspect(|_| next.mark_checked())
            .or_else(|| Changes::between(previous, next, Body::parsed_fields));
        match changes {
            Some(changes) => Increment::Since(changes),
            None => Increment::Whole { body: next.journaled().clone() },
        }
    }

    /// Whether the body changed the conversation (the dialect's top-level field `key`) of the
    /// previous body of its route: a request after a fault that did is a continuation, not a
    /// retry. `None` when the bodies were not compared field by field.
    pub fn changes_conversation(&self, key: &str) -> Option<bool> {
        let Increment::Since(changes) = self else { return None };
        Some(
            changes.appended.contains_key(key)
                || changes.changed.contains_key(key)
                || changes.removed.iter().any(|removed| removed == key),
        )
    }

    /// Turns `body`, the previous body of the route (`Null` before the first), into this one.
    pub fn apply(&self, body: &mut Value) {
        let changes = match self {
            Increment::Whole { body: whole } => {
                body.clone_from(whole);
                return;
            }
            Increment::Since(changes) => changes,
        };
        let Value::Object(fields) = body else {
            // An increment follows only a JSON object; anything else has nothing to change.
            return;
        };
        for (key, items) in &changes.appended {
            match (fields.get_mut(key), items) {
                (Some(Value::Array(old)), Value::Array(new)) => old.extend(new.iter().cloned()),
                _ => {
                    fields.insert(key.clone(), items.clone());
                }
            }
        }
        for (key, value) in &changes.changed {
            fields.insert(key.clone(), value.clone());
        }
        for key in &changes.removed {
            fields.remove(key);
        }
    }

    /// The keys an increment takes in a JSON object it is flattened into (a requests golden
    /// line): `body`, or `appended`, `changed` and `removed`.
    pub const KEYS: [&'static str; 4] = ["body", "appended", "changed", "removed"];

    /// Takes the increment out of a JSON object it was flattened into; `None` when its keys
    /// do not hold one.
    pub fn take_from(fields: &mut Map<String, Value>) -> Option<Increment> {
        let own: Map<String, Value> = Increment::KEYS
            .iter()
            .filter_map(|key| fields.remove(*key).map(|value| ((*key).to_owned(), value)))
            .collect();
        serde_json::from_value(Value::Object(own)).ok()
    }

    /// The whole body, when this increment holds it.
    pub fn whole(&self) -> Option<&Value> {
        match self {
            Increment::Whole { body } => Some(body),
            Increment::Since(_) => None,
        }
    }
}

/// The last body of each route: what the next request of the route is an increment to.
#[derive(Debug, Clone, Default)]
pub struct Chain {
    /// Shared with whoever still reads the body (the mock answers from it), never copied.
    last: BTreeMap<String, Body>,
}

impl Chain {
    /// Records `body` as the route's latest and returns it as an increment to the one before.
    pub fn push(&mut self, route: &str, body: Body) -> Increment {
        let increment = Increment::between(self.last.get(route), &body);
        self.last.insert(route.to_owned(), body);
        increment
    }

    /// Applies the route's next increment and returns the route's body as it now stands.
    pub fn apply(&mut self, route: &str, increment: &Increment) -> &Value {
        let mut body = self.last.remove(route).map_or(Value::Null, Body::into_value);
        increment.apply(&mut body);
        self.last.entry(route.to_owned()).or_insert(Body::from(body)).journaled()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use bytes::Bytes;
    use serde_json::json;

    use super::*;

    /// Pushes each body as the mock receives it (raw bytes) and, in a second chain, as the
    /// whole parsed [`Value`] the mock used to compare (a string of the text when it is not
    /// JSON): the increments must be the same. Returns them as the golden shows them.
    #[track_caller]
    fn raw_as_parsed(bodies: &[&str]) -> Vec<Value> {
        let (mut raw, mut parsed) = (Chain::default(), Chain::default());
        bodies
            .iter()
            .enumerate()
            .map(|(index, text)| {
                let body = Body::new(Bytes::from(text.to_string()));
                let value = serde_json::from_str(text).unwrap_or_else(|_| Value::String((*text).to_owned()));
                let increment = raw.push("root", body.clone());
                assert_eq!(increment, parsed.push("root", Body::from(value.clone())), "body {index}: {text}");
                assert_eq!(body.journaled(), &value, "body {index}");
                assert_eq!(body.not_json().is_some(), serde_json::from_str::<Value>(text).is_err(), "body {index}");
                serde_json::to_value(&increment).unwrap()
            })
            .collect()
    }

    #[test]
    fn raw_bytes_give_the_increments_of_parsed_values() {
        let shown = raw_as_parsed(&[
            r#"{"model":"m","input":[{"a":1}],"stream":true}"#,
            // A retry: the same bytes.
            r#"{"model":"m","input":[{"a":1}],"stream":true}"#,
            r#"{"model":"m","input":[{"a":1},{"b":2}],"stream":true}"#,
            // Equal values in other bytes: key order and whitespace.
            r#"{ "stream" : true, "input":[ {"a":1} , {"b": 2} ], "model":"m" }"#,
            // Grown, but the earlier items' bytes differ: compared parsed.
            r#"{"model":"m","input":[{"a":1},{"b":2},{"c":3}],"stream":true}"#,
            // 1.0 is not 1 to serde_json.
            r#"{"model":"m","input":[{"a":1.0},{"b":2},{"c":3}],"stream":true}"#,
            // Shrank; then changed in the middle.
            r#"{"model":"m","input":[{"a":1.0},{"b":2}],"stream":true}"#,
            r#"{"model":"m","input":[{"a":1.0},{"x":2},{"d":4}],"stream":true}"#,
            // A new field and a removed one.
            r#"{"model":"m","input":[{"a":1.0},{"x":2},{"d":4}],"tools":[]}"#,
            // An empty array that grows; a number that only looks like a prefix.
            r#"{"model":"m","input":[],"tools":[]}"#,
            r#"{"model":"m","input":[ 1 ],"tools":[]}"#,
            r#"{"model":"m","input":[ 12 ],"tools":[]}"#,
            r#"{"model":"m","input":[ 12 ,3],"tools":[]}"#,
            // A repeated key keeps its first place and its last value.
            r#"{"model":"x","input":[ 12 ,3],"tools":[],"model":"m"}"#,
            // Not an object, then an object; not JSON, then JSON.
            r#"[1, 2]"#,
            r#"{"model":"m"}"#,
            "not json",
            r#"{"model":"m"}"#,
            // JSON in its syntax, but not to a parse: a lone surrogate in a new item, a
            // number out of range in a changed field.
            r#"{"model":"m","input":["\ud800"]}"#,
            r#"{"model":"m"}"#,
            r#"{"model":1e999}"#,
        ]);
        assert_eq!(
            shown,
            [
                json!({"body": {"model": "m", "input": [{"a": 1}], "stream": true}}),
                json!({}),
                json!({"appended": {"input": [{"b": 2}]}}),
                json!({}),
                json!({"appended": {"input": [{"c": 3}]}}),
                json!({"changed": {"input": [{"a": 1.0}, {"b": 2}, {"c": 3}]}}),
                json!({"changed": {"input": [{"a": 1.0}, {"b": 2}]}}),
                json!({"changed": {"input": [{"a": 1.0}, {"x": 2}, {"d": 4}]}}),
                json!({"changed": {"tools": []}, "removed": ["stream"]}),
                json!({"changed": {"input": []}}),
                json!({"appended": {"input": [1]}}),
                json!({"changed": {"input": [12]}}),
                json!({"appended": {"input": [3]}}),
                json!({}),
                json!({"body": [1, 2]}),
                json!({"body": {"model": "m"}}),
                json!({"body": "not json"}),
                json!({"body": {"model": "m"}}),
                json!({"body": r#"{"model":"m","input":["\ud800"]}"#}),
                json!({"body": {"model": "m"}}),
                json!({"body": r#"{"model":1e999}"#}),
            ]
        );
    }

    #[test]
    fn an_item_nested_past_the_parsers_limit_is_refused_as_in_a_whole_body() {
        let nested = |depth: usize| format!(r#"{{"input":[1,{}{}]}}"#, "[".repeat(depth), "]".repeat(depth));
        let (deepest, too_deep) = (nested(125), nested(126));
        assert!(serde_json::from_str::<Value>(&deepest).is_ok());
        assert!(serde_json::from_str::<Value>(&too_deep).is_err());
        let shown = raw_as_parsed(&[r#"{"input":[1]}"#, &deepest, r#"{"input":[1]}"#, &too_deep]);
        assert!(shown[1].get("appended").is_some() && shown[3].get("body").is_some(), "{shown:?}");
    }

    #[test]
    fn a_grown_conversation_is_its_new_items_and_bodies_round_trip() {
        let bodies = [
            json!({"model": "a", "input": [1], "tools": ["t"], "extra": true}),
            json!({"model": "a", "input": [1, 2, 3], "tools": ["t"], "extra": true}),
            json!({"model": "b", "input": [1, 2, 3], "tools": ["t"]}),
            json!({"model": "b", "input": [9], "tools": ["t"]}),
            json!({"model": "b", "input": [9], "tools": ["t"]}),
            json!("not json"),
        ];
        let mut chain = Chain::default();
        let increments: Vec<Increment> =
            bodies.iter().map(|body| chain.push("root", Body::from(body.clone()))).collect();
        let shown: Vec<Value> = increments.iter().map(|increment| serde_json::to_value(increment).unwrap()).collect();
        assert_eq!(
            shown,
            [
                json!({"body": bodies[0]}),
                json!({"appended": {"input": [2, 3]}}),
                json!({"changed": {"model": "b"}, "removed": ["extra"]}),
                json!({"changed": {"input": [9]}}),
                json!({}),
                json!({"body": "not json"}),
            ]
        );
        let mut replay = Chain::default();
        for (increment, body) in increments.iter().zip(&bodies) {
            assert_eq!(replay.apply("root", increment), body);
        }
    }

    #[test]
    fn routes_are_chained_apart() {
        let mut chain = Chain::default();
        let mut push = |route: &str, body: Value| chain.push(route, Body::from(body));
        push("root", json!({"input": [1]}));
        assert_eq!(push("child", json!({"input": [1, 2]})).whole(), Some(&json!({"input": [1, 2]})));
        let grown = Increment::Since(Changes {
            appended: Map::from_iter([("input".into(), json!([2]))]),
            ..Changes::default()
        });
        assert_eq!(push("root", json!({"input": [1, 2]})), grown);
    }
}
