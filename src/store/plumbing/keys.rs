//! Every Redis key and channel name, built in one place under one prefix.
//!
//! A user's own keys share the hash tag `{<uid>}` (`fh:user:{42}`,
//! `fh:user:{42}:home`, ...), a status's keys the tag `{s<id>}`, a
//! hashtag's timeline the tag `{#<tag>}`, a login's or email's holder the
//! value itself (`fh:name:{bob}`), the global keys (counters, the sessions'
//! clean-up index, the event buffer, the outbox of sign-ups, the fan-out
//! queue) the tag `{g}`, and each of the [`OUTBOX_PARTS`] outbox partitions
//! (every other write, and the idempotency keys: [`store::outbox`](crate::store::outbox)) and of
//! the [`TREND_PARTS`] trending partitions (a hashtag's counts: its
//! [`trend_part`]) a tag of its own, chosen so that the partitions' slots
//! are spread evenly over the 16,384. Every Lua
//! script names keys of one of these slots only, so the whole product runs
//! on a Redis Cluster.

use std::sync::Arc;

/// How many outbox partitions there are. Fixed: an op's partition is a
/// function of what it changes, and op numbers are ordered only within a
/// partition (a different count would need every counter raised first).
pub const OUTBOX_PARTS: usize = 32;

/// How many trending partitions there are. Fixed: a hashtag's counts live
/// in its partition ([`trend_part`]).
pub const TREND_PARTS: usize = 16;

/// How many shards the event log has unless told (`--log-shards`): 64, so
/// that up to 64 masters split the log evenly, and every partition count
/// of a stream that divides it (1, 2, 4, ..., 32) reads whole shards.
/// Fixed for a store's life: an event's shard is a function of its
/// partition key ([`Keys::log_shard`]).
pub const LOG_SHARDS: usize = 64;

/// The most shards a log may have: an id's shard is the low ten bits of
/// its sequence (`log_append.lua`).
pub const MAX_LOG_SHARDS: usize = 1024;

/// Key builder for one configured prefix.
#[derive(Debug, Clone)]
pub struct Keys {
    prefix: String,
    /// Each outbox partition's hash tag (`o<j>`), in partition order.
    parts: Arc<[String]>,
    /// Each trending partition's hash tag (`t<j>`), in partition order.
    trend_parts: Arc<[String]>,
    /// Each event log shard's hash tag (`e<j>`), in shard order.
    log: Arc<[String]>,
}

/// The trending partition of a hashtag (lowercased, without `#`): its
/// CRC16 (the slot function's) over the partitions, stable across versions.
pub fn trend_part(tag: &str) -> usize {
    crate::store::plumbing::conn::slot(tag.as_bytes()) as usize % TREND_PARTS
}

/// `tags` grouped by trending partition, each group in the order given.
pub fn trend_groups(tags: &[String]) -> Vec<(usize, Vec<String>)> {
    let mut groups: Vec<(usize, Vec<String>)> = Vec::new();
    for t in tags {
        let p = trend_part(t);
        match groups.iter_mut().find(|(q, _)| *q == p) {
            Some((_, g)) => g.push(t.clone()),
            None => groups.push((p, vec![t.clone()])),
        }
    }
    groups
}

/// The outbox partition of every change between users `a` and `b`.
pub fn pair_part(a: u64, b: u64) -> usize {
    mix(a.min(b), a.max(b))
}

/// The outbox partition of `uid`'s likes of status `sid`.
pub fn like_part(uid: u64, sid: u64) -> usize {
    mix(uid, sid)
}

/// The outbox partition of `uid`'s own writes (posts, deletes, messages,
/// account changes) and of their idempotency keys.
pub fn user_part(uid: u64) -> usize {
    mix(uid, u64::MAX)
}

/// A fixed spread of two numbers over the partitions (splitmix64's
/// finalizer): stable across versions, since stored order depends on it.
fn mix(a: u64, b: u64) -> usize {
    let mut z = a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z % OUTBOX_PARTS as u64) as usize
}

/// The hash tags of `n` partitions named `<letter><j>`: for partition `k`,
/// the first whose slot lies in the `k`-th of `n` equal ranges of slots, so
/// that any even split of the slots between masters splits the partitions
/// evenly too.
fn part_tags(letter: char, n: usize) -> Arc<[String]> {
    let width = 16384 / n as u16;
    (0..n as u16)
        .map(|k| {
            (0u32..)
                .map(|j| format!("{letter}{j}"))
                .find(|tag| crate::store::plumbing::conn::slot(tag.as_bytes()) / width == k)
                .expect("every range of slots has a tag")
        })
        .collect()
}

