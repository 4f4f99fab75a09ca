//! Server-sent events as a recorded body holds them: frames split at a blank line (LF or CRLF,
//! as each Provider sends them), each with its `event:` name and its `data:` lines joined.
//! The recorder reads a whole body after the fact, so this is a splitter over bytes, not a
//! streaming decoder; the runtime's decoder is not used on purpose (the mock and the runtime
//! share no wire code, so each checks the other).

/// One event: its name (`event:`), if any, and its data (`data:` lines joined by `\n`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The `event:` field.
    pub event: Option<String>,
    /// The `data:` lines, joined.
    pub data: String,
}

/// The frames of `body`, in order, and the bytes after the last complete frame (a body cut
/// mid-frame leaves some). Comment lines (`:`) and frames without data are skipped.
pub fn frames(body: &[u8]) -> (Vec<Frame>, usize) {
    let text = String::from_utf8_lossy(body);
    let normalized = text.replace("\r\n", "\n");
    let mut frames = Vec::new();
    let mut rest = normalized.as_str();
    while let Some(end) = rest.find("\n\n") {
        let (block, after) = rest.split_at(end);
        rest = &after[2..];
        let mut event = None;
        let mut data: Option<String> = None;
        for line in block.split('\n') {
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => event = Some(value.to_owned()),
                "data" => match &mut data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => data = Some(value.to_owned()),
                },
                _ => {}
            }
        }
        if let Some(data) = data {
            frames.push(Frame { event, data });
        }
    }
    (frames, rest.trim_matches('\n').len())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn splits_lf_and_crlf_frames_and_keeps_the_torn_tail() {
        let body = b"event: a\ndata: {\"x\":1}\n\n: comment\n\ndata: one\r\ndata: two\r\n\r\ndata: tor";
        let (frames, torn) = frames(body);
        assert_eq!(
            frames,
            [
                Frame { event: Some("a".into()), data: "{\"x\":1}".into() },
                Frame { event: None, data: "one\ntwo".into() },
            ]
        );
        assert_eq!(torn, "data: tor".len());
    }
}
