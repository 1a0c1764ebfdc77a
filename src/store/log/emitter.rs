//! Group commit of events, per shard of the event log: every write of the
//! process whose partitioned outbox op reached its event step for a shard
//! while the previous `emit_once.lua` call for that shard was under way
//! goes out in the next call there, one script and one publish for all of
//! them.
//!
//! An op's events go to their shards (`keys::log_shard` of each event's
//! partition key), one job a shard, and the op waits for all of them.
//! Alone a shard's call costs its slot an EVALSHA, a read and a write of
//! its mark, a TIME, an XADD and a publish; batched, all of them are shared
//! by the batch (the marks of a batch of three or more are one HMGET and
//! one HSET, its events one buffer entry), and so is the round trip. No
//! write waits for a batch to fill: one call is in flight at a time in a
//! shard, and the next takes whatever queued meanwhile (at most
//! [`MOST_OPS`]), after a few turns of the runtime (no timer) that let
//! writes whose replies are being handled join it. So a lone write goes
//! out at once and a busy process sends larger batches.

use crate::store::log::clocks::NodeClocks;
use crate::store::log::id::EventId;
use crate::store::plumbing::conn::RedisConn;
use crate::store::plumbing::error::{StoreError, StoreResult};
use crate::store::plumbing::keys::MAX_LOG_SHARDS;
use crate::store::plumbing::scripts::Scripts;
use std::sync::{Arc, OnceLock};
use tokio::sync::{mpsc, oneshot};

/// Most ops in one call (and so events in one published message, times
/// the few events an op has).
pub(crate) const MOST_OPS: usize = 64;

/// Most events in one call (one buffer entry) but for a single op's, so
/// that the script's XADD stays well inside Lua's limit on arguments
/// (an op has at most a status and its mentions' notices).
pub(crate) const MOST_EVENTS: usize = 1024;

/// Turns the emitting task gives the runtime before it takes a batch.
const YIELDS: usize = 3;

/// What one op has to emit, and where its caller waits.
struct Job {
    op: u64,
    events: Vec<String>,
    /// An id its entry must follow ("" none): its write's entry in the
    /// shard before.
    after: String,
    reply: oneshot::Sender<StoreResult<Option<String>>>,
}

/// What a shard's emitting task needs of the store.
pub(crate) struct Sink {
    pub conn: RedisConn,
    pub scripts: Arc<Scripts>,
    pub emitted: String,
    pub events: String,
    pub channel: String,
    /// `SPUBLISH` on a cluster, `PUBLISH` on one Redis.
    pub publish: &'static str,
    /// The shard's number.
    pub shard: usize,
    /// The shard's share of the buffer's capacity, in events.
    pub maxlen: u64,
    /// Whether the shard is trimmed exactly (a small share: `LogShape::exact`).
    pub exact: bool,
}

/// The process's emitter: a shard's task starts with the first op to emit
/// there, and ends when every store handle holding it is gone.
pub(crate) struct Emitter {
    jobs: Box<[OnceLock<mpsc::UnboundedSender<Job>>]>,
}

impl Default for Emitter {
    fn default() -> Self {
        Emitter {
            jobs: (0..MAX_LOG_SHARDS).map(|_| OnceLock::new()).collect(),
        }
    }
}

impl Emitter {
    /// Emits op `op`'s events once in each of their shards (its mark
    /// there decides), `events` as (shard, body): the smallest id among
    /// its events emitted by this call, `None` when they all went out
    /// before. The shards go one after the other in the order their first
    /// events come, each entry after the one before (`log_append`'s
    /// `after`), so the write's events keep their order on every stream
    /// (a status before its mentions), whatever the masters' clocks say;
    /// and it returns once every master's clock has passed the last of
    /// them (`clocks`' commit-wait), so that a write begun after it is
    /// acknowledged comes after it on every stream.
    pub(crate) async fn emit(
        &self,
        sink: impl Fn(usize) -> Sink,
        op: u64,
        events: Vec<(usize, String)>,
        clocks: &NodeClocks,
    ) -> StoreResult<Option<String>> {
        let stopped = || StoreError::Unavailable("the event emitter stopped".into());
        let mut shards: Vec<(usize, Vec<String>)> = Vec::new();
        for (k, body) in events {
            match shards.iter_mut().find(|(j, _)| *j == k) {
                Some((_, bodies)) => bodies.push(body),
                None => shards.push((k, vec![body])),
            }
        }
        let mut first: Option<((u64, u64), String)> = None;
        let mut after = String::new();
        for (k, events) in shards {
            let jobs = self.jobs[k].get_or_init(|| {
                let (tx, rx) = mpsc::unbounded_channel();
                tokio::spawn(run(sink(k), rx));
                tx
            });
            let (reply, answer) = oneshot::channel();
            jobs.send(Job {
                op,
                events,
                after: std::mem::take(&mut after),
                reply,
            })
            .map_err(|_| stopped())?;
            // A rerun whose events here went out before has no entry to
            // follow: its next shard's entry follows nothing.
            if let Some(id) = answer.await.map_err(|_| stopped())?? {
                let at = entry_order(&id);
                if first.as_ref().is_none_or(|(f, _)| at < *f) {
                    first = Some((at, id.clone()));
                }
                after = id;
            }
        }
        if let Some(last) = EventId::parse(&after) {
            clocks.wait_past(last).await;
        }
        Ok(first.map(|(_, id)| id))
    }
}

