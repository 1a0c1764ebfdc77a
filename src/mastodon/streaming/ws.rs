//! Mastodon's streaming WebSocket (`/api/v1/streaming`): the token as
//! `access_token=` or the `Sec-WebSocket-Protocol`, a first stream from
//! `stream=` (with `tag=` or `list=`), then `{"type":"subscribe"|
//! "unsubscribe","stream":..,"tag"|"list":..}` messages; each event a text
//! message `{"stream":[..],"event":..,"payload":"<JSON text>"}`.
//!
//! Each subscription is one of our streams ([`super`]), read by
//! a task of its own into the socket's queue; at most
//! [`MOST_SUBSCRIPTIONS`] a socket (each also counts toward the caller's
//! streams, as any of ours does). Pings go out every 15 s; a socket that
//! answers none in 45 s, or whose writes stay blocked 10 s, is closed.

use super::{open, resume_of, step, Step, Wanted};
use crate::mastodon::reply::{error, Reply};
use crate::mastodon::shared::{Ctx, Mastodon};
use crate::stream::wire::Transport;
use crate::stream::ws_codec::{self, close, op, Handshake, Message, Reader};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::IntoResponse;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Streams one socket may subscribe at once.
pub(super) const MOST_SUBSCRIPTIONS: usize = 16;

/// Messages queued for a socket; a subscription that finds the queue full
/// waits (its stream of ours then backs up, as a slow reader's does).
const QUEUE: usize = 256;

/// The largest message a client may send.
const MOST_MESSAGE: usize = 64 << 10;

const PING_EVERY: Duration = Duration::from_secs(15);
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// `GET /api/v1/streaming` upgraded to a WebSocket.
pub(crate) async fn socket(cx: Ctx, State(m): State<Mastodon>, mut req: Request<Body>) -> Reply {
    let handshake =
        Handshake::read(req.headers()).map_err(|why| error(StatusCode::BAD_REQUEST, why))?;
    // The token may come as the subprotocol (browsers cannot set headers).
    let protocol = req
        .headers()
        .get("sec-websocket-protocol")
        .and_then(|v| v.to_str().ok())
        .map(|p| p.split(',').next().unwrap_or_default().trim().to_string())
        .filter(|p| !p.is_empty());
    let mut cx = cx;
    if cx.caller.token.is_none() {
        cx.caller.token = protocol.clone();
    }
    let Some(token) = cx.caller.token.clone() else {
        return Err(error(StatusCode::UNAUTHORIZED, "Missing access token"));
    };
    if crate::auth::AuthUser::from_token(&m.app, &token)
        .await
        .is_err()
    {
        return Err(error(StatusCode::UNAUTHORIZED, "Invalid access token"));
    }
    let first = match cx.param("stream") {
        Some(name) => Some(
            Wanted::parse(name, cx.param("tag"), cx.param("list"))
                .map_err(|why| error(StatusCode::BAD_REQUEST, why))?,
        ),
        None => None,
    };
    let resume = resume_of(req.headers(), &cx);
    let on_upgrade = hyper::upgrade::on(&mut req);
    let mut res = StatusCode::SWITCHING_PROTOCOLS.into_response();
    let mut handshake = handshake;
    handshake.deflate = false;
    for (name, value) in handshake.headers() {
        if let Ok(value) = value.parse() {
            res.headers_mut().insert(name, value);
        }
    }
    if let Some(p) = protocol.and_then(|p| HeaderValue::from_str(&p).ok()) {
        res.headers_mut().insert("sec-websocket-protocol", p);
    }
    tokio::spawn(async move {
        if let Ok(upgraded) = on_upgrade.await {
            let io = hyper_util::rt::TokioIo::new(upgraded);
            run(io, m, cx, first, resume).await;
        }
    });
    Ok(res)
}

/// The subscriptions of one socket.
struct Subscriptions {
    tasks: HashMap<Wanted, JoinHandle<()>>,
    queue: mpsc::Sender<Vec<u8>>,
}

