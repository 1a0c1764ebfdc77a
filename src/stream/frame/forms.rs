//! An event's encoded forms made once and shared: for chunked streams,
//! permessage-deflate and gzip, and `compress=zstd` sockets, each made by the
//! first connection that needs it.

use super::{Frame, ZSTD_FORMS};
use crate::metrics::{global as metrics, inc};
use crate::stream::deflate::Deflated;
use crate::stream::wire::chunked;
use bytes::Bytes;

impl Frame {
    /// Its SSE message (or, `ndjson`, its NDJSON line) as one chunk of a
    /// chunked body: what a chunked stream writes, in one write.
    pub fn chunk(&self, ndjson: bool) -> &Bytes {
        let (slot, text) = match ndjson {
            false => (&self.chunks[0], &self.sse),
            true => (&self.chunks[1], &self.ndjson),
        };
        slot.get_or_init(|| {
            let (head, n) = chunked::header(text.len());
            let mut all = Vec::with_capacity(n + text.len() + 2);
            all.extend_from_slice(&head[..n]);
            all.extend_from_slice(text);
            all.extend_from_slice(chunked::CRLF);
            all.into()
        })
    }

    /// Output `form` of this event deflated (computed by the first
    /// connection that asks, from `bytes`, which must be the same for every
    /// caller of one form).
    pub fn deflated(&self, form: usize, bytes: impl FnOnce() -> Bytes) -> &Deflated {
        self.deflated[form].get_or_init(|| {
            inc(&metrics().events_compressed, 1);
            Deflated::of(&bytes())
        })
    }

    /// WebSocket form `form` (a [`Frame::deflated`] form, 2 or more) of
    /// this event compressed by `compress` (run by the first socket that
    /// needs it, then shared by all).
    pub fn zstd(&self, form: usize, compress: impl FnOnce() -> Bytes) -> &Bytes {
        let forms = self.zstd.get_or_init(Default::default);
        forms[form.saturating_sub(2).min(ZSTD_FORMS - 1)].get_or_init(|| {
            inc(&metrics().events_compressed, 1);
            compress()
        })
    }
}
