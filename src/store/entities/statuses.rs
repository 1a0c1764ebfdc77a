//! Statuses: post, delete, read, and the profile and home timelines.

use crate::model::Id;
use crate::model::{timeline_score, Counts, Status, HOME_CAP};
use crate::store::caches::cache::CachedStatus;
use crate::store::chains::delete::DeleteOp;
use crate::store::chains::post::{post_whole, posts_whole};
use crate::store::chains::post::{PostEnd, PostOp, Whole};
use crate::store::handle::Store;
use crate::store::outbox::{Begun, Op, Owed};
pub(crate) use crate::store::paging::Page;
use crate::store::plumbing::error::{StoreError, StoreResult};
use crate::store::writes::posting::{PostOptions, Posted};
use redis::AsyncCommands;
use std::collections::HashMap;
use std::sync::Arc;

/// What a replay asks of a status that still exists: when it was last
/// edited (`None`: never).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StatusNow {
    pub edited_at: Option<f64>,
}

/// A status as answered: its cached part and its current counts.
pub(crate) type Shown = (Arc<CachedStatus>, Counts);

/// Which timeline.
#[derive(Debug, Clone)]
pub enum Timeline {
    /// A user's own statuses.
    Profile(u64),
    /// Statuses mentioning a user.
    Mentions(u64),
    /// Statuses carrying a hashtag (lowercased, without `#`).
    Tag(String),
    /// Statuses a user likes, newest like first.
    Likes(u64),
    /// A group's statuses.
    Group(u64),
}

