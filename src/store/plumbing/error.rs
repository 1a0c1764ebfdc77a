//! What a store call fails with ([`StoreError`]).

/// A store failure, mapped to HTTP by `ApiError`.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The named thing does not exist.
    #[error("no such {0}")]
    NotFound(&'static str),
    /// A uniqueness or state conflict: code and message.
    #[error("{1}")]
    Conflict(&'static str, String),
    /// The caller may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// The request names something the store cannot serve: code and message.
    #[error("{1}")]
    Invalid(&'static str, String),
    /// The store cannot serve now for a reason of its own (retry later).
    #[error("{0}")]
    Unavailable(String),
    /// Redis could not be reached or failed.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// A bound on what a user may hold is reached: code and message (429).
    #[error("{1}")]
    Limit(&'static str, String),
    /// Data in Redis was not what the code expects.
    #[error("{0}")]
    Internal(String),
}

impl StoreError {
    /// A follow (or follow request) refused: a block stands between the
    /// two users, whichever side made it.
    pub(crate) fn follow_blocked() -> Self {
        Self::Forbidden("You cannot follow this user: a block stands between you.".into())
    }
}

/// Result of store calls.
pub type StoreResult<T> = Result<T, StoreError>;

/// Parses a decimal id kept as a Redis string.
pub(crate) fn parse_id(s: &str) -> StoreResult<u64> {
    s.parse()
        .map_err(|_| StoreError::Internal(format!("bad id in redis: {s:?}")))
}
