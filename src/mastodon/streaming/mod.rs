//! Mastodon's streaming API over our streams: each Mastodon stream is one
//! of ours (`user` and `user:notification` our user stream, `public` and
//! `public:local` our sample at rate 1, every public status, `hashtag` a
//! filter stream with the rule `#tag`, `list` our list stream), opened by
//! the code that opens ours (`prepare`, with the caller's token), so who
//! may read what, replays and limits are judged there; its feed is read
//! here and its events said as Mastodon says them:
//! `update` (a status), `status.update` (an edit), `delete` (the id) and
//! `notification`, with `payload` a JSON string.
//!
//! An event's payload is made once per process and shared by every
//! connection that gets it (kept on the event, `Frame::translated`; the
//! statuses of a catch-up made together, [`make_ahead`]): rendered for no one in
//! particular (the caller's `favourited` and the like are false), as
//! Mastodon's own streaming server sends it. Beyond Mastodon, every SSE
//! message carries our event's `id`, and `Last-Event-ID` (or
//! `last_event_id=`) resumes after it with no gap.

pub(super) mod raw;
pub(super) mod ws;

use super::inner::Answer;
use super::render::many;
use super::reply::{error, from_ours, Refused, Reply};
use super::shared::{Ctx, Mastodon, Said};
use crate::http::stream::open::{prepare, Kind};
use crate::model::Event;
use crate::stream::stream_limits::StreamGuard;
use crate::stream::wire::Transport;
use crate::stream::{Feed, Frame, Out};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::Value;
use std::any::Any;
use std::sync::Arc;

/// Most items of our stream written to a client at once.
const MOST_AT_ONCE: usize = 256;

/// A Mastodon stream: its name and its tag or list.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Wanted {
    pub(super) name: &'static str,
    pub(super) arg: Option<String>,
}

/// The stream names served (`public:remote` and the media streams are
/// not: no remote or media statuses here).
const NAMES: [&str; 8] = [
    "direct",
    "user",
    "user:notification",
    "public",
    "public:local",
    "hashtag",
    "hashtag:local",
    "list",
];

impl Wanted {
    /// The stream `name` (with its `tag` or `list`), or why not.
    pub(super) fn parse(
        name: &str,
        tag: Option<&str>,
        list: Option<&str>,
    ) -> Result<Wanted, &'static str> {
        let name = NAMES
            .iter()
            .find(|n| **n == name)
            .ok_or("Unknown stream type")?;
        let arg = match *name {
            "hashtag" | "hashtag:local" => {
                let tag = tag.unwrap_or_default().trim_start_matches('#');
                let ok = !tag.is_empty()
                    && tag.chars().count() <= 100
                    && tag.chars().all(|c| c.is_alphanumeric() || c == '_');
                if !ok {
                    return Err("No tag for stream provided");
                }
                Some(tag.to_string())
            }
            "list" => {
                let list = list.unwrap_or_default();
                if list.is_empty() || list.len() > 20 || !list.bytes().all(|b| b.is_ascii_digit()) {
                    return Err("No list for stream provided");
                }
                Some(list.to_string())
            }
            _ => None,
        };
        Ok(Wanted { name, arg })
    }

    /// Our stream's path and query, resuming after `resume` if given.
    fn ours(&self, resume: Option<&str>) -> String {
        let mut path = match (self.name, &self.arg) {
            ("hashtag" | "hashtag:local", Some(tag)) => {
                let rules = serde_json::json!([format!("#{tag}")]).to_string();
                format!(
                    "/api/v1/stream/filter?{}",
                    serde_urlencoded::to_string([("rules", rules)]).unwrap_or_default()
                )
            }
            ("list", Some(list)) => format!("/api/v1/stream/list?id={list}"),
            ("public" | "public:local", _) => "/api/v1/stream/sample?rate=1".to_string(),
            _ => "/api/v1/stream/user".to_string(),
        };
        if let Some(at) = resume.filter(|r| !r.is_empty()) {
            path.push(if path.contains('?') { '&' } else { '?' });
            path.push_str(
                &serde_urlencoded::to_string([("last_event_id", at)]).unwrap_or_default(),
            );
        }
        path
    }

    /// Whether the stream carries events of Mastodon's kind `event`.
    fn keeps(&self, event: &str) -> bool {
        match self.name {
            "user" => true,
            "user:notification" => event == "notification",
            "direct" => event == "conversation",
            _ => event != "notification",
        }
    }

    /// The stream as a WebSocket message names it (`["hashtag", "rust"]`).
    pub(super) fn label(&self) -> Value {
        match &self.arg {
            Some(arg) => serde_json::json!([self.name, arg]),
            None => serde_json::json!([self.name]),
        }
    }
}

