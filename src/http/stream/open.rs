//! Opening a stream: what a client asks of one stream (from a query string
//! or a multiplexed socket's `subscribe` message, read into one [`Ask`]),
//! the one parser that turns it into a rule and a replay point, and
//! everything before a plain stream's first byte (authentication, the
//! per-user limit, the subscription). Used by the router's handlers and by
//! the server's raw stream path (`serve.rs`).

use crate::auth::{AuthUser, StreamUser, SCOPE_FIREHOSE};
use crate::error::{ApiError, ApiResult};
use crate::http::shared::extract::client_addr;
use crate::http::shared::rule_items::check_items;
use crate::http::shared::visibility::may_read_group;
use crate::state::AppState;
use crate::stream::feed::{Replay, MAX_COUNT};
use crate::stream::rule_set::{self, RuleSet, MAX_ADHOC_RULES};
use crate::stream::stream_limits::StreamGuard;
use crate::stream::want::{group_stream, list_stream, ListView, Part, Want, MAX_PARTITIONS};
use crate::stream::wire::{Encoder, Transport};
use crate::stream::{EventId, Feed};
use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use firehose_filters::{parse_coords, parse_rate, FilterSpec, ParseError, Rule};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Every public event (scope `firehose`).
    Firehose,
    /// A sample of public statuses.
    Sample,
    /// Public statuses matching follow, track and locations.
    Filter,
    /// What the caller's home timeline gets.
    User,
    /// Public statuses matching the caller's filter rules.
    Search,
    /// A group's statuses.
    Group,
    /// The statuses of a list's members.
    List,
}

impl Kind {
    /// Every stream, in the order error messages list them.
    pub(crate) const ALL: [Kind; 7] = [
        Kind::Filter,
        Kind::User,
        Kind::Sample,
        Kind::Firehose,
        Kind::Search,
        Kind::Group,
        Kind::List,
    ];

