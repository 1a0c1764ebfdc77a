//! Fan-out on write: a status id enters (or, for a delete, leaves) the home
//! timeline of every follower of its author, exactly once per follower.
//!
//! Durability: a post or delete is an outbox entry from its first step (see
//! `outbox`). Its chain reaches the first `fanout_inline` followers itself
//! (oldest follows first) and cuts the rest into ranges of about
//! `fanout_batch` followers; `op_retire.lua` retires the entry and queues one
//! task per range on its outbox partition's fan-out STREAM (`fh:{o<j>}:fanout`,
//! so the queues spread over the shards like the outbox), where the workers
//! of every process work them through a consumer group per queue. Workers
//! wait on [`fanout_hints`](super::plumbing::fanout_hints) instead of a blocking read,
//! so an idle worker sends nothing. If the request dies or its client hangs
//! up first, the entry's lease runs out and a worker's sweeper runs the
//! chain again ([`Outbox::complete`](crate::store::outbox::Outbox::complete)); only whoever retires the entry
//! queues the ranges, so nothing is queued twice.
//!
//! A range runs between two cursors (score and member of a follower in the
//! ZSET's order), not ranks, so followers who come and go meanwhile shift
//! nothing: every follower falls in exactly one range, and the last range is
//! open-ended. Pages are read by `fanout_page.lua`, exact with any number of
//! followers sharing one follow time. A worker that finds more than a batch
//! in its range does a batch and queues the remainder in the same script
//! that acknowledges its own task (`fanout_ack.lua`); a worker killed
//! mid-batch leaves its task pending, another reclaims it with XAUTOCLAIM
//! after `reclaim_ms` and redoes the batch, and only the first
//! acknowledgement queues the remainder.
//!
//! A batch is compensated so that late work leaves nothing behind: after
//! adding a status to homes it re-reads whether each follower still follows
//! the author (the follower's `following` set, the authority, in the same
//! slot and sub-pipeline as that follower's home) and then whether the
//! status still exists and is not being deleted, and takes it out of the
//! homes where either is no longer so. An unfollow or delete that commits
//! before that re-read is seen by it; one that commits after it runs its own
//! home clean-up after the add, so either way the id does not stay.

mod queue;

use super::handle::Store;
use super::plumbing::conn::RedisConn;
use super::plumbing::error::StoreResult;
pub(crate) use super::plumbing::fanout_hints::Queue;
use crate::hides;
use crate::model::Id;
use crate::model::{timeline_score, trims_homes, HOME_CAP};
use redis::AsyncCommands;

/// The consumer group of the fan-out workers.
pub(crate) const GROUP: &str = "workers";

/// What a fan-out task does to each follower's home timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FanoutKind {
    /// ZADD the status (and trim the home to its cap).
    Post,
    /// ZREM the status.
    Delete,
}

impl FanoutKind {
    fn as_str(self) -> &'static str {
        match self {
            FanoutKind::Post => "post",
            FanoutKind::Delete => "delete",
        }
    }

    fn parse(s: &str) -> Option<FanoutKind> {
        match s {
            "post" => Some(FanoutKind::Post),
            "delete" => Some(FanoutKind::Delete),
            _ => None,
        }
    }
}

/// One queued piece of fan-out work.
#[derive(Debug, Clone, PartialEq)]
pub struct FanoutTask {
    /// Post or delete.
    pub kind: FanoutKind,
    /// The status.
    pub status_id: u64,
    /// Its author, whose followers are reached.
    pub uid: u64,
    /// The status's `posted` (a home keeps its whole second, [`timeline_score`]).
    pub posted: f64,
    /// Score of the last follower already reached.
    pub cursor_score: f64,
    /// Member (user id) of the last follower already reached.
    pub cursor_member: String,
    /// Score of the last follower of the range (`+inf`: open-ended).
    pub end_score: f64,
    /// Member of the last follower of the range.
    pub end_member: String,
}

impl FanoutTask {
    /// Whether the follower (`member`, `score`) is at or before the range's end.
    fn before_end(&self, member: &str, score: f64) -> bool {
        score < self.end_score || (score == self.end_score && member <= self.end_member.as_str())
    }

    /// The stream entry's single field `t`.
    fn encode(&self) -> String {
        format!(
            "{}|{}|{}|{}|{}|{}|{}|{}",
            self.kind.as_str(),
            self.status_id,
            self.uid,
            self.posted,
            self.cursor_score,
            self.cursor_member,
            self.end_score,
            self.end_member
        )
    }

