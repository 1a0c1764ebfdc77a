//! The WebSocket protocol of the streams: a stream path upgraded (the same
//! JSON as SSE data, one text message per event) and the multiplexed socket
//! at `/api/v1/stream`, whose clients subscribe and unsubscribe named
//! streams with control messages, rate-limited; pings and the pong deadline.
//! The frames are [`stream::ws_codec`](crate::stream::ws_codec)'s; this loop moves them over any
//! socket: the raw TCP stream of a connection's first request
//! (`serve.rs`), or hyper's upgraded connection after a kept-alive one.

mod control;
mod who;

use super::open::{is_upgrade, keepalive, new_feed, prepare, Kind, Opened};
use crate::auth::StreamUser;
use crate::error::{ApiError, ApiResult};
use crate::http::shared::extract::client_addr;
use crate::metrics::{global as metrics, inc};
use crate::state::AppState;
use crate::stream::frame::DisconnectCode;
use crate::stream::stream_limits::StreamGuard;
use control::{handle_control, ws_error};
use who::{QueryResume, Who};

use crate::stream::wire::{self, Encoder, Transport};
use crate::stream::ws_codec::{self, close, op, Handshake, Message, Reader};
use crate::stream::{Feed, Out};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// A WebSocket accepted: everything its loop needs.
pub(crate) struct WsOpened {
    feed: Feed,
    /// The socket's slot in the per-user limit, held until it ends.
    _guard: StreamGuard,
    handshake: Handshake,
    /// The socket's state and who runs it (control messages).
    control_of: (AppState, Who),
    /// The multiplexed socket (else a stream path upgraded).
    multiplexed: bool,
    /// `compress=zstd`: events as zstd frames (the dictionary loaded).
    zstd: bool,
    keepalive: Duration,
}

impl WsOpened {
    /// The `101 Switching Protocols` response head.
    pub(crate) fn response_head(&self) -> String {
        self.handshake.response_head()
    }

    /// Lets the hub write this socket's live events into `tcp` itself
    /// while its task waits ([`stream::direct`](crate::stream::direct)), if it is a stream path
    /// upgraded without permessage-deflate (a multiplexed socket's
    /// subscriptions come and go; a deflating one is served by its task).
    pub(crate) fn write_directly(&mut self, tcp: Arc<TcpStream>) {
        if !self.multiplexed && !self.handshake.deflate && !self.zstd {
            self.feed.write_directly(tcp, Transport::WebSocket, false);
        }
    }
}

/// For a WebSocket upgrade of a stream path or the multiplexed path: the
/// socket opened (authenticated, slot taken, subscribed) or why not.
/// `None` when the request is not one.
pub(crate) async fn open_websocket(
    state: &AppState,
    parts: &mut Parts,
) -> Option<ApiResult<WsOpened>> {
    let path = parts.uri.path();
    let kind = match path {
        "/api/v1/stream" => None,
        _ => Some(Kind::at(path)?),
    };
    if parts.method != Method::GET || !is_upgrade(&parts.headers) {
        return None;
    }
    Some(open(state, parts, kind).await)
}

fn handshake(parts: &Parts) -> ApiResult<Handshake> {
    Handshake::read(&parts.headers).map_err(|m| ApiError::invalid("invalid_upgrade", m))
}

/// The upgrade request's query (400 when malformed).
fn query(parts: &Parts) -> ApiResult<std::collections::HashMap<String, String>> {
    let axum::extract::Query(q) = axum::extract::Query::try_from_uri(&parts.uri)
        .map_err(|_| ApiError::invalid("invalid_query", "The query string is malformed."))?;
    Ok(q)
}

/// Whether the socket asks for `compress=zstd` (an unknown `compress`:
/// 400).
fn zstd_of(parts: &Parts) -> ApiResult<bool> {
    super::open::zstd_asked(query(parts)?.get("compress").map(String::as_str))
}

async fn open(state: &AppState, parts: &mut Parts, kind: Option<Kind>) -> ApiResult<WsOpened> {
    let zstd = zstd_of(parts)?;
    if zstd {
        state.zstd.ready().await.map_err(|e| {
            tracing::warn!(error = %e, "no zstd dictionary");
            ApiError::unavailable()
        })?;
    }
    let mut resume = None;
    let (feed, guard, handshake, auth) = match kind {
        Some(kind) => {
            let handshake = handshake(parts)?;
            let Opened { feed, guard, auth } =
                prepare(state, parts, kind, Transport::WebSocket).await?;
            (feed, guard, handshake, auth)
        }
        None => {
            let StreamUser(auth) = StreamUser::from_request_parts(parts, state).await?;
            let q = query(parts)?;
            let ask = super::open::Ask::from_query(&q, &parts.headers);
            resume = QueryResume::new(ask.last_event_id, ask.since, ask.count);
            state.rate.stream_connect(client_addr(parts)).await?;
            let handshake = handshake(parts)?;
            let guard = state
                .limits
                .acquire(
                    auth.uid,
                    state.max_streams(auth.uid),
                    "multiplexed",
                    Transport::Multiplexed.name(),
                )
                .await?;
            let feed = new_feed(state, &auth);
            (feed, guard, handshake, auth)
        }
    };
    Ok(WsOpened {
        feed,
        _guard: guard,
        handshake,
        control_of: (
            state.clone(),
            match kind {
                None => Who::Subscriber(auth, resume),
                Some(kind) => Who::Reader(auth.uid, kind),
            },
        ),
        multiplexed: kind.is_none(),
        zstd,
        keepalive: keepalive(state),
    })
}

