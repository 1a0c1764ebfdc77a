//! What the events mean for notifications: each event's change (a
//! notification for someone, or one taken away), made in order, and the
//! `notification` and `notification_removed` events of those that changed.

use crate::model::{now, Event, Id};
use crate::store::entities::notifications::Stored;
use crate::store::events::{body, EventId};
use crate::store::{Store, StoreResult};
use crate::visibility::{Reach, Sight};

/// `events` (in log order) turned into notifications. The changes go out
/// in order, each run of additions (or of removals) in one pipeline, their
/// events in one buffer entry a shard.
pub(super) async fn apply(store: &Store, events: &[(EventId, String)]) -> StoreResult<()> {
    let mut changes = Vec::new();
    for (eid, json) in events {
        let Ok(event) = serde_json::from_str::<Event>(json) else {
            continue;
        };
        let private = private_about(&event);
        match change_of(&event, notification_id(*eid)) {
            None => {}
            Some(Change::Staff(gid, n)) => {
                for uid in store.groups().staff(gid, MAX_STAFF_NOTIFIED).await? {
                    if n.account != uid {
                        changes.push((Change::Add(uid, n.clone()), private));
                    }
                }
            }
            Some(change) => changes.push((change, private)),
        }
    }
    let mut rest = &changes[..];
    while let Some((first, _)) = rest.first() {
        let adding = matches!(first, Change::Add(..));
        let run = rest
            .iter()
            .take_while(|(c, _)| matches!(c, Change::Add(..)) == adding)
            .count();
        let (now, later) = rest.split_at(run);
        if adding {
            add_run(store, now).await?;
        } else {
            remove_run(store, now).await?;
        }
        rest = later;
    }
    Ok(())
}

/// Adds a run of notifications and sends the events of those this call
/// added (only to one who may see what each is about now: it stays in the
/// list, judged again whenever it is read; blocks are the hub's to drop).
async fn add_run(store: &Store, run: &[(Change, bool)]) -> StoreResult<()> {
    let adds: Vec<(u64, &Stored, bool)> = run
        .iter()
        .filter_map(|(c, private)| match c {
            Change::Add(uid, n) => Some((*uid, n, *private)),
            _ => None,
        })
        .collect();
    let pairs: Vec<(u64, &Stored)> = adds.iter().map(|(u, n, _)| (*u, *n)).collect();
    let added = store.notifications().add(&pairs).await?;
    let fresh: Vec<(u64, Stored, bool)> = adds
        .iter()
        .zip(added)
        .filter_map(|((u, n, p), id)| {
            let mut n = (*n).clone();
            n.id = id?;
            Some((*u, n, *p))
        })
        .collect();
    if fresh.is_empty() {
        return Ok(());
    }
    let stored: Vec<Stored> = fresh.iter().map(|(_, n, _)| n.clone()).collect();
    let shown = store.notifications().hydrate_each(&stored).await?;
    let mut bodies = Vec::new();
    for ((uid, _, private), shown) in fresh.into_iter().zip(shown) {
        let Some(shown) = shown else { continue };
        if let Some(status) = shown.status.as_ref().filter(|_| private) {
            let mut sight = Sight::of(store.clone(), Some(uid), Reach::Followers).await?;
            if !sight.status(status).await? {
                continue;
            }
        }
        bodies.push(body(&Event::Notification {
            at: now(),
            uid: Id(uid),
            notification: Box::new(shown),
        }));
    }
    if !bodies.is_empty() {
        store.events().emit_many(&bodies).await?;
    }
    Ok(())
}

/// Takes a run of notifications away and sends a removal for each that
/// was there.
async fn remove_run(store: &Store, run: &[(Change, bool)]) -> StoreResult<()> {
    let removes: Vec<(u64, &str)> = run
        .iter()
        .filter_map(|(c, _)| match c {
            Change::Remove(uid, key) => Some((*uid, key.as_str())),
            _ => None,
        })
        .collect();
    let gone = store.notifications().remove(&removes).await?;
    let bodies: Vec<_> = removes
        .iter()
        .zip(gone)
        .filter_map(|((uid, _), id)| {
            Some(body(&Event::NotificationRemoved {
                at: now(),
                uid: Id(*uid),
                notification_id: id?,
            }))
        })
        .collect();
    if !bodies.is_empty() {
        store.events().emit_many(&bodies).await?;
    }
    Ok(())
}

/// What an event means for someone's notifications.
enum Change {
    /// A notification for `uid`.
    Add(u64, Stored),
    /// `uid`'s notification of this key taken away.
    Remove(u64, String),
    /// A notification for each owner and moderator of a group (but the
    /// one it is from).
    Staff(u64, Stored),
}

