//! A plain stream (SSE, NDJSON) whose client sends `Accept-Encoding: zstd`:
//! one zstd frame per connection, flushed after every write, so each event
//! decodes as it arrives. No dictionary (HTTP's zstd coding has none), a
//! 16 KiB window.

use std::sync::atomic::{AtomicUsize, Ordering};
use zstd::zstd_safe::{self, CCtx, CParameter, InBuffer, OutBuffer};

/// A plain body's compression level, window (2^14 bytes) and tables.
const BODY_LEVEL: i32 = 1;
const BODY_WINDOW_LOG: u32 = 14;
const BODY_HASH_LOG: u32 = 12;

/// One plain body's zstd frame: each write's output compressed and
/// flushed, so the client decodes every event as it arrives. Each holds
/// about 150 KiB (its window and tables); [`ZstdBody::open`] keeps their
/// number under a bound.
pub(crate) struct ZstdBody {
    cctx: CCtx<'static>,
}

/// Plain zstd bodies alive in this process.
static LIVE: AtomicUsize = AtomicUsize::new(0);

impl Drop for ZstdBody {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for ZstdBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ZstdBody")
    }
}

impl ZstdBody {
    /// A new body, unless `max` are alive already.
    pub(crate) fn open(max: usize) -> Option<ZstdBody> {
        LIVE.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
            (n < max).then_some(n + 1)
        })
        .ok()?;
        Some(ZstdBody::made())
    }

    fn made() -> Self {
        let mut cctx = CCtx::create();
        // Setting parameters on a fresh context does not fail.
        let _ = cctx.set_parameter(CParameter::CompressionLevel(BODY_LEVEL));
        let _ = cctx.set_parameter(CParameter::WindowLog(BODY_WINDOW_LOG));
        let _ = cctx.set_parameter(CParameter::HashLog(BODY_HASH_LOG));
        let _ = cctx.set_parameter(CParameter::ChainLog(BODY_HASH_LOG));
        ZstdBody { cctx }
    }

    /// Appends `data` compressed and flushed.
    pub(crate) fn push(&mut self, data: &[u8], out: &mut Vec<u8>) {
        self.step(
            data,
            zstd_safe::zstd_sys::ZSTD_EndDirective::ZSTD_e_flush,
            out,
        );
    }

    /// Appends the end of the frame.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        self.step(&[], zstd_safe::zstd_sys::ZSTD_EndDirective::ZSTD_e_end, out);
    }

    fn step(
        &mut self,
        data: &[u8],
        how: zstd_safe::zstd_sys::ZSTD_EndDirective,
        out: &mut Vec<u8>,
    ) {
        let mut input = InBuffer::around(data);
        loop {
            out.reserve(zstd_safe::compress_bound(data.len() - input.pos()).max(64) + 32);
            let at = out.len();
            let mut output = OutBuffer::around_pos(out, at);
            // Writing into spare capacity: `out`'s length follows.
            match self.cctx.compress_stream2(&mut output, &mut input, how) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(_) => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_json(i: u32) -> String {
        format!(
            r#"{{"id":"1700000000{i:03}-0","type":"status","at":1700000000.5,"status":{{"id":"{}","uid":"{}","login":"someone","message":"words number {i}","posted":1.0,"hashtags":[],"mentions":[]}}}}"#,
            7_000_000_000u64 + u64::from(i),
            100 + i,
        )
    }

    #[test]
    fn a_plain_body_decodes_after_every_flush_and_at_its_end() {
        let mut body = ZstdBody::open(usize::MAX).unwrap();
        let mut out = Vec::new();
        let texts: Vec<String> = (0..20)
            .map(|i| format!("data: {}\n\n", status_json(i)))
            .collect();
        let mut decoder = zstd::stream::raw::Decoder::new().unwrap();
        let mut decoded = Vec::new();
        for t in &texts {
            let start = out.len();
            body.push(t.as_bytes(), &mut out);
            // Everything written so far decodes to everything pushed.
            let mut buf = vec![0u8; 1 << 16];
            use zstd::stream::raw::Operation;
            let mut input = zstd::stream::raw::InBuffer::around(&out[start..]);
            let mut output = zstd::stream::raw::OutBuffer::around(&mut buf[..]);
            decoder.run(&mut input, &mut output).unwrap();
            let n = output.pos();
            decoded.extend_from_slice(&buf[..n]);
            assert_eq!(
                decoded,
                texts[..decoded_count(&texts, &decoded)].concat().as_bytes()
            );
        }
        body.finish(&mut out);
        assert_eq!(
            zstd::stream::decode_all(&out[..]).unwrap(),
            texts.concat().as_bytes()
        );
    }

    fn decoded_count(texts: &[String], decoded: &[u8]) -> usize {
        let mut len = 0;
        for (i, t) in texts.iter().enumerate() {
            len += t.len();
            if len == decoded.len() {
                return i + 1;
            }
        }
        panic!(
            "decoded {} bytes: not a whole number of pushes",
            decoded.len()
        );
    }
}
