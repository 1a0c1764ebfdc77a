//! Login sessions after "Redis in Action" 2.1: `sessions` maps a session id to
//! its user, `recent` scores each session by when it was last seen, and each
//! session keeps the statuses it viewed most recently (at most
//! [`VIEWED_CAP`]). The clean-up drops the least recently seen sessions beyond
//! a size limit and those idle past a TTL, with all their keys.

use super::{parse_id, Store, StoreResult};
use redis::AsyncCommands;

/// Most recently viewed statuses kept per session.
pub const VIEWED_CAP: usize = 25;
/// Sessions dropped per clean-up step.
const CLEANUP_BATCH: usize = 100;
/// Most live sessions a user keeps: a login beyond ends the oldest.
pub const SESSIONS_PER_USER: usize = 100;

/// What an authenticated request learns about its session's user.
#[derive(Debug, Clone)]
pub struct SessionUser {
    /// The user's login.
    pub login: String,
    /// Whether the account is private.
    pub private: bool,
}

impl Store {
    /// Records a new session for `uid` and returns its id.
    pub async fn create_session(&self, uid: u64, now: f64) -> StoreResult<String> {
        let sid = new_session_id();
        let mut conn = self.conn();
        // The user's list first, so a live session is always listed (an
        // entry whose session never came to be is dropped when listed).
        let mine = self.keys.user_sessions(uid);
        let (_, n): ((), u64) = redis::pipe()
            .zadd(&mine, &sid, now)
            .zcard(&mine)
            .query_async(&mut conn)
            .await?;
        let _: () = redis::pipe()
            .atomic()
            .hset(self.keys.sessions(), &sid, uid)
            .ignore()
            .zadd(self.keys.recent(), &sid, now)
            .ignore()
            .query_async(&mut conn)
            .await?;
        if n as usize > SESSIONS_PER_USER {
            let oldest: Vec<String> = conn
                .zrange(&mine, 0, (n as usize - SESSIONS_PER_USER) as isize - 1)
                .await?;
            self.drop_sessions(&oldest, None).await?;
            let _: () = conn.zrem(&mine, &oldest).await?;
        }
        Ok(sid)
    }

    /// [`Store::touch_session`] through the session cache: a session found
    /// alive less than a second ago (and not revoked since) is not asked
    /// about again.
    pub async fn session_user(
        &self,
        sid: &str,
        uid: u64,
        now: f64,
    ) -> StoreResult<Option<SessionUser>> {
        let cache = &self.session_cache;
        if let Some(user) = cache.get(sid, uid) {
            return Ok(Some(user));
        }
        let seen = cache.generation();
        let user = self.touch_session(sid, uid, now).await?;
        if let (Some(seen), Some(user)) = (seen, &user) {
            cache.put(seen, sid, uid, user.clone());
        }
        Ok(user)
    }

    /// Checks that session `sid` exists and belongs to `uid`, and marks it
    /// seen now. `None` when the session is gone (logged out, cleaned up) or
    /// belongs to someone else.
    pub async fn touch_session(
        &self,
        sid: &str,
        uid: u64,
        now: f64,
    ) -> StoreResult<Option<SessionUser>> {
        let mut conn = self.conn();
        let (owner, (login, private)): (Option<String>, (Option<String>, Option<String>)) =
            redis::pipe()
                .hget(self.keys.sessions(), sid)
                .cmd("ZADD")
                .arg(self.keys.recent())
                .arg("XX")
                .arg(now)
                .arg(sid)
                .ignore()
                .cmd("HMGET")
                .arg(self.keys.user(uid))
                .arg("login")
                .arg("private")
                .query_async(&mut conn)
                .await?;
        let owned = owner.as_deref().map(parse_id).transpose()? == Some(uid);
        Ok(match (owned, login) {
            (true, Some(login)) => {
                let private = private.as_deref() == Some("1");
                Some(SessionUser { login, private })
            }
            _ => None,
        })
    }

    /// Ends one session at once (logout): its keys go and its streams close.
    pub async fn end_session(&self, sid: &str) -> StoreResult<bool> {
        Ok(self.drop_sessions(&[sid.to_string()], None).await? > 0)
    }

    /// Notes that the session viewed a status.
    pub async fn record_view(&self, sid: &str, status_id: u64, now: f64) -> StoreResult<()> {
        let mut conn = self.conn();
        let _: i64 = self
            .scripts
            .record_view
            .key(self.keys.sessions())
            .key(self.keys.viewed(sid))
            .arg(sid)
            .arg(now)
            .arg(status_id)
            .arg(VIEWED_CAP)
            .invoke_async(&mut conn)
            .await?;
        Ok(())
    }

    /// The statuses the session viewed, most recent first.
    pub async fn viewed(&self, sid: &str) -> StoreResult<Vec<u64>> {
        let mut conn = self.conn();
        let ids: Vec<String> = conn.zrevrange(self.keys.viewed(sid), 0, -1).await?;
        ids.iter().map(|s| parse_id(s)).collect()
    }

    /// Number of live sessions.
    pub async fn session_count(&self) -> StoreResult<u64> {
        let mut conn = self.conn();
        Ok(conn.zcard(self.keys.recent()).await?)
    }

