//! One connection's feed: replayed history first, then live events, with no
//! gap and no duplicate.
//!
//! The order of operations is what makes resume exact: the subscription is
//! registered with the hub first (from then on live events queue up), then
//! the replay buffer is read up to its current end, and every live event at
//! or below the last id read is dropped as already considered.

mod lag;
mod replay;
mod replay_job;

use crate::stream::frame::DisconnectCode;
use crate::stream::queue::Out;
use replay_job::{resume_gap, Lag, ReplayJob};

use super::direct::Direct;
use super::frame::{Control, EventId};
use super::hub::conn::ClientConn;
use super::hub::Hub;
use super::queue::Delivery;
use super::replay_sight::ReplaySight;
use super::translate::Pick;
use super::want::Want;
use super::wire::Transport;
use crate::hides::Hides;
use crate::history::History;
use crate::shutdown::Shutdown;
use crate::store::StoreResult;
use firehose_filters::SubId;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Events replayed at most by `count=N`.
pub(crate) const MAX_COUNT: usize = 1000;

/// Where a replay starts.
#[derive(Debug, Clone)]
pub enum Replay {
    /// Live only.
    None,
    /// Everything matching after this id.
    After(EventId),
    /// A resume point that cannot be honoured (malformed): the stream warns
    /// `resume_gap` and goes live. Not an error, since a 400 would make a
    /// browser's EventSource stop reconnecting.
    Unservable,
    /// The newest N matching events.
    Newest(usize),
    /// Everything matching from this time (ms since the epoch) on: the
    /// buffer's ids begin with the millisecond they were added.
    Since(u64),
}

/// One live subscription of a connection.
struct Sub {
    stream: &'static str,
    id: SubId,
    /// Live events at or below this id were already sent by the replay.
    floor: Option<EventId>,
    /// What it wants, as of its floor (a user stream's follows move on
    /// with the follow events it is sent): what a replay of a lagging
    /// stream judges by.
    want: Want,
}

/// Whether two stream names are the same (the same interned string, most
/// often).
fn same(a: &str, b: &str) -> bool {
    std::ptr::eq(a, b) || a == b
}

/// A connection's source of output.
pub struct Feed {
    conn: Arc<ClientConn>,
    hub: Hub,
    /// The history on disk, read by resumes older than the buffer.
    history: Option<History>,
    pending: VecDeque<Out>,
    /// Replays still to read from the buffer, a page at a time as the
    /// client drains what was read, so memory per connection stays bounded
    /// whatever history it asks for.
    replays: VecDeque<ReplayJob>,
    /// The live subscriptions: a few per connection, looked up on every
    /// delivery by a scan that compares the interned names' pointers first.
    subs: Vec<Sub>,
    shutdown: Shutdown,
    ended: bool,
    /// A plain stream's socket, to become its queue's sink once the stream
    /// is live (see [`Feed::write_directly`]).
    direct: Option<(Arc<TcpStream>, Transport, bool, Option<Pick>)>,
    /// Whether the sink is installed.
    direct_on: bool,
    /// The window a shutdown's reconnection hints are drawn over.
    reconnect_spread: Duration,
    /// The hint this feed ended with, if it ended on shutdown.
    retry_hint: Option<u64>,
    /// Where it stands with live delivery (see [`lag`]).
    lag: Lag,
}

/// When a token expiring at `expires` (seconds since the epoch) expires.
fn expiry(expires: u64) -> Instant {
    let left = (expires as f64 - crate::model::now()).clamp(0.0, 10.0 * 365.0 * 86400.0);
    Instant::now() + Duration::from_secs_f64(left)
}

impl Feed {
    /// Asks the connection to end: `disconnect` with this code and reason,
    /// then close (the first reason given wins).
    pub fn kill(&self, code: DisconnectCode, reason: impl Into<String>) {
        self.conn.kill_saying(code, reason);
    }

    /// The connection lives on under `session`, whose token expires at
    /// `expires` (seconds since the epoch): a token refreshed on its
    /// socket. False if the session was revoked meanwhile.
    pub async fn refresh(&self, session: String, expires: u64) -> bool {
        self.hub
            .refresh(self.conn.id, session, expiry(expires))
            .await
    }

