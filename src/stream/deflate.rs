//! Compressed streams: each output deflated on its own (a fresh window, so
//! no back-reference reaches into another output) and ended with a sync
//! flush. Such pieces can be laid end to end in any order, so one event is
//! compressed once and the same bytes go to every compressed connection it
//! matches: inside a gzip body (SSE, NDJSON with `Accept-Encoding: gzip`)
//! or, without the flush's last four octets, as a permessage-deflate
//! WebSocket message negotiated with `server_no_context_takeover`
//! (RFC 7692 §7.2.1).

use bytes::Bytes;
use flate2::{Compress, Compression, FlushCompress, Status};
use std::cell::RefCell;

/// The last four octets of a sync flush, which permessage-deflate leaves
/// out of every message (RFC 7692 §7.2.1).
pub(crate) const SYNC_TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// The zlib level: the default's ratio, at a cost paid once per event.
const LEVEL: u32 = 6;

/// An output deflated on its own, sync-flushed, with what a gzip trailer
/// needs of the uncompressed bytes.
#[derive(Debug, Clone)]
pub struct Deflated {
    /// Raw deflate blocks ending with [`SYNC_TAIL`].
    pub bytes: Bytes,
    /// CRC-32 of the uncompressed bytes.
    crc: u32,
    /// Their length.
    len: u64,
}

thread_local! {
    /// One compressor per worker thread, reset for each output: its tables
    /// are allocated once, not per event.
    static COMPRESSOR: RefCell<Compress> = RefCell::new(Compress::new(Compression::new(LEVEL), false));
}

impl Deflated {
    /// Deflates `data` on its own.
    pub fn of(data: &[u8]) -> Deflated {
        let mut out = Vec::with_capacity(data.len() / 2 + 64);
        COMPRESSOR.with(|c| {
            let mut c = c.borrow_mut();
            c.reset();
            let start = c.total_in();
            loop {
                let read = (c.total_in() - start) as usize;
                if out.len() == out.capacity() {
                    out.reserve(out.capacity().max(64));
                }
                // Sync-flushing, the compressor is done once all the input
                // is taken and output space remains after it.
                match c.compress_vec(&data[read..], &mut out, FlushCompress::Sync) {
                    Ok(Status::Ok | Status::BufError | Status::StreamEnd) => {}
                    // Compressing memory to memory does not fail; start over
                    // stored (uncompressed) would need a second code path
                    // for an impossible case, so stop with what is there.
                    Err(_) => break,
                }
                let done = (c.total_in() - start) as usize == data.len();
                if done && out.len() < out.capacity() && out.ends_with(&SYNC_TAIL) {
                    break;
                }
            }
        });
        Deflated {
            bytes: Bytes::from(out),
            crc: crc32fast::hash(data),
            len: data.len() as u64,
        }
    }

    /// The permessage-deflate payload: the bytes without [`SYNC_TAIL`].
    pub fn message(&self) -> &[u8] {
        let n = self.bytes.len().saturating_sub(SYNC_TAIL.len());
        &self.bytes[..n]
    }
}

/// One connection's gzip body: the header, then shared [`Deflated`]
/// pieces, then (when the stream ends for good) the final block and the
/// trailer, whose CRC is combined from the pieces' own.
#[derive(Debug, Default)]
pub(crate) struct Gzip {
    crc: crc32fast::Hasher,
}

impl Gzip {
    /// A gzip member's header: deflate, no name, no time, unknown OS.
    pub(crate) const HEADER: [u8; 10] = [0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0xff];

    /// Appends a piece.
    pub(crate) fn push(&mut self, piece: &Deflated, out: &mut Vec<u8>) {
        out.extend_from_slice(&piece.bytes);
        self.crc.combine(&crc32fast::Hasher::new_with_initial_len(
            piece.crc, piece.len,
        ));
    }

    /// Appends the end of the member: an empty final block (fixed Huffman:
    /// BFINAL, BTYPE 01, end-of-block), then CRC-32 and length.
    pub(crate) fn finish(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[0x03, 0x00]);
        let crc = self.crc.clone();
        let len = crc.total_len() as u32;
        out.extend_from_slice(&crc.finalize().to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
    }
}