    /// Its name (the multiplexed socket's `stream`, the path's last part).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Firehose => "firehose",
            Kind::Sample => "sample",
            Kind::Filter => "filter",
            Kind::User => "user",
            Kind::Search => "search",
            Kind::Group => "group",
            Kind::List => "list",
        }
    }

    /// The scope a token must grant to open it, if any.
    pub(crate) fn scope(self) -> Option<&'static str> {
        match self {
            Kind::Firehose => Some(SCOPE_FIREHOSE),
            _ => None,
        }
    }

    /// The stream named `name`.
    pub(crate) fn named(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The stream served at `path` (not the multiplexed socket's).
    pub(crate) fn at(path: &str) -> Option<Kind> {
        Kind::named(path.strip_prefix("/api/v1/stream/")?)
    }
}

/// What a client asks of one stream, however it was sent.
#[derive(Debug)]
pub(crate) struct Ask {
    /// `follow`: user ids as written.
    pub follow: Vec<String>,
    /// `track`: phrases.
    pub track: Vec<String>,
    /// `locations`: the boxes' corners, four numbers a box (or why they are
    /// not numbers, an error only for a stream that reads them).
    pub locations: Result<Vec<f64>, ParseError>,
    /// `rate`, as written.
    pub rate: Option<String>,
    /// `last_event_id` (or the `Last-Event-ID` header, which wins).
    pub last_event_id: Option<String>,
    /// `count`, as written.
    pub count: Option<String>,
    /// `since` (seconds since the epoch), as written.
    pub since: Option<String>,
    /// Ad-hoc `rules` (a JSON array), or why they are not JSON.
    pub rules: Option<Result<serde_json::Value, String>>,
    /// The group of a group stream (`id` in a URL, `group` in a message).
    pub group: Option<String>,
    /// The list of a list stream (`id` in a URL, `list` in a message).
    pub list: Option<String>,
    /// `partition` (1-based) and `partitions`, as written.
    pub partition: (Option<String>, Option<String>),
}

/// What a stream was asked for, parsed.
pub(crate) struct Asked {
    /// The subscription's name (a group stream's names its group).
    pub name: &'static str,
    /// What it wants.
    pub want: Want,
    /// Where it starts.
    pub replay: Replay,
}

/// 400 when the query names one of `names` more than once: the map the
/// query is read into keeps one value, and which one a client meant is not
/// for the server to guess.
pub(crate) fn once_each(query: Option<&str>, names: &[&'static str]) -> ApiResult<()> {
    for name in names {
        let n = query
            .unwrap_or_default()
            .split('&')
            .filter(|pair| pair.split('=').next() == Some(name))
            .count();
        if n > 1 {
            return Err(ApiError::invalid(
                if *name == "partitions" {
                    "invalid_partitions"
                } else {
                    "invalid_partition"
                },
                format!("{name} is given more than once."),
            ));
        }
    }
    Ok(())
}

impl Ask {
    /// From a stream URL's query string and headers: comma-separated lists.
    pub(crate) fn from_query(q: &HashMap<String, String>, headers: &HeaderMap) -> Ask {
        fn split(s: Option<&String>) -> Vec<String> {
            match s.map(|s| s.trim()) {
                None | Some("") => Vec::new(),
                Some(s) => s.split(',').map(str::to_string).collect(),
            }
        }
        // The header wins: a browser's EventSource sends it, newer than
        // whatever last_event_id the page put in the URL when it first
        // connected.
        let last_event_id = headers
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.trim().is_empty())
            .map(str::to_string)
            .or_else(|| q.get("last_event_id").cloned());
        Ask {
            follow: split(q.get("follow")),
            track: split(q.get("track")),
            locations: parse_coords(q.get("locations").map(String::as_str)),
            rate: q.get("rate").cloned(),
            last_event_id,
            count: q.get("count").cloned(),
            since: q.get("since").cloned(),
            group: q.get("id").cloned(),
            list: q.get("id").cloned(),
            partition: (q.get("partition").cloned(), q.get("partitions").cloned()),
            rules: q
                .get("rules")
                .map(|r| serde_json::from_str(r).map_err(|e| e.to_string())),
        }
    }

    /// The rule and replay point asked for, for `kind` opened by `auth`:
    /// the one parser of both, whether they came in a URL or a message.
    pub(super) async fn resolve(
        &self,
        state: &AppState,
        auth: &AuthUser,
        kind: Kind,
    ) -> ApiResult<Asked> {
        if let Some(scope) = kind.scope() {
            auth.require(scope)?;
        }
        let mut rules = None;
        let mut name = kind.name();
        let mut group = None;
        let mut list = None;
        let rule = match kind {
            Kind::Firehose => Rule::Firehose,
            Kind::Sample => Rule::Sample {
                rate: parse_rate(self.rate.as_deref()).map_err(filter_error)?,
            },
            Kind::Filter => {
                let parts = FilterSpec::from_parts(
                    self.follow.iter().map(String::as_str),
                    self.track.iter().map(String::as_str),
                    self.locations
                        .as_ref()
                        .map_err(|e| filter_error(e.clone()))?,
                );
                if let Some(asked) = &self.rules {
                    rules = Some(Arc::new(adhoc_rules(state, asked).await?));
                }
                Rule::Filter(match parts {
                    Ok(spec) => spec,
                    // Rules alone are a filter too.
                    Err(_)
                        if rules.is_some()
                            && self.follow.is_empty()
                            && self.track.is_empty()
                            && self.locations.as_ref().is_ok_and(Vec::is_empty) =>
                    {
                        FilterSpec::default()
                    }
                    Err(e) => return Err(filter_error(e)),
                })
            }
            Kind::User => Rule::User {
                uid: auth.uid,
                following: state.store.follows().following_ids(auth.uid).await?,
            },
            Kind::Search => {
                rules = Some(Arc::new(rule_set::load(&state.store, auth.uid).await?));
                Rule::Filter(FilterSpec::default())
            }
            Kind::Group => {
                let gid = readable_group(state, auth, self.group.as_deref()).await?;
                name = group_stream(gid);
                group = Some(gid);
                Rule::Filter(FilterSpec::default())
            }
            Kind::List => {
                let view = own_list(state, auth, self.list.as_deref()).await?;
                name = list_stream(view.id);
                list = Some(view);
                Rule::Filter(FilterSpec::default())
            }
        };
        if let Some(set) = &rules {
            if state.hub.rules_filed() + set.exprs().len() > state.cfg.max_stream_rules {
                return Err(ApiError::new(
                    axum::http::StatusCode::SERVICE_UNAVAILABLE,
                    "too_many_rules_here",
                    "This server holds as many filter rules as it may; try again later or elsewhere.",
                )
                .retry_after(30));
            }
        }
        let mut want = match (rules, group, list) {
            (_, _, Some(view)) => Want::list(view),
            (_, Some(gid), None) => Want::group(gid),
            (Some(set), None, None) => Want::rules(rule, set),
            (None, None, None) => Want::rule(rule),
        };
        want.part = self.part(kind)?;
        Ok(Asked {
            name,
            want,
            replay: self.replay()?,
        })
    }

    /// The partition asked for: both `partition` (1 to `partitions`) and
    /// `partitions` (1 to 32), on the firehose, sample and search streams.
    fn part(&self, kind: Kind) -> ApiResult<Option<Part>> {
        let (k, n) = (&self.partition.0, &self.partition.1);
        if k.is_none() && n.is_none() {
            return Ok(None);
        }
        if !matches!(kind, Kind::Firehose | Kind::Sample | Kind::Search) {
            return Err(ApiError::invalid(
                "invalid_partition",
                "partition and partitions apply to the firehose, sample and search streams only.",
            ));
        }
        let of = n
            .as_deref()
            .and_then(|n| n.parse::<u8>().ok())
            .filter(|n| (1..=MAX_PARTITIONS).contains(n))
            .ok_or_else(|| {
                ApiError::invalid(
                    "invalid_partitions",
                    format!("partitions must be a whole number from 1 to {MAX_PARTITIONS}, with partition."),
                )
            })?;
        let index = k
            .as_deref()
            .and_then(|k| k.parse::<u8>().ok())
            .filter(|k| (1..=of).contains(k))
            .ok_or_else(|| {
                ApiError::invalid(
                    "invalid_partition",
                    format!("partition must be a whole number from 1 to partitions ({of})."),
                )
            })?;
        Ok(Some(Part {
            index: index - 1,
            of,
        }))
    }

    /// Where the stream starts: after `last_event_id` (a point this server
    /// cannot place goes live with `resume_gap`, never an error, so an
    /// EventSource keeps reconnecting), else at `since`, else the newest
    /// `count` events.
    fn replay(&self) -> ApiResult<Replay> {
        if let Some(last) = self.last_event_id.as_deref().map(str::trim) {
            if !last.is_empty() {
                return Ok(EventId::parse(last).map_or(Replay::Unservable, Replay::After));
            }
        }
        if let Some(since) = self.since.as_deref().map(str::trim) {
            return match since.parse::<f64>() {
                Ok(t) if (0.0..1e11).contains(&t) => Ok(Replay::Since((t * 1000.0).ceil() as u64)),
                _ => Err(ApiError::invalid(
                    "invalid_since",
                    "since must be a time in seconds since the epoch.",
                )),
            };
        }
        match self.count.as_deref().map(str::trim) {
            None => Ok(Replay::None),
            Some(c) => match c.parse::<usize>() {
                Ok(0) => Ok(Replay::None),
                Ok(n) if n <= MAX_COUNT => Ok(Replay::Newest(n)),
                _ => Err(ApiError::invalid(
                    "invalid_count",
                    format!("count must be a whole number from 0 to {MAX_COUNT}."),
                )),
            },
        }
    }
}

/// A filter stream's ad-hoc `rules`: a JSON array of 1 to
/// [`MAX_ADHOC_RULES`] items, each `{value, tag?}` or a string; their ids
/// are their positions.
async fn adhoc_rules(
    state: &AppState,
    asked: &Result<serde_json::Value, String>,
) -> ApiResult<RuleSet> {
    let shape = || {
        ApiError::invalid(
            "invalid_rule",
            format!(
                "rules must be a JSON array of 1 to {MAX_ADHOC_RULES} rules, each {{\"value\", \"tag\"}} or a string."
            ),
        )
    };
    let items = match asked {
        Ok(serde_json::Value::Array(items))
            if !items.is_empty() && items.len() <= MAX_ADHOC_RULES =>
        {
            items
        }
        _ => return Err(shape()),
    };
    let checked = check_items(state, "rules", items, true).await?;
    Ok(RuleSet::new(
        checked
            .into_iter()
            .enumerate()
            .map(|(i, c)| (c.expr, i.to_string(), c.tag))
            .collect(),
        None,
    ))
}

/// The group a group stream names, if `auth` may read it: 400 without
/// one, 404 for one that does not exist or that they may not read.
pub(crate) async fn readable_group(
    state: &AppState,
    auth: &AuthUser,
    raw: Option<&str>,
) -> ApiResult<u64> {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Err(ApiError::invalid(
            "invalid_group",
            "Name the group: id=<group id> (group on a WebSocket).",
        ));
    };
    let gid = crate::http::shared::extract::path_id(raw, "group")?;
    match may_read_group(state, Some(auth), gid).await? {
        Some(true) => Ok(gid),
        _ => Err(ApiError::not_found("No such group.")),
    }
}

