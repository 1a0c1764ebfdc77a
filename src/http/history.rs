//! The history on disk ([`crate::history`]): how far back it reaches, a
//! filter rule run over it (search and counts), and the public timeline
//! (every public status it holds, newest first).

use super::shared::extract::known_params;
use super::shared::openapi::{Op, Params, Reply, Typed};
use super::shared::paging::{raw_statuses, StatusPage};
use super::shared::routes::Routes;
use super::shared::rule_items::check_items;
use super::shared::visibility::only_visible_hiding;
use crate::auth::AuthUser;
use crate::error::{ApiError, ApiResult};
use crate::history::search::{Found, Search};
use crate::history::{History, Summary};
use crate::model::Status;
use crate::state::AppState;
use crate::store::events::EventId;
use crate::stream::replay_sight::ReplaySight;
use crate::visibility::{Reach, Sight};
use axum::extract::{Query, State};
use axum::Json;
use firehose_filters::rules::{Expr, Term};
use serde::Serialize;
use serde_json::value::RawValue;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Most statuses a search page holds.
pub(crate) const MAX_SEARCH_COUNT: usize = 500;
/// How long a search page may scan before it answers with what it found
/// (and a cursor to go on from).
const SEARCH_TIME: Duration = Duration::from_secs(5);
/// How long counts may scan before they answer what they counted so far
/// (`complete: false`).
const COUNTS_TIME: Duration = Duration::from_secs(20);
/// Most buckets one counts answer holds.
const MAX_BUCKETS: u64 = 100_000;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .route(SHOW_OP, show)
        .route(SEARCH_OP, search)
        .route(COUNTS_OP, counts)
        .route(PUBLIC_OP, public)
}

/// A stretch of the asked window this server's history does not hold
/// (missed while down, before it started, or damaged).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct HistoryGap {
    /// Its start (seconds since the epoch).
    pub from: f64,
    /// Its end.
    pub to: f64,
}

/// Answer of a history search.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct SearchPage {
    /// The matching statuses, newest first, as the caller may see them now.
    #[schema(value_type = Vec<Status>)]
    pub statuses: Box<RawValue>,
    /// Pass as `cursor` for the next page; null when nothing older is left.
    pub next_cursor: Option<String>,
    /// The time of the oldest event the history holds (null: none).
    pub oldest: Option<f64>,
    /// False when the window has gaps.
    pub complete: bool,
    /// What the history does not hold of the window, oldest first: an
    /// answer with any is not complete.
    pub gaps: Vec<HistoryGap>,
}

/// Answer of history counts.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct HistoryCounts {
    /// Every bucket of the window, oldest first (zeros too).
    pub counts: Vec<Bucket>,
    /// The sum of the buckets.
    pub total: u64,
    /// False when the window has gaps or counting ran out of time.
    pub complete: bool,
    /// What the history does not hold of the window, oldest first.
    pub gaps: Vec<HistoryGap>,
}

/// One bucket of history counts.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Bucket {
    /// Its start (seconds since the epoch).
    pub start: u64,
    /// How many statuses matched in it.
    pub count: u64,
}

const SHOW_OP: Op = Op::get(
    "/api/v1/history",
    "history",
    "How far back this server's history of events reaches (oldest time and id, newest id, events, bytes on disk)",
)
.reply(Reply::Of(Typed::of::<Summary>()))
.errors(&[401]);

/// `GET /api/v1/history` (any token): the extent of the history this
/// process serves resumes from (empty with `--history 0`).
pub(crate) async fn show(State(state): State<AppState>, _auth: AuthUser) -> Json<Summary> {
    Json(
        state
            .history
            .as_ref()
            .map(|h| h.summary())
            .unwrap_or_default(),
    )
}

const SEARCH_OP: Op = Op::get(
    "/api/v1/history/search",
    "history",
    "Public statuses in the history matching a filter rule, newest first, as visible now",
)
.params(Params::HistorySearch)
.reply(Reply::Of(Typed::of::<SearchPage>()))
.errors(&[400, 401, 503]);

const COUNTS_OP: Op = Op::get(
    "/api/v1/history/counts",
    "history",
    "How many public statuses in the history a filter rule matches, per minute, hour or day, oldest first",
)
.params(Params::HistoryCounts)
.reply(Reply::Of(Typed::of::<HistoryCounts>()))
.errors(&[400, 401, 503]);

const PUBLIC_OP: Op = Op::get(
    "/api/v1/timelines/public",
    "timelines",
    "The public timeline: every public status the history holds, newest first, as visible now",
)
.params(Params::PublicTimeline)
.reply(Reply::Of(Typed::of::<StatusPage>()))
.errors(&[400, 401, 503]);

/// The time window asked for, in milliseconds: `[since, until)`.
struct Window {
    since_ms: Option<u64>,
    until_ms: u64,
}

