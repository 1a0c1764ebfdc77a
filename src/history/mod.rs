//! The history: every event of the last `--history` (24 h by default),
//! bounded by `--history-max-bytes`, on this process's disk.
//!
//! Each process keeps its own copy in its own directory: the archiver
//! ([`archiver`]) reads the authoritative event stream in Redis in order
//! (not pub/sub, which may drop) and appends blocks of events to segment
//! files ([`segment`], [`block`]). Readers (every resume: `Last-Event-ID`,
//! `last_event_id=`, `since=`; the history search) go through [`History`]:
//! an in-memory index of every block (its first and last ids, where it
//! lies) under a lock held only to look a block up, then a positioned
//! read of the block on the history's own threads, at a lower priority than
//! the live streams' ([`readers`]), at most [`MAX_READERS`] at once.
//!
//! Events the archiver has read and not yet written (up to a second's
//! worth) are readable too, so the history reaches as far as the archiver
//! has read. What the history could not get (the buffer moved on while
//! the process was down, a damaged block, a disk that refused a write) is
//! a gap readers are told about (see `block`'s `prev`), never served as
//! something else.
//!
//! Why segment files and not an embedded store (fjall, redb): the history
//! is append-only in id order and read in id order (resumes) or in reverse
//! (search); retention drops the oldest whole. A log of immutable files fits
//! that exactly: one `write` per block, no compaction or B-tree rewrites,
//! retention is an `unlink`, a peer's history is copied with `rsync`, and
//! every byte on disk is read by code in this repository (a block is
//! verified by its CRCs before it is served). Blocks, not events, are the
//! unit of compression (events of a few hundred bytes compress to 0.06-0.3
//! of their JSON in blocks of ~1,000 with plain zstd, better than a trained
//! dictionary does per event) and of skipping (a block's summary lets a
//! search pass over it unread).

pub(crate) mod archiver;
pub mod block;
pub(crate) mod readers;
pub(crate) mod remote;
pub(crate) mod scan;
pub(crate) mod sealer;
pub(crate) mod search;
pub mod segment;
mod shared;
pub(crate) mod tier;

use crate::store::events::EventId;
use segment::{BlockMeta, Segment};
use std::collections::VecDeque;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

pub use readers::MAX_READERS;
use segment::names as segment_names;
pub use segment::on_disk;
/// The file in the history's directory that names the store it copies.
const STORE_FILE: &str = "store-id";
/// The lock file: one process per directory.
const LOCK_FILE: &str = "lock";

pub use block::Gap;

/// What one read of the history gave: its events as `T` (by default each
/// event's id and JSON; see [`History::read_after_as`]).
#[derive(Debug)]
pub struct Page<T = (EventId, String)> {
    /// Events after the position read from, oldest first.
    pub events: Vec<T>,
    /// The position to read from next: every event up to it was served or
    /// reported as a gap.
    pub cursor: EventId,
    /// A stretch before these events that is not held.
    pub gap: Option<Gap>,
    /// The history holds nothing after the position read from.
    pub end: bool,
}

impl<T> Default for Page<T> {
    fn default() -> Page<T> {
        Page {
            events: Vec::new(),
            cursor: EventId::ZERO,
            gap: None,
            end: false,
        }
    }
}

/// What `GET /api/v1/history` tells.
#[derive(Debug, Clone, Default, serde::Serialize, utoipa::ToSchema)]
#[schema(as = HistorySummary)]
pub struct Summary {
    /// The time of the oldest event held (seconds since the epoch).
    pub oldest: Option<f64>,
    /// The oldest event held.
    pub oldest_id: Option<String>,
    /// The newest event held.
    pub newest_id: Option<String>,
    /// Events held.
    pub events: u64,
    /// Bytes on disk.
    pub bytes: u64,
}

/// The blocks and the events not yet in one.
#[derive(Debug, Default)]
struct Index {
    /// Oldest first; the last is the one appended to.
    segments: VecDeque<Segment>,
    /// Read from Redis, not yet written (in id order, after every block).
    pending: Vec<(EventId, String)>,
    /// The `prev` and gap flag the block of `pending` will have.
    pending_prev: EventId,
    pending_gap: bool,
    events: u64,
    bytes: u64,
}

impl Index {
    /// The last event held, in a block or pending.
    fn last(&self) -> Option<EventId> {
        self.pending
            .last()
            .map(|(id, _)| *id)
            .or_else(|| self.segments.iter().rev().find_map(Segment::last))
    }

    fn first_block(&self) -> Option<&BlockMeta> {
        self.segments.iter().find_map(|s| s.blocks.first())
    }
}

