//! A feed's replay: the events a subscription asked for from the past
//! (`last_event_id`, `since`, `count`), read a page at a time from the
//! history on disk and then the replay buffer, judged by what the reader
//! may see now, before the live events queued meanwhile.

use super::replay_job::{self, resume_gap, Lag, Reading, ReplayJob, LAG_FIRST_PAGE};
use super::Feed;
use crate::hides::Hides;
use crate::history::History;
use crate::metrics::{global as metrics, inc};
use crate::store::StoreResult;
use crate::stream::frame::DisconnectCode;
use crate::stream::frame::{self, EventId, Frame, Incoming};
use crate::stream::hub::viewers::hide_mask;
use crate::stream::queue::Out;
use crate::stream::want::Want;
use std::sync::Arc;

/// Events judged between the turns a replay gives the live streams (its
/// events come parsed: judging one is a filter's match).
const JUDGE_TURN: usize = 4 * frame::PARSE_TURN;

/// An event of the buffer or the history as a frame (`None`: not an
/// event, or not one this build reads).
fn event_frame(_id: EventId, json: &str) -> Option<Arc<Frame>> {
    match frame::parse(json) {
        Some(Incoming::Event(f)) => Some(f),
        _ => None,
    }
}

/// Buffer entries read per replay round trip.
const PAGE: usize = 1000;
/// Buffer entries read per page of a resume (`last_event_id`): at most this
/// many events of a replay are held per connection at a time.
const REPLAY_PAGE: usize = 256;

impl Feed {
    pub(super) async fn replay_after(
        &mut self,
        stream: &'static str,
        want: Want,
        hides: Arc<Hides>,
        after: EventId,
    ) -> StoreResult<()> {
        let newest = self.hub.store().events().newest_id().await?;
        if newest.is_none_or(|newest| after > newest) && after != EventId::ZERO {
            // An id from the future (or from another server's buffer) cannot
            // be placed: replaying after it would drop every event below it.
            let oldest = self.oldest_held().await;
            self.push_control(resume_gap(
                "last_event_id is newer than any event this server holds; continuing live.",
                oldest,
            ));
            return Ok(());
        }
        self.replay_from(stream, want, hides, after).await
    }

    /// The time of the oldest event this server holds (in its history,
    /// else in the buffer).
    pub(super) async fn oldest_held(&self) -> Option<f64> {
        if let Some(oldest) = self.history.as_ref().and_then(History::oldest) {
            return Some(oldest);
        }
        let first = self
            .hub
            .store()
            .events()
            .after(EventId::ZERO, 1)
            .await
            .ok()?;
        first.events.first().map(|(id, _)| id.0 as f64 / 1000.0)
    }

    /// Replays every matching event after `after`, from the history while
    /// it holds events after it, then from the buffer (warning `resume_gap`
    /// where neither holds them all), then goes live.
    pub(super) async fn replay_from(
        &mut self,
        stream: &'static str,
        want: Want,
        hides: Arc<Hides>,
        after: EventId,
    ) -> StoreResult<()> {
        // Any replay of this stream was dropped by `subscribe`, so this job
        // is the only one for it. The first page is read now, so that a
        // store failure is answered to the request; the rest as the client
        // reads.
        self.queue_replay(stream, want, hides, after)?;
        self.replay_step().await
    }

    /// Queues a replay of every matching event after `after`, read as the
    /// client reads (warning `resume_gap` where neither the history nor
    /// the buffer holds them all).
    pub(super) fn queue_replay(
        &mut self,
        stream: &'static str,
        want: Want,
        hides: Arc<Hides>,
        after: EventId,
    ) -> StoreResult<()> {
        // A resume point the buffer no longer reaches is told by the
        // buffer's first page (`next_page`), in the read that finds it.
        let from_history = self.history.as_ref().is_some_and(|h| h.holds_after(after));
        let sight = self.sight(stream, &hides);
        // A lagging stream's replays hold little (see `lag`).
        let budget = self.lags().then_some(LAG_FIRST_PAGE);
        self.replays.push_back(ReplayJob {
            stream,
            want,
            hides,
            cursor: after,
            from_history,
            _reading: from_history.then(Reading::start),
            prefetch: None,
            sight,
            budget,
            caught: false,
        });
        Ok(())
    }