fn time_param(q: &HashMap<String, String>, name: &str) -> ApiResult<Option<u64>> {
    let Some(raw) = q.get(name) else {
        return Ok(None);
    };
    match raw.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && (0.0..1e11).contains(&t) => Ok(Some((t * 1000.0).ceil() as u64)),
        _ => Err(ApiError::invalid(
            match name {
                "since" => "invalid_since",
                _ => "invalid_until",
            },
            format!("{name} must be a time in seconds since the epoch."),
        )),
    }
}

fn window(q: &HashMap<String, String>) -> ApiResult<Window> {
    let now_ms = (crate::model::now() * 1000.0) as u64;
    let since_ms = time_param(q, "since")?;
    let until_ms = time_param(q, "until")?;
    if since_ms.is_some_and(|s| s > now_ms + 1000) {
        return Err(ApiError::invalid(
            "invalid_since",
            "since is in the future: nothing is held after it.",
        ));
    }
    if let (Some(s), Some(u)) = (since_ms, until_ms) {
        if u < s {
            return Err(ApiError::invalid(
                "invalid_until",
                "until must not be before since.",
            ));
        }
    }
    Ok(Window {
        since_ms,
        until_ms: until_ms.unwrap_or(now_ms + 1000),
    })
}

/// The query: one rule, checked as the rules endpoint checks one (400
/// `invalid_rule` with `column`), with the reader's search ready.
async fn prepare(
    state: &AppState,
    auth: &AuthUser,
    q: &HashMap<String, String>,
) -> ApiResult<Search> {
    let Some(value) = q.get("query").filter(|v| !v.trim().is_empty()) else {
        return Err(ApiError::invalid(
            "invalid_rule",
            "query must be a filter rule, e.g. query=%23rust%20-is:repost.",
        ));
    };
    let mut checked = check_items(
        state,
        "query",
        &[serde_json::Value::String(value.clone())],
        true,
    )
    .await?;
    let expr = checked.remove(0).expr;
    reader_search(state, auth, expr).await
}

/// A search for `expr` by `auth`: what they hide and may see now.
async fn reader_search(state: &AppState, auth: &AuthUser, expr: Expr) -> ApiResult<Search> {
    let hides = Arc::new(state.store.relations().hides(auth.uid).await?);
    let sight = ReplaySight::new(Sight::new(
        state.store.clone(),
        Some(auth.uid),
        hides.clone(),
        Reach::Public,
    ));
    Ok(Search::new(expr, hides, sight))
}

fn history(state: &AppState) -> Option<&History> {
    state.history.as_ref()
}

/// Waits (at most a second) until the history holds every event the
/// buffer held when the call came, so that a status answered 201 just
/// before is searched too (the archiver is woken by its publish and
/// reads it within milliseconds).
async fn caught_up(state: &AppState, history: &History) -> ApiResult<()> {
    let Some(newest) = state.store.events().newest_id().await? else {
        return Ok(());
    };
    let deadline = Instant::now() + Duration::from_secs(1);
    while history.last().is_none_or(|last| last < newest) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(())
}

/// The stretches of the window (events after `bottom`, before `top`) this
/// process does not hold, as `{from, to}` times (seconds since the epoch,
/// clipped to the window): what a search or counts could not look at.
/// Before the oldest event held, only what the process missed, unless
/// `since` asks for more than retention kept. Without a history, the whole
/// window.
fn missing(
    state: &AppState,
    bottom: EventId,
    top: EventId,
    damaged: &[crate::history::Gap],
    window: &Window,
) -> Vec<HistoryGap> {
    let holes = match history(state) {
        Some(history) => history.holes(bottom, top, damaged, window.since_ms.is_some()),
        None => vec![crate::history::Gap {
            after: bottom,
            before: top,
        }],
    };
    let from_ms = window.since_ms.unwrap_or(0);
    holes
        .into_iter()
        .map(|g| {
            let from = if g.after == bottom {
                from_ms
            } else {
                g.after.0
            };
            let to = g.before.0.min(window.until_ms);
            HistoryGap {
                from: from as f64 / 1000.0,
                to: to as f64 / 1000.0,
            }
        })
        .collect()
}

/// The id bound of a time: events before `ms` are older than it.
fn before(ms: u64) -> EventId {
    EventId(ms, 0, 0)
}

/// The id bound of a time: events at or after `ms` are newer than it.
fn floor(ms: Option<u64>) -> EventId {
    match ms {
        None | Some(0) => EventId::ZERO,
        Some(ms) => EventId(ms - 1, u64::MAX, u32::MAX),
    }
}

