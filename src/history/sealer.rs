//! The sealer: one process at a time (a lease in Redis) copies the log into
//! the object store as windows of `--history-window` (10 s unless told),
//! and removes windows older
//! than `--history` (retention).
//!
//! A window is sealed once this process's history has read past its end:
//! the log is merged in id order, so no event of it can come later. Its
//! events are read from this process's history (the archiver's copy of the
//! buffer, kept as the buffer grows), built into blocks with their search
//! summaries, and written as one object named by the window's first
//! millisecond, once (`remote`): a window is never held twice, whoever
//! writes it, and a kill at any moment leaves it absent or whole. Then the
//! manifest in Redis records it ([`store::events::windows`](crate::store::events::windows)). Where this
//! process's history lacks events of a window (it was not running), the
//! window's first block says so (its gap flag), and readers hear of a gap.
//!
//! While the store refuses, sealing waits with back-off (up to
//! [`MAX_BACKOFF`]) and goes on from where it stopped once the store
//! answers: the history on disk keeps what is not yet sealed meanwhile (its
//! byte bound then grows to the whole `--history-max-bytes`).

use super::remote::RemoteError;
use super::tier::Tier;
use super::{block, History};
use crate::shutdown::Shutdown;
use crate::store::events::{EventId, Window};
use crate::store::Store;
use std::time::{Duration, Instant};

/// The sealer's lease.
const LEASE_MS: u64 = 15_000;
/// The lease's name (shard 0's slot of [`store::events::shard_work`](crate::store::events::shard_work)).
const WORK: &str = "history-sealer";
/// Windows sealed per round at most (then the lease is renewed).
const ROUND_WINDOWS: usize = 60;
/// Longest wait before a store that refused is tried again.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How often every process asks whether the store answers.
const PROBE_EVERY: Duration = Duration::from_secs(5);
/// How often retention looks for windows to remove: every six windows,
/// from a second to a minute.
fn retention_every(span_ms: u64) -> Duration {
    Duration::from_millis(span_ms.saturating_mul(6))
        .clamp(Duration::from_secs(1), Duration::from_secs(60))
}

/// The first millisecond of the window of `span` ms holding `ms`.
fn window_of(ms: u64, span: u64) -> u64 {
    ms - ms % span
}

