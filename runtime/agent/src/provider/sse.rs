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
    /// Past the start of the stream, where a UTF-8 BOM is dropped.
    started: bool,
    /// The first bytes while they may still be a BOM split across chunks (at most 2).
    head: Vec<u8>,
    event: Option<String>,
    data: Option<String>,
}

impl Decoder {
    /// Decodes a chunk; frames complete by the end of the chunk are returned in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Frame> {
        let mut frames = Vec::new();
        if self.started {
            self.feed(chunk, &mut frames);
            return frames;
        }
        // A BOM is dropped however the chunks split it: hold the first bytes until they
        // either make one or cannot (found by fuzzing: a BOM split 1 + 2 lost the first
        // frame's `event:` name).
        const BOM: &[u8] = b"\xEF\xBB\xBF";
        let take = (BOM.len() - self.head.len()).min(chunk.len());
        self.head.extend_from_slice(&chunk[..take]);
        let rest = &chunk[take..];
        if self.head.len() < BOM.len() && BOM.starts_with(&self.head) {
            return frames;
        }
        self.started = true;
        let head = std::mem::take(&mut self.head);
        if head != BOM {
            self.feed(&head, &mut frames);
        }
        self.feed(rest, &mut frames);
        frames
    }

    fn feed(&mut self, chunk: &[u8], frames: &mut Vec<Frame>) {
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
    }

    /// True when bytes of an unfinished frame are buffered (EOF now would lose them).
    pub fn has_pending(&self) -> bool {
        !self.head.is_empty() || !self.line.is_empty() || self.data.is_some() || self.event.is_some()
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
    fn a_bom_split_across_chunks_is_still_dropped() {
        let input = b"\xEF\xBB\xBFevent: a\ndata: x\n\n";
        for first in 0..=4 {
            let mut decoder = Decoder::default();
            let mut frames = decoder.push(&input[..first]);
            frames.extend(decoder.push(&input[first..]));
            assert_eq!(frames, [frame(Some("a"), "x")], "split after {first} bytes");
        }
        assert_eq!(decode_bytewise(input), [frame(Some("a"), "x")]);
        // Bytes that only start like a BOM are data.
        assert_eq!(decode_bytewise(b"\xEFdata: y\n\n"), []);
        assert_eq!(decode_bytewise(b"data: \xEF\n\n"), [frame(None, "\u{FFFD}")]);
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
