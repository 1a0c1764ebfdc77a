//! A lagging stream: one whose queue was full, so that the hub let it go
//! from live delivery (`ClientConn::offer`). It is not dropped. It reads on
//! from the buffer and the history at its client's pace, as a resume from
//! the first event it missed would, with at most [`LAG_BYTES`](super::replay_job::LAG_BYTES) of events
//! read ahead of its socket; then it rejoins live delivery with no gap and
//! no duplicate.
//!
//! The steps: the feed sees the hub's flag and sends `warning` `lagging`
//! (how far behind, in seconds); every subscription without a replay gets
//! one from just before the first missed event (or its floor, if that is
//! later). Each replay that reaches the buffer's end waits there ("caught")
//! for the others; once all have, the feed clears the flag, so the hub
//! queues its events again, and the replays read the buffer once more from
//! where they stopped: every event the hub dropped was added to the buffer
//! before it was published, so before the flag was cleared, and that read
//! finds it. Their floors then drop the live events they already sent, and
//! `warning` `caught_up` goes out. A queue that fills again meanwhile
//! starts over, with no second `lagging`.

use super::replay_job::Lag;
use super::{Feed, Sub};
use crate::metrics::{global as metrics, inc};
use crate::store::StoreResult;
use crate::stream::frame::WarningCode;
use crate::stream::frame::{Control, EventId};
use std::sync::Arc;

impl Feed {
    /// Whether the hub drops this stream's events or its replays are still
    /// catching up.
    pub(super) fn lags(&self) -> bool {
        self.lag != Lag::Live || self.conn.is_lagging()
    }

    /// The hub let the stream go from live delivery and the feed has not
    /// yet taken it up: replays from the first event it missed for every
    /// subscription that has none, and the `lagging` warning if it was
    /// live.
    pub(super) async fn leave_live(&mut self) -> StoreResult<()> {
        let Some(from) = self.conn.lag_start() else {
            return Ok(());
        };
        // Relations now: what they hide is not replayed.
        let hides = Arc::new(self.hub.store().relations().hides(self.conn.uid).await?);
        // What the hub left queued (no event: those it let go) comes first:
        // the rest of a begun write, a `falling_behind`.
        self.take_controls();
        if self.lag == Lag::Live {
            let behind = (crate::model::now() - from.0 as f64 / 1000.0).max(0.0);
            self.push_control(Control::Warning {
                code: WarningCode::Lagging,
                message: format!(
                    "The stream is {behind:.1} s behind live delivery; it goes on from the history at the pace you read, and says caught_up when it is live again."
                ),
                percent_full: None,
                expires_at: None,
                oldest: None,
                behind: Some((behind * 1000.0).round() / 1000.0),
            });
        }
        self.lag = Lag::Behind;
        for job in &mut self.replays {
            job.caught = false;
        }
        let after = from.just_before();
        let fresh: Vec<(&'static str, crate::stream::want::Want, EventId)> = self
            .subs
            .iter()
            .filter(|sub| !self.replays.iter().any(|job| job.stream == sub.stream))
            .map(|sub: &Sub| {
                (
                    sub.stream,
                    sub.want.clone(),
                    sub.floor.max(Some(after)).unwrap_or(after),
                )
            })
            .collect();
        for (stream, want, cursor) in fresh {
            self.queue_replay(stream, want, hides.clone(), cursor)?;
        }
        Ok(())
    }

    /// Takes what the queue holds into `pending`: while the stream is
    /// behind, the hub queues no event, so only its control events (a
    /// `token_expiring`, the rest of a begun write), which go out between
    /// the replay's pages rather than after it.
    pub(super) fn take_controls(&mut self) {
        while let Some((d, left)) = self.conn.try_take() {
            if let Some(out) = self.accept(d, left) {
                self.pending.push_back(out);
            }
        }
    }

    /// Moves the first replay that has not reached the buffer's end to the
    /// front; when every replay has, the stream rejoins live delivery
    /// (see the module's steps). False when there is nothing to read.
    pub(super) fn next_to_read(&mut self) -> bool {
        for _ in 0..self.replays.len() {
            match self.replays.front() {
                Some(job) if job.caught => self.replays.rotate_left(1),
                Some(_) => return true,
                None => return false,
            }
        }
        if self.replays.is_empty() {
            return false;
        }
        self.conn.rejoin();
        self.lag = Lag::Rejoining;
        for job in &mut self.replays {
            job.caught = false;
        }
        true
    }

    /// The replays of a rejoining stream are done: it is live.
    pub(super) fn rejoined(&mut self) {
        self.lag = Lag::Live;
        inc(&metrics().caught_up, 1);
        if let [sub] = self.subs.as_slice() {
            if let Some(floor) = sub.floor {
                self.conn.raise_direct_floor(floor);
            }
        }
        self.push_control(Control::warning(
            WarningCode::CaughtUp,
            "The stream has caught up and is live again.",
        ));
    }
}
