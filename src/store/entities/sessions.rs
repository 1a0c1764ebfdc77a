//! Login sessions after "Redis in Action" 2.1, kept in the user's slot.
//!
//! A session's authority is its user's `live` ZSET (session id -> last seen):
//! a token names its user, so checking it touches that user's slot only,
//! never a global key. The user's `sessions` ZSET keeps when each began, and
//! each session keeps the statuses it viewed most recently (at most
//! [`VIEWED_CAP`]), in the user's slot too.
//!
//! The clean-up needs one order over every session, so an index keeps each
//! session's last use to the minute ([`RECENT_GRAIN`]), spread over the
//! [`OUTBOX_PARTS`] partitions' slots (`Keys::session_index`: a user's
//! sessions in their [`user_part`], each entry `<uid>:<session id>`), so
//! that no login or request writes one global slot. The clean-up merges the
//! partitions' orders: it drops the least recently seen sessions beyond a
//! size limit and those idle past a TTL, checking each against its
//! authority.
//!
//! A session begins index first, then authority: a crash between leaves an
//! index entry whose session nobody holds, which the clean-up drops. It ends
//! authority first (`session_end.lua`: from then on its token answers 401),
//! then index, then revocation (`drop_sessions.lua`: its streams close in
//! every process), as an outbox op ([`Sessions::end_many`]) so that a crash
//! between them is finished by a worker.

pub(crate) use crate::store::caches::cache::SessionUser;
use crate::store::chains::end_sessions::EndSessionsOp;
use crate::store::handle::Store;
use crate::store::outbox::Op;
use crate::store::plumbing::error::{parse_id, StoreResult};
use crate::store::plumbing::keys::{user_part, OUTBOX_PARTS};
use crate::store::plumbing::settings::Pauses;
use redis::AsyncCommands;
use std::collections::BTreeMap;

/// Most recently viewed statuses kept per session.
pub(crate) const VIEWED_CAP: usize = 25;
/// Sessions dropped per clean-up step.
const CLEANUP_BATCH: usize = 100;
/// Sessions a clean-up step reads from each partition of the index among
/// those it cannot tell apart by the index alone (about 1,000 in all).
const NEAR_PER_PART: usize = CLEANUP_BATCH * 10 / OUTBOX_PARTS;
/// Most live sessions a user keeps: a login beyond ends the oldest.
pub(crate) const SESSIONS_PER_USER: usize = 100;
/// Seconds of use within which the clean-up's index is not moved again: a
/// session's score there is at most this much older than its authority's.
pub(crate) const RECENT_GRAIN: f64 = 60.0;

