//! The ACP JSON schema as ACP publishes it, and a message read against it as any client built
//! on it reads one (ACP-SCHEMA). The schema crate's Rust types read many optional fields
//! leniently (`annotations`, `_meta`, ...), so a message can deserialize and still break the
//! published schema: acp-tck, and the clients it speaks for, validate against these files.
//!
//! The files are vendored in `judge/schema/acp/` (their README names the release). A method is
//! found by the `x-method` and `x-side` each type carries: what the client receives from the
//! agent (`x-side: client`), and the agent's answer to a client's method (`x-side: agent`, a
//! `...Response`). A method the schema does not type is an extension and has no reading.

use std::collections::HashMap;
use std::sync::LazyLock;

use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::LocationSegment;
use jsonschema::{ValidationError, ValidatorMap};
use serde_json::Value;

/// A protocol version's published schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `v1.schema.json`.
    V1,
    /// `v2.schema.json`.
    V2,
}

/// What a message of the agent's is, as the schema types it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent<'a> {
    /// A notification or request to the client: its `params`.
    Call(&'a str),
    /// The answer to the client's method: its `result`.
    Answer(&'a str),
    /// A JSON-RPC error: its `error`.
    Error,
}

/// Where and why a value breaks the published schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breach {
    /// The schema's name for the type the value was read as.
    pub type_name: String,
    /// The failing field, from the value read (`update.content.annotations`; empty for itself).
    pub path: String,
    /// What the schema expects there.
    pub why: String,
    /// The schema marks the field `x-deserialize-default-on-error`: a receiver reads a wrong
    /// value there as absent, but a sender is held to its type all the same.
    pub lenient: bool,
}

impl std::fmt::Display for Breach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.path.is_empty() {
            write!(f, "at `{}`: ", self.path)?;
        }
        write!(f, "{} (published schema, `{}`)", self.why, self.type_name)?;
        if self.lenient {
            f.write_str("; the schema tells receivers to read this field leniently (x-deserialize-default-on-error), not senders to send it so")?;
        }
        Ok(())
    }
}

/// How `value`, sent by the agent as `sent`, breaks `version`'s published schema; `None` when
/// it does not, when the schema does not type it (an extension), or when all that fails is a
/// value the schema does not know (an extension, or a protocol newer than the file).
pub fn breach(version: Version, sent: Sent<'_>, value: &Value) -> Option<Breach> {
    let schema = match version {
        Version::V1 => &*V1,
        Version::V2 => &*V2,
    };
    let type_name = schema.type_of(sent)?;
    let pointer = format!("#/$defs/{type_name}");
    let errors: Vec<_> = schema.validators.as_ref().ok()?.get(&pointer)?.iter_errors(value).collect();
    let deepest = deepest(&errors);
    let first = deepest.first()?;
    if deepest.iter().all(|error| unknown_value(error)) {
        return None;
    }
    let why = deepest.iter().map(ToString::to_string).collect::<Vec<_>>().join(" and ");
    Some(Breach {
        type_name: type_name.to_owned(),
        path: dotted(first.instance_path().segments()),
        why,
        lenient: schema.lenient(type_name, first),
    })
}

/// One version's vendored file, its types by method, and every type compiled.
struct Published {
    document: Value,
    /// The type of what the agent sends, by method: its calls (`Sent::Call`) and its answers.
    calls: HashMap<String, String>,
    answers: HashMap<String, String>,
    validators: Result<ValidatorMap, String>,
}

static V1: LazyLock<Published> = LazyLock::new(|| Published::read(include_str!("../schema/acp/v1.schema.json")));
static V2: LazyLock<Published> = LazyLock::new(|| Published::read(include_str!("../schema/acp/v2.schema.json")));

impl Published {
    fn read(text: &str) -> Self {
        let document: Value = serde_json::from_str(text).unwrap_or_default();
        let (mut calls, mut answers) = (HashMap::new(), HashMap::new());
        for (name, def) in document.get("$defs").and_then(Value::as_object).into_iter().flatten() {
            let (Some(method), Some(side)) =
                (def.get("x-method").and_then(Value::as_str), def.get("x-side").and_then(Value::as_str))
            else {
                continue;
            };
            match (side, name.ends_with("Response")) {
                ("client", false) => calls.insert(method.to_owned(), name.clone()),
                ("agent", true) => answers.insert(method.to_owned(), name.clone()),
                _ => None,
            };
        }
        let validators = jsonschema::options().build_map(&document).map_err(|error| error.to_string());
        Self { document, calls, answers, validators }
    }

