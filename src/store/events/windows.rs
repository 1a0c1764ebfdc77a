//! The shared history's manifest (`--history-store`): which windows of the
//! log are sealed in the object store, with what each holds, in one ZSET
//! (`fh:{h}:windows`, [`Keys::history_windows`]). Each window is a member
//! `<start> <first> <last> <prev> <count> <bytes> <gap>` scored by its
//! first millisecond (`start`); the member `~sealed` is scored by the first
//! millisecond not yet sealed. Readers learn the windows from it without
//! listing the bucket; the sealer goes on from `~sealed`.
//!
//! [`Keys::history_windows`]: crate::store::plumbing::keys::Keys::history_windows

use super::handle::Events;
use crate::store::log::id::EventId;
use crate::store::plumbing::error::StoreResult;

/// The member scored by where sealing goes on.
const SEALED: &str = "~sealed";

/// What one sealed window holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Its first millisecond (the windows are `Windows::span` long).
    pub start: u64,
    pub first: EventId,
    pub last: EventId,
    /// The last event before it when it was sealed (`ZERO`: none).
    pub prev: EventId,
    pub count: u64,
    pub bytes: u64,
    /// Events before its first were missed by whoever sealed it.
    pub gap: bool,
}

impl Window {
    fn member(&self) -> String {
        format!(
            "{} {} {} {} {} {} {}",
            self.start,
            self.first,
            self.last,
            self.prev,
            self.count,
            self.bytes,
            u8::from(self.gap)
        )
    }

    fn parse(member: &str) -> Option<Window> {
        let mut parts = member.split(' ');
        let mut next = || parts.next();
        Some(Window {
            start: next()?.parse().ok()?,
            first: EventId::parse(next()?)?,
            last: EventId::parse(next()?)?,
            prev: EventId::parse(next()?)?,
            count: next()?.parse().ok()?,
            bytes: next()?.parse().ok()?,
            gap: next()? == "1",
        })
    }
}

impl Events<'_> {
    /// The sealed windows beginning at or after `from` ms, oldest first,
    /// at most `most`, and where sealing goes on (`None`: never sealed).
    pub async fn windows(self, from: u64, most: usize) -> StoreResult<(Vec<Window>, Option<u64>)> {
        let key = self.store.keys().history_windows();
        let mut conn = self.store.conn();
        let (members, sealed): (Vec<String>, Option<f64>) = redis::pipe()
            .cmd("ZRANGE")
            .arg(&key)
            .arg(from)
            .arg("+inf")
            .arg("BYSCORE")
            .arg("LIMIT")
            .arg(0)
            .arg(most)
            .cmd("ZSCORE")
            .arg(&key)
            .arg(SEALED)
            .query_async(&mut conn)
            .await?;
        let windows = members.iter().filter_map(|m| Window::parse(m)).collect();
        Ok((windows, sealed.map(|s| s as u64)))
    }

    /// Records `window` as sealed (when given) and sealing as gone on to
    /// `next` ms; `~sealed` never moves back (`GT`). One key, one atomic
    /// pipeline.
    pub async fn record_window(self, window: Option<Window>, next: u64) -> StoreResult<()> {
        let key = self.store.keys().history_windows();
        let mut pipe = redis::pipe();
        pipe.atomic();
        if let Some(w) = window {
            // A window recorded before (a sealer that lost its lease
            // meanwhile) is replaced, never held twice.
            pipe.cmd("ZREMRANGEBYSCORE")
                .arg(&key)
                .arg(w.start)
                .arg(w.start)
                .ignore();
            pipe.cmd("ZADD")
                .arg(&key)
                .arg(w.start)
                .arg(w.member())
                .ignore();
        }
        pipe.cmd("ZADD")
            .arg(&key)
            .arg("GT")
            .arg(next)
            .arg(SEALED)
            .ignore();
        let _: () = pipe.query_async(&mut self.store.conn()).await?;
        Ok(())
    }

    /// Forgets the window beginning at `start` (retention removed it).
    pub async fn forget_window(self, start: u64) -> StoreResult<()> {
        let _: i64 = redis::cmd("ZREMRANGEBYSCORE")
            .arg(self.store.keys().history_windows())
            .arg(start)
            .arg(start)
            .query_async(&mut self.store.conn())
            .await?;
        Ok(())
    }
}
