//! Status ids built from time (a snowflake, as Twitter's), so that the order
//! of ids and a status's place in every timeline are one order by
//! construction. User ids come from the same generator (since 2026-11-27;
//! users signed up before keep the ids a `{g}` counter gave them), so a
//! sign-up takes no shared counter either.
//!
//! An id is `ms << 12 | instance << 6 | sequence`: `ms` the milliseconds
//! since [`EPOCH_MS`] (2015-01-01 UTC) on this process's clock, `instance` a
//! number 0-63 this process holds a lease on in Redis, `sequence` 0-63
//! within the millisecond. A status's `posted` time is its id's millisecond,
//! and timelines are scored by `posted`: statuses of one millisecond tie on
//! the score and Redis orders ties by member, byte-wise, which for ids of
//! equal length (16 digits from 2022 to 2084) is the order of the ids. So a
//! timeline newest first is ids descending, whichever process or clock made
//! them, and a `max_id` page boundary cannot cut between two statuses that
//! disagree.
//!
//! Ids stay below 2^53, so a score, a JSON number in a client and a double
//! all hold them exactly. Ids issued before snowflakes (a counter from 1)
//! are all below [`FIRST`], so they sort before every snowflake.
//!
//! No shared counter is on the write path: a process takes an instance
//! number once (`SET NX PX`, trying each in turn from a random start) and
//! renews it every ~20 s; it issues ids only while its lease is surely
//! alive (a margin below Redis's expiry, on the monotonic clock), so two
//! live processes never share an instance. A process shutting down gives
//! its number back; a killed one's lapses within a minute. 64 processes may post at once;
//! each issues up to 64 ids a millisecond (a burst beyond borrows the next
//! millisecond, so ids stay unique and ordered).

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Milliseconds from the Unix epoch to 2015-01-01 00:00:00 UTC.
pub const EPOCH_MS: u64 = 1_420_070_400_000;
/// The smallest snowflake: every id below it came from the old counter.
pub const FIRST: u64 = 1 << 40;
const INSTANCE_BITS: u32 = 6;
const SEQUENCE_BITS: u32 = 6;
/// How many processes may issue ids at once.
pub const INSTANCES: u64 = 1 << INSTANCE_BITS;
const SEQUENCES: u64 = 1 << SEQUENCE_BITS;
/// How long Redis keeps an instance lease unless renewed.
pub(crate) const LEASE_TTL: Duration = Duration::from_secs(60);
/// Ids are issued only until this long before Redis's expiry (measured
/// from before the SET was sent), so clock drift between here and Redis
/// cannot let two processes hold one number.
const LEASE_MARGIN: Duration = Duration::from_secs(15);
/// A lease with less than this left is renewed before the next id.
const RENEW_WHEN_LEFT: Duration = Duration::from_secs(25);

/// The millisecond a snowflake was made at (since the Unix epoch), or
/// `None` for an id of the old counter.
pub fn millis_of(id: u64) -> Option<u64> {
    (id >= FIRST).then(|| (id >> (INSTANCE_BITS + SEQUENCE_BITS)) + EPOCH_MS)
}

/// An id laid out as a snowflake of millisecond `ms` with `low` (12 bits)
/// in place of the instance and sequence: ids made elsewhere (a
/// notification's, from its event's) that sort and date as snowflakes do,
/// with no lease.
pub fn snowflake_at(ms: u64, low: u64) -> u64 {
    (ms.saturating_sub(EPOCH_MS) << (INSTANCE_BITS + SEQUENCE_BITS)) | (low & 0xFFF)
}

/// The `posted` time (seconds since the Unix epoch) of a snowflake.
pub fn posted_of(id: u64) -> Option<f64> {
    millis_of(id).map(|ms| ms as f64 / 1000.0)
}

/// A process's id generator: its lease and its last millisecond.
pub struct IdGen {
    /// Added to the wall clock (tests run processes whose clocks differ).
    offset_ms: i64,
    state: Mutex<Sequence>,
    lease: Mutex<Option<Lease>>,
    /// One lease request at a time.
    pub(crate) leasing: tokio::sync::Mutex<()>,
    /// This process's lease value (so a renewal renews only its own).
    pub(crate) token: String,
}

#[derive(Default)]
struct Sequence {
    last_ms: u64,
    seq: u64,
}

