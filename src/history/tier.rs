//! The shared history as this process reads it (`--history-store`): the
//! sealed windows of the object store (`remote`), known from the manifest
//! in Redis ([`store::events::windows`](crate::store::events::windows)) and fetched on demand into a cache
//! on this process's disk (`<history-dir>/shared/`, bounded, the least
//! recently used window leaving first).
//!
//! A window is a segment (`segment`): blocks with their CRCs and `prev`
//! ids, so a window is read, verified and told apart from a gap exactly as
//! the local history is. The history ([`History`](super::History)) reads the store only
//! where its own disk lacks events: before its first block, and across a
//! gap in it (this process was not running). Where neither holds a stretch,
//! the readers hear of a gap, as before.

use super::block::Gap;
use super::remote::{Remote, RemoteError};
use super::segment::{BlockMeta, Segment};
use crate::store::events::{EventId, Window};
use crate::store::Store;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The cache's folder in the history's directory.
pub(crate) const CACHE_DIR: &str = "shared";
/// How often the manifest is read again at most, for a reader past its end.
const REFRESH: Duration = Duration::from_secs(1);
/// How often the whole manifest is read again (windows retention removed).
const RELOAD: Duration = Duration::from_secs(60);
/// Windows read from the manifest per call.
const MANIFEST_PAGE: usize = 10_000;
/// Windows a read looks into at most before it gives up for this call.
const LOOK_WINDOWS: usize = 8;

/// What the process knows of the store.
#[derive(Default)]
struct Known {
    windows: BTreeMap<u64, Window>,
    refreshed: Option<Instant>,
    reloaded: Option<Instant>,
    /// Windows on disk: their bytes and when last used.
    cached: HashMap<u64, (u64, Instant)>,
    cache_bytes: u64,
    open: HashMap<u64, Arc<Segment>>,
    /// Where sealing goes on (the manifest's `~sealed`), ms.
    sealed: Option<u64>,
    /// The windows' events and bytes, summed.
    events: u64,
    bytes: u64,
}

impl Known {
    fn put(&mut self, w: Window) {
        if let Some(old) = self.windows.insert(w.start, w) {
            (self.events, self.bytes) = (self.events - old.count, self.bytes - old.bytes);
        }
        (self.events, self.bytes) = (self.events + w.count, self.bytes + w.bytes);
    }

    fn take(&mut self, start: u64) {
        if let Some(old) = self.windows.remove(&start) {
            (self.events, self.bytes) = (self.events - old.count, self.bytes - old.bytes);
        }
    }
}

struct Inner {
    remote: Remote,
    store: Store,
    cache_dir: PathBuf,
    max_cache_bytes: u64,
    /// Milliseconds a window spans.
    span_ms: u64,
    known: Mutex<Known>,
    /// One fetch at a time: two readers of the same window wait for one
    /// GET.
    fetching: tokio::sync::Mutex<()>,
}

/// The store's windows as this process reads them; cheap to clone.
#[derive(Clone)]
pub struct Tier(Arc<Inner>);

