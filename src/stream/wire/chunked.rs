//! HTTP/1.1 chunked framing for plain streams served on the raw socket.
//!
//! A body that ends when the connection closes is valid HTTP/1.1, but many
//! clients then read it in fixed-size blocks (Python's `requests` waits for
//! 512 bytes before `iter_lines` hands over a line), so a quiet stream's
//! events would sit in their buffers. Chunked, every write is a chunk that
//! a client hands over as it arrives, as hyper's streams (and Nchan's) are
//! written. Each chunk holds whole writes of the encoder: whole events, or
//! a part of a gzip or zstd body that its decoder takes as it comes.

/// The most bytes a chunk's header takes: 16 hex digits and CRLF.
const HEADER_MAX: usize = 18;

/// What ends a chunk's data.
pub const CRLF: &[u8] = b"\r\n";

/// The last chunk: the body is over.
pub const LAST: &[u8] = b"0\r\n\r\n";

/// A chunk header for `len` bytes of data, in a buffer and its length.
pub fn header(len: usize) -> ([u8; HEADER_MAX], usize) {
    use std::io::Write;
    let mut head = [0u8; HEADER_MAX];
    let mut at = &mut head[..];
    // 16 hex digits and CRLF always fit.
    let _ = write!(at, "{len:x}\r\n");
    let n = HEADER_MAX - at.len();
    (head, n)
}

/// Frames `out[from..]` as one chunk (nothing when it is empty: an empty
/// chunk would end the body).
pub fn frame_from(out: &mut Vec<u8>, from: usize) {
    let len = out.len() - from;
    if len == 0 {
        return;
    }
    let (head, n) = header(len);
    out.splice(from..from, head[..n].iter().copied());
    out.extend_from_slice(CRLF);
}

/// Moves the payload of every complete chunk from `raw` into `body`, for
/// a client reading such a body (`firehose tail`, the tests, the load
/// generator); a chunk cut by a read stays in `raw` until the rest comes.
pub fn dechunk(raw: &mut Vec<u8>, body: &mut Vec<u8>) {
    loop {
        let Some(nl) = raw.windows(2).position(|w| w == CRLF) else {
            return;
        };
        let size_text = String::from_utf8_lossy(&raw[..nl]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size_text, 16) else {
            raw.clear();
            return;
        };
        if raw.len() < nl + 2 + size + 2 {
            return;
        }
        body.extend_from_slice(&raw[nl + 2..nl + 2 + size]);
        raw.drain(..nl + 2 + size + 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_undone_across_reads() {
        let mut raw = b"5\r\nhello\r\n3\r\n wo".to_vec();
        let mut body = Vec::new();
        dechunk(&mut raw, &mut body);
        assert_eq!(body, b"hello");
        raw.extend_from_slice(b"\r\n1\r\nr\r\n");
        dechunk(&mut raw, &mut body);
        assert_eq!(body, b"hello wor");
        assert!(raw.is_empty());
    }

    #[test]
    fn what_frame_from_frames_dechunk_undoes() {
        let mut out = Vec::new();
        for text in ["one event\n", "", "two\n"] {
            let from = out.len();
            out.extend_from_slice(text.as_bytes());
            frame_from(&mut out, from);
        }
        out.extend_from_slice(LAST);
        let mut body = Vec::new();
        dechunk(&mut out, &mut body);
        assert_eq!(body, b"one event\ntwo\n");
    }

    #[test]
    fn headers_are_the_length_in_hex() {
        for (len, want) in [
            (0usize, "0\r\n"),
            (1, "1\r\n"),
            (15, "f\r\n"),
            (16, "10\r\n"),
            (300, "12c\r\n"),
            (usize::MAX, "ffffffffffffffff\r\n"),
        ] {
            let (head, n) = header(len);
            assert_eq!(std::str::from_utf8(&head[..n]).unwrap(), want);
        }
    }

    #[test]
    fn a_frame_wraps_what_follows_its_start_and_an_empty_one_is_nothing() {
        let mut out = b"raw".to_vec();
        out.extend_from_slice(b"hello world");
        frame_from(&mut out, 3);
        assert_eq!(out, b"rawb\r\nhello world\r\n");
        let end = out.len();
        frame_from(&mut out, end);
        assert_eq!(out, b"rawb\r\nhello world\r\n");
    }
}