    fn decode(fields: &[String]) -> Option<FanoutTask> {
        let t = fields
            .chunks(2)
            .find(|kv| kv.len() == 2 && kv[0] == "t")
            .map(|kv| kv[1].as_str())?;
        let p: Vec<&str> = t.split('|').collect();
        let [kind, sid, uid, posted, cs, cm, es, em] = p.as_slice() else {
            return None;
        };
        Some(FanoutTask {
            kind: FanoutKind::parse(kind)?,
            status_id: sid.parse().ok()?,
            uid: uid.parse().ok()?,
            posted: posted.parse().ok()?,
            cursor_score: cs.parse().ok()?,
            cursor_member: cm.to_string(),
            end_score: es.parse().ok()?,
            end_member: em.to_string(),
        })
    }
}

/// Outcome of one worker step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// No task was waiting.
    Idle,
    /// A batch reaching this many followers was done.
    Done(usize),
}

/// The fan-out: a status into its author's followers' homes, inline for
/// the first and by the queues' workers for the rest (`Store::fanout`).
#[derive(Clone, Copy)]
pub struct Fanout<'a> {
    pub(in crate::store) store: &'a Store,
}

impl<'a> Fanout<'a> {
    /// Which fan-out queues may hold work (the workers wait on it).
    pub fn hints(self) -> std::sync::Arc<crate::store::plumbing::fanout_hints::FanoutHints> {
        self.store.fanout_hints.clone()
    }

    /// Reaches the first followers inline and cuts the rest into ranges:
    /// returns the tasks to queue (by `op_retire`, as the entry retires).
    pub(crate) async fn inline(
        self,
        kind: FanoutKind,
        status_id: u64,
        uid: u64,
        posted: f64,
    ) -> StoreResult<Vec<String>> {
        let mut conn = self.store.conn();
        let task = FanoutTask {
            kind,
            status_id,
            uid,
            posted,
            cursor_score: f64::NEG_INFINITY,
            cursor_member: String::new(),
            end_score: f64::INFINITY,
            end_member: String::new(),
        };
        let followers = self
            .page(&mut conn, &task, self.store.fanout_inline)
            .await?;
        self.apply(&mut conn, &task, &followers).await?;
        let mut tasks = Vec::new();
        if followers.len() >= self.store.fanout_inline {
            // Cut the rest into ranges at every `fanout_batch`-th follower.
            let n: usize = conn.zcard(self.store.keys.followers(uid)).await?;
            let mut cuts: Vec<(f64, String)> = followers
                .last()
                .map(|(m, s)| (*s, m.clone()))
                .into_iter()
                .collect();
            let ranks: Vec<usize> = (1..)
                .map(|k| self.store.fanout_inline - 1 + k * self.store.fanout_batch)
                .take_while(|r| *r + 1 < n)
                .collect();
            if !ranks.is_empty() {
                let mut pipe = redis::pipe();
                for r in &ranks {
                    pipe.zrange_withscores(
                        self.store.keys.followers(uid),
                        *r as isize,
                        *r as isize,
                    );
                }
                let found: Vec<Vec<(String, f64)>> = pipe.query_async(&mut conn).await?;
                cuts.extend(found.into_iter().flatten().map(|(m, s)| (s, m)));
            }
            for (i, (cs, cm)) in cuts.iter().enumerate() {
                let (end_score, end_member) = cuts
                    .get(i + 1)
                    .cloned()
                    .unwrap_or((f64::INFINITY, String::new()));
                let range = FanoutTask {
                    cursor_score: *cs,
                    cursor_member: cm.clone(),
                    end_score,
                    end_member,
                    ..task.clone()
                };
                tasks.push(range.encode());
            }
        }
        Ok(tasks)
    }

    /// Takes `sids` out of the home of every follower of `uid` now, a page
    /// of followers at a time, one `ZREM` per home, queueing nothing: for a
    /// chain that is itself background work and must know the homes are
    /// clean before it goes on (an account's deletion, a round of its
    /// statuses at a time, before its follows end).
    pub(crate) async fn unhome_everywhere(self, uid: u64, sids: &[u64]) -> StoreResult<()> {
        if sids.is_empty() {
            return Ok(());
        }
        let mut conn = self.store.conn();
        let mut task = FanoutTask {
            kind: FanoutKind::Delete,
            status_id: 0,
            uid,
            posted: 0.0,
            cursor_score: f64::NEG_INFINITY,
            cursor_member: String::new(),
            end_score: f64::INFINITY,
            end_member: String::new(),
        };
        loop {
            let followers = self.page(&mut conn, &task, self.store.fanout_batch).await?;
            let homes: Vec<String> = followers
                .iter()
                .filter_map(|(member, _)| member.parse::<u64>().ok())
                .map(|follower| self.store.keys.home(follower))
                .collect();
            if !homes.is_empty() {
                let mut pipe = redis::pipe();
                for home in &homes {
                    pipe.zrem(home, sids).ignore();
                }
                let _: () = pipe.query_async(&mut conn).await?;
            }
            match followers.last() {
                Some((member, score)) if followers.len() >= self.store.fanout_batch => {
                    task.cursor_score = *score;
                    task.cursor_member = member.clone();
                }
                _ => return Ok(()),
            }
        }
    }