/// Runs on every process of a shared history until shutdown: each second
/// it reads what the manifest gained, every 5 s it asks whether the store
/// answers, and it takes the lease when it is free and seals what is due
/// while it holds it.
pub(crate) async fn run(history: History, store: Store, span_ms: u64, mut shutdown: Shutdown) {
    let Some(tier) = history.tier().cloned() else {
        return;
    };
    let holder = format!("{:016x}", rand::random::<u64>());
    let work = || store.events().work(WORK);
    let mut held = false;
    let mut backoff = Duration::from_secs(1);
    let mut last_retention: Option<Instant> = None;
    let mut failing = false;
    let mut probed: Option<Instant> = None;
    loop {
        // Every process keeps its view of the manifest fresh (the windows
        // others seal), at most a read a second.
        tier.refresh(false).await;
        if probed.is_none_or(|t| t.elapsed() >= PROBE_EVERY) {
            probed = Some(Instant::now());
            tier.remote().probe().await;
        }
        held = match held {
            true => work().renew(0, &holder, LEASE_MS).await.unwrap_or(false),
            false => work().take(0, &holder, LEASE_MS).await.unwrap_or(false),
        };
        let mut wait = Duration::from_secs(1);
        if held {
            match seal_due(&history, &tier, &store, span_ms).await {
                Ok(more) => {
                    if failing {
                        tracing::info!(
                            store = tier.remote().url(),
                            "the history store takes windows again"
                        );
                    }
                    (failing, backoff) = (false, Duration::from_secs(1));
                    if more {
                        wait = Duration::ZERO;
                    }
                }
                Err(e) => {
                    if !failing {
                        tracing::error!(error = %e, store = tier.remote().url(),
                            "the history store refuses windows; retrying with back-off");
                    }
                    failing = true;
                    wait = backoff;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
            if !failing && last_retention.is_none_or(|t| t.elapsed() >= retention_every(span_ms)) {
                last_retention = Some(Instant::now());
                retire(&history, &tier, &store, span_ms).await;
            }
        }
        tokio::select! {
            _ = shutdown.wait() => {
                if held {
                    let _ = work().release(0, &holder).await;
                }
                return;
            }
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// Seals the windows (of `span` ms) this process's history has read past, up to a
/// round's worth; whether more are due.
async fn seal_due(
    history: &History,
    tier: &Tier,
    store: &Store,
    span: u64,
) -> anyhow::Result<bool> {
    let Some(own_last) = history.last() else {
        return Ok(false);
    };
    tier.refresh(true).await;
    let mut prev = tier.windows().last().map_or(EventId::ZERO, |w| w.last);
    let mut next = match tier.sealed() {
        Some(next) => next,
        None => match history.first_own() {
            Some(first) => window_of(first.0, span),
            None => return Ok(false),
        },
    };
    for _ in 0..ROUND_WINDOWS {
        let end = next + span;
        if own_last < EventId(end, 0, 0) {
            return Ok(false);
        }
        let (events, gap) = window_events(history, next, end).await?;
        if events.is_empty() {
            store.events().record_window(None, end).await?;
        } else {
            let window = seal(tier, store, (next, end), prev, gap, &events).await?;
            prev = window.last;
        }
        tier.sealed_to(end);
        next = end;
    }
    Ok(true)
}

/// The events of this process's history in `[start, end)` ms, and whether
/// it lacks some before them or among them.
async fn window_events(
    history: &History,
    start: u64,
    end: u64,
) -> std::io::Result<(Vec<(EventId, String)>, bool)> {
    let mut after = EventId(start, 0, 0).just_before();
    let (mut events, mut gap) = (Vec::new(), false);
    loop {
        let page = history
            .read_own_after_as(after, usize::MAX, |id, json| Some((id, json.to_owned())))
            .await?;
        gap |= page.gap.is_some();
        let done = page.end || page.cursor.0 >= end;
        events.extend(page.events.into_iter().filter(|(id, _)| id.0 < end));
        if done {
            return Ok((events, gap));
        }
        after = page.cursor;
    }
}

/// Writes the window `start` of `events` (after `prev`) to the store and
/// records it; a window another process wrote first is taken as theirs.
async fn seal(
    tier: &Tier,
    store: &Store,
    (start, end): (u64, u64),
    prev: EventId,
    gap: bool,
    events: &[(EventId, String)],
) -> anyhow::Result<Window> {
    let owned = events.to_vec();
    let bytes = tokio::task::spawn_blocking(move || build(&owned, prev, gap)).await??;
    let (Some((first, _)), Some((last, _))) = (events.first(), events.last()) else {
        anyhow::bail!("an empty window");
    };
    let window = Window {
        start,
        first: *first,
        last: *last,
        prev,
        count: events.len() as u64,
        bytes: bytes.len() as u64,
        gap,
    };
    match tier.remote().create(start, bytes).await {
        Ok(()) => {}
        Err(RemoteError::Exists) => {
            tier.refresh(true).await;
            if let Some(theirs) = tier.windows().into_iter().find(|w| w.start == start) {
                store.events().record_window(None, end).await?;
                return Ok(theirs);
            }
            // Written by a process that died before it recorded it: the
            // same stretch of the log, recorded now.
        }
        Err(e) => return Err(e.into()),
    }
    store.events().record_window(Some(window), end).await?;
    tier.add(window);
    Ok(window)
}

/// The window's bytes: blocks as the archiver makes them
/// ([`block::next_len`]), the first after `prev` (with the gap flag when events
/// before it were missed).
fn build(events: &[(EventId, String)], prev: EventId, gap: bool) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let (mut prev, mut gap, mut at) = (prev, gap, 0);
    while at < events.len() {
        let n = block::next_len(&events[at..]);
        let chunk = &events[at..at + n];
        let built = block::build(prev, gap, chunk, &super::archiver::summary_of(chunk))?;
        out.extend_from_slice(&built.bytes);
        (prev, gap, at) = (built.header.last, false, at + n);
    }
    Ok(out)
}

/// Removes the windows older than `--history` from the store and the
/// manifest.
async fn retire(history: &History, tier: &Tier, store: &Store, span: u64) {
    let now_ms = (crate::model::now() * 1000.0) as u64;
    let horizon = now_ms.saturating_sub(history.settings().retention_secs * 1000);
    for window in tier.windows() {
        if window.start + span > horizon {
            break;
        }
        if let Err(e) = tier.remote().remove(window.start).await {
            tracing::warn!(error = %e, "an old shared history window could not be removed");
            return;
        }
        if store.events().forget_window(window.start).await.is_err() {
            return;
        }
        tier.remove(window.start);
    }
}
