//! The dispatcher: one task that owns the compiled index, routes every
//! event to the subscriptions that want it, and keeps every connection's
//! keep-alive and expiry times.

use super::conn::{stalled, ClientConn};
use super::groups::GroupSubs;
use super::helpers::HELPER_BACKLOG;
use super::helpers::{Helper, Job, Pace};
use super::lists::ListSubs;
use super::rules::RuleSubs;
use super::{Cmd, Msg, SHUTDOWN};
use crate::hides::{self, Change, Hides};
use crate::metrics::{global as metrics, inc};
use crate::shutdown::Shutdown;
use crate::store::Store;
use crate::stream::frame::{self, Control, EventId, Frame, Incoming};
use crate::stream::queue::Delivery;
use crate::stream::rule_set;
use crate::stream::want::{part_of, Part, Want};
use firehose_filters::{Index, SubId};
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

pub(super) struct SubEntry {
    pub(super) conn: Arc<ClientConn>,
    pub(super) stream: &'static str,
}

/// A user with subscriptions here: their hiding relations (`crate::hides`)
/// and how many subscriptions they hold.
pub(super) struct Viewer {
    pub(super) hides: Hides,
    pub(super) subs: usize,
}

/// What of a viewer's relations hides an event on a stream: on the user
/// stream (their home's) any relation, on every other stream being blocked
/// by whoever caused it.
pub fn hide_mask(stream: &str) -> u8 {
    if stream == "user" || crate::stream::want::is_list_stream(stream) {
        hides::FEED
    } else {
        hides::UNSEEABLE
    }
}

/// Relation changes remembered for subscriptions whose snapshot was read
/// before a change that the dispatcher heard before their `Register`.
pub(super) const RELATION_LOG: usize = 16_384;

pub(super) struct Dispatcher {
    pub(super) store: Store,
    pub(super) index: Index,
    pub(super) subs: FxHashMap<SubId, SubEntry>,
    /// The partitioned subscriptions' partitions (empty: no stream here
    /// is split, and routing pays one check per event for the feature).
    pub(super) parted: FxHashMap<SubId, Part>,
    pub(super) conns: FxHashMap<u64, Vec<SubId>>,
    /// Every open connection by id, subscribed or not.
    pub(super) open: FxHashMap<u64, Arc<ClientConn>>,
    /// Open connections by session id.
    pub(super) by_session: HashMap<String, Vec<u64>>,
    /// Sessions revoked in the last [`REVOKED_MEMORY`], with when: a
    /// connection whose `Open` arrives after its session's revocation (its
    /// token was checked just before the logout) is closed at once.
    pub(super) revoked: HashMap<String, std::time::Instant>,
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
    /// Users with subscriptions here, by id, with their relations.
    pub(super) viewers: FxHashMap<u64, Viewer>,
    /// How many of them have a relation that hides anyone: while none
    /// does, deliveries skip the check.
    pub(super) hiding: usize,
    /// The latest relation changes heard (at most [`RELATION_LOG`]).
    pub(super) relation_log: VecDeque<Change>,
    /// Whether deliveries go through the helpers at this rate.
    pub(super) pace: Pace,
    /// What [`Pace`] last decided.
    pub(super) via_helpers: bool,
    /// Subscriptions with filter rules.
    pub(super) rule_subs: RuleSubs,
    /// Group streams.
    pub(super) group_subs: GroupSubs,
    pub(super) list_subs: ListSubs,
    /// The session of each connection whose token was refreshed (else
    /// the one it opened with).
    pub(super) sessions: HashMap<u64, String>,
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

/// How long a revoked session is remembered for connections still opening.
pub(super) const REVOKED_MEMORY: Duration = Duration::from_secs(60);

/// Entries for closed connections the keep-alive heap may hold beyond
/// twice the open connections before it is swept.
pub(super) const DUE_SLACK: usize = 1024;

/// How long catch-up keeps retrying a failing buffer read before it gives
/// up and tells every connection `resume_gap`.
pub(super) const CATCH_UP_PATIENCE: Duration = Duration::from_secs(30);

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
            conns: FxHashMap::default(),
            open: FxHashMap::default(),
            by_session: HashMap::new(),
            revoked: HashMap::new(),
            last: None,
            out: Vec::new(),
            outs: Vec::new(),
            due: BinaryHeap::new(),
            keepalive,
            helpers,
            viewers: FxHashMap::default(),
            hiding: 0,
            relation_log: VecDeque::new(),
            pace: Pace::default(),
            via_helpers: true,
            rule_subs: RuleSubs::default(),
            group_subs: GroupSubs::default(),
            list_subs: ListSubs::default(),
            sessions: HashMap::new(),
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
                if self.revoked.contains_key(&conn.session) {
                    conn.kill("revoked", "The session has ended.");
                }
                self.by_session
                    .entry(conn.session.clone())
                    .or_default()
                    .push(conn.id);
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
                self.add_viewer(conn.uid, hides);
                let indexed = want.indexed();
                let Want {
                    rule,
                    rules,
                    group,
                    part,
                    list,
                } = want;
                if let Some(part) = part {
                    self.parted.insert(sub, part);
                }
                if indexed {
                    self.index.insert(sub, rule);
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
        if self.revoked.contains_key(&session) {
            return false;
        }
        let Some(conn) = self.open.get(&id).cloned() else {
            return false;
        };
        let old = self
            .sessions
            .insert(id, session.clone())
            .unwrap_or_else(|| conn.session.clone());
        if let Some(ids) = self.by_session.get_mut(&old) {
            ids.retain(|c| *c != id);
            if ids.is_empty() {
                self.by_session.remove(&old);
            }
        }
        self.by_session.entry(session).or_default().push(id);
        conn.set_expiry(expires_at);
        let at = conn.next_due(tokio::time::Instant::now(), self.keepalive);
        self.due.push(Reverse((at, id)));
        true
    }

