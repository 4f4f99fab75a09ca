//! Side requests: calls an agent makes besides its conversation (title generation, safety
//! classifiers, model lists), answered with a canned reply and kept out of the journal, so an
//! implementation's extra traffic neither fails the script nor shows in the goldens.

use serde::Deserialize;
use serde_json::Value;

use crate::body::Body;
use crate::dialect::Dialect;
use crate::script::Response;

/// One kind of side request and its canned answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SideRequest {
    /// A name for reports, e.g. `title-generation`.
    pub name: String,
    /// The request path must equal this, when given (e.g. `/v1/models`).
    #[serde(default)]
    pub path: Option<String>,
    /// A JSON pointer into the request body whose string value must contain [`Self::contains`].
    #[serde(default)]
    pub pointer: Option<String>,
    /// The text the value at [`Self::pointer`] must contain.
    #[serde(default)]
    pub contains: Option<String>,
    /// Text the request's system instructions must contain, read in whatever dialect the
    /// mock speaks (Responses `instructions` or a system message, Chat `system` / `developer`
    /// messages, Anthropic `system`, Gemini `systemInstruction`): one rule for every dialect.
    #[serde(default)]
    pub system_contains: Option<String>,
    /// The answer: a scripted stream...
    #[serde(default)]
    pub respond: Option<Response>,
    /// ...or a plain JSON body with status 200.
    #[serde(default)]
    pub json: Option<Value>,
}

/// What a side request is answered with.
#[derive(Debug, Clone, PartialEq)]
pub enum SideReply<'a> {
    /// A stream, encoded like any scripted response.
    Stream(&'a Response),
    /// A JSON body.
    Json(&'a Value),
}

impl SideRequest {
    /// True when a request with this path and body, in `dialect`, is this side request (the
    /// body is parsed whole only when a rule reads into it).
    pub fn matches(&self, dialect: Dialect, path: &str, body: &Body) -> bool {
        let path_ok = self.path.as_deref().is_none_or(|wanted| wanted == path);
        let body_ok = match (&self.pointer, &self.contains) {
            (Some(pointer), contains) => body
                .json()
                .and_then(|body| body.pointer(pointer))
                .map(|value| match value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                })
                .is_some_and(|text| contains.as_deref().is_none_or(|wanted| text.contains(wanted))),
            (None, _) => true,
        };
        let system_ok = self.system_contains.as_deref().is_none_or(|wanted| {
            body.json()
                .and_then(|body| dialect.read(body).ok())
                .is_some_and(|conversation| conversation.system.iter().any(|text| text.contains(wanted)))
        });
        path_ok && body_ok && system_ok
    }

    /// The canned answer; an empty completed stream when none is given.
    pub fn reply(&self) -> SideReply<'_> {
        const EMPTY: &Response = &Response {
            reasoning: Vec::new(),
            text: Vec::new(),
            refusal: Vec::new(),
            calls: Vec::new(),
            usage: None,
            then: crate::script::Ending::Completed,
            pause: Vec::new(),
            cut_after: None,
            status: None,
            retry_after: None,
        };
        match (&self.json, &self.respond) {
            (Some(json), _) => SideReply::Json(json),
            (None, Some(response)) => SideReply::Stream(response),
            (None, None) => SideReply::Stream(EMPTY),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matches_by_path_and_by_a_pointer_that_contains_text() {
        let title: SideRequest =
            toml::from_str("name = \"title\"\npointer = \"/instructions\"\ncontains = \"a title\"").unwrap();
        let responses = Dialect::Responses;
        let asking = |instructions: &str| Body::from(json!({ "instructions": instructions }));
        assert!(title.matches(responses, "/v1/responses", &asking("Write a title for this")));
        assert!(!title.matches(responses, "/v1/responses", &asking("You are an agent")));
        let not_json = Body::new(bytes::Bytes::from_static(b"Write a title"));
        assert!(!title.matches(responses, "/v1/responses", &not_json));
        let models: SideRequest = toml::from_str("name = \"models\"\npath = \"/v1/models\"\njson = {}").unwrap();
        assert!(models.matches(responses, "/v1/models", &not_json));
        assert!(!models.matches(responses, "/v1/responses", &not_json));
        assert_eq!(models.reply(), SideReply::Json(&json!({})));
    }
}
