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

use crate::error::ApiError;
use crate::http::stream::open::{open_plain, Opened};
use crate::http::stream::ws::{self, open_websocket, WsOpened};
use crate::limits::ClientAddr;
use crate::metrics::{global as metrics, inc};
use crate::shutdown::Shutdown;
use crate::state::AppState;
use crate::stream::direct::SharedTcp;
use crate::stream::wire::{self, Encoder};
use axum::body::Body;
use axum::http::StatusCode;
use axum::Router;
use bytes::Bytes;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::sync::Semaphore;
use tokio_io_timeout::TimeoutStream;
use tower::ServiceExt;
use tracing::Instrument;

/// Longest request head read before handing over to hyper (long filter URLs
/// with 5000 follow ids fit).
const MAX_HEAD: usize = 128 * 1024;
/// How long a connection may take to send a request head (the first, or the
/// next one on a kept-alive connection: idle keep-alive connections close
/// after it too).
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Serves `router` on `listener` until `shutdown`, then waits for every
/// connection to finish (streams end with a `disconnect` event).
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    router: Router,
    mut shutdown: Shutdown,
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
    } = *args;
    let mut buf = Vec::with_capacity(1024);
    let read = tokio::time::timeout(SPARE_HEAD_TIMEOUT, read_head(&mut tcp, &mut buf)).await;
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

/// Writes an error response in the contract's shape and closes.
async fn write_error(
    tcp: &mut TcpStream,
    err: ApiError,
    extra: &[(&str, &str)],
    timeout: Duration,
) {
    let status = err.status;
    let json = err.body().to_string();
    let mut head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        json.len()
    );
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head.push_str(&json);
    write_all(tcp, head.as_bytes(), timeout).await;
    let _ = tcp.shutdown().await;
}

/// What reading the first request head gave.
enum Head {
    /// A complete head ending at this offset of the buffer.
    Complete(usize),
    /// EOF, an error, or an oversized head: hyper answers or closes.
    Incomplete,
    /// Not complete within [`HEAD_TIMEOUT`].
    TimedOut,
}

/// Reads bytes until a full request head is buffered.
async fn read_head(tcp: &mut TcpStream, buf: &mut Vec<u8>) -> Head {
    let read = async {
        // Where the search resumes: the terminator may straddle two reads.
        let mut from = 0;
        loop {
            if let Some(end) = buf[from..].windows(4).position(|w| w == b"\r\n\r\n") {
                return Some(from + end + 4);
            }
            from = buf.len().saturating_sub(3);
            if buf.len() >= MAX_HEAD {
                return None;
            }
            // Straight into the buffer: a chunk array held across the await
            // would be part of every connection task's size.
            buf.reserve(2048);
            match tcp.read_buf(buf).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    };
    match tokio::time::timeout(HEAD_TIMEOUT, read).await {
        Ok(Some(end)) => Head::Complete(end),
        Ok(None) => Head::Incomplete,
        Err(_) => Head::TimedOut,
    }
}

/// The request head as `http` parts, if it parses.
fn parse_head(head: &[u8]) -> Option<axum::http::request::Parts> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    if !matches!(req.parse(head), Ok(httparse::Status::Complete(_))) {
        return None;
    }
    let mut builder = axum::http::Request::builder()
        .method(req.method?)
        .uri(req.path?)
        .version(axum::http::Version::HTTP_11);
    for h in req.headers.iter() {
        builder = builder.header(h.name, h.value);
    }
    builder.body(()).ok().map(|r| r.into_parts().0)
}

