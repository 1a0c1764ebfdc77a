//! Writing a plain stream's events from the hub, straight into the socket.
//!
//! A live SSE or NDJSON stream (not gzipped) installs a [`Direct`] as its
//! queue's sink. While the stream's task waits on an empty queue, the hub's
//! dispatcher writes an event (or a keep-alive) into the socket itself, with
//! one non-blocking write, under the queue's lock: no queue entry, no
//! wake-up, no turn of the task. Whatever the socket does not take is queued
//! as before: a write that would block queues the delivery, a short write
//! queues the rest of its bytes ([`Delivery::Rest`], written first), and
//! the task, woken, writes them with its usual timeout. The task keeps
//! everything else: watching for the client's hang-up, control events, the
//! end of the stream. Because the dispatcher writes only while the task
//! waits on an empty queue, and both write under (or after taking from) the
//! queue's lock, the bytes on the wire keep the order of the deliveries.

use super::frame::EventId;
use super::hub::Delivery;
use super::wire::{keepalive_bytes, Transport};
use crate::metrics::{global as metrics, inc};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use tokio::io::AsyncWrite;
use tokio::net::TcpStream;

/// A plain stream's socket as its queue's sink.
#[derive(Debug)]
pub struct Direct {
    tcp: Arc<TcpStream>,
    transport: Transport,
    /// The stream's one subscription.
    stream: &'static str,
    /// Its events at or below this id were sent by its replay.
    floor: Option<EventId>,
}

impl Direct {
    /// A sink writing `transport` (SSE or NDJSON, uncompressed) for the
    /// subscription named `stream`, whose events at or below `floor` are
    /// dropped.
    pub fn new(
        tcp: Arc<TcpStream>,
        transport: Transport,
        stream: &'static str,
        floor: Option<EventId>,
    ) -> Direct {
        debug_assert!(matches!(transport, Transport::Sse | Transport::Ndjson));
        Direct {
            tcp,
            transport,
            stream,
            floor,
        }
    }

    /// Writes `d` if it is an event or a keep-alive; `None` when the socket
    /// took it whole (or it is an event the feed would drop), else what to
    /// queue: `d` itself (the socket would block, failed, or `d` is for the
    /// task), or the rest of its bytes.
    pub fn write(&self, d: Delivery) -> Option<Delivery> {
        let (bytes, event): (&[u8], bool) = match &d {
            Delivery::Event(f, stream) => {
                if !std::ptr::eq(*stream, self.stream) && *stream != self.stream {
                    return Some(d);
                }
                if self.floor.is_some_and(|floor| f.id <= floor) {
                    return None;
                }
                let bytes = match self.transport {
                    Transport::Ndjson => &f.ndjson,
                    _ => &f.sse,
                };
                (bytes, true)
            }
            Delivery::Keepalive => (keepalive_bytes(self.transport), false),
            _ => return Some(d),
        };
        match self.tcp.try_write(bytes) {
            Ok(n) => {
                if event {
                    inc(&metrics().events_sent, 1);
                    inc(&metrics().events_direct, 1);
                }
                (n < bytes.len()).then(|| Delivery::Rest(bytes[n..].to_vec()))
            }
            // Would block, or failed: the task writes it, and meets the
            // failure itself.
            Err(_) => Some(d),
        }
    }
}

/// A socket shared with the hub's [`Direct`] writes, as the task's writer.
#[derive(Debug, Clone)]
pub struct SharedTcp(pub Arc<TcpStream>);

impl AsyncWrite for SharedTcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.0.poll_write_ready(cx))?;
            match self.0.try_write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                done => return Poll::Ready(done),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The socket closes when its last holder drops it.
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::frame::{parse, Frame, Incoming};
    use tokio::io::AsyncReadExt;

    fn frame(id: u64, message: &str) -> Arc<Frame> {
        let json = format!(
            r#"{{"id":"{id}-0","type":"status","at":1.0,"status":{{"id":"7","uid":"3","login":"ann","message":"{message}","posted":1.0,"hashtags":[],"mentions":[]}},"private":false}}"#
        );
        match parse(&json) {
            Some(Incoming::Event(f)) => f,
            _ => panic!("a status parses"),
        }
    }

    /// A connected pair: the server's end (small buffers, so that a large
    /// event is taken in part) and the client's.
    async fn pair() -> (Arc<TcpStream>, TcpStream) {
        let listening = tokio::net::TcpSocket::new_v4().unwrap();
        listening.set_send_buffer_size(8192).unwrap();
        listening.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = listening.listen(16).unwrap();
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let client = socket.connect(listener.local_addr().unwrap());
        let (client, accepted) = tokio::join!(client, listener.accept());
        (Arc::new(accepted.unwrap().0), client.unwrap())
    }

    /// Events and keep-alives go into the socket whole while it takes
    /// them; the one it takes in part comes back as the rest of its bytes,
    /// and those that would block come back as they were: the bytes the
    /// client reads are the deliveries' bytes in order, nothing lost or
    /// doubled.
    #[tokio::test]
    async fn writes_whole_or_hands_back_the_rest_or_the_delivery() {
        let (server, mut client) = pair().await;
        let sink = Direct::new(
            server.clone(),
            Transport::Sse,
            "firehose",
            Some(EventId(2, 0)),
        );
        // At or below the floor: dropped. Another subscription's: not ours.
        assert!(sink
            .write(Delivery::Event(frame(2, "old"), "firehose"))
            .is_none());
        assert!(matches!(
            sink.write(Delivery::Event(frame(3, "x"), "filter")),
            Some(Delivery::Event(..))
        ));
        assert!(matches!(sink.write(Delivery::Wake), Some(Delivery::Wake)));
        let mut expected: Vec<u8> = Vec::new();
        assert!(sink.write(Delivery::Keepalive).is_none());
        expected.extend_from_slice(b": keepalive\n\n");
        // Fill the socket: the client reads nothing meanwhile.
        let big = "y".repeat(50_000);
        let mut rest = None;
        for id in 3..10_000 {
            let f = frame(id, &big);
            match sink.write(Delivery::Event(f.clone(), "firehose")) {
                None => expected.extend_from_slice(&f.sse),
                Some(Delivery::Rest(bytes)) => {
                    let taken = f.sse.len() - bytes.len();
                    assert!(taken > 0 && !bytes.is_empty());
                    assert_eq!(&bytes[..], &f.sse[taken..]);
                    expected.extend_from_slice(&f.sse[..taken]);
                    rest = Some(bytes);
                    break;
                }
                Some(Delivery::Event(g, _)) => {
                    // Would block before taking a byte: handed back whole.
                    assert_eq!(g.id, f.id);
                    break;
                }
                Some(_) => panic!("an event comes back as itself or its rest"),
            }
        }
        assert!(
            rest.is_some(),
            "a 50 KB event overflows an 8 KB send buffer"
        );
        // (Nothing more is offered to the sink now: the rest is queued,
        // and the sink takes only while the queue is empty.)
        let mut got = vec![0u8; expected.len()];
        client.read_exact(&mut got).await.unwrap();
        assert!(
            got == expected,
            "the client read the deliveries' bytes in order"
        );
        // The task writes the rest, waiting for room as the client reads:
        // the event arrives whole.
        let rest = rest.unwrap_or_default();
        let mut writer = SharedTcp(server);
        let mut tail = vec![0u8; rest.len()];
        let (wrote, read) = tokio::join!(
            tokio::io::AsyncWriteExt::write_all(&mut writer, &rest),
            client.read_exact(&mut tail)
        );
        wrote.unwrap();
        read.unwrap();
        assert_eq!(tail, rest);
    }
}