/// The write timeout of stream sockets.
fn write_timeout(state: &AppState) -> Duration {
    Duration::from_secs(state.cfg.write_timeout_secs.max(1))
}

/// A WebSocket upgrade that arrived through the router (a kept-alive
/// connection's later request): answered 101 by hyper, then served on its
/// upgraded connection.
pub(crate) async fn upgrade(
    state: AppState,
    mut req: Request,
    kind: Option<Kind>,
) -> ApiResult<Response> {
    let on_upgrade = hyper::upgrade::on(&mut req);
    let (mut parts, _) = req.into_parts();
    let opened = open(&state, &mut parts, kind).await?;
    let mut response = StatusCode::SWITCHING_PROTOCOLS.into_response();
    for (name, value) in opened.handshake.headers() {
        if let Ok(value) = value.parse() {
            response.headers_mut().insert(name, value);
        }
    }
    let timeout = write_timeout(&state);
    tokio::spawn(async move {
        if let Ok(upgraded) = on_upgrade.await {
            let io = hyper_util::rt::TokioIo::new(upgraded);
            run(io, &[], Box::new(opened), timeout).await;
        }
    });
    Ok(response)
}

/// `GET /api/v1/stream` (WebSocket): subscribe and unsubscribe with control messages.
pub(crate) async fn multiplexed(State(state): State<AppState>, req: Request) -> Response {
    let run = async {
        if !is_upgrade(req.headers()) {
            let (mut parts, _) = req.into_parts();
            StreamUser::from_request_parts(&mut parts, &state).await?;
            return Err(ApiError::invalid(
                "upgrade_required",
                "This endpoint speaks WebSocket only.",
            ));
        }
        upgrade(state, req, None).await
    };
    run.await.unwrap_or_else(|e: ApiError| e.into_response())
}

/// The largest message a client may send (a subscribe with 5,000 follow
/// ids and 400 phrases fits).
pub(super) const MAX_MESSAGE: usize = 1 << 20;

/// Whether the peer has answered no ping for three keep-alive periods
/// (pings go out every period, so two were missed).
fn pong_overdue(last_pong: Instant, keepalive: Duration) -> bool {
    last_pong.elapsed() > keepalive * 3
}

/// Control messages a multiplexed socket may send a second (bursts of twice
/// that); beyond it they are ignored with an `error` event, so a client
/// cannot keep the server replaying and re-registering.
const CONTROL_PER_SEC: u32 = 10;

