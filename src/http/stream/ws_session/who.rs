//! Who runs a socket.

use crate::auth::AuthUser;
use crate::http::stream::open::Kind;

/// Who runs a socket: a multiplexed socket's user (its subscriptions read
/// the scopes and account; a refreshed token replaces it), or for a stream
/// path upgraded only the user's id and the stream (all a refresh checks),
/// so that such a socket holds no more than it uses.
pub(super) enum Who {
    /// The user, and the query's resume point if it named one (boxed: most
    /// sockets have none, and every socket's task holds this).
    Subscriber(AuthUser, Option<Box<QueryResume>>),
    Reader(u64, Kind),
}

impl Who {
    pub(super) fn uid(&self) -> u64 {
        match self {
            Who::Subscriber(auth, _) => auth.uid,
            Who::Reader(uid, _) => *uid,
        }
    }
}

/// Streams whose first subscription the query's resume point still
/// applies to, at most (past it, subscriptions start live unless their
/// message says otherwise).
const QUERY_RESUME_STREAMS: usize = 64;

/// The multiplexed socket's `last_event_id=`, `since=` and `count=` (or
/// `Last-Event-ID`): where each stream's first subscription starts when
/// its `subscribe` names no point of its own. A later subscription to a
/// stream already subscribed once starts live, so that a resubscription
/// does not serve again what the socket had.
#[derive(Debug)]
pub(super) struct QueryResume {
    pub(super) last_event_id: Option<String>,
    pub(super) since: Option<String>,
    pub(super) count: Option<String>,
    used: Vec<&'static str>,
}

impl QueryResume {
    /// The point the query names, if it names one.
    pub(super) fn new(
        last_event_id: Option<String>,
        since: Option<String>,
        count: Option<String>,
    ) -> Option<Box<QueryResume>> {
        let none = last_event_id.is_none() && since.is_none() && count.is_none();
        (!none).then(|| {
            Box::new(QueryResume {
                last_event_id,
                since,
                count,
                used: Vec::new(),
            })
        })
    }

    /// The query's point for a subscription to `stream`, once per stream.
    pub(super) fn take(
        &mut self,
        stream: &'static str,
    ) -> (Option<String>, Option<String>, Option<String>) {
        if self.used.contains(&stream) || self.used.len() >= QUERY_RESUME_STREAMS {
            return (None, None, None);
        }
        self.used.push(stream);
        (
            self.last_event_id.clone(),
            self.since.clone(),
            self.count.clone(),
        )
    }
}
