//! The accept loop.
//!
//! A long-lived SSE or NDJSON stream spends almost all of its life idle, so
//! what it holds per connection decides how many clients a server can keep.
//! Served by hyper, each one would keep hyper's read and header buffers and a
//! clone of the middleware stack for its whole life (~20 KiB). So the first
//! request head of every connection is read here: a plain GET of a stream
//! path is answered on the raw socket (status line, headers, then the event
//! frames until the stream ends, body delimited by closing the connection),
//! and every other connection, WebSocket upgrades included, goes to hyper
//! and the axum router with the bytes already read put back in front.
//!
//! - `head`: reading and parsing a request head, and writing an error in
//!   the contract's shape.
//! - `raw`: a stream served on the raw socket.
//! - `hyper_conn`: everything else, through hyper and the router.

mod head;
mod hyper_conn;
mod raw;

use crate::error::ApiError;
use crate::http::stream::open::open_plain;
use crate::http::stream::ws_session::open_websocket;
use crate::metrics::{global as metrics, inc};
use crate::rate_limits::ClientAddr;
use crate::shutdown::Shutdown;
use crate::state::AppState;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::Router;
use futures::future::BoxFuture;
use head::{parse_head, read_head, write_error, Head};
use hyper_conn::{hyper_connection, HyperConn};
use raw::{raw_stream, refuse_stream, RawStream};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::sync::Semaphore;
use tracing::Instrument;

/// The streams a listener answers on the raw socket, before hyper.
#[derive(Clone)]
pub(crate) enum RawStreams {
    /// Ours: the stream paths of this API ([`http::stream`](crate::http::stream)).
    Ours,
    /// Another API's, opened by it (the Mastodon listener's SSE streams).
    Other(Arc<dyn RawOpener>),
}

/// Another API's streams on the raw socket ([`RawStreams::Other`]).
pub(crate) trait RawOpener: Send + Sync + 'static {
    /// The stream the request `parts` asks for, opened (or refused), with
    /// what serves it on the raw socket; `None` when the request is not one
    /// of its streams (hyper and the router serve it).
    fn open<'a>(&'a self, parts: &'a mut Parts) -> BoxFuture<'a, Option<RawServe>>;
}

/// Serves an opened (or refused) stream on the raw socket until it ends; a
/// write blocked longer than the `Duration` ends it.
pub(crate) type RawServe = Box<dyn FnOnce(TcpStream, Duration) -> BoxFuture<'static, ()> + Send>;