/// `GET /api/v1/history/search`: the page of public statuses matching
/// `query` older than `cursor` (or `until`) and not older than `since`,
/// newest first, as the reader may see them now.
pub(crate) async fn search(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<SearchPage>> {
    known_params(&q, &["query", "since", "until", "count", "cursor"])?;
    let count = match q.get("count") {
        None => 100,
        Some(c) => match c.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_SEARCH_COUNT).contains(&n) => n,
            _ => {
                return Err(ApiError::invalid(
                    "invalid_count",
                    format!("count must be a whole number from 1 to {MAX_SEARCH_COUNT}."),
                ))
            }
        },
    };
    let window = window(&q)?;
    let cursor = match q.get("cursor") {
        None => None,
        Some(c) => Some(EventId::parse(c).ok_or_else(|| {
            ApiError::invalid("invalid_cursor", "cursor must come from next_cursor.")
        })?),
    };
    let mut search = prepare(&state, &auth, &q).await?;
    let at = before(window.until_ms).min(cursor.unwrap_or(EventId(u64::MAX, 0, 0)));
    let bottom = floor(window.since_ms);
    let top = at;
    let (shown, next, damaged) = page(&state, &auth, &mut search, (at, bottom), count).await?;
    let gaps = missing(&state, bottom, top, &damaged, &window);
    Ok(Json(SearchPage {
        statuses: raw_statuses(&shown)?,
        next_cursor: next.map(|id| id.to_string()),
        oldest: history(&state).and_then(History::oldest),
        complete: gaps.is_empty(),
        gaps,
    }))
}

/// `GET /api/v1/history/counts`: how many public statuses `query` matches
/// per bucket over the window, oldest first, every bucket listed (zeros
/// too), with the total.
pub(crate) async fn counts(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<HistoryCounts>> {
    known_params(&q, &["query", "since", "until", "bucket"])?;
    let bucket_ms: u64 = match q.get("bucket").map(|b| b.trim()) {
        None | Some("hour") => 3_600_000,
        Some("minute") => 60_000,
        Some("day") => 86_400_000,
        Some(_) => {
            return Err(ApiError::invalid(
                "invalid_bucket",
                "bucket must be minute, hour or day.",
            ))
        }
    };
    let window = window(&q)?;
    let mut search = prepare(&state, &auth, &q).await?;
    let oldest_ms = history(&state)
        .and_then(History::oldest)
        .map(|t| (t * 1000.0) as u64);
    // Buckets from the later of `since` and the oldest event held.
    let first_ms = match (window.since_ms, oldest_ms) {
        (Some(s), Some(o)) => s.max(o),
        (Some(s), None) => s.max(window.until_ms.saturating_sub(1)),
        (None, Some(o)) => o,
        (None, None) => window.until_ms.saturating_sub(1),
    };
    let first_bucket = first_ms / bucket_ms;
    let last_bucket = window.until_ms.saturating_sub(1) / bucket_ms;
    if last_bucket.saturating_sub(first_bucket) >= MAX_BUCKETS {
        return Err(ApiError::invalid(
            "invalid_bucket",
            format!("The window holds more than {MAX_BUCKETS} buckets: choose a larger bucket or a shorter window."),
        ));
    }
    let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
    let mut complete = true;
    let (top, bottom) = (before(window.until_ms), floor(window.since_ms));
    let mut damaged = Vec::new();
    if let Some(history) = history(&state) {
        caught_up(&state, history).await?;
        let deadline = Instant::now() + COUNTS_TIME;
        let mut at = top;
        loop {
            let found = search.step(history, at, bottom).await?;
            damaged.extend(found.damaged);
            for (eid, _) in &found.statuses {
                *counts.entry(eid.0 / bucket_ms).or_default() += 1;
            }
            if found.done {
                break;
            }
            at = found.cursor;
            if Instant::now() > deadline {
                complete = false;
                break;
            }
        }
    }
    let gaps = missing(&state, bottom, top, &damaged, &window);
    complete &= gaps.is_empty();
    let total: u64 = counts.values().sum();
    let rows = (first_bucket.min(last_bucket)..=last_bucket)
        .map(|b| Bucket {
            start: b * bucket_ms / 1000,
            count: counts.get(&b).copied().unwrap_or(0),
        })
        .collect();
    Ok(Json(HistoryCounts {
        counts: rows,
        total,
        complete,
        gaps,
    }))
}

/// How far past a `max_id`'s time a public timeline page starts reading.
const MAX_ID_SLACK_MS: u64 = 2_000;

/// Pages read past a `max_id`'s slack to fill a public timeline page.
const MAX_ID_READS: usize = 4;

/// `GET /api/v1/timelines/public`: every public status the history holds,
/// newest first, judged as a search judges (what the reader may see now;
/// nothing of a user who blocks them or whom they block), `count` a page
/// (1-200, 20), paged by `cursor` (`next_cursor`: an event id, so a page
/// never skips or repeats while statuses are posted), or from a status id
/// down (`max_id`, inclusive; with a cursor too, a bound on what its page
/// holds). Empty with `--history 0`.
pub(crate) async fn public(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<StatusPage>> {
    known_params(&q, &["count", "cursor", "max_id"])?;
    let count = match q.get("count") {
        None => 20,
        Some(c) => match c.trim().parse::<usize>() {
            Ok(n) if (1..=200).contains(&n) => n,
            _ => {
                return Err(ApiError::invalid(
                    "invalid_count",
                    "count must be a whole number from 1 to 200.",
                ))
            }
        },
    };
    let max_id = match q.get("max_id") {
        None => None,
        Some(m) if m.len() <= 20 && !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()) => {
            Some(m.parse::<u64>().unwrap_or(u64::MAX))
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "invalid_max_id",
                "max_id must be a status id.",
            ))
        }
    };
    let cursor = match (q.get("cursor"), max_id) {
        (None, None) => EventId(u64::MAX, 0, 0),
        // A status's event follows its id's time: read from a moment after
        // it (clocks of several processes may disagree that much).
        (None, Some(max)) => match crate::store::plumbing::ids::millis_of(max) {
            Some(ms) => EventId(ms.saturating_add(MAX_ID_SLACK_MS), 0, 0),
            None => EventId(u64::MAX, 0, 0),
        },
        // A cursor is where the page starts; a `max_id` beside it still
        // bounds what it holds.
        (Some(c), _) => EventId::parse(c).ok_or_else(|| {
            ApiError::invalid("invalid_cursor", "cursor must come from next_cursor.")
        })?,
    };
    // Every status: a rule no status can fail (judged one by one, as a
    // replay's rules are: no anchor to look up).
    let reply = Expr::Term(Term::IsReply, 0);
    let every = Expr::Or(vec![reply.clone(), Expr::Not(Box::new(reply))]);
    let mut search = reader_search(&state, &auth, every).await?;
    let bounds = (cursor, EventId::ZERO);
    let (mut shown, mut next, _) = page(&state, &auth, &mut search, bounds, count).await?;
    if let Some(max) = max_id {
        // The statuses read past `max_id` (the slack) are not the page's:
        // read on (a few pages at most) until it is full.
        let below = |s: &crate::store::entities::statuses::Shown| s.0.status.id.get() <= max;
        shown.retain(below);
        for _ in 0..MAX_ID_READS {
            let Some(at) = next.filter(|_| shown.len() < count) else {
                break;
            };
            let left = count - shown.len();
            let (more, after, _) =
                page(&state, &auth, &mut search, (at, EventId::ZERO), left).await?;
            shown.extend(more.into_iter().filter(below));
            next = after;
        }
    }
    Ok(Json(StatusPage {
        statuses: raw_statuses(&shown)?,
        next_cursor: next.map(|id| id.to_string()),
    }))
}

