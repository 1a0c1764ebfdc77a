//! The archiver: one task per process that copies the event stream in
//! Redis into the history, in order.
//!
//! It reads the buffer after the last event it holds (from disk after a
//! restart) until it is in step with the log, then takes the events as
//! this process's hub hands them on (`store::events::tap`), going back to
//! the buffer whenever they do not follow on; it keeps what it read as
//! pending (readable at once) and
//! writes a block when 1,024 events or 1 MiB are pending, or the oldest has
//! waited a second. Before each block the oldest segments beyond
//! `--history` or `--history-max-bytes` are dropped. When the buffer had
//! already dropped events it had not read (the process was down longer
//! than the buffer lasts), the next block says so (`GAP_BEFORE`), and so
//! does the block after one the disk refused (the disk is full: logged,
//! counted, retried a second later; the streams go on).

use super::block;
use super::segment::Segment;
use super::History;
use crate::shutdown::Shutdown;
use crate::store::events::{EventId, Tap, Untapped};
use crate::store::Store;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How long an event waits before its block is written.
const BLOCK_AGE: Duration = Duration::from_secs(1);
/// Buffer entries read per XRANGE.
const READ_ENTRIES: usize = 1000;
/// Longest pause before a buffer read that failed is tried again.
const IDLE: Duration = Duration::from_millis(250);
/// Pending events kept while the disk refuses writes; beyond it the oldest
/// are let go (and become a gap).
const MAX_PENDING: usize = 16 * block::MAX_EVENTS;

/// Runs the archiver until shutdown, then writes what is pending.
pub(crate) async fn run(history: History, store: Store, tap: Tap, mut shutdown: Shutdown) {
    let mut last = history.last().unwrap_or(EventId::ZERO);
    let mut oldest_pending: Option<Instant> = None;
    let mut failing_since: Option<Instant> = None;
    // Taken before the first read: whatever the hub hands on after it
    // started is in the tap.
    let mut tapped = tap.reader();
    // In step: the tap's events follow on from `last`.
    let mut in_step = false;
    // After a stretch the buffer let go, the log is surely whole again only
    // from the newest oldest entry of the shards it trimmed: before that,
    // some shards' events may be held and others' not (a ragged stretch).
    // A shared history keeps none of it (a gap, which the store fills). A
    // history of its own keeps it: the buffer's trim marks are
    // conservative (an upgraded store marks every shard), and cutting there
    // would lose events that are whole.
    let mut whole_from = EventId::ZERO;
    loop {
        let read = if in_step {
            Ok(None)
        } else {
            store.events().following(last, READ_ENTRIES).await.map(Some)
        };
        let mut more = false;
        match read {
            Ok(None) => {}
            Ok(Some((page, held))) => {
                more = page.more;
                in_step = !more;
                if let Some((newest, _)) = page.events.last() {
                    let newest = *newest;
                    // `last`'s own entry gone: the buffer was trimmed past
                    // it, and events between may never have been read,
                    // unless what was read is the very next entry.
                    let next_entry = page.events[0].0.starts_entry_after(last);
                    let info = match held || next_entry {
                        true => None,
                        false => Some(store.events().buffer_info().await),
                    };
                    let lost = match &info {
                        None => false,
                        Some(Ok(info)) => crate::stream::frame::is_gap(last, info),
                        Some(Err(_)) => true,
                    };
                    if let (true, true, Some(Ok(info))) = (lost, history.tier().is_some(), &info) {
                        let first = info.first.as_deref().and_then(EventId::parse);
                        whole_from = whole_from.max(first.unwrap_or(EventId::ZERO));
                    }
                    if lost {
                        tracing::warn!(after = %last, "the replay buffer moved on before the history could read it; a gap is recorded");
                        // What is pending precedes the gap: its own block.
                        if history.flush().await.is_err() {
                            failing_since = Some(Instant::now());
                        }
                    }
                    let mut events = page.events;
                    events.retain(|(id, _)| *id >= whole_from);
                    history.add_pending(events, lost);
                    oldest_pending.get_or_insert_with(Instant::now);
                    last = newest;
                }
            }
            Err(e) => tracing::warn!(error = %e, "the history cannot read the event buffer"),
        }
        let due = oldest_pending.is_some_and(|t| t.elapsed() >= BLOCK_AGE)
            || history.pending_full()
            || shutdown.is_set();
        let retry_ok = failing_since.is_none_or(|t| t.elapsed() >= BLOCK_AGE);
        if due && retry_ok {
            match history.flush().await {
                Ok(()) => {
                    failing_since = None;
                    oldest_pending = None;
                }
                Err(e) => {
                    if failing_since.is_none() {
                        tracing::error!(error = %e, dir = %history.settings().dir.display(),
                            "the history cannot write; it stops growing until the disk takes writes again");
                    }
                    failing_since = Some(Instant::now());
                }
            }
        }
        if shutdown.is_set() {
            return;
        }
        if !more {
            let wait = match oldest_pending {
                Some(t) => BLOCK_AGE.saturating_sub(t.elapsed()).min(IDLE),
                None => IDLE,
            };
            if !in_step {
                tokio::select! {
                    _ = shutdown.wait() => {}
                    _ = tokio::time::sleep(wait) => {}
                }
                continue;
            }
            tokio::select! {
                _ = shutdown.wait() => {}
                run = tapped.after(last, READ_ENTRIES) => match run {
                    Ok(events) => {
                        if let Some((newest, _)) = events.last() {
                            last = *newest;
                            history.add_pending(events, false);
                            oldest_pending.get_or_insert_with(Instant::now);
                        }
                    }
                    Err(Untapped::Gap) => in_step = false,
                    Err(Untapped::Closed) => {
                        in_step = false;
                        tokio::select! {
                            _ = shutdown.wait() => {}
                            _ = tokio::time::sleep(IDLE) => {}
                        }
                    }
                },
                _ = tokio::time::sleep(wait), if oldest_pending.is_some() => {}
            }
        }
    }
}

