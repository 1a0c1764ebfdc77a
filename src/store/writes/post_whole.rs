//! A post on one Redis: `post_whole.lua`, every step of it in one atomic
//! script (no outbox entry, no chain). Group statuses, replies to private
//! statuses, posts of authors past `--fanout-inline` followers, and every
//! post on a cluster take the chain (`chains/post.rs`).

use crate::model::{trims_homes, Event, Status, HOME_CAP};
use crate::store::chains::{unique_tags, INDEX_CAP, TREND_BUCKET_TTL};
use crate::store::events::body;
use crate::store::outbox::IDEMPOTENCY_TTL;
use crate::store::plumbing::error::{parse_id, StoreError, StoreResult};
use crate::store::plumbing::handle::Store;
use crate::store::plumbing::keys::trend_groups;
use crate::store::writes::posting::{PostOptions, Posted};
use std::collections::HashMap;

impl Store {
    /// Whether [`Store::post_whole`] may take this post.
    pub(crate) fn posts_whole(&self, status: &Status) -> bool {
        !self.is_cluster()
            && (status.repost_of.is_none() || status.repost_of_uid.is_some())
            && status.group_id.is_none()
            && status.audience.is_none()
            && !status.group_private
    }

    /// Posts `status` whole. `None`: the author has more followers than
    /// the inline fan-out reaches, nothing was written, and the caller
    /// takes the chain. An Idempotency-Key used before gives
    /// [`Whole::Duplicate`] with its first answer (which may be a chain's
    /// `pending|` entry, for the caller to finish).
    pub(crate) async fn post_whole(
        &self,
        status: &Status,
        opts: &PostOptions<'_>,
        fields: &HashMap<String, String>,
    ) -> StoreResult<Option<Whole>> {
        let sid = parse_id(&status.id)?;
        let uid = parse_id(&status.uid)?;
        let parent = status.parent_id();
        let original = status.original_id();
        let original_uid: Option<u64> =
            status.repost_of_uid.as_deref().and_then(|t| t.parse().ok());
        let tags = unique_tags(&status.hashtags);
        let trending: &[String] = if opts.private { &[] } else { &tags };
        let indexed: Vec<String> = opts
            .mentioned
            .iter()
            .map(|m| self.keys.mentions(*m))
            .chain(tags.iter().map(|t| self.keys.tag(t)))
            .collect();
        let at = status.posted;
        let mut events = vec![body(&Event::Status {
            at,
            status: status.clone(),
            private: opts.private,
            audience: None,
        })];
        for &target in opts.mentioned {
            events.push(body(&Event::Mention {
                at,
                status: status.clone(),
                target,
                private: opts.private,
            }));
        }
        if let Some(target) = original_uid.filter(|_| opts.notify_original) {
            events.push(body(&Event::Repost {
                at,
                status: status.clone(),
                target,
                private: opts.private,
            }));
        }
        let minute = (at / 60.0) as u64;
        let mut inv = self.scripts.post_whole.prepare_invoke();
        inv.key(self.keys.status(sid))
            .key(self.keys.user(uid))
            .key(self.keys.profile(uid))
            .key(self.keys.home(uid))
            .key(self.keys.followers(uid))
            .key(self.keys.events());
        match parent {
            Some(p) => inv.key(self.keys.status(p)).key(self.keys.replies(p)),
            None => inv.key(self.keys.status(sid)).key(self.keys.status(sid)),
        };
        let idempotency = opts.idempotency_key.map(|k| self.keys.idempotency(uid, k));
        inv.key(idempotency.unwrap_or_else(|| self.keys.status(sid)));
        match original {
            Some(o) => inv.key(self.keys.status(o)).key(self.keys.reposters(o)),
            None => inv.key(self.keys.status(sid)).key(self.keys.status(sid)),
        };
        for key in &indexed {
            inv.key(key);
        }
        let groups = trend_groups(trending);
        for (p, _) in &groups {
            inv.key(self.keys.trend_bucket(*p, minute))
                .key(self.keys.trend_seen(*p, minute));
        }
        inv.arg(sid)
            .arg(at)
            .arg(uid)
            .arg(if trims_homes(sid) { HOME_CAP } else { 0 })
            .arg(INDEX_CAP)
            .arg(self.fanout_inline)
            .arg(self.replay_maxlen)
            .arg(self.keys.channel())
            .arg(self.keys.home(0))
            .arg(self.keys.hide(0))
            .arg(if parent.is_some() { "1" } else { "0" })
            .arg(indexed.len())
            .arg(groups.len())
            .arg(TREND_BUCKET_TTL)
            .arg(fields.iter().filter(|(k, _)| *k != "id").count())
            .arg(events.len())
            .arg(original_uid.map_or(String::new(), |o| o.to_string()))
            .arg(self.keys.hidden_by(0));
        for (_, group) in &groups {
            inv.arg(group.len());
            for t in group {
                inv.arg(t);
            }
        }
        for (k, v) in fields.iter().filter(|(k, _)| *k != "id") {
            inv.arg(k).arg(v);
        }
        for e in &events {
            inv.arg(e);
        }
        let answer = match opts.idempotency_key {
            Some(_) => {
                serde_json::to_string(status).map_err(|e| StoreError::Internal(e.to_string()))?
            }
            None => String::new(),
        };
        inv.arg(answer).arg(IDEMPOTENCY_TTL);
        let mut conn = self.conn();
        let reply: redis::Value = inv.invoke_async(&mut conn).await?;
        for id in parent.into_iter().chain(original) {
            self.counts_cache.forget(id);
        }
        if let Ok((word, first)) = redis::from_redis_value::<(String, String)>(reply.clone()) {
            match word.as_str() {
                "dup" => return Ok(Some(Whole::Duplicate(first))),
                "reposted" => {
                    let id = first.parse().unwrap_or(0);
                    return Ok(Some(Whole::Done(Posted::Reposted(id))));
                }
                _ => {}
            }
        }
        match redis::from_redis_value::<String>(reply) {
            Ok(word) if word == "chain" => Ok(None),
            Ok(word) if word == "nouser" => Err(StoreError::NotFound("user")),
            Ok(word) if word == "missing" => Err(StoreError::NotFound("status")),
            _ => Ok(Some(Whole::Done(Posted::Created))),
        }
    }
}

/// What [`Store::post_whole`] did.
pub(crate) enum Whole {
    /// The post is made (or refused).
    Done(Posted),
    /// Its Idempotency-Key was used before: the key's first value.
    Duplicate(String),
}
