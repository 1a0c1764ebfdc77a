//! What a replay may serve now: each replayed event judged with the
//! reader's present rights ([`crate::visibility::Sight`]), not those it had
//! when the event was made. A status deleted since, or whose author has
//! since been deleted, suspended or made private (to a reader who does not
//! follow them), a reply to a status the reader may not see, a message of
//! a conversation the reader left and a status of a private group the
//! reader is no longer in are not served again; `delete` events always
//! are. Every replay (`count`, `since`, `Last-Event-ID`) passes here:
//! [`stream::feed`](crate::stream::feed) pushes no replayed event that [`ReplaySight::keep`]
//! refused.

use super::frame::Frame;
use crate::model::Event;
use crate::model::Id;
use crate::store::StoreResult;
use crate::visibility::{Reach, Sight};
use std::sync::Arc;

/// One replay's judgement.
pub(crate) struct ReplaySight {
    sight: Sight,
    /// The statuses the page's likes are of, as they are now (`None`:
    /// gone); forgotten with each page.
    liked: rustc_hash::FxHashMap<u64, Option<Arc<crate::store::cache::CachedStatus>>>,
}

impl ReplaySight {
    /// For a replay of `stream` to `sight`'s reader.
    pub(crate) fn new(sight: Sight) -> ReplaySight {
        ReplaySight {
            sight,
            liked: Default::default(),
        }
    }

    /// The reach a stream shows: the user stream (and the group streams,
    /// whose membership `Sight` checks) shows what its reader's home and
    /// groups show; every other stream public statuses only.
    pub(crate) fn reach(stream: &str) -> Reach {
        if stream == "user"
            || super::want::is_group_stream(stream)
            || super::want::is_list_stream(stream)
        {
            Reach::Followers
        } else {
            Reach::Public
        }
    }

    /// Keeps the frames the reader may see now, in order; what they need
    /// is read first in one pipeline each. What was read for the page
    /// before is forgotten first (bounded, however long the replay).
    pub(crate) async fn keep(&mut self, frames: Vec<Arc<Frame>>) -> StoreResult<Vec<Arc<Frame>>> {
        self.sight.trim();
        self.liked.clear();
        let mut sids = Vec::new();
        let mut uids = Vec::new();
        let mut liked = Vec::new();
        for f in &frames {
            match judged(&f.event) {
                Judged::Status { status, audience } => {
                    sids.push(status.id.get());
                    uids.extend(people_of(status).chain(audience));
                }
                Judged::Liked { status_id } => liked.push(status_id),
                Judged::Message { .. } | Judged::Always => {}
            }
        }
        if !sids.is_empty() || !uids.is_empty() {
            self.sight.prefetch(&sids, &uids).await?;
        }
        if !liked.is_empty() {
            liked.sort_unstable();
            liked.dedup();
            let found = self.sight.store().statuses().many(&liked).await?;
            let mut parents = Vec::new();
            for (sid, status) in found {
                if let Some(c) = &status {
                    parents.extend(people_of(&c.status));
                }
                self.liked.insert(sid, status);
            }
            self.sight.prefetch(&[], &parents).await?;
        }
        let mut kept = Vec::with_capacity(frames.len());
        for f in frames {
            if self.sees(&f).await? {
                kept.push(f);
            }
        }
        self.current_versions(kept).await
    }

    /// The frames with each status as it is now: one edited since the
    /// event carries its latest version. Each status's last edit is known
    /// from the page's prefetch; only those edited since are read whole.
    async fn current_versions(&self, frames: Vec<Arc<Frame>>) -> StoreResult<Vec<Arc<Frame>>> {
        let edited = |f: &Frame| {
            let status = status_of(&f.event)?;
            let sid: u64 = status.id.get();
            match self.sight.status_now(sid) {
                Some(Some(now)) if now.edited_at == status.edited_at => None,
                _ => Some(sid),
            }
        };
        let sids: Vec<u64> = frames.iter().filter_map(|f| edited(f)).collect();
        if sids.is_empty() {
            return Ok(frames);
        }
        let now: rustc_hash::FxHashMap<u64, Arc<crate::store::cache::CachedStatus>> = self
            .sight
            .store()
            .statuses()
            .many(&sids)
            .await?
            .into_iter()
            .filter_map(|(id, s)| Some((id, s?)))
            .collect();
        Ok(frames
            .into_iter()
            .map(|f| {
                let current = status_of(&f.event).and_then(|s| {
                    let c = now.get(&s.id.get())?;
                    (c.status.edited_at != s.edited_at).then(|| c.status.clone())
                });
                match current {
                    Some(status) => f.with_status(status).unwrap_or(f),
                    None => f,
                }
            })
            .collect())
    }