/// One page of `search` over the history below `at` and not below
/// `bottom`: up to `count` statuses the reader may see now (nothing of a
/// user who blocks them or whom they block), newest first; where the next
/// page begins (`None`: nothing older is left); the damaged stretches
/// passed over. A page scans for at most [`SEARCH_TIME`].
async fn page(
    state: &AppState,
    auth: &AuthUser,
    search: &mut Search,
    (mut at, bottom): (EventId, EventId),
    count: usize,
) -> ApiResult<(
    Vec<crate::store::entities::statuses::Shown>,
    Option<EventId>,
    Vec<crate::history::Gap>,
)> {
    let mut found: Vec<(EventId, u64)> = Vec::new();
    let mut next: Option<EventId> = None;
    let mut damaged = Vec::new();
    if let Some(history) = history(state) {
        caught_up(state, history).await?;
        let deadline = Instant::now() + SEARCH_TIME;
        loop {
            let Found {
                statuses,
                cursor,
                done,
                damaged: bad,
            } = search.step(history, at, bottom).await?;
            damaged.extend(bad);
            for (eid, f) in statuses {
                if found.len() == count {
                    break;
                }
                if let Some(sid) = f.status_id() {
                    found.push((eid, sid));
                }
            }
            if found.len() == count {
                // More may follow: the next page begins below the last.
                next = found.last().map(|(eid, _)| *eid);
                break;
            }
            if done {
                break;
            }
            at = cursor;
            if Instant::now() > deadline {
                next = Some(at);
                break;
            }
        }
    }
    let ids: Vec<u64> = found.iter().map(|(_, sid)| *sid).collect();
    let statuses = state.store.statuses().many(&ids).await?;
    let shown = state
        .store
        .statuses()
        .shown(statuses.into_iter().filter_map(|(_, s)| s).collect())
        .await?;
    // Neither a user who blocks the reader nor one the reader blocks.
    let shown = only_visible_hiding(state, Some(auth), shown, crate::hides::BLOCK_EITHER).await?;
    Ok((shown, next, damaged))
}
