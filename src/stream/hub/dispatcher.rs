//! The dispatcher: one task that owns the compiled index and routes every
//! event to the subscriptions that want it. Beside it, each its own file:
//! what it delivers through (`deliver`), the viewers' relations that hide
//! events (`viewers`), sessions and revocations (`sessions`), the
//! keep-alive and expiry timer (`keepalive`) and the catch-up after a
//! resubscription (`catch_up`).

use super::conn::ClientConn;
use super::groups::GroupSubs;
use super::helpers::{Helper, Pace};
use super::lists::ListSubs;
use super::msg::{Cmd, Msg, SHUTDOWN};
use super::rules::RuleSubs;
use super::sessions::Sessions;
use super::split::SplitFirehose;
use super::viewers::Viewers;
use crate::metrics::{global as metrics, inc};
use crate::shutdown::Shutdown;
use crate::store::Store;
use crate::stream::frame::{self, EventId, Frame, Incoming};
use crate::stream::rule_set;
use crate::stream::want::{part_of, Part, Want};
use firehose_filters::{Index, SubId};
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

pub(super) struct SubEntry {
    pub(super) conn: Arc<ClientConn>,
    pub(super) stream: &'static str,
}

pub(super) struct Dispatcher {
    pub(super) store: Store,
    pub(super) index: Index,
    pub(super) subs: FxHashMap<SubId, SubEntry>,
    /// The partitioned subscriptions' partitions (empty: no stream here
    /// is split, and routing pays one check per event for the feature).
    pub(super) parted: FxHashMap<SubId, Part>,
    /// The partitions of the firehose, filed by partition.
    pub(super) split: SplitFirehose,
    pub(super) conns: FxHashMap<u64, Vec<SubId>>,
    /// Every open connection by id, subscribed or not.
    pub(super) open: FxHashMap<u64, Arc<ClientConn>>,
    /// Open connections' sessions, and the sessions revoked lately.
    pub(super) sessions: Sessions,
    /// The last event dispatched; older or equal ids are duplicates.
    pub(super) last: Option<EventId>,
    pub(super) out: Vec<SubId>,
    /// Per event of a batch: the subscriptions that want it.
    pub(super) outs: Vec<Vec<SubId>>,
    /// When each open connection is next owed a keep-alive or its end (its
    /// token's expiry), earliest first: one entry per open connection, so
    /// that no stream's task needs a timer of its own. A closed
    /// connection's entry stays until its time comes (at most a keep-alive
    /// period) and is then dropped, or is swept sooner once the heap holds
    /// more than twice the open connections plus [`DUE_SLACK`].
    pub(super) due: BinaryHeap<Reverse<(Instant, u64)>>,
    pub(super) keepalive: Duration,
    /// Tasks that deliver to shares of the connections alongside this one
    /// ([`delivery_shares`] of them).
    pub(super) helpers: Vec<Helper>,
    /// Users with subscriptions here, with their relations.
    pub(super) viewers: Viewers,
    /// Whether deliveries go through the helpers at this rate.
    pub(super) pace: Pace,
    /// What [`Pace`] last decided.
    pub(super) via_helpers: bool,
    /// Subscriptions with filter rules.
    pub(super) rule_subs: RuleSubs,
    /// Group streams.
    pub(super) group_subs: GroupSubs,
    pub(super) list_subs: ListSubs,
    /// The hub's own commands (a reload of rules answers through it).
    pub(super) cmds: mpsc::UnboundedSender<Cmd>,
}

impl Drop for Dispatcher {
    /// Were the dispatcher to end any other way than by shutdown (which
    /// has already ended them), its connections would hear nothing more:
    /// end them, so that their clients reconnect.
    fn drop(&mut self) {
        for conn in self.open.values() {
            conn.kill(
                "unavailable",
                "The stream service stopped; reconnect with Last-Event-ID to resume.",
            );
        }
    }
}

/// Entries for closed connections the keep-alive heap may hold beyond
/// twice the open connections before it is swept.
pub(super) const DUE_SLACK: usize = 1024;

/// Most events routed in one batch.
pub(super) const MAX_BATCH: usize = 64;