/// Serves `router` on `listener` until `shutdown`, then waits for every
/// connection to finish (streams end with a `disconnect` event).
pub(crate) async fn accept_loop(
    listener: TcpListener,
    state: AppState,
    router: Router,
    mut shutdown: Shutdown,
    raw_streams: RawStreams,
) -> io::Result<()> {
    let write_timeout = Duration::from_secs(state.cfg.write_timeout_secs.max(1));
    let grace = Duration::from_secs(state.cfg.shutdown_grace_secs);
    let cap = crate::nofile::connection_cap(state.cfg.max_connections, crate::nofile::current());
    if cap < state.cfg.max_connections {
        tracing::warn!(
            cap,
            max_connections = state.cfg.max_connections,
            "the open-file limit allows fewer connections than --max-connections"
        );
    }
    metrics().connection_cap.set(cap as i64);
    let slots = Arc::new(Semaphore::new(cap));
    let spare = Arc::new(Semaphore::new(crate::nofile::SPARE_SLOTS));
    let (done_tx, mut done_rx) = mpsc::channel::<()>(1);
    loop {
        let accepted = tokio::select! {
            _ = shutdown.wait() => break,
            a = listener.accept() => a,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
            Err(e) => {
                // Out of file descriptors and the like: wait, then go on.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        // The kernel ends a connection whose client acknowledges none of
        // what was sent (a window shut, or no answer) for the write timeout:
        // a client that reads, however slowly, is never cut off by how
        // rarely a full send buffer lets a write through.
        let _ = rustix::net::sockopt::set_tcp_user_timeout(
            &tcp,
            u32::try_from(write_timeout.as_millis()).unwrap_or(u32::MAX),
        );
        let (slot, beyond_cap) = match slots.clone().try_acquire_owned() {
            Ok(slot) => (slot, false),
            Err(_) => match spare.clone().try_acquire_owned() {
                Ok(slot) => (slot, true),
                Err(_) => {
                    // Even the spare share is taken: close at once, so that
                    // refusals cannot use up the descriptors either.
                    inc(&metrics().connections_refused, 1);
                    drop(tcp);
                    continue;
                }
            },
        };
        let (state, router, shutdown, done) = (
            state.clone(),
            router.clone(),
            shutdown.clone(),
            done_tx.clone(),
        );
        let args = Box::new(ConnArgs {
            tcp,
            state,
            router,
            raw_streams: raw_streams.clone(),
            shutdown,
            write_timeout,
        });
        metrics().client_connections.inc();
        tokio::spawn(async move {
            if beyond_cap {
                Box::pin(beyond_the_cap(args)).await;
            } else if let Some(rest) = Box::pin(connection(args)).await {
                rest.await;
            }
            metrics().client_connections.dec();
            drop((slot, done));
        });
    }
    drop(done_tx);
    // Every connection task holds a sender; recv returns None once all are
    // gone. Streams end at once on shutdown; a request stuck on a client
    // that stopped reading is not waited for beyond the grace period.
    if tokio::time::timeout(grace, done_rx.recv()).await.is_err() {
        tracing::warn!(
            grace_secs = grace.as_secs(),
            "connections still open after the shutdown grace period; leaving them"
        );
    }
    Ok(())
}

/// The paths a connection beyond the cap is still served: what an
/// orchestrator or a scraper asks a full process.
const OPERATIONS_PATHS: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// How long a connection beyond the cap may take to send its request head.
const SPARE_HEAD_TIMEOUT: Duration = Duration::from_secs(2);

/// Serves a connection accepted beyond the connection cap (on a spare
/// slot): a `GET` of an operations path is answered as usual, once, then
/// the connection closes; anything else gets 503 with Retry-After.
async fn beyond_the_cap(args: Box<ConnArgs>) {
    let ConnArgs {
        mut tcp,
        state,
        router,
        shutdown,
        write_timeout,
        ..
    } = *args;
    let mut buf = Vec::with_capacity(1024);
    let read = tokio::time::timeout(
        SPARE_HEAD_TIMEOUT,
        read_head(&mut tcp, &mut buf, SPARE_HEAD_TIMEOUT),
    )
    .await;
    let operations = match read {
        Ok(Head::Complete(end)) => parse_head(&buf[..end]).is_some_and(|parts| {
            parts.method == axum::http::Method::GET && OPERATIONS_PATHS.contains(&parts.uri.path())
        }),
        _ => false,
    };
    if operations {
        let peer = tcp.peer_addr().ok().map(|a| a.ip());
        let one = HyperConn {
            keep_alive: false,
            write_timeout,
        };
        hyper_connection(tcp, buf, peer, state, router, shutdown, one).await;
        return;
    }
    inc(&metrics().connections_refused, 1);
    let err = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "too_many_connections",
        "The server holds as many connections as it may; retry shortly.",
    );
    write_error(&mut tcp, err, &[("retry-after", "5")], write_timeout).await;
}

/// What a connection turned out to be once its first request head was read.
enum Accepted {
    /// A stream request: answered on the raw socket.
    Raw {
        tcp: TcpStream,
        /// Boxed: the stream's state moves on to `raw_stream` as a pointer.
        opened: crate::error::ApiResult<Box<RawStream>>,
        span: tracing::Span,
    },
    /// Another API's stream, served by what opened it.
    Other { tcp: TcpStream, serve: RawServe },
    /// Anything else: hyper serves it, with the bytes read put back.
    Hyper { tcp: TcpStream, buf: Vec<u8> },
    /// Nothing more to do (closed, timed out, shutting down).
    Done,
}

/// What a connection task starts with, boxed so that the task does not
/// carry it (the router, the state) for the whole life of a stream.
struct ConnArgs {
    tcp: TcpStream,
    state: AppState,
    router: Router,
    /// The streams this listener serves on the raw socket.
    raw_streams: RawStreams,
    shutdown: Shutdown,
    write_timeout: Duration,
}

/// The rest of a connection once its first request head is read.
type Rest = Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Reads the first request head (and, for a stream, opens it); returns the
/// rest of the connection to run. The task is allocated at the size of its
/// largest state for its whole life, and an idle stream should pay only for
/// streaming: so this (Redis round trips, the subscription) runs boxed and
/// is freed before the stream starts, and the rest is a box of its own size.
async fn connection(args: Box<ConnArgs>) -> Option<Rest> {
    let ConnArgs {
        tcp,
        state,
        router,
        raw_streams,
        shutdown,
        write_timeout,
    } = *args;
    let peer = tcp.peer_addr().ok().map(|a| a.ip());
    let accepted = accept(tcp, &state, shutdown.clone(), write_timeout, raw_streams).await;
    Some(match accepted {
        Accepted::Raw { tcp, opened, span } => match opened {
            // The request's span covered the opening (and its log line);
            // the stream's life runs in a child at debug level, which the
            // default filter leaves disabled: entering an enabled span on
            // every poll of every stream costs ~1 % of a delivery's CPU.
            // The few warnings a stream can log carry its ids themselves.
            Ok(opened) => {
                let life = tracing::debug_span!(parent: &span, "stream");
                if life.is_disabled() {
                    Box::pin(raw_stream(tcp, opened, write_timeout))
                } else {
                    Box::pin(raw_stream(tcp, opened, write_timeout).instrument(life))
                }
            }
            Err(e) => Box::pin(refuse_stream(tcp, e, write_timeout)),
        },
        Accepted::Other { tcp, serve } => serve(tcp, write_timeout),
        Accepted::Hyper { tcp, buf } => Box::pin(hyper_connection(
            tcp,
            buf,
            peer,
            state,
            router,
            shutdown,
            HyperConn {
                keep_alive: true,
                write_timeout,
            },
        )),
        Accepted::Done => return None,
    })
}

/// Reads the first request head and, for a plain stream request, opens the
/// stream.
async fn accept(
    mut tcp: TcpStream,
    state: &AppState,
    mut shutdown: Shutdown,
    write_timeout: Duration,
    raw_streams: RawStreams,
) -> Accepted {
    let mut buf = Vec::with_capacity(1024);
    let head_end = tokio::select! {
        h = read_head(&mut tcp, &mut buf, state.cfg.request_timeout()) => h,
        _ = shutdown.wait() => return Accepted::Done,
    };
    let head_end = match head_end {
        Head::Complete(end) => Some(end),
        Head::Incomplete => None,
        Head::TimedOut => {
            if !buf.is_empty() {
                let err = ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "request_timeout",
                    "The request head was not complete in time.",
                );
                write_error(&mut tcp, err, &[], write_timeout).await;
            }
            return Accepted::Done;
        }
    };
    if let RawStreams::Other(opener) = &raw_streams {
        if let Some(mut parts) = head_end.and_then(|end| parse_head(&buf[..end])) {
            if let Ok(peer) = tcp.peer_addr() {
                let trusted = &state.cfg.trusted_proxies;
                let client = ClientAddr::from_headers(peer.ip(), trusted, &parts.headers);
                parts.extensions.insert(client);
            }
            if let Some(serve) = opener.open(&mut parts).await {
                return Accepted::Other { tcp, serve };
            }
        }
    }
    let head = head_end.filter(|_| matches!(raw_streams, RawStreams::Ours));
    if let Some(mut parts) = head.and_then(|end| parse_head(&buf[..end])) {
        if let Ok(peer) = tcp.peer_addr() {
            let trusted = &state.cfg.trusted_proxies;
            let client = ClientAddr::from_headers(peer.ip(), trusted, &parts.headers);
            parts.extensions.insert(client);
        }
        // The same span and latency series as a stream served through the
        // router (the path only: the query may hold an access_token).
        let route = parts.uri.path().to_string();
        let span = tracing::info_span!("http", method = "GET", route, raw = true);
        let started = std::time::Instant::now();
        // HTTP/1.1 bodies are chunked (so clients that read in blocks hand
        // over each event as it comes); HTTP/1.0 ones end with the
        // connection.
        let chunked = parts.version == axum::http::Version::HTTP_11;
        let opened = async {
            if let Some(plain) = open_plain(state, &mut parts).await {
                return Some(plain.map(|(o, mut enc)| {
                    if chunked {
                        enc.frame_in_chunks();
                    }
                    Box::new(RawStream::Plain(o, enc))
                }));
            }
            let end = head_end.unwrap_or(buf.len());
            let ws = open_websocket(state, &mut parts).await?;
            Some(ws.map(|w| Box::new(RawStream::WebSocket(Box::new(w), buf[end..].to_vec()))))
        };
        if let Some(opened) = opened.instrument(span.clone()).await {
            let status = match &opened {
                Err(e) => e.status,
                Ok(raw) if matches!(**raw, RawStream::WebSocket(..)) => {
                    StatusCode::SWITCHING_PROTOCOLS
                }
                Ok(_) => StatusCode::OK,
            };
            metrics().observe_http(
                &route,
                "GET",
                status.as_u16(),
                started.elapsed().as_secs_f64(),
            );
            return Accepted::Raw { tcp, opened, span };
        }
    }
    if buf.is_empty() {
        return Accepted::Done;
    }
    if let Some(err) = head::oversized(&buf, head_end.is_some()) {
        write_error(&mut tcp, err, &[], write_timeout).await;
        return Accepted::Done;
    }
    Accepted::Hyper { tcp, buf }
}