    fn type_of(&self, sent: Sent<'_>) -> Option<&str> {
        match sent {
            Sent::Call(method) => self.calls.get(method).map(String::as_str),
            Sent::Answer(method) => self.answers.get(method).map(String::as_str),
            Sent::Error => Some("Error"),
        }
    }

    /// Whether the way to `error` passes a field the schema marks lenient for receivers.
    fn lenient(&self, type_name: &str, error: &ValidationError<'_>) -> bool {
        let Some(mut node) = self.document.pointer(&format!("/$defs/{type_name}")) else { return false };
        for segment in error.evaluation_path().segments() {
            let next = match &segment {
                LocationSegment::Property(key) if key == "$ref" => node
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|reference| reference.strip_prefix('#'))
                    .and_then(|pointer| self.document.pointer(pointer)),
                LocationSegment::Property(key) => node.get(key.as_ref()),
                LocationSegment::Index(index) => node.get(index),
            };
            let Some(next) = next else { return false };
            if next.get("x-deserialize-default-on-error").and_then(Value::as_bool) == Some(true) {
                return true;
            }
            node = next;
        }
        false
    }
}

/// The errors that explain why the value fails, deepest first: an `anyOf` or `oneOf` that no
/// branch matched is explained by the branches meant (those whose own discriminating `const`
/// or `enum` matched: the content block of the right `type`, not every other block type), and
/// of those by the errors that go deepest into the value.
fn deepest<'a>(errors: &'a [ValidationError<'a>]) -> Vec<&'a ValidationError<'a>> {
    let mut leaves = Vec::new();
    collect_leaves(errors, &mut leaves);
    let depth = |error: &ValidationError<'_>| error.instance_path().segments().count();
    let most = leaves.iter().map(|error| depth(error)).max().unwrap_or_default();
    leaves.retain(|error| depth(error) == most);
    let mut seen = std::collections::HashSet::new();
    leaves.retain(|error| seen.insert((error.instance_path().as_str().to_owned(), error.to_string())));
    // A wrong type says more than the values the right type could have held.
    let typed: Vec<_> = leaves.clone();
    leaves.retain(|error| !(unknown_value(error) && wrong_type_at(typed.iter().copied(), error)));
    leaves
}

fn collect_leaves<'a>(errors: &'a [ValidationError<'a>], leaves: &mut Vec<&'a ValidationError<'a>>) {
    for error in errors {
        match error.kind() {
            ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context }
                if !unknown_value(error) =>
            {
                let meant = context.iter().filter(|branch| !mismatched(branch));
                meant.for_each(|branch| collect_leaves(branch, leaves));
            }
            _ => leaves.push(error),
        }
    }
}

/// A branch that fails on a value of the right type that is not its own (its `const` or
/// `enum`): not the branch meant.
fn mismatched(branch: &[ValidationError<'_>]) -> bool {
    branch.iter().any(|error| unknown_value(error) && !wrong_type_at(branch.iter(), error))
}

/// A value the schema lists its own choices for, set to one it does not list: a `const` or
/// `enum` that fails, or an `anyOf`/`oneOf` whose every branch fails on one (a `sessionUpdate`
/// kind no branch names).
fn unknown_value(error: &ValidationError<'_>) -> bool {
    match error.kind() {
        ValidationErrorKind::Constant { .. } | ValidationErrorKind::Enum { .. } => true,
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            context.iter().all(|branch| mismatched(branch))
        }
        _ => false,
    }
}

/// Whether `errors` hold a wrong type where `error` stands: then `error` is no unknown value.
fn wrong_type_at<'a, 'b: 'a>(
    mut errors: impl Iterator<Item = &'a ValidationError<'b>>,
    error: &ValidationError<'_>,
) -> bool {
    errors.any(|other| {
        matches!(other.kind(), ValidationErrorKind::Type { .. }) && other.instance_path() == error.instance_path()
    })
}