    /// One clean-up step: drops up to a batch of sessions beyond `max`
    /// (least recently seen first) and up to a batch idle since before
    /// `idle_cutoff`. Returns how many went.
    pub async fn cleanup_sessions(&self, max: u64, idle_cutoff: f64) -> StoreResult<usize> {
        let mut conn = self.conn();
        let mut dropped = 0;
        let n: u64 = conn.zcard(self.keys.recent()).await?;
        if n > max {
            let extra = ((n - max) as usize).min(CLEANUP_BATCH);
            let sids: Vec<String> = conn
                .zrange(self.keys.recent(), 0, extra as isize - 1)
                .await?;
            dropped += self.drop_sessions(&sids, None).await?;
        }
        let idle: Vec<String> = redis::cmd("ZRANGE")
            .arg(self.keys.recent())
            .arg("-inf")
            .arg(idle_cutoff)
            .arg("BYSCORE")
            .arg("LIMIT")
            .arg(0)
            .arg(CLEANUP_BATCH)
            .query_async(&mut conn)
            .await?;
        dropped += self.drop_sessions(&idle, Some(idle_cutoff)).await?;
        Ok(dropped)
    }

    pub(crate) async fn drop_sessions(
        &self,
        sids: &[String],
        cutoff: Option<f64>,
    ) -> StoreResult<usize> {
        if sids.is_empty() {
            return Ok(0);
        }
        let mut conn = self.conn();
        let mut inv = self.scripts.drop_sessions.prepare_invoke();
        inv.key(self.keys.sessions())
            .key(self.keys.recent())
            .key(self.keys.events())
            .arg(cutoff.map_or("+inf".to_string(), |c| c.to_string()))
            .arg(self.keys.viewed_stem())
            .arg(self.keys.channel())
            .arg(self.replay_maxlen);
        for sid in sids {
            inv.arg(sid);
        }
        let n: usize = inv.invoke_async(&mut conn).await?;
        // The hub revokes them too when their events arrive; this process
        // does not wait for that.
        for sid in sids {
            self.session_cache.revoke(sid);
        }
        Ok(n)
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

impl Store {
    /// The live sessions of `uid`, newest first. Entries of the user's
    /// list whose session has ended (clean-up, logout) are dropped from it
    /// on the way.
    pub async fn user_sessions(&self, uid: u64) -> StoreResult<Vec<SessionEntry>> {
        let mut conn = self.conn();
        let listed: Vec<(String, f64)> = conn
            .zrevrange_withscores(self.keys.user_sessions(uid), 0, -1)
            .await?;
        if listed.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = listed.iter().map(|(id, _)| id.as_str()).collect();
        let (owners, seen): (Vec<Option<String>>, Vec<Option<f64>>) = redis::pipe()
            .cmd("HMGET")
            .arg(self.keys.sessions())
            .arg(&ids)
            .cmd("ZMSCORE")
            .arg(self.keys.recent())
            .arg(&ids)
            .query_async(&mut conn)
            .await?;
        let mut live = Vec::new();
        let mut ended = Vec::new();
        for (((id, created), owner), last_seen) in listed.into_iter().zip(owners).zip(seen) {
            let owned = owner.as_deref().and_then(|o| o.parse::<u64>().ok()) == Some(uid);
            match (owned, last_seen) {
                (true, Some(last_seen)) => live.push(SessionEntry {
                    id,
                    created,
                    last_seen,
                }),
                _ => ended.push(id),
            }
        }
        if !ended.is_empty() {
            let _: () = conn.zrem(self.keys.user_sessions(uid), &ended).await?;
        }
        Ok(live)
    }

    /// Ends `uid`'s session `sid` (its token answers 401 and its streams
    /// get `disconnect` in every process); false when it is not one of the
    /// user's live sessions.
    pub async fn end_user_session(&self, uid: u64, sid: &str) -> StoreResult<bool> {
        let mut conn = self.conn();
        let owner: Option<String> = conn.hget(self.keys.sessions(), sid).await?;
        if owner.as_deref().and_then(|o| o.parse::<u64>().ok()) != Some(uid) {
            return Ok(false);
        }
        let ended = self.drop_sessions(&[sid.to_string()], None).await? > 0;
        let _: () = conn.zrem(self.keys.user_sessions(uid), sid).await?;
        Ok(ended)
    }

    /// Ends every live session of `uid` but `keep`; returns how many.
    pub async fn end_other_sessions(&self, uid: u64, keep: &str) -> StoreResult<usize> {
        let others: Vec<String> = self
            .user_sessions(uid)
            .await?
            .into_iter()
            .map(|s| s.id)
            .filter(|id| id != keep)
            .collect();
        let n = self.drop_sessions(&others, None).await?;
        if !others.is_empty() {
            let mut conn = self.conn();
            let _: () = conn.zrem(self.keys.user_sessions(uid), &others).await?;
        }
        Ok(n)
    }
}

/// 128 random bits, hex.
fn new_session_id() -> String {
    let bits: u128 = rand::random();
    format!("{bits:032x}")
}

impl Store {
    /// The JWT secret: `configured` if given, else the one kept in Redis,
    /// generated (256 random bits) by whichever process asks first.
    pub async fn jwt_secret(&self, configured: Option<&str>) -> StoreResult<String> {
        if let Some(secret) = configured {
            return Ok(secret.to_string());
        }
        let fresh: String = (0..32)
            .map(|_| format!("{:02x}", rand::random::<u8>()))
            .collect();
        let mut conn = self.conn();
        let _: Option<String> = redis::cmd("SET")
            .arg(self.keys.jwt_secret())
            .arg(&fresh)
            .arg("NX")
            .query_async(&mut conn)
            .await?;
        let kept: Option<String> = conn.get(self.keys.jwt_secret()).await?;
        kept.ok_or_else(|| super::StoreError::Internal("the JWT secret vanished".into()))
    }
}
