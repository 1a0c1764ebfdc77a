//! Moderation: reports, their resolution, suspensions and the audit log.
//! Reports and the audit log share the slot `{mod}`, so a resolution and
//! its audit entry are one script (`report_resolve.lua`). A suspension is
//! a flag in the user's HASH (the authority every read path sees: a
//! suspended user is 404 and their statuses with them), the `{mod}` set
//! the hubs load at start, and an internal `suspended` event that ends
//! the user's streams and keeps their events off every stream in every
//! process; their sessions end.

use crate::model::Id;
use crate::model::{now, AuditAction, Report};
use crate::store::caches::suspended::Suspended;
use crate::store::chains::suspend::SuspendOp;
use crate::store::handle::Store;
use crate::store::outbox::Op;
use crate::store::paging::{id_page, Cursor, IdPage};
use crate::store::plumbing::error::{StoreError, StoreResult};
use redis::AsyncCommands;
use std::collections::HashSet;

/// Reasons a report may give.
pub(crate) const REASONS: [&str; 4] = ["spam", "abuse", "illegal", "other"];
/// Resolutions of a report.
pub(crate) const ACTIONS: [&str; 3] = ["none", "remove_status", "suspend_user"];

/// Which reports to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportState {
    /// Waiting for an admin.
    Open,
    /// Decided.
    Resolved,
}

/// How a report is resolved, and the audit entry that records it.
#[derive(Debug, Clone)]
pub struct Resolution {
    /// `none`, `remove_status` or `suspend_user`.
    pub action: String,
    /// The admin's note.
    pub note: Option<String>,
    /// The audit entry's action (`dismiss_report`, `remove_status`,
    /// `suspend_user`).
    pub audit_action: &'static str,
    /// The status or user acted on.
    pub target: Id,
}

/// What resolving a report did.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    /// The report, resolved now.
    Done(Box<Report>),
    /// It was resolved already.
    Already,
    /// No such report.
    Missing,
}