/// `update.content[0].text` for the JSON pointer `/update/content/0/text`.
fn dotted<'a>(segments: impl Iterator<Item = LocationSegment<'a>>) -> String {
    let mut path = String::new();
    for segment in segments {
        match segment {
            LocationSegment::Index(index) => path.push_str(&format!("[{index}]")),
            LocationSegment::Property(key) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&key);
            }
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text_update(content: Value) -> Value {
        json!({"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": content}})
    }

    /// Both vendored files read and compile: a file that did not would read every message as
    /// clean.
    #[test]
    fn both_files_compile() {
        for schema in [&*V1, &*V2] {
            assert!(schema.validators.is_ok(), "{:?}", schema.validators.as_ref().err());
            assert!(schema.calls.contains_key("session/update"), "{:?}", schema.calls);
            assert!(schema.answers.contains_key("session/prompt"), "{:?}", schema.answers);
        }
    }

    /// acp-tck's case: `"annotations": "none"` on a text block deserializes as the crate's type
    /// (it drops the value) but breaks the schema, at the block's `annotations`, a field marked
    /// lenient for receivers only.
    #[test]
    fn a_wrongly_typed_lenient_field_is_named() {
        let update = text_update(json!({"type": "text", "text": "hi", "annotations": "none"}));
        let found = breach(Version::V1, Sent::Call("session/update"), &update);
        let found = found.expect("a breach");
        assert_eq!(found.path, "update.content.annotations");
        assert!(found.lenient, "{found:?}");
        assert!(found.why.contains("\"none\""), "{found:?}");
        assert_eq!(found.type_name, "SessionNotification");
        assert_eq!(
            found.to_string(),
            "at `update.content.annotations`: \"none\" is not of type \"object\" and \"none\" is not of type \"null\" (published schema, `SessionNotification`); the schema tells receivers to read this field leniently (x-deserialize-default-on-error), not senders to send it so"
        );
    }

    #[test]
    fn a_well_formed_message_has_no_breach() {
        let update = text_update(json!({"type": "text", "text": "hi", "annotations": {"priority": 0.5}}));
        assert_eq!(breach(Version::V1, Sent::Call("session/update"), &update), None);
        let answer = json!({"stopReason": "end_turn"});
        assert_eq!(breach(Version::V1, Sent::Answer("session/prompt"), &answer), None);
    }

    /// A wrongly typed field that is not lenient, in an answer: named, not lenient.
    #[test]
    fn a_wrongly_typed_answer_is_named() {
        let found = breach(Version::V1, Sent::Answer("session/prompt"), &json!({"stopReason": 7}));
        let found = found.expect("a breach");
        assert_eq!(found.path, "stopReason");
        assert_eq!(found.why, "7 is not of type \"string\"");
        assert!(!found.lenient, "{found:?}");
    }

    /// Extensions and values from a newer protocol are no breach: an unknown method, an update
    /// kind the schema does not list.
    #[test]
    fn extensions_and_unknown_values_have_no_breach() {
        assert_eq!(breach(Version::V1, Sent::Call("_zed/status"), &json!({"x": 1})), None);
        let newer = json!({"sessionId": "s", "update": {"sessionUpdate": "_my_update"}});
        assert_eq!(breach(Version::V1, Sent::Call("session/update"), &newer), None);
    }

    #[test]
    fn paths_are_dotted() {
        let root = jsonschema::paths::Location::new();
        assert_eq!(dotted(root.segments()), "");
        let deep = root.join("update").join("content").join(0usize).join("text");
        assert_eq!(dotted(deep.segments()), "update.content[0].text");
        let update = json!({"sessionId": "s", "update": {
            "sessionUpdate": "tool_call_update", "toolCallId": "c",
            "content": [{"type": "content", "content": {"type": "text", "text": 5}}],
        }});
        let found = breach(Version::V1, Sent::Call("session/update"), &update).map(|found| found.path);
        assert_eq!(found.as_deref(), Some("update.content[0].content.text"));
    }
}
