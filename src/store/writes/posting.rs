//! What a post takes ([`PostOptions`]) and what it did ([`Posted`]): shared by
//! the one-script path and the chain.

/// How a status is posted.
#[derive(Debug, Clone, Copy, Default)]
pub struct PostOptions<'a> {
    /// The author's account is private: the status reaches only user
    /// streams and homes of followers.
    pub private: bool,
    /// The first answer is kept under this key for 24 h.
    pub idempotency_key: Option<&'a str>,
    /// The mentioned users who may see the status: it enters their mentions
    /// timelines and they get a `mention` event.
    pub mentioned: &'a [u64],
    /// For a repost: tell the original's author (a `repost` event).
    pub notify_original: bool,
}

/// What [`Statuses::post`](crate::store::entities::statuses::Statuses::post) did.
#[derive(Debug, Clone)]
pub enum Posted {
    /// Stored, and its events emitted.
    Created,
    /// The idempotency key was used before: the first answer (status JSON).
    Duplicate(String),
    /// A repost of a status the user had reposted already: that repost's id.
    Reposted(u64),
}
