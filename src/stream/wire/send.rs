//! The one write of a stream's batch: encoded into the thread's buffer and
//! written from there, only a blocked write's rest copied out.

use std::cell::RefCell;
use std::future::poll_fn;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt};

thread_local! {
    /// The buffer batches are encoded into: one per worker thread, so a
    /// connection holds no output buffer between writes.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Writes what `fill` appends into the socket: straight from the thread's
/// buffer when the socket takes it all (the usual case, no timer armed);
/// only the rest of a write that would block is copied out and waits
/// while the client takes bytes, at most `timeout` without one (boxed: the slow path's state stays out of every
/// connection's task). `None` when the write failed or timed out.
pub async fn send<S, R>(
    io: &mut S,
    timeout: Duration,
    fill: impl FnOnce(&mut Vec<u8>) -> R,
) -> Option<R>
where
    S: AsyncWrite + Unpin,
{
    send_telling(io, timeout, fill).await.map(|(r, _)| r)
}

/// [`send`], also telling whether the write had to wait for the client to
/// read (and then went through: the client is reading).
pub async fn send_telling<S, R>(
    io: &mut S,
    timeout: Duration,
    fill: impl FnOnce(&mut Vec<u8>) -> R,
) -> Option<(R, bool)>
where
    S: AsyncWrite + Unpin,
{
    let mut fill = Some(fill);
    // One poll, with the task's context, so a socket that would block
    // registers for writability as any write does.
    let (r, failed, rest) = poll_fn(|cx| {
        let Some(fill) = fill.take() else {
            return Poll::Pending;
        };
        Poll::Ready(SCRATCH.with(|s| {
            let mut buf = s.borrow_mut();
            buf.clear();
            let r = fill(&mut buf);
            let mut written = 0;
            let mut failed = false;
            while written < buf.len() {
                match Pin::new(&mut *io).poll_write(cx, &buf[written..]) {
                    Poll::Ready(Ok(n)) if n > 0 => written += n,
                    Poll::Ready(_) => {
                        failed = true;
                        break;
                    }
                    Poll::Pending => break,
                }
            }
            let rest = (!failed && written < buf.len()).then(|| buf[written..].to_vec());
            // Keep no large buffer after a burst.
            if buf.capacity() > 256 * 1024 {
                *buf = Vec::new();
            }
            (r, failed, rest)
        }))
    })
    .await;
    if failed {
        return None;
    }
    let waited = rest.is_some();
    if let Some(rest) = rest {
        if !Box::pin(write_idle(io, &rest, timeout)).await {
            return None;
        }
    }
    Some((r, waited))
}

/// How many write timeouts a write may wait without a byte going through
/// before it is given up here. The kernel is what ends a client that takes
/// nothing (`TCP_USER_TIMEOUT`, set to the write timeout when the
/// connection is accepted: `serve`), since only it sees a slow client's
/// acknowledgements: a full send buffer lets a write through only once a
/// third of it has drained, which may be minutes for a client that reads
/// a few kilobytes a second. This is the backstop where that option is not
/// honoured.
const BACKSTOP: u32 = 10;

/// Writes all of `bytes`, however slowly the client reads; false when the
/// write failed, or the client stalled (took no byte at all for the write
/// timeout: the kernel's verdict, counted as a stall).
async fn write_idle<S>(io: &mut S, mut bytes: &[u8], timeout: Duration) -> bool
where
    S: AsyncWrite + Unpin,
{
    let stalled = || {
        crate::metrics::inc(&crate::metrics::global().stall_disconnects, 1);
        tracing::info!("closing a stream whose client took no byte for {timeout:?}");
        false
    };
    while !bytes.is_empty() {
        match tokio::time::timeout(timeout * BACKSTOP, io.write(bytes)).await {
            Ok(Ok(n)) if n > 0 => bytes = &bytes[n..],
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::TimedOut => return stalled(),
            Ok(_) => return false,
            Err(_) => return stalled(),
        }
    }
    true
}