/// Sessions: tokens' authority, their index and clean-up (`Store::sessions`).
#[derive(Clone, Copy)]
pub struct Sessions<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Sessions<'_> {
    /// Records a new session for `uid` and returns its id.
    pub async fn create(self, uid: u64, now: f64) -> StoreResult<String> {
        let sid = new_session_id();
        let mut conn = self.store.conn();
        let _: () = conn
            .zadd(
                self.store.keys.session_index(user_part(uid)),
                entry(uid, &sid),
                now,
            )
            .await?;
        let mine = self.store.keys.user_sessions(uid);
        let (n,): (u64,) = redis::pipe()
            .atomic()
            .zadd(&mine, &sid, now)
            .ignore()
            .zadd(self.store.keys.live_sessions(uid), &sid, now)
            .ignore()
            .zcard(&mine)
            .query_async(&mut conn)
            .await?;
        if n as usize > SESSIONS_PER_USER {
            let oldest: Vec<String> = conn
                .zrange(&mine, 0, (n as usize - SESSIONS_PER_USER) as isize - 1)
                .await?;
            let pairs: Vec<(u64, String)> = oldest.into_iter().map(|s| (uid, s)).collect();
            self.end_many(pairs, None).await?;
        }
        Ok(sid)
    }

    /// [`Sessions::touch`] through the session cache: a session found
    /// alive less than a second ago (and not revoked since) is not asked
    /// about again.
    pub async fn user(self, sid: &str, uid: u64, now: f64) -> StoreResult<Option<SessionUser>> {
        let cache = &self.store.caches.sessions;
        if let Some(user) = cache.get(sid, uid) {
            return Ok(Some(user));
        }
        let seen = cache.generation();
        let user = self.touch(sid, uid, now).await?;
        if let (Some(seen), Some(user)) = (seen, &user) {
            cache.put(seen, sid, uid, user.clone());
        }
        Ok(user)
    }

    /// Checks that session `sid` of `uid` is live, and marks it seen now
    /// (one round trip to the user's slot; the clean-up's index is moved
    /// too when the session's last use was in an earlier minute). `None` when
    /// the session has ended (logged out, cleaned up) or is not `uid`'s.
    pub async fn touch(self, sid: &str, uid: u64, now: f64) -> StoreResult<Option<SessionUser>> {
        let mut conn = self.store.conn();
        let live = self.store.keys.live_sessions(uid);
        let (before, (login, private)): (Option<f64>, (Option<String>, Option<String>)) =
            redis::pipe()
                .zscore(&live, sid)
                .cmd("ZADD")
                .arg(&live)
                .arg("XX")
                .arg("GT")
                .arg(now)
                .arg(sid)
                .ignore()
                .cmd("HMGET")
                .arg(self.store.keys.user(uid))
                .arg("login")
                .arg("private")
                .query_async(&mut conn)
                .await?;
        let (Some(before), Some(login)) = (before, login) else {
            return Ok(None);
        };
        if (before / RECENT_GRAIN).floor() < (now / RECENT_GRAIN).floor() {
            self.raise_recent(uid, sid, now).await?;
        }
        let private = private.as_deref() == Some("1");
        Ok(Some(SessionUser { login, private }))
    }

    /// Moves a session's place in the index's order up to `seen` (never
    /// back, and never for a session the index no longer has).
    async fn raise_recent(self, uid: u64, sid: &str, seen: f64) -> StoreResult<()> {
        let _: () = redis::cmd("ZADD")
            .arg(self.store.keys.session_index(user_part(uid)))
            .arg("XX")
            .arg("GT")
            .arg(seen)
            .arg(entry(uid, sid))
            .query_async(&mut self.store.conn())
            .await?;
        Ok(())
    }

    /// Ends `uid`'s session `sid` at once (logout): its token stops
    /// working and its streams close.
    pub async fn end(self, uid: u64, sid: &str) -> StoreResult<bool> {
        Ok(self.end_many(vec![(uid, sid.to_string())], None).await? > 0)
    }

    /// Notes that session `sid` of `uid` viewed a status.
    pub async fn record_view(
        self,
        uid: u64,
        sid: &str,
        status_id: u64,
        now: f64,
    ) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let _: i64 = self
            .store
            .scripts
            .record_view
            .key(self.store.keys.live_sessions(uid))
            .key(self.store.keys.user_viewed(uid, sid))
            .arg(sid)
            .arg(now)
            .arg(status_id)
            .arg(VIEWED_CAP)
            .invoke_async(&mut conn)
            .await?;
        Ok(())
    }

    /// The statuses session `sid` of `uid` viewed, most recent first.
    pub async fn viewed(self, uid: u64, sid: &str) -> StoreResult<Vec<u64>> {
        let mut conn = self.store.conn();
        let ids: Vec<String> = conn
            .zrevrange(self.store.keys.user_viewed(uid, sid), 0, -1)
            .await?;
        ids.iter().map(|s| parse_id(s)).collect()
    }

    /// Number of live sessions (the index's count, over its partitions).
    ///
    /// The partitions are read one after another, here and wherever this
    /// module reads or writes several: 32 requests in flight at once to a
    /// cluster that has just restarted leave the redis crate's cluster
    /// connection timing out for good (`streams_survive_a_redis_restart`
    /// on the cluster, as `Store::outbox_depth` found first).
    pub async fn count(self) -> StoreResult<u64> {
        let mut conn = self.store.conn();
        let mut n = 0;
        for k in 0..OUTBOX_PARTS {
            let count: u64 = conn.zcard(self.store.keys.session_index(k)).await?;
            n += count;
        }
        Ok(n)
    }

    /// One clean-up step: ends up to a batch of sessions beyond `max`
    /// (least recently seen first) and up to a batch idle since before
    /// `idle_cutoff`. Returns how many ended.
    ///
    /// The index's order is to the minute ([`RECENT_GRAIN`]), so the least
    /// recently seen are chosen by their authorities' times among the
    /// sessions the index cannot tell from them: those the index places
    /// before the end of the last chosen one's minute (the first
    /// [`NEAR_PER_PART`] of each partition, or more when more are to go,
    /// so a crowded minute costs a step about 1,000 reads). Each partition is
    /// read in order and the readings merged (the `n` oldest of all are
    /// among the `n` oldest of each): a command per partition for each
    /// reading, one after another.
    pub async fn cleanup(self, max: u64, idle_cutoff: f64) -> StoreResult<usize> {
        let mut ended = 0;
        let n = self.count().await?;
        if n > max {
            let extra = ((n - max) as usize).min(CLEANUP_BATCH);
            let heads = self
                .index_entries(&["0".into(), (extra - 1).to_string()], extra)
                .await?;
            if let Some(&(_, _, last)) = heads.last() {
                let bound = ((last / RECENT_GRAIN).floor() + 1.0) * RECENT_GRAIN;
                // Every session the index places in that minute or before,
                // up to [`NEAR_PER_PART`] a partition (or `extra`, so the
                // `extra` first by the index are among them).
                let each = extra.max(NEAR_PER_PART);
                let near = self
                    .index_entries(
                        &by_score("-inf", &format!("({bound}"), each),
                        OUTBOX_PARTS * each,
                    )
                    .await?;
                let pairs = self.indexed(near).await?;
                let seen = self.last_seen_of(&pairs).await?;
                let mut ranked: Vec<_> = pairs.into_iter().zip(seen).collect();
                ranked.sort_by(|a, b| a.1.unwrap_or(f64::MIN).total_cmp(&b.1.unwrap_or(f64::MIN)));
                let chosen = ranked.into_iter().take(extra).map(|(p, _)| p).collect();
                ended += self.end_many(chosen, None).await?;
            }
        }
        let idle = self
            .index_entries(
                &by_score("-inf", &idle_cutoff.to_string(), CLEANUP_BATCH),
                CLEANUP_BATCH,
            )
            .await?;
        let idle = self.indexed(idle).await?;
        ended += self.end_many(idle, Some(idle_cutoff)).await?;
        Ok(ended)
    }

    /// The first `most` entries, oldest first, of what `range` (ZRANGE's
    /// arguments after the key) picks in each partition of the index: each
    /// as its partition, its member and its score.
    async fn index_entries(
        self,
        range: &[String],
        most: usize,
    ) -> StoreResult<Vec<(usize, String, f64)>> {
        let mut conn = self.store.conn();
        let mut all: Vec<(usize, String, f64)> = Vec::new();
        for k in 0..OUTBOX_PARTS {
            let part: Vec<(String, f64)> = redis::cmd("ZRANGE")
                .arg(self.store.keys.session_index(k))
                .arg(range)
                .arg("WITHSCORES")
                .query_async(&mut conn)
                .await?;
            all.extend(part.into_iter().map(|(m, score)| (k, m, score)));
        }
        all.sort_by(|a, b| a.2.total_cmp(&b.2));
        all.truncate(most);
        Ok(all)
    }

    /// The sessions these index entries name, each with its user; entries
    /// that name none are removed from the index.
    async fn indexed(self, entries: Vec<(usize, String, f64)>) -> StoreResult<Vec<(u64, String)>> {
        let mut pairs = Vec::new();
        let mut conn = self.store.conn();
        for (k, member, _) in entries {
            match parse_entry(&member) {
                Some(pair) => pairs.push(pair),
                None => {
                    let _: () = conn.zrem(self.store.keys.session_index(k), member).await?;
                }
            }
        }
        Ok(pairs)
    }

    /// Each session's last use as its authority has it (`None`: ended).
    async fn last_seen_of(self, sessions: &[(u64, String)]) -> StoreResult<Vec<Option<f64>>> {
        if sessions.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for (uid, sid) in sessions {
            pipe.zscore(self.store.keys.live_sessions(*uid), sid);
        }
        Ok(pipe.query_async(&mut self.store.conn()).await?)
    }

    /// Ends sessions (with `cutoff`, only those not seen since), as an
    /// outbox op: authority, then index and revocation. Returns how many
    /// ended.
    pub(crate) async fn end_many(
        self,
        sessions: Vec<(u64, String)>,
        cutoff: Option<f64>,
    ) -> StoreResult<usize> {
        if sessions.is_empty() {
            return Ok(0);
        }
        let op = EndSessionsOp { sessions, cutoff };
        let owed = self
            .store
            .outbox()
            .start(Op::EndSessions(op.clone()))
            .await?;
        op.run(self.store, &owed.entry).await
    }

    /// Ends sessions, each step idempotent (a chain that runs it may run
    /// again): at their authority, then in the index with their revocation.
    /// Returns how many ended (again, on a rerun).
    pub(crate) async fn close(
        self,
        sessions: &[(u64, String)],
        cutoff: Option<f64>,
    ) -> StoreResult<usize> {
        let mut by_user: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
        for (uid, sid) in sessions {
            by_user.entry(*uid).or_default().push(sid);
        }
        let mut conn = self.store.conn();
        let mut ended: Vec<(u64, String)> = Vec::new();
        let mut kept: Vec<(u64, String, f64)> = Vec::new();
        let cut = cutoff.map_or("+inf".to_string(), |c| c.to_string());
        for (uid, sids) in by_user {
            let (gone, used): (Vec<String>, Vec<(String, f64)>) = self
                .store
                .scripts
                .session_end
                .key(self.store.keys.live_sessions(uid))
                .key(self.store.keys.user_sessions(uid))
                .arg(&cut)
                .arg(self.store.keys.user_viewed_stem(uid))
                .arg(&sids)
                .invoke_async(&mut conn)
                .await?;
            ended.extend(gone.into_iter().map(|sid| (uid, sid)));
            kept.extend(used.into_iter().map(|(sid, seen)| (uid, sid, seen)));
        }
        for (uid, sid, seen) in &kept {
            self.raise_recent(*uid, sid, *seen).await?;
        }
        if ended.is_empty() {
            return Ok(0);
        }
        Pauses::hold(self.store.pauses.session_end).await;
        let mut by_part: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for (uid, sid) in &ended {
            by_part
                .entry(user_part(*uid))
                .or_default()
                .push(entry(*uid, sid));
        }
        for (k, entries) in by_part {
            let _: () = conn.zrem(self.store.keys.session_index(k), entries).await?;
        }
        let sids: Vec<&str> = ended.iter().map(|(_, sid)| sid.as_str()).collect();
        let shard = self.store.keys.log_shard(0);
        let _: usize = self
            .store
            .scripts
            .drop_sessions
            .key(self.store.keys.log_events(shard))
            .key(self.store.keys.log_emitted(shard))
            .arg(self.store.keys.log_channel(shard))
            .arg(self.store.log_shape().trim())
            .arg(self.store.log_shape().publish)
            .arg(shard)
            .arg(&sids)
            .invoke_async(&mut conn)
            .await?;
        // The hub revokes them too when their events arrive; this process
        // does not wait for that.
        for sid in sids {
            self.store.caches.sessions.revoke(sid);
        }
        Ok(ended.len())
    }
}

