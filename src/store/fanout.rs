//! Fan-out on write: a status id enters (or, for a delete, leaves) the home
//! timeline of every follower of its author.
//!
//! The first `fanout_inline` followers (oldest follows first) are reached
//! before the POST or DELETE returns. The rest is cut into ranges of about
//! `fanout_batch` followers, one task per range on the `fanout` STREAM, so
//! that the workers of every process work them in parallel through a
//! consumer group. A range runs between two cursors (score and member of a
//! follower in the ZSET's order), not ranks, so followers who come and go
//! meanwhile shift nothing: every follower falls in exactly one range, and
//! the last range is open-ended. A worker that finds more than a batch in its
//! range (people followed since) does a batch and queues the remainder; it
//! finishes by adding that task and acknowledging its own in one MULTI/EXEC.
//! A worker killed mid-batch leaves its task pending, and another worker
//! reclaims it with XAUTOCLAIM after `reclaim_ms` and redoes the batch (ZADD,
//! ZREM and the trim are idempotent).

use super::{Store, StoreResult};
use crate::model::HOME_CAP;
use redis::aio::ConnectionManager;
use redis::AsyncCommands;

/// The consumer group of the fan-out workers.
pub const GROUP: &str = "workers";
/// Followers fetched beyond the batch to step over ties at the cursor's score.
const TIE_SLACK: usize = 64;

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
    /// The status's score in home timelines.
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
    /// Whether the follower (`member`, `score`) lies in the range.
    fn covers(&self, member: &str, score: f64) -> bool {
        let after_start = score > self.cursor_score
            || (score == self.cursor_score && member > self.cursor_member.as_str());
        let before_end = score < self.end_score
            || (score == self.end_score && member <= self.end_member.as_str());
        after_start && before_end
    }
}

