//! The Mastodon SSE streams on the raw socket, as ours are served
//! (`serve::raw`): a connection's first request for
//! `/api/v1/streaming/<stream>` is answered here, not by hyper, and once
//! the stream is live the hub writes each event's Mastodon message into
//! the socket itself ([`stream::direct`](crate::stream::direct)), from the payload made before the
//! event was routed ([`Opener`] is the hub's `Translator` while such a
//! stream is open). The stream's task writes the rest: the head, the
//! replay, what the hub could not judge (a notification, a message, an edit
//! seen as a new status) or could not write, and the end.
//!
//! The body ends with the connection (`Connection: close`), as an HTTP/1.0
//! body does; the same request on a connection hyper already serves is
//! answered through it ([`super::sse`]).

use super::{open_sse, Live, Translated, SSE_START};
use crate::mastodon::reply::Refused;
use crate::mastodon::shared::{Ctx, Mastodon};
use crate::serve::{RawOpener, RawServe};
use crate::stream::direct::SharedTcp;
use crate::stream::translate::{self, Pick, Picked, Translator};
use crate::stream::{wire, Frame};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, Method};
use axum::response::IntoResponse;
use futures::future::BoxFuture;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// The most bytes of a refusal's body written.
const MOST_REFUSAL: usize = 64 << 10;

/// Opens the Mastodon listener's SSE streams on the raw socket, and makes
/// the payloads of the events before the hub routes them while one is open.
pub(crate) struct Opener {
    m: Mastodon,
    /// The URL base the last stream opened was reached by: the payloads
    /// made ahead name it (a stream reached by another name makes its own).
    base: Mutex<String>,
}

impl Opener {
    /// The opener of `m`'s streams, installed as the hub's translator for
    /// as long as the listener holds it.
    pub(crate) fn new(m: Mastodon) -> Arc<Opener> {
        let opener = Arc::new(Opener {
            m,
            base: Mutex::new(String::new()),
        });
        let weak: std::sync::Weak<dyn Translator> = Arc::downgrade(&opener) as _;
        opener.m.app.hub.translation().install(weak);
        opener
    }
}

impl RawOpener for Opener {
    fn open<'a>(&'a self, parts: &'a mut Parts) -> BoxFuture<'a, Option<RawServe>> {
        Box::pin(async move {
            let path = parts.uri.path();
            let stream_path = path.starts_with("/api/v1/streaming/")
                && !path.ends_with('/')
                && path != "/api/v1/streaming/health";
            if parts.method != Method::GET
                || !stream_path
                || parts.headers.contains_key(header::UPGRADE)
            {
                return None;
            }
            let m = self.m.clone();
            let Ok(cx) = Ctx::from_request_parts(parts, &m).await;
            let opened = match open_sse(&m, &cx, &parts.headers).await {
                Ok(live) => {
                    if let Ok(mut base) = self.base.lock() {
                        base.clone_from(&live.base);
                    }
                    let wants = m.app.hub.translation().want();
                    Ok((live, wants))
                }
                Err(refused) => Err(refused),
            };
            let serve: RawServe = Box::new(move |tcp, timeout| {
                Box::pin(async move {
                    match opened {
                        Ok((live, wants)) => serve(m, tcp, live, timeout, wants).await,
                        Err(refused) => refuse(tcp, refused, timeout).await,
                    }
                })
            });
            Some(serve)
        })
    }
}

impl Translator for Opener {
    fn translate<'a>(&'a self, frames: &'a [Arc<Frame>]) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let base = self.base.lock().map(|b| b.clone()).unwrap_or_default();
            if base.is_empty() {
                return;
            }
            let frames: Vec<&Arc<Frame>> = frames.iter().collect();
            super::make_together(&self.m, &base, &frames).await;
        })
    }
}

/// How the hub writes an event to a stream of `wanted` reached at `base`:
/// the Mastodon message made for it, nothing if it is not for this stream,
/// else the task's to make.
fn pick(live: &Live) -> Pick {
    let (base, wanted) = (live.base.clone(), live.wanted.clone());
    Pick::new(move |frame: &Frame| {
        let Some(made) = frame.translated.get() else {
            return Picked::Task;
        };
        match made.downcast_ref::<Translated>() {
            Some(t) if t.base == base => match &t.said {
                Some(said) if wanted.keeps(said.name) => Picked::Write(said.sse.clone()),
                _ => Picked::Skip,
            },
            _ => Picked::Task,
        }
    })
}

/// Serves a live stream until it ends, the client hangs up, or a write
/// stays blocked longer than `timeout`.
async fn serve(
    m: Mastodon,
    mut tcp: TcpStream,
    mut live: Live,
    timeout: Duration,
    _wants: translate::Wanted,
) {
    let mut head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-store\r\nconnection: close\r\n\r\n".to_vec();
    head.extend_from_slice(SSE_START);
    if !matches!(
        tokio::time::timeout(timeout, tcp.write_all(&head)).await,
        Ok(Ok(()))
    ) {
        return;
    }
    let tcp = Arc::new(tcp);
    let pick = pick(&live);
    live.stream.feed.write_translated(tcp.clone(), pick);
    let mut writer = SharedTcp(tcp);
    let mut out = Vec::new();
    loop {
        out.clear();
        // The stream first, then the socket: a client that hangs up frees
        // its slot at once, not at the next keep-alive. (Only the feed's
        // wait is raced: what it hands out is always written.)
        let first = tokio::select! {
            biased;
            first = live.stream.next() => match first {
                Some(first) => first,
                None => break,
            },
            () = writer.hung_up() => break,
        };
        let more = live.say(&m, first, &mut out).await;
        if out.is_empty() && more {
            continue;
        }
        let sent = wire::send(&mut writer, timeout, |buf| buf.extend_from_slice(&out)).await;
        if sent.is_none() {
            break;
        }
        live.sent();
        if !more {
            break;
        }
    }
    // The hub lets go of the socket, so that it can be shut down here.
    live.stream.feed.close_queue();
    if let Ok(mut tcp) = Arc::try_unwrap(writer.0) {
        let _ = tcp.shutdown().await;
    }
}

/// Answers a stream request that was refused, in Mastodon's shape, and
/// closes.
async fn refuse(mut tcp: TcpStream, refused: Refused, timeout: Duration) {
    let response = refused.into_response();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), MOST_REFUSAL)
        .await
        .unwrap_or_default();
    let mut bytes = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes();
    bytes.extend_from_slice(&body);
    let _ = tokio::time::timeout(timeout, tcp.write_all(&bytes)).await;
    let _ = tcp.shutdown().await;
}