impl Tier {
    /// The tier of `remote`, caching in `dir/shared` at most
    /// `max_cache_bytes` (what is there from before is kept).
    pub fn new(
        remote: Remote,
        store: Store,
        dir: &std::path::Path,
        max_cache_bytes: u64,
        span_ms: u64,
    ) -> Tier {
        let cache_dir = dir.join(CACHE_DIR);
        let _ = std::fs::create_dir_all(&cache_dir);
        let mut known = Known::default();
        if let Ok(entries) = std::fs::read_dir(&cache_dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let path = entry.path();
                match name
                    .strip_suffix(".seg")
                    .and_then(|s| s.parse::<u64>().ok())
                {
                    Some(start) => {
                        let bytes = entry.metadata().map_or(0, |m| m.len());
                        known.cached.insert(start, (bytes, Instant::now()));
                        known.cache_bytes += bytes;
                    }
                    // A fetch cut short by a kill: never renamed, never read.
                    None => drop(std::fs::remove_file(path)),
                }
            }
        }
        Tier(Arc::new(Inner {
            remote,
            store,
            cache_dir,
            max_cache_bytes,
            span_ms,
            known: Mutex::new(known),
            fetching: tokio::sync::Mutex::new(()),
        }))
    }

    pub fn remote(&self) -> &Remote {
        &self.0.remote
    }

    fn known(&self) -> std::sync::MutexGuard<'_, Known> {
        self.0.known.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the manifest's windows newer than those known (all of them
    /// once a minute), unless it was read within a second and `force` is
    /// not set.
    pub async fn refresh(&self, force: bool) {
        let (from, reload) = {
            let known = self.known();
            if !force && known.refreshed.is_some_and(|t| t.elapsed() < REFRESH) {
                return;
            }
            let reload = known.reloaded.is_none_or(|t| t.elapsed() >= RELOAD);
            let from = if reload {
                0
            } else {
                known.windows.keys().next_back().map_or(0, |s| s + 1)
            };
            (from, reload)
        };
        let mut found = Vec::new();
        let mut at = from;
        let mut sealed = None;
        loop {
            match self.0.store.events().windows(at, MANIFEST_PAGE).await {
                Ok((page, mark)) => {
                    sealed = sealed.or(mark);
                    let full = page.len() == MANIFEST_PAGE;
                    at = page.last().map_or(at, |w| w.start + 1);
                    found.extend(page);
                    if !full {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the shared history's manifest could not be read");
                    return;
                }
            }
        }
        let mut known = self.known();
        if reload {
            known.windows.clear();
            (known.events, known.bytes) = (0, 0);
            known.reloaded = Some(Instant::now());
        }
        for w in found {
            known.put(w);
        }
        known.refreshed = Some(Instant::now());
        known.sealed = known.sealed.max(sealed);
    }

    /// Waits (at most two windows and a second) until the store has sealed
    /// past `id`: a stretch this process lacks that the others hold and
    /// are about to seal (a process that started just now, its first events
    /// newer than the store's last window).
    pub async fn await_sealed(&self, id: EventId) {
        let deadline = Instant::now() + Duration::from_millis(2 * self.0.span_ms + 1000);
        while self.sealed().is_none_or(|s| s <= id.0) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
            self.refresh(true).await;
        }
    }

    /// Where sealing goes on, as last read or done here (ms).
    pub fn sealed(&self) -> Option<u64> {
        self.known().sealed
    }

    /// Sealing went on to `ms` here.
    pub fn sealed_to(&self, ms: u64) {
        let mut known = self.known();
        known.sealed = known.sealed.max(Some(ms));
    }

    /// A window this process sealed itself.
    pub fn add(&self, window: Window) {
        self.known().put(window);
    }

    /// A window retention removed.
    pub fn remove(&self, start: u64) {
        let mut known = self.known();
        known.take(start);
        known.open.remove(&start);
        if let Some((bytes, _)) = known.cached.remove(&start) {
            known.cache_bytes -= bytes;
            let _ = std::fs::remove_file(self.0.cache_dir.join(format!("{start}.seg")));
        }
    }

    /// The windows known, oldest first.
    pub fn windows(&self) -> Vec<Window> {
        self.known().windows.values().copied().collect()
    }

    /// The first and last event the store holds, its events and bytes.
    pub fn extent(&self) -> Option<(EventId, EventId, u64, u64)> {
        let known = self.known();
        let first = known.windows.values().next()?;
        let last = known.windows.values().next_back()?;
        Some((first.first, last.last, known.events, known.bytes))
    }

    /// The first block of the store with an event after `after`, fetching
    /// its window if need be; `None` when the store holds nothing after it
    /// or cannot be read now.
    pub async fn block_after(&self, after: EventId) -> Option<(Arc<File>, BlockMeta)> {
        let beyond = self
            .known()
            .windows
            .values()
            .next_back()
            .is_none_or(|w| w.last <= after);
        if beyond {
            self.refresh(false).await;
        }
        let candidates: Vec<Window> = self
            .known()
            .windows
            .values()
            .filter(|w| w.last > after)
            .take(LOOK_WINDOWS)
            .copied()
            .collect();
        for window in candidates {
            let seg = self.segment(&window).await?;
            let at = seg.blocks.partition_point(|b| b.header.last <= after);
            if let Some(block) = seg.blocks.get(at) {
                return Some((seg.file.clone(), *block));
            }
            // A window damaged past `after`: the next one's `prev` tells.
        }
        None
    }

    /// The blocks of the store with events older than `before` and not
    /// older than `floor`, newest first, at most `most`, and whether more
    /// lie beyond them; `None` when the store cannot be read now.
    #[allow(clippy::type_complexity)]
    pub async fn blocks_before(
        &self,
        before: EventId,
        floor: EventId,
        most: usize,
    ) -> Option<(Vec<(Arc<File>, BlockMeta)>, bool)> {
        let windows: Vec<Window> = self
            .known()
            .windows
            .values()
            .rev()
            .filter(|w| w.first < before && w.last >= floor)
            .copied()
            .collect();
        let mut blocks = Vec::new();
        for window in windows {
            let seg = self.segment(&window).await?;
            for meta in seg.blocks.iter().rev() {
                if meta.header.first >= before {
                    continue;
                }
                if meta.header.last < floor {
                    return Some((blocks, false));
                }
                if blocks.len() == most {
                    return Some((blocks, true));
                }
                blocks.push((seg.file.clone(), *meta));
            }
        }
        Some((blocks, false))
    }

    /// The stretches between `after` and `before` the store does not hold,
    /// from the manifest: before its first window, between windows whose
    /// sealer missed events, and after its last.
    pub fn holes(&self, after: EventId, before: EventId) -> Vec<Gap> {
        let known = self.known();
        let mut found = Vec::new();
        let mut held: Option<EventId> = None;
        for w in known.windows.values() {
            let missing = match held {
                None => w.gap || w.prev != EventId::ZERO,
                Some(held) => w.gap || w.prev > held,
            };
            if missing {
                found.push(Gap {
                    after: held.unwrap_or(EventId::ZERO),
                    before: w.first,
                });
            }
            held = Some(w.last);
        }
        found.push(Gap {
            after: held.unwrap_or(EventId::ZERO),
            before: EventId(u64::MAX, u64::MAX, u32::MAX),
        });
        clip(found, after, before)
    }

    /// The window as a segment on this disk, fetched if need be.
    async fn segment(&self, window: &Window) -> Option<Arc<Segment>> {
        let start = window.start;
        if let Some(seg) = self.opened(start) {
            return Some(seg);
        }
        let _one = self.0.fetching.lock().await;
        if let Some(seg) = self.opened(start) {
            return Some(seg);
        }
        let path = self.0.cache_dir.join(format!("{start}.seg"));
        let on_disk = self.known().cached.contains_key(&start);
        if !on_disk {
            let bytes = match self.0.remote.read(start).await {
                Ok(bytes) => bytes,
                Err(RemoteError::Missing) => {
                    // Retention took it since the manifest was read.
                    self.known().take(start);
                    return None;
                }
                Err(e) => {
                    tracing::warn!(error = %e, window = start, "a shared history window could not be read");
                    return None;
                }
            };
            let len = bytes.len() as u64;
            let tmp = self.0.cache_dir.join(format!("{start}.seg.part"));
            let written = tokio::task::spawn_blocking({
                let (tmp, path) = (tmp.clone(), path.clone());
                move || {
                    std::fs::write(&tmp, &bytes)?;
                    std::fs::rename(&tmp, &path)
                }
            })
            .await
            .map_err(std::io::Error::other)
            .and_then(|r| r);
            if let Err(e) = written {
                tracing::warn!(error = %e, "a shared history window could not be cached");
                let _ = std::fs::remove_file(&tmp);
                return None;
            }
            self.cached(start, len);
        }
        let opened = tokio::task::spawn_blocking(move || Segment::open(&path, false))
            .await
            .ok()?;
        match opened {
            Ok((seg, damage)) => {
                if damage.skipped > 0 || damage.torn > 0 {
                    tracing::warn!(
                        window = start,
                        skipped = damage.skipped,
                        torn = damage.torn,
                        "a shared history window is damaged; its whole blocks are served"
                    );
                }
                let seg = Arc::new(seg);
                let mut known = self.known();
                if let Some((_, used)) = known.cached.get_mut(&start) {
                    *used = Instant::now();
                }
                known.open.insert(start, seg.clone());
                Some(seg)
            }
            Err(e) => {
                tracing::warn!(error = %e, window = start, "a cached shared history window could not be opened");
                self.remove_cached(start);
                None
            }
        }
    }

    fn opened(&self, start: u64) -> Option<Arc<Segment>> {
        let mut known = self.known();
        let seg = known.open.get(&start).cloned()?;
        if let Some((_, used)) = known.cached.get_mut(&start) {
            *used = Instant::now();
        }
        Some(seg)
    }

    /// Counts a window now on disk, letting the least recently used go
    /// while the cache is over its bound (a reader holding one keeps its
    /// file open until it is done).
    fn cached(&self, start: u64, bytes: u64) {
        let mut known = self.known();
        known.cached.insert(start, (bytes, Instant::now()));
        known.cache_bytes += bytes;
        while known.cache_bytes > self.0.max_cache_bytes && known.cached.len() > 1 {
            let Some((&oldest, _)) = known
                .cached
                .iter()
                .filter(|(s, _)| **s != start)
                .min_by_key(|(_, (_, used))| *used)
            else {
                break;
            };
            if let Some((b, _)) = known.cached.remove(&oldest) {
                known.cache_bytes -= b;
            }
            known.open.remove(&oldest);
            let _ = std::fs::remove_file(self.0.cache_dir.join(format!("{oldest}.seg")));
        }
    }

    fn remove_cached(&self, start: u64) {
        let mut known = self.known();
        known.open.remove(&start);
        if let Some((b, _)) = known.cached.remove(&start) {
            known.cache_bytes -= b;
        }
        let _ = std::fs::remove_file(self.0.cache_dir.join(format!("{start}.seg")));
    }

    /// Bytes of windows cached on this disk.
    pub fn cache_bytes(&self) -> u64 {
        self.known().cache_bytes
    }
}

/// `gaps` clipped to the events after `after` and before `before`.
pub(crate) fn clip(gaps: Vec<Gap>, after: EventId, before: EventId) -> Vec<Gap> {
    gaps.into_iter()
        .filter(|g| g.after < before && g.before > after)
        .map(|g| Gap {
            after: g.after.max(after),
            before: g.before.min(before),
        })
        .collect()
}

/// The stretches missing from both `a` and `b` (each sorted, disjoint).
pub(crate) fn both_missing(a: &[Gap], b: &[Gap]) -> Vec<Gap> {
    let mut out = Vec::new();
    for x in a {
        for y in b {
            let (after, before) = (x.after.max(y.after), x.before.min(y.before));
            if after < before {
                out.push(Gap { after, before });
            }
        }
    }
    out.sort_by_key(|g| g.after);
    out
}
