//! A stream served on the raw socket: SSE and NDJSON written here (or by
//! the hub, straight into the socket), WebSocket handed to its session.

use super::head::{write_all, write_error};
use crate::error::ApiError;
use crate::http::stream::open::Opened;
use crate::http::stream::ws_session::{self, WsOpened};
use crate::metrics::{global as metrics, inc};
use crate::stream::direct::SharedTcp;
use crate::stream::wire::{self, Encoder};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// A stream served on the raw socket (always boxed, so its variants' sizes
/// do not matter).
#[allow(clippy::large_enum_variant)]
pub(super) enum RawStream {
    /// SSE or NDJSON.
    Plain(Opened, Encoder),
    /// A WebSocket, with the bytes the client sent behind its request.
    WebSocket(Box<WsOpened>, Vec<u8>),
}

/// Serves a stream on the raw socket until it ends, the peer goes away, or
/// a write stays blocked longer than `timeout` (a client that stopped
/// reading).
pub(super) async fn raw_stream(tcp: TcpStream, mut opened: Box<RawStream>, timeout: Duration) {
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
                ws_session::run(SharedTcp(tcp), &early, opened, timeout).await;
            }
        }
    }
}

/// Writes an SSE or NDJSON stream. Uncompressed, its socket is shared with
/// the hub, which writes the live events itself while this task waits
/// ([`stream::direct`](crate::stream::direct)); the task writes the head, the replay, whatever the
/// hub queued and the end, and watches for the client's hang-up.
pub(super) async fn plain_stream(
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
        feed.write_directly(tcp.clone(), enc.transport(), enc.is_chunked());
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
            () = writer.hung_up() => break,
        };
        match wire::send(&mut writer, timeout, |buf| {
            enc.batch(|| feed.try_next(), &out, buf)
        })
        .await
        {
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
pub(super) async fn refuse_stream(mut tcp: TcpStream, e: ApiError, timeout: Duration) {
    metrics().count_error(e.status.as_u16());
    let retry_after = e.retry_after.map(|secs| secs.to_string());
    let extra: Vec<(&str, &str)> = retry_after
        .iter()
        .map(|secs| ("retry-after", secs.as_str()))
        .collect();
    write_error(&mut tcp, e, &extra, timeout).await;
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
            ws_session::run(t, &[], o, d)
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
        // And the state it borrows: the store is shared through the hub,
        // not copied into every feed (800 bytes each when it was).
        let feed = std::mem::size_of::<crate::stream::Feed>();
        let ws = std::mem::size_of::<WsOpened>();
        assert!(feed <= 256 && ws <= 512, "Feed {feed}, WsOpened {ws} bytes");
    }
}
