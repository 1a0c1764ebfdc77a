//! Events in another API's framing, made before the hub routes them, so
//! that the hub writes them straight into that API's sockets as it writes
//! ours ([`stream::direct`](crate::stream::direct)): one encoding per event, shared.
//!
//! The other API (the Mastodon listener) installs a [`Translator`]; while
//! at least one of its streams is open ([`Translation::want`]), the
//! dispatcher hands each batch of events to it before routing the batch,
//! and the translator fills each event's [`Frame::translated`]. A
//! translation that takes longer than [`MOST_WAIT`] is left (those events
//! go to that API's streams through their tasks, which make them there), so
//! a slow translator delays our own streams by that much at most. With no
//! such stream open, nothing is translated and nothing waits.

use super::frame::Frame;
use futures::future::BoxFuture;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

/// The longest the hub waits for a batch's translations.
pub(crate) const MOST_WAIT: Duration = Duration::from_millis(50);

/// Makes events' translations (each frame's [`Frame::translated`]).
pub trait Translator: Send + Sync + 'static {
    /// Translates `frames` (a batch about to be routed).
    fn translate<'a>(&'a self, frames: &'a [Arc<Frame>]) -> BoxFuture<'a, ()>;
}

/// How a stream of the other API writes an event the hub hands it.
pub enum Picked {
    /// These bytes (the event's translation).
    Write(bytes::Bytes),
    /// Nothing: the event is not for this stream.
    Skip,
    /// Not translated (or not for the hub to judge): the stream's task
    /// takes it.
    Task,
}

/// A stream's choice of bytes for each event, made by the hub as it writes.
#[derive(Clone)]
pub struct Pick(Arc<dyn Fn(&Frame) -> Picked + Send + Sync>);

impl Pick {
    /// Picks by `choose`.
    pub fn new(choose: impl Fn(&Frame) -> Picked + Send + Sync + 'static) -> Pick {
        Pick(Arc::new(choose))
    }

    /// How `frame` is written.
    pub fn of(&self, frame: &Frame) -> Picked {
        (self.0)(frame)
    }
}

impl std::fmt::Debug for Pick {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pick")
    }
}

/// The hub's translator, and how many open streams want its work.
#[derive(Default)]
pub struct Translation {
    /// Held weakly: the other API's listener owns it (and through it the
    /// application's state, which owns the hub).
    translator: OnceLock<Weak<dyn Translator>>,
    wanted: AtomicUsize,
}

impl Translation {
    /// Installs the translator (once; a second is ignored), for as long as
    /// its owner keeps it.
    pub fn install(&self, translator: Weak<dyn Translator>) {
        let _ = self.translator.set(translator);
    }

    /// A stream that wants translations, for as long as the guard lives.
    pub fn want(self: &Arc<Self>) -> Wanted {
        self.wanted.fetch_add(1, Ordering::Relaxed);
        Wanted(self.clone())
    }

    /// The translator, when some open stream wants its work.
    pub fn active(&self) -> Option<Arc<dyn Translator>> {
        if self.wanted.load(Ordering::Relaxed) == 0 {
            return None;
        }
        self.translator.get()?.upgrade()
    }

    /// Translates `frames` if some stream wants it, waiting at most
    /// [`MOST_WAIT`].
    pub async fn run(&self, frames: &[Arc<Frame>]) {
        if frames.is_empty() {
            return;
        }
        if let Some(translator) = self.active() {
            if tokio::time::timeout(MOST_WAIT, translator.translate(frames))
                .await
                .is_err()
            {
                tracing::debug!(events = frames.len(), "translations left to the streams");
            }
        }
    }
}

/// An open stream's want of translations ([`Translation::want`]).
pub struct Wanted(Arc<Translation>);

impl Drop for Wanted {
    fn drop(&mut self) {
        self.0.wanted.fetch_sub(1, Ordering::Relaxed);
    }
}