    /// The next page of a replay: from the history while it holds more
    /// (a gap in it is told as `resume_gap`), else from the buffer (and
    /// when the buffer has moved past where the history ended, that too).
    pub(super) async fn next_page(
        &mut self,
        cursor: EventId,
        from_history: bool,
        budget: Option<usize>,
    ) -> StoreResult<(Vec<Arc<Frame>>, EventId, bool, bool)> {
        if let (true, Some(history)) = (from_history, self.history.clone()) {
            let ahead = self.replays.front_mut().and_then(|job| job.prefetch.take());
            let read = match ahead {
                Some((at, read)) if at == cursor => match read.await {
                    Ok(page) => page,
                    Err(e) => Err(std::io::Error::other(e)),
                },
                _ => {
                    let most = budget.unwrap_or(usize::MAX);
                    history.read_after_as(cursor, most, event_frame).await
                }
            };
            let page =
                read.map_err(|e| crate::store::StoreError::Internal(format!("history: {e}")))?;
            if !page.end && budget.is_none() {
                // The next block is read while this one is judged and written.
                let (next, ahead) = (page.cursor, history.clone());
                let read = tokio::spawn(async move {
                    ahead.read_after_as(next, usize::MAX, event_frame).await
                });
                if let Some(job) = self.replays.front_mut() {
                    job.prefetch = Some((next, read));
                }
            }
            if let Some(gap) = page.gap {
                let oldest = history.oldest();
                self.push_control(resume_gap(&gap_message(&gap), oldest));
            }
            if page.end {
                // Past the history's end: on into the buffer, which holds
                // what followed unless the archiver fell a buffer behind
                // (its first page tells).
                return Ok((Vec::new(), page.cursor, true, false));
            }
            inc(&metrics().history_events_read, page.events.len() as u64);
            return Ok((page.events, page.cursor, true, true));
        }
        let entries = budget.unwrap_or(REPLAY_PAGE);
        // A partition of the firehose reads only its own shards of the log
        // when its split divides them.
        let events = self.hub.store().events();
        let only = self
            .replays
            .front()
            .and_then(|job| job.want.part)
            .and_then(|p| events.partition_shards(usize::from(p.index), usize::from(p.of)));
        let page = match &only {
            Some(only) => events.after_in(cursor, entries, only).await?,
            None => events.after(cursor, entries).await?,
        };
        if page.lost {
            // A shard let events after the cursor go before they were
            // read: the history, which copies the buffer as it grows, may
            // hold them; else they are lost, and said so.
            if self.history.as_ref().is_some_and(|h| h.holds_after(cursor)) {
                return Ok((Vec::new(), cursor, true, true));
            }
            let oldest = self.oldest_held().await;
            self.push_control(resume_gap(
                "Some events after the resume point are no longer held.",
                oldest,
            ));
        }
        let next = page.events.last().map_or(cursor, |(id, _)| *id);
        let mut frames = Vec::with_capacity(page.events.len());
        for (i, (id, json)) in page.events.into_iter().enumerate() {
            if i % frame::PARSE_TURN == frame::PARSE_TURN - 1 {
                tokio::task::yield_now().await;
            }
            frames.extend(event_frame(id, &json));
        }
        Ok((frames, next, page.more, false))
    }

    /// Reads the next page of the first replay into `pending`; once a page
    /// comes back short, the replay is done, its stream's floor is set and
    /// its live events resume. Cancel-safe: nothing changes before the read
    /// has returned.
    pub(super) async fn replay_step(&mut self) -> StoreResult<()> {
        if !self.next_to_read() {
            return Ok(());
        }
        let Some((cursor, from_history, budget)) = self
            .replays
            .front()
            .map(|job| (job.cursor, job.from_history, job.budget))
        else {
            return Ok(());
        };
        let (events, next, more, still_history) =
            self.next_page(cursor, from_history, budget).await?;
        let Some(job) = self.replays.front_mut() else {
            return Ok(());
        };
        let mut matched = Vec::new();
        // A lagging stream's page is cut once it holds its share of bytes.
        let (mut bytes, mut cut) = (0, None);
        for (i, f) in events.iter().enumerate() {
            if i % JUDGE_TURN == JUDGE_TURN - 1 {
                // A block of the history is 1,024 events: the live
                // streams' tasks get turns while it is judged.
                tokio::task::yield_now().await;
            }
            if let Some(f) = job.want.judge(f) {
                if !job.hides.hides_any(f.actors(), hide_mask(job.stream))
                    && !self.hub.store().moderation().suspended().any(f.actors())
                {
                    bytes += replay_job::held(&f);
                    matched.push(f);
                }
            }
            if job.budget.is_some() && bytes >= replay_job::LAG_BYTES && i + 1 < events.len() {
                cut = Some(f.id);
                break;
            }
        }
        // The page's other events go now, not after the round trip below.
        drop(events);
        // Judged before the cursor moves: a failed read leaves the page
        // to be read again.
        let kept = job.sight.keep(matched).await?;
        let (next, more) = cut.map_or((next, more), |at| (at, true));
        if let Some(entries) = job.budget {
            job.budget = Some(replay_job::next_budget(
                entries,
                bytes,
                cut.is_some(),
                REPLAY_PAGE,
            ));
        }
        job.cursor = next;
        if job.from_history && !still_history {
            job.from_history = false;
            job._reading = None;
        } else if !job.from_history && still_history {
            // Back to the history: the buffer moved on past the cursor.
            job.from_history = true;
            job._reading = Some(Reading::start());
        }
        inc(&metrics().events_replayed, kept.len() as u64);
        for f in kept {
            self.pending.push_back(Out::Event(f, job.stream));
        }
        if !more {
            if self.lag == Lag::Behind {
                // At the buffer's end while the hub drops the stream's
                // events: waits for the stream's other replays.
                job.caught = true;
                return Ok(());
            }
            if let Some(job) = self.replays.pop_front() {
                self.set_floor(job.stream, job.cursor, Some(job.want));
            }
        }
        Ok(())
    }

