//! A connection served by hyper and the router, with the bytes already
//! read put back in front.

use crate::rate_limits::ClientAddr;
use crate::shutdown::Shutdown;
use crate::state::AppState;
use axum::body::Body;
use axum::Router;
use bytes::Bytes;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_io_timeout::TimeoutStream;
use tower::ServiceExt;

/// How hyper serves a connection.
pub(super) struct HyperConn {
    /// Whether the connection may carry more than one request.
    pub(super) keep_alive: bool,
    /// How long a write may stay blocked.
    pub(super) write_timeout: Duration,
}

/// Serves a connection with hyper and the router, `buf` (the bytes already
/// read) put back in front.
pub(super) async fn hyper_connection(
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
                let client = ClientAddr::from_headers(peer, &trusted, req.headers());
                req.extensions_mut().insert(client);
            }
            req
        },
    ));
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(state.cfg.request_timeout())
        .max_headers(super::head::HYPER_MAX_HEADERS)
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

/// An IO that yields `prefix` before reading from `inner`.
pub(super) struct Rewind {
    pub(super) prefix: Option<Bytes>,
    pub(super) inner: TcpStream,
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
