//! The payloads an op carries that an entity module also names, kept here so
//! that an op names no entity module.

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