/// The search summary of a block's events: the keys of its public
/// statuses, an edited one's as edited (`firehose_filters::summary`): the
/// search reads a block for an edit that its summary names, since the edit
/// stands for the status there.
pub(super) fn summary_of(events: &[(EventId, String)]) -> Vec<u8> {
    use crate::stream::frame::{parse, Incoming};
    let mut summary = firehose_filters::summary::SummaryBuilder::default();
    for (_, json) in events {
        if let Some(Incoming::Event(f)) = parse(json) {
            let edited = f.update_views().map(|views| views.after.clone());
            if let Some(status) = edited.as_deref().unwrap_or(&f).rule_status() {
                summary.add(&status);
            }
        }
    }
    summary.encode()
}

impl History {
    /// Events read from the buffer, after every one held; `lost`: some
    /// before them could not be read.
    fn add_pending(&self, events: Vec<(EventId, String)>, lost: bool) {
        let mut index = self.index_mut();
        if index.pending.is_empty() {
            // (A gap told with no events stays for the next ones.)
            index.pending_prev = index.last().unwrap_or(EventId::ZERO);
            index.pending_gap |= lost;
        } else if lost {
            // The gap lies inside what is pending: the block begins after it.
            let before = std::mem::take(&mut index.pending);
            index.pending_prev = before.last().map_or(index.pending_prev, |(id, _)| *id);
            index.pending_gap = true;
            tracing::warn!(
                dropped = before.len(),
                "pending history events let go at a gap"
            );
        }
        index.pending.extend(events);
        let over = index.pending.len().saturating_sub(MAX_PENDING);
        if over > 0 {
            let dropped: Vec<_> = index.pending.drain(..over).collect();
            index.pending_prev = dropped.last().map_or(index.pending_prev, |(id, _)| *id);
            index.pending_gap = true;
        }
    }