/// A live session as its owner sees it.
#[derive(Debug, Clone)]
pub struct SessionEntry {
    /// The session id.
    pub id: String,
    /// When it was created (logged in).
    pub created: f64,
    /// When it was last used.
    pub last_seen: f64,
}

impl Sessions<'_> {
    /// Keeps an OAuth authorization code's grant for `ttl_secs`.
    pub async fn put_oauth_code(self, code: &str, grant: &str, ttl_secs: u64) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let _: () = conn
            .set_ex(self.store.keys.oauth_code(code), grant, ttl_secs)
            .await?;
        Ok(())
    }

    /// Takes an OAuth authorization code's grant: once (`GETDEL`), then
    /// it is gone.
    pub async fn take_oauth_code(self, code: &str) -> StoreResult<Option<String>> {
        let mut conn = self.store.conn();
        Ok(redis::cmd("GETDEL")
            .arg(self.store.keys.oauth_code(code))
            .query_async(&mut conn)
            .await?)
    }

    /// The live sessions of `uid`, newest first. Entries of the user's
    /// list whose session has ended are dropped from it on the way.
    pub async fn of_user(self, uid: u64) -> StoreResult<Vec<SessionEntry>> {
        let mut conn = self.store.conn();
        let listed: Vec<(String, f64)> = conn
            .zrevrange_withscores(self.store.keys.user_sessions(uid), 0, -1)
            .await?;
        if listed.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = listed.iter().map(|(id, _)| id.as_str()).collect();
        let seen: Vec<Option<f64>> = redis::cmd("ZMSCORE")
            .arg(self.store.keys.live_sessions(uid))
            .arg(&ids)
            .query_async(&mut conn)
            .await?;
        let mut live = Vec::new();
        let mut ended = Vec::new();
        for ((id, created), last_seen) in listed.into_iter().zip(seen) {
            match last_seen {
                Some(last_seen) => live.push(SessionEntry {
                    id,
                    created,
                    last_seen,
                }),
                None => ended.push(id),
            }
        }
        if !ended.is_empty() {
            let _: () = conn
                .zrem(self.store.keys.user_sessions(uid), &ended)
                .await?;
        }
        Ok(live)
    }

    /// Ends `uid`'s session `sid` (its token answers 401 and its streams
    /// get `disconnect` in every process); false when it is not one of the
    /// user's live sessions.
    pub async fn end_of_user(self, uid: u64, sid: &str) -> StoreResult<bool> {
        let mut conn = self.store.conn();
        let seen: Option<f64> = conn.zscore(self.store.keys.live_sessions(uid), sid).await?;
        if seen.is_none() {
            return Ok(false);
        }
        self.end(uid, sid).await
    }

    /// Ends every live session of `uid` but `keep`; returns how many.
    pub async fn end_others(self, uid: u64, keep: &str) -> StoreResult<usize> {
        let others: Vec<(u64, String)> = self
            .store
            .sessions()
            .of_user(uid)
            .await?
            .into_iter()
            .filter(|s| s.id != keep)
            .map(|s| (uid, s.id))
            .collect();
        self.end_many(others, None).await
    }

    /// Every session `uid` has, live or not yet listed as ended (for a
    /// chain that ends them all: an account's deletion, a suspension).
    pub(crate) async fn all_of(self, uid: u64) -> StoreResult<Vec<(u64, String)>> {
        let mut conn = self.store.conn();
        let (listed, live): (Vec<String>, Vec<String>) = redis::pipe()
            .zrange(self.store.keys.user_sessions(uid), 0, -1)
            .zrange(self.store.keys.live_sessions(uid), 0, -1)
            .query_async(&mut conn)
            .await?;
        let mut all: Vec<String> = listed.into_iter().chain(live).collect();
        all.sort();
        all.dedup();
        Ok(all.into_iter().map(|sid| (uid, sid)).collect())
    }
}