/// What one thing our stream hands out is to a Mastodon client.
pub(super) enum Step {
    /// A keep-alive (with the position it stands at, if said).
    Keepalive(Option<String>),
    /// An event, as Mastodon says it.
    Event(Said),
    /// Nothing for Mastodon.
    Skip,
    /// Our stream ended it.
    End,
}

/// One of our streams, opened for a Mastodon client: the connection's
/// feed from the hub, and its place among the caller's streams.
pub(super) struct Stream {
    feed: Feed,
    _slot: StreamGuard,
}

impl Stream {
    /// What comes next; `None` once the stream has ended.
    pub(super) async fn next(&mut self) -> Option<Out> {
        self.feed.next().await
    }

    /// What is ready now, if anything (to write several at once).
    pub(super) fn try_next(&mut self) -> Option<Out> {
        self.feed.try_next()
    }
}

/// Opens our stream for `wanted` as the request's caller: the request our
/// API would get, judged by the same code (`prepare`: the token, the
/// stream and connect limits, what the stream may carry), handing its
/// feed here rather than to one of our encoders.
pub(super) async fn open(
    m: &Mastodon,
    cx: &Ctx,
    wanted: &Wanted,
    resume: Option<&str>,
    transport: Transport,
) -> Result<Stream, Refused> {
    let mut req = Request::builder().uri(wanted.ours(resume));
    if let Some(token) = &cx.caller.token {
        if let Ok(v) = HeaderValue::from_str(&format!("Bearer {token}")) {
            req = req.header(header::AUTHORIZATION, v);
        }
    }
    let unknown = || error(StatusCode::NOT_FOUND, "Unknown stream type");
    let (mut parts, ()) = req.body(()).map_err(|_| unknown())?.into_parts();
    if let Some(client) = cx.caller.client {
        parts.extensions.insert(client);
    }
    let kind = Kind::at(parts.uri.path()).ok_or_else(unknown)?;
    match prepare(&m.app, &mut parts, kind, transport).await {
        Ok(opened) => Ok(Stream {
            feed: opened.feed,
            _slot: opened.guard,
        }),
        Err(e) => Err(from_ours(&Answer {
            status: e.status,
            body: e.body(),
        })),
    }
}

/// What our stream handed out, as Mastodon's, for `wanted`.
pub(super) async fn step(
    m: &Mastodon,
    reader: &super::inner::Caller,
    base: &str,
    wanted: &Wanted,
    out: &Out,
) -> Step {
    let frame = match out {
        Out::Event(frame, _) => frame,
        Out::Keepalive(at) => return Step::Keepalive(at.map(|at| at.to_string())),
        Out::Control(control) if control.kind == "disconnect" => return Step::End,
        Out::Control(_) | Out::Raw(_) => return Step::Skip,
    };
    let kind = match &frame.event {
        Event::Status { .. } => "status",
        Event::Update { .. } => "update",
        Event::Delete { .. } => "delete",
        Event::Notification { .. } => "notification",
        // A message: the conversation as this reader sees it now (their
        // own unread count, the others in it), made for them alone.
        Event::DirectMessage { .. } if wanted.name == "direct" => {
            let event = serde_json::from_slice::<Value>(&frame.json).unwrap_or_default();
            let cx = Ctx::inside(reader.clone(), base);
            return match super::render::of_message(m, &cx, &event).await {
                Some(text) => Step::Event(Said::new(&frame.id.to_string(), "conversation", text)),
                None => Step::Skip,
            };
        }
        _ => return Step::Skip,
    };
    match shared(m, base, kind, frame).await {
        Some(said) if wanted.keeps(said.name) => Step::Event(said),
        _ => Step::Skip,
    }
}

/// An event as Mastodon says it, made by the first connection that needs
/// it while the others wait, for every connection of the process.
struct Translated {
    /// The URL base its payload names.
    base: String,
    said: Option<Said>,
}

