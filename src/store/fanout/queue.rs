//! The durable fan-out queues: each a Redis STREAM with one consumer
//! group of workers; a task is taken (a dead worker's first, after
//! `reclaim_ms`), worked a page at a time, and acknowledged together with
//! the queueing of its next page.

use super::{Fanout, FanoutKind, FanoutTask, Queue, Step, GROUP};
use crate::model::now;
use crate::store::plumbing::conn::RedisConn;
use crate::store::plumbing::error::StoreResult;
use crate::store::plumbing::keys::OUTBOX_PARTS;
use redis::AsyncCommands;

impl<'a> Fanout<'a> {
    /// Creates the consumer group of `queue` if it is not there yet.
    pub async fn ensure_group(self, conn: &mut RedisConn, queue: Queue) -> StoreResult<()> {
        let created: redis::RedisResult<()> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(self.store.keys.part_fanout(queue))
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

    /// Takes one task of `queue`, without waiting: first one abandoned by a
    /// dead worker for longer than `reclaim_ms`, else a new one.
    pub async fn claim(
        self,
        conn: &mut RedisConn,
        queue: Queue,
        consumer: &str,
        reclaim_ms: u64,
    ) -> StoreResult<Option<(String, Option<FanoutTask>)>> {
        let key = self.store.keys.part_fanout(queue);
        let (_, claimed, _): (String, Vec<(String, Vec<String>)>, redis::Value) =
            redis::cmd("XAUTOCLAIM")
                .arg(&key)
                .arg(GROUP)
                .arg(consumer)
                .arg(reclaim_ms)
                .arg("0-0")
                .arg("COUNT")
                .arg(1)
                .query_async(conn)
                .await?;
        if let Some((id, fields)) = claimed.into_iter().next() {
            return Ok(Some((id, FanoutTask::decode(&fields))));
        }
        type Reply = Option<Vec<(String, Vec<(String, Vec<String>)>)>>;
        let reply: Reply = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(GROUP)
            .arg(consumer)
            .arg("COUNT")
            .arg(1)
            .arg("STREAMS")
            .arg(&key)
            .arg(">")
            .query_async(conn)
            .await?;
        let entry = reply
            .and_then(|streams| streams.into_iter().next())
            .and_then(|(_, entries)| entries.into_iter().next());
        Ok(entry.map(|(id, fields)| {
            let task = FanoutTask::decode(&fields);
            (id, task)
        }))
    }

    /// Does the batch of a claimed task, then acknowledges it and queues the
    /// rest of its range in one step.
    pub async fn work(
        self,
        conn: &mut RedisConn,
        queue: Queue,
        entry_id: &str,
        task: Option<&FanoutTask>,
    ) -> StoreResult<Step> {
        let mut reached = 0;
        let mut next = None;
        if let Some(task) = task {
            let live =
                task.kind == FanoutKind::Delete || self.status_live(conn, task.status_id).await?;
            if live {
                let batch = self.page(conn, task, self.store.fanout_batch).await?;
                self.apply(conn, task, &batch).await?;
                reached = batch.len();
                if batch.len() == self.store.fanout_batch {
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
        let _: i64 = self
            .store
            .scripts
            .fanout_ack
            .key(self.store.keys.part_fanout(queue))
            .arg(GROUP)
            .arg(entry_id)
            .arg(next.map(|n| n.encode()).unwrap_or_default())
            .invoke_async(conn)
            .await?;
        Ok(Step::Done(reached))
    }

    /// Tasks queued or in progress, in every queue (read one queue after
    /// another, as `outbox::outboxes` explains).
    pub async fn depth(self) -> StoreResult<u64> {
        let mut conn = self.store.conn();
        let mut depth = 0;
        for queue in 0..OUTBOX_PARTS {
            let n: u64 = conn.xlen(self.store.keys.part_fanout(queue)).await?;
            depth += n;
        }
        Ok(depth)
    }

    /// Age in seconds of the oldest queued task of any queue (0 when all
    /// are empty).
    pub async fn lag(self) -> StoreResult<f64> {
        let mut conn = self.store.conn();
        let mut oldest: Option<f64> = None;
        for queue in 0..OUTBOX_PARTS {
            let rows: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
                .arg(self.store.keys.part_fanout(queue))
                .arg("-")
                .arg("+")
                .arg("COUNT")
                .arg(1)
                .query_async(&mut conn)
                .await?;
            let ms = rows
                .first()
                .and_then(|(id, _)| id.split('-').next()?.parse::<f64>().ok());
            if let Some(ms) = ms {
                oldest = Some(oldest.map_or(ms, |o| o.min(ms)));
            }
        }
        Ok(oldest.map_or(0.0, |ms| (now() - ms / 1000.0).max(0.0)))
    }
}