impl Dispatcher {
    /// A dispatcher with no connection yet, delivering through `helpers`.
    pub(super) fn new(
        store: Store,
        keepalive: Duration,
        cmds: mpsc::UnboundedSender<Cmd>,
        helpers: Vec<Helper>,
    ) -> Dispatcher {
        Dispatcher {
            store,
            index: Index::new(),
            subs: FxHashMap::default(),
            parted: FxHashMap::default(),
            split: SplitFirehose::default(),
            conns: FxHashMap::default(),
            open: FxHashMap::default(),
            sessions: Sessions::default(),
            last: None,
            out: Vec::new(),
            outs: Vec::new(),
            due: BinaryHeap::new(),
            keepalive,
            helpers,
            viewers: Viewers::default(),
            pace: Pace::default(),
            via_helpers: true,
            rule_subs: RuleSubs::default(),
            group_subs: GroupSubs::default(),
            list_subs: ListSubs::default(),
            cmds,
        }
    }
}

impl Dispatcher {
    pub(super) async fn run(
        mut self,
        mut cmds: mpsc::UnboundedReceiver<Cmd>,
        mut msgs: mpsc::Receiver<Msg>,
        mut shutdown: Shutdown,
    ) {
        let mut timer = Box::pin(tokio::time::sleep(self.keepalive));
        loop {
            // The timer is set for the earliest connection owed something.
            if let Some(Reverse((at, _))) = self.due.peek() {
                if *at != timer.deadline() {
                    timer.as_mut().reset(*at);
                }
            }
            tokio::select! {
                biased;
                _ = shutdown.wait() => {
                    self.close_all(&mut cmds);
                    break;
                }
                Some(cmd) = cmds.recv() => self.command(cmd),
                _ = &mut timer, if !self.due.is_empty() => self.keep_alive(Instant::now()),
                Some(msg) = msgs.recv() => {
                    self.choose_path().await;
                    // Events already queued behind this one are routed in
                    // one batch (see `Index::route_batch`), in order.
                    let mut next = Some(msg);
                    let mut batch = Vec::new();
                    while let Some(msg) = next.take() {
                        match msg {
                            Msg::Raw(payload) => match frame::parse(&payload) {
                                Some(Incoming::Event(frame)) => batch.push(frame),
                                other => {
                                    self.dispatch_batch(&mut batch);
                                    self.incoming(other);
                                }
                            },
                            Msg::Resubscribed => {
                                self.dispatch_batch(&mut batch);
                                self.catch_up(&mut shutdown).await;
                            }
                        }
                        if batch.len() < MAX_BATCH {
                            next = msgs.try_recv().ok();
                        }
                    }
                    self.dispatch_batch(&mut batch);
                    self.wait_for_helpers().await;
                }
                else => break,
            }
        }
    }

    /// On shutdown: ends every open connection, and any whose `Open` is
    /// still queued; from here on [`Hub::open`] ends them itself.
    pub(super) fn close_all(&mut self, cmds: &mut mpsc::UnboundedReceiver<Cmd>) {
        cmds.close();
        while let Ok(cmd) = cmds.try_recv() {
            if let Cmd::Open { conn } = cmd {
                self.open.insert(conn.id, conn);
            }
        }
        for conn in self.open.values() {
            conn.kill(SHUTDOWN.0, SHUTDOWN.1);
        }
    }

