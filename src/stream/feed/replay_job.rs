//! A replay in progress ([`ReplayJob`]): what a feed holds between the pages
//! of a resume.

use crate::hides::Hides;
use crate::metrics::global as metrics;
use crate::stream::frame::{Control, EventId};
use crate::stream::replay_sight::ReplaySight;
use crate::stream::want::Want;
use std::sync::Arc;

/// A resume still being read from the buffer.
pub(super) struct ReplayJob {
    pub(super) stream: &'static str,
    /// What the subscription wants (a user rule follows the replayed
    /// follows; filter rules as they were when it began).
    pub(super) want: Want,
    /// The user's relations as the subscription began: what they hide is
    /// not replayed either.
    pub(super) hides: Arc<Hides>,
    /// The last id read.
    pub(super) cursor: EventId,
    /// Still reading the history on disk (then the replay buffer).
    pub(super) from_history: bool,
    /// Counts the replay among those reading the history while it does.
    pub(super) _reading: Option<Reading>,
    /// The next block of the history, read while this one is judged and
    /// written (at most one ahead: two blocks per replaying connection).
    pub(super) prefetch: Option<Prefetch>,
    /// What the reader may see now.
    pub(super) sight: ReplaySight,
    /// For a lagging stream: the buffer entries to read per page, adapted
    /// so that a page holds about [`super::lag::LAG_BYTES`] of matching
    /// events (a page is cut there, and no history block is read ahead).
    pub(super) budget: Option<usize>,
    /// At the buffer's end while the stream lags: waits there for the
    /// stream's other replays (see [`super::lag`]).
    pub(super) caught: bool,
}

/// A read of the history begun ahead: the position it reads after, and
/// the read.
pub(super) type Prefetch = (
    EventId,
    tokio::task::JoinHandle<
        std::io::Result<crate::history::Page<Arc<crate::stream::frame::Frame>>>,
    >,
);

/// A replay reading the history, counted in `firehose_history_replays`
/// while it lives.
pub(super) struct Reading;

impl Reading {
    pub(super) fn start() -> Reading {
        metrics().history_replays.inc();
        Reading
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        metrics().history_replays.dec();
    }
}

/// A `warning` `resume_gap` control event; `oldest`: the time of the
/// oldest event still held.
pub(super) fn resume_gap(message: &str, oldest: Option<f64>) -> Control {
    Control::Warning {
        code: "resume_gap",
        message: message.to_string(),
        percent_full: None,
        expires_at: None,
        oldest,
        behind: None,
    }
}
