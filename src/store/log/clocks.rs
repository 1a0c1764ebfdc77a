//! The commit-wait: a write is acknowledged only once every node's clock
//! has passed the ids of the events it wrote, so that a write begun after
//! the acknowledgement gets later ids on whatever node it lands, even when
//! the masters' clocks disagree. Without it, a follow written on a master
//! whose clock runs 5 ms ahead gets an id that a post sent right after, on
//! a master that runs on time, would come before: the merge would hand the
//! post on first, and the follower's stream would not have it.
//!
//! What a process knows of a node's clock is a lower bound of its offset
//! from the process's own: a node's time heard at local time `r` (a
//! message's floor line, a probe's `TIME`, [`store::events::merge`](crate::store::log::merge)) was
//! read at or before `r`, so the node's clock is at least `time - r` ahead
//! of ours from then on. The bound is the best heard over the last few
//! seconds (the subscriber probes every node every two): a message that
//! waited in a queue only lowers it, so it errs towards waiting longer.
//! On one Redis, and on masters whose clocks agree, the wait is nothing:
//! by the time a write's reply is back, every clock is past its ids.

use super::id::EventId;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a bound heard stays the best: the subscriber probes every
/// node every two seconds, so at least one fresh one lies in every window.
const WINDOW: Duration = Duration::from_secs(5);

/// The most a write waits for a node's clock: a node further ahead than
/// this is a broken clock, and a write does not wait for it (logged once a
/// window; causal order across masters then holds only within this).
pub const MOST_WAIT: Duration = Duration::from_millis(250);

/// One node's bound: the best of this window and of the window before, in
/// microseconds of the node's clock ahead of ours (negative: behind).
#[derive(Debug, Clone, Copy)]
struct Bound {
    now: i64,
    before: Option<i64>,
    since: Instant,
}

/// What the process knows of each node's clock (`Events::clocks`).
#[derive(Debug, Default)]
pub struct NodeClocks {
    nodes: Mutex<Vec<Option<Bound>>>,
}

/// This process's clock, in microseconds since the epoch.
fn local_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// The microsecond an id or a floor (`<ms>-<µs * 1024 + shard>`) names.
fn micros(id: EventId) -> i64 {
    (id.0 as i64)
        .saturating_mul(1000)
        .saturating_add((id.1 >> 10) as i64)
}

impl NodeClocks {
    /// Forgets every node: the subscription was made again, with `nodes`
    /// nodes (numbered as its merge numbers them).
    pub fn reset(&self, nodes: usize) {
        if let Ok(mut n) = self.nodes.lock() {
            *n = vec![None; nodes];
        }
    }

    /// Node `node`'s time was `floor`, heard just now.
    pub fn heard(&self, node: usize, floor: EventId) {
        self.heard_at(node, micros(floor) - local_us(), Instant::now());
    }

    fn heard_at(&self, node: usize, ahead: i64, at: Instant) {
        let Ok(mut nodes) = self.nodes.lock() else {
            return;
        };
        if nodes.len() <= node {
            nodes.resize(node + 1, None);
        }
        let slot = &mut nodes[node];
        *slot = Some(match *slot {
            Some(b) if at.duration_since(b.since) < WINDOW => Bound {
                now: b.now.max(ahead),
                ..b
            },
            Some(b) => Bound {
                now: ahead,
                before: Some(b.now),
                since: at,
            },
            None => Bound {
                now: ahead,
                before: None,
                since: at,
            },
        });
    }

    /// How long until every node known has a clock past `id` (its
    /// microsecond and beyond): nothing when they all are, at most
    /// [`MOST_WAIT`].
    pub fn wait_for(&self, id: EventId) -> Duration {
        self.wait_at(id, local_us())
    }

    /// The least of the nodes' bounds: how far the slowest clock we know
    /// of is ahead of ours, at least (`None`: fewer than two nodes heard;
    /// one clock cannot disagree with itself, and every id a node writes
    /// after another it has read is later).
    fn slowest(&self) -> Option<i64> {
        let nodes = self.nodes.lock().ok()?;
        if nodes.iter().flatten().count() < 2 {
            return None;
        }
        nodes
            .iter()
            .flatten()
            .map(|b| b.before.map_or(b.now, |p| p.max(b.now)))
            .min()
    }

    /// The slowest node's time now, at least, as a position in the log:
    /// every entry any node writes from now on has an id at or after it.
    pub fn slowest_now(&self) -> Option<EventId> {
        let us = (local_us() + self.slowest()?).max(0) as u64;
        Some(EventId(us / 1000, (us % 1000) << 10, 0))
    }

