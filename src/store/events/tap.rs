//! The events this process's hub hands on, in log order, for the work that
//! follows the log here (the history's archiver, the notifier): what the
//! live merge and its catch-ups have already read, so that following the
//! log costs Redis nothing while it is in step.
//!
//! Each event goes with the one handed on before it ([`Tapped::after`]): a
//! reader that has everything up to `last` takes the events that follow
//! on from it ([`TapReader::after`]), and reads the buffer instead
//! (`Events::following`) whenever they do not (it fell more than
//! [`TAP_CAPACITY`] behind, the hub started again from the newest entry,
//! or a catch-up gave up): the tap is a shortcut, never the only way.

use crate::store::log::id::EventId;
use std::sync::Arc;
use tokio::sync::broadcast;

/// Events the tap holds for its slowest reader; one further behind reads
/// the buffer.
pub const TAP_CAPACITY: usize = 8192;

/// An event handed on, and the one before it (`None`: the hub does not
/// know what came before).
#[derive(Debug, Clone)]
pub struct Tapped {
    pub after: Option<EventId>,
    pub id: EventId,
    pub json: Arc<str>,
}

/// The sending half, held by the hub (a clone sends to the same readers).
#[derive(Clone)]
pub struct Tap(broadcast::Sender<Tapped>);

impl Default for Tap {
    fn default() -> Self {
        Tap(broadcast::channel(TAP_CAPACITY).0)
    }
}

impl Tap {
    /// A reader of every event sent from now on.
    pub fn reader(&self) -> TapReader {
        TapReader {
            rx: self.0.subscribe(),
            stash: None,
        }
    }

    /// Sends an event, with the one handed on before it.
    pub fn send(&self, after: Option<EventId>, id: EventId, json: Arc<str>) {
        // No reader: nothing to do.
        let _ = self.0.send(Tapped { after, id, json });
    }
}

/// Why the tap cannot give what follows a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Untapped {
    /// Events between were not handed on here, or were let go: read them
    /// from the buffer.
    Gap,
    /// The hub is gone.
    Closed,
}

/// A reader of the tap.
pub struct TapReader {
    rx: broadcast::Receiver<Tapped>,
    /// An event taken that did not follow on: the next call's first.
    stash: Option<Tapped>,
}

impl TapReader {
    /// Waits for events after `last` and gives, in order, at most `most`
    /// of those that follow on from it (each the next after the one
    /// before); [`Untapped::Gap`] when the first one does not. Cancel-safe:
    /// its only wait is the tap's own.
    pub async fn after(
        &mut self,
        last: EventId,
        most: usize,
    ) -> Result<Vec<(EventId, String)>, Untapped> {
        let first = loop {
            let next = match self.stash.take() {
                Some(t) => t,
                None => match self.rx.recv().await {
                    Ok(t) => t,
                    Err(broadcast::error::RecvError::Lagged(_)) => return Err(Untapped::Gap),
                    Err(broadcast::error::RecvError::Closed) => return Err(Untapped::Closed),
                },
            };
            if next.id > last {
                break next;
            }
        };
        if first.after != Some(last) {
            return Err(Untapped::Gap);
        }
        let mut out = vec![(first.id, first.json.to_string())];
        let mut at = first.id;
        while out.len() < most.max(1) {
            match self.rx.try_recv() {
                Ok(t) if t.id <= at => {}
                Ok(t) if t.after == Some(at) => {
                    at = t.id;
                    out.push((t.id, t.json.to_string()));
                }
                Ok(t) => {
                    self.stash = Some(t);
                    break;
                }
                // Lagged is told by the next call's `recv`, as a gap.
                Err(_) => break,
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u64) -> EventId {
        EventId(n, 0, 0)
    }

    #[tokio::test]
    async fn a_reader_takes_the_run_that_follows_on_and_is_told_of_a_gap() {
        let tap = Tap::default();
        let mut reader = tap.reader();
        tap.send(Some(id(1)), id(2), "{\"id\":\"2-0\"}".into());
        tap.send(Some(id(2)), id(3), "{\"id\":\"3-0\"}".into());
        // Event 5 does not follow 3 (4 was never handed on here).
        tap.send(Some(id(4)), id(5), "{\"id\":\"5-0\"}".into());
        let run = reader.after(id(1), 100).await.unwrap();
        assert_eq!(run.iter().map(|e| e.0).collect::<Vec<_>>(), [id(2), id(3)]);
        assert_eq!(reader.after(id(3), 100).await, Err(Untapped::Gap));
        // Read from the buffer up to 4: 5 follows on.
        tap.send(Some(id(4)), id(5), "{\"id\":\"5-0\"}".into());
        let run = reader.after(id(4), 100).await.unwrap();
        assert_eq!(run.iter().map(|e| e.0).collect::<Vec<_>>(), [id(5)]);
    }

    #[tokio::test]
    async fn events_at_or_before_the_point_are_passed_over() {
        let tap = Tap::default();
        let mut reader = tap.reader();
        for n in 1..=4 {
            tap.send(Some(id(n - 1)), id(n), "{}".into());
        }
        let run = reader.after(id(2), 100).await.unwrap();
        assert_eq!(run.iter().map(|e| e.0).collect::<Vec<_>>(), [id(3), id(4)]);
    }

    #[tokio::test]
    async fn a_reader_that_fell_too_far_behind_reads_the_buffer() {
        let tap = Tap::default();
        let mut reader = tap.reader();
        for n in 1..=(TAP_CAPACITY as u64 + 10) {
            tap.send(Some(id(n - 1)), id(n), "{}".into());
        }
        assert_eq!(reader.after(id(0), 100).await, Err(Untapped::Gap));
    }
}