#[derive(Clone, Copy)]
pub(crate) struct Lease {
    pub(crate) instance: u64,
    /// Ids may be issued until then.
    valid_until: Instant,
}

impl IdGen {
    /// A generator whose clock is the wall clock plus `offset_ms`.
    pub fn new(offset_ms: i64) -> IdGen {
        IdGen {
            offset_ms,
            state: Mutex::default(),
            lease: Mutex::new(None),
            leasing: tokio::sync::Mutex::new(()),
            token: format!(
                "{:016x}{:016x}",
                rand::random::<u64>(),
                rand::random::<u64>()
            ),
        }
    }

    fn now_ms(&self) -> u64 {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as i64;
        wall.saturating_add(self.offset_ms).max(0) as u64
    }

    /// The next id of `instance`, and its `posted` time.
    pub(crate) fn issue(&self, instance: u64) -> (u64, f64) {
        let now = self.now_ms().max(EPOCH_MS);
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if now > s.last_ms {
            s.last_ms = now;
            s.seq = 0;
        } else {
            // The same millisecond, or the clock went back: go on from the
            // last one, borrowing the next when this one is used up.
            s.seq += 1;
            if s.seq == SEQUENCES {
                s.last_ms += 1;
                s.seq = 0;
            }
        }
        let id = ((s.last_ms - EPOCH_MS) << (INSTANCE_BITS + SEQUENCE_BITS))
            | (instance << SEQUENCE_BITS)
            | s.seq;
        (id, s.last_ms as f64 / 1000.0)
    }

    /// The lease, if ids may be issued under it now, and whether it is due
    /// for renewal.
    pub(crate) fn usable(&self) -> Option<(Lease, bool)> {
        let lease = (*self.lease.lock().unwrap_or_else(|e| e.into_inner()))?;
        let now = Instant::now();
        (now < lease.valid_until).then(|| (lease, lease.valid_until - now < RENEW_WHEN_LEFT))
    }

    /// The instance of the lease held, usable or not.
    pub(crate) fn held(&self) -> Option<u64> {
        self.lease
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map(|l| l.instance)
    }

    /// Keeps a lease on `instance` taken or renewed by a call sent at
    /// `asked`; returns the instance.
    pub(crate) fn keep(&self, instance: u64, asked: Instant) -> u64 {
        let lease = Lease {
            instance,
            valid_until: asked + LEASE_TTL - LEASE_MARGIN,
        };
        *self.lease.lock().unwrap_or_else(|e| e.into_inner()) = Some(lease);
        instance
    }

    /// Gives the lease up (no id is issued after): its instance, if held.
    pub(crate) fn give_back(&self) -> Option<u64> {
        self.lease
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .map(|l| l.instance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_grow_with_time_stay_exact_as_doubles_and_name_their_millisecond() {
        let ids = IdGen::new(0);
        let mut last = 0;
        for _ in 0..10_000 {
            let (id, posted) = ids.issue(5);
            assert!(id > last, "{id} after {last}");
            assert!((FIRST..(1 << 53)).contains(&id));
            assert_eq!(id as f64 as u64, id);
            assert_eq!(posted_of(id), Some(posted));
            assert_eq!((id >> SEQUENCE_BITS) & (INSTANCES - 1), 5);
            last = id;
        }
        assert_eq!(millis_of(12345), None, "an id of the old counter");
    }

    #[test]
    fn a_clock_that_goes_back_or_a_burst_keeps_ids_ordered() {
        let ids = IdGen::new(0);
        let (first, _) = ids.issue(1);
        // A clock an hour behind issues after the last millisecond.
        let behind = IdGen {
            offset_ms: -3_600_000,
            ..IdGen::new(0)
        };
        *behind.state.lock().unwrap() = Sequence {
            last_ms: millis_of(first).unwrap(),
            seq: 0,
        };
        let mut last = first;
        for _ in 0..500 {
            let (id, _) = behind.issue(1);
            assert!(id > last);
            last = id;
        }
        // 500 ids from one millisecond borrowed the following ones.
        assert!(millis_of(last).unwrap() > millis_of(first).unwrap());
    }

    #[test]
    fn ids_of_one_era_have_one_length() {
        let len = |ms: u64| (((ms - EPOCH_MS) << 12) | 4095).to_string().len();
        // 2023-01-01 and 2080-01-01.
        assert_eq!(len(1_672_531_200_000), 16);
        assert_eq!(len(3_471_292_800_000), 16);
    }
}