/// The caller's list a list stream names, with its members and whom the
/// caller follows: 400 without one, 404 for one that is not theirs.
async fn own_list(state: &AppState, auth: &AuthUser, raw: Option<&str>) -> ApiResult<ListView> {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Err(ApiError::invalid(
            "invalid_list",
            "Name the list: id=<list id> (list on a WebSocket).",
        ));
    };
    let lid = crate::http::shared::extract::path_id(raw, "list")?;
    let members = state.store.lists().members(auth.uid, lid).await?;
    let following = state.store.follows().following_ids(auth.uid).await?;
    Ok(ListView {
        id: lid,
        owner: auth.uid,
        version: members.version,
        members: members.ids.into_iter().collect(),
        following: following.into_iter().collect(),
    })
}

/// After subscribing to a group or list: whether the reader may still read
/// it (a leave or delete that raced the subscription is caught here, or by
/// the hub).
pub(crate) async fn still_reads(state: &AppState, auth: &AuthUser, want: &Want) -> ApiResult<bool> {
    if let Some(view) = &want.list {
        return match state.store.lists().get(auth.uid, view.id).await {
            Ok(_) => Ok(true),
            Err(crate::store::StoreError::NotFound(_)) => Ok(false),
            Err(e) => Err(e.into()),
        };
    }
    match want.group {
        Some(gid) => Ok(may_read_group(state, Some(auth), gid).await? == Some(true)),
        None => Ok(true),
    }
}

