//! A stream's body as it arrives: its chunked framing undone, its zstd
//! coding (`--compress zstd`) decoded, and the text that results.

use crate::stream::wire::chunked::dechunk;
use anyhow::Context;
use zstd::stream::raw::{Decoder, InBuffer, Operation, OutBuffer};

/// What has arrived of one response's body.
pub(super) struct Body {
    chunked: bool,
    /// Bytes read but not yet unframed (a chunk cut by a read).
    raw: Vec<u8>,
    /// Unframed bytes waiting for the decoder.
    coded: Vec<u8>,
    zstd: Option<Decoder<'static>>,
    /// Decoded text not yet taken as lines.
    text: Vec<u8>,
}

impl Body {
    /// A body whose first bytes (read with the head) are `first`.
    pub(super) fn new(chunked: bool, zstd: bool, first: Vec<u8>) -> anyhow::Result<Self> {
        let zstd = if zstd {
            Some(Decoder::new().context("a zstd decoder")?)
        } else {
            None
        };
        let mut body = Self {
            chunked,
            raw: Vec::new(),
            coded: Vec::new(),
            zstd,
            text: Vec::new(),
        };
        body.push(&first)?;
        Ok(body)
    }

    /// Takes in bytes read from the socket.
    pub(super) fn push(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.raw.extend_from_slice(bytes);
        if self.chunked {
            dechunk(&mut self.raw, &mut self.coded);
        } else {
            self.coded.append(&mut self.raw);
        }
        let Some(decoder) = &mut self.zstd else {
            self.text.append(&mut self.coded);
            return Ok(());
        };
        let mut input = InBuffer::around(&self.coded);
        let mut buf = [0u8; 16 * 1024];
        loop {
            let mut out = OutBuffer::around(&mut buf[..]);
            decoder
                .run(&mut input, &mut out)
                .context("the zstd stream does not decode")?;
            let n = out.pos();
            self.text.extend_from_slice(&buf[..n]);
            // Done when the input is used up and the decoder had no more
            // to give than the room it was offered.
            if input.pos() == self.coded.len() && n < buf.len() {
                break;
            }
        }
        self.coded.clear();
        Ok(())
    }

    /// The next whole line of text, without its line end.
    pub(super) fn line(&mut self) -> Option<String> {
        let nl = self.text.iter().position(|b| *b == b'\n')?;
        let line: Vec<u8> = self.text.drain(..=nl).collect();
        let line = String::from_utf8_lossy(&line);
        Some(line.trim_end_matches(['\n', '\r']).to_string())
    }

    /// All the decoded text not yet taken.
    pub(super) fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zstd_body_gives_its_lines_as_their_chunks_arrive() {
        let lines: Vec<String> = (0..200)
            .map(|i| format!("data: {{\"n\":{i},\"pad\":\"{}\"}}\n", "x".repeat(i % 50)))
            .collect();
        let coded = zstd::stream::encode_all(lines.concat().as_bytes(), 3).unwrap();
        // Chunked, in uneven pieces cut anywhere.
        let mut wire = Vec::new();
        for piece in coded.chunks(37) {
            wire.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
            wire.extend_from_slice(piece);
            wire.extend_from_slice(b"\r\n");
        }
        let mut body = Body::new(true, true, Vec::new()).unwrap();
        let mut got = Vec::new();
        for read in wire.chunks(101) {
            body.push(read).unwrap();
            while let Some(l) = body.line() {
                got.push(format!("{l}\n"));
            }
        }
        assert_eq!(got, lines);
    }
}