/// The notification (or removal) `event` makes, if any: never one of your
/// own doing.
fn change_of(event: &Event, id: u64) -> Option<Change> {
    let stored = |kind: &str, at: f64, account: u64, status: Option<Id>, key: String| Stored {
        id: Id(id),
        kind: kind.to_string(),
        at,
        account: Id(account),
        status,
        via: None,
        group: None,
        report: None,
        key,
    };
    let change = match event {
        Event::Like {
            at,
            status_id,
            source,
            target,
            ..
        } => Change::Add(
            target.get(),
            stored(
                "like",
                *at,
                source.get(),
                Some(Id(status_id.get())),
                format!("like:{source}:{status_id}"),
            ),
        ),
        Event::Unlike {
            status_id,
            source,
            target,
            ..
        } => Change::Remove(target.get(), format!("like:{source}:{status_id}")),
        Event::Follow { at, source, target } => Change::Add(
            target.get(),
            stored(
                "follow",
                *at,
                source.get(),
                None,
                format!("follow:{source}"),
            ),
        ),
        Event::Unfollow { source, target, .. } => {
            Change::Remove(target.get(), format!("follow:{source}"))
        }
        Event::FollowRequest {
            at, source, target, ..
        } => Change::Add(
            target.get(),
            stored(
                "follow_request",
                *at,
                source.get(),
                None,
                format!("request:{source}"),
            ),
        ),
        Event::Repost {
            at, status, target, ..
        } => {
            let original = status.repost_of?;
            let reposter = status.uid.get();
            let mut n = stored(
                "repost",
                *at,
                reposter,
                Some(original),
                format!("repost:{reposter}:{original}"),
            );
            n.via = Some(status.id);
            Change::Add(target.get(), n)
        }
        // A reply that mentions the one it answers is a reply to them,
        // whichever of its two events (in two shards of the log) comes
        // first: both keep the one key `post:<id>`.
        Event::Mention {
            at, status, target, ..
        } => Change::Add(
            target.get(),
            stored(
                match status.reply_to_uid == Some(Id(target.get())) {
                    true => "reply",
                    false => "mention",
                },
                *at,
                status.uid.get(),
                Some(status.id),
                format!("post:{}", status.id),
            ),
        ),
        Event::Status { at, status, .. } if status.repost_of.is_none() => {
            let parent: u64 = status.reply_to_uid?.get();
            Change::Add(
                parent,
                stored(
                    "reply",
                    *at,
                    status.uid.get(),
                    Some(status.id),
                    format!("post:{}", status.id),
                ),
            )
        }
        Event::GroupRequest {
            at,
            group_id,
            source,
        } => {
            let mut n = stored(
                "group_request",
                *at,
                source.get(),
                None,
                // The request's time in the key: a request made again
                // after one was answered is notified again, a retry of
                // the same request is not.
                format!("group_request:{group_id}:{source}:{}", (at * 1000.0) as u64),
            );
            n.group = Some(Id(group_id.get()));
            Change::Staff(group_id.get(), n)
        }
        Event::ReportResolved {
            at,
            report_id,
            reporter,
            admin,
        } => {
            let mut n = stored(
                "report_resolved",
                *at,
                admin.get(),
                None,
                format!("report:{report_id}"),
            );
            n.report = Some(Id(report_id.get()));
            Change::Add(reporter.get(), n)
        }
        _ => return None,
    };
    match &change {
        Change::Add(uid, n) if n.account == *uid => None,
        _ => Some(change),
    }
}

/// The id of the notification an event makes: a snowflake of the event's
/// millisecond, its entry's sequence and its place in the entry, so a rerun
/// makes the same one (and no process needs an id lease for it).
fn notification_id(eid: EventId) -> u64 {
    // The event's microsecond in its millisecond and its place in its
    // entry (the first three apart, the rest together), so that ids never
    // go back along the log; the shard's part of the sequence is left out.
    // Ids that meet (two shards' entries in one microsecond, an entry of
    // more than three events) are told apart by `notify_add.lua`, which
    // takes the next free one, in the order the notifier reads the log.
    let us = (eid.1 >> 10).min(999);
    crate::store::ids::snowflake_at(eid.0, us * 4 + u64::from(eid.2.min(3)))
}

/// Owners and moderators told of a join request, at most.
const MAX_STAFF_NOTIFIED: usize = 50;

/// Whether what `event` is about is private (a private account's status,
/// or a reply to one): then a notification is sent only to one who may see
/// it.
fn private_about(event: &Event) -> bool {
    match event {
        Event::Like { private, .. }
        | Event::Repost { private, .. }
        | Event::Mention { private, .. } => *private,
        Event::Status {
            private, audience, ..
        } => *private || audience.is_some(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Notification ids never go back along the log within a millisecond
    /// (taken from the microsecond's low bits, they went back every 64 µs).
    #[test]
    fn notification_ids_follow_their_events_order() {
        let at = |us: u64, shard: u64, n: u32| {
            notification_id(EventId(1_796_000_000_000, us * 1024 + shard, n))
        };
        let mut previous = 0;
        for us in 0..1000 {
            for n in [0, 1, 2, 3, 4, 900] {
                let id = at(us, us % 64, n);
                assert!(id >= previous, "µs {us}, event {n}: {id} before {previous}");
                previous = id;
            }
        }
        // An id bumped past the millisecond's last microsecond stays last.
        assert!(at(1005, 3, 0) >= at(999, 3, 0));
        assert!(at(0, 0, 0) > notification_id(EventId(1_795_999_999_999, 999 * 1024, 5)));
    }
}
