//! The suspended users this process knows of ([`Suspended`]).

use std::collections::HashSet;

/// The suspended users, as this process knows them (loaded by the hub,
/// kept current from `suspended` events): read paths that do not read the
/// author's HASH (homes, stream replays) check it.
#[derive(Debug, Default, Clone)]
pub struct Suspended {
    ids: std::sync::Arc<std::sync::RwLock<HashSet<u64>>>,
}

impl Suspended {
    /// Whether `uid` is suspended.
    pub fn contains(&self, uid: u64) -> bool {
        self.ids
            .read()
            .map(|s| !s.is_empty() && s.contains(&uid))
            .unwrap_or(false)
    }

    /// Whether any of `uids` is.
    pub fn any(&self, uids: &[u64]) -> bool {
        self.ids
            .read()
            .map(|s| !s.is_empty() && uids.iter().any(|u| s.contains(u)))
            .unwrap_or(false)
    }

    /// Whether none is suspended (the common case: no check).
    pub fn is_empty(&self) -> bool {
        self.ids.read().map(|s| s.is_empty()).unwrap_or(true)
    }

    /// Marks `uid` suspended or not.
    pub fn set(&self, uid: u64, on: bool) {
        if let Ok(mut s) = self.ids.write() {
            if on {
                s.insert(uid);
            } else {
                s.remove(&uid);
            }
        }
    }

    /// Replaces the whole set.
    pub fn replace(&self, ids: HashSet<u64>) {
        if let Ok(mut s) = self.ids.write() {
            *s = ids;
        }
    }
}
