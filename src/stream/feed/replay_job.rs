//! A replay in progress ([`ReplayJob`]): what a feed holds between the pages
//! of a resume, and where the feed stands with live delivery ([`Lag`]) with
//! the page bounds of a lagging stream's replays (see `feed/lag.rs`).

use crate::hides::Hides;
use crate::metrics::global as metrics;
use crate::stream::frame::WarningCode;
use crate::stream::frame::{Control, EventId, Frame};
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
    /// so that a page holds about [`LAG_BYTES`] of matching
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
        code: WarningCode::ResumeGap,
        message: message.to_string(),
        percent_full: None,
        expires_at: None,
        oldest,
        behind: None,
    }
}

/// Bytes of matching events (all their encodings) a lagging stream's
/// replay page holds at most, but for its first event: with the one batch
/// being written into the socket, a lagging client holds at most 64 KiB
/// beyond its socket's buffers.
pub(super) const LAG_BYTES: usize = 32 * 1024;

/// Buffer entries a lagging stream's first page reads.
pub(super) const LAG_FIRST_PAGE: usize = 16;

/// Where a feed stands with live delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Lag {
    /// Live: the hub queues its events.
    #[default]
    Live,
    /// The hub drops its events; the replays read them.
    Behind,
    /// The hub queues again; the replays read up to where it began.
    Rejoining,
}

/// The bytes a frame holds.
pub(super) fn held(f: &Frame) -> usize {
    f.json.len() + f.sse.len() + f.ndjson.len()
}

/// The next page size of a lagging replay that read `entries` and held
/// `bytes`, cut or not.
pub(super) fn next_budget(entries: usize, bytes: usize, cut: bool, most: usize) -> usize {
    if cut {
        (entries / 2).max(1)
    } else if bytes < LAG_BYTES / 2 {
        (entries * 2).min(most)
    } else {
        entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lagging_page_shrinks_when_cut_and_grows_when_light() {
        assert_eq!(next_budget(16, LAG_BYTES, true, 256), 8);
        assert_eq!(next_budget(1, LAG_BYTES * 9, true, 256), 1, "never 0");
        assert_eq!(next_budget(16, 100, false, 256), 32);
        assert_eq!(next_budget(200, 100, false, 256), 256, "at most a page");
        assert_eq!(next_budget(16, LAG_BYTES - 1, false, 256), 16);
    }
}
