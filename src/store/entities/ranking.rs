//! `order=top`: a home or hashtag timeline's newest 1,000 entries ranked by
//! `(1 + likes + 2·reposts + replies) / (2 + age_hours)^1.5`, highest first,
//! ties newest first; a repost ranks as the status it reposts. A ranking's
//! rows (each entry's status, time and counts) are read at most every
//! 2.5 s per timeline and process (counts then at most 2.5 s old, so none
//! shown is older than 5 s), and again whenever the
//! timeline changed (its newest entry or its length, read on every request:
//! no status missing), so a ranked page costs one small Redis round trip,
//! the scores of at most 1,000 rows and the page's statuses.

use crate::model::{now, Counts, HOME_CAP};
use crate::store::caches::cache::CachedStatus;
use crate::store::caches::rank_cache::{Row, HALF_TTL};
use crate::store::entities::statuses::Statuses;
use crate::store::plumbing::error::{parse_id, StoreResult};
use redis::AsyncCommands;
use rustc_hash::FxHashSet;
use std::sync::Arc;
use std::time::Instant;

/// Which timeline to rank.
#[derive(Debug, Clone)]
pub enum Ranked {
    /// A user's home (each status once, as the latest order shows it).
    Home(u64),
    /// A hashtag's timeline (lowercased, without `#`).
    Tag(String),
}

/// One ranked entry: the status shown, its counts and its score.
pub(crate) type RankedEntry = (Arc<CachedStatus>, Counts, f64);

/// The score of a status with `counts` posted at `posted`, at `at`.
pub(crate) fn score(counts: Counts, posted: f64, at: f64) -> f64 {
    let age_hours = ((at - posted) / 3600.0).max(0.0);
    let engagement =
        1.0 + counts.likes as f64 + 2.0 * counts.reposts as f64 + counts.replies as f64;
    engagement / (2.0 + age_hours).powf(1.5)
}

impl Statuses<'_> {
    /// The `page`-th `count` entries of the ranked timeline.
    pub async fn ranked_page(
        self,
        which: &Ranked,
        page: u64,
        count: usize,
    ) -> StoreResult<Vec<RankedEntry>> {
        let (key, dedupe) = match which {
            Ranked::Home(uid) => (self.store.keys.home(*uid), true),
            Ranked::Tag(tag) => (self.store.keys.tag(tag), false),
        };
        let mut conn = self.store.conn();
        let (head, len): (Vec<String>, usize) = redis::pipe()
            .zrevrange(&key, 0, 0)
            .zcard(&key)
            .query_async(&mut conn)
            .await?;
        let version = (head.first().and_then(|h| h.parse().ok()), len);
        let started = Instant::now();
        let rows = match self.store.caches.ranked.get(&key, version, started) {
            Some(rows) => rows,
            None => {
                let rows = Arc::new(self.rank_rows(&key, dedupe).await?);
                self.store
                    .caches
                    .ranked
                    .put(&key, version, started, rows.clone());
                rows
            }
        };
        let at = now();
        let mut ranked: Vec<(f64, u64, usize)> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| (score(r.counts, r.posted, at), r.entry, i))
            .collect();
        // Highest first; ties newest first.
        ranked.sort_by(|(a, ia, _), (b, ib, _)| b.total_cmp(a).then(ib.cmp(ia)));
        let skip = (page.saturating_sub(1) as usize).saturating_mul(count);
        let chosen: Vec<(f64, u64, usize)> = ranked.into_iter().skip(skip).take(count).collect();
        let ids: Vec<u64> = chosen.iter().map(|(_, id, _)| *id).collect();
        let found = self.store.statuses().many(&ids).await?;
        Ok(chosen
            .into_iter()
            .zip(found)
            .filter_map(|((score, _, i), (_, status))| {
                // Deleted since, or by a suspended user: not shown.
                let status = status.filter(|s| !self.store.statuses().by_suspended(&s.status))?;
                Some((status, rows[i].shown, score))
            })
            .collect())
    }

    /// The rows of timeline `key`'s newest 1,000 entries (each status once
    /// when `dedupe`, as its newest entry).
    async fn rank_rows(self, key: &str, dedupe: bool) -> StoreResult<Vec<Row>> {
        let mut conn = self.store.conn();
        let raw: Vec<String> = conn.zrevrange(key, 0, HOME_CAP as isize - 1).await?;
        let ids: Vec<u64> = raw
            .iter()
            .map(|s| parse_id(s))
            .collect::<StoreResult<_>>()?;
        let found = self.store.statuses().many(&ids).await?;
        // Each entry ranks as the status it shows or reposts; a home shows
        // a status once (its newest entry).
        let mut entries: Vec<(Arc<CachedStatus>, u64)> = Vec::with_capacity(found.len());
        let mut seen = FxHashSet::default();
        for (_, status) in found {
            let Some(status) = status else { continue };
            if self.store.statuses().by_suspended(&status.status) {
                continue;
            }
            let rank_id = status
                .status
                .original_id()
                .unwrap_or_else(|| status.status.id.get());
            if dedupe && !seen.insert(rank_id) {
                continue;
            }
            entries.push((status, rank_id));
        }
        // The originals of reposts, for their counts and time.
        let originals: Vec<u64> = entries
            .iter()
            .filter(|(s, r)| s.status.id != *r)
            .map(|(_, r)| *r)
            .collect();
        let posted_of: rustc_hash::FxHashMap<u64, f64> = self
            .many(&originals)
            .await?
            .into_iter()
            .filter_map(|(id, s)| s.map(|s| (id, s.status.posted)))
            .collect();
        let rank_ids: Vec<u64> = entries.iter().map(|(_, r)| *r).collect();
        let counts = self.rank_counts(&rank_ids).await?;
        let shown_ids: Vec<u64> = entries.iter().map(|(s, _)| s.status.id.get()).collect();
        let shown_counts = self.rank_counts(&shown_ids).await?;
        Ok(entries
            .into_iter()
            .zip(counts)
            .zip(shown_counts)
            .map(|(((status, rank_id), counts), shown)| Row {
                entry: status.status.id.get(),
                posted: posted_of
                    .get(&rank_id)
                    .copied()
                    .unwrap_or(status.status.posted),
                counts,
                shown,
            })
            .collect())
    }

    /// Counts at most [`HALF_TTL`] old: from the counts cache, the
    /// rest read in one pipeline (and cached).
    async fn rank_counts(self, ids: &[u64]) -> StoreResult<Vec<Counts>> {
        let at = Instant::now();
        let mut out: Vec<Option<Counts>> = ids
            .iter()
            .map(|id| self.store.caches.counts.get_within(*id, at, HALF_TTL))
            .collect();
        let missing: Vec<u64> = ids
            .iter()
            .zip(&out)
            .filter(|(_, c)| c.is_none())
            .map(|(id, _)| *id)
            .collect();
        if !missing.is_empty() {
            let fresh = self.store.statuses().fresh_counts(&missing).await?;
            let mut fresh = missing.iter().zip(fresh);
            for slot in out.iter_mut().filter(|c| c.is_none()) {
                if let Some((id, c)) = fresh.next() {
                    self.store.caches.counts.put(*id, c);
                    *slot = Some(c);
                }
            }
        }
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }
}