/// `frame` as Mastodon's, for connections that reach us at `base`.
async fn shared(m: &Mastodon, base: &str, kind: &str, frame: &Frame) -> Option<Said> {
    let make = || async {
        let event = serde_json::from_slice::<Value>(&frame.json).unwrap_or_default();
        payload(m, base, kind, &event)
            .await
            .map(|(name, text)| Said::new(&frame.id.to_string(), name, text))
    };
    let kept = frame
        .translated
        .get_or_init(|| async {
            let said = make().await;
            let base = base.to_string();
            Arc::new(Translated { base, said }) as Arc<dyn Any + Send + Sync>
        })
        .await;
    if let Some(kept) = kept.downcast_ref::<Translated>() {
        if kept.base == base {
            return kept.said.clone();
        }
    }
    m.payloads
        .cell(format!("{base}|{}|{kind}", frame.id))
        .get_or_init(make)
        .await
        .clone()
}

/// Statuses made at once by [`make_ahead`]: their authors, originals and
/// mentions read together (well within what one rendering reads).
const MADE_TOGETHER: usize = 32;

/// Makes the payloads of the statuses among `items` that are this
/// connection's alone, [`MADE_TOGETHER`] at a time: a catch-up reads their
/// people in one round, not one round an event.
pub(super) async fn make_ahead(m: &Mastodon, base: &str, items: &[Out]) {
    let own: Vec<&Arc<Frame>> = items
        .iter()
        .filter_map(|item| match item {
            // Only an event no other connection holds (a replay's, read
            // for this one): a live event is made once, by whichever of
            // its connections comes first, while the others wait (or by
            // the hub's translator before it is routed, `raw`).
            Out::Event(f, _)
                if Arc::strong_count(f) == 1 && Arc::strong_count(&f.translated) == 1 =>
            {
                Some(f)
            }
            _ => None,
        })
        .collect();
    if own.len() > 1 {
        make_together(m, base, &own).await;
    }
}

/// Makes the payloads of the statuses, edits and deletes among `frames`
/// not made yet, [`MADE_TOGETHER`] statuses at a time, for `base`.
pub(super) async fn make_together(m: &Mastodon, base: &str, frames: &[&Arc<Frame>]) {
    let keep = |frame: &Frame, said: Option<Said>| {
        let base = base.to_string();
        // Made meanwhile by a connection: that one stands.
        let _ = frame
            .translated
            .set(Arc::new(Translated { base, said }) as Arc<dyn Any + Send + Sync>);
    };
    let mut fresh = Vec::new();
    for frame in frames.iter().filter(|f| f.translated.get().is_none()) {
        match &frame.event {
            Event::Status { status, .. } => fresh.push((*frame, status.id.get(), "update")),
            Event::Update { status, .. } => fresh.push((*frame, status.id.get(), "status.update")),
            Event::Delete { status_id, .. } => {
                let id = frame.id.to_string();
                keep(frame, Some(Said::new(&id, "delete", status_id.to_string())));
            }
            _ => {}
        }
    }
    let cx = Ctx::inside(Default::default(), base);
    for together in fresh.chunks(MADE_TOGETHER) {
        let statuses = together
            .iter()
            .map(|(f, ..)| {
                serde_json::from_slice::<Value>(&f.json)
                    .map(|event| event["status"].clone())
                    .unwrap_or_default()
            })
            .collect();
        let Ok(made) = many(m, &cx, statuses).await else {
            return;
        };
        let by_id: std::collections::HashMap<u64, &Value> = made
            .iter()
            .filter_map(|s| Some((s["id"].as_str()?.parse().ok()?, s)))
            .collect();
        for (frame, id, name) in together {
            let said = by_id
                .get(id)
                .map(|s| Said::new(&frame.id.to_string(), name, s.to_string()));
            keep(frame, said);
        }
    }
}

/// Our event as Mastodon's name and payload (`None`: nothing a Mastodon
/// client is told).
async fn payload(
    m: &Mastodon,
    base: &str,
    kind: &str,
    event: &Value,
) -> Option<(&'static str, String)> {
    let cx = Ctx::inside(Default::default(), base);
    match kind {
        "delete" => Some(("delete", event["status_id"].as_str()?.to_string())),
        "status" | "update" => {
            let made = many(m, &cx, vec![event["status"].clone()])
                .await
                .ok()?
                .pop()?;
            let name = if kind == "status" {
                "update"
            } else {
                "status.update"
            };
            Some((name, made.to_string()))
        }
        _ => {
            let made = super::render::made(m, &cx, vec![event["notification"].clone()])
                .await
                .ok()?
                .pop()?;
            Some(("notification", made.to_string()))
        }
    }
}

/// The resume point a request names: `Last-Event-ID`, else
/// `last_event_id=`.
pub(super) fn resume_of(headers: &HeaderMap, cx: &Ctx) -> Option<String> {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| cx.param("last_event_id").map(str::to_string))
}