    pub(super) fn command(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Open { conn } => {
                if !self.sessions.open(conn.id, &conn.session) {
                    conn.kill("revoked", "The session has ended.");
                }
                let at = conn.next_due(conn.opened_at, self.keepalive);
                self.due.push(Reverse((at, conn.id)));
                self.open.insert(conn.id, conn);
            }
            Cmd::Register {
                conn,
                sub,
                want,
                stream,
                hides,
                ack,
            } => {
                self.viewers.add(conn.uid, hides);
                let indexed = want.indexed();
                let Want {
                    rule,
                    rules,
                    group,
                    part,
                    list,
                } = want;
                match part {
                    Some(part) if indexed && rules.is_none() && SplitFirehose::takes(&rule) => {
                        self.split.add(sub, part);
                    }
                    _ => {
                        if let Some(part) = part {
                            self.parted.insert(sub, part);
                        }
                        if indexed {
                            self.index.insert(sub, rule);
                        }
                    }
                }
                if let Some(set) = rules {
                    if self.rule_subs.add(sub, conn.uid, set) {
                        self.reload_rules(conn.uid);
                    }
                }
                if let Some(gid) = group {
                    self.group_subs.add(sub, gid, conn.uid);
                }
                let list_gone = list.is_some_and(|view| !self.list_subs.add(sub, (*view).clone()));
                self.conns.entry(conn.id).or_default().push(sub);
                self.subs.insert(sub, SubEntry { conn, stream });
                if list_gone {
                    self.end_subs(vec![sub], "list_deleted", "The list was deleted.");
                }
                let _ = ack.send(());
            }
            Cmd::Rules { uid, set } => self.rule_subs.replace(uid, set),
            Cmd::Refresh {
                conn,
                session,
                expires_at,
                ack,
            } => {
                let _ = ack.send(self.refresh(conn, session, expires_at));
            }
            Cmd::Unregister { sub } => self.remove_sub(sub),
            Cmd::Close { conn } => self.remove_conn(conn),
        }
    }

    /// Connection `id` lives on under `session`, whose token expires at
    /// `expires_at` (a token refreshed on its socket): a revocation of the
    /// old session no longer ends it, one of the new one does. False when
    /// the connection is gone or the new session was revoked already.
    fn refresh(&mut self, id: u64, session: String, expires_at: tokio::time::Instant) -> bool {
        if self.sessions.is_revoked(&session) {
            return false;
        }
        let Some(conn) = self.open.get(&id).cloned() else {
            return false;
        };
        self.sessions.refresh(id, &conn.session, session);
        conn.set_expiry(expires_at);
        let at = conn.next_due(tokio::time::Instant::now(), self.keepalive);
        self.due.push(Reverse((at, id)));
        true
    }

    /// Drops from `out` the subscriptions whose user's relations hide who
    /// caused `frame`, and the partitioned ones `frame` is not in: lookups
    /// in data held here, no Redis round trip.
    pub(super) fn drop_hidden(&self, frame: &Frame, out: &mut Vec<SubId>) {
        if !self.parted.is_empty() {
            // The event's share under each split, worked out once per split.
            let key = frame.partition_key();
            let mut share = [u8::MAX; 33];
            out.retain(|sub| {
                self.parted.get(sub).is_none_or(|p| {
                    let of = usize::from(p.of.min(32));
                    if share[of] == u8::MAX {
                        share[of] = part_of(key, p.of);
                    }
                    share[of] == p.index
                })
            });
        }
        let actors = frame.actors();
        if self.viewers.none_hiding() || actors.is_empty() {
            return;
        }
        out.retain(|sub| {
            self.subs
                .get(sub)
                .is_none_or(|e| !self.viewers.hides(e.conn.uid, actors, e.stream))
        });
    }

    /// `uid` was suspended (`on`) or the suspension lifted: while it
    /// lasts their events reach no stream here, and their own streams end.
    fn suspended(&mut self, uid: u64, on: bool) {
        self.store.suspended().set(uid, on);
        if on {
            for conn in self.open.values().filter(|c| c.uid == uid) {
                conn.kill("suspended", "The account is suspended.");
            }
        }
    }

    /// `uid` left private group `gid`: their streams of it get nothing
    /// more; a connection with nothing else subscribed ends.
    fn group_left(&mut self, gid: u64, uid: u64) {
        let subs = self.group_subs.left(gid, uid);
        self.end_subs(subs, "group_left", "You no longer read this group.");
    }

    /// Ends `subs`; a connection left with nothing subscribed ends with
    /// `code` and `message`.
    fn end_subs(&mut self, subs: Vec<SubId>, code: &'static str, message: &'static str) {
        for sub in subs {
            let Some(conn) = self.subs.get(&sub).map(|e| e.conn.clone()) else {
                continue;
            };
            self.remove_sub(sub);
            if !self.conns.contains_key(&conn.id) {
                conn.kill(code, message);
            }
        }
    }

    /// Reads `uid`'s search rules again, off this task; they replace the
    /// older ones when they arrive (a failed read is retried for a while).
    pub(super) fn reload_rules(&self, uid: u64) {
        let (store, cmds) = (self.store.clone(), self.cmds.clone());
        tokio::spawn(async move {
            let mut backoff = Duration::from_millis(50);
            for _ in 0..12 {
                match rule_set::load(&store, uid).await {
                    Ok(set) => {
                        let _ = cmds.send(Cmd::Rules {
                            uid,
                            set: Arc::new(set),
                        });
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(uid, error = %e, "could not reload search rules; retrying");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                    }
                }
            }
        });
    }

    pub(super) fn remove_sub(&mut self, sub: SubId) {
        self.parted.remove(&sub);
        self.split.remove(sub);
        self.index.remove(sub);
        self.rule_subs.remove(sub);
        self.group_subs.remove(sub);
        self.list_subs.remove(sub);
        if let Some(entry) = self.subs.remove(&sub) {
            self.viewers.drop_one(entry.conn.uid);
            if let Some(list) = self.conns.get_mut(&entry.conn.id) {
                list.retain(|s| *s != sub);
                if list.is_empty() {
                    self.conns.remove(&entry.conn.id);
                }
            }
        }
    }

    pub(super) fn remove_conn(&mut self, conn: u64) {
        for sub in self.conns.remove(&conn).unwrap_or_default() {
            self.parted.remove(&sub);
            self.split.remove(sub);
            self.index.remove(sub);
            self.rule_subs.remove(sub);
            self.group_subs.remove(sub);
            self.list_subs.remove(sub);
            if let Some(entry) = self.subs.remove(&sub) {
                self.viewers.drop_one(entry.conn.uid);
            }
        }
        if let Some(c) = self.open.remove(&conn) {
            self.sessions.close(conn, &c.session);
        }
        // Closed connections' entries leave the heap when their time comes;
        // under heavy churn they are swept sooner, so that the heap never
        // holds more than twice the open connections (plus some slack).
        if self.due.len() > 2 * self.open.len() + DUE_SLACK {
            let open = &self.open;
            self.due.retain(|Reverse((_, id))| open.contains_key(id));
        }
    }

    /// Closes every connection of a session, and remembers the session for
    /// connections that are still opening.
    pub(super) fn revoke(&mut self, sid: String) {
        self.store.session_cache().revoke(&sid);
        for id in self.sessions.revoke(sid) {
            if let Some(conn) = self.open.get(&id) {
                conn.kill("revoked", "The session has ended.");
            }
        }
    }

    /// A message from the channel other than an event to route.
    pub(super) fn incoming(&mut self, msg: Option<Incoming>) {
        match msg {
            Some(Incoming::Event(frame)) => self.dispatch(frame, false),
            Some(Incoming::SessionRevoked(sid)) => self.revoke(sid),
            Some(Incoming::Relation(changes)) => self.viewers.apply(changes),
            Some(Incoming::GroupLeft(gid, uid)) => self.group_left(gid, uid),
            Some(Incoming::ListChanged(change)) => {
                let ended = self.list_subs.changed(change);
                self.end_subs(ended, "list_deleted", "The list was deleted.");
            }
            Some(Incoming::Suspended(uid, on)) => self.suspended(uid, on),
            Some(Incoming::RulesChanged(uid, version)) => {
                if self.rule_subs.changed(uid, version) {
                    self.reload_rules(uid);
                }
            }
            Some(Incoming::StatusesChanged(ids)) => {
                for id in ids {
                    self.store.status_cache().forget(id);
                }
            }
            None => tracing::warn!("ignored a malformed event on the channel"),
        }
    }

    /// Whether a suspended user caused `frame` (then no stream gets it).
    fn by_suspended(&self, frame: &Frame) -> bool {
        let suspended = self.store.suspended();
        !suspended.is_empty() && suspended.any(frame.actors())
    }

    /// Whether `frame` is new (not at or before the last one dispatched);
    /// if so, counts it and makes it the last.
    pub(super) fn accept(&mut self, frame: &Frame) -> bool {
        if self.last.is_some_and(|last| frame.id <= last) {
            return false;
        }
        self.last = Some(frame.id);
        inc(&metrics().events_received, 1);
        if let Some(status_id) = frame
            .deleted_status()
            .or_else(|| frame.is_update().then(|| frame.status_id()).flatten())
        {
            // Deleted statuses leave this process's cache (other processes'
            // hubs see the same event).
            self.store.status_cache().forget(status_id);
        }
        true
    }

    /// Routes and delivers one event; `direct`: its matching plain streams
    /// that wait may get it written into their sockets here.
    pub(super) fn dispatch(&mut self, frame: Arc<Frame>, direct: bool) {
        if !self.accept(&frame) || self.by_suspended(&frame) {
            return;
        }
        if frame.is_update() {
            return self.dispatch_update(&frame, direct);
        }
        let mut out = std::mem::take(&mut self.out);
        let routing = frame.routing();
        self.index.route(&routing, &mut out);
        self.split.route(&routing, frame.partition_key(), &mut out);
        self.group_subs.route(&frame, &mut out);
        self.list_subs.route(&frame, &mut out);
        let copies = self.rule_subs.route(&frame, &mut out);
        self.drop_hidden(&frame, &mut out);
        self.deliver(&frame, &out, direct);
        self.deliver_copies(copies, direct);
        self.out = out;
    }

    /// Routes and delivers `batch` (emptied) in order. A lone event is
    /// written straight into waiting plain streams' sockets; a batch means
    /// the dispatcher is behind, so its deliveries are queued, for the
    /// streams' tasks to write (on every core, several events a write).
    pub(super) fn dispatch_batch(&mut self, batch: &mut Vec<Arc<Frame>>) {
        if batch.len() <= 1 {
            if let Some(frame) = batch.pop() {
                self.dispatch(frame, true);
            }
            return;
        }
        let mut frames = std::mem::take(batch);
        if frames.iter().any(|f| f.is_update()) {
            // Updates route twice (as they were and as they are): rare
            // enough to take such a batch an event at a time.
            for frame in frames.drain(..) {
                self.dispatch(frame, false);
            }
            *batch = frames;
            return;
        }
        frames.retain(|f| self.accept(f) && !self.by_suspended(f));
        let mut outs = std::mem::take(&mut self.outs);
        let events: Vec<_> = frames.iter().map(|f| f.routing()).collect();
        self.index.route_batch(&events, &mut outs);
        for ((frame, out), routing) in frames.iter().zip(outs.iter_mut()).zip(&events) {
            self.split.route(routing, frame.partition_key(), out);
        }
        drop(events);
        for (frame, out) in frames.iter().zip(outs.iter_mut()) {
            self.group_subs.route(frame, out);
            self.list_subs.route(frame, out);
            let copies = self.rule_subs.route(frame, out);
            self.drop_hidden(frame, out);
            self.deliver(frame, out, false);
            self.deliver_copies(copies, false);
        }
        self.outs = outs;
        frames.clear();
        *batch = frames;
    }

    /// Routes and delivers an `update`: to every subscription the status
    /// as it was reaches (the streams that got it, as a delete would reach
    /// them), and as a `status` to those only the edited text reaches.
    fn dispatch_update(&mut self, frame: &Arc<Frame>, direct: bool) {
        let Some(views) = frame.update_views() else {
            return;
        };
        let (before, after) = (views.before.clone(), views.after.clone());
        let mut had = Vec::new();
        self.index.route(&before.routing(), &mut had);
        self.split
            .route(&before.routing(), frame.partition_key(), &mut had);
        self.group_subs.route(&before, &mut had);
        self.list_subs.route(&before, &mut had);
        for (_, subs) in self.rule_subs.route(&before, &mut had) {
            had.extend(subs);
        }
        had.sort_unstable();
        had.dedup();
        let mut now = Vec::new();
        self.index.route(&after.routing(), &mut now);
        self.split
            .route(&after.routing(), after.partition_key(), &mut now);
        let copies = self.rule_subs.route(&after, &mut now);
        now.retain(|s| had.binary_search(s).is_err());
        self.drop_hidden(frame, &mut had);
        self.deliver(frame, &had, direct);
        self.drop_hidden(&after, &mut now);
        self.deliver(&after, &now, direct);
        for (copy, mut subs) in copies {
            subs.retain(|s| had.binary_search(s).is_err());
            self.drop_hidden(&copy, &mut subs);
            if !subs.is_empty() {
                self.deliver(&copy, &subs, direct);
            }
        }
    }

    /// Delivers each subscription's own copy of an event (one with
    /// `matching_rules`), less those its user's relations hide.
    fn deliver_copies(&mut self, copies: Vec<(Arc<Frame>, Vec<SubId>)>, direct: bool) {
        for (copy, mut subs) in copies {
            self.drop_hidden(&copy, &mut subs);
            if !subs.is_empty() {
                self.deliver(&copy, &subs, direct);
            }
        }
    }
}