    /// Whether the reader may see `frame` now: [`judged`] says what the
    /// event shows, and each kind of content is judged here, the same way
    /// whichever event carries it.
    async fn sees(&mut self, frame: &Frame) -> StoreResult<bool> {
        match judged(&frame.event) {
            Judged::Status { status, audience } => {
                see_status(&mut self.sight, status, audience, true).await
            }
            Judged::Liked { status_id } => {
                let Some(Some(status)) = self.liked.get(&status_id).cloned() else {
                    return Ok(false);
                };
                see_status(&mut self.sight, &status.status, None, false).await
            }
            Judged::Message { conversation } => self.sight.participant(conversation).await,
            Judged::Always => Ok(true),
        }
    }
}

/// What an event shows its reader, for [`ReplaySight::sees`].
enum Judged<'a> {
    /// A status (posted, edited, mentioning, reposting, or the one a
    /// notification is about), with the audience its event names.
    Status {
        status: &'a crate::model::Status,
        audience: Option<u64>,
    },
    /// The status a like is of (only its id travels with the event).
    Liked { status_id: u64 },
    /// A message of a conversation.
    Message { conversation: u64 },
    /// Nothing that anyone may not see now: ids of users and of statuses
    /// gone, or an internal event no stream serves.
    Always,
}

/// What `event` shows. Every kind is named (no wildcard arm): a new kind
/// of event does not compile until it is said here what it shows, so no
/// kind can skip the replay's judgement.
fn judged(event: &Event) -> Judged<'_> {
    match event {
        Event::Status {
            status, audience, ..
        }
        | Event::Update {
            status, audience, ..
        } => Judged::Status {
            status,
            audience: audience.map(|a| a.0),
        },
        Event::Mention { status, .. } | Event::Repost { status, .. } => Judged::Status {
            status,
            audience: None,
        },
        Event::Like { status_id, .. } => Judged::Liked {
            status_id: status_id.get(),
        },
        Event::Notification { notification, .. } => match &notification.status {
            Some(status) => Judged::Status {
                status,
                audience: None,
            },
            None => Judged::Always,
        },
        Event::DirectMessage { message, .. } => Judged::Message {
            conversation: message.conversation_id.get(),
        },
        Event::Delete { .. }
        | Event::Follow { .. }
        | Event::Unfollow { .. }
        | Event::User { .. }
        | Event::FollowRequest { .. }
        | Event::NotificationRemoved { .. }
        | Event::Unlike { .. }
        | Event::GroupRequest { .. }
        | Event::ReportResolved { .. }
        | Event::StatusesChanged { .. }
        | Event::Suspended { .. }
        | Event::GroupLeft { .. }
        | Event::ListChanged { .. }
        | Event::RulesChanged { .. }
        | Event::Relation { .. }
        | Event::SessionRevoked { .. }
        | Event::Unknown => Judged::Always,
    }
}

/// Whether the reader may see `status` now: it still exists (asked only
/// with `check_alive`: a status the caller read just now exists), its
/// people, the audience its event names and its group allow.
async fn see_status(
    sight: &mut Sight,
    status: &crate::model::Status,
    audience: Option<u64>,
    check_alive: bool,
) -> StoreResult<bool> {
    let sid: u64 = status.id.get();
    if check_alive && !sight.alive(sid).await? {
        return Ok(false);
    }
    if !sight.status(status).await? {
        return Ok(false);
    }
    if let Some(a) = audience {
        if !sight.author(a).await? {
            return Ok(false);
        }
    }
    group_readable(sight, status.group_id).await
}

/// The accounts judging `status` asks of: its author, the reposted
/// author, the replied-to author and its audience.
fn people_of(status: &crate::model::Status) -> impl Iterator<Item = u64> + '_ {
    [
        Some(status.uid),
        status.repost_of_uid,
        status.reply_to_uid,
        status.audience,
    ]
    .into_iter()
    .flatten()
    .map(Id::get)
}

/// The status an event carries.
fn status_of(event: &Event) -> Option<&crate::model::Status> {
    match event {
        Event::Status { status, .. }
        | Event::Update { status, .. }
        | Event::Mention { status, .. }
        | Event::Repost { status, .. } => Some(status),
        _ => None,
    }
}

/// Whether the reader may read the group a status was posted in (any
/// public or announcement group; a private one while a member).
async fn group_readable(sight: &mut Sight, group: Option<Id>) -> StoreResult<bool> {
    match group.map(Id::get) {
        None => Ok(true),
        Some(gid) => sight.reads_group(gid).await,
    }
}
