//! The notifier: makes each user's notifications from the events of the
//! log, in order, and sends each new one as a `notification` event (an
//! undone like, repost or follow's removal as `notification_removed`).
//!
//! The work is split by the log's shards: each process makes the
//! notifications of about its share of them (a lease on each shard it
//! holds, [`store::events::shard_work`](crate::store::events::shard_work); another process takes a dead one's
//! shards within [`follow`]'s lease), from the position kept in each
//! shard, so that no process has to keep up with the whole network's
//! notifications alone. A write acknowledged to its client has its event
//! in the log and so, a moment later, its notification: exactly one,
//! since each is added once per key (`notify_add.lua`) and only the call
//! that added it sends its event. A notification's events of one key (a
//! like and its undoing, a follow and its end) are in one shard, made in
//! order by one holder. A read of the notifications waits (≤ 1 s) for
//! every shard's position to pass what the shard held when the read began
//! ([`caught_up`]).
//!
//! - `follow`: the loop, the shards held and their positions.
//! - `changes`: what each event means for notifications, and making it so.

mod changes;
mod follow;

pub(crate) use follow::{caught_up, run};