    /// A feed for a new connection of `uid` on session `session`, whose
    /// token expires at `expires` (seconds since the epoch). The hub knows
    /// the connection from here on, so ending the session closes it even
    /// before it subscribes to anything; it also hands out the keep-alives
    /// and ends the feed when the token expires.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        hub: Hub,
        history: Option<History>,
        uid: u64,
        session: String,
        expires: u64,
        queue: usize,
        shutdown: Shutdown,
    ) -> Feed {
        let conn = ClientConn::new(hub.next_id(), uid, session, queue, expiry(expires));
        hub.open(&conn);
        Feed {
            conn,
            hub,
            history,
            pending: VecDeque::new(),
            replays: VecDeque::new(),
            subs: Vec::new(),
            shutdown,
            ended: false,
            direct: None,
            direct_on: false,
            reconnect_spread: Duration::ZERO,
            retry_hint: None,
            lag: Lag::Live,
        }
    }

    /// On shutdown, tell the client to come back after a delay drawn
    /// uniformly over `spread` (at least a tenth of it): see
    /// `Control::Disconnect`'s `retry_after_ms`. Zero: no hint.
    pub fn spread_reconnects(&mut self, spread: Duration) {
        self.reconnect_spread = spread;
    }

    /// The reconnection hint the feed ended with (on shutdown).
    pub fn retry_hint(&self) -> Option<u64> {
        self.retry_hint
    }

    /// Once the stream is live (its replay written), the hub writes its
    /// events and keep-alives into `tcp` itself while this feed's task
    /// waits (see [`super::direct`]). For a plain, uncompressed stream of
    /// one subscription, whose writes go through the same socket;
    /// `chunked`: each write framed as a chunk of the body.
    pub fn write_directly(&mut self, tcp: Arc<TcpStream>, transport: Transport, chunked: bool) {
        self.direct = Some((tcp, transport, chunked, None));
    }

    /// [`Feed::write_directly`] for another API's SSE stream: the hub
    /// writes each event's translation as `pick` chooses it (`Task`: this
    /// feed's task takes the event), and SSE keep-alives; the body is not
    /// chunked.
    pub fn write_translated(&mut self, tcp: Arc<TcpStream>, pick: Pick) {
        self.direct = Some((tcp, Transport::Sse, false, Some(pick)));
    }

    /// Installs the direct sink if one was asked for and the stream has
    /// just gone live.
    fn go_direct(&mut self) {
        let Some((tcp, transport, chunked, pick)) = self.direct.take() else {
            return;
        };
        if let [sub] = self.subs.as_slice() {
            let direct = Direct::new(tcp, transport, sub.stream, sub.floor)
                .in_chunks(chunked)
                .picking(pick);
            self.conn.install_direct(direct);
            self.direct_on = true;
        }
    }

    /// Subscribes `stream` to what `want` says (replacing an earlier
    /// subscription of the same name) and queues the replay it asks for.
    pub async fn subscribe(
        &mut self,
        stream: &'static str,
        want: Want,
        replay: Replay,
    ) -> StoreResult<()> {
        if let Some(old) = self.remove_sub(stream) {
            self.hub.unregister(old);
        }
        // A repeated subscribe replaces the earlier one, replay included.
        self.replays.retain(|job| job.stream != stream);
        self.pending
            .retain(|out| !matches!(out, Out::Event(_, s) if *s == stream));
        // Read before registering: a change after this read reaches the
        // hub after the registration or is in its log of recent changes.
        let hides = Arc::new(self.hub.store().relations().hides(self.conn.uid).await?);
        // A lagging stream is sent nothing live: a new subscription reads
        // from the buffer's end as it was before registering.
        let lagging_start = match replay {
            Replay::None if self.lags() => {
                let newest = self.hub.store().events().newest_id().await?;
                Some(newest.unwrap_or(EventId::ZERO))
            }
            _ => None,
        };
        let sub = self.hub.next_id();
        self.hub
            .register(&self.conn, sub, want.clone(), stream, (*hides).clone())
            .await;
        self.subs.push(Sub {
            stream,
            id: sub,
            floor: None,
            want: want.clone(),
        });
        match replay {
            Replay::None => {
                if let Some(after) = lagging_start {
                    self.queue_replay(stream, want, hides, after)?;
                }
            }
            Replay::Unservable => {
                let oldest = self.oldest_held().await;
                self.push_control(resume_gap(
                    "last_event_id is not an event id this server issued; continuing live.",
                    oldest,
                ))
            }
            Replay::After(after) => self.replay_after(stream, want, hides, after).await?,
            Replay::Since(ms) => {
                let after = match ms {
                    0 => EventId::ZERO,
                    ms => EventId(ms - 1, u64::MAX, u32::MAX),
                };
                self.replay_from(stream, want, hides, after).await?
            }
            Replay::Newest(n) => self.replay_newest(stream, want, &hides, n).await?,
        }
        Ok(())
    }

    /// The judgement of what a replay of `stream` may serve now.
    fn sight(&self, stream: &str, hides: &Arc<Hides>) -> ReplaySight {
        ReplaySight::new(crate::visibility::Sight::new(
            self.hub.store().clone(),
            Some(self.conn.uid),
            hides.clone(),
            ReplaySight::reach(stream),
        ))
    }

    /// Ends the subscription named `stream`; false if there was none.
    pub fn unsubscribe(&mut self, stream: &str) -> bool {
        match self.remove_sub(stream) {
            Some(sub) => {
                self.hub.unregister(sub);
                true
            }
            None => false,
        }
    }

    /// Ends every subscription whose name `pick` picks (every group's or
    /// every list's); how many there were.
    pub fn unsubscribe_all(&mut self, pick: fn(&str) -> bool) -> usize {
        let names: Vec<&'static str> = self
            .subs
            .iter()
            .map(|s| s.stream)
            .filter(|s| pick(s))
            .collect();
        for name in &names {
            self.unsubscribe(name);
        }
        names.len()
    }

    fn remove_sub(&mut self, stream: &str) -> Option<SubId> {
        let at = self.subs.iter().position(|s| same(s.stream, stream))?;
        Some(self.subs.swap_remove(at).id)
    }

    /// Live events of `stream` at or below `id` are dropped from now on;
    /// `want`, if given, is what it wants as of `id`.
    fn set_floor(&mut self, stream: &str, id: EventId, want: Option<Want>) {
        if let Some(sub) = self.subs.iter_mut().find(|s| same(s.stream, stream)) {
            sub.floor = Some(id);
            if let Some(want) = want {
                sub.want = want;
            }
        }
    }

    /// Queues a control event for the client.
    pub fn push_control(&mut self, control: Control) {
        self.pending.push_back(Out::Control(control.encode()));
    }

    /// The stream's position for a keep-alive, given the hub's: each
    /// subscription has been sent every matching event up to the larger of
    /// the hub's position and its replay's floor, so the smallest of those;
    /// none while a replay is still being read (or with no subscription).
    fn position(&self, hub_at: Option<EventId>) -> Option<EventId> {
        if !self.replays.is_empty() || self.lags() {
            return None;
        }
        self.subs
            .iter()
            .map(|s| hub_at.max(s.floor))
            .min()
            .flatten()
    }

    /// What to write for a delivery that has `left` more behind it, if
    /// anything.
    fn accept(&mut self, d: Delivery, left: usize) -> Option<Out> {
        if left * 2 < self.conn.capacity() && self.conn.warned.load(Ordering::Relaxed) {
            self.conn.warned.store(false, Ordering::Relaxed);
        }
        match d {
            Delivery::Event(f, stream) => {
                let sub = self.subs.iter_mut().find(|s| same(s.stream, stream))?;
                if sub.floor.is_some_and(|floor| f.id <= floor) {
                    return None;
                }
                if f.is_follow() {
                    // A user stream's follows move on with its events.
                    let _ = sub.want.judge(&f);
                }
                Some(Out::Event(f, stream))
            }
            Delivery::Control(json) => Some(Out::Control(json)),
            Delivery::Rest(bytes) => Some(Out::Raw(bytes)),
            Delivery::Wake => None,
            Delivery::Keepalive(hub_at) => {
                // Were the hub gone before it could kill this stream,
                // shutdown still ends it by the next keep-alive (read here,
                // not on every delivery: the signal is shared).
                if self.shutdown.is_set() {
                    return Some(self.end(
                        DisconnectCode::Shutdown,
                        DisconnectCode::Shutdown.sentence(),
                    ));
                }
                Some(Out::Keepalive(self.position(hub_at)))
            }
        }
    }

    /// The next thing to write; `None` once the feed has ended (after its
    /// `disconnect` event was handed out).
    pub async fn next(&mut self) -> Option<Out> {
        loop {
            if !self.pending.is_empty() {
                return self.own_turn().or_else(|| self.pending.pop_front());
            }
            if self.ended {
                return None;
            }
            if self.lag != Lag::Behind && self.conn.is_lagging() {
                if let Err(e) = Box::pin(self.leave_live()).await {
                    return Some(self.unavailable(&e));
                }
                continue;
            }
            if !self.replays.is_empty() {
                if self.lag == Lag::Behind {
                    self.take_controls();
                    if !self.pending.is_empty() {
                        continue;
                    }
                }
                // Boxed: the replay's Redis round trips would otherwise size
                // this future, held by every stream's task for its whole life.
                if let Some(end) = Box::pin(self.replay_page()).await {
                    return Some(end);
                }
                continue;
            }
            if self.lag == Lag::Rejoining {
                self.rejoined();
                continue;
            }
            // A kill is a flag read here, woken through the queue
            // (`ClientConn::kill`; the hub kills every connection on shutdown and
            // at its token's expiry, and hands out its keep-alives): a turn
            // waits on the queue alone.
            if self.conn.is_killed() {
                if let Some(rest) = self.own_turn() {
                    return Some(rest);
                }
                let (code, reason) = self.conn.kill_reason();
                return Some(self.end(code, &reason));
            }
            if self.direct.is_some() {
                self.go_direct();
            }
            let (d, left) = std::future::poll_fn(|cx| self.conn.poll_take(cx)).await;
            if let Some(out) = self.accept(d, left) {
                return Some(out);
            }
        }
    }

    /// The next thing to write if one is ready now (for batching writes).
    pub fn try_next(&mut self) -> Option<Out> {
        if !self.pending.is_empty() {
            return self.own_turn().or_else(|| self.pending.pop_front());
        }
        // A stream that rejoins says `caught_up` (in `next`) before its
        // first live event.
        if self.ended || !self.replays.is_empty() || self.lag != Lag::Live || self.conn.is_killed()
        {
            return None;
        }
        while let Some((d, left)) = self.conn.try_take() {
            if let Some(out) = self.accept(d, left) {
                return Some(out);
            }
        }
        None
    }

    /// Drops what is queued and refuses more; the hub (and this feed) let
    /// go of the socket it was writing into (as when the feed is dropped).
    pub fn close_queue(&mut self) {
        self.direct = None;
        self.conn.close_queue();
    }

    /// The task writes something not taken from the queue: the hub stops
    /// writing into the socket until the task waits again, and the rest of
    /// a write it began and could not finish comes out first (else the
    /// task's bytes would land inside an event's).
    fn own_turn(&mut self) -> Option<Out> {
        self.interrupt().map(Out::Raw)
    }

    /// The task is about to write bytes of its own, not from this feed (a
    /// WebSocket pong or close frame): the hub stops writing into the
    /// socket until the task next waits on the feed, and returns the rest
    /// of a write it began, which the task writes first.
    pub fn interrupt(&mut self) -> Option<Vec<u8>> {
        if !self.direct_on {
            return None;
        }
        self.conn.hold();
        self.conn.take_rest()
    }

    /// Ends the feed with a `disconnect` event.
    pub fn end(&mut self, code: DisconnectCode, reason: &str) -> Out {
        tracing::debug!(?code, "feed ended");
        self.ended = true;
        self.hub.close(self.conn.id);
        let spread = self.reconnect_spread.as_millis() as u64;
        if code == DisconnectCode::Shutdown && spread > 0 {
            self.retry_hint = Some(rand::random_range(spread / 10..=spread));
        }
        Out::Control(
            Control::Disconnect {
                code,
                reason: reason.to_string(),
                retry_after_ms: self.retry_hint,
            }
            .encode(),
        )
    }

    /// Whether the feed has ended.
    pub fn is_ended(&self) -> bool {
        self.ended
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.conn.close_queue();
        self.hub.close(self.conn.id);
    }
}
