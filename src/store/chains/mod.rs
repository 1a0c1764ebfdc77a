//! Each write's chain of single-slot steps, one module a chain, each with
//! the payload its op records in the outbox (`FollowOp`, `PostOp`, ...):
//! the request's path and a worker's run the same function with the same
//! payload. The outbox (`outbox`) records a write before its first step
//! and retires it, with its events, after the last; every step here is
//! idempotent, so a worker may run a chain again from the start. A chain
//! is its payload's `run(store, entry)` (`PostOp::run`, as mini-redis's
//! commands `apply`), takes its entry (`outbox::entry`) and names neither
//! the `Op` enum nor another chain's payload; `Op::run` dispatches to it
//! for a worker, and the entity modules start writes (build the op,
//! record it, run its chain).

pub mod account;
pub mod delete;
pub(crate) mod edit;
pub(crate) mod end_sessions;
pub(crate) mod entry;
pub(crate) mod finish;
pub(crate) mod follow;
pub(crate) mod like;
pub(crate) mod message;
pub(crate) mod op;
pub mod payloads;
pub(crate) mod post;
pub(crate) mod relate;
pub(crate) mod rename;
pub(crate) mod request;
pub mod signup;
pub(crate) mod suspend;
pub(crate) mod undo;

use super::handle::Store;
use super::plumbing::error::StoreResult;
use super::plumbing::keys::trend_groups;

/// Most entries kept in a mentions or hashtag timeline.
pub(crate) const INDEX_CAP: usize = 10_000;
/// Seconds a trending bucket (one minute of hashtag counts) is kept: the
/// longest window, plus a margin.
pub(crate) const TREND_BUCKET_TTL: u64 = 86_400 + 120;

/// Hashtags lowercased, each once, in order.
pub(crate) fn unique_tags(hashtags: &[String]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    hashtags
        .iter()
        .map(|t| t.to_lowercase())
        .filter(|t| seen.insert(t.clone()))
        .collect()
}

/// Whether a status is counted into an index (posted) or out of it (deleted).
#[derive(Debug, Clone, Copy)]
enum Count {
    In,
    Out,
}

impl Count {
    /// The scripts' argument: `1` counts in, `0` out.
    fn flag(self) -> &'static str {
        match self {
            Count::In => "1",
            Count::Out => "0",
        }
    }
}

/// A reply enters or leaves its parent's replies.
async fn count_reply(
    store: &Store,
    parent: u64,
    sid: u64,
    score: u64,
    count: Count,
) -> StoreResult<()> {
    let mut conn = store.conn();
    let _: i64 = store
        .scripts
        .replies_count
        .key(store.keys.status(parent))
        .key(store.keys.replies(parent))
        .arg(count.flag())
        .arg(sid)
        .arg(score)
        .invoke_async(&mut conn)
        .await?;
    Ok(())
}

/// A public status's hashtags counted in (or out of) its minute's
/// trending bucket, once: one call in each trending partition its tags
/// fall in (each call idempotent in its own slot).
async fn count_trend(
    store: &Store,
    member: &str,
    posted: f64,
    tags: &[String],
    count: Count,
) -> StoreResult<()> {
    let minute = (posted / 60.0) as u64;
    let mut conn = store.conn();
    for (p, group) in trend_groups(tags) {
        let mut inv = store.scripts.trend.prepare_invoke();
        inv.key(store.keys.trend_bucket(p, minute))
            .key(store.keys.trend_seen(p, minute))
            .arg(count.flag())
            .arg(member)
            .arg(TREND_BUCKET_TTL);
        for t in &group {
            inv.arg(t);
        }
        let _: i64 = inv.invoke_async(&mut conn).await?;
    }
    Ok(())
}

/// The repost mapping of `original` (`repost_claim.lua`, the original's
/// slot): `uid`'s repost `sid` claimed (`claim`) or released. The
/// script's answer: `ok`, or `reposted` with the first repost's id, or
/// `missing`.
pub(super) async fn repost_claim(
    store: &Store,
    original: u64,
    uid: u64,
    sid: u64,
    claim: bool,
) -> StoreResult<Vec<String>> {
    let mut conn = store.conn();
    Ok(store
        .scripts
        .repost_claim
        .key(store.keys.status(original))
        .key(store.keys.reposters(original))
        .arg(if claim { "1" } else { "0" })
        .arg(uid)
        .arg(sid)
        .invoke_async(&mut conn)
        .await?)
}
