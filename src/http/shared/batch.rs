//! The answer of the calls that take many ids at once (follow or unfollow
//! many users, add or remove many list members).

use serde::Serialize;
use std::collections::BTreeMap;

/// Answer of a batch call: per id as sent, yes or no (what the call says
/// of it: whether it changed, whether it holds after the call).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct BatchReply {
    /// id -> yes or no.
    pub results: BTreeMap<String, bool>,
}