/// A filter parameter refused, in the contract's shape.
pub(crate) fn filter_error(e: ParseError) -> ApiError {
    ApiError::invalid("invalid_filter", e.to_string())
}

/// A stream request accepted: its feed (already subscribed, replay queued)
/// and its slot in the per-user limit.
pub(crate) struct Opened {
    /// The connection's feed.
    pub feed: Feed,
    /// Released when the stream ends.
    pub guard: StreamGuard,
    /// Who opened it (a WebSocket keeps it, to refresh its token).
    pub auth: AuthUser,
}

/// Whether `compress` asks for zstd (a WebSocket's events as zstd frames;
/// a plain stream's coding is its `Accept-Encoding`'s); another value: 400.
pub(crate) fn zstd_asked(compress: Option<&str>) -> ApiResult<bool> {
    match compress {
        None => Ok(false),
        Some("zstd") => Ok(true),
        Some(_) => Err(ApiError::invalid(
            "invalid_compress",
            "compress must be zstd (or left out).",
        )),
    }
}

/// Whether the request asks to upgrade to WebSocket.
pub(crate) fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// The plain stream a GET asks for: NDJSON by `Accept`, else SSE; gzipped
/// or zstd-coded as `Accept-Encoding` asks.
pub(crate) fn plain_encoder(headers: &HeaderMap, max_zstd: usize) -> Encoder {
    let accepted: Vec<&str> = headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let (coding, fallback) = crate::stream::coding::plain_coding(&accepted);
    Encoder::plain(plain_transport(headers), coding, max_zstd, fallback)
}

