//! Streamed events' payloads, made once per process and shared by every
//! Mastodon stream that carries the event (`streaming`): at most
//! [`MOST_PAYLOADS`], the oldest made forgotten first (a stream reads an
//! event within moments of the others, or in a replay, which makes it
//! again).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// Payloads kept for other connections.
const MOST_PAYLOADS: usize = 4_096;

/// A Mastodon event: its name and its payload (a JSON text).
pub(super) type Made = (&'static str, Arc<str>);

/// Payloads by key (URL base and event), and the keys in the order made.
type Kept = (HashMap<String, Option<Made>>, VecDeque<String>);

/// The payloads kept (`Mastodon::payloads`).
#[derive(Default)]
pub(crate) struct Payloads(Mutex<Kept>);

impl Payloads {
    /// The payload made for `key` (`Some(None)`: the event is nothing to
    /// a Mastodon client), if it is still kept.
    pub(super) fn get(&self, key: &str) -> Option<Option<Made>> {
        self.0.lock().ok()?.0.get(key).cloned()
    }

    /// Keeps `made` for `key`, forgetting the oldest past the bound.
    pub(super) fn put(&self, key: String, made: Option<Made>) {
        let Ok(mut kept) = self.0.lock() else {
            return;
        };
        let (map, order) = &mut *kept;
        if map.insert(key.clone(), made).is_none() {
            order.push_back(key);
        }
        while order.len() > MOST_PAYLOADS {
            if let Some(old) = order.pop_front() {
                map.remove(&old);
            }
        }
    }
}
