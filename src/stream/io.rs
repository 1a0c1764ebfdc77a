//! Connections whose writes fail when they stay blocked too long.
//!
//! A client that stops reading eventually fills the socket buffers; hyper
//! then stops polling the response body, so no code above the socket can
//! notice. Failing the blocked write after a timeout closes the connection
//! and frees its memory.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// A connection whose blocked writes time out.
pub struct TimeoutIo<T> {
    inner: T,
    timeout: Duration,
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<T> TimeoutIo<T> {
    /// Wraps `inner`; a write blocked longer than `timeout` fails.
    pub fn new(inner: T, timeout: Duration) -> Self {
        TimeoutIo {
            inner,
            timeout,
            deadline: None,
        }
    }

    fn blocked(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let timeout = self.timeout;
        let deadline = self
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => {
                tracing::info!("closing a connection whose peer stopped reading");
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the peer stopped reading",
                )))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for TimeoutIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for TimeoutIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, buf) {
            Poll::Ready(r) => {
                if r.as_ref().is_ok_and(|n| *n > 0) {
                    self.deadline = None;
                }
                Poll::Ready(r)
            }
            Poll::Pending => self.blocked(cx).map(|r| r.map(|()| 0)),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write_vectored(cx, bufs) {
            Poll::Ready(r) => {
                if r.as_ref().is_ok_and(|n| *n > 0) {
                    self.deadline = None;
                }
                Poll::Ready(r)
            }
            Poll::Pending => self.blocked(cx).map(|r| r.map(|()| 0)),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // TCP's flush is a no-op that is always ready: it says nothing about
        // the peer reading, so it must not reset the deadline.
        match Pin::new(&mut self.inner).poll_flush(cx) {
            Poll::Ready(r) => Poll::Ready(r),
            Poll::Pending => self.blocked(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
