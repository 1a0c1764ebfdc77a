//! A segment: one file of blocks, appended by the archiver and read by
//! everyone (positioned reads of a shared file handle; a segment being
//! dropped by retention stays readable to whoever holds its handle).
//!
//! A segment is named after its first event (`<ms>-<seq>-<n>.seg`, zero
//! padded so that names sort as ids do). Opening one reads every block
//! header, not the bodies. A header that is damaged is skipped by searching
//! for the next one that checks out; a torn tail (the process was killed
//! mid-write) is cut off so that appends go on from the last whole block.

use super::block::{Header, HEADER_LEN};
use crate::store::events::EventId;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A block's place in its segment.
#[derive(Debug, Clone, Copy)]
pub struct BlockMeta {
    /// Where its header begins.
    pub offset: u64,
    pub header: Header,
}

/// One segment file and the blocks it holds.
#[derive(Debug)]
pub struct Segment {
    pub path: PathBuf,
    pub file: Arc<File>,
    pub blocks: Vec<BlockMeta>,
    /// Bytes of the file (its whole blocks).
    pub bytes: u64,
}

/// What opening a segment found wrong, if anything.
#[derive(Debug, Default)]
pub struct Damage {
    /// Bytes skipped between whole blocks (damaged headers or bodies).
    pub skipped: u64,
    /// Bytes of a torn last block, cut off.
    pub torn: u64,
}

/// The file name of a segment whose first event is `first`.
pub fn name_for(first: EventId) -> String {
    format!("{:020}-{:020}-{:010}.seg", first.0, first.1, first.2)
}

/// Whether `name` is a segment's file name.
pub fn is_segment(name: &str) -> bool {
    name.ends_with(".seg")
}

impl Segment {
    /// Creates an empty segment for blocks beginning at `first`.
    pub fn create(dir: &Path, first: EventId) -> std::io::Result<Segment> {
        let path = dir.join(name_for(first));
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        Ok(Segment {
            path,
            file: Arc::new(file),
            blocks: Vec::new(),
            bytes: 0,
        })
    }

    /// Opens a segment and indexes its blocks. With `repair`, a torn tail
    /// is cut off (the last segment, which appends will continue).
    pub fn open(path: &Path, repair: bool) -> std::io::Result<(Segment, Damage)> {
        let file = OpenOptions::new().read(true).append(true).open(path)?;
        let len = file.metadata()?.len();
        let mut blocks = Vec::new();
        let mut damage = Damage::default();
        let mut offset = 0u64;
        let mut head = [0u8; HEADER_LEN];
        while offset < len {
            let fits = |h: &Header, at: u64| at + h.block_len() <= len;
            let good = len - offset >= HEADER_LEN as u64
                && file.read_exact_at(&mut head, offset).is_ok()
                && Header::decode(&head).is_some_and(|h| fits(&h, offset));
            if good {
                if let Some(header) = Header::decode(&head) {
                    blocks.push(BlockMeta { offset, header });
                    offset += header.block_len();
                    continue;
                }
            }
            match next_header(&file, offset + 1, len)? {
                Some(next) => {
                    damage.skipped += next - offset;
                    offset = next;
                }
                None => {
                    damage.torn = len - offset;
                    break;
                }
            }
        }
        if damage.torn > 0 && repair {
            file.set_len(offset)?;
        }
        Ok((
            Segment {
                path: path.to_path_buf(),
                file: Arc::new(file),
                blocks,
                bytes: offset,
            },
            damage,
        ))
    }

    /// Appends a block; on a failed or short write the file is cut back
    /// to its last whole block, so that what follows stays readable.
    pub fn append(&mut self, header: Header, bytes: &[u8]) -> std::io::Result<()> {
        let wrote = (&*self.file).write_all(bytes);
        if let Err(e) = wrote {
            let _ = self.file.set_len(self.bytes);
            return Err(e);
        }
        self.blocks.push(BlockMeta {
            offset: self.bytes,
            header,
        });
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    /// The first event it holds.
    pub fn first(&self) -> Option<EventId> {
        self.blocks.first().map(|b| b.header.first)
    }

    /// The last event it holds.
    pub fn last(&self) -> Option<EventId> {
        self.blocks.last().map(|b| b.header.last)
    }

    /// Events it holds.
    pub fn events(&self) -> u64 {
        self.blocks.iter().map(|b| u64::from(b.header.count)).sum()
    }
}

/// Reads a block's body (summary and payload).
pub fn read_body(file: &File, block: &BlockMeta) -> std::io::Result<Vec<u8>> {
    let mut body = vec![0u8; block.header.body_len() as usize];
    file.read_exact_at(&mut body, block.offset + HEADER_LEN as u64)?;
    Ok(body)
}

/// Reads a block's summary.
pub fn read_summary(file: &File, block: &BlockMeta) -> std::io::Result<Vec<u8>> {
    let mut summary = vec![0u8; block.header.summary_len as usize];
    file.read_exact_at(&mut summary, block.offset + HEADER_LEN as u64)?;
    Ok(summary)
}

/// The offset of the next whole block at or after `from`, if any: a
/// damaged stretch is passed over by looking for a header that checks out
/// and whose block fits in the file.
fn next_header(file: &File, from: u64, len: u64) -> std::io::Result<Option<u64>> {
    if from >= len {
        return Ok(None);
    }
    let mut rest = vec![0u8; (len - from) as usize];
    file.read_exact_at(&mut rest, from)?;
    let mut at = 0usize;
    while at + HEADER_LEN <= rest.len() {
        if Header::starts(&rest[at..]) {
            if let Some(h) = Header::decode(&rest[at..]) {
                if from + at as u64 + h.block_len() <= len {
                    return Ok(Some(from + at as u64));
                }
            }
        }
        at += 1;
    }
    Ok(None)
}

/// What a history directory holds now, without opening it (for `firehose
/// check`): its segments and their bytes.
pub fn on_disk(dir: &Path) -> std::io::Result<(usize, u64)> {
    let names = names(dir)?;
    let mut bytes = 0;
    for name in &names {
        bytes += std::fs::metadata(dir.join(name))?.len();
    }
    Ok((names.len(), bytes))
}

/// The segment files of `dir`, oldest first.
pub(super) fn names(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| is_segment(n))
        .collect();
    names.sort();
    Ok(names)
}