/// Bounds and place of a history.
#[derive(Debug, Clone)]
pub struct Settings {
    pub dir: PathBuf,
    /// Seconds an event is kept.
    pub retention_secs: u64,
    pub max_bytes: u64,
    /// The history is shared through an object store: half of `max_bytes`
    /// is for this process's own segments, half for the store's windows
    /// cached on this disk.
    pub shared: bool,
}

impl Settings {
    /// Bytes this process's own segments keep at most.
    pub(super) fn own_bytes(&self) -> u64 {
        if self.shared {
            self.max_bytes / 2
        } else {
            self.max_bytes
        }
    }

    /// Bytes of the store's windows cached on this disk at most.
    fn cache_bytes(&self) -> u64 {
        self.max_bytes / 2
    }

    /// Bytes of one segment: a sixteenth of the bound, from 64 KiB to
    /// 64 MiB, so that retention frees space in small steps.
    fn segment_bytes(&self) -> u64 {
        (self.own_bytes() / 16).clamp(64 << 10, 64 << 20)
    }

    /// Milliseconds a segment spans at most: a 24th of the retention, from
    /// a minute to an hour.
    fn segment_span_ms(&self) -> u64 {
        (self.retention_secs * 1000 / 24).clamp(60_000, 3_600_000)
    }
}

struct Inner {
    settings: Settings,
    index: RwLock<Index>,
    readers: Arc<tokio::sync::Semaphore>,
    /// The threads block reads run on.
    threads: readers::Readers,
    /// Whether the last write succeeded.
    writable: AtomicBool,
    write_errors: AtomicU64,
    /// Blocks found damaged when read.
    damaged: AtomicU64,
    /// The object store's windows, when the history is shared
    /// (`--history-store`).
    tier: Option<tier::Tier>,
    /// Held for the process's life: the directory's lock.
    _lock: File,
}

/// A process's history; cheap to clone.
#[derive(Clone)]
pub struct History(Arc<Inner>);

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History")
            .field("dir", &self.0.settings.dir)
            .finish()
    }
}

/// Why a history could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("the history directory {0} is in use by another process (give each process its own --history-dir)")]
    Locked(PathBuf),
    #[error("the history directory {dir}: {source}")]
    Io {
        dir: PathBuf,
        source: std::io::Error,
    },
}

impl History {
    /// Opens (or creates) the history in `settings.dir` for the store
    /// named `store_id`: a directory that copied another store is emptied
    /// first, since its events are not this store's. Damaged blocks are
    /// skipped and a torn last block cut off, each logged.
    pub fn open(
        settings: Settings,
        store_id: &str,
        shared: Option<(remote::Remote, crate::store::Store, u64)>,
    ) -> Result<History, OpenError> {
        let dir = settings.dir.clone();
        let io = |source| OpenError::Io {
            dir: dir.clone(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(LOCK_FILE))
            .map_err(io)?;
        if lock.try_lock().is_err() {
            return Err(OpenError::Locked(dir));
        }
        let held = std::fs::read_to_string(dir.join(STORE_FILE)).ok();
        let names = segment_names(&dir).map_err(io)?;
        if held.as_deref().map(str::trim) != Some(store_id) {
            if !names.is_empty() {
                tracing::warn!(dir = %dir.display(), segments = names.len(),
                    "the history directory held another store's events; starting it afresh");
            }
            for name in &names {
                std::fs::remove_file(dir.join(name)).map_err(io)?;
            }
            let _ = std::fs::remove_dir_all(dir.join(tier::CACHE_DIR));
            std::fs::write(dir.join(STORE_FILE), store_id).map_err(io)?;
        }
        let names = segment_names(&dir).map_err(io)?;
        let mut index = Index::default();
        for (i, name) in names.iter().enumerate() {
            let path = dir.join(name);
            let last = i + 1 == names.len();
            let (seg, damage) = Segment::open(&path, last).map_err(io)?;
            if damage.skipped > 0 || damage.torn > 0 {
                tracing::warn!(segment = %path.display(), skipped = damage.skipped, torn = damage.torn,
                    "damaged history blocks passed over");
            }
            if seg.blocks.is_empty() && !last {
                let _ = std::fs::remove_file(&path);
                continue;
            }
            index.events += seg.events();
            index.bytes += seg.bytes;
            index.segments.push_back(seg);
        }
        tracing::info!(dir = %dir.display(), events = index.events, bytes = index.bytes, "history opened");
        let tier = shared.map(|(remote, store, span_ms)| {
            tier::Tier::new(remote, store, &dir, settings.cache_bytes(), span_ms)
        });
        Ok(History(Arc::new(Inner {
            tier,
            settings,
            index: RwLock::new(index),
            readers: Arc::new(tokio::sync::Semaphore::new(MAX_READERS)),
            threads: readers::Readers::shared().map_err(io)?,
            writable: AtomicBool::new(true),
            write_errors: AtomicU64::new(0),
            damaged: AtomicU64::new(0),
            _lock: lock,
        })))
    }

    /// Where it lives and its bounds.
    pub fn settings(&self) -> &Settings {
        &self.0.settings
    }

    fn index(&self) -> std::sync::RwLockReadGuard<'_, Index> {
        self.0.index.read().unwrap_or_else(|e| e.into_inner())
    }

