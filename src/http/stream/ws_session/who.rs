//! Who runs a socket.

use crate::auth::AuthUser;

/// Who runs a socket: a multiplexed socket's user (its subscriptions read
/// the scopes and account; a refreshed token replaces it), or for a stream
/// path upgraded only the user's id (all a refresh checks), so that such
/// a socket holds no more than it uses.
pub(super) enum Who {
    Subscriber(AuthUser),
    Reader(u64),
}

impl Who {
    pub(super) fn uid(&self) -> u64 {
        match self {
            Who::Subscriber(auth) => auth.uid,
            Who::Reader(uid) => *uid,
        }
    }
}
