//! Filter rules kept per user (the search stream's): each a `{id, value,
//! tag}` JSON in the user's `rules` HASH, with a value → id HASH for
//! duplicates and an order ZSET (oldest first). Ids are status ids: unique,
//! never reused.

use crate::model::Id;
use crate::store::handle::Store;
use crate::store::plumbing::error::{StoreError, StoreResult};
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

/// Most rules a user may keep.
pub(crate) const MAX_RULES: usize = 1000;

/// A rule as kept and answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = Rule)]
pub struct StoredRule {
    /// Assigned by the server; null for a rule a dry run would create.
    pub id: Option<String>,
    /// As sent.
    pub value: String,
    /// As sent at creation, or null.
    pub tag: Option<String>,
}

/// What an add did.
#[derive(Debug, Clone, PartialEq)]
pub struct Added {
    /// One rule per item, in order.
    pub rules: Vec<StoredRule>,
    /// How many were (or, in a dry run, would be) created.
    pub created: usize,
}

/// Users' filter rules (`Store::rules`).
#[derive(Clone, Copy)]
pub struct Rules<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Rules<'_> {
    /// Adds rules (value, tag) to `uid`'s set: duplicates answer the rule
    /// they repeat; `Limit`-free: beyond [`MAX_RULES`] it is `Invalid`
    /// (`too_many_rules`) and nothing changes.
    pub async fn add(
        self,
        uid: u64,
        items: &[(String, Option<String>)],
        dry_run: bool,
    ) -> StoreResult<Added> {
        let mut inv = self.store.scripts.rules_add.prepare_invoke();
        inv.key(self.store.keys.rules(uid))
            .key(self.store.keys.rule_values(uid))
            .key(self.store.keys.rule_order(uid))
            .arg(MAX_RULES)
            .arg(if dry_run { "1" } else { "0" })
            .arg(crate::model::now());
        for (value, tag) in items {
            let (id, _) = self.store.mint().snowflake().await?;
            let tag =
                serde_json::to_string(tag).map_err(|e| StoreError::Internal(e.to_string()))?;
            inv.arg(value).arg(tag).arg(id);
        }
        let mut conn = self.store.conn();
        let reply: Vec<String> = inv.invoke_async(&mut conn).await?;
        if reply.first().map(String::as_str) != Some("ok") {
            return Err(StoreError::Invalid(
                "too_many_rules",
                format!("A user keeps at most {MAX_RULES} rules; delete some first."),
            ));
        }
        let created = reply.get(1).and_then(|n| n.parse().ok()).unwrap_or(0);
        let version: u64 = reply.get(2).and_then(|n| n.parse().ok()).unwrap_or(0);
        let ids = &reply[3.min(reply.len())..];
        let existing: Vec<Option<String>> = {
            let known: Vec<&String> = ids.iter().filter(|id| !id.is_empty()).collect();
            if known.is_empty() {
                Vec::new()
            } else {
                redis::cmd("HMGET")
                    .arg(self.store.keys.rules(uid))
                    .arg(&known)
                    .query_async(&mut conn)
                    .await?
            }
        };
        let mut stored = existing.into_iter();
        let mut rules = Vec::with_capacity(items.len());
        for ((value, tag), id) in items.iter().zip(ids) {
            if id.is_empty() {
                rules.push(StoredRule {
                    id: None,
                    value: value.clone(),
                    tag: tag.clone(),
                });
                continue;
            }
            let kept = stored
                .next()
                .flatten()
                .and_then(|j| serde_json::from_str::<StoredRule>(&j).ok());
            rules.push(kept.unwrap_or(StoredRule {
                id: Some(id.clone()),
                value: value.clone(),
                tag: tag.clone(),
            }));
        }
        if version > 0 {
            self.announce(uid, version).await?;
        }
        Ok(Added { rules, created })
    }

    /// Deletes `uid`'s rules with these ids: (deleted, not found).
    pub async fn delete(
        self,
        uid: u64,
        ids: &[String],
        dry_run: bool,
    ) -> StoreResult<(Vec<String>, Vec<String>)> {
        let mut conn = self.store.conn();
        let mut inv = self.store.scripts.rules_delete.prepare_invoke();
        inv.key(self.store.keys.rules(uid))
            .key(self.store.keys.rule_values(uid))
            .key(self.store.keys.rule_order(uid))
            .arg(if dry_run { "1" } else { "0" });
        for id in ids {
            inv.arg(id);
        }
        let mut reply: Vec<String> = inv.invoke_async(&mut conn).await?;
        let version: u64 = if reply.is_empty() {
            0
        } else {
            reply.remove(0).parse().unwrap_or(0)
        };
        if version > 0 {
            self.announce(uid, version).await?;
        }
        let cut = reply.iter().position(|x| x == "|").unwrap_or(reply.len());
        Ok((
            reply[..cut].to_vec(),
            reply[(cut + 1).min(reply.len())..].to_vec(),
        ))
    }

    /// `uid`'s rules, oldest first, with their version (read first: rules
    /// read with an older version than theirs are reloaded when the newer
    /// version's `rules_changed` event arrives).
    pub async fn versioned(self, uid: u64) -> StoreResult<(u64, Vec<StoredRule>)> {
        let mut conn = self.store.conn();
        let version: Option<u64> = conn.hget(self.store.keys.rule_values(uid), "").await?;
        Ok((version.unwrap_or(0), self.all(uid).await?))
    }

    /// Tells every process's hub that `uid`'s rules are now at `version`.
    async fn announce(self, uid: u64, version: u64) -> StoreResult<()> {
        let body = crate::store::events::body(&crate::model::Event::RulesChanged {
            uid: Id(uid),
            version,
        });
        self.store.events().emit(&body).await?;
        Ok(())
    }

    /// `uid`'s rules, oldest first.
    pub async fn all(self, uid: u64) -> StoreResult<Vec<StoredRule>> {
        let mut conn = self.store.conn();
        let ids: Vec<String> = conn.zrange(self.store.keys.rule_order(uid), 0, -1).await?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(self.store.keys.rules(uid))
            .arg(&ids)
            .query_async(&mut conn)
            .await?;
        Ok(rows
            .into_iter()
            .flatten()
            .filter_map(|j| serde_json::from_str(&j).ok())
            .collect())
    }
}