    /// A subscription of `uid` arrives with the relations read for it.
    pub(super) fn add_viewer(&mut self, uid: u64, snapshot: Hides) {
        let viewer = self.viewers.entry(uid).or_insert_with(|| Viewer {
            hides: Hides::default(),
            subs: 0,
        });
        let was = !viewer.hides.is_empty();
        if viewer.subs == 0 || snapshot.base() > viewer.hides.base() {
            viewer.hides = snapshot;
            // Changes heard before this arrived, newer than the snapshot.
            for c in self.relation_log.iter().filter(|c| c.uid == uid) {
                viewer.hides.apply(c.other, c.bits, c.seq);
            }
        }
        viewer.subs += 1;
        let now = !viewer.hides.is_empty();
        self.count_hiding(was, now);
    }

    /// A subscription of `uid` ended.
    pub(super) fn drop_viewer(&mut self, uid: u64) {
        let Some(viewer) = self.viewers.get_mut(&uid) else {
            return;
        };
        viewer.subs -= 1;
        if viewer.subs == 0 {
            let was = !viewer.hides.is_empty();
            self.viewers.remove(&uid);
            self.count_hiding(was, false);
        }
    }

    fn count_hiding(&mut self, was: bool, now: bool) {
        match (was, now) {
            (false, true) => self.hiding += 1,
            (true, false) => self.hiding -= 1,
            _ => {}
        }
    }