/// `GET /api/v1/streaming/health`.
pub(super) async fn health() -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "OK").into_response()
}

/// An SSE stream opened for a Mastodon client: our stream, and what it
/// is to them.
pub(super) struct Live {
    pub(super) stream: Stream,
    pub(super) wanted: Wanted,
    pub(super) reader: super::inner::Caller,
    pub(super) base: String,
    /// Events appended by [`Live::say`] and not yet counted as sent.
    appended: u64,
}

/// Opens the SSE stream a request names (`/api/v1/streaming/<stream>`,
/// its `tag` or `list`, the caller's token, `Last-Event-ID`).
pub(super) async fn open_sse(m: &Mastodon, cx: &Ctx, headers: &HeaderMap) -> Result<Live, Refused> {
    let name = cx
        .path
        .strip_prefix("/api/v1/streaming/")
        .unwrap_or_default()
        .replace('/', ":");
    let wanted = Wanted::parse(&name, cx.param("tag"), cx.param("list"))
        .map_err(|why| error(StatusCode::NOT_FOUND, why))?;
    if cx.caller.token.is_none() {
        return Err(error(StatusCode::UNAUTHORIZED, "Missing access token"));
    }
    let resume = resume_of(headers, cx);
    let stream = open(m, cx, &wanted, resume.as_deref(), Transport::Sse).await?;
    Ok(Live {
        stream,
        wanted,
        reader: cx.caller.clone(),
        base: cx.base.clone(),
        appended: 0,
    })
}

/// The first bytes of an SSE body (a comment: the stream is open).
pub(super) const SSE_START: &[u8] = b":)\n\n";

impl Live {
    /// Waits for what comes next and appends, as SSE, it and whatever else
    /// is ready; `false` once the stream has ended (what ended it
    /// appended).
    pub(super) async fn next_sse(&mut self, m: &Mastodon, out: &mut Vec<u8>) -> bool {
        loop {
            let Some(first) = self.stream.next().await else {
                return false;
            };
            if !self.say(m, first, out).await {
                return false;
            }
            if !out.is_empty() {
                return true;
            }
        }
    }

    /// Appends `first` and whatever else is ready (a catch-up, a burst: its
    /// statuses made together) as SSE; `false` if the stream ended there.
    pub(super) async fn say(&mut self, m: &Mastodon, first: Out, out: &mut Vec<u8>) -> bool {
        let mut items = vec![first];
        while items.len() < MOST_AT_ONCE {
            let Some(item) = self.stream.try_next() else {
                break;
            };
            items.push(item);
        }
        make_ahead(m, &self.base, &items).await;
        for item in &items {
            match step(m, &self.reader, &self.base, &self.wanted, item).await {
                Step::Keepalive(None) => out.extend_from_slice(b":thump\n\n"),
                Step::Keepalive(Some(id)) => {
                    out.extend_from_slice(format!(":thump\nid: {id}\n\n").as_bytes())
                }
                Step::Event(said) => {
                    out.extend_from_slice(&said.sse);
                    self.appended += 1;
                }
                Step::Skip => {}
                Step::End => return false,
            }
        }
        true
    }

    /// What was appended went out: its events counted as sent (the hub
    /// counts those it writes itself).
    pub(super) fn sent(&mut self) {
        let metrics = crate::metrics::global();
        crate::metrics::inc(&metrics.events_sent, std::mem::take(&mut self.appended));
    }
}

/// `GET /api/v1/streaming/<stream>` (SSE): `user`, `user/notification`,
/// `public`, `public/local`, `hashtag?tag=`, `hashtag/local?tag=`,
/// `list?list=`. Served here when the request came on a connection hyper
/// already serves; a connection's first request is served on the raw
/// socket ([`raw`]).
pub(super) async fn sse(cx: Ctx, headers: HeaderMap, State(m): State<Mastodon>) -> Reply {
    let live = open_sse(&m, &cx, &headers).await?;
    let events = futures::stream::unfold((Some(live), m), |(live, m)| async move {
        let mut live = live?;
        let mut out = Vec::new();
        let more = live.next_sse(&m, &mut out).await;
        live.sent();
        let state = (more.then_some(live), m);
        Some((Ok::<_, std::convert::Infallible>(Bytes::from(out)), state))
    });
    let head = futures::stream::once(async { Ok(Bytes::from_static(SSE_START)) });
    Ok((
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        Body::from_stream(head.chain(events)),
    )
        .into_response())
}
