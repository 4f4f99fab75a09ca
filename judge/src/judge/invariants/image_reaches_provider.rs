//! REPLAY-CARRIES-IMAGE: a prompt's image reaches the model: a Provider request of its turn
//! carries an image (in the dialect's own form: Responses `input_image`, Chat Completions
//! `image_url`, Anthropic `image`, Gemini `inlineData`). An agent that declares
//! `promptCapabilities.image` takes image prompts; one that then drops the image answers a
//! question about a picture it never showed its model.
//!
//! Evidence: the scenario's prompt images and each request's images, read by the mock in the
//! capture's dialect, placed in turns ([`crate::judge::views::requests::request_turns`]). An image the agent resized or
//! re-encoded is still an image: the rule asks for one, not for the same bytes. A play whose
//! images were not sent (`Capture::images_withheld`) and a turn that asked nothing are not
//! judged.

use gauntlet_mock_provider::Message;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::asking_turns;

pub const INVARIANT: Invariant = Invariant {
    id: "REPLAY-CARRIES-IMAGE",
    also: &[],
    name: "image_reaches_provider",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    if evidence.capture.images_withheld || scenario.turns.iter().all(|turn| turn.images.is_empty()) {
        return Vec::new();
    }
    let mut problems = Vec::new();
    for (turn_idx, turn, requests) in asking_turns(evidence, scenario, |turn| !turn.images.is_empty()) {
        let carries_image = requests
            .iter()
            .filter_map(|&idx| evidence.conversations.get(idx))
            .any(|conversation| conversation.messages.iter().any(|message| matches!(message, Message::Image { .. })));
        if !carries_image {
            problems.push(format!(
                "turn {}: the prompt carried {} image(s), but none of the turn's {} Provider request(s) (from request {}) carries an image",
                turn_idx + 1,
                turn.images.len(),
                requests.len(),
                requests[0] + 1
            ));
        }
    }
    problems
}
