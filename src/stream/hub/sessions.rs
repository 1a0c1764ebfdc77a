//! Which session each open connection lives under, and the sessions
//! revoked lately: what a logout needs to end every stream of a session,
//! including one whose token was checked just before the logout and whose
//! connection opens just after it, or one whose token was refreshed on its
//! socket since it opened.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long a revoked session is remembered for connections still opening.
pub(super) const REVOKED_MEMORY: Duration = Duration::from_secs(60);

#[derive(Default)]
pub(super) struct Sessions {
    /// Open connections by session id.
    by_session: HashMap<String, Vec<u64>>,
    /// Sessions revoked in the last [`REVOKED_MEMORY`], with when.
    revoked: HashMap<String, Instant>,
    /// The session of each connection whose token was refreshed (else the
    /// one it opened with).
    refreshed: HashMap<u64, String>,
}

impl Sessions {
    /// Connection `id` opened under `session`; false when that session
    /// was revoked already (then the connection is to end at once).
    pub(super) fn open(&mut self, id: u64, session: &str) -> bool {
        self.by_session
            .entry(session.to_owned())
            .or_default()
            .push(id);
        !self.is_revoked(session)
    }

    pub(super) fn is_revoked(&self, session: &str) -> bool {
        self.revoked.contains_key(session)
    }

    /// Connection `id`, opened under `opened`, now lives under `session`.
    pub(super) fn refresh(&mut self, id: u64, opened: &str, session: String) {
        let old = self
            .refreshed
            .insert(id, session.clone())
            .unwrap_or_else(|| opened.to_owned());
        self.leave(id, &old);
        self.by_session.entry(session).or_default().push(id);
    }

    /// Connection `id`, opened under `opened`, closed.
    pub(super) fn close(&mut self, id: u64, opened: &str) {
        let session = self
            .refreshed
            .remove(&id)
            .unwrap_or_else(|| opened.to_owned());
        self.leave(id, &session);
    }

    /// Session `sid` ended: remembered for connections still opening;
    /// answers the connections open under it.
    pub(super) fn revoke(&mut self, sid: String) -> Vec<u64> {
        let now = Instant::now();
        self.revoked
            .retain(|_, at| now.duration_since(*at) < REVOKED_MEMORY);
        let ids = self.by_session.get(&sid).cloned().unwrap_or_default();
        self.revoked.insert(sid, now);
        ids
    }

    fn leave(&mut self, id: u64, session: &str) {
        if let Some(ids) = self.by_session.get_mut(session) {
            ids.retain(|c| *c != id);
            if ids.is_empty() {
                self.by_session.remove(session);
            }
        }
    }
}