/// A session's entry in the clean-up's index: its user and its id.
pub(super) fn entry(uid: u64, sid: &str) -> String {
    format!("{uid}:{sid}")
}

/// The user and session an index entry names.
fn parse_entry(entry: &str) -> Option<(u64, String)> {
    let (uid, sid) = entry.split_once(':')?;
    Some((parse_id(uid).ok()?, sid.to_string()))
}

/// ZRANGE's arguments for the first `most` entries scored from `min` to
/// `max`.
fn by_score(min: &str, max: &str, most: usize) -> Vec<String> {
    vec![
        min.to_string(),
        max.to_string(),
        "BYSCORE".into(),
        "LIMIT".into(),
        "0".into(),
        most.to_string(),
    ]
}

/// 128 random bits, hex.
fn new_session_id() -> String {
    let bits: u128 = rand::random();
    format!("{bits:032x}")
}

impl Sessions<'_> {
    /// The JWT secret: `configured` if given, else the one kept in Redis,
    /// generated (256 random bits) by whichever process asks first.
    pub async fn jwt_secret(self, configured: Option<&str>) -> StoreResult<String> {
        if let Some(secret) = configured {
            return Ok(secret.to_string());
        }
        let fresh: String = (0..32)
            .map(|_| format!("{:02x}", rand::random::<u8>()))
            .collect();
        let mut conn = self.store.conn();
        let _: Option<String> = redis::cmd("SET")
            .arg(self.store.keys.jwt_secret())
            .arg(&fresh)
            .arg("NX")
            .query_async(&mut conn)
            .await?;
        let kept: Option<String> = conn.get(self.store.keys.jwt_secret()).await?;
        kept.ok_or_else(|| {
            crate::store::plumbing::error::StoreError::Internal("the JWT secret vanished".into())
        })
    }
}