/// A stream served on the raw socket (always boxed, so its variants' sizes
/// do not matter).
#[allow(clippy::large_enum_variant)]
enum RawStream {
    /// SSE or NDJSON.
    Plain(Opened, Encoder),
    /// A WebSocket, with the bytes the client sent behind its request.
    WebSocket(Box<WsOpened>, Vec<u8>),
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
        shutdown,
        write_timeout,
    } = *args;
    let peer = tcp.peer_addr().ok().map(|a| a.ip());
    let accepted = accept(tcp, &state, shutdown.clone(), write_timeout).await;
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
) -> Accepted {
    let mut buf = Vec::with_capacity(1024);
    let head_end = tokio::select! {
        h = read_head(&mut tcp, &mut buf) => h,
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
    if let Some(mut parts) = head_end.and_then(|end| parse_head(&buf[..end])) {
        // The same span and latency series as a stream served through the
        // router (the path only: the query may hold an access_token).
        let route = parts.uri.path().to_string();
        let span = tracing::info_span!("http", method = "GET", route, raw = true);
        let started = std::time::Instant::now();
        let opened = async {
            if let Some(plain) = open_plain(state, &mut parts).await {
                return Some(plain.map(|(o, enc)| Box::new(RawStream::Plain(o, enc))));
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
    Accepted::Hyper { tcp, buf }
}

/// How hyper serves a connection.
struct HyperConn {
    /// Whether the connection may carry more than one request.
    keep_alive: bool,
    /// How long a write may stay blocked.
    write_timeout: Duration,
}

/// Serves a connection with hyper and the router, `buf` (the bytes already
/// read) put back in front.
async fn hyper_connection(
    tcp: TcpStream,
    buf: Vec<u8>,
    peer: Option<std::net::IpAddr>,
    state: AppState,
    router: Router,
    mut shutdown: Shutdown,
    how: HyperConn,
) {
    let HyperConn {
        keep_alive,
        write_timeout,
    } = how;
    // A client that stops reading eventually fills the socket buffers;
    // hyper then stops polling the response body, so no code above the
    // socket can notice. Failing a write blocked past the timeout closes the
    // connection and frees its memory.
    let mut io = TimeoutStream::new(Rewind {
        prefix: Some(Bytes::from(buf)),
        inner: tcp,
    });
    io.set_write_timeout(Some(write_timeout));
    let io = Box::pin(io);
    let trusted = state.cfg.trusted_proxies.clone();
    let service = TowerToHyperService::new(router.map_request(
        move |req: axum::http::Request<hyper::body::Incoming>| {
            let mut req = req.map(Body::new);
            if let Some(peer) = peer {
                let forwarded = req.headers().get("x-forwarded-for").map(|v| v.as_bytes());
                let client = ClientAddr::of(peer, &trusted, forwarded);
                req.extensions_mut().insert(client);
            }
            req
        },
    ));
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .keep_alive(keep_alive);
    let conn = builder
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = shutdown.wait() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

async fn write_all(tcp: &mut TcpStream, bytes: &[u8], timeout: Duration) -> bool {
    matches!(
        tokio::time::timeout(timeout, tcp.write_all(bytes)).await,
        Ok(Ok(()))
    )
}

/// Serves a stream on the raw socket until it ends, the peer goes away, or
/// a write stays blocked longer than `timeout` (a client that stopped
/// reading).
async fn raw_stream(tcp: TcpStream, mut opened: Box<RawStream>, timeout: Duration) {
    // The stream's state stays in its box; the loops borrow it, so the
    // task holds a pointer, not a copy.
    match &mut *opened {
        RawStream::Plain(opened, encoder) => plain_stream(tcp, opened, encoder, timeout).await,
        RawStream::WebSocket(..) => {
            let RawStream::WebSocket(mut opened, early) = *opened else {
                return;
            };
            let mut tcp = tcp;
            if write_all(&mut tcp, opened.response_head().as_bytes(), timeout).await {
                let tcp = Arc::new(tcp);
                opened.write_directly(tcp.clone());
                ws::serve(SharedTcp(tcp), &early, opened, timeout).await;
            }
        }
    }
}

/// Writes an SSE or NDJSON stream. Uncompressed, its socket is shared with
/// the hub, which writes the live events itself while this task waits
/// (`stream::direct`); the task writes the head, the replay, whatever the
/// hub queued and the end, and watches for the client's hang-up.
async fn plain_stream(
    mut tcp: TcpStream,
    opened: &mut Opened,
    enc: &mut Encoder,
    timeout: Duration,
) {
    let feed = &mut opened.feed;
    let mut head = Vec::new();
    enc.response_head(&mut head);
    if !write_all(&mut tcp, &head, timeout).await {
        return;
    }
    drop(head);
    let tcp = Arc::new(tcp);
    if !enc.is_compressed() {
        feed.write_directly(tcp.clone(), enc.transport());
    }
    let mut writer = SharedTcp(tcp);
    loop {
        // Watch the socket too: a client that hangs up frees its slot at
        // once, not at the next keep-alive. The feed first (no coin toss per
        // turn): under a flood a hang-up still ends the stream, by the
        // write that fails.
        let out = tokio::select! {
            biased;
            out = feed.next() => match out {
                Some(out) => out,
                None => {
                    // Over for good: a gzip body gets its trailer.
                    let _ = wire::send(&mut writer, timeout, |buf| enc.finish(buf)).await;
                    break;
                }
            },
            // The socket's one reader slot, not `readable()`'s waiter
            // list: nothing to link and unlink on every delivery.
            ready = std::future::poll_fn(|cx| writer.0.poll_read_ready(cx)) => {
                if ready.is_err() {
                    break;
                }
                let mut scratch = [0u8; 256];
                match writer.0.try_read(&mut scratch) {
                    Ok(0) => break,
                    Ok(_) => continue,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(_) => break,
                }
            }
        };
        match wire::send(&mut writer, timeout, |buf| enc.batch(feed, &out, buf)).await {
            Some(n) => inc(&metrics().events_sent, n),
            None => break,
        }
    }
    // The hub lets go of the socket, so that it can be shut down here.
    feed.close_queue();
    if let Ok(mut tcp) = Arc::try_unwrap(writer.0) {
        let _ = tcp.shutdown().await;
    }
    tracing::debug!("stream closed");
}

/// Answers a stream request that was refused (the contract's error shape,
/// with its Retry-After), counted as the router counts errors, and closes.
async fn refuse_stream(mut tcp: TcpStream, e: ApiError, timeout: Duration) {
    metrics().count_error(e.status.as_u16());
    let retry_after = e.retry_after.map(|secs| secs.to_string());
    let extra: Vec<(&str, &str)> = retry_after
        .iter()
        .map(|secs| ("retry-after", secs.as_str()))
        .collect();
    write_error(&mut tcp, e, &extra, timeout).await;
}

/// An IO that yields `prefix` before reading from `inner`.
struct Rewind {
    prefix: Option<Bytes>,
    inner: TcpStream,
}

impl AsyncRead for Rewind {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(prefix) = self.prefix.as_mut() {
            let n = prefix.len().min(buf.remaining());
            buf.put_slice(&prefix[..n]);
            let rest = prefix.slice(n..);
            self.prefix = (!rest.is_empty()).then_some(rest);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Rewind {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;

    /// The size of the future `f` returns, without making one.
    fn size_of_return<A, F: Future>(_f: impl Fn(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// What every stream's task holds for its whole life: the loops borrow
    /// the stream's state from its box and box their rare paths (the
    /// replay, the closing handshake, a blocked write), so an idle stream's
    /// future stays near a kilobyte (it was 2.3 KB with the state moved in).
    #[test]
    fn a_streams_task_holds_a_small_future() {
        let plain = size_of_return(
            |(t, o, e, d): (TcpStream, &mut Opened, &mut Encoder, Duration)| {
                plain_stream(t, o, e, d)
            },
        );
        let ws = size_of_return(|(t, o, d): (SharedTcp, Box<WsOpened>, Duration)| {
            ws::serve(t, &[], o, d)
        });
        let raw =
            size_of_return(|(t, o, d): (TcpStream, Box<RawStream>, Duration)| raw_stream(t, o, d));
        let next = size_of_return(|f: &mut crate::stream::Feed| f.next());
        assert!(next <= 512, "Feed::next is {next} bytes");
        assert!(
            plain <= 1024 && ws <= 1024,
            "plain {plain}, websocket {ws} bytes"
        );
        assert!(raw <= 1280, "raw_stream is {raw} bytes");
    }
}
