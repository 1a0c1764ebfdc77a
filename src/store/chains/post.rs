//! The post chain: the repost mapping, the status, the author's timelines,
//! the indices, the first followers' homes, then the events.

use super::{unique_tags, Count, INDEX_CAP};
use crate::model::{timeline_score, trims_homes, Event, Status, HOME_CAP};
use crate::store::events::body;
use crate::store::fanout::FanoutKind;
use crate::store::outbox::{Finish, PostEnd};
use crate::store::outbox::{Op, Owed};
use crate::store::plumbing::error::parse_id;
use crate::store::plumbing::error::{StoreError, StoreResult};
use crate::store::plumbing::handle::Store;
use redis::AsyncCommands;

impl Store {
    /// A post's steps: the repost mapping, the status, the author's
    /// timelines, the parent's replies, the mentions and hashtag timelines,
    /// the trending bucket, the first followers' homes; then its events.
    pub(crate) async fn run_post(&self, owed: &Owed) -> StoreResult<PostEnd> {
        let Op::Post {
            fields,
            private,
            mentioned,
            notify_original,
            idempotency_key,
        } = &owed.op
        else {
            return Err(StoreError::Internal("not a post".into()));
        };
        let status = Status::from_hash(fields)
            .ok_or_else(|| StoreError::Internal("a post op without a status".into()))?;
        let private = *private || status.audience.is_some() || status.group_private;
        // A group's status goes to its group's timeline alone: no profile,
        // home or follower's home.
        let group: Option<u64> = status.group_id.as_deref().and_then(|g| g.parse().ok());
        let sid = parse_id(&status.id)?;
        let uid = parse_id(&status.uid)?;
        let parent = status.parent_id();
        let original = status.original_id();
        let tags = unique_tags(&status.hashtags);
        let mut conn = self.conn();
        let quit = |end: PostEnd| async move {
            self.finish_op(owed, Finish::default()).await?;
            Ok(end)
        };
        if let Some(original) = original {
            let reply: Vec<String> = self.repost_claim(original, uid, sid, true).await?;
            match reply.first().map(String::as_str) {
                Some("reposted") => {
                    let first = reply.get(1).and_then(|id| id.parse().ok()).unwrap_or(0);
                    return quit(PostEnd::Reposted(first)).await;
                }
                Some("missing") => return quit(PostEnd::Missing("status")).await,
                _ => {}
            }
        }
        let mut inv = self.scripts.status_put.prepare_invoke();
        inv.key(self.keys.status(sid)).arg(sid);
        for (k, v) in fields {
            if k != "id" {
                inv.arg(k).arg(v);
            }
        }
        let put: i64 = inv.invoke_async(&mut conn).await?;
        if put < 0 {
            // Deleted before its post finished: nothing more to do.
            return quit(PostEnd::Missing("status")).await;
        }
        let score = timeline_score(status.posted);
        match group {
            Some(gid) => {
                let _: () = conn
                    .zadd(self.keys.user_group_statuses(uid), sid, score)
                    .await?;
                self.group_timeline_add(gid, sid, score).await?
            }
            None => {
                let posts: i64 = self
                    .scripts
                    .author_post
                    .key(self.keys.user(uid))
                    .key(self.keys.profile(uid))
                    .key(self.keys.home(uid))
                    .arg(sid)
                    .arg(score)
                    .arg(if trims_homes(sid) { HOME_CAP } else { 0 })
                    .invoke_async(&mut conn)
                    .await?;
                if posts < 0 {
                    return quit(PostEnd::Missing("user")).await;
                }
            }
        }
        if let Some(p) = parent {
            // A reply in a private group to a status outside it is not
            // counted in that status's replies: the count would reveal
            // what the group hides.
            let counted = !status.group_private
                || self.status_uncounted(p).await.ok().and_then(|s| s.group_id) == status.group_id;
            if counted {
                self.count_reply(p, sid, score, Count::In).await?;
            }
        }
        // A private group's statuses stay out of hashtag timelines (its
        // mentions reach members only: the caller chose `mentioned`).
        let public_tags: &[String] = if status.group_private { &[] } else { &tags };
        let indexed: Vec<String> = mentioned
            .iter()
            .map(|m| self.keys.mentions(*m))
            .chain(public_tags.iter().map(|t| self.keys.tag(t)))
            .collect();
        if !indexed.is_empty() {
            let mut pipe = redis::pipe();
            for key in &indexed {
                pipe.zadd(key, sid, score).ignore();
                pipe.zremrangebyrank(key, 0, -(INDEX_CAP as isize) - 1)
                    .ignore();
            }
            let _: () = pipe.query_async(&mut conn).await?;
        }
        if !private && !tags.is_empty() {
            self.count_trend(&sid.to_string(), status.posted, &tags, Count::In)
                .await?;
        }
        for id in parent.into_iter().chain(original) {
            self.counts_cache.forget(id);
        }
        let tasks = match group {
            Some(_) => Vec::new(),
            None => {
                self.fanout_inline(FanoutKind::Post, sid, uid, status.posted)
                    .await?
            }
        };
        let at = status.posted;
        let mut events = vec![body(&Event::Status {
            at,
            status: status.clone(),
            private,
            audience: status
                .audience
                .as_deref()
                .and_then(|a| a.parse().ok())
                .map(crate::model::IdString),
        })];
        for &target in mentioned {
            events.push(body(&Event::Mention {
                at,
                status: status.clone(),
                target,
                private,
            }));
        }
        let original = status.repost_of_uid.as_deref().and_then(|t| t.parse().ok());
        if let Some(target) = original.filter(|_| *notify_original) {
            events.push(body(&Event::Repost {
                at,
                status: status.clone(),
                target,
                private,
            }));
        }
        let answer = match idempotency_key {
            Some(key) => Some((
                self.answer_key(owed, uid, key),
                serde_json::to_string(&status).map_err(|e| StoreError::Internal(e.to_string()))?,
            )),
            None => None,
        };
        self.finish_op(
            owed,
            Finish {
                events,
                tasks,
                answer,
            },
        )
        .await?;
        Ok(PostEnd::Created)
    }
}
