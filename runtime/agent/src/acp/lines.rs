//! One JSON-RPC message per line, with a cap: a line longer than [`MAX_LINE`] bytes is skipped
//! to its newline and reported by its length, never held whole in memory (ACP-LINE-LIMIT).

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// The longest line the agent reads, newline included: 8 MiB, far above any ACP message a
/// client sends (a prompt with a large pasted file), and the same cap the harness's client
/// puts on what an agent writes.
pub const MAX_LINE: usize = 8 * 1024 * 1024;

/// One line of input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A line of at most the limit, newline included when there was one.
    Text(Vec<u8>),
    /// A line over the limit: its length in bytes, newline included. Its bytes were dropped.
    TooLong(u64),
}

/// Reads [`Line`]s from `input`, holding at most `limit` bytes of a line at a time.
#[derive(Debug)]
pub struct Lines<R> {
    reader: BufReader<R>,
    limit: usize,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    /// Lines of at most `limit` bytes from `input`.
    pub fn new(input: R, limit: usize) -> Lines<R> {
        Lines { reader: BufReader::new(input), limit }
    }

    /// The next line; `None` at the end of input. A last line without a newline is a line.
    pub async fn next(&mut self) -> std::io::Result<Option<Line>> {
        let mut line = Vec::new();
        let mut dropped: u64 = 0;
        loop {
            let buffer = self.reader.fill_buf().await?;
            if buffer.is_empty() {
                return Ok(match (dropped, line.is_empty()) {
                    (0, true) => None,
                    (0, false) => Some(Line::Text(line)),
                    (length, _) => Some(Line::TooLong(length)),
                });
            }
            let (taken, ended) = match buffer.iter().position(|byte| *byte == b'\n') {
                Some(at) => (at + 1, true),
                None => (buffer.len(), false),
            };
            if dropped == 0 && line.len() + taken <= self.limit {
                line.extend_from_slice(&buffer[..taken]);
            } else {
                dropped = dropped.saturating_add((line.len() + taken) as u64);
                line = Vec::new();
            }
            self.reader.consume(taken);
            if ended {
                return Ok(Some(if dropped == 0 { Line::Text(line) } else { Line::TooLong(dropped) }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn all(input: &[u8], limit: usize) -> Vec<Line> {
        let mut lines = Lines::new(input, limit);
        let mut out = Vec::new();
        while let Some(line) = lines.next().await.unwrap() {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn lines_keep_their_newline_and_a_last_line_may_lack_one() {
        assert_eq!(
            all(b"a\nbc\n\nd", 10).await,
            vec![
                Line::Text(b"a\n".to_vec()),
                Line::Text(b"bc\n".to_vec()),
                Line::Text(b"\n".to_vec()),
                Line::Text(b"d".to_vec())
            ]
        );
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_its_length_and_the_next_line_reads_normally() {
        let input = [b"ok\n".as_slice(), &[b'x'; 20], b"\nafter\n", &[b'y'; 11]].concat();
        assert_eq!(
            all(&input, 10).await,
            vec![Line::Text(b"ok\n".to_vec()), Line::TooLong(21), Line::Text(b"after\n".to_vec()), Line::TooLong(11)]
        );
        // Exactly at the limit, newline included, is still a line.
        assert_eq!(all(b"123456789\n", 10).await, vec![Line::Text(b"123456789\n".to_vec())]);
        assert_eq!(all(b"1234567890\n", 10).await, vec![Line::TooLong(11)]);
    }

    #[tokio::test]
    async fn a_huge_line_is_read_in_bounded_memory() {
        // 64 MiB without a newline through an 8 KiB buffer: only the length is kept.
        let (mut writer, reader) = tokio::io::duplex(64 * 1024);
        let feed = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let chunk = vec![b'z'; 1 << 20];
            for _ in 0..64 {
                writer.write_all(&chunk).await.unwrap();
            }
            writer.write_all(b"\n{}\n").await.unwrap();
        });
        let mut lines = Lines::new(reader, MAX_LINE);
        assert_eq!(lines.next().await.unwrap(), Some(Line::TooLong((64 << 20) + 1)));
        assert_eq!(lines.next().await.unwrap(), Some(Line::Text(b"{}\n".to_vec())));
        feed.await.unwrap();
    }
}
