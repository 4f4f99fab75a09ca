//! Request bodies as increments: what a request changed from the previous request of its
//! route, so a long conversation costs its new items per request, not its whole history.
//!
//! A request body carries the whole conversation, so the bytes of a Session's requests grow
//! with the square of its length. The journal keeps, and the requests golden shows, each
//! request as an [`Increment`] instead: the first request of a route whole, every later one as
//! the top-level fields it changed, with an array that only grew given as its new items. A
//! [`Chain`] turns bodies into increments and back, route by route, in arrival order.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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

impl Increment {
    /// `next` as a change to `previous` (`None`: the first request of its route).
    pub fn between(previous: Option<&Value>, next: &Value) -> Increment {
        let (Some(Value::Object(previous)), Value::Object(next)) = (previous, next) else {
            return Increment::Whole { body: next.clone() };
        };
        let mut changes = Changes::default();
        for (key, value) in next {
            match (previous.get(key), value) {
                (Some(old), new) if old == new => {}
                (Some(Value::Array(old)), Value::Array(new))
                    if new.len() > old.len() && new[..old.len()] == old[..] =>
                {
                    changes.appended.insert(key.clone(), Value::Array(new[old.len()..].to_vec()));
                }
                _ => {
                    changes.changed.insert(key.clone(), value.clone());
                }
            }
        }
        changes.removed = previous.keys().filter(|key| !next.contains_key(*key)).cloned().collect();
        Increment::Since(changes)
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
    last: BTreeMap<String, Arc<Value>>,
}

impl Chain {
    /// Records `body` as the route's latest and returns it as an increment to the one before.
    pub fn push(&mut self, route: &str, body: Arc<Value>) -> Increment {
        let increment = Increment::between(self.last.get(route).map(Arc::as_ref), &body);
        self.last.insert(route.to_owned(), body);
        increment
    }

    /// Applies the route's next increment and returns the route's body as it now stands.
    pub fn apply(&mut self, route: &str, increment: &Increment) -> &Value {
        let body = self.last.entry(route.to_owned()).or_insert_with(|| Arc::new(Value::Null));
        increment.apply(Arc::make_mut(body));
        body
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

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
        let increments: Vec<Increment> = bodies.iter().map(|body| chain.push("root", Arc::new(body.clone()))).collect();
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
        let mut push = |route: &str, body: Value| chain.push(route, Arc::new(body));
        push("root", json!({"input": [1]}));
        assert_eq!(push("child", json!({"input": [1, 2]})).whole(), Some(&json!({"input": [1, 2]})));
        let grown = Increment::Since(Changes {
            appended: Map::from_iter([("input".into(), json!([2]))]),
            ..Changes::default()
        });
        assert_eq!(push("root", json!({"input": [1, 2]})), grown);
    }
}