    fn index_mut(&self) -> std::sync::RwLockWriteGuard<'_, Index> {
        self.0.index.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The first event this process's own disk holds.
    pub fn first_own(&self) -> Option<EventId> {
        let index = self.index();
        index
            .first_block()
            .map(|b| b.header.first)
            .or_else(|| index.pending.first().map(|(id, _)| *id))
    }

    /// The last event held (in a block or read and pending).
    pub fn last(&self) -> Option<EventId> {
        self.index().last()
    }

    /// Its extent now: with a shared history, the store's windows and what
    /// this process holds after them.
    pub fn summary(&self) -> Summary {
        let index = self.index();
        let mut first = index
            .first_block()
            .map(|b| b.header.first)
            .or_else(|| index.pending.first().map(|(id, _)| *id));
        let mut last = index.last();
        let (mut events, mut bytes) = (index.events + index.pending.len() as u64, index.bytes);
        drop(index);
        if let Some((s_first, s_last, s_events, s_bytes)) = self.tier().and_then(|t| t.extent()) {
            if first.is_none_or(|f| s_first < f) {
                (first, events, bytes) = (
                    Some(s_first),
                    s_events + self.held_after(s_last),
                    s_bytes + bytes,
                );
            }
            last = last.max(Some(s_last));
        }
        Summary {
            oldest: first.map(|id| id.0 as f64 / 1000.0),
            oldest_id: first.map(|id| id.to_string()),
            newest_id: last.map(|id| id.to_string()),
            events,
            bytes,
        }
    }

    /// Events this process holds after `after` (by whole blocks).
    fn held_after(&self, after: EventId) -> u64 {
        let index = self.index();
        let blocks = index
            .segments
            .iter()
            .flat_map(|s| s.blocks.iter())
            .filter(|b| b.header.first > after)
            .map(|b| u64::from(b.header.count))
            .sum::<u64>();
        blocks + index.pending.iter().filter(|(id, _)| *id > after).count() as u64
    }

    /// The time of the oldest event held, seconds since the epoch.
    pub fn oldest(&self) -> Option<f64> {
        self.summary().oldest
    }

    /// Whether the last write to disk succeeded, how many failed, and how
    /// many blocks were found damaged when read.
    pub fn health(&self) -> (bool, u64, u64) {
        (
            self.0.writable.load(Ordering::Relaxed),
            self.0.write_errors.load(Ordering::Relaxed),
            self.0.damaged.load(Ordering::Relaxed),
        )
    }

    /// Whether the history holds an event after `after`.
    pub fn holds_after(&self, after: EventId) -> bool {
        self.last().is_some_and(|last| last > after)
            || self
                .tier()
                .and_then(|t| t.extent())
                .is_some_and(|(_, last, _, _)| last > after)
    }

    /// The events after `after` as their ids and JSON (the unit tests'
    /// view of [`History::read_after_as`]).
    #[cfg(test)]
    async fn read_after(&self, after: EventId) -> std::io::Result<Page> {
        self.read_after_as(after, usize::MAX, |id, json| Some((id, json.to_owned())))
            .await
    }

