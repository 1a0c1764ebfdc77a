//! What the index is shown of an event ([`Event`], [`StatusView`]) and the
//! number that names a subscription ([`SubId`]).

/// Identifies one subscription; the server chooses the numbers.
pub type SubId = u64;

/// The parts of a status the rules look at.
#[derive(Debug, Clone, Copy, Default)]
pub struct StatusView<'a> {
    /// Status id.
    pub id: u64,
    /// Author id.
    pub uid: u64,
    /// The text.
    pub message: &'a str,
    /// `(lat, lon)` when the status has coordinates.
    pub coords: Option<(f64, f64)>,
    /// Author of the status this one replies to.
    pub reply_to_uid: Option<u64>,
    /// Author of the status this one reposts.
    pub repost_of_uid: Option<u64>,
    /// Whether the author's account is private: then only user streams see it.
    pub private: bool,
    /// Whether it was posted in a group: then no user stream sees it (the
    /// group's stream is routed by the server).
    pub grouped: bool,
    /// For a reply to a private account's status: that account. Then a
    /// user stream gets it only if its user is that account or follows it
    /// too (the reply is no more visible than what it replies to).
    pub audience: Option<u64>,
}

/// An event as the index sees it.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A status was posted.
    Status(StatusView<'a>),
    /// A status was deleted.
    Delete {
        /// The deleted status.
        status_id: u64,
        /// Its author.
        uid: u64,
        /// Whether the author's account is private.
        private: bool,
        /// Whether it was posted in a group.
        grouped: bool,
    },
    /// `source` started (`following: true`) or stopped following `target`.
    Follow {
        /// The follower.
        source: u64,
        /// The followed user.
        target: u64,
        /// True for follow, false for unfollow.
        following: bool,
    },
    /// A notice for some users (a like of their status, a mention, a follow
    /// request, a repost of their status): their user streams, and the
    /// firehose when `public`.
    Notice {
        /// The users whose user streams get it.
        uids: &'a [u64],
        /// Whether it may reach the firehose (nothing private in it).
        public: bool,
    },
    /// Any other public event (a user signed up, ...): firehose only.
    Other,
}