    pub(super) async fn replay_newest(
        &mut self,
        stream: &'static str,
        mut want: Want,
        hides: &Arc<Hides>,
        n: usize,
    ) -> StoreResult<()> {
        let mut sight = self.sight(stream, hides);
        let mut found: Vec<Arc<Frame>> = Vec::new();
        let mut cursor: Option<EventId> = None;
        let mut newest: Option<EventId> = None;
        'pages: while found.len() < n {
            let page = self.hub.store().events().before(cursor, PAGE).await?;
            let Some((oldest, _)) = page.events.last() else {
                break;
            };
            let frames: Vec<Arc<Frame>> = page
                .events
                .iter()
                .filter_map(|(_, json)| match frame::parse(json) {
                    Some(Incoming::Event(f)) => Some(f),
                    _ => None,
                })
                .collect();
            if newest.is_none() {
                newest = frames.first().map(|f| f.id);
            }
            // The index is replayed oldest first so that follow events update
            // user-stream rules in order; keep the newest N matches.
            let mut matched = Vec::new();
            for f in frames.iter().rev() {
                if let Some(f) = want.judge(f) {
                    if !hides.hides_any(f.actors(), hide_mask(stream))
                        && !self.hub.store().moderation().suspended().any(f.actors())
                    {
                        matched.push(f);
                    }
                }
            }
            let matched = sight.keep(matched).await?;
            for f in matched.into_iter().rev() {
                found.push(f);
                if found.len() >= n {
                    break 'pages;
                }
            }
            if !page.more {
                break;
            }
            cursor = Some(*oldest);
        }
        inc(&metrics().events_replayed, found.len() as u64);
        for f in found.into_iter().rev() {
            self.pending.push_back(Out::Event(f, stream));
        }
        if let Some(newest) = newest {
            self.set_floor(stream, newest, None);
        }
        Ok(())
    }

    /// Reads the next page of a replay; the feed's end if it was killed,
    /// shut down or the read failed meanwhile.
    pub(super) async fn replay_page(&mut self) -> Option<Out> {
        // Live events wait in the queue until the replay is done (the floor
        // then drops those the replay already sent). A kill or shutdown
        // still ends the feed mid-replay.
        let conn = self.conn.clone();
        let mut shutdown = self.shutdown.clone();
        let step = tokio::select! {
            biased;
            (code, reason) = conn.killed() => return Some(self.end(code, &reason)),
            _ = shutdown.wait() => {
                return Some(self.end(DisconnectCode::Shutdown, DisconnectCode::Shutdown.sentence()))
            }
            step = self.replay_step() => step,
        };
        if let Err(e) = step {
            return Some(self.unavailable(&e));
        }
        None
    }

    /// Ends the feed on a failed read of the store.
    pub(super) fn unavailable(&mut self, e: &crate::store::StoreError) -> Out {
        tracing::warn!(conn = self.conn.id, uid = self.conn.uid, error = %e, "replay page failed");
        self.end(
            DisconnectCode::Unavailable,
            "The data store is unreachable; reconnect with Last-Event-ID to resume.",
        )
    }
}

/// A `resume_gap`'s sentence for a stretch the history does not hold, by
/// its times: its bounds may be positions no event has (the start of the
/// log, a `since=` point), which are not ids to show a client.
fn gap_message(gap: &crate::history::Gap) -> String {
    let to = gap.before.0 as f64 / 1000.0;
    if gap.after == EventId::ZERO {
        format!(
            "Events before {to:.3} (the event {}) are not held; continuing from it.",
            gap.before
        )
    } else {
        let from = gap.after.0 as f64 / 1000.0;
        format!(
            "Events from {from:.3} to {to:.3} (seconds since the epoch) are not held; continuing from the event {}.",
            gap.before
        )
    }
}