/// Whether an `Accept-Encoding` header value takes gzip: named (or `*`)
/// with a nonzero quality; an explicit `gzip;q=0` refuses it.
#[cfg(test)]
fn accepts_gzip<'a>(values: impl Iterator<Item = &'a str>) -> bool {
    quality(values, &["gzip", "x-gzip"]) > 0.0
}

/// The quality `Accept-Encoding` gives a coding named by any of `names`:
/// its own, else `*`'s, else 0.
pub(crate) fn quality<'a>(values: impl Iterator<Item = &'a str>, names: &[&str]) -> f32 {
    let mut star = None;
    for item in values.flat_map(|v| v.split(',')) {
        let mut parts = item.split(';').map(str::trim);
        let coding = parts.next().unwrap_or("");
        let q = parts
            .find_map(|p| p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")))
            .map_or(Some(1.0), |q| q.trim().parse::<f32>().ok())
            .unwrap_or(0.0);
        if names.iter().any(|n| coding.eq_ignore_ascii_case(n)) {
            return q;
        }
        if coding == "*" {
            star = Some(q);
        }
    }
    star.unwrap_or(0.0)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Read;

    /// Inflates sync-flushed pieces, ended with an empty final block.
    pub(crate) fn inflate_raw(data: &[u8]) -> Vec<u8> {
        let mut data = data.to_vec();
        data.extend_from_slice(&[0x03, 0x00]);
        let mut out = Vec::new();
        flate2::read::DeflateDecoder::new(&data[..])
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn pieces_laid_end_to_end_are_one_gzip_body() {
        let texts: Vec<String> = (0..50)
            .map(|i| format!("data: {{\"n\":{i},\"text\":\"{}\"}}\n\n", "word ".repeat(i)))
            .collect();
        let pieces: Vec<Deflated> = texts.iter().map(|t| Deflated::of(t.as_bytes())).collect();
        let mut gz = Gzip::default();
        let mut body = Gzip::HEADER.to_vec();
        // The same piece twice, as two connections' bodies would share it.
        for p in pieces.iter().chain(pieces.iter().take(3)) {
            gz.push(p, &mut body);
        }
        gz.finish(&mut body);
        let mut out = String::new();
        flate2::read::GzDecoder::new(&body[..])
            .read_to_string(&mut out)
            .expect("a valid gzip member, trailer included");
        let want: String = texts.iter().chain(texts.iter().take(3)).cloned().collect();
        assert_eq!(out, want);
    }

    #[test]
    fn a_piece_is_a_permessage_deflate_message_without_the_tail() {
        let text = "{\"type\":\"status\",\"message\":\"hello hello hello\"}".repeat(40);
        let d = Deflated::of(text.as_bytes());
        assert!(d.bytes.ends_with(&SYNC_TAIL));
        assert!(
            d.message().len() < text.len() / 4,
            "repetitive text shrinks"
        );
        let mut framed = d.message().to_vec();
        framed.extend_from_slice(&SYNC_TAIL);
        // What a receiver does: append the tail, inflate.
        let mut inflater = flate2::Decompress::new(false);
        let mut out = Vec::with_capacity(text.len() + 16);
        inflater
            .decompress_vec(&framed, &mut out, flate2::FlushDecompress::Sync)
            .unwrap();
        assert_eq!(out, text.as_bytes());
        assert_eq!(inflate_raw(&d.bytes), text.as_bytes());
    }

    #[test]
    fn large_and_empty_outputs_deflate_whole() {
        let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7919 % 251) as u8).collect();
        assert_eq!(inflate_raw(&Deflated::of(&big).bytes), big);
        assert_eq!(inflate_raw(&Deflated::of(b"").bytes), b"");
    }

    #[test]
    fn accept_encoding_is_read_with_its_qualities() {
        let takes = |v: &str| accepts_gzip(std::iter::once(v));
        assert!(takes("gzip"));
        assert!(takes("deflate, gzip;q=0.5, br"));
        assert!(takes("*"));
        assert!(takes("GZIP"));
        assert!(!takes("gzip;q=0"));
        assert!(!takes("*;q=0"));
        assert!(!takes("br, deflate"));
        assert!(!takes("identity"));
        assert!(!takes("*, gzip;q=0"));
        assert!(accepts_gzip(["br", "gzip"].into_iter()));
    }
}
