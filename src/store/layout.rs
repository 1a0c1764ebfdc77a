//! The key layout of the data in Redis, checked by each process before it
//! serves, and the upgrade from the layout before.
//!
//! `fh:{g}:layout` holds the number of the layout the data was written in.
//! The first process to start on an empty store writes [`LAYOUT`] there
//! (SETNX, so concurrent starts agree), and `fh:{g}:log_shards` the event
//! log's shard count; every process that finds another number, or another
//! count, refuses to serve rather than read or change data kept where it
//! does not look. A version that moves anything raises [`LAYOUT`] and
//! brings the move from the number before, made before it serves.
//!
//! Layout 1 kept the event log in one stream (`fh:{g}:events`, its marks in
//! `fh:{g}:emitted`); layout 2 spreads it over shards. The upgrade, made by
//! one process (a lock; the others wait for it), copies each entry of the
//! old buffer into the shards of its events under the same id, each shard's
//! copy holding a placeholder (field `-`) where another shard's event was,
//! so that every event keeps its id ([`store::events::entry`](crate::store::events::entry)); marks what
//! the old buffer had lost on the shards (XSETID), so a resume point before
//! it still gets `resume_gap`; copies the marks of the ops still in the
//! outbox to every shard (a rerun must not emit them twice); then removes
//! the old keys and writes the new number. Every step may run again: a copy
//! already made is refused by its shard and passed over. Users, statuses,
//! timelines, follows and sessions did not move; each process's history on
//! disk keeps its ids, which order before every id made after.

use crate::store::events::Body;
use crate::store::handle::Store;
use crate::store::plumbing::error::{StoreError, StoreResult};
use crate::store::plumbing::keys::OUTBOX_PARTS;
use redis::AsyncCommands;
use std::collections::HashMap;
use std::time::Duration;

/// The key layout this version reads and writes.
pub const LAYOUT: u64 = 2;

/// Old entries copied a read.
const UPGRADE_PAGE: usize = 500;

/// Stamps an empty store with [`LAYOUT`] and the log's shard count,
/// upgrades one of the layout before; returns what was found instead
/// when the data is in a layout (or a shard count) this process does
/// not read (`None`: ours).
pub async fn foreign_layout(store: &Store) -> StoreResult<Option<String>> {
    let mut conn = store.conn();
    let _: () = conn.set_nx(store.keys.layout(), LAYOUT).await?;
    let found: Option<String> = conn.get(store.keys.layout()).await?;
    if found.as_deref() == Some("1") {
        upgrade_from_1(store).await?;
    } else if let Some(found) = found.filter(|f| *f != LAYOUT.to_string()) {
        return Ok(Some(found));
    }
    let shards = store.keys.log_shards();
    let _: () = conn.set_nx(store.keys.log_shard_count(), shards).await?;
    let count: Option<usize> = conn.get(store.keys.log_shard_count()).await?;
    Ok(count
        .filter(|c| *c != shards)
        .map(|c| format!("{LAYOUT} with --log-shards {c} (this process: {shards})")))
}

/// The move from layout 1 (see the module's doc).
async fn upgrade_from_1(store: &Store) -> StoreResult<()> {
    let mut conn = store.conn();
    let lock = format!("{}:upgrading", store.keys.layout());
    let mine: Option<String> = redis::cmd("SET")
        .arg(&lock)
        .arg(1)
        .arg("NX")
        .arg("EX")
        .arg(300)
        .query_async(&mut conn)
        .await?;
    if mine.is_none() {
        // Another process upgrades: wait for it.
        for _ in 0..1_500 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let now: Option<String> = conn.get(store.keys.layout()).await?;
            if now.as_deref() != Some("1") {
                return Ok(());
            }
        }
        return Err(StoreError::Unavailable(
            "another process is upgrading the key layout".into(),
        ));
    }
    let old = store.keys.events();
    let info = stream_info(&mut conn, &old).await?;
    let (mut from, mut copied) = ("-".to_string(), 0u64);
    loop {
        let rows: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
            .arg(&old)
            .arg(&from)
            .arg("+")
            .arg("COUNT")
            .arg(UPGRADE_PAGE)
            .query_async(&mut conn)
            .await?;
        for (id, fields) in &rows {
            copy_entry(store, id, fields).await?;
            copied += 1;
        }
        match rows.last() {
            Some((last, _)) if rows.len() == UPGRADE_PAGE => from = format!("({last}"),
            _ => break,
        }
    }
    mark_old_losses(store, &info).await?;
    copy_pending_marks(store).await?;
    let _: () = conn.del(&[old, store.keys.emitted()]).await?;
    let _: () = conn.set(store.keys.layout(), LAYOUT).await?;
    let _: () = conn.del(&lock).await?;
    tracing::info!(
        entries = copied,
        "key layout upgraded from 1 to 2: the event log is sharded"
    );
    Ok(())
}