/// Statuses and the timelines read from them (`Store::statuses`).
#[derive(Clone, Copy)]
pub struct Statuses<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Statuses<'_> {
    /// Stores a status whose id came from [`Mint::snowflake`](crate::store::writes::next_ids::Mint::snowflake), emits its
    /// events and fans it out (a chain of single-slot steps driven from the
    /// outbox: see `outbox`; on one Redis a plain post is one script,
    /// [`post_whole`]). With an idempotency key already used by this
    /// author within [`IDEMPOTENCY_TTL`](crate::store::outbox::IDEMPOTENCY_TTL), creates nothing and returns the
    /// first answer (finishing the first write first if it is still under
    /// way).
    pub async fn post(self, status: &Status, opts: &PostOptions<'_>) -> StoreResult<Posted> {
        let uid = status.uid.get();
        let mut fields: HashMap<String, String> = status
            .to_fields()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        fields.insert("id".into(), status.id.to_string());
        fields.insert(
            "mention_uids".into(),
            serde_json::to_string(opts.mentioned).unwrap_or_default(),
        );
        if posts_whole(self.store, status) {
            match post_whole(self.store, status, opts, &fields).await? {
                Some(Whole::Done(posted)) => {
                    if matches!(posted, Posted::Created) {
                        self.remember_posted(&fields);
                    }
                    return Ok(posted);
                }
                Some(Whole::Duplicate(first)) => return self.first_answer(first).await,
                None => {}
            }
        }
        let post = PostOp {
            fields,
            private: opts.private,
            mentioned: opts.mentioned.to_vec(),
            notify_original: opts.notify_original,
            idempotency_key: opts.idempotency_key.map(String::from),
        };
        let op = Op::Post(post.clone());
        let key = opts
            .idempotency_key
            .map(|k| self.store.keys.idempotency(uid, k));
        let owed = match self.store.outbox().begin(&op, key.as_deref()).await? {
            Begun::Started(owed) => *owed,
            Begun::Duplicate(first) => return self.first_answer(first).await,
        };
        match post.run(self.store, &owed.entry).await? {
            PostEnd::Created => {
                self.remember_posted(&post.fields);
                Ok(Posted::Created)
            }
            PostEnd::Reposted(id) => Ok(Posted::Reposted(id)),
            PostEnd::Missing(what) => Err(StoreError::NotFound(what)),
        }
    }

    /// Puts a status just written into the status cache, as a read of its
    /// HASH (`fields`, exactly what was written) would: the likes, replies
    /// and reposts that follow a post then find it without a command.
    fn remember_posted(self, fields: &HashMap<String, String>) {
        if let (Some(status), Some(sid)) = (
            Status::from_hash(fields),
            fields.get("id").and_then(|id| id.parse().ok()),
        ) {
            self.store.caches.status.put(sid, CachedStatus::new(status));
        }
    }

    /// The answer to a post whose Idempotency-Key was used before: the
    /// first answer, or, when the first write is under way (or died), that
    /// write finished first and its status.
    async fn first_answer(self, first: String) -> StoreResult<Posted> {
        let Some(pending) = first.strip_prefix("pending|") else {
            return Ok(Posted::Duplicate(first));
        };
        let owed = Owed::decode_pending(pending, self.store.outbox().lease_deadline())
            .ok_or_else(|| StoreError::Internal("bad pending idempotency entry".into()))?;
        self.store.outbox().complete(&owed).await?;
        let Op::Post(post) = &owed.op else {
            return Err(StoreError::Internal("idempotency key of a non-post".into()));
        };
        let first = Status::from_hash(&post.fields)
            .and_then(|s| serde_json::to_string(&s).ok())
            .unwrap_or_default();
        Ok(Posted::Duplicate(first))
    }

    /// Deletes a status of `uid`'s: `NotFound` if there is none, `Forbidden`
    /// if someone else wrote it. Emits the delete event and fans it out.
    pub async fn delete(self, sid: u64, uid: u64, private: bool, now: f64) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let h: HashMap<String, String> = conn.hgetall(self.store.keys.status(sid)).await?;
        let Some(status) = Status::from_hash(&h) else {
            return Err(StoreError::NotFound("status"));
        };
        if status.uid != uid {
            return Err(StoreError::Forbidden(
                "Only the author may delete a status.".into(),
            ));
        }
        let op = DeleteOp {
            sid,
            uid,
            private,
            at: now,
        };
        let owed = self.store.outbox().start(Op::Delete(op.clone())).await?;
        op.run(self.store, &owed.entry).await
    }

    /// The repost of `sid` by `uid`, if there is one.
    pub async fn repost_by(self, sid: u64, uid: u64) -> StoreResult<Option<u64>> {
        let mut conn = self.store.conn();
        let id: Option<String> = conn.hget(self.store.keys.reposters(sid), uid).await?;
        Ok(id.and_then(|id| id.parse().ok()))
    }

    /// One status as [`Statuses::get`] reads it, but with the counts it was
    /// cached with, which may be stale: for a writer that needs who wrote it
    /// and where, not how many like it (a cached status costs no command).
    pub async fn get_uncounted(self, sid: u64) -> StoreResult<Status> {
        match self.store.caches.status.get(sid) {
            Some(s) => Ok(s.status.clone()),
            None => self.get(sid).await,
        }
    }

    /// The account whose followers alone may see `status` now: the one it
    /// was posted for (a reply to a private account's status, or to such a
    /// reply), else the author it replies to when that account has been
    /// made private since (their own replies aside).
    pub async fn audience_now(self, status: &Status) -> StoreResult<Option<u64>> {
        if let Some(a) = status.audience {
            return Ok(Some(a.get()));
        }
        let author = status.uid.get();
        let Some(parent) = status.reply_to_uid.map(Id::get).filter(|p| *p != author) else {
            return Ok(None);
        };
        match self.store.users().get(parent).await {
            Ok(user) if user.private => Ok(Some(parent)),
            Ok(_) | Err(StoreError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// One status, with its counts as they are now.
    pub async fn get(self, sid: u64) -> StoreResult<Status> {
        if let Some(s) = self.store.caches.status.get(sid) {
            let counts = self.fresh_counts(&[sid]).await?;
            return Ok(s.with_counts(counts.first().copied().unwrap_or_default()));
        }
        let mut conn = self.store.conn();
        let h: HashMap<String, String> = conn.hgetall(self.store.keys.status(sid)).await?;
        let status = Status::from_hash(&h).ok_or(StoreError::NotFound("status"))?;
        self.store
            .caches
            .status
            .put(sid, CachedStatus::new(status.clone()));
        Ok(status)
    }

    /// The counts of these statuses, in order (zeros for missing ones):
    /// those read in the last second from the counts cache, the rest in one
    /// pipeline.
    pub async fn counts(self, ids: &[u64]) -> StoreResult<Vec<Counts>> {
        let now = std::time::Instant::now();
        let mut found: Vec<Option<Counts>> = ids
            .iter()
            .map(|id| self.store.caches.counts.get(*id, now))
            .collect();
        let missing: Vec<u64> = ids
            .iter()
            .zip(&found)
            .filter(|(_, c)| c.is_none())
            .map(|(id, _)| *id)
            .collect();
        let mut read = self.fresh_counts(&missing).await?.into_iter();
        for (id, slot) in ids.iter().zip(found.iter_mut()) {
            if slot.is_none() {
                let counts = read.next().unwrap_or_default();
                self.store.caches.counts.put(*id, counts);
                *slot = Some(counts);
            }
        }
        Ok(found.into_iter().map(Option::unwrap_or_default).collect())
    }

    /// The counts of these statuses read from Redis now, in one pipeline.
    pub async fn fresh_counts(self, ids: &[u64]) -> StoreResult<Vec<Counts>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("HMGET")
                .arg(self.store.keys.status(*id))
                .arg("likes")
                .arg("reposts")
                .arg("replies");
        }
        let mut conn = self.store.conn();
        let rows: Vec<(Option<u64>, Option<u64>, Option<u64>)> =
            pipe.query_async(&mut conn).await?;
        Ok(rows
            .into_iter()
            .map(|(likes, reposts, replies)| Counts {
                likes: likes.unwrap_or(0),
                reposts: reposts.unwrap_or(0),
                replies: replies.unwrap_or(0),
            })
            .collect())
    }

    /// Cached statuses with their current counts.
    pub async fn shown(self, statuses: Vec<Arc<CachedStatus>>) -> StoreResult<Vec<Shown>> {
        let ids: Vec<u64> = statuses.iter().map(|s| s.status.id.get()).collect();
        let counts = self.counts(&ids).await?;
        Ok(statuses.into_iter().zip(counts).collect())
    }

    /// Whether each of these statuses exists (and is not being deleted), in
    /// order (see [`Statuses::current`]).
    pub async fn alive(self, ids: &[u64]) -> StoreResult<Vec<bool>> {
        Ok(self
            .store
            .statuses()
            .current(ids)
            .await?
            .into_iter()
            .map(|now| now.is_some())
            .collect())
    }

    /// Each of these statuses as far as a replay asks, in order: `None`
    /// when it does not exist (or is being deleted), else when it was last
    /// edited. From the cache where possible, the rest by one `HMGET` of
    /// three fields each in one pipeline: a replay judges a whole block
    /// this way without reading or caching the statuses its events already
    /// carry (reading them whole cost a cold replay three quarters of its
    /// time, and flushed the cache the live paths use).
    pub async fn current(self, ids: &[u64]) -> StoreResult<Vec<Option<StatusNow>>> {
        let mut now: Vec<Option<Option<StatusNow>>> = ids
            .iter()
            .map(|&id| {
                self.store.caches.status.get(id).map(|c| {
                    Some(StatusNow {
                        edited_at: c.status.edited_at,
                    })
                })
            })
            .collect();
        let missing: Vec<usize> = (0..ids.len()).filter(|&i| now[i].is_none()).collect();
        if !missing.is_empty() {
            let mut pipe = redis::pipe();
            for &i in &missing {
                pipe.cmd("HMGET")
                    .arg(self.store.keys.status(ids[i]))
                    .arg("uid")
                    .arg("deleted")
                    .arg("edited_at");
            }
            let mut conn = self.store.conn();
            let found: Vec<(Option<String>, Option<String>, Option<String>)> =
                pipe.query_async(&mut conn).await?;
            for (&i, (uid, deleted, edited_at)) in missing.iter().zip(found) {
                let alive = uid.is_some() && deleted.is_none();
                now[i] = Some(alive.then(|| StatusNow {
                    edited_at: edited_at.and_then(|e| e.parse().ok()),
                }));
            }
        }
        Ok(now.into_iter().map(Option::flatten).collect())
    }

    /// The statuses with these ids, in order (`None` for missing ones); from
    /// the cache where possible, the rest in one pipeline.
    pub async fn many(self, ids: &[u64]) -> StoreResult<Vec<(u64, Option<Arc<CachedStatus>>)>> {
        let mut found: Vec<(u64, Option<Arc<CachedStatus>>)> = ids
            .iter()
            .map(|&id| (id, self.store.caches.status.get(id)))
            .collect();
        let missing: Vec<usize> = (0..found.len()).filter(|&i| found[i].1.is_none()).collect();
        if missing.is_empty() {
            return Ok(found);
        }
        let mut pipe = redis::pipe();
        for &i in &missing {
            pipe.hgetall(self.store.keys.status(found[i].0));
        }
        let mut conn = self.store.conn();
        let hashes: Vec<HashMap<String, String>> = pipe.query_async(&mut conn).await?;
        for (&i, h) in missing.iter().zip(hashes.iter()) {
            if let Some(status) = Status::from_hash(h) {
                let cached = CachedStatus::new(status);
                self.store.caches.status.put(found[i].0, cached.clone());
                found[i].1 = Some(cached);
            }
        }
        Ok(found)
    }

    /// A page of a home timeline, newest first, each status once: of a
    /// status and its reposts (several followees may repost one status),
    /// only the newest entry counts, across the whole timeline. The home is
    /// read from the top in chunks until the page is full (a home holds at
    /// most 1000 entries), so page 1 costs about one chunk.
    pub async fn home_page(self, uid: u64, page: Page, count: usize) -> StoreResult<Vec<Shown>> {
        let key = self.store.keys.home(uid);
        // An eighth again the page, so that a repost of a status already
        // shown or a deleted entry seldom costs a second read. (Each id
        // costs Redis ~0.2 µs in the script, so no more than the page
        // needs.)
        let chunk = (count + count / 8 + 2) as isize;
        let mut conn = self.store.conn();
        let mut seen =
            rustc_hash::FxHashSet::with_capacity_and_hasher(2 * chunk as usize, Default::default());
        let mut kept: Vec<Arc<CachedStatus>> = Vec::with_capacity(chunk as usize);
        let mut gone: Vec<u64> = Vec::new();
        let (skip, max) = match page {
            Page::Number(n) => (
                (n.saturating_sub(1))
                    .saturating_mul(count as u64)
                    .min(HOME_CAP as u64) as usize,
                u64::MAX,
            ),
            Page::MaxId(max) => (0, max),
        };
        let mut start: isize = 0;
        loop {
            // The first chunk from the home cache where it can (page 1
            // needs no more), else from Redis.
            let cached = if start == 0 {
                self.store
                    .caches
                    .homes
                    .head(&key, chunk - 1, &self.store.scripts.home_ids)
                    .await?
            } else {
                None
            };
            let ids: Arc<[u64]> = match cached {
                Some(ids) => ids,
                None => {
                    let joined: String = self
                        .store
                        .scripts
                        .home_ids
                        .key(&key)
                        .arg(start)
                        .arg((start + chunk).min(HOME_CAP as isize) - 1)
                        .invoke_async(&mut conn)
                        .await?;
                    crate::store::caches::home_cache::split_ids(&joined).into()
                }
            };
            let n = ids.len();
            // Statuses are looked up only as far as the page needs: as many
            // as it lacks, then (reposts of one status, deleted entries)
            // as many again, in order.
            let mut next = 0;
            while next < n && kept.len() < skip + count {
                let upto = (next + skip + count - kept.len()).min(n);
                for (id, status) in self.many(&ids[next..upto]).await? {
                    let Some(status) = status else {
                        gone.push(id);
                        continue;
                    };
                    if self.by_suspended(&status.status) {
                        continue;
                    }
                    let root = status.status.original_id().unwrap_or(id);
                    if seen.insert(root) && id <= max {
                        kept.push(status);
                    }
                }
                next = upto;
            }
            // A home may hold a few entries past the cap until a post trims
            // it (`model::trims_homes`): no page reads past the cap.
            if kept.len() >= skip + count
                || (n as isize) < chunk
                || start + chunk >= HOME_CAP as isize
            {
                break;
            }
            start += chunk;
        }
        if !gone.is_empty() {
            let _: () = conn.zrem(&key, &gone).await?;
        }
        let page: Vec<Arc<CachedStatus>> = kept.into_iter().skip(skip).take(count).collect();
        self.shown(page).await
    }

    /// Whether a suspended user wrote `status` or the status it reposts
    /// (this process's set: then no timeline shows it).
    pub(crate) fn by_suspended(self, status: &Status) -> bool {
        if self.store.caches.suspended.is_empty() {
            return false;
        }
        let author: u64 = status.uid.get();
        self.store.caches.suspended.contains(author)
            || status
                .repost_of_uid
                .is_some_and(|u| self.store.caches.suspended.contains(u.get()))
    }

    /// Up to `count` ids of a timeline of statuses, newest first, from
    /// `max` down (`ids_up_to.lua`): from `max`'s place when it is there,
    /// else from where it would be. A snowflake's score is in the id itself
    /// (its `posted` second, see `ids` and [`timeline_score`]); an id of the
    /// old counter not in the timeline starts at its status's `posted` (or
    /// the top, when that status is gone). Ids above `max` (only a status of
    /// the second a version scoring fractions was replaced can be one) are
    /// left out.
    pub(crate) async fn ids_up_to(
        self,
        key: &str,
        max: u64,
        count: usize,
    ) -> StoreResult<Vec<String>> {
        let score = match crate::store::plumbing::ids::posted_of(max) {
            Some(posted) => timeline_score(posted).to_string(),
            None => match self.get(max).await {
                Ok(s) => s.posted.to_string(),
                Err(StoreError::NotFound(_)) => "+inf".to_string(),
                Err(e) => return Err(e),
            },
        };
        let mut conn = self.store.conn();
        let ids: Vec<String> = self
            .store
            .scripts
            .ids_up_to
            .key(key)
            .arg(max)
            .arg(score)
            .arg(count)
            .invoke_async(&mut conn)
            .await?;
        Ok(ids
            .into_iter()
            .filter(|id| id.parse::<u64>().is_ok_and(|id| id <= max))
            .collect())
    }

    /// Up to `count` ids of a user's likes from the like of `max` on, in
    /// like order (newest first): likes are not in id order, so the page
    /// starts at `max`'s place in the list, read in one script. A `max` no
    /// longer in the list (unliked meanwhile) cannot be placed: the page is
    /// then the likes of statuses with ids up to `max`, from the newest
    /// 1,000 likes.
    async fn likes_from(self, key: &str, max: u64, count: usize) -> StoreResult<Vec<String>> {
        let mut conn = self.store.conn();
        let ids: Option<Vec<String>> = self
            .store
            .scripts
            .page_from
            .key(key)
            .arg(max)
            .arg(count)
            .invoke_async(&mut conn)
            .await?;
        if let Some(ids) = ids {
            return Ok(ids);
        }
        let newest: Vec<String> = conn.zrevrange(key, 0, 999).await?;
        Ok(newest
            .into_iter()
            .filter(|id| id.parse::<u64>().is_ok_and(|id| id <= max))
            .take(count)
            .collect())
    }

    /// A page of a timeline, newest first. Ids whose status has gone (a
    /// delete that raced a fan-out) are dropped from the timeline on the way.
    pub async fn timeline(
        self,
        which: Timeline,
        page: Page,
        count: usize,
    ) -> StoreResult<Vec<Shown>> {
        let key = match &which {
            Timeline::Profile(uid) => self.store.keys.profile(*uid),
            Timeline::Mentions(uid) => self.store.keys.mentions(*uid),
            Timeline::Tag(tag) => self.store.keys.tag(tag),
            Timeline::Likes(uid) => self.store.keys.likes(*uid),
            Timeline::Group(gid) => self.store.keys.group_timeline(*gid),
        };
        let mut conn = self.store.conn();
        let ids: Vec<String> = match page {
            Page::Number(n) => {
                let start = (n.saturating_sub(1))
                    .saturating_mul(count as u64)
                    .min(isize::MAX as u64 / 2) as isize;
                conn.zrevrange(&key, start, start + count as isize - 1)
                    .await?
            }
            Page::MaxId(max) if matches!(which, Timeline::Likes(_)) => {
                self.likes_from(&key, max, count).await?
            }
            Page::MaxId(max) => self.ids_up_to(&key, max, count).await?,
        };
        let ids: Vec<u64> = ids.iter().filter_map(|s| s.parse().ok()).collect();
        let found = self.many(&ids).await?;
        let gone: Vec<u64> = found
            .iter()
            .filter(|(_, s)| s.is_none())
            .map(|(id, _)| *id)
            .collect();
        if !gone.is_empty() {
            let _: () = conn.zrem(&key, &gone).await?;
        }
        self.shown(found.into_iter().filter_map(|(_, s)| s).collect())
            .await
    }
}
