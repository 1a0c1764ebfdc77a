//! What a replay may serve now: each replayed event judged with the
//! reader's present rights (`crate::visibility::Sight`), not those it had
//! when the event was made. A status deleted since, or whose author has
//! since been deleted, suspended or made private (to a reader who does not
//! follow them), a reply to a status the reader may not see, a message of
//! a conversation the reader left and a status of a private group the
//! reader is no longer in are not served again; `delete` events always
//! are. Every replay (`count`, `since`, `Last-Event-ID`) passes here:
//! `stream::feed` pushes no replayed event that [`ReplaySight::keep`]
//! refused.

use super::frame::Frame;
use crate::model::Event;
use crate::store::StoreResult;
use crate::visibility::{Reach, Sight};
use std::sync::Arc;

/// One replay's judgement.
pub struct ReplaySight {
    sight: Sight,
}

impl ReplaySight {
    /// For a replay of `stream` to `sight`'s reader.
    pub fn new(sight: Sight) -> ReplaySight {
        ReplaySight { sight }
    }

    /// The reach a stream shows: the user stream (and the group streams,
    /// whose membership `Sight` checks) shows what its reader's home and
    /// groups show; every other stream public statuses only.
    pub fn reach(stream: &str) -> Reach {
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
    pub async fn keep(&mut self, frames: Vec<Arc<Frame>>) -> StoreResult<Vec<Arc<Frame>>> {
        self.sight.trim();
        let mut sids = Vec::new();
        let mut uids = Vec::new();
        for f in &frames {
            if let Some(status) = status_of(&f.event) {
                sids.extend(status.id.parse::<u64>().ok());
                uids.extend(status.uid.parse::<u64>().ok());
                uids.extend(
                    status
                        .repost_of_uid
                        .as_deref()
                        .and_then(|u| u.parse::<u64>().ok()),
                );
            }
            if let Event::Like {
                status_id, target, ..
            } = f.event
            {
                sids.push(status_id);
                uids.push(target);
            }
        }
        if !sids.is_empty() || !uids.is_empty() {
            self.sight.prefetch(&sids, &uids).await?;
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
            let sid: u64 = status.id.parse().ok()?;
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
                    let c = now.get(&s.id.parse().ok()?)?;
                    (c.status.edited_at != s.edited_at).then(|| c.status.clone())
                });
                match current {
                    Some(status) => f.with_status(status).unwrap_or(f),
                    None => f,
                }
            })
            .collect())
    }

    /// Whether the reader may see `frame` now.
    async fn sees(&mut self, frame: &Frame) -> StoreResult<bool> {
        let sight = &mut self.sight;
        match &frame.event {
            Event::Status {
                status, audience, ..
            } => {
                let sid: u64 = status.id.parse().unwrap_or(0);
                if !sight.alive(sid).await? || !sight.status(status).await? {
                    return Ok(false);
                }
                if let Some(a) = audience {
                    if !sight.author(a.0).await? {
                        return Ok(false);
                    }
                }
                group_readable(sight, status.group_id.as_deref()).await
            }
            Event::Mention { status, .. } | Event::Repost { status, .. } => {
                let sid: u64 = status.id.parse().unwrap_or(0);
                if !sight.alive(sid).await? || !sight.status(status).await? {
                    return Ok(false);
                }
                group_readable(sight, status.group_id.as_deref()).await
            }
            Event::Like {
                status_id, target, ..
            } => Ok(sight.alive(*status_id).await? && sight.author(*target).await?),
            Event::DirectMessage { message, .. } => {
                let cid: u64 = message.conversation_id.parse().unwrap_or(0);
                sight.participant(cid).await
            }
            _ => Ok(true),
        }
    }
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
async fn group_readable(sight: &mut Sight, group: Option<&str>) -> StoreResult<bool> {
    match group.and_then(|g| g.parse::<u64>().ok()) {
        None => Ok(true),
        Some(gid) => sight.reads_group(gid).await,
    }
}