    fn wait_at(&self, id: EventId, local: i64) -> Duration {
        let Some(slowest) = self.slowest() else {
            return Duration::ZERO;
        };
        let short = micros(id) + 1 - (local + slowest);
        if short <= 0 {
            return Duration::ZERO;
        }
        Duration::from_micros(short as u64).min(MOST_WAIT)
    }

    /// Waits until every node's clock is past `id` (a write's newest
    /// entry), as far as this process knows them.
    pub async fn wait_past(&self, id: EventId) {
        let wait = self.wait_for(id);
        if wait.is_zero() {
            return;
        }
        if wait >= MOST_WAIT {
            tracing::warn!(
                id = %id,
                "a Redis node's clock runs more than {} ms ahead of another's: \
                 writes through different masters may be ordered against their causes",
                MOST_WAIT.as_millis()
            );
        }
        crate::metrics::inc(&crate::metrics::global().commit_waits, 1);
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An id at microsecond `us` of the epoch (in shard 5).
    fn at(us: i64) -> EventId {
        EventId((us / 1000) as u64, ((us % 1000) as u64) * 1024 + 5, 0)
    }

    #[test]
    fn a_write_waits_for_the_slowest_clock_to_pass_its_ids() {
        let clocks = NodeClocks::default();
        assert_eq!(
            clocks.wait_for(at(local_us() + 10_000)),
            Duration::ZERO,
            "no node heard: nothing to wait for"
        );
        let t0 = Instant::now();
        let local = 1_000_000_000;
        clocks.heard_at(0, -5_000, t0);
        assert_eq!(
            clocks.wait_at(at(local + 40_000), local),
            Duration::ZERO,
            "one Redis: one clock, nothing to wait for"
        );
        assert_eq!(clocks.slowest_now(), None);
        // Node 0 runs 40 ms ahead, node 1 on time, node 2 2 ms behind.
        clocks.heard_at(0, 40_000, t0);
        clocks.heard_at(1, 0, t0);
        clocks.heard_at(2, -2_000, t0);
        // A stream opened now starts no later than node 2's time: 2 ms
        // behind ours.
        let before = local_us();
        let start = micros(clocks.slowest_now().unwrap());
        assert!((before - 2_000..=local_us() - 2_000).contains(&start));
        // A follow written on node 0 just now: id 40 ms ahead of us. The
        // slowest clock (node 2) passes it 42 ms from now.
        let wait = clocks.wait_at(at(local + 40_000), local);
        assert_eq!(wait, Duration::from_micros(42_001));
        // An id every clock has passed: no wait.
        assert_eq!(clocks.wait_at(at(local - 3_000), local), Duration::ZERO);
        // A later, better bound for node 2 (a message that did not queue)
        // shortens the wait; a worse one (a message that queued) does not
        // lengthen it.
        clocks.heard_at(2, -500, t0 + Duration::from_millis(10));
        clocks.heard_at(2, -9_000, t0 + Duration::from_millis(20));
        assert_eq!(
            clocks.wait_at(at(local + 40_000), local),
            Duration::from_micros(40_501)
        );
        // A clock a second ahead: the wait is capped.
        assert_eq!(clocks.wait_at(at(local + 1_000_000), local), MOST_WAIT);
    }

    #[test]
    fn a_bound_lasts_a_window_and_the_next_then_gives_way() {
        let clocks = NodeClocks::default();
        let t0 = Instant::now();
        let local = 2_000_000_000;
        clocks.heard_at(1, 90_000, t0);
        clocks.heard_at(0, 5_000, t0);
        // A new window: the old best still counts ...
        clocks.heard_at(0, 1_000, t0 + WINDOW);
        assert_eq!(clocks.wait_at(at(local), local), Duration::ZERO);
        assert_eq!(
            clocks.wait_at(at(local + 5_000), local),
            Duration::from_micros(1),
            "the best of the last two windows: 5 ms ahead"
        );
        // ... until a window later (the node's clock was set back).
        clocks.heard_at(0, 1_000, t0 + WINDOW * 2 + Duration::from_millis(1));
        assert_eq!(
            clocks.wait_at(at(local + 5_000), local),
            Duration::from_micros(4_001)
        );
        clocks.reset(3);
        assert_eq!(clocks.wait_at(at(local + 5_000), local), Duration::ZERO);
    }
}
