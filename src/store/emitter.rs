//! Group commit of events: every write of the process whose partitioned
//! outbox op reached its event step while the previous `emit_once.lua` call
//! was under way goes out in the next call, one script and one PUBLISH for
//! all of them.
//!
//! The event step is the one piece of a write that every write sends to the
//! `{g}` slot (the ordered buffer). Alone it costs `{g}` an EVALSHA, a
//! read and a write of its mark, an XADD and a PUBLISH; batched, all but
//! the XADD are shared by the batch (the marks of a batch of three or
//! more are one HMGET and one HSET), and so is the round trip. No write
//! waits for a batch to fill: one call is in flight at a time, and the
//! next takes whatever queued meanwhile (at most [`MOST_OPS`]), after a
//! few turns of the runtime (no timer) that let writes whose replies are
//! being handled join it. So a lone write goes out at once and a busy
//! process sends larger batches.

use super::conn::RedisConn;
use super::{Scripts, StoreError, StoreResult};
use std::sync::{Arc, OnceLock};
use tokio::sync::{mpsc, oneshot};

/// Most ops in one call (and so events in one published message, times
/// the few events an op has).
pub const MOST_OPS: usize = 64;

/// Turns the emitting task gives the runtime before it takes a batch.
const YIELDS: usize = 3;

/// What one op has to emit, and where its caller waits.
struct Job {
    op: u64,
    events: Vec<String>,
    reply: oneshot::Sender<StoreResult<Option<String>>>,
}

/// What the emitting task needs of the store.
pub(crate) struct Sink {
    pub conn: RedisConn,
    pub scripts: Arc<Scripts>,
    pub emitted: String,
    pub events: String,
    pub channel: String,
    pub maxlen: u64,
}

/// The process's emitter: its task starts with the first op to emit, and
/// ends when every store handle holding it is gone.
#[derive(Default)]
pub(crate) struct Emitter {
    jobs: OnceLock<mpsc::UnboundedSender<Job>>,
}

impl Emitter {
    /// Emits op `op`'s events once (its mark decides): the id of its first
    /// event when this call emitted them, `None` when they went out before.
    pub(crate) async fn emit(
        &self,
        sink: impl FnOnce() -> Sink,
        op: u64,
        events: Vec<String>,
    ) -> StoreResult<Option<String>> {
        let jobs = self.jobs.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(run(sink(), rx));
            tx
        });
        let (reply, answer) = oneshot::channel();
        let stopped = || StoreError::Unavailable("the event emitter stopped".into());
        jobs.send(Job { op, events, reply })
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

async fn run(mut sink: Sink, mut jobs: mpsc::UnboundedReceiver<Job>) {
    while let Some(first) = jobs.recv().await {
        // Let the writes whose replies are being handled reach this step
        // first (microseconds, never a timer): a fuller batch shares more.
        for _ in 0..YIELDS {
            tokio::task::yield_now().await;
        }
        let mut batch = vec![first];
        while batch.len() < MOST_OPS {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        match call(&mut sink, &batch).await {
            Ok(firsts) if firsts.len() == batch.len() => {
                for (job, first) in batch.into_iter().zip(firsts) {
                    let _ = job.reply.send(Ok((!first.is_empty()).then_some(first)));
                }
            }
            Ok(firsts) => {
                let e = format!(
                    "emit_once: {} answers for {} ops",
                    firsts.len(),
                    batch.len()
                );
                for job in batch {
                    let _ = job.reply.send(Err(StoreError::Internal(e.clone())));
                }
            }
            Err(e) => {
                // Each write fails (503) and a worker finishes it: the
                // marks tell which events went out.
                let e = format!("events not emitted: {e}");
                for job in batch {
                    let _ = job.reply.send(Err(StoreError::Unavailable(e.clone())));
                }
            }
        }
    }
}

async fn call(sink: &mut Sink, batch: &[Job]) -> StoreResult<Vec<String>> {
    let mut inv = sink.scripts.emit_once.prepare_invoke();
    inv.key(&sink.emitted)
        .key(&sink.events)
        .arg(sink.maxlen)
        .arg(&sink.channel);
    for job in batch {
        inv.arg(job.op).arg(job.events.len());
        for e in &job.events {
            inv.arg(e);
        }
    }
    Ok(inv.invoke_async(&mut sink.conn).await?)
}
