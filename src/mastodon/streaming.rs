//! Mastodon's streaming API over our streams: each Mastodon stream is one
//! of ours (`user` and `user:notification` our user stream, `public` and
//! `public:local` our sample at rate 1, every public status, `hashtag` a
//! filter stream with the rule `#tag`, `list` our list stream), opened
//! from inside with the caller's token, so who may read what, replays and
//! limits are judged there, and its events said as Mastodon says them:
//! `update` (a status), `status.update` (an edit), `delete` (the id) and
//! `notification`, with `payload` a JSON string.
//!
//! An event's payload is made once per process and shared by every
//! connection that gets it ([`Payloads`]): it is rendered for no one in
//! particular (the caller's `favourited` and the like are false), as
//! Mastodon's own streaming server sends it. Beyond Mastodon, every SSE
//! message carries our event's `id`, and `Last-Event-ID` (or
//! `last_event_id=`) resumes after it with no gap.

use super::inner::Opened;
use super::render::many;
use super::reply::{error, from_ours, Refused, Reply};
use super::shared::Made;
use super::shared::{Ctx, Mastodon};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::Value;
use std::sync::Arc;

/// The longest line of our stream read (an event is far smaller).
const MOST_LINE: usize = 4 << 20;

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

/// What one line of our stream is to a Mastodon client.
pub(super) enum Step {
    /// A keep-alive (with the position it stands at, if said).
    Keepalive(Option<String>),
    /// An event: our id, and the Mastodon event.
    Event(String, Made),
    /// Nothing for Mastodon.
    Skip,
    /// Our stream ended it.
    End,
}

/// The lines of one of our NDJSON streams.
pub(super) struct Lines {
    body: axum::body::BodyDataStream,
    buf: bytes::BytesMut,
}

impl Lines {
    /// The next line (without its `\n`), `None` when the stream is over.
    pub(super) async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(end) = self.buf.iter().position(|b| *b == b'\n') {
                let line = self.buf.split_to(end + 1).freeze();
                return Some(line.slice(..end));
            }
            if self.buf.len() > MOST_LINE {
                return None;
            }
            let chunk: Bytes = self.body.next().await?.ok()?;
            self.buf.extend_from_slice(&chunk);
        }
    }
}

/// Opens our stream for `wanted` as the request's caller.
pub(super) async fn open(
    m: &Mastodon,
    cx: &Ctx,
    wanted: &Wanted,
    resume: Option<&str>,
) -> Result<Lines, Refused> {
    match m.inner.open(&wanted.ours(resume), &cx.caller).await {
        Opened::Body(body) => Ok(Lines {
            body,
            buf: bytes::BytesMut::new(),
        }),
        Opened::Refused(answer) => Err(from_ours(&answer)),
    }
}

/// One line of our stream as Mastodon's, for `wanted`.
pub(super) async fn step(
    m: &Mastodon,
    reader: &super::inner::Caller,
    base: &str,
    wanted: &Wanted,
    line: &[u8],
) -> Step {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Step::Keepalive(None);
    }
    // Only what names the event is read here (its fields skipped, not
    // built); the whole event is parsed once per process, by the
    // connection that makes its payload while the others wait for it.
    let Ok(head) = serde_json::from_slice::<Head<'_>>(line) else {
        return Step::Skip;
    };
    let (kind, id) = (head.kind.as_ref(), head.id.unwrap_or_default().into_owned());
    match kind {
        "position" => return Step::Keepalive(Some(id)),
        "disconnect" => return Step::End,
        "status" | "update" | "delete" | "notification" => {}
        // A message: the conversation as this reader sees it now (their
        // own unread count, the others in it), made for them alone.
        "direct_message" if wanted.name == "direct" => {
            let event = serde_json::from_slice::<Value>(line).unwrap_or_default();
            let cx = Ctx {
                caller: reader.clone(),
                app_token: None,
                base: base.to_string(),
                path: String::new(),
                params: Vec::new(),
            };
            return match super::render::of_message(m, &cx, &event).await {
                Some(text) => Step::Event(id, ("conversation", Arc::from(text))),
                None => Step::Skip,
            };
        }
        _ => return Step::Skip,
    }
    let note = head.notification.and_then(|n| n.id).unwrap_or_default();
    let cell = m.payloads.cell(format!("{base}|{id}|{kind}|{note}"));
    let made = cell
        .get_or_init(|| async {
            let event = serde_json::from_slice::<Value>(line).unwrap_or_default();
            payload(m, base, kind, &event).await
        })
        .await
        .clone();
    match made {
        Some(made) if wanted.keeps(made.0) => Step::Event(id, made),
        _ => Step::Skip,
    }
}

/// What names one of our events: its type, id and notification's id.
#[derive(serde::Deserialize)]
struct Head<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    id: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    notification: Option<NoteHead<'a>>,
}

/// A notification's id.
#[derive(serde::Deserialize)]
struct NoteHead<'a> {
    #[serde(default, borrow)]
    id: Option<std::borrow::Cow<'a, str>>,
}

/// Our event as Mastodon's (`None`: nothing a Mastodon client is told).
async fn payload(m: &Mastodon, base: &str, kind: &str, event: &Value) -> Option<Made> {
    let cx = Ctx {
        caller: Default::default(),
        app_token: None,
        base: base.to_string(),
        path: String::new(),
        params: Vec::new(),
    };
    let (name, text) = match kind {
        "delete" => ("delete", event["status_id"].as_str()?.to_string()),
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
            (name, made.to_string())
        }
        _ => {
            let made = super::render::made(m, &cx, vec![event["notification"].clone()])
                .await
                .ok()?
                .pop()?;
            ("notification", made.to_string())
        }
    };
    Some((name, Arc::from(text)))
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

/// `GET /api/v1/streaming/<stream>` (SSE): `user`, `user/notification`,
/// `public`, `public/local`, `hashtag?tag=`, `hashtag/local?tag=`,
/// `list?list=`.
pub(super) async fn sse(cx: Ctx, headers: HeaderMap, State(m): State<Mastodon>) -> Reply {
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
    let resume = resume_of(&headers, &cx);
    let lines = open(&m, &cx, &wanted, resume.as_deref()).await?;
    let base = cx.base.clone();
    let reader = cx.caller.clone();
    let events = futures::stream::unfold(
        (lines, m, base, wanted, reader),
        |(mut lines, m, base, wanted, reader)| async move {
            loop {
                let line = lines.next().await?;
                let out = match step(&m, &reader, &base, &wanted, &line).await {
                    Step::Keepalive(None) => Bytes::from_static(b":thump\n\n"),
                    Step::Keepalive(Some(id)) => Bytes::from(format!(":thump\nid: {id}\n\n")),
                    Step::Event(id, (name, payload)) => {
                        let mut out = Vec::with_capacity(payload.len() + id.len() + 32);
                        for part in ["id: ", &id, "\nevent: ", name, "\ndata: ", &payload, "\n\n"] {
                            out.extend_from_slice(part.as_bytes());
                        }
                        Bytes::from(out)
                    }
                    Step::Skip => continue,
                    Step::End => return None,
                };
                return Some((
                    Ok::<_, std::convert::Infallible>(out),
                    (lines, m, base, wanted, reader),
                ));
            }
        },
    );
    let head = futures::stream::once(async { Ok(Bytes::from_static(b":)\n\n")) });
    Ok((
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        Body::from_stream(head.chain(events)),
    )
        .into_response())
}
