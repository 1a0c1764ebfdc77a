//! Rankable rows of recently ranked timelines, kept per process
//! ([`RankCache`]).

use crate::model::Counts;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Half of it for the counts when rows are read, half for the rows' age,
/// so no count shown is older than 5 s.
pub(crate) const HALF_TTL: Duration = Duration::from_millis(2500);

/// One entry of a ranked timeline, as a ranking needs it: which status it
/// shows, the status it ranks as, that one's time and counts, and the
/// counts shown with the entry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Row {
    pub(crate) entry: u64,
    pub(crate) posted: f64,
    pub(crate) counts: Counts,
    pub(crate) shown: Counts,
}

/// A timeline's rows, and the version of the timeline they were read at
/// (its newest entry and its length: any add, removal or trim changes one).
pub(crate) struct Rows {
    pub(crate) version: (Option<u64>, usize),
    pub(crate) built: Instant,
    pub(crate) rows: Arc<Vec<Row>>,
}

/// Rankable rows of recently ranked timelines (per process): a ranked page
/// reads only the timeline's version from Redis while its rows are younger
/// than [`HALF_TTL`] (their counts were at most as old when
/// read) and the timeline has not changed, scores them afresh and reads the page's statuses alone.
#[derive(Default)]
pub(crate) struct RankCache {
    pub(crate) rows: std::sync::Mutex<rustc_hash::FxHashMap<String, Rows>>,
}

/// Timelines whose rows are kept (each up to 1,000 rows of 48 bytes: at
/// most ~50 MB).
pub(crate) const RANK_CACHE_TIMELINES: usize = 1000;

impl RankCache {
    pub(crate) fn get(
        &self,
        key: &str,
        version: (Option<u64>, usize),
        at: Instant,
    ) -> Option<Arc<Vec<Row>>> {
        let rows = self.rows.lock().ok()?;
        let r = rows.get(key)?;
        (r.version == version && at.duration_since(r.built) < HALF_TTL).then(|| r.rows.clone())
    }

    pub(crate) fn put(
        &self,
        key: &str,
        version: (Option<u64>, usize),
        built: Instant,
        rows: Arc<Vec<Row>>,
    ) {
        let Ok(mut all) = self.rows.lock() else {
            return;
        };
        if all.len() >= RANK_CACHE_TIMELINES && !all.contains_key(key) {
            // Drop what is too old to serve; if none is, an arbitrary one.
            all.retain(|_, r| built.duration_since(r.built) < HALF_TTL);
            if all.len() >= RANK_CACHE_TIMELINES {
                if let Some(k) = all.keys().next().cloned() {
                    all.remove(&k);
                }
            }
        }
        all.insert(
            key.to_string(),
            Rows {
                version,
                built,
                rows,
            },
        );
    }
}
