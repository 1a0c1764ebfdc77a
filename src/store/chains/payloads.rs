//! The payloads an op carries that an entity module also names, kept here so
//! that an op names no entity module, and the account deletion's, which
//! starts other ops (so `op.rs`, which names every payload, and the
//! deletion's steps, which name `Op`, do not lean on each other).

use serde::{Deserialize, Serialize};

/// What a message that starts a conversation also makes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewConversation {
    /// `direct` or `group`.
    pub kind: String,
    /// A group's title.
    pub title: Option<String>,
    /// Every participant, the sender included.
    pub members: Vec<u64>,
}

/// An account deleted (`chains/account.rs`): everything it holds
/// undone as its own actions would undo it.
/// (`Op::DeleteAccount`'s payload, as recorded in the outbox.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeleteAccountOp {
    /// The user.
    pub uid: u64,
    /// Their login, as typed (reserved for a while).
    pub login: String,
    /// Their email, as typed (freed at once).
    pub email: String,
    /// Time of the deletion.
    pub at: f64,
}