/// The place in the log of an event id's entry (`<ms>-<seq>`, or
/// `<ms>-<seq>.<n>` for the n-th event after an entry's first).
fn entry_order(id: &str) -> (u64, u64) {
    let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
    let seq = seq.split_once('.').map_or(seq, |(s, _)| s);
    (ms.parse().unwrap_or(0), seq.parse().unwrap_or(0))
}

async fn run(mut sink: Sink, mut jobs: mpsc::UnboundedReceiver<Job>) {
    // A job that did not fit the previous batch starts the next one.
    let mut held: Option<Job> = None;
    let mut sizes = EntrySizes::default();
    loop {
        let first = match held.take() {
            Some(job) => job,
            None => match jobs.recv().await {
                Some(job) => job,
                None => return,
            },
        };
        // Let the writes whose replies are being handled reach this step
        // first (microseconds, never a timer): a fuller batch shares more.
        for _ in 0..YIELDS {
            tokio::task::yield_now().await;
        }
        let mut events = first.events.len();
        let mut batch = vec![first];
        while batch.len() < MOST_OPS {
            match jobs.try_recv() {
                Ok(job) if events + job.events.len() > MOST_EVENTS => {
                    held = Some(job);
                    break;
                }
                Ok(job) => {
                    events += job.events.len();
                    batch.push(job);
                }
                Err(_) => break,
            }
        }
        let maxlen = sizes.entries_for(sink.maxlen, events);
        match call(&mut sink, &batch, maxlen).await {
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

/// The sizes of this process's newest buffer entries (runs of equal
/// sizes), enough of them to hold `--replay-maxlen` events: trimming the
/// buffer to that many entries keeps about `--replay-maxlen` events, though
/// MAXLEN counts entries and an entry holds a batch's events. Other
/// processes' entries are taken to be like this process's. Never more
/// entries than `--replay-maxlen`: entries it has not seen count as one
/// event each.
#[derive(Default)]
struct EntrySizes {
    runs: std::collections::VecDeque<(u64, u64)>,
    entries: u64,
    events: u64,
}

impl EntrySizes {
    /// Counts an entry of `events` and gives the MAXLEN (entries) that
    /// keeps about `maxlen` events.
    fn entries_for(&mut self, maxlen: u64, events: usize) -> u64 {
        let size = events.max(1) as u64;
        match self.runs.back_mut() {
            Some((s, n)) if *s == size => *n += 1,
            _ => self.runs.push_back((size, 1)),
        }
        self.entries += 1;
        self.events += size;
        // Forget the oldest entries the newest `maxlen` events do without.
        while let Some((s, n)) = self.runs.front_mut() {
            if self.events - *s < maxlen {
                break;
            }
            self.events -= *s;
            self.entries -= 1;
            *n -= 1;
            if *n == 0 {
                self.runs.pop_front();
            }
        }
        (self.entries + maxlen.saturating_sub(self.events)).max(1)
    }
}

async fn call(sink: &mut Sink, batch: &[Job], maxlen: u64) -> StoreResult<Vec<String>> {
    let mut inv = sink.scripts.emit_once.prepare_invoke();
    inv.key(&sink.emitted)
        .key(&sink.events)
        .arg(format!("{}{maxlen}", if sink.exact { '=' } else { '~' }))
        .arg(&sink.channel)
        .arg(sink.publish)
        .arg(sink.shard)
        .arg(
            batch
                .iter()
                .map(|j| j.after.as_str())
                .max_by_key(|a| entry_order(a))
                .unwrap_or(""),
        );
    for job in batch {
        inv.arg(job.op).arg(job.events.len());
        for e in &job.events {
            inv.arg(e);
        }
    }
    Ok(inv.invoke_async(&mut sink.conn).await?)
}

#[cfg(test)]
mod tests {
    use super::EntrySizes;

    #[test]
    fn the_buffer_keeps_about_its_capacity_in_events_whatever_the_batch_size() {
        let mut sizes = EntrySizes::default();
        assert_eq!(
            sizes.entries_for(1_000, 1),
            1_000,
            "unseen entries: one event each"
        );
        assert_eq!(
            sizes.entries_for(1_000, 9),
            992,
            "10 events in 2 entries, 990 unseen"
        );
        let mut last = 0;
        for _ in 0..1_000 {
            last = sizes.entries_for(1_000, 4);
        }
        assert_eq!(last, 250, "batches of four: a quarter as many entries");
        // A burst of large batches: the newest 1,000 events are in 16 of
        // them, so the older small ones go, no more.
        for _ in 0..20 {
            last = sizes.entries_for(1_000, 64);
        }
        assert_eq!(last, 16);
        assert!(sizes.events >= 1_000 && sizes.events < 1_064);
        assert_eq!(sizes.runs.len(), 1, "memory: runs of equal sizes");
        // Back to singles: entries grow back as the events show.
        for _ in 0..500 {
            last = sizes.entries_for(1_000, 1);
        }
        assert_eq!(last, 500 + 8, "500 singles and the newest eight of 64");
        assert_eq!(EntrySizes::default().entries_for(3, 64), 1, "never 0");
    }
}