    /// Up to `limit` followers of the task's author after its cursor (and at
    /// most its end), in the followers ZSET's order.
    async fn page(
        self,
        conn: &mut RedisConn,
        task: &FanoutTask,
        limit: usize,
    ) -> StoreResult<Vec<(String, f64)>> {
        let raw: Vec<(String, f64)> = self
            .store
            .scripts
            .fanout_page
            .key(self.store.keys.followers(task.uid))
            .arg(task.cursor_score.to_string())
            .arg(&task.cursor_member)
            .arg(limit)
            .invoke_async(conn)
            .await?;
        Ok(raw
            .into_iter()
            .take_while(|(m, s)| task.before_end(m, *s))
            .collect())
    }

    /// Applies a task to a batch of followers, compensated (see the module
    /// docs): a post is taken back out of the homes of followers who have
    /// unfollowed meanwhile, and out of every home if the status has gone.
    async fn apply(
        self,
        conn: &mut RedisConn,
        task: &FanoutTask,
        followers: &[(String, f64)],
    ) -> StoreResult<()> {
        let mut ids: Vec<u64> = followers
            .iter()
            .filter_map(|(m, _)| m.parse::<u64>().ok())
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        let mut repost_of: Option<u64> = None;
        if task.kind == FanoutKind::Post {
            // A reply to a private account's status reaches only the homes
            // of those who also follow that account (or are it).
            let (audience, original): (Option<u64>, Option<u64>) = redis::cmd("HMGET")
                .arg(self.store.keys.status(task.status_id))
                .arg("audience")
                .arg("repost_of_uid")
                .query_async(conn)
                .await?;
            repost_of = original;
            if let Some(p) = audience {
                let mut pipe = redis::pipe();
                for f in &ids {
                    pipe.zscore(self.store.keys.following(*f), p);
                }
                let scores: Vec<Option<f64>> = pipe.query_async(conn).await?;
                ids = ids
                    .into_iter()
                    .zip(scores)
                    .filter(|(f, score)| *f == p || score.is_some())
                    .map(|(f, _)| f)
                    .collect();
                if ids.is_empty() {
                    return Ok(());
                }
            }
        }
        let mut pipe = redis::pipe();
        match task.kind {
            FanoutKind::Delete => {
                for &follower in &ids {
                    pipe.zrem(self.store.keys.home(follower), task.status_id)
                        .ignore();
                }
                let _: () = pipe.query_async(conn).await?;
                return Ok(());
            }
            FanoutKind::Post => {
                let trim = trims_homes(task.status_id);
                for &follower in &ids {
                    let home = self.store.keys.home(follower);
                    pipe.zadd(&home, task.status_id, timeline_score(task.posted))
                        .ignore();
                    if trim {
                        pipe.zremrangebyrank(&home, 0, -(HOME_CAP as isize) - 1)
                            .ignore();
                    }
                }
                for &follower in &ids {
                    pipe.zscore(self.store.keys.following(follower), task.uid);
                    // A relation that hides the author, or the reposted
                    // author, from the follower (`crate::hides`).
                    pipe.cmd("HMGET")
                        .arg(self.store.keys.hide(follower))
                        .arg(task.uid)
                        .arg(repost_of.unwrap_or(0));
                }
            }
        }
        // Each follower's re-read shares the slot (and so the ordered
        // sub-pipeline) of its home write; the status is checked after
        // every write has been made.
        let reply: Vec<redis::Value> = pipe.query_async(conn).await?;
        let exists = self.status_live(conn, task.status_id).await?;
        let undo: Vec<u64> = ids
            .iter()
            .zip(reply.chunks_exact(2))
            .filter(|(_, r)| {
                let hidden = redis::from_redis_value::<Vec<Option<String>>>(r[1].clone())
                    .unwrap_or_default()
                    .iter()
                    .flatten()
                    .any(|v| crate::hides::parse_pair(v).is_some_and(|(bits, _)| bits != 0));
                !exists || matches!(r[0], redis::Value::Nil) || hidden
            })
            .map(|(id, _)| *id)
            .collect();
        if !undo.is_empty() {
            let mut pipe = redis::pipe();
            for follower in undo {
                pipe.zrem(self.store.keys.home(follower), task.status_id)
                    .ignore();
            }
            let _: () = pipe.query_async(conn).await?;
        }
        Ok(())
    }