/// Copies one entry of the old buffer into the shards of its events.
async fn copy_entry(store: &Store, id: &str, fields: &[String]) -> StoreResult<()> {
    let mut conn = store.conn();
    let events: Vec<(usize, &str)> = fields
        .chunks(2)
        .filter(|kv| kv.len() == 2 && kv[0] == "e")
        .map(|kv| {
            (
                store.keys.log_shard(Body::from_json(kv[1].clone()).key),
                kv[1].as_str(),
            )
        })
        .collect();
    let mut shards: Vec<usize> = events.iter().map(|(k, _)| *k).collect();
    shards.sort_unstable();
    shards.dedup();
    for k in shards {
        let mut cmd = redis::cmd("XADD");
        cmd.arg(store.keys.log_events(k)).arg(id);
        for (j, body) in &events {
            match *j == k {
                true => cmd.arg("e").arg(*body),
                false => cmd.arg("-").arg(""),
            };
        }
        match cmd.query_async::<String>(&mut conn).await {
            Ok(_) => {}
            // Copied by an earlier run of the upgrade.
            Err(e) if e.to_string().contains("equal or smaller") => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// What the old buffer had lost (trimmed before its first entry, or
/// deleted) marked on every shard that holds a copy, as the newest
/// deleted id there.
async fn mark_old_losses(store: &Store, info: &HashMap<String, String>) -> StoreResult<()> {
    let id = |name: &str| {
        info.get(name)
            .and_then(|v| crate::store::events::EventId::parse(v))
            .filter(|e| *e != crate::store::events::EventId::ZERO)
    };
    let trimmed = info
        .get("entries-added")
        .zip(info.get("length"))
        .is_some_and(|(a, l)| a.parse::<u64>().ok() > l.parse::<u64>().ok());
    let before_first = id("recorded-first-entry-id")
        .filter(|_| trimmed)
        .map(|f| f.just_before());
    let Some(lost) = before_first.max(id("max-deleted-entry-id")) else {
        return Ok(());
    };
    let mut conn = store.conn();
    for k in 0..store.keys.log_shards() {
        let key = store.keys.log_events(k);
        let shard = stream_info(&mut conn, &key).await?;
        let (Some(last), Some(length)) = (shard.get("last-generated-id"), shard.get("length"))
        else {
            continue;
        };
        let length: u64 = length.parse().unwrap_or(0);
        let _: () = redis::cmd("XSETID")
            .arg(&key)
            .arg(last)
            .arg("ENTRIESADDED")
            .arg(length + 1)
            .arg("MAXDELETEDID")
            .arg(lost.entry())
            .query_async(&mut conn)
            .await?;
    }
    Ok(())
}

/// The old marks of the ops still in the outbox, in every shard.
async fn copy_pending_marks(store: &Store) -> StoreResult<()> {
    let mut conn = store.conn();
    for part in 0..OUTBOX_PARTS {
        let members: Vec<String> = conn.zrange(store.keys.part_outbox(part), 0, -1).await?;
        let ops: Vec<&str> = members
            .iter()
            .filter_map(|m| m.split_once('|').map(|(n, _)| n))
            .collect();
        if ops.is_empty() {
            continue;
        }
        let marked: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(store.keys.emitted())
            .arg(&ops)
            .query_async(&mut conn)
            .await?;
        for (op, _) in ops.iter().zip(marked).filter(|(_, m)| m.is_some()) {
            for k in 0..store.keys.log_shards() {
                let _: () = conn.hset(store.keys.log_emitted(k), *op, 1).await?;
            }
        }
    }
    Ok(())
}

/// A stream's XINFO STREAM as text fields (empty when it does not exist).
async fn stream_info(
    conn: &mut crate::store::plumbing::conn::RedisConn,
    key: &str,
) -> StoreResult<HashMap<String, String>> {
    let info: redis::RedisResult<redis::Value> = redis::cmd("XINFO")
        .arg("STREAM")
        .arg(key)
        .query_async(conn)
        .await;
    let pairs: Vec<(redis::Value, redis::Value)> = match info {
        Ok(redis::Value::Map(m)) => m,
        Ok(redis::Value::Array(items)) => items
            .chunks(2)
            .filter_map(|kv| Some((kv.first()?.clone(), kv.get(1)?.clone())))
            .collect(),
        Ok(_) => Vec::new(),
        // No such key: nothing to copy.
        Err(e) if e.code() == Some("ERR") => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    Ok(pairs
        .into_iter()
        .filter_map(|(k, v)| {
            let k = redis::from_redis_value::<String>(k).ok()?;
            let v = redis::from_redis_value::<String>(v).ok()?;
            Some((k, v))
        })
        .collect())
}

/// What to tell an operator whose data is in layout `found`.
pub fn foreign_layout_error(found: &str) -> String {
    format!(
        "the data in Redis is in key layout {found}, this version reads layout {LAYOUT}: \
         run the version that wrote it (or start with the --log-shards it was written with), \
         or point --redis-url (or --key-prefix) elsewhere"
    )
}