impl FanoutTask {
    fn fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("kind", self.kind.as_str().to_string()),
            ("sid", self.status_id.to_string()),
            ("uid", self.uid.to_string()),
            ("posted", self.posted.to_string()),
            ("cs", self.cursor_score.to_string()),
            ("cm", self.cursor_member.clone()),
            ("es", self.end_score.to_string()),
            ("em", self.end_member.clone()),
        ]
    }

    fn from_fields(fields: &[String]) -> Option<FanoutTask> {
        let get = |k: &str| {
            fields
                .chunks(2)
                .find(|kv| kv.len() == 2 && kv[0] == k)
                .map(|kv| kv[1].as_str())
        };
        Some(FanoutTask {
            kind: match get("kind")? {
                "post" => FanoutKind::Post,
                "delete" => FanoutKind::Delete,
                _ => return None,
            },
            status_id: get("sid")?.parse().ok()?,
            uid: get("uid")?.parse().ok()?,
            posted: get("posted")?.parse().ok()?,
            cursor_score: get("cs")?.parse().ok()?,
            cursor_member: get("cm")?.to_string(),
            end_score: get("es")
                .and_then(|v| v.parse().ok())
                .unwrap_or(f64::INFINITY),
            end_member: get("em").unwrap_or("").to_string(),
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

impl Store {
    /// Reaches the first followers inline and queues the rest.
    pub async fn fanout(
        &self,
        kind: FanoutKind,
        status_id: u64,
        uid: u64,
        posted: f64,
    ) -> StoreResult<usize> {
        let mut conn = self.conn();
        let followers: Vec<(String, f64)> = conn
            .zrange_withscores(self.keys.followers(uid), 0, self.fanout_inline as isize - 1)
            .await?;
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
        self.apply(&mut conn, &task, &followers).await?;
        if followers.len() < self.fanout_inline {
            return Ok(followers.len());
        }
        // Cut the rest into ranges at every `fanout_batch`-th follower.
        let n: usize = conn.zcard(self.keys.followers(uid)).await?;
        let mut cuts: Vec<(f64, String)> = followers
            .last()
            .map(|(m, s)| (*s, m.clone()))
            .into_iter()
            .collect();
        let ranks: Vec<usize> = (1..)
            .map(|k| self.fanout_inline - 1 + k * self.fanout_batch)
            .take_while(|r| *r + 1 < n)
            .collect();
        if !ranks.is_empty() {
            let mut pipe = redis::pipe();
            for r in &ranks {
                pipe.zrange_withscores(self.keys.followers(uid), *r as isize, *r as isize);
            }
            let found: Vec<Vec<(String, f64)>> = pipe.query_async(&mut conn).await?;
            cuts.extend(found.into_iter().flatten().map(|(m, s)| (s, m)));
        }
        let mut pipe = redis::pipe();
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
            pipe.xadd(self.keys.fanout(), "*", &range.fields()).ignore();
        }
        let _: () = pipe.query_async(&mut conn).await?;
        Ok(followers.len())
    }

    /// Applies a task to a batch of followers in one pipeline.
    async fn apply(
        &self,
        conn: &mut ConnectionManager,
        task: &FanoutTask,
        followers: &[(String, f64)],
    ) -> StoreResult<()> {
        if followers.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for (member, _) in followers {
            let Ok(follower) = member.parse::<u64>() else {
                continue;
            };
            let home = self.keys.home(follower);
            match task.kind {
                FanoutKind::Post => {
                    pipe.zadd(&home, task.status_id, task.posted).ignore();
                    pipe.zremrangebyrank(&home, 0, -(HOME_CAP as isize) - 1)
                        .ignore();
                }
                FanoutKind::Delete => {
                    pipe.zrem(&home, task.status_id).ignore();
                }
            }
        }
        let _: () = pipe.query_async(conn).await?;
        Ok(())
    }

    /// Creates the consumer group if it is not there yet.
    pub async fn ensure_fanout_group(&self, conn: &mut ConnectionManager) -> StoreResult<()> {
        let created: redis::RedisResult<()> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(self.keys.fanout())
            .arg(GROUP)
            .arg("0")
            .arg("MKSTREAM")
            .query_async(conn)
            .await;
        match created {
            Err(e) if e.code() == Some("BUSYGROUP") => Ok(()),
            other => Ok(other?),
        }
    }

    /// Takes one task: first one abandoned by a dead worker for longer than
    /// `reclaim_ms`, else a new one (waiting up to `block_ms`).
    pub async fn claim_fanout(
        &self,
        conn: &mut ConnectionManager,
        consumer: &str,
        reclaim_ms: u64,
        block_ms: u64,
    ) -> StoreResult<Option<(String, Option<FanoutTask>)>> {
        let (_, claimed, _): (String, Vec<(String, Vec<String>)>, redis::Value) =
            redis::cmd("XAUTOCLAIM")
                .arg(self.keys.fanout())
                .arg(GROUP)
                .arg(consumer)
                .arg(reclaim_ms)
                .arg("0-0")
                .arg("COUNT")
                .arg(1)
                .query_async(conn)
                .await?;
        if let Some((id, fields)) = claimed.into_iter().next() {
            return Ok(Some((id, FanoutTask::from_fields(&fields))));
        }
        type Reply = Option<Vec<(String, Vec<(String, Vec<String>)>)>>;
        let reply: Reply = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(GROUP)
            .arg(consumer)
            .arg("COUNT")
            .arg(1)
            .arg("BLOCK")
            .arg(block_ms)
            .arg("STREAMS")
            .arg(self.keys.fanout())
            .arg(">")
            .query_async(conn)
            .await?;
        let entry = reply
            .and_then(|streams| streams.into_iter().next())
            .and_then(|(_, entries)| entries.into_iter().next());
        Ok(entry.map(|(id, fields)| {
            let task = FanoutTask::from_fields(&fields);
            (id, task)
        }))
    }

    /// Does the batch of a claimed task, queues the next batch and
    /// acknowledges this one atomically.
    pub async fn work_fanout(
        &self,
        conn: &mut ConnectionManager,
        entry_id: &str,
        task: Option<&FanoutTask>,
    ) -> StoreResult<Step> {
        let mut reached = 0;
        let mut next = None;
        if let Some(task) = task {
            let live = task.kind == FanoutKind::Delete
                || conn.exists(self.keys.status(task.status_id)).await?;
            if live {
                let raw: Vec<(String, f64)> = redis::cmd("ZRANGE")
                    .arg(self.keys.followers(task.uid))
                    .arg(task.cursor_score)
                    .arg(task.end_score)
                    .arg("BYSCORE")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(self.fanout_batch + TIE_SLACK)
                    .arg("WITHSCORES")
                    .query_async(conn)
                    .await?;
                let full = raw.len() == self.fanout_batch + TIE_SLACK;
                let mut batch: Vec<(String, f64)> = raw
                    .into_iter()
                    .filter(|(m, s)| task.covers(m, *s))
                    .collect();
                let more = full || batch.len() > self.fanout_batch;
                batch.truncate(self.fanout_batch);
                self.apply(conn, task, &batch).await?;
                reached = batch.len();
                if more {
                    if let Some((m, s)) = batch.last() {
                        next = Some(FanoutTask {
                            cursor_score: *s,
                            cursor_member: m.clone(),
                            ..task.clone()
                        });
                    }
                }
            }
        }
        let mut pipe = redis::pipe();
        pipe.atomic();
        if let Some(next) = &next {
            pipe.xadd(self.keys.fanout(), "*", &next.fields()).ignore();
        }
        pipe.xack(self.keys.fanout(), GROUP, &[entry_id]).ignore();
        pipe.xdel(self.keys.fanout(), &[entry_id]).ignore();
        let _: () = pipe.query_async(conn).await?;
        Ok(Step::Done(reached))
    }

    /// Tasks queued or in progress.
    pub async fn fanout_depth(&self) -> StoreResult<u64> {
        let mut conn = self.conn();
        Ok(conn.xlen(self.keys.fanout()).await?)
    }

    /// Age in seconds of the oldest queued task (0 when empty).
    pub async fn fanout_lag(&self) -> StoreResult<f64> {
        let mut conn = self.conn();
        let rows: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
            .arg(self.keys.fanout())
            .arg("-")
            .arg("+")
            .arg("COUNT")
            .arg(1)
            .query_async(&mut conn)
            .await?;
        let Some((id, _)) = rows.first() else {
            return Ok(0.0);
        };
        let ms: f64 = id
            .split('-')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0.0);
        Ok((crate::model::now() - ms / 1000.0).max(0.0))
    }
}