    /// Whether a status exists and is not being deleted.
    pub(crate) async fn status_live(self, conn: &mut RedisConn, sid: u64) -> StoreResult<bool> {
        let (id, deleted): (Option<String>, Option<String>) = redis::cmd("HMGET")
            .arg(self.store.keys.status(sid))
            .arg("id")
            .arg("deleted")
            .query_async(conn)
            .await?;
        Ok(id.is_some() && deleted.is_none())
    }

    /// Steps 2 and 3 of a follow change (the followee's followers, the
    /// follower's home).
    pub(crate) async fn follow_steps(
        self,
        source: u64,
        target: u64,
        follow: bool,
        seq: i64,
        at: f64,
    ) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let flag = if follow { "1" } else { "0" };
        let reply: redis::Value = self
            .store
            .scripts
            .follow_target
            .key(self.store.keys.followers(target))
            .key(self.store.keys.user(target))
            .key(self.store.keys.follower_seq(target))
            .key(self.store.keys.profile(target))
            .key(self.store.keys.deleted(target))
            .key(self.store.keys.hide(target))
            .arg(source)
            .arg(flag)
            .arg(seq)
            .arg(at)
            .arg(HOME_CAP)
            .invoke_async(&mut conn)
            .await?;
        let (newest, deleted): (Vec<String>, Vec<String>) =
            match redis::from_redis_value::<(i64, Vec<String>, Vec<String>)>(reply) {
                Ok((_, newest, deleted)) => (newest, deleted),
                Err(_) => (Vec::new(), Vec::new()),
            };
        let mut inv = self.store.scripts.follow_home.prepare_invoke();
        inv.key(self.store.keys.following(source))
            .key(self.store.keys.home(source))
            .key(self.store.keys.hide(source))
            .arg(target)
            .arg(HOME_CAP)
            .arg(newest.len() / 2);
        for item in &newest {
            inv.arg(item);
        }
        if !follow {
            for id in &deleted {
                inv.arg(id);
            }
        }
        let (_, hidden): (i64, Vec<u64>) = inv.invoke_async(&mut conn).await?;
        if follow && !newest.is_empty() {
            let ids: Vec<u64> = newest
                .iter()
                .step_by(2)
                .filter_map(|id| id.parse().ok())
                .collect();
            self.settle_backfill(source, &ids, &hidden).await?;
        }
        Ok(())
    }

    /// After statuses were copied into `owner`'s home (a follow's or an
    /// unmute's backfill), compensates as a fan-out batch does: a status
    /// deleted between the read of the profile and the copy must not stay
    /// (a delete after this check reaches the home through its own
    /// fan-out), nor a repost of a status by a user in `hidden` (those
    /// whose relations with `owner` hide them).
    pub(crate) async fn settle_backfill(
        self,
        owner: u64,
        ids: &[u64],
        hidden: &[u64],
    ) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("HMGET")
                .arg(self.store.keys.status(*id))
                .arg("id")
                .arg("deleted");
        }
        let rows: Vec<(Option<String>, Option<String>)> = pipe.query_async(&mut conn).await?;
        let gone: Vec<u64> = ids
            .iter()
            .zip(rows)
            .filter(|(_, (id, deleted))| id.is_none() || deleted.is_some())
            .map(|(id, _)| *id)
            .collect();
        if !gone.is_empty() {
            let _: () = conn.zrem(self.store.keys.home(owner), gone).await?;
        }
        if hidden.is_empty() {
            return Ok(());
        }
        let found = self.store.statuses().many(ids).await?;
        for other in hidden {
            let reposts: Vec<u64> = found
                .iter()
                .filter_map(|(id, s)| {
                    (s.as_ref()?.status.repost_of_uid == Some(Id(*other))).then_some(*id)
                })
                .collect();
            home_hide(self.store, owner, *other, &reposts).await?;
        }
        Ok(())
    }
}

/// `home_hide.lua`: `ids` leave `viewer`'s home if a relation with
/// `other` still hides them.
pub(crate) async fn home_hide(
    store: &Store,
    viewer: u64,
    other: u64,
    ids: &[u64],
) -> StoreResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let mut conn = store.conn();
    let mut inv = store.scripts.home_hide.prepare_invoke();
    inv.key(store.keys.hide(viewer))
        .key(store.keys.home(viewer))
        .arg(other)
        .arg(hides::FEED);
    for id in ids {
        inv.arg(id);
    }
    let _: i64 = inv.invoke_async(&mut conn).await?;
    Ok(())
}