/// Reads what the socket has into `reader`, holding no buffer while it
/// waits; `false` at the end of the stream or on an error.
async fn read_into<S: AsyncRead + Unpin>(io: &mut S, reader: &mut Reader) -> bool {
    poll_fn(|cx| {
        let mut scratch = [0u8; 2048];
        let mut buf = ReadBuf::new(&mut scratch);
        match Pin::new(&mut *io).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) if !buf.filled().is_empty() => {
                reader.push(buf.filled());
                Poll::Ready(true)
            }
            Poll::Ready(_) => Poll::Ready(false),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// How a socket's loop ended.
enum Ending {
    /// The feed ended (its `disconnect` written): close normally.
    Over,
    /// The client broke the protocol: close with this code and reason.
    Broke(u16, &'static str),
    /// The client sent Close: answer it.
    ClientClosed,
    /// The peer is gone or stopped reading: nothing more to write.
    Gone,
}

/// Serves an accepted WebSocket on `io` (its 101 response already sent;
/// `early` holds bytes the client sent right behind its request) until the
/// stream ends, the client closes or breaks the protocol, or a write
/// stays blocked past `timeout`.
pub(crate) async fn run<S>(mut io: S, early: &[u8], opened: Box<WsOpened>, timeout: Duration)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut opened = opened;
    // Borrowed from the box, not moved into this future: the task holds a
    // pointer to the socket's state rather than a copy of it.
    let WsOpened {
        feed,
        handshake,
        control_of,
        multiplexed,
        keepalive,
        zstd,
        ..
    } = &mut *opened;
    let (keepalive, deflate, multiplexed) = (*keepalive, handshake.deflate, *multiplexed);
    let transport = match multiplexed {
        true => Transport::Multiplexed,
        false => Transport::WebSocket,
    };
    let dicts = zstd.then(|| control_of.0.zstd.clone());
    let mut enc = Encoder::websocket(transport, deflate, dicts);
    let mut reader = Reader::new(deflate, MAX_MESSAGE);
    reader.push(early);
    let mut last_pong = Instant::now();
    let mut control_budget =
        crate::rate_limits::Bucket::new(CONTROL_PER_SEC as f64, CONTROL_PER_SEC as f64 * 2.0);
    let ending = 'run: loop {
        // Every complete message read so far.
        loop {
            let msg = match reader.next_message() {
                Ok(Some(msg)) => msg,
                Ok(None) => break,
                Err(e) => break 'run Ending::Broke(e.code, e.reason),
            };
            last_pong = Instant::now();
            match msg {
                Message::Ping(payload) => {
                    // After the rest of an event the hub began writing.
                    let rest = feed.interrupt();
                    let pong = |buf: &mut Vec<u8>| {
                        buf.extend_from_slice(rest.as_deref().unwrap_or_default());
                        ws_codec::frame(op::PONG, &payload, buf)
                    };
                    if wire::send(&mut io, timeout, pong).await.is_none() {
                        break 'run Ending::Gone;
                    }
                }
                Message::Close(_) => break 'run Ending::ClientClosed,
                Message::Text(text) => {
                    let (state, who) = control_of;
                    {
                        if control_budget.take() {
                            // Boxed: subscribing (Redis round trips, the
                            // replay) is a large future, which inline would
                            // size every socket's task for its whole life.
                            Box::pin(handle_control(feed, state, who, &text)).await;
                        } else {
                            feed.push_control(ws_error(
                                "rate_limited",
                                format!("At most {CONTROL_PER_SEC} control messages a second; this one was ignored."),
                                None,
                            ));
                        }
                    }
                }
                Message::Pong | Message::Binary => {}
            }
        }
        // The client's messages first (no coin toss per turn): a flood of
        // events must not keep its pongs unread.
        let out = tokio::select! {
            biased;
            alive = read_into(&mut io, &mut reader) => {
                if !alive {
                    break Ending::Gone;
                }
                continue;
            }
            out = feed.next() => match out {
                Some(out) => out,
                None => break Ending::Over,
            },
        };
        // A pong is due after each ping; two missed ones close the socket.
        let out = match out {
            Out::Keepalive(_) if pong_overdue(last_pong, keepalive) => {
                feed.end(DisconnectCode::Timeout, DisconnectCode::Timeout.sentence())
            }
            out => out,
        };
        let sent = wire::send_telling(&mut io, timeout, |buf| {
            enc.batch(|| feed.try_next(), &out, buf)
        })
        .await;
        match sent {
            Some((n, waited)) => {
                inc(&metrics().events_sent, n);
                if waited {
                    // It waited for the client to read, which it did: as
                    // good as a pong (a lagging client that paused reads its
                    // pings only once it has read what came before them).
                    last_pong = Instant::now();
                }
            }
            None => break Ending::Gone,
        }
    };
    let restart;
    let (code, reason) = match (&ending, feed.retry_hint()) {
        (Ending::Gone, _) => return,
        // A shutdown: 1012 with the reconnection hint its event carried.
        (Ending::Over, Some(ms)) => {
            restart = format!("shutdown; reconnect after {ms} ms");
            (close::RESTART, restart.as_str())
        }
        (Ending::Over | Ending::ClientClosed, _) => (close::NORMAL, ""),
        (Ending::Broke(code, reason), _) => (*code, *reason),
    };
    let answer = !matches!(ending, Ending::ClientClosed);
    // The hub stops writing into the socket (and lets go of it); the rest
    // of an event it began goes out before the Close.
    let rest = feed.interrupt();
    feed.close_queue();
    // Boxed: only a closing socket pays for the closing handshake's state.
    Box::pin(closing(io, rest, (code, reason), answer, deflate, timeout)).await;
    drop(opened);
}

/// The closing handshake: sends `rest` (of a frame the hub began) and
/// Close, then (`wait_answer`: unless the
/// client closed first) lets the peer answer, reading what it sent before,
/// for a moment before dropping the socket.
async fn closing<S>(
    mut io: S,
    rest: Option<Vec<u8>>,
    (code, reason): (u16, &str),
    wait_answer: bool,
    deflate: bool,
    timeout: Duration,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let bye = |buf: &mut Vec<u8>| {
        buf.extend_from_slice(rest.as_deref().unwrap_or_default());
        ws_codec::close_frame(code, reason, buf)
    };
    if wire::send(&mut io, timeout, bye).await.is_none() {
        return;
    }
    if wait_answer {
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            let mut reader = Reader::new(deflate, MAX_MESSAGE);
            while read_into(&mut io, &mut reader).await {
                while let Ok(Some(msg)) = reader.next_message() {
                    if matches!(msg, Message::Close(_)) {
                        return;
                    }
                }
            }
        })
        .await;
    }
    let _ = io.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pings go out every keep-alive period; the socket closes once three
    /// periods pass without a pong (two pings unanswered), not before.
    #[tokio::test(start_paused = true)]
    async fn a_pong_is_overdue_only_after_three_periods_without_one() {
        let period = Duration::from_secs(20);
        let last_pong = Instant::now();
        tokio::time::advance(period * 2).await;
        assert!(!pong_overdue(last_pong, period));
        tokio::time::advance(period).await;
        assert!(!pong_overdue(last_pong, period), "exactly three periods");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(pong_overdue(last_pong, period));
    }
}