impl Subscriptions {
    /// Subscribes `wanted` (again: nothing new), resuming after `resume`.
    async fn add(&mut self, m: &Mastodon, cx: &Ctx, wanted: Wanted, resume: Option<&str>) {
        if self.tasks.contains_key(&wanted) {
            return;
        }
        if self.tasks.len() >= MOST_SUBSCRIPTIONS {
            let _ = self.queue.try_send(text(&json!({"error": format!("At most {MOST_SUBSCRIPTIONS} streams a socket"), "status": 400})));
            return;
        }
        let Ok(mut stream) = open(m, cx, &wanted, resume, Transport::WebSocket).await else {
            let _ = self.queue.try_send(text(
                &json!({"error": "This stream cannot be read", "status": 404}),
            ));
            return;
        };
        let (m2, base, queue, w) = (
            m.clone(),
            cx.base.clone(),
            self.queue.clone(),
            wanted.clone(),
        );
        let reader = cx.caller.clone();
        let task = tokio::spawn(async move {
            while let Some(out) = stream.next().await {
                match step(&m2, &reader, &base, &w, &out).await {
                    Step::Event(said) => {
                        let msg = json!({"stream": w.label(), "event": said.name, "payload": &*said.payload});
                        if queue.send(text(&msg)).await.is_err() {
                            return;
                        }
                    }
                    Step::End => return,
                    Step::Keepalive(_) | Step::Skip => {}
                }
            }
        });
        self.tasks.insert(wanted, task);
    }

    fn remove(&mut self, wanted: &Wanted) {
        if let Some(task) = self.tasks.remove(wanted) {
            task.abort();
        }
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        for task in self.tasks.values() {
            task.abort();
        }
    }
}

/// A text frame of `msg`.
fn text(msg: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    ws_codec::frame(op::TEXT, msg.to_string().as_bytes(), &mut out);
    out
}

/// Writes `bytes`, `false` when the peer is gone or stopped reading.
async fn write<S: AsyncWriteExt + Unpin>(io: &mut S, bytes: &[u8]) -> bool {
    matches!(
        tokio::time::timeout(WRITE_TIMEOUT, io.write_all(bytes)).await,
        Ok(Ok(()))
    )
}

/// A control message's stream (`None`: not one).
fn wanted_of(msg: &Value) -> Option<Result<Wanted, &'static str>> {
    let name = msg["stream"].as_str()?;
    Some(Wanted::parse(
        name,
        msg["tag"].as_str(),
        msg["list"].as_str(),
    ))
}

/// Serves the socket until the client leaves or breaks the protocol.
async fn run<S>(mut io: S, m: Mastodon, cx: Ctx, first: Option<Wanted>, resume: Option<String>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(QUEUE);
    let mut subs = Subscriptions {
        tasks: HashMap::new(),
        queue: tx,
    };
    if let Some(first) = first {
        subs.add(&m, &cx, first, resume.as_deref()).await;
    }
    let mut reader = Reader::new(false, MOST_MESSAGE);
    let mut buf = vec![0u8; 4096];
    let mut ping = tokio::time::interval(PING_EVERY);
    let mut last_heard = Instant::now();
    let closing: (u16, &str) = 'run: loop {
        tokio::select! {
            read = io.read(&mut buf) => {
                let n = match read {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                last_heard = Instant::now();
                reader.push(&buf[..n]);
                loop {
                    let msg = match reader.next_message() {
                        Ok(Some(msg)) => msg,
                        Ok(None) => break,
                        Err(e) => break 'run (e.code, e.reason),
                    };
                    match msg {
                        Message::Ping(payload) => {
                            let mut out = Vec::new();
                            ws_codec::frame(op::PONG, &payload, &mut out);
                            if !write(&mut io, &out).await {
                                return;
                            }
                        }
                        Message::Close(_) => break 'run (close::NORMAL, ""),
                        Message::Text(t) => {
                            let msg: Value = serde_json::from_str(&t).unwrap_or(Value::Null);
                            let kind = msg["type"].as_str().unwrap_or_default();
                            match (kind, wanted_of(&msg)) {
                                ("subscribe", Some(Ok(w))) => subs.add(&m, &cx, w, None).await,
                                ("unsubscribe", Some(Ok(w))) => subs.remove(&w),
                                (_, Some(Err(why))) => {
                                    let _ = subs.queue.try_send(text(&json!({"error": why, "status": 400})));
                                }
                                _ => {
                                    let _ = subs.queue.try_send(text(&json!({"error": "Unknown message", "status": 400})));
                                }
                            }
                        }
                        Message::Pong | Message::Binary => {}
                    }
                }
            }
            Some(out) = rx.recv() => {
                if !write(&mut io, &out).await {
                    return;
                }
            }
            _ = ping.tick() => {
                if last_heard.elapsed() > PING_EVERY * 3 {
                    return;
                }
                let mut out = Vec::new();
                ws_codec::frame(op::PING, b"", &mut out);
                if !write(&mut io, &out).await {
                    return;
                }
            }
        }
    };
    let mut out = Vec::new();
    ws_codec::close_frame(closing.0, closing.1, &mut out);
    let _ = write(&mut io, &out).await;
}
