//! Rate-limit buckets in Redis, so every process counts the same requests
//! (`rate_limits` decides what to count).

use crate::store::handle::Store;
use crate::store::plumbing::error::StoreResult;

/// Takes a token from the bucket of `what` (`signup`, `login`, `write`,
/// `stream`) for `who` (an address or a user id): `None` when taken,
/// else the seconds until one is back. One EVALSHA (GET, SET, TIME
/// inside).
pub(crate) async fn take(
    store: &Store,
    what: &str,
    who: &str,
    per_sec: f64,
    burst: f64,
    take: bool,
) -> StoreResult<Option<u64>> {
    let mut conn = store.conn();
    let wait: u64 = store
        .scripts
        .rate_take
        .key(store.keys.rate(what, who))
        .arg(per_sec)
        .arg(burst)
        .arg(if take { "1" } else { "0" })
        .invoke_async(&mut conn)
        .await?;
    Ok((wait > 0).then_some(wait))
}
