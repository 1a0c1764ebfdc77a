//! An outbox entry as a run holds it, apart from the write it records:
//! what a chain needs to finish it ([`Entry`]). Chains take their entry
//! and their own op's payload, so that they import neither the `Op` enum
//! nor each other.

/// An outbox entry: its member, its number and where it is.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The outbox member, `<n>|<op JSON>`.
    pub member: String,
    /// The op number.
    pub n: u64,
    /// Its outbox partition.
    pub part: usize,
    /// When this run's lease on the entry ends (as this process took it;
    /// infinite when not known).
    pub deadline: f64,
}

impl Entry {
    /// The op number of an outbox member, for logs (the op itself may hold
    /// a password hash).
    pub fn number(member: &str) -> &str {
        member.split_once('|').map_or("?", |(n, _)| n)
    }
}
