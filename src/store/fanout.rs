//! Fan-out on write: a status id enters (or, for a delete, leaves) the home
//! timeline of every follower of its author.
//!
//! The first `fanout_inline` followers (oldest follows first) are reached
//! before the POST or DELETE returns. When there may be more, one task goes
//! to the `fanout` STREAM, worked through a consumer group by worker tasks in
//! pipelined batches of `fanout_batch` followers. A task carries a cursor
//! (score and member of the last follower reached), so it does not depend on
//! ranks that shift as people follow and unfollow. A worker finishes a batch
//! by adding the task for the next batch and acknowledging its own in one
//! MULTI/EXEC; a worker killed mid-batch leaves its task pending, and another
//! worker reclaims it with XAUTOCLAIM after `reclaim_ms` and redoes the batch
//! (ZADD, ZREM and the trim are idempotent).

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
        };
        self.apply(&mut conn, &task, &followers).await?;
        if followers.len() >= self.fanout_inline {
            let (cs, cm) = followers
                .last()
                .map(|(m, s)| (*s, m.clone()))
                .unwrap_or_default();
            let next = FanoutTask {
                cursor_score: cs,
                cursor_member: cm,
                ..task
            };
            let _: String = conn.xadd(self.keys.fanout(), "*", &next.fields()).await?;
        }
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
                    .arg("+inf")
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
                    .filter(|(m, s)| {
                        *s > task.cursor_score || m.as_str() > task.cursor_member.as_str()
                    })
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