    /// Relation changes heard: applied to the viewers they concern, and
    /// remembered for subscriptions still on their way.
    pub(super) fn relations(&mut self, changes: Vec<Change>) {
        for c in changes {
            if let Some(viewer) = self.viewers.get_mut(&c.uid) {
                let was = !viewer.hides.is_empty();
                viewer.hides.apply(c.other, c.bits, c.seq);
                let now = !viewer.hides.is_empty();
                self.count_hiding(was, now);
            }
            if self.relation_log.len() >= RELATION_LOG {
                self.relation_log.pop_front();
            }
            self.relation_log.push_back(c);
        }
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
        if self.hiding == 0 || actors.is_empty() {
            return;
        }
        out.retain(|sub| {
            let Some(entry) = self.subs.get(sub) else {
                return true;
            };
            self.viewers
                .get(&entry.conn.uid)
                .is_none_or(|v| !v.hides.hides_any(actors, hide_mask(entry.stream)))
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
        self.index.remove(sub);
        self.rule_subs.remove(sub);
        self.group_subs.remove(sub);
        self.list_subs.remove(sub);
        if let Some(entry) = self.subs.remove(&sub) {
            self.drop_viewer(entry.conn.uid);
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
            self.index.remove(sub);
            self.rule_subs.remove(sub);
            self.group_subs.remove(sub);
            self.list_subs.remove(sub);
            if let Some(entry) = self.subs.remove(&sub) {
                self.drop_viewer(entry.conn.uid);
            }
        }
        if let Some(c) = self.open.remove(&conn) {
            let session = self
                .sessions
                .remove(&conn)
                .unwrap_or_else(|| c.session.clone());
            if let Some(ids) = self.by_session.get_mut(&session) {
                ids.retain(|id| *id != conn);
                if ids.is_empty() {
                    self.by_session.remove(&session);
                }
            }
        }
        // Closed connections' entries leave the heap when their time comes;
        // under heavy churn they are swept sooner, so that the heap never
        // holds more than twice the open connections (plus some slack).
        if self.due.len() > 2 * self.open.len() + DUE_SLACK {
            let open = &self.open;
            self.due.retain(|Reverse((_, id))| open.contains_key(id));
        }
    }

    /// Hands a keep-alive to every open connection whose time has come (not
    /// when its queue is full: it has plenty to write), and ends those
    /// whose token has expired.
    pub(super) fn keep_alive(&mut self, now: Instant) {
        while let Some(Reverse((at, id))) = self.due.peek().copied() {
            if at > now {
                break;
            }
            self.due.pop();
            let Some(conn) = self.open.get(&id) else {
                continue;
            };
            if now >= conn.expires_at() {
                conn.kill("expired", "The token has expired; log in again.");
                continue;
            }
            // The warning is traffic enough: the keep-alive waits its turn.
            if now >= conn.warn_at() && conn.warn_expiry(now) {
                let next = conn.next_due(now, self.keepalive);
                self.due.push(Reverse((next, id)));
                continue;
            }
            let at = self.position_for(conn);
            let _ = conn
                .queue
                .push_or(Delivery::Keepalive(at), conn.cap, |sink, d| sink.write(d));
            // A late keep-alive moves the next one back.
            let next = conn.next_due(now, self.keepalive);
            self.due.push(Reverse((next, id)));
        }
    }

    /// The hub's position for `conn`'s keep-alive: the last event routed,
    /// or, while its share's helper is still delivering, the last event
    /// that helper finished (every event up to it was offered to `conn`
    /// before the keep-alive).
    fn position_for(&self, conn: &ClientConn) -> Option<EventId> {
        if self.via_helpers {
            let helper = &self.helpers[conn.share(self.helpers.len())];
            if helper.shared.backlog.load(Ordering::Acquire) > 0 {
                return helper.shared.done.lock().ok().and_then(|d| *d);
            }
        }
        self.last
    }

    /// Closes every connection of a session, and remembers the session for
    /// connections that are still opening.
    pub(super) fn revoke(&mut self, sid: String) {
        self.store.session_cache().revoke(&sid);
        for id in self.by_session.get(&sid).into_iter().flatten() {
            if let Some(conn) = self.open.get(id) {
                conn.kill("revoked", "The session has ended.");
            }
        }
        let now = std::time::Instant::now();
        self.revoked
            .retain(|_, at| now.duration_since(*at) < REVOKED_MEMORY);
        self.revoked.insert(sid, now);
    }

    /// A message from the channel other than an event to route.
    pub(super) fn incoming(&mut self, msg: Option<Incoming>) {
        match msg {
            Some(Incoming::Event(frame)) => self.dispatch(frame, false),
            Some(Incoming::SessionRevoked(sid)) => self.revoke(sid),
            Some(Incoming::Relation(changes)) => self.relations(changes),
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
        self.index.route(&frame.routing(), &mut out);
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
        self.group_subs.route(&before, &mut had);
        self.list_subs.route(&before, &mut had);
        for (_, subs) in self.rule_subs.route(&before, &mut had) {
            had.extend(subs);
        }
        had.sort_unstable();
        had.dedup();
        let mut now = Vec::new();
        self.index.route(&after.routing(), &mut now);
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

    /// Offers `frame` to the subscriptions in `out`; a full queue
    /// disconnects its client. Through the helpers, writing into waiting
    /// plain streams' sockets if `direct`, while [`Pace`] says so; else
    /// queued here.
    pub(super) fn deliver(&mut self, frame: &Arc<Frame>, out: &[SubId], direct: bool) {
        inc(&metrics().events_matched, out.len() as u64);
        self.pace.count(out.len());
        if !self.via_helpers {
            let mut dead: Vec<u64> = Vec::new();
            for sub in out {
                let Some(entry) = self.subs.get(sub) else {
                    continue;
                };
                if !entry
                    .conn
                    .offer(Delivery::Event(frame.clone(), entry.stream), false)
                {
                    stalled(&entry.conn);
                    dead.push(entry.conn.id);
                }
            }
            for conn in dead {
                self.remove_conn(conn);
            }
            return;
        }
        let shares = self.helpers.len();
        let mut tos: Vec<Vec<(Arc<ClientConn>, &'static str)>> = vec![Vec::new(); shares];
        for e in out.iter().filter_map(|sub| self.subs.get(sub)) {
            tos[e.conn.share(shares)].push((e.conn.clone(), e.stream));
        }
        for (helper, to) in self.helpers.iter().zip(tos) {
            if !to.is_empty() {
                helper.send(Job {
                    frame: frame.clone(),
                    to,
                    direct,
                });
            }
        }
    }

    /// Before routing: whether deliveries go through the helpers now (see
    /// [`Pace`]). Going back to queueing here, it first waits until the
    /// helpers have delivered everything, so that no event overtakes one
    /// still in a helper's hands.
    pub(super) async fn choose_path(&mut self) {
        let via_helpers = self.pace.decide(std::time::Instant::now(), &self.helpers);
        if self.via_helpers && !via_helpers {
            for helper in &self.helpers {
                while helper.shared.backlog.load(Ordering::Acquire) > 0 {
                    helper.shared.room.notified().await;
                }
            }
        }
        self.via_helpers = via_helpers;
    }

    /// Waits while a helper has more than [`HELPER_BACKLOG`] events to
    /// deliver: the dispatcher goes no further ahead of its helpers.
    pub(super) async fn wait_for_helpers(&self) {
        for helper in &self.helpers {
            while helper.shared.backlog.load(Ordering::Acquire) > HELPER_BACKLOG {
                helper.shared.room.notified().await;
            }
        }
    }

    /// After (re)subscribing: replays what the buffer holds past the last
    /// dispatched event, warning every connection if part of it was trimmed.
    pub(super) async fn catch_up(&mut self, shutdown: &mut Shutdown) {
        match self.store.suspended_ids().await {
            Ok(ids) => self.store.suspended().replace(ids),
            Err(e) => tracing::warn!(error = %e, "could not read the suspended users"),
        }
        let Some(last) = self.last else {
            // First subscription: nothing was dispatched yet, so start live.
            match self.store.newest_event_id().await {
                Ok(newest) => self.last = newest,
                Err(e) => tracing::warn!(error = %e, "could not read the replay buffer position"),
            }
            return;
        };
        match self.store.buffer_info().await {
            Ok(info) if frame::is_gap(last, &info) => {
                let msg = Control::warning(
                    "resume_gap",
                    "Events were lost while the server was disconnected from Redis.",
                )
                .encode();
                for entry in self.subs.values() {
                    entry.conn.offer_control(msg.clone());
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not check the replay buffer for gaps"),
        }
        let mut cursor = last;
        let mut failing_since: Option<std::time::Instant> = None;
        let mut backoff = Duration::from_millis(50);
        loop {
            if shutdown.is_set() {
                return;
            }
            let page = match self.store.events_after(cursor, 1000).await {
                Ok(page) => {
                    failing_since = None;
                    backoff = Duration::from_millis(50);
                    page
                }
                Err(e) => {
                    // Retry: giving up silently would be a gap no client
                    // hears of. Past the patience, say so to everyone.
                    let since = *failing_since.get_or_insert_with(std::time::Instant::now);
                    if since.elapsed() > CATCH_UP_PATIENCE {
                        tracing::error!(error = %e, "catch-up from the replay buffer failed; telling every stream resume_gap");
                        let msg = Control::warning(
                            "resume_gap",
                            "Events may have been lost while the server could not read the replay buffer.",
                        )
                        .encode();
                        for conn in self.open.values() {
                            conn.offer_control(msg.clone());
                        }
                        self.last = None;
                        return;
                    }
                    tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "catch-up from the replay buffer failed; retrying");
                    tokio::select! {
                        _ = shutdown.wait() => return,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                    continue;
                }
            };
            if let Some((id, _)) = page.events.last() {
                cursor = *id;
            }
            inc(&metrics().events_replayed, page.events.len() as u64);
            for (_, json) in &page.events {
                self.incoming(frame::parse(json));
            }
            if !page.more {
                return;
            }
        }
    }
}
