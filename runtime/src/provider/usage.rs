//! Token usage in the one form the Log records, whatever dialect the Provider spoke, so a
//! `provider_usage` event is the same bytes for the same answer (issue 11).
//!
//! The form is the Responses `usage` object: `input_tokens` counts the whole prompt (cached
//! tokens included, and broken out in `input_tokens_details.cached_tokens`); `output_tokens`
//! counts everything generated (reasoning included, broken out in
//! `output_tokens_details.reasoning_tokens`).

use serde_json::{Value, json};

/// Token counts read from any dialect's usage report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    /// The whole prompt, cached tokens included.
    pub input: u64,
    /// The part of the prompt read from a cache.
    pub cached: u64,
    /// Everything generated, reasoning included.
    pub output: u64,
    /// The part of the output spent on reasoning.
    pub reasoning: u64,
}

impl TokenUsage {
    /// The usage object the Log records.
    pub fn to_value(self) -> Value {
        json!({
            "input_tokens": self.input,
            "input_tokens_details": {"cached_tokens": self.cached},
            "output_tokens": self.output,
            "output_tokens_details": {"reasoning_tokens": self.reasoning},
            "total_tokens": self.input.saturating_add(self.output),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_form_totals_input_and_output() {
        let usage = TokenUsage { input: 7, cached: 3, output: 5, reasoning: 2 }.to_value();
        assert_eq!(usage["total_tokens"], 12);
        assert_eq!(usage["input_tokens_details"]["cached_tokens"], 3);
        assert_eq!(usage["output_tokens_details"]["reasoning_tokens"], 2);
    }
}
