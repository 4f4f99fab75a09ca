//! Server-sent events as a recorded body holds them: frames split at a blank line (LF or CRLF,
//! as each Provider sends them), each with its `event:` name, its `data:` lines joined and
//! where it ends in the body, which says when it arrived.
//! The recorder reads a whole body after the fact, so this is a splitter over bytes, not a
//! streaming decoder; the runtime's decoder is not used on purpose (the mock and the runtime
//! share no wire code, so each checks the other).

/// One event: its name (`event:`), if any, its data (`data:` lines joined by `\n`), and where
/// it ends in the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The `event:` field.
    pub event: Option<String>,
    /// The `data:` lines, joined.
    pub data: String,
    /// The body's length up to the end of the blank line that ends it: a client has the frame
    /// once this many bytes arrived (its arrival time, `record/timing.rs`).
    pub end: usize,
}

/// The frames of `body`, in order, and the bytes after the last complete frame (a body cut
/// mid-frame leaves some). Lines end in LF or CRLF; comment lines (`:`) and frames without
/// data are skipped.
pub fn frames(body: &[u8]) -> (Vec<Frame>, usize) {
    let mut frames = Vec::new();
    let (mut event, mut data): (Option<String>, Option<String>) = (None, None);
    // Where the line being read starts, and where the frame being read does.
    let (mut start, mut frame_start) = (0, 0);
    while let Some(newline) = body[start..].iter().position(|&byte| byte == b'\n') {
        let line = &body[start..start + newline];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        start += newline + 1;
        if line.is_empty() {
            if let Some(data) = data.take() {
                frames.push(Frame { event: event.take(), data, end: start });
            }
            event = None;
            frame_start = start;
            continue;
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = line.split_once(':').unwrap_or((&line, ""));
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
    let rest = String::from_utf8_lossy(&body[frame_start..]).replace("\r\n", "\n");
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
                Frame { event: Some("a".into()), data: "{\"x\":1}".into(), end: 24 },
                Frame { event: None, data: "one\ntwo".into(), end: 59 },
            ]
        );
        assert_eq!(torn, "data: tor".len());
    }
}
