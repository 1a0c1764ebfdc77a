//! How the event log is laid over Redis ([`LogShape`]): the command that
//! publishes a shard, a shard's share of the buffer, and how a shard is
//! trimmed to it.

/// The least a shard of the log keeps, whatever `--replay-maxlen`: the
/// history's archiver reads every shard behind the writes, and a shard
/// that kept one event would drop it at its shard's next write.
pub(crate) const MIN_SHARD_SHARE: u64 = 4;

/// A shard's publish command and capacity, fixed when the store opens
/// (`Store::log_shape`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogShape {
    /// The command that publishes a shard of the event log: `SPUBLISH`
    /// (sharded pub/sub) on a cluster, where no node relays every event;
    /// plain `PUBLISH` on one Redis, where there is nothing to relay.
    pub publish: &'static str,
    /// A shard's share of the buffer's capacity in events
    /// (`--replay-maxlen` over the shards, at least [`MIN_SHARD_SHARE`]).
    pub maxlen: u64,
}

impl LogShape {
    /// The shape of a log of `shards` shards holding `replay_maxlen`
    /// events in all.
    pub(crate) fn new(cluster: bool, replay_maxlen: u64, shards: usize) -> LogShape {
        LogShape {
            publish: if cluster { "SPUBLISH" } else { "PUBLISH" },
            maxlen: replay_maxlen
                .div_ceil(shards.max(1) as u64)
                .max(MIN_SHARD_SHARE),
        }
    }

    /// Whether a shard is trimmed exactly: a small share (a node of a
    /// Redis stream holds 100 entries, so `~` would never trim a small
    /// buffer at all); a large one is trimmed by whole nodes (`~`, cheap).
    pub fn exact(self) -> bool {
        self.maxlen < 1_000
    }

    /// `log_append.lua`'s trim argument: a shard kept to its share,
    /// `~N` or `=N` as [`exact`](Self::exact) says.
    pub fn trim(self) -> String {
        let mark = if self.exact() { '=' } else { '~' };
        format!("{mark}{}", self.maxlen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_keeps_its_share_and_is_trimmed_exactly_only_when_small() {
        let one = LogShape::new(false, 100_000, 4);
        assert_eq!((one.publish, one.maxlen), ("PUBLISH", 25_000));
        assert_eq!(one.trim(), "~25000");
        let small = LogShape::new(true, 10, 8);
        assert_eq!((small.publish, small.maxlen), ("SPUBLISH", MIN_SHARD_SHARE));
        assert_eq!(small.trim(), "=4");
        assert_eq!(LogShape::new(false, 3_999, 4).trim(), "~1000");
        assert_eq!(LogShape::new(false, 3_995, 4).trim(), "=999");
    }
}
