//! One block of the history on disk: a fixed header, a summary a search
//! can skip the block by without reading the rest, and the block's events
//! compressed with zstd as one frame.
//!
//! ```text
//! header (92 bytes, little-endian)
//!   magic "FHB1" · flags · prev · first · last (event ids, 20 bytes each)
//!   count · raw_len · comp_len · summary_len · body_crc · header_crc
//! summary (summary_len bytes)
//! payload (comp_len bytes): zstd of, per event, ms u64 · seq u64 · n u32 ·
//!   len u32 · the event's JSON as published (id included)
//! ```
//!
//! `prev` is the id of the event the archive held just before this block's
//! first (`0-0`: none ever existed before it); a reader whose position is
//! older than `prev` knows that events between them are not held. The
//! `GAP_BEFORE` flag says the same when `prev` itself is unknown (the
//! buffer had moved on before the archiver could read it). Both CRCs are
//! CRC-32: the header's over its first 88 bytes, the body's over summary
//! and payload, so that a torn or damaged block is found, never served.

use crate::store::events::EventId;

/// The first four bytes of every block.
const MAGIC: [u8; 4] = *b"FHB1";
/// Bytes in a header.
pub const HEADER_LEN: usize = 92;
/// Flag: events just before this block were not held (see the module doc).
pub const GAP_BEFORE: u32 = 1;
/// zstd's level for blocks: the archiver writes a few blocks a second, and
/// level 3 is within a few per cent of the higher levels on event JSON.
const LEVEL: i32 = 3;

/// A stretch of events the history does not hold: those after `after` and
/// before `before`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    pub after: EventId,
    pub before: EventId,
}

/// A block's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub flags: u32,
    pub prev: EventId,
    pub first: EventId,
    pub last: EventId,
    pub count: u32,
    pub raw_len: u32,
    pub comp_len: u32,
    pub summary_len: u32,
    pub body_crc: u32,
}

fn put_id(out: &mut Vec<u8>, id: EventId) {
    out.extend_from_slice(&id.0.to_le_bytes());
    out.extend_from_slice(&id.1.to_le_bytes());
    out.extend_from_slice(&id.2.to_le_bytes());
}

/// Reads little-endian fields off the front of a slice.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*head)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_le_bytes)
    }
    fn id(&mut self) -> Option<EventId> {
        Some(EventId(self.u64()?, self.u64()?, self.u32()?))
    }
}

impl Header {
    /// Whether events just before the block are missing for certain.
    pub fn gap_before(&self) -> bool {
        self.flags & GAP_BEFORE != 0
    }

    /// Bytes after the header: summary and payload.
    pub fn body_len(&self) -> u64 {
        u64::from(self.summary_len) + u64::from(self.comp_len)
    }

    /// The whole block's length on disk.
    pub fn block_len(&self) -> u64 {
        HEADER_LEN as u64 + self.body_len()
    }

    /// The header's bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut out = Vec::with_capacity(HEADER_LEN);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.flags.to_le_bytes());
        put_id(&mut out, self.prev);
        put_id(&mut out, self.first);
        put_id(&mut out, self.last);
        for n in [
            self.count,
            self.raw_len,
            self.comp_len,
            self.summary_len,
            self.body_crc,
        ] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        let mut bytes = [0u8; HEADER_LEN];
        bytes.copy_from_slice(&out);
        bytes
    }

    /// A header read back; `None` unless its magic and CRC are right.
    pub fn decode(bytes: &[u8]) -> Option<Header> {
        let bytes = bytes.get(..HEADER_LEN)?;
        if bytes[..4] != MAGIC {
            return None;
        }
        let (covered, crc) = bytes.split_at(HEADER_LEN - 4);
        if crc32fast::hash(covered).to_le_bytes() != crc {
            return None;
        }
        let mut r = Reader(&covered[4..]);
        Some(Header {
            flags: r.u32()?,
            prev: r.id()?,
            first: r.id()?,
            last: r.id()?,
            count: r.u32()?,
            raw_len: r.u32()?,
            comp_len: r.u32()?,
            summary_len: r.u32()?,
            body_crc: r.u32()?,
        })
    }

    /// Whether `magic` could begin a header (for finding the next block
    /// after a damaged one).
    pub fn starts(bytes: &[u8]) -> bool {
        bytes.starts_with(&MAGIC)
    }
}

/// Events in a block at most.
pub const MAX_EVENTS: usize = 1024;
/// Raw bytes of events in a block at most.
pub const MAX_BYTES: usize = 1 << 20;

/// How many of `events` (from the first) the next block takes: at most
/// [`MAX_EVENTS`] and [`MAX_BYTES`], at least one (if there is one).
pub fn next_len(events: &[(EventId, String)]) -> usize {
    let mut bytes = 0;
    events
        .iter()
        .take(MAX_EVENTS)
        .take_while(|(_, json)| {
            bytes += json.len();
            bytes <= MAX_BYTES
        })
        .count()
        .max(1)
        .min(events.len())
}

/// A block ready to append: its header and its bytes (header included).
pub struct Built {
    pub header: Header,
    pub bytes: Vec<u8>,
}

