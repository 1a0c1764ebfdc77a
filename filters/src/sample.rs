//! Sampling: whether a status belongs to the sample at a given rate.
//!
//! The decision is a pure function of the status id and the rate, so every
//! sample client at one rate sees exactly the same statuses, a client at a
//! lower rate sees a subset of what a higher rate sees, and a delete is
//! delivered to exactly the sample clients that saw the status.

/// A status id mixed into 64 well-spread bits (SplitMix64's finalizer).
pub fn mix(status_id: u64) -> u64 {
    let mut z = status_id.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The threshold a rate in (0, 1] compiles to: a status is sampled when its
/// mixed id is below it. A rate of 1 takes everything.
pub fn threshold(rate: f64) -> u64 {
    if rate >= 1.0 {
        u64::MAX
    } else {
        (rate.max(0.0) * u64::MAX as f64) as u64
    }
}

/// Whether the status is in the sample of the given threshold.
pub fn hit(status_id: u64, threshold: u64) -> bool {
    threshold == u64::MAX || mix(status_id) < threshold
}
