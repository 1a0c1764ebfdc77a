//! Where statuses sit in timelines: the homes' cap and how often a post
//! trims them, and a status's score.

/// Home timelines keep this many newest entries: no read shows more.
pub const HOME_CAP: usize = 1000;

/// A post trims the homes it enters back to [`HOME_CAP`] one time in this
/// many ([`trims_homes`]); in between, a home may hold a few entries past
/// the cap, which every read leaves out.
pub const HOME_TRIM_EVERY: u64 = 8;

/// Whether the post of status `sid` trims the homes it enters (its own
/// author's and its followers'): one status in [`HOME_TRIM_EVERY`], chosen
/// by a hash of the id, so that a trim (a `ZREMRANGEBYRANK` per home, which
/// removes nothing until a home is full) is not paid on every insert. A
/// home's excess is the inserts since its last trimming one, each of which
/// trims with probability 1/8 independently of the home: 7 on average,
/// more than 200 with probability (7/8)^200 < 10^-11.
pub fn trims_homes(sid: u64) -> bool {
    sid.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 61 == 0
}

/// A status's score in the timelines of statuses (homes, profiles,
/// mentions, hashtags, replies, groups): the whole second of its `posted`.
/// Statuses of one second tie, and Redis orders ties by member, which for
/// snowflake ids is their order ([`store::ids`](crate::store::ids)), so a timeline is in
/// `posted` order all the same; a whole number costs a small ZSET's
/// inserts a fraction of what a fraction does (`post_whole.lua` says why).
/// The scripts that write timelines keep the same score.
pub fn timeline_score(posted: f64) -> u64 {
    posted.floor().max(0.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids as one process issues them ([`store::ids`](crate::store::ids): ms << 12 | instance
    /// << 6 | sequence), a few a millisecond or one a second apart: about
    /// one in eight trims, and never a long run without one.
    #[test]
    fn one_post_in_eight_trims_the_homes_whatever_the_ids_spacing() {
        for (step_ms, per_ms) in [(1u64, 1u64), (1, 5), (1000, 1), (7, 64)] {
            let ids: Vec<u64> = (0..4000u64)
                .map(|i| ((1 << 40) + (i / per_ms) * step_ms) << 12 | (3 << 6) | (i % per_ms))
                .collect();
            let trims = ids.iter().filter(|&&id| trims_homes(id)).count();
            assert!(
                (400..=600).contains(&trims),
                "{trims} of 4000 trim at {step_ms} ms, {per_ms}"
            );
            let longest = ids
                .split(|&id| trims_homes(id))
                .map(|run| run.len())
                .max()
                .unwrap();
            assert!(longest < 120, "{longest} inserts in a row without a trim");
        }
    }
}