/// The plain transport a GET asks for: NDJSON by `Accept`, else SSE.
fn plain_transport(headers: &HeaderMap) -> Transport {
    let ndjson = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/x-ndjson"));
    if ndjson {
        Transport::Ndjson
    } else {
        Transport::Sse
    }
}

/// Authenticates, parses the filter and resume parameters, takes a stream
/// slot and subscribes: everything before the first byte of the response.
pub(crate) async fn prepare(
    state: &AppState,
    parts: &mut Parts,
    kind: Kind,
    transport: Transport,
) -> ApiResult<Opened> {
    let StreamUser(auth) = StreamUser::from_request_parts(parts, state).await?;
    state.rate.stream_connect(client_addr(parts)).await?;
    let Query(q): Query<HashMap<String, String>> = Query::try_from_uri(&parts.uri)
        .map_err(|_| ApiError::invalid("invalid_query", "The query string is malformed."))?;
    zstd_asked(q.get("compress").map(String::as_str))?;
    once_each(parts.uri.query(), &["partition", "partitions"])?;
    let asked = Ask::from_query(&q, &parts.headers)
        .resolve(state, &auth, kind)
        .await?;
    let name = asked.name;
    let guard = state
        .limits
        .acquire(
            auth.uid,
            state.max_streams(auth.uid),
            kind.name(),
            transport.name(),
        )
        .await?;
    let mut feed = new_feed(state, &auth);
    let want = asked.want.clone();
    feed.subscribe(name, asked.want, asked.replay).await?;
    if !still_reads(state, &auth, &want).await? {
        let what = if want.list.is_some() { "list" } else { "group" };
        return Err(ApiError::not_found(format!("No such {what}.")));
    }
    tracing::info!(
        uid = auth.uid,
        stream = kind.name(),
        group = want.group,
        transport = transport.name(),
        "stream opened"
    );
    Ok(Opened { feed, guard, auth })
}

/// For a plain (non-WebSocket) GET of a stream path: the opened stream and
/// its encoder. `None` when the request is not one. Used by the server's
/// raw stream path, which writes the response itself.
pub(crate) async fn open_plain(
    state: &AppState,
    parts: &mut Parts,
) -> Option<ApiResult<(Opened, Encoder)>> {
    let kind = Kind::at(parts.uri.path())?;
    if parts.method != axum::http::Method::GET || is_upgrade(&parts.headers) {
        return None;
    }
    let mut encoder = plain_encoder(&parts.headers, state.cfg.max_zstd_streams);
    encoder.allow_origin(
        crate::http::shared::cors::allow(
            &state.cfg.cors_origins,
            parts.headers.get(header::ORIGIN),
        )
        .and_then(|v| v.to_str().ok().map(str::to_string)),
    );
    Some(
        prepare(state, parts, kind, encoder.transport())
            .await
            .map(|o| (o, encoder)),
    )
}

/// A feed for a new connection of `auth`'s session.
pub(crate) fn new_feed(state: &AppState, auth: &AuthUser) -> Feed {
    let mut feed = Feed::new(
        state.hub.clone(),
        state.history.clone(),
        auth.uid,
        auth.sid.clone(),
        auth.expires,
        state.cfg.stream_queue,
        state.shutdown.clone(),
    );
    feed.spread_reconnects(Duration::from_secs_f64(
        state.cfg.reconnect_spread.clamp(0.0, 3600.0),
    ));
    feed
}

/// The keep-alive period (and WebSocket ping period).
pub(crate) fn keepalive(state: &AppState) -> Duration {
    state.cfg.keepalive()
}