    /// The events after `after`: those of the first block holding any (or
    /// the pending ones), with the gap before them if there is one, each
    /// made into a `T` by `make` (an event it gives `None` for is left
    /// out) on the thread that read and decompressed its block: a replay
    /// parses its frames there, off the threads the live streams run on.
    /// At most `most` events are made (a lagging stream's small page): the
    /// page's cursor is then the last of them. Block reads queue behind
    /// [`MAX_READERS`] others. With a shared history, what this disk lacks
    /// is read from the store.
    pub async fn read_after_as<T: Send + 'static>(
        &self,
        after: EventId,
        most: usize,
        make: fn(EventId, &str) -> Option<T>,
    ) -> std::io::Result<Page<T>> {
        let located = self.locate_shared(after).await;
        self.read_located(located, after, most, make).await
    }

    /// [`History::read_after_as`] from this disk alone (the sealer's read:
    /// what it seals is what this process holds).
    pub async fn read_own_after_as<T: Send + 'static>(
        &self,
        after: EventId,
        most: usize,
        make: fn(EventId, &str) -> Option<T>,
    ) -> std::io::Result<Page<T>> {
        let located = self.locate(after);
        self.read_located(located, after, most, make).await
    }

    async fn read_located<T: Send + 'static>(
        &self,
        located: Located,
        after: EventId,
        most: usize,
        make: fn(EventId, &str) -> Option<T>,
    ) -> std::io::Result<Page<T>> {
        let (file, block) = match located {
            Located::End => {
                return Ok(Page {
                    cursor: after,
                    end: true,
                    ..Page::default()
                })
            }
            Located::Pending(page) => {
                // Up to a block's worth (more while the disk refuses
                // writes): made on the reader threads too.
                let (mut cursor, gap, mut end) = (page.cursor, page.gap, page.end);
                let mut pending = page.events;
                if pending.len() > most {
                    pending.truncate(most.max(1));
                    (cursor, end) = (pending[pending.len() - 1].0, false);
                }
                let events = self
                    .on_reader(move || {
                        pending
                            .into_iter()
                            .filter_map(|(id, json)| make(id, &json))
                            .collect()
                    })
                    .await?;
                return Ok(Page {
                    events,
                    cursor,
                    gap,
                    end,
                });
            }
            Located::Block(file, block) => (file, block),
        };
        let gap = gap_before(after, &block.header);
        let read = self
            .on_reader(move || {
                segment::read_body(&file, &block).map(|body| {
                    let (most, mut seen, mut last) = (most.max(1), 0, block.header.last);
                    let mut events = Vec::with_capacity((block.header.count as usize).min(most));
                    block::visit(&block.header, &body, |id, json| {
                        if id > after && seen < most {
                            events.extend(make(id, json));
                            (seen, last) = (seen + 1, id);
                        }
                    })
                    // Cut short: the page ends at the last event made.
                    .map(|()| (events, if seen < most { block.header.last } else { last }))
                })
            })
            .await?;
        match read {
            Ok(Some((events, cursor))) => Ok(Page {
                events,
                cursor,
                gap,
                end: false,
            }),
            // Damaged on disk since it was indexed, or cut away by a
            // failing disk: a stretch not held, never garbage.
            Ok(None) | Err(_) => {
                let cursor = block.header.last;
                tracing::warn!(first = %block.header.first, last = %block.header.last,
                    "a damaged history block was passed over");
                self.0.damaged.fetch_add(1, Ordering::Relaxed);
                Ok(Page {
                    events: Vec::new(),
                    cursor,
                    gap: Some(Gap {
                        after: gap.map_or(after, |g| g.after),
                        before: cursor,
                    }),
                    end: false,
                })
            }
        }
    }

    /// Runs `job` (a block's read and what is made of it) on the reader
    /// threads once one of the [`MAX_READERS`] turns is free. The job holds
    /// its turn until it has run, even if the caller went away meanwhile
    /// (a client that hung up): at most that many reads are ever under way.
    async fn on_reader<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> std::io::Result<T> {
        let turn = self
            .0
            .readers
            .clone()
            .acquire_owned()
            .await
            .map_err(std::io::Error::other)?;
        self.0
            .threads
            .run(move || {
                let made = job();
                drop(turn);
                made
            })
            .await
    }

    /// The first block with an event after `after`, or the pending events.
    pub(super) fn locate(&self, after: EventId) -> Located {
        let index = self.index();
        // Only the last segment can be empty (created, then its first write
        // refused or cut off): it sorts after every other.
        let seg_at = index
            .segments
            .partition_point(|s| s.last().is_some_and(|last| last <= after));
        if let Some(seg) = index
            .segments
            .range(seg_at..)
            .find(|s| !s.blocks.is_empty())
        {
            let at = seg.blocks.partition_point(|b| b.header.last <= after);
            if let Some(block) = seg.blocks.get(at) {
                return Located::Block(seg.file.clone(), *block);
            }
        }
        let events: Vec<_> = index
            .pending
            .iter()
            .filter(|(id, _)| *id > after)
            .cloned()
            .collect();
        let Some((last, _)) = events.last() else {
            return Located::End;
        };
        let first = events[0].0;
        let gap = (index.pending_gap || index.pending_prev > after) && first > after;
        Located::Pending(Page {
            cursor: *last,
            gap: gap.then_some(Gap {
                after,
                before: first,
            }),
            end: false,
            events,
        })
    }
}

/// Where a read goes.
pub(super) enum Located {
    End,
    Pending(Page),
    Block(Arc<File>, BlockMeta),
}

/// The gap between a reader at `after` and `block`, if events between
/// them are not held.
pub(super) fn gap_before(after: EventId, header: &block::Header) -> Option<Gap> {
    let missing = header.first > after && (header.gap_before() || header.prev > after);
    missing.then_some(Gap {
        after,
        before: header.first,
    })
}

#[cfg(test)]
mod tests;
