//! One observation of a terminal UI surface, and what it means on its own (MON-PRIORITY).
//!
//! A provider parser classifies one snapshot of the screen; the monitor judges a stream of
//! these over time. The vocabulary is houmao's `SurfaceAssessment` (reference
//! monitor-and-normalization.md A.1); the priority orders are A.2.2 and A.2.4.

use serde::{Deserialize, Serialize};

/// Whether the parser recognizes the surface at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Availability {
    /// The parser recognizes the surface.
    #[default]
    Supported,
    /// The parser contract does not recognize the surface: the lifecycle fails.
    Unsupported,
    /// The TUI is gone: the lifecycle fails.
    Disconnected,
    /// The parser cannot tell: counts toward a stall.
    Unknown,
}

/// What the tool is doing, as the parser reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum BusinessState {
    /// Nothing is running.
    Idle,
    /// A turn is running.
    Working,
    /// The tool waits for a human decision: the lifecycle is blocked.
    AwaitingOperator,
    /// The parser cannot tell: counts toward a stall.
    Unknown,
}

/// What the input area accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum InputMode {
    /// A prompt can be typed.
    Freeform,
    /// A menu or dialog has the input.
    Modal,
    /// No input is possible.
    Closed,
    /// The parser cannot tell; with a known business state this is not a stall.
    Unknown,
}

/// One parsed snapshot of the surface (the fields of the upstream `LifecycleObservation` that
/// the lifecycle reads).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Observation {
    /// Default `supported`.
    #[serde(default)]
    pub availability: Availability,
    /// What the tool is doing.
    pub business_state: BusinessState,
    /// What the input area accepts.
    pub input_mode: InputMode,
    /// The parser's UI context (`normal_prompt`, `slash_command`, `trust_prompt`, ...); only
    /// labels, never classifies. Default `normal_prompt`.
    #[serde(default = "normal_prompt")]
    pub ui_context: String,
    /// The parser's normalized dialog text; absent means the surface still shows the baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projection_text: Option<String>,
    /// The parser lost its baseline: the first such observation freezes the projection key.
    #[serde(default)]
    pub baseline_invalidated: bool,
    /// The raw terminal text the completion observer reads; absent means the projection text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<String>,
}

fn normal_prompt() -> String {
    "normal_prompt".to_owned()
}

impl Observation {
    /// `supported` and `awaiting_operator`.
    pub fn operator_blocked(&self) -> bool {
        self.availability == Availability::Supported && self.business_state == BusinessState::AwaitingOperator
    }

    /// `supported`, `idle` and `freeform`: a prompt could be submitted now.
    pub fn submit_ready(&self) -> bool {
        self.availability == Availability::Supported
            && self.business_state == BusinessState::Idle
            && self.input_mode == InputMode::Freeform
    }

    /// `unsupported` or `disconnected`: the surface is unusable.
    pub fn unusable(&self) -> bool {
        matches!(self.availability, Availability::Unsupported | Availability::Disconnected)
    }

    /// Unknown for stall timing: `availability` unknown, or supported with an unknown business
    /// state. An unknown input mode alone is not (MON-UNKNOWN-INPUT-NOT-STALL).
    pub fn unknown_for_stall(&self) -> bool {
        self.availability == Availability::Unknown
            || (self.availability == Availability::Supported && self.business_state == BusinessState::Unknown)
    }

    /// The word a recovery from stalled names (`recovered_to`): the availability when it is not
    /// `supported`, else `blocked_operator`, `working`, `submit_ready`, or
    /// `<business_state>/<input_mode>/<ui_context>`.
    pub fn label(&self) -> String {
        match self.availability {
            Availability::Unsupported => return "unsupported".to_owned(),
            Availability::Disconnected => return "disconnected".to_owned(),
            Availability::Unknown => return "unknown".to_owned(),
            Availability::Supported => {}
        }
        if self.operator_blocked() {
            "blocked_operator".to_owned()
        } else if self.business_state == BusinessState::Working {
            "working".to_owned()
        } else if self.submit_ready() {
            "submit_ready".to_owned()
        } else {
            format!("{}/{}/{}", word(self.business_state), word(self.input_mode), self.ui_context)
        }
    }

    /// The raw text the completion observer reads.
    pub fn raw(&self, baseline: &str) -> String {
        self.raw_output.clone().unwrap_or_else(|| self.projection(baseline).to_owned())
    }

    /// The projection text, the baseline when absent.
    pub fn projection<'a>(&'a self, baseline: &'a str) -> &'a str {
        self.projection_text.as_deref().unwrap_or(baseline)
    }
}

/// The serialized word of a vocabulary enum.
fn word(value: impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(word)) => word,
        _ => String::new(),
    }
}

/// Right-strips every line, joins with `\n`, trims the whole: the projection key that decides
/// whether the surface changed since submit.
pub fn normalize_projection_text(text: &str) -> String {
    split_lines(text).into_iter().map(str::trim_end).collect::<Vec<_>>().join("\n").trim().to_owned()
}

/// Lines as houmao splits them (Python's `str.splitlines()`): a line ends at `\n`, `\r\n`, a
/// bare `\r`, `\x0b`, `\x0c`, `\x1c` to `\x1e`, `\u{85}`, `\u{2028}` or `\u{2029}`, so a
/// terminal capture's carriage returns break lines as they do in houmao (docs/houmao.md).
fn split_lines(text: &str) -> Vec<&str> {
    let is_break =
        |c: char| matches!(c, '\n' | '\r' | '\x0b' | '\x0c' | '\x1c'..='\x1e' | '\u{85}' | '\u{2028}' | '\u{2029}');
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if is_break(c) {
            lines.push(&text[start..at]);
            start = at + c.len_utf8();
            if c == '\r' && chars.next_if(|&(_, next)| next == '\n').is_some() {
                start += 1;
            }
        }
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_break_where_python_splitlines_breaks_them() {
        assert_eq!(normalize_projection_text("baseline\rprompt"), "baseline\nprompt");
        assert_eq!(normalize_projection_text("a  \r\nb\u{2028}c\x0cd\n"), "a\nb\nc\nd");
        assert_eq!(split_lines("a\n\nb\r"), ["a", "", "b"]);
        assert_eq!(split_lines(""), Vec::<&str>::new());
    }

    fn observation(business_state: BusinessState, input_mode: InputMode) -> Observation {
        Observation {
            availability: Availability::Supported,
            business_state,
            input_mode,
            ui_context: "slash_command".to_owned(),
            projection_text: None,
            baseline_invalidated: false,
            raw_output: None,
        }
    }

    #[test]
    fn labels_follow_the_upstream_words() {
        assert_eq!(observation(BusinessState::Idle, InputMode::Freeform).label(), "submit_ready");
        assert_eq!(observation(BusinessState::Idle, InputMode::Modal).label(), "idle/modal/slash_command");
        assert_eq!(observation(BusinessState::AwaitingOperator, InputMode::Modal).label(), "blocked_operator");
        let gone = Observation {
            availability: Availability::Disconnected,
            ..observation(BusinessState::Idle, InputMode::Freeform)
        };
        assert_eq!(gone.label(), "disconnected");
    }

    #[test]
    fn unknown_input_mode_alone_is_not_unknown_for_stall() {
        assert!(!observation(BusinessState::Idle, InputMode::Unknown).unknown_for_stall());
        assert!(observation(BusinessState::Unknown, InputMode::Freeform).unknown_for_stall());
    }

    #[test]
    fn projection_text_is_normalized_line_by_line() {
        assert_eq!(normalize_projection_text("  a  \nb \n\n"), "a\nb");
    }
}
