//! The dispatcher: one task that routes every event to the subscriptions
//! that want it and hands it to their connections. It holds the parts and
//! calls them, each in its own file: the subscriptions and every route to
//! them (`routes`, over `groups`, `lists`, `rules` and `split`), the
//! deliveries through the helper tasks or queued here (`deliver`), the
//! viewers' relations that hide events (`viewers`), sessions and
//! revocations (`sessions`), the keep-alive and expiry timer
//! (`keepalive`) and the catch-up after a resubscription (`catch_up`).

use super::conn::ClientConn;
use super::deliver::Deliveries;
use super::helpers::Helper;
use super::keepalive::Timers;
use super::msg::{Cmd, Msg};
use super::routes::{Copies, Routes};
use super::sessions::Sessions;
use super::subscriber::HeardMark;
use super::viewers::Viewers;
use crate::metrics::{global as metrics, inc};
use crate::shutdown::Shutdown;
use crate::store::events::Tap;
use crate::store::Store;
use crate::stream::frame::DisconnectCode;
use crate::stream::frame::{self, EventId, Frame, Incoming};
use crate::stream::rule_set;
use crate::stream::translate::Translation;
use firehose_filters::SubId;
use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

pub(super) struct Dispatcher {
    pub(super) store: Store,
    /// Every subscription, filed by what routes events to it.
    pub(super) routes: Routes,
    /// Every open connection by id, subscribed or not.
    pub(super) open: FxHashMap<u64, Arc<ClientConn>>,
    /// Open connections' sessions, and the sessions revoked lately.
    pub(super) sessions: Sessions,
    /// Users with subscriptions here, with their relations.
    pub(super) viewers: Viewers,
    /// The last event dispatched; older or equal ids are duplicates.
    pub(super) last: Option<EventId>,
    /// When each open connection is next owed a keep-alive or its end.
    pub(super) timers: Timers,
    /// The way deliveries go (the helper tasks, or queued here).
    pub(super) deliveries: Deliveries,
    /// Working space: the subscriptions an event goes to, and per event of
    /// a batch.
    out: Vec<SubId>,
    outs: Vec<Vec<SubId>>,
    /// The hub's own commands (a reload of rules answers through it).
    cmds: mpsc::UnboundedSender<Cmd>,
    /// Every event handed on, for the work that follows the log here, and
    /// the last one sent (`None`: what came before is not known).
    tap: Tap,
    pub(super) tapped: Option<EventId>,
    /// The newest event the subscriber has heard, and the subscriptions
    /// registered while events at or below it were still to be dispatched:
    /// each gets only the events after its start.
    pub(super) heard: Arc<HeardMark>,
    pub(super) starts: FxHashMap<SubId, EventId>,
    /// Another API's translations of the events, made before routing.
    pub(super) translation: Arc<Translation>,
}

impl Drop for Dispatcher {
    /// Were the dispatcher to end any other way than by shutdown (which
    /// has already ended them), its connections would hear nothing more:
    /// end them, so that their clients reconnect.
    fn drop(&mut self) {
        for conn in self.open.values() {
            conn.kill(DisconnectCode::Unavailable);
        }
    }
}

/// Most events routed in one batch.
pub(super) const MAX_BATCH: usize = 64;

