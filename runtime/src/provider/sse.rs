//! An incremental Server-Sent Events decoder with WHATWG framing: LF, CRLF and CR line ends,
//! comments, `event:` names and multi-line `data:` (WIRE-SSE-FRAMING).
//!
//! It is written here rather than taken from a crate because the runtime needs it over raw
//! chunks with no async stream machinery, and it is the runtime's half of a deliberate pair:
//! the mock's encoder shares no code with it, so each checks the other.

/// One dispatched SSE event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The `event:` field, if the frame had one.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Feeds bytes in, takes complete frames out.
#[derive(Debug, Default)]
pub struct Decoder {
    line: Vec<u8>,
    /// The previous byte was a CR, so an LF right after it belongs to the same line end.
    after_cr: bool,
    /// Before the first byte: a UTF-8 BOM there is dropped.
    started: bool,
    event: Option<String>,
    data: Option<String>,
}

impl Decoder {
    /// Decodes a chunk; frames complete by the end of the chunk are returned in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Frame> {
        let mut chunk = chunk;
        if !self.started && !chunk.is_empty() {
            self.started = true;
            chunk = chunk.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(chunk);
        }
        let mut frames = Vec::new();
        for &byte in chunk {
            match byte {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(frame) = self.line_end(&line) {
                        frames.push(frame);
                    }
                }
                _ => {
                    self.after_cr = false;
                    self.line.push(byte);
                }
            }
        }
        frames
    }

    /// True when bytes of an unfinished frame are buffered (EOF now would lose them).
    pub fn has_pending(&self) -> bool {
        !self.line.is_empty() || self.data.is_some() || self.event.is_some()
    }

    fn line_end(&mut self, line: &[u8]) -> Option<Frame> {
        if line.is_empty() {
            let data = self.data.take();
            let event = self.event.take();
            return data.map(|data| Frame { event, data });
        }
        if line.starts_with(b":") {
            return None;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_bytewise(input: &[u8]) -> Vec<Frame> {
        let mut decoder = Decoder::default();
        input.iter().flat_map(|byte| decoder.push(std::slice::from_ref(byte))).collect()
    }

    fn frame(event: Option<&str>, data: &str) -> Frame {
        Frame { event: event.map(str::to_owned), data: data.to_owned() }
    }

    #[test]
    fn lf_crlf_and_cr_frame_alike_even_byte_by_byte() {
        for input in [
            &b"event: a\ndata: {}\n\ndata: x\n\n"[..],
            b"event: a\r\ndata: {}\r\n\r\ndata: x\r\n\r\n",
            b"event: a\rdata: {}\r\rdata: x\r\r",
        ] {
            assert_eq!(decode_bytewise(input), vec![frame(Some("a"), "{}"), frame(None, "x")]);
        }
    }

    #[test]
    fn comments_are_skipped_and_data_lines_join() {
        let mut decoder = Decoder::default();
        let frames = decoder.push(b"\xEF\xBB\xBF: keepalive\n\ndata: one\ndata:two\n\n");
        assert_eq!(frames, vec![frame(None, "one\ntwo")]);
    }

    #[test]
    fn an_unfinished_frame_is_pending() {
        let mut decoder = Decoder::default();
        assert!(decoder.push(b"data: {\"a\"").is_empty());
        assert!(decoder.has_pending());
    }
}