/// Reports, the audit log and suspensions (`Store::moderation`).
#[derive(Clone, Copy)]
pub struct Moderation<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Moderation<'_> {
    /// Files a report; `None` when the open queue holds `max_open` already.
    pub async fn add_report(
        self,
        mut report: Report,
        max_open: usize,
    ) -> StoreResult<Option<Report>> {
        let (id, created) = self.store.mint().snowflake().await?;
        report.id = Id(id);
        report.created = created;
        let json = to_json(&report)?;
        let mut conn = self.store.conn();
        let added: i64 = self
            .store
            .scripts
            .report_add
            .key(self.store.keys.reports())
            .key(self.store.keys.reports_open())
            .arg(id)
            .arg(json)
            // Ids are time-ordered snowflakes below 2^53: newest first,
            // exactly, ties within a millisecond included.
            .arg(-(id as f64))
            .arg(max_open)
            .invoke_async(&mut conn)
            .await?;
        Ok((added == 1).then_some(report))
    }

    /// A report by id.
    pub async fn report(self, id: u64) -> StoreResult<Option<Report>> {
        let mut conn = self.store.conn();
        let json: Option<String> = conn.hget(self.store.keys.reports(), id).await?;
        Ok(json.and_then(|j| serde_json::from_str(&j).ok()))
    }

    /// A page of reports in `state`, newest first.
    pub async fn report_page(
        self,
        state: ReportState,
        cursor: &Cursor,
        count: usize,
    ) -> StoreResult<(Vec<Report>, Option<String>)> {
        let key = match state {
            ReportState::Open => self.store.keys.reports_open(),
            ReportState::Resolved => self.store.keys.reports_resolved(),
        };
        let IdPage { ids, next_cursor } = id_page(self.store, &key, cursor, count).await?;
        let rows = self.hash_rows(&self.store.keys.reports(), &ids).await?;
        Ok((
            rows.iter()
                .filter_map(|j| serde_json::from_str(j).ok())
                .collect(),
            next_cursor,
        ))
    }

    async fn hash_rows(self, key: &str, ids: &[u64]) -> StoreResult<Vec<String>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.store.conn();
        let rows: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(key)
            .arg(ids)
            .query_async(&mut conn)
            .await?;
        Ok(rows.into_iter().flatten().collect())
    }

    /// Resolves report `id` with `action` by `admin`, recording its audit
    /// entry (`audit_action` on `target`) in the same step.
    pub async fn resolve_report(
        self,
        report: &Report,
        admin: u64,
        how: Resolution,
        keep: usize,
    ) -> StoreResult<Resolved> {
        let Resolution {
            action,
            note,
            audit_action,
            target,
        } = how;
        let at = now();
        let mut resolved = report.clone();
        resolved.state = "resolved".into();
        resolved.action = Some(action);
        resolved.resolved_by = Some(Id(admin));
        resolved.resolved_at = Some(at);
        resolved.note = note;
        let (audit_id, _) = self.store.mint().snowflake().await?;
        let entry = AuditAction {
            id: Id(audit_id),
            at,
            admin: Id(admin),
            action: audit_action.into(),
            target,
            report: Some(report.id),
        };
        let mut conn = self.store.conn();
        let outcome: String = self
            .store
            .scripts
            .report_resolve
            .key(self.store.keys.reports())
            .key(self.store.keys.reports_open())
            .key(self.store.keys.reports_resolved())
            .key(self.store.keys.audit())
            .key(self.store.keys.audit_order())
            .arg(report.id)
            .arg(to_json(&resolved)?)
            .arg(-(audit_id as f64))
            .arg(audit_id)
            .arg(to_json(&entry)?)
            .arg(keep)
            .invoke_async(&mut conn)
            .await?;
        if outcome == "ok" {
            // The reporter is told (by the notifier).
            {
                let reporter = report.reporter.get();
                self.store
                    .events()
                    .emit(&crate::store::events::body(
                        &crate::model::Event::ReportResolved {
                            at,
                            report_id: report.id,
                            reporter: Id(reporter),
                            admin: Id(admin),
                        },
                    ))
                    .await?;
            }
        }
        Ok(match outcome.as_str() {
            "ok" => Resolved::Done(Box::new(resolved)),
            "resolved" => Resolved::Already,
            _ => Resolved::Missing,
        })
    }

    /// Records an audit entry (a change made outside a report).
    pub async fn audit_add(
        self,
        admin: u64,
        action: &str,
        target: u64,
        keep: usize,
    ) -> StoreResult<()> {
        let (id, _) = self.store.mint().snowflake().await?;
        self.audit_put(id, admin, action, target, None, keep).await
    }

    /// Writes audit entry `id` (the same id twice is one entry).
    pub(crate) async fn audit_put(
        self,
        id: u64,
        admin: u64,
        action: &str,
        target: u64,
        report: Option<Id>,
        keep: usize,
    ) -> StoreResult<()> {
        let at = now();
        let entry = AuditAction {
            id: Id(id),
            at,
            admin: Id(admin),
            action: action.into(),
            target: Id(target),
            report,
        };
        let mut conn = self.store.conn();
        let _: i64 = self
            .store
            .scripts
            .audit_add
            .key(self.store.keys.audit())
            .key(self.store.keys.audit_order())
            .arg(id)
            .arg(to_json(&entry)?)
            .arg(-(id as f64))
            .arg(keep)
            .invoke_async(&mut conn)
            .await?;
        Ok(())
    }

    /// A page of the audit log, newest first.
    pub async fn audit_page(
        self,
        cursor: &Cursor,
        count: usize,
    ) -> StoreResult<(Vec<AuditAction>, Option<String>)> {
        let IdPage { ids, next_cursor } =
            id_page(self.store, &self.store.keys.audit_order(), cursor, count).await?;
        let rows = self.hash_rows(&self.store.keys.audit(), &ids).await?;
        Ok((
            rows.iter()
                .filter_map(|j| serde_json::from_str(j).ok())
                .collect(),
            next_cursor,
        ))
    }

    /// Suspends `uid` (`on`) or lifts it, by `admin`: `Ok(true)` when
    /// that changed something (then, with `audit`, one audit entry
    /// records it). Recorded in the outbox first, so a process that dies
    /// half way has a worker finish it: the flag, the `{mod}` set, every
    /// session ended, the entry, then the `suspended` event that ends the
    /// user's streams in every process with code `suspended`.
    pub async fn set_suspended(
        self,
        uid: u64,
        on: bool,
        admin: u64,
        audit: bool,
        keep: usize,
    ) -> StoreResult<bool> {
        if self.is_suspended(uid).await? == on {
            // Nothing to change (a missing user is refused by the chain).
            if self.store.users().get_any(uid).await.is_ok() {
                return Ok(false);
            }
        }
        // The audit entry's id is drawn now, so a rerun writes the same one.
        let (audit_id, _) = self.store.mint().snowflake().await?;
        let op = SuspendOp {
            uid,
            on,
            admin,
            audit: audit.then_some(audit_id),
            keep,
        };
        let owed = self.store.outbox().start(Op::Suspend(op.clone())).await?;
        op.run(self.store, &owed.entry).await
    }

    /// Whether `uid` is suspended (from Redis).
    pub async fn is_suspended(self, uid: u64) -> StoreResult<bool> {
        let mut conn = self.store.conn();
        let v: Option<String> = conn.hget(self.store.keys.user(uid), "suspended").await?;
        Ok(v.as_deref() == Some("1"))
    }

    /// Every suspended user (for a hub starting or catching up).
    pub async fn suspended_ids(self) -> StoreResult<HashSet<u64>> {
        let mut conn = self.store.conn();
        Ok(conn.smembers(self.store.keys.suspended()).await?)
    }
}

impl<'a> Moderation<'a> {
    /// The suspended users this process knows of.
    pub fn suspended(self) -> &'a Suspended {
        &self.store.caches.suspended
    }
}

/// `v` as JSON for a script argument.
fn to_json<T: serde::Serialize>(v: &T) -> StoreResult<String> {
    serde_json::to_string(v).map_err(|e| StoreError::Internal(e.to_string()))
}