/// Builds the block of `events` (in id order, at least one), held after
/// `prev`, with its search `summary`.
pub fn build(
    prev: EventId,
    gap_before: bool,
    events: &[(EventId, String)],
    summary: &[u8],
) -> std::io::Result<Built> {
    let (Some((first, _)), Some((last, _))) = (events.first(), events.last()) else {
        return Err(std::io::Error::other("an empty block"));
    };
    let mut raw = Vec::with_capacity(events.iter().map(|(_, j)| j.len() + 24).sum());
    for (id, json) in events {
        put_id(&mut raw, *id);
        raw.extend_from_slice(&(json.len() as u32).to_le_bytes());
        raw.extend_from_slice(json.as_bytes());
    }
    let payload = zstd::bulk::compress(&raw, LEVEL)?;
    let mut crc = crc32fast::Hasher::new();
    crc.update(summary);
    crc.update(&payload);
    let header = Header {
        flags: if gap_before { GAP_BEFORE } else { 0 },
        prev,
        first: *first,
        last: *last,
        count: events.len() as u32,
        raw_len: raw.len() as u32,
        comp_len: payload.len() as u32,
        summary_len: summary.len() as u32,
        body_crc: crc.finalize(),
    };
    let mut bytes = Vec::with_capacity(HEADER_LEN + summary.len() + payload.len());
    bytes.extend_from_slice(&header.encode());
    bytes.extend_from_slice(summary);
    bytes.extend_from_slice(&payload);
    Ok(Built { header, bytes })
}

/// Each event of a block whose body (summary and payload) is `body`, in
/// order, handed to `each` without a copy of its own; `None` when the body
/// is damaged (its CRC, its compression or its records are wrong: then
/// some events may have been handed over already, and the caller drops
/// what it made of them).
pub fn visit(header: &Header, body: &[u8], mut each: impl FnMut(EventId, &str)) -> Option<()> {
    if body.len() as u64 != header.body_len() || crc32fast::hash(body) != header.body_crc {
        return None;
    }
    let payload = &body[header.summary_len as usize..];
    let count = unpacked(payload, header.raw_len as usize, |raw| {
        let mut r = Reader(raw);
        let mut count = 0u64;
        while !r.0.is_empty() {
            let id = r.id()?;
            let len = r.u32()? as usize;
            let json = r.0.get(..len)?;
            r.0 = &r.0[len..];
            each(id, std::str::from_utf8(json).ok()?);
            count += 1;
        }
        Some(count)
    })??;
    (count == u64::from(header.count)).then_some(())
}

/// A thread's decompressor and the buffer it decompresses into, kept from
/// block to block: a fresh context and a fresh buffer of a few hundred KiB
/// per block cost a scan a tenth of its time in page faults (the allocator
/// returns freed pages at once, `MIMALLOC_PURGE_DELAY=0`).
struct Unpacker {
    zstd: zstd::bulk::Decompressor<'static>,
    raw: Vec<u8>,
}

/// A buffer larger than this is given back after use (a block of unusually
/// large events), so that a thread keeps at most this much between blocks.
const KEPT_RAW: usize = 4 << 20;

thread_local! {
    static UNPACKER: std::cell::RefCell<Option<Unpacker>> = const { std::cell::RefCell::new(None) };
}

/// `read` applied to `payload` decompressed (`raw_len` bytes at most), with
/// this thread's [`Unpacker`]; `None` when it does not decompress.
fn unpacked<R>(payload: &[u8], raw_len: usize, read: impl FnOnce(&[u8]) -> R) -> Option<R> {
    UNPACKER.with(|cell| {
        let mut held = cell.borrow_mut();
        if held.is_none() {
            *held = Some(Unpacker {
                zstd: zstd::bulk::Decompressor::new().ok()?,
                raw: Vec::new(),
            });
        }
        let u = held.as_mut()?;
        u.raw.clear();
        u.raw.reserve(raw_len);
        let n = u.zstd.decompress_to_buffer(payload, &mut u.raw).ok()?;
        let answer = read(&u.raw[..n.min(u.raw.len())]);
        if u.raw.capacity() > KEPT_RAW {
            u.raw = Vec::new();
        }
        Some(answer)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(header: &Header, body: &[u8]) -> Option<Vec<(EventId, String)>> {
        let mut out = Vec::new();
        visit(header, body, |id, json| out.push((id, json.to_owned())))?;
        Some(out)
    }

    fn sample() -> Vec<(EventId, String)> {
        (0..50)
            .map(|i| {
                let id = EventId(1_700_000_000_000 + i, 0, (i % 3) as u32);
                (
                    id,
                    format!("{{\"id\":\"{id}\",\"type\":\"status\",\"n\":{i}}}"),
                )
            })
            .collect()
    }

    #[test]
    fn a_block_reads_back_what_was_written() {
        let written = sample();
        let built = build(EventId(5, 0, 0), false, &written, b"summary").unwrap();
        let header = Header::decode(&built.bytes).unwrap();
        assert_eq!(header, built.header);
        assert_eq!(header.block_len(), built.bytes.len() as u64);
        assert_eq!(
            events(&header, &built.bytes[HEADER_LEN..]).unwrap(),
            sample()
        );
        assert!(!header.gap_before());
    }

    #[test]
    fn any_damage_is_found() {
        let built = build(EventId::ZERO, true, &sample(), b"").unwrap();
        assert!(built.header.gap_before());
        for at in [0, 7, HEADER_LEN - 1] {
            let mut bad = built.bytes.clone();
            bad[at] ^= 0x40;
            assert_eq!(Header::decode(&bad), None, "header byte {at}");
        }
        for at in [HEADER_LEN, built.bytes.len() / 2, built.bytes.len() - 1] {
            let mut bad = built.bytes.clone();
            bad[at] ^= 0x01;
            assert!(
                events(&built.header, &bad[HEADER_LEN..]).is_none(),
                "body byte {at}"
            );
        }
        let torn = &built.bytes[HEADER_LEN..built.bytes.len() - 3];
        assert!(events(&built.header, torn).is_none());
    }
}
