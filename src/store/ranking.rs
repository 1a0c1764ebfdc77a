//! `order=top`: a home or hashtag timeline's newest 1,000 entries ranked by
//! `(1 + likes + 2·reposts + replies) / (2 + age_hours)^1.5`, highest first,
//! ties newest first; a repost ranks as the status it reposts. The entries
//! are read afresh on every request (one ZREVRANGE: no status missing or
//! stale), the statuses come from the status cache, and the counts from the
//! counts cache when they are at most [`RANK_COUNTS_TTL`] old, so a ranked
//! page reads from Redis only what changed or was never read.

use super::cache::CachedStatus;
use super::{parse_id, Store, StoreResult};
use crate::model::{now, Counts, HOME_CAP};
use redis::AsyncCommands;
use rustc_hash::FxHashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How old the counts a ranking uses may be.
pub const RANK_COUNTS_TTL: Duration = Duration::from_secs(5);

/// Which timeline to rank.
#[derive(Debug, Clone)]
pub enum Ranked {
    /// A user's home (each status once, as the latest order shows it).
    Home(u64),
    /// A hashtag's timeline (lowercased, without `#`).
    Tag(String),
}

/// One ranked entry: the status shown, its counts and its score.
pub type RankedEntry = (Arc<CachedStatus>, Counts, f64);

/// The score of a status with `counts` posted at `posted`, at `at`.
pub fn score(counts: Counts, posted: f64, at: f64) -> f64 {
    let age_hours = ((at - posted) / 3600.0).max(0.0);
    let engagement =
        1.0 + counts.likes as f64 + 2.0 * counts.reposts as f64 + counts.replies as f64;
    engagement / (2.0 + age_hours).powf(1.5)
}

impl Store {
    /// The `page`-th `count` entries of the ranked timeline.
    pub async fn ranked_page(
        &self,
        which: &Ranked,
        page: u64,
        count: usize,
    ) -> StoreResult<Vec<RankedEntry>> {
        let (key, dedupe) = match which {
            Ranked::Home(uid) => (self.keys.home(*uid), true),
            Ranked::Tag(tag) => (self.keys.tag(tag), false),
        };
        let mut conn = self.conn();
        let raw: Vec<String> = conn.zrevrange(&key, 0, HOME_CAP as isize - 1).await?;
        let ids: Vec<u64> = raw
            .iter()
            .map(|s| parse_id(s))
            .collect::<StoreResult<_>>()?;
        let found = self.statuses(&ids).await?;
        // Each entry ranks as the status it shows or reposts; a home shows
        // a status once (its newest entry).
        let mut entries: Vec<(Arc<CachedStatus>, u64)> = Vec::with_capacity(found.len());
        let mut seen = FxHashSet::default();
        for (_, status) in found {
            let Some(status) = status else { continue };
            if self.by_suspended(&status.status) {
                continue;
            }
            let rank_id = status
                .status
                .repost_of
                .as_deref()
                .and_then(|r| r.parse().ok())
                .unwrap_or_else(|| status.status.id.parse().unwrap_or(0));
            if dedupe && !seen.insert(rank_id) {
                continue;
            }
            entries.push((status, rank_id));
        }
        // The originals of reposts, for their counts and time.
        let originals: Vec<u64> = entries
            .iter()
            .filter(|(s, r)| s.status.id != r.to_string())
            .map(|(_, r)| *r)
            .collect();
        let posted_of: rustc_hash::FxHashMap<u64, f64> = self
            .statuses(&originals)
            .await?
            .into_iter()
            .filter_map(|(id, s)| s.map(|s| (id, s.status.posted)))
            .collect();
        let rank_ids: Vec<u64> = entries.iter().map(|(_, r)| *r).collect();
        let counts = self.rank_counts(&rank_ids).await?;
        let shown_ids: Vec<u64> = entries
            .iter()
            .map(|(s, _)| s.status.id.parse().unwrap_or(0))
            .collect();
        let shown_counts = self.rank_counts(&shown_ids).await?;
        let at = now();
        let mut ranked: Vec<(RankedEntry, u64)> = entries
            .into_iter()
            .zip(counts)
            .zip(shown_counts)
            .map(|(((status, rank_id), c), shown)| {
                let posted = posted_of
                    .get(&rank_id)
                    .copied()
                    .unwrap_or(status.status.posted);
                let entry_id: u64 = status.status.id.parse().unwrap_or(0);
                ((status, shown, score(c, posted, at)), entry_id)
            })
            .collect();
        // Highest first; ties newest first.
        ranked.sort_by(|((_, _, a), ia), ((_, _, b), ib)| b.total_cmp(a).then(ib.cmp(ia)));
        let skip = (page.saturating_sub(1) as usize).saturating_mul(count);
        Ok(ranked
            .into_iter()
            .skip(skip)
            .take(count)
            .map(|(e, _)| e)
            .collect())
    }

    /// Counts at most [`RANK_COUNTS_TTL`] old: from the counts cache, the
    /// rest read in one pipeline (and cached).
    async fn rank_counts(&self, ids: &[u64]) -> StoreResult<Vec<Counts>> {
        let at = Instant::now();
        let mut out: Vec<Option<Counts>> = ids
            .iter()
            .map(|id| self.counts_cache.get_within(*id, at, RANK_COUNTS_TTL))
            .collect();
        let missing: Vec<u64> = ids
            .iter()
            .zip(&out)
            .filter(|(_, c)| c.is_none())
            .map(|(id, _)| *id)
            .collect();
        if !missing.is_empty() {
            let fresh = self.fresh_counts(&missing).await?;
            let mut fresh = missing.iter().zip(fresh);
            for slot in out.iter_mut().filter(|c| c.is_none()) {
                if let Some((id, c)) = fresh.next() {
                    self.counts_cache.put(*id, c);
                    *slot = Some(c);
                }
            }
        }
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }
}