impl Keys {
    /// Keys under `prefix` (for example `fh`).
    pub fn new(prefix: &str) -> Self {
        Keys {
            prefix: prefix.to_string(),
            parts: part_tags('o', OUTBOX_PARTS),
            trend_parts: part_tags('t', TREND_PARTS),
            log: part_tags('e', LOG_SHARDS),
        }
    }

    /// These keys with an event log of `shards` shards (1 to
    /// [`MAX_LOG_SHARDS`]).
    pub fn with_log_shards(mut self, shards: usize) -> Self {
        self.log = part_tags('e', shards.clamp(1, MAX_LOG_SHARDS));
        self
    }

    /// How many shards the event log has.
    pub fn log_shards(&self) -> usize {
        self.log.len()
    }

    /// The event log's shard of an event with this partition key
    /// ([`model::Event::partition_key`](crate::model::Event::partition_key)): the same spread as a partitioned
    /// stream's, so partition `k` of `n` (where `n` divides the shards)
    /// holds exactly the shards `j` with `j % n == k`.
    pub fn log_shard(&self, key: u64) -> usize {
        (crate::model::spread(key) % self.log.len() as u64) as usize
    }

    /// The prefix itself.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// STRING: who holds a unique value (a login or an email, lowercased:
    /// one namespace): the user id, or a deleted account's reserved login
    /// `r:<uid>:<until>`. Each value in a slot of its own.
    pub fn name(&self, value: &str) -> String {
        format!("{}:name:{{{value}}}", self.prefix)
    }
    /// STRING: the lease on status-id instance number `n` (the holder's
    /// token, expiring), in a slot of its own.
    pub fn id_instance(&self, n: u64) -> String {
        format!("{}:{{ids}}:instance:{n}", self.prefix)
    }
    /// HASH: the demo world's record (`users`: how many were seeded,
    /// `viewer`: the read-only viewer's id).
    pub fn demo(&self) -> String {
        format!("{}:{{demo}}:world", self.prefix)
    }
    /// STRING: one rate-limit bucket (`"<tokens> <at>"`), of `what` for
    /// `who`, in a slot of its own.
    pub fn rate(&self, what: &str, who: &str) -> String {
        format!("{}:rate:{{{what}:{who}}}", self.prefix)
    }
    /// HASH: the public profile of a user.
    pub fn user(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}", self.prefix)
    }
    /// HASH: email and password hash, never returned.
    pub fn secret(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:secret", self.prefix)
    }
    /// ZSET: the user's open streams, on every server (member -> lease
    /// lapses at, ms).
    pub fn stream_leases(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:streams", self.prefix)
    }

    /// ZSET: the user's sessions, session id -> created (a login beyond
    /// [`crate::store::entities::sessions::SESSIONS_PER_USER`] ends the oldest).
    pub fn user_sessions(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:sessions", self.prefix)
    }
    /// ZSET: the user's live sessions, session id -> last seen (the
    /// authority a token's session is checked against).
    pub fn live_sessions(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:live", self.prefix)
    }
    /// The start of the user's viewed ZSET keys, completed by a session id.
    pub fn user_viewed_stem(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:viewed:", self.prefix)
    }
    /// ZSET: statuses a session of the user viewed recently (capped at 25).
    pub fn user_viewed(&self, uid: u64, sid: &str) -> String {
        format!("{}{sid}", self.user_viewed_stem(uid))
    }
    /// ZSET: the home timeline (status id -> posted).
    pub fn home(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:home", self.prefix)
    }
    /// ZSET: the profile timeline (status id -> posted).
    pub fn profile(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:profile", self.prefix)
    }
    /// ZSET: followers (user id -> follow time).
    pub fn followers(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:followers", self.prefix)
    }
    /// ZSET: followed users (user id -> follow time).
    pub fn following(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:following", self.prefix)
    }
    /// ZSET: the user's most recently deleted status ids (-> time), at most 1000.
    pub fn deleted(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:deleted", self.prefix)
    }
    /// ZSET: statuses mentioning the user (status id -> posted).
    pub fn mentions(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:mentions", self.prefix)
    }
    /// ZSET: statuses the user likes (status id -> like time).
    pub fn likes(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:likes", self.prefix)
    }
    /// ZSET: statuses carrying a hashtag, lowercased (status id -> posted).
    pub fn tag(&self, tag: &str) -> String {
        format!("{}:tag:{{#{tag}}}", self.prefix)
    }
    /// ZSET: users who like a status (user id -> like time).
    pub fn likers(&self, sid: u64) -> String {
        format!("{}:status:{{s{sid}}}:likers", self.prefix)
    }
    /// ZSET: replies to a status (status id -> posted).
    pub fn replies(&self, sid: u64) -> String {
        format!("{}:status:{{s{sid}}}:replies", self.prefix)
    }
    /// HASH: the sequence of each user's last applied like change (the
    /// like chain's, on a cluster: `like.lua`).
    pub fn like_seq(&self, sid: u64) -> String {
        format!("{}:status:{{s{sid}}}:likeseq", self.prefix)
    }
    /// HASH: who reposted a status (user id -> the repost's id).
    pub fn reposters(&self, sid: u64) -> String {
        format!("{}:status:{{s{sid}}}:reposters", self.prefix)
    }
    /// ZSET: hashtag -> uses, in one minute's bucket (epoch minute) of
    /// trending partition `p` (the hashtags whose [`trend_part`] is `p`).
    pub fn trend_bucket(&self, p: usize, minute: u64) -> String {
        format!(
            "{}:{{{}}}:trends:{minute}",
            self.prefix, self.trend_parts[p]
        )
    }
    /// SET: the statuses counted in one minute's bucket of partition `p`.
    pub fn trend_seen(&self, p: usize, minute: u64) -> String {
        format!(
            "{}:{{{}}}:trends:seen:{minute}",
            self.prefix, self.trend_parts[p]
        )
    }
    /// ZSET: partition `p`'s buckets of a trending window summed (expires
    /// in seconds).
    pub fn trend_sum(&self, p: usize, window: u64, minute: u64) -> String {
        format!(
            "{}:{{{}}}:trends:sum:{window}:{minute}",
            self.prefix, self.trend_parts[p]
        )
    }
    /// ZSET: who asked to follow the (private) user (user id -> time).
    pub fn requests(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:requests", self.prefix)
    }
    /// ZSET: whom the user asked to follow (user id -> time).
    pub fn requested(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:requested", self.prefix)
    }
    /// HASH: followee id -> sequence of the user's last applied change.
    pub fn follow_applied(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:fop", self.prefix)
    }
    /// HASH: follower id -> sequence of the last applied follow change.
    pub fn follower_seq(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:fseq", self.prefix)
    }
    /// ZSET: whom the user blocks (user id -> minus the block time, so
    /// that score order is newest first).
    pub fn blocks(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:blocks", self.prefix)
    }
    /// ZSET: whom the user mutes (user id -> minus the mute time).
    pub fn mutes(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:mutes", self.prefix)
    }
    /// HASH: the user's relations that hide ([`store::relations`](crate::store::entities::relations)): other
    /// user id -> `<bits>:<seq>`, `seq` -> the counter of changes, and the
    /// op numbers that order changes (`o<bit>:<id>`, `x:<id>`).
    pub fn hide(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:hide", self.prefix)
    }
    /// SET, on one Redis only: the users whose `hide` HASH holds a relation
    /// with this user (any bits), the other side of [`Keys::hide`], kept by
    /// `relate.lua` in the same script as the bits, so that a post reads
    /// who it must not reach once instead of each follower's HASH
    /// (`post_whole.lua`). A cluster neither keeps nor reads it.
    pub fn hidden_by(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:hidden_by", self.prefix)
    }
    /// HASH: a conversation (id, kind, title, created, updated, last).
    pub fn conv(&self, cid: u64) -> String {
        format!("{}:conv:{{c{cid}}}", self.prefix)
    }
    /// ZSET: a conversation's participants now (user id -> joined).
    pub fn conv_members(&self, cid: u64) -> String {
        format!("{}:conv:{{c{cid}}}:members", self.prefix)
    }
    /// ZSET: a conversation's message ids (-> the id itself, exact below 2^53).
    pub fn conv_messages(&self, cid: u64) -> String {
        format!("{}:conv:{{c{cid}}}:messages", self.prefix)
    }
    /// HASH: a conversation's messages, id -> message JSON.
    pub fn conv_bodies(&self, cid: u64) -> String {
        format!("{}:conv:{{c{cid}}}:bodies", self.prefix)
    }
    /// HASH: per participant, messages by others since their last read.
    pub fn conv_unread(&self, cid: u64) -> String {
        format!("{}:conv:{{c{cid}}}:unread", self.prefix)
    }
    /// HASH: reports by id (their JSON). Moderation's keys share the slot
    /// `{mod}`, so a resolution and its audit entry are one script.
    pub fn reports(&self) -> String {
        format!("{}:{{mod}}:reports", self.prefix)
    }
    /// ZSET: open reports (id -> minus created: newest first).
    pub fn reports_open(&self) -> String {
        format!("{}:{{mod}}:reports:open", self.prefix)
    }
    /// ZSET: resolved reports (id -> minus resolved_at: newest first).
    pub fn reports_resolved(&self) -> String {
        format!("{}:{{mod}}:reports:resolved", self.prefix)
    }
    /// HASH: audit entries by id (their JSON).
    pub fn audit(&self) -> String {
        format!("{}:{{mod}}:audit", self.prefix)
    }
    /// ZSET: audit entries (id -> minus at: newest first).
    pub fn audit_order(&self) -> String {
        format!("{}:{{mod}}:audit:order", self.prefix)
    }
    /// SET: suspended users (the authority is each user's HASH; this is
    /// what a hub loads at start).
    pub fn suspended(&self) -> String {
        format!("{}:{{mod}}:suspended", self.prefix)
    }
    /// HASH: a group: id, name, description, kind, created, owner (an
    /// owner's id, the creator while an owner), members, owners (counts).
    pub fn group(&self, gid: u64) -> String {
        format!("{}:group:{{gr{gid}}}", self.prefix)
    }
    /// ZSET: a group's members (user id -> joined).
    pub fn group_members(&self, gid: u64) -> String {
        format!("{}:group:{{gr{gid}}}:members", self.prefix)
    }
    /// HASH: a group's members' roles (user id -> owner, moderator, member).
    pub fn group_roles(&self, gid: u64) -> String {
        format!("{}:group:{{gr{gid}}}:roles", self.prefix)
    }
    /// ZSET: join requests to a private group (user id -> asked).
    pub fn group_requests(&self, gid: u64) -> String {
        format!("{}:group:{{gr{gid}}}:requests", self.prefix)
    }
    /// ZSET: a group's timeline (status id -> posted).
    pub fn group_timeline(&self, gid: u64) -> String {
        format!("{}:group:{{gr{gid}}}:statuses", self.prefix)
    }
    /// ZSET: the groups a user is in or asked to join (group id -> when);
    /// an index checked against each group when read.
    pub fn user_groups(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:groups", self.prefix)
    }
    /// ZSET: the statuses the user posted in groups (status id -> posted),
    /// for their account's deletion.
    pub fn user_group_statuses(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:group_statuses", self.prefix)
    }
    /// ZSET: the user's conversations (id -> minus the newest message's
    /// time, so that score order is newest activity first).
    pub fn user_convs(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:convs", self.prefix)
    }
    /// HASH: in the lower id's slot of a pair, the higher id -> the pair's
    /// direct conversation.
    pub fn direct(&self, lower: u64) -> String {
        format!("{}:user:{{{lower}}}:direct", self.prefix)
    }
    /// ZSET: the round of an account deletion's work in progress, as
    /// versions before 2026-11-28 kept it (one for every set, which let a
    /// rerun take one set's round for another's); only deleted now.
    pub fn undo_round(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:undoing", self.prefix)
    }
    /// ZSET: while an account is being deleted, the round of work in
    /// progress on its set `set` (one of the user's keys, so the same
    /// slot; `undo_take.lua`).
    pub fn undo_round_of(&self, set: &str) -> String {
        format!("{set}:undoing")
    }
    /// ZSET: the user's bookmarks, status id -> minus the time it was
    /// bookmarked (score order: newest first); at most
    /// [`crate::store::entities::bookmarks::MAX_BOOKMARKS`].
    pub fn bookmarks(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:bookmarks", self.prefix)
    }
    /// ZSET: the user's notifications, id -> the whole second it was made
    /// (newest 1,000 kept); the JSON of each in [`Keys::notification_data`].
    pub fn notifications(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:notifs", self.prefix)
    }
    /// HASH: notification id -> its stored JSON (`type`, `at`, `account`,
    /// `status`, `via`, `key`).
    pub fn notification_data(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:notif", self.prefix)
    }
    /// HASH: what a notification is of (`like:<who>:<status>`, ...) -> its id.
    pub fn notification_keys(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:notif_keys", self.prefix)
    }
    /// STRING: the user's read marker (a notification id; only grows).
    pub fn notification_marker(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:notif_read", self.prefix)
    }
    /// STRING: the process that holds shard `k` of the log for the work
    /// `work` ([`store::events::shard_work`](crate::store::events::shard_work); a lease).
    pub fn log_work_lease(&self, k: usize, work: &str) -> String {
        format!("{}:{{{}}}:work:{work}", self.prefix, self.log[k])
    }
    /// ZSET: the processes doing the work `work` shard by shard (holder ->
    /// when its registration lapses, ms).
    pub fn log_workers(&self, work: &str) -> String {
        format!("{}:{{g}}:work:{work}", self.prefix)
    }
    /// STRING: the last event the notifier made notifications of, when one
    /// process made them all (layout 2 before the notifier went by shards:
    /// each shard's position starts here, [`store::events::shard_work`](crate::store::events::shard_work)).
    pub fn notifier_position(&self) -> String {
        format!("{}:{{g}}:notifier:pos", self.prefix)
    }
    /// HASH: stream compression dictionaries, id -> bytes (the newest few).
    pub fn zstd_dicts(&self) -> String {
        format!("{}:{{g}}:zstd:dicts", self.prefix)
    }
    /// LIST: the dictionaries' ids, newest first.
    pub fn zstd_dict_order(&self) -> String {
        format!("{}:{{g}}:zstd:order", self.prefix)
    }
    /// STRING: the id of the dictionary new frames are compressed with.
    pub fn zstd_dict_current(&self) -> String {
        format!("{}:{{g}}:zstd:current", self.prefix)
    }
    /// STRING: the process retraining the dictionary now (a lease, held
    /// for the time between trainings).
    pub fn zstd_trainer(&self) -> String {
        format!("{}:{{g}}:zstd:trainer", self.prefix)
    }
    /// ZSET: the user's lists, list id -> created (oldest first); at most
    /// [`crate::store::entities::lists::MAX_LISTS`].
    pub fn lists(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:lists", self.prefix)
    }
    /// HASH: one of the user's lists: `title`, `created`, `version` (grows
    /// with every change of its members). In the owner's slot, so a list
    /// is found only under its owner: another user's list id names no key.
    pub fn list(&self, uid: u64, lid: u64) -> String {
        format!("{}:user:{{{uid}}}:list:{lid}", self.prefix)
    }
    /// ZSET: a list's members, user id -> when added (oldest first); at
    /// most [`crate::store::entities::lists::MAX_MEMBERS`].
    pub fn list_members(&self, uid: u64, lid: u64) -> String {
        format!("{}:user:{{{uid}}}:list:{lid}:members", self.prefix)
    }
    /// STRING: the list a create with this `Idempotency-Key` made (24 h).
    pub fn list_idem(&self, uid: u64, key: &str) -> String {
        format!("{}:user:{{{uid}}}:list_idem:{key}", self.prefix)
    }
    /// HASH: the user's filter rules, id -> `{id, value, tag}` JSON.
    pub fn rules(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:rules", self.prefix)
    }
    /// HASH: the user's filter rules by value -> id (duplicates).
    pub fn rule_values(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:rule_values", self.prefix)
    }
    /// ZSET: the user's filter rules, id -> created (oldest first).
    pub fn rule_order(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:rule_order", self.prefix)
    }
    /// HASH: a status.
    pub fn status(&self, sid: u64) -> String {
        format!("{}:status:{{s{sid}}}", self.prefix)
    }
    /// LIST: a status's versions, oldest first, once it was edited
    /// (`{message, hashtags, mentions, at}` JSON each).
    pub fn status_versions(&self, sid: u64) -> String {
        format!("{}:status:{{s{sid}}}:versions", self.prefix)
    }
    /// STRING: the key layout the data was written in ([`store::layout`](crate::store::layout)).
    pub fn layout(&self) -> String {
        format!("{}:{{g}}:layout", self.prefix)
    }
    /// STRING: the event log's shard count the data was written with.
    pub fn log_shard_count(&self) -> String {
        format!("{}:{{g}}:log_shards", self.prefix)
    }
    /// STREAM: the replay buffer of events of key layout 1 (one stream;
    /// read only by the upgrade: [`store::layout`](crate::store::layout)).
    pub fn events(&self) -> String {
        format!("{}:{{g}}:events", self.prefix)
    }
    /// STREAM: event log shard `k`'s buffer: its events, each entry's id
    /// a position in the whole log ([`store::events::EventId`](crate::store::events::EventId)).
    pub fn log_events(&self, k: usize) -> String {
        format!("{}:{{{}}}:events", self.prefix, self.log[k])
    }
    /// HASH: op number -> 1 for each op whose events in shard `k` are in
    /// its buffer, so a rerun of its chain emits nothing there again.
    pub fn log_emitted(&self, k: usize) -> String {
        format!("{}:{{{}}}:emitted", self.prefix, self.log[k])
    }
    /// Sharded pub/sub channel (SPUBLISH on a cluster, PUBLISH on one
    /// Redis) carrying shard `k`'s events.
    pub fn log_channel(&self, k: usize) -> String {
        format!("{}:{{{}}}:live", self.prefix, self.log[k])
    }
    /// STRING: the event stream's name (`Events::stream_name`), which histories copy.
    pub fn event_stream_name(&self) -> String {
        format!("{}:{{g}}:events:name", self.prefix)
    }
    /// ZSET: the shared history's windows ([`store::events::windows`](crate::store::events::windows)).
    pub fn history_windows(&self) -> String {
        format!("{}:{{h}}:windows", self.prefix)
    }

    /// STRING: outbox partition `k`'s op counter (its op numbers are
    /// `counter * OUTBOX_PARTS + k`: unique across partitions).
    pub fn part_next_op(&self, k: usize) -> String {
        format!("{}:{{{}}}:next_op", self.prefix, self.parts[k])
    }
    /// ZSET: outbox partition `k`'s entries (op -> lease deadline).
    pub fn part_outbox(&self, k: usize) -> String {
        format!("{}:{{{}}}:outbox", self.prefix, self.parts[k])
    }
    /// STREAM: partition `k`'s fan-out queue, the tasks of the partition's
    /// posts and deletes (store::fanout).
    pub fn part_fanout(&self, k: usize) -> String {
        format!("{}:{{{}}}:fanout", self.prefix, self.parts[k])
    }
    /// ZSET: op numbers of partition `k` retired after emitting events
    /// (-> when), whose marks in [`Keys::emitted`] the sweeper forgets.
    pub fn part_retired(&self, k: usize) -> String {
        format!("{}:{{{}}}:retired", self.prefix, self.parts[k])
    }
    /// HASH: the user's home timeline marker (the Mastodon API's
    /// `/api/v1/markers`): `home` the last read status id, `home_at` when
    /// it was set, `home_version` how many times.
    pub fn markers(&self, uid: u64) -> String {
        format!("{}:user:{{{uid}}}:markers", self.prefix)
    }
    /// STRING: an OAuth authorization code's grant (the Mastodon API's
    /// sign-in page), taken once, gone after 10 minutes.
    pub fn oauth_code(&self, code: &str) -> String {
        format!("{}:oauth:{code}", self.prefix)
    }
    /// ZSET: partition `k`'s share of the sessions' clean-up index,
    /// `<uid>:<session id>` -> last seen to the minute, for the sessions
    /// of the users whose own writes are in partition `k` ([`user_part`]).
    pub fn session_index(&self, k: usize) -> String {
        format!("{}:{{{}}}:sessions", self.prefix, self.parts[k])
    }
    /// HASH: key layout 1's marks, op number -> 1 for each op whose events
    /// were in its buffer (read only by the upgrade: [`store::layout`](crate::store::layout)).
    pub fn emitted(&self) -> String {
        format!("{}:{{g}}:emitted", self.prefix)
    }
    /// STRING: the first answer to a post (or, `m:<key>`, a message) of
    /// `uid`'s with this idempotency key, in the slot of `uid`'s outbox
    /// partition ([`user_part`]), where the write is recorded.
    pub fn idempotency(&self, uid: u64, key: &str) -> String {
        format!(
            "{}:{{{}}}:idem:{uid}:{key}",
            self.prefix,
            self.parts[user_part(uid)]
        )
    }
    /// STRING: the generated JWT secret, when none is configured.
    pub fn jwt_secret(&self) -> String {
        format!("{}:{{g}}:jwt_secret", self.prefix)
    }
}