    /// Whether a block's worth is pending.
    fn pending_full(&self) -> bool {
        let index = self.index();
        index.pending.len() >= block::MAX_EVENTS
            || index.pending.iter().map(|(_, j)| j.len()).sum::<usize>() >= block::MAX_BYTES
    }

    /// Writes what is pending as blocks, dropping what retention says
    /// first. On an error, what is pending stays for the next try.
    async fn flush(&self) -> std::io::Result<()> {
        loop {
            let (events, prev, gap) = {
                let index = self.index();
                let n = block::next_len(&index.pending);
                if n == 0 {
                    return Ok(());
                }
                (
                    index.pending[..n].to_vec(),
                    index.pending_prev,
                    index.pending_gap,
                )
            };
            let this = self.clone();
            tokio::task::spawn_blocking(move || this.write_block(&events, prev, gap))
                .await
                .map_err(std::io::Error::other)??;
        }
    }

    /// Builds and appends one block of the first pending `events`, then
    /// lets them go from pending (readers find them in one place or the
    /// other, never neither).
    fn write_block(
        &self,
        events: &[(EventId, String)],
        prev: EventId,
        gap: bool,
    ) -> std::io::Result<()> {
        let built = block::build(prev, gap, events, &summary_of(events))?;
        let first = built.header.first;
        let settings = self.settings().clone();
        let mut index = self.index_mut();
        let rotate = index.segments.back().is_none_or(|seg| {
            seg.bytes > 0
                && (seg.bytes + built.bytes.len() as u64 > settings.segment_bytes()
                    || seg
                        .first()
                        .is_some_and(|f| first.0.saturating_sub(f.0) > settings.segment_span_ms()))
        });
        if rotate {
            let seg = Segment::create(&settings.dir, first);
            match seg {
                Ok(seg) => index.segments.push_back(seg),
                Err(e) => return Err(self.failed(e)),
            }
        }
        let Some(seg) = index.segments.back_mut() else {
            return Ok(());
        };
        if let Err(e) = seg.append(built.header, &built.bytes) {
            return Err(self.failed(e));
        }
        self.0.writable.store(true, Ordering::Relaxed);
        index.bytes += built.bytes.len() as u64;
        index.events += events.len() as u64;
        index.pending.drain(..events.len());
        index.pending_prev = built.header.last;
        index.pending_gap = false;
        let dropped = self.retire(&mut index, &settings);
        drop(index);
        for path in dropped {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(error = %e, path = %path.display(), "a retired history segment could not be removed");
            }
        }
        Ok(())
    }

    fn failed(&self, e: std::io::Error) -> std::io::Error {
        self.0.writable.store(false, Ordering::Relaxed);
        self.0.write_errors.fetch_add(1, Ordering::Relaxed);
        e
    }

    /// Drops the oldest segments (never the one appended to) while the
    /// history is over its bytes or holds events older than its retention;
    /// their paths, to remove.
    fn retire(
        &self,
        index: &mut super::Index,
        settings: &super::Settings,
    ) -> Vec<std::path::PathBuf> {
        let now_ms = (crate::model::now() * 1000.0) as u64;
        let horizon = now_ms.saturating_sub(settings.retention_secs * 1000);
        let mut dropped = Vec::new();
        while index.segments.len() > 1 {
            let Some(oldest) = index.segments.front() else {
                break;
            };
            let too_old = oldest.last().is_none_or(|l| l.0 < horizon);
            // With a shared history, what the store does not hold yet may
            // take the whole bound.
            let unsealed = self.tier().is_some_and(|t| {
                oldest
                    .last()
                    .is_some_and(|l| t.sealed().is_none_or(|s| l.0 >= s))
            });
            let bound = if unsealed {
                settings.max_bytes
            } else {
                settings.own_bytes()
            };
            if !(index.bytes > bound || too_old) {
                break;
            }
            if let Some(seg) = index.segments.pop_front() {
                index.bytes -= seg.bytes;
                index.events -= seg.events();
                dropped.push(seg.path);
            }
        }
        dropped
    }
}