impl Dispatcher {
    /// A dispatcher with no connection yet, delivering through `helpers`.
    pub(super) fn new(
        store: Store,
        keepalive: Duration,
        cmds: mpsc::UnboundedSender<Cmd>,
        tap: Tap,
        heard: Arc<HeardMark>,
        helpers: Vec<Helper>,
        translation: Arc<Translation>,
    ) -> Dispatcher {
        Dispatcher {
            store,
            routes: Routes::default(),
            open: FxHashMap::default(),
            sessions: Sessions::default(),
            viewers: Viewers::default(),
            last: None,
            timers: Timers::new(keepalive),
            deliveries: Deliveries::new(helpers),
            out: Vec::new(),
            outs: Vec::new(),
            cmds,
            tap,
            tapped: None,
            heard,
            starts: FxHashMap::default(),
            translation,
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
        let mut timer = Box::pin(tokio::time::sleep(self.timers.period));
        loop {
            // The timer is set for the earliest connection owed something.
            let next = self.timers.next();
            if let Some(at) = next.filter(|at| *at != timer.deadline()) {
                timer.as_mut().reset(at);
            }
            tokio::select! {
                biased;
                _ = shutdown.wait() => {
                    self.close_all(&mut cmds);
                    break;
                }
                Some(cmd) = cmds.recv() => self.command(cmd),
                _ = &mut timer, if next.is_some() => self.keep_alive(Instant::now()),
                Some(msg) = msgs.recv() => {
                    self.deliveries.choose_path().await;
                    // Events already queued behind this one are routed in
                    // one batch (see `Index::route_batch`), in order.
                    let mut next = Some(msg);
                    let mut batch = Vec::new();
                    while let Some(msg) = next.take() {
                        match msg {
                            Msg::Raw(payload) => match self.tap_json(&payload) {
                                Some(Incoming::Event(frame)) => batch.push(frame),
                                other => {
                                    self.translate(&batch).await;
                                    self.dispatch_batch(&mut batch);
                                    self.incoming(other);
                                }
                            },
                            Msg::Resubscribed => {
                                self.translate(&batch).await;
                                self.dispatch_batch(&mut batch);
                                self.catch_up(&mut shutdown).await;
                            }
                        }
                        if batch.len() < MAX_BATCH {
                            next = msgs.try_recv().ok();
                        }
                    }
                    self.translate(&batch).await;
                    self.dispatch_batch(&mut batch);
                    self.deliveries.wait_for_helpers().await;
                }
                else => break,
            }
        }
    }

    /// Has `batch` translated for another API's streams, if any is open
    /// ([`stream::translate`](crate::stream::translate)), before it is routed.
    async fn translate(&self, batch: &[Arc<Frame>]) {
        let translation = self.translation.clone();
        translation.run(batch).await;
    }

    /// On shutdown: ends every open connection, and any whose `Open` is
    /// still queued; from here on [`Hub::open`](super::Hub::open) ends them itself.
    pub(super) fn close_all(&mut self, cmds: &mut mpsc::UnboundedReceiver<Cmd>) {
        cmds.close();
        while let Ok(cmd) = cmds.try_recv() {
            if let Cmd::Open { conn } = cmd {
                self.open.insert(conn.id, conn);
            }
        }
        for conn in self.open.values() {
            conn.kill(DisconnectCode::Shutdown);
        }
    }

    pub(super) fn command(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Open { conn } => {
                if !self.sessions.open(conn.id, &conn.session) {
                    conn.kill(DisconnectCode::Revoked);
                }
                self.timers.schedule(&conn, conn.opened_at);
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
                let start = self.heard.get();
                if self.last.is_none_or(|last| start > last) {
                    self.starts.insert(sub, start);
                }
                let uid = conn.uid;
                let added = self.routes.add(conn, sub, want, stream);
                if added.reload_rules {
                    self.reload_rules(uid);
                }
                if added.list_gone {
                    self.end_subs(vec![sub], DisconnectCode::ListDeleted);
                }
                let _ = ack.send(());
            }
            Cmd::Rules { uid, set } => self.routes.rules.replace(uid, set),
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
        self.timers.schedule(&conn, Instant::now());
        true
    }

    /// Drops from `out` the subscriptions whose user's relations hide who
    /// caused `frame`, and the partitioned ones `frame` is not in: lookups
    /// in data held here, no Redis round trip.
    /// Subscriptions registered after `frame` was heard drop it too: it
    /// was written before they began.
    pub(super) fn drop_hidden(&self, frame: &Frame, out: &mut Vec<SubId>) {
        if !self.starts.is_empty() {
            out.retain(|sub| self.starts.get(sub).is_none_or(|start| frame.id > *start));
        }
        self.routes.drop_other_parts(frame, out);
        let actors = frame.actors();
        if self.viewers.none_hiding() || actors.is_empty() {
            return;
        }
        out.retain(|sub| {
            self.routes
                .get(sub)
                .is_none_or(|e| !self.viewers.hides(e.conn.uid, actors, e.stream))
        });
    }

    /// `uid` was suspended (`on`) or the suspension lifted: while it
    /// lasts their events reach no stream here, and their own streams end.
    fn suspended(&mut self, uid: u64, on: bool) {
        self.store.moderation().suspended().set(uid, on);
        if on {
            for conn in self.open.values().filter(|c| c.uid == uid) {
                conn.kill(DisconnectCode::Suspended);
            }
        }
    }

    /// `uid` left private group `gid`: their streams of it get nothing
    /// more; a connection with nothing else subscribed ends.
    fn group_left(&mut self, gid: u64, uid: u64) {
        let subs = self.routes.groups.left(gid, uid);
        self.end_subs(subs, DisconnectCode::GroupLeft);
    }

    /// Ends `subs`; a connection left with nothing subscribed ends with
    /// `code`.
    fn end_subs(&mut self, subs: Vec<SubId>, code: DisconnectCode) {
        for sub in subs {
            let Some(conn) = self.routes.get(&sub).map(|e| e.conn.clone()) else {
                continue;
            };
            self.remove_sub(sub);
            if !self.routes.has_conn(conn.id) {
                conn.kill(code);
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
        self.starts.remove(&sub);
        if let Some(entry) = self.routes.remove(sub) {
            self.viewers.drop_one(entry.conn.uid);
        }
    }

    pub(super) fn remove_conn(&mut self, conn: u64) {
        for entry in self.routes.remove_conn(conn) {
            self.viewers.drop_one(entry.conn.uid);
        }
        if let Some(c) = self.open.remove(&conn) {
            self.sessions.close(conn, &c.session);
        }
        self.timers.sweep(&self.open);
    }

    /// Closes every connection of a session, and remembers the session for
    /// connections that are still opening.
    pub(super) fn revoke(&mut self, sid: String) {
        self.store.caches().sessions.revoke(&sid);
        for id in self.sessions.revoke(sid) {
            if let Some(conn) = self.open.get(&id) {
                conn.kill(DisconnectCode::Revoked);
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
                let ended = self.routes.lists.changed(change);
                self.end_subs(ended, DisconnectCode::ListDeleted);
            }
            Some(Incoming::Suspended(uid, on)) => self.suspended(uid, on),
            Some(Incoming::RulesChanged(uid, version)) => {
                if self.routes.rules.changed(uid, version) {
                    self.reload_rules(uid);
                }
            }
            Some(Incoming::StatusesChanged(ids)) => {
                for id in ids {
                    self.store.caches().status.forget(id);
                }
            }
            None => tracing::warn!("ignored a malformed event on the channel"),
        }
    }

    /// Sends an event heard (live or caught up) to the tap, unless it is at
    /// or before the last sent; then parses it.
    pub(super) fn tap_json(&mut self, json: &str) -> Option<Incoming> {
        if let Some(id) = EventId::of_json(json) {
            if self.tapped.is_none_or(|t| id > t) {
                self.tap.send(self.tapped, id, json.into());
                self.tapped = Some(id);
            }
        }
        frame::parse(json)
    }

    /// Whether a suspended user caused `frame` (then no stream gets it).
    fn by_suspended(&self, frame: &Frame) -> bool {
        let suspended = self.store.moderation().suspended();
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
            self.store.caches().status.forget(status_id);
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
        let copies = self.routes.route(&frame, &mut out);
        self.drop_hidden(&frame, &mut out);
        self.deliver(&frame, &out, direct);
        self.deliver_copies(copies, direct);
        self.out = out;
        self.started();
    }

    /// Forgets the starts that every event from here on is past.
    fn started(&mut self) {
        if let (false, Some(last)) = (self.starts.is_empty(), self.last) {
            self.starts.retain(|_, start| *start > last);
        }
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
        let copies = self.routes.route_batch(&frames, &mut outs);
        for ((frame, out), copies) in frames.iter().zip(outs.iter_mut()).zip(copies) {
            self.drop_hidden(frame, out);
            self.deliver(frame, out, false);
            self.deliver_copies(copies, false);
        }
        self.outs = outs;
        frames.clear();
        *batch = frames;
        self.started();
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
        for (_, subs) in self.routes.route(&before, &mut had) {
            had.extend(subs);
        }
        had.sort_unstable();
        had.dedup();
        let mut now = Vec::new();
        let copies = self.routes.route_text(&after, &mut now);
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
    fn deliver_copies(&mut self, copies: Copies, direct: bool) {
        for (copy, mut subs) in copies {
            self.drop_hidden(&copy, &mut subs);
            if !subs.is_empty() {
                self.deliver(&copy, &subs, direct);
            }
        }
    }

    /// Hands a keep-alive to every open connection whose time has come, and
    /// ends those whose token has expired.
    pub(super) fn keep_alive(&mut self, now: Instant) {
        let (deliveries, last) = (&self.deliveries, self.last);
        self.timers
            .keep_alive(now, &self.open, |conn| deliveries.position_for(conn, last));
    }

    /// Offers `frame` to the subscriptions in `out`; a full queue ends its
    /// connection.
    fn deliver(&mut self, frame: &Arc<Frame>, out: &[SubId], direct: bool) {
        let dead = self.deliveries.offer(frame, out, &self.routes, direct);
        for conn in dead {
            self.remove_conn(conn);
        }
    }
}
