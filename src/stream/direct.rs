//! Writing a plain stream's events from the hub, straight into the socket.
//!
//! A live SSE or NDJSON stream (not gzipped), or a stream path upgraded to
//! WebSocket (without permessage-deflate), installs a [`Direct`] as its
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
//! Bytes of the task's own (a pong, a close frame) go out after
//! `Feed::interrupt`, which stops these writes and hands back the rest of
//! one begun.
//!
//! A WebSocket's event goes out as its frame header and the event's shared
//! JSON in one vectored write; its keep-alives stay with the task, which
//! checks that the client answered the last ping before it sends the next.

use super::frame::EventId;
use super::queue::Delivery;
use super::translate::{Pick, Picked};
use super::wire::{chunked, keepalive_bytes, position_bytes, Transport};
use super::ws_codec::{self, op};
use crate::metrics::{global as metrics, inc};
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
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
    /// Whether the body is framed in chunks (SSE and NDJSON to an HTTP/1.1
    /// client: each write one chunk).
    chunked: bool,
    /// For another API's stream: its bytes of each event
    /// ([`stream::translate`](crate::stream::translate)).
    pick: Option<Pick>,
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
        debug_assert!(matches!(
            transport,
            Transport::Sse | Transport::Ndjson | Transport::WebSocket
        ));
        Direct {
            tcp,
            transport,
            stream,
            floor,
            chunked: false,
            pick: None,
        }
    }

    /// Writes each event as `pick` chooses (another API's stream), if given.
    pub fn picking(mut self, pick: Option<Pick>) -> Direct {
        self.pick = pick;
        self
    }

    /// Events at or below `floor` are dropped from now on (a stream that
    /// caught up from the history: what it read there is sent).
    pub fn raise_floor(&mut self, floor: EventId) {
        self.floor = self.floor.max(Some(floor));
    }

    /// Frames each write as a chunk of the body (see
    /// [`wire::chunked`](super::wire::chunked)); a WebSocket's frames never
    /// are.
    pub fn in_chunks(mut self, chunked: bool) -> Direct {
        self.chunked = chunked && self.transport != Transport::WebSocket;
        self
    }

    /// Writes `d` if it is an event or a keep-alive; `None` when the socket
    /// took it whole (or it is an event the feed would drop), else what to
    /// queue: `d` itself (the socket would block, failed, or `d` is for the
    /// task), or the rest of its bytes.
    pub fn write(&self, d: Delivery) -> Option<Delivery> {
        let header;
        let positioned;
        let picked;
        let (head, body, event): (&[u8], &[u8], bool) = match &d {
            Delivery::Event(f, stream) => {
                if !std::ptr::eq(*stream, self.stream) && *stream != self.stream {
                    return Some(d);
                }
                if self.floor.is_some_and(|floor| f.id <= floor) {
                    return None;
                }
                if let Some(pick) = &self.pick {
                    picked = match pick.of(f) {
                        Picked::Write(bytes) => bytes,
                        Picked::Skip => return None,
                        Picked::Task => return Some(d),
                    };
                    (&[], &picked[..], true)
                } else {
                    match self.transport {
                        Transport::Sse if self.chunked => (&[], f.chunk(false), true),
                        Transport::Ndjson if self.chunked => (&[], f.chunk(true), true),
                        Transport::Sse => (&[], &f.sse, true),
                        Transport::Ndjson => (&[], &f.ndjson, true),
                        _ => {
                            header = ws_codec::header(op::TEXT, false, f.json.len());
                            (&header.0[..header.1], &f.json, true)
                        }
                    }
                }
            }
            Delivery::Keepalive(None) if self.transport != Transport::WebSocket => {
                (&[], keepalive_bytes(self.transport), false)
            }
            Delivery::Keepalive(Some(at)) if self.transport != Transport::WebSocket => {
                positioned =
                    position_bytes(self.transport, (*at).max(self.floor.unwrap_or_default()));
                (&[], &positioned, false)
            }
            _ => return Some(d),
        };
        // An event's chunk is whole already (shared by every chunked
        // stream); a keep-alive is framed here.
        let chunk;
        let (head, tail): (&[u8], &[u8]) = if self.chunked && !event {
            chunk = chunked::header(body.len());
            (&chunk.0[..chunk.1], chunked::CRLF)
        } else {
            (head, &[])
        };
        let written = if head.is_empty() {
            self.tcp.try_write(body)
        } else {
            self.tcp.try_write_vectored(&[
                IoSlice::new(head),
                IoSlice::new(body),
                IoSlice::new(tail),
            ])
        };
        match written {
            Ok(n) => {
                if event {
                    inc(&metrics().events_sent, 1);
                    inc(&metrics().events_direct, 1);
                }
                let parts = [head, body, tail];
                (n < head.len() + body.len() + tail.len())
                    .then(|| Delivery::Rest(unwritten(&parts, n)))
            }
            // Would block, or failed: the task writes it, and meets the
            // failure itself.
            Err(_) => Some(d),
        }
    }
}

/// What is left of `parts`, one after another, once their first `n` bytes
/// are written.
fn unwritten(parts: &[&[u8]], n: usize) -> Vec<u8> {
    let mut skip = n;
    let mut rest = Vec::new();
    for part in parts {
        let from = skip.min(part.len());
        skip -= from;
        rest.extend_from_slice(&part[from..]);
    }
    rest
}

/// A socket shared with the hub's [`Direct`] writes, as the task's writer.
#[derive(Debug, Clone)]
pub(crate) struct SharedTcp(pub Arc<TcpStream>);

impl SharedTcp {
    /// Resolves once the client has hung up (or the socket failed); what
    /// it sends meanwhile is read and dropped. It waits in the socket's one
    /// reader slot, not `readable()`'s waiter list: nothing to link and
    /// unlink on every delivery, raced as a stream's task races it.
    pub(crate) async fn hung_up(&self) {
        loop {
            if std::future::poll_fn(|cx| self.0.poll_read_ready(cx))
                .await
                .is_err()
            {
                return;
            }
            let mut scratch = [0u8; 256];
            match self.0.try_read(&mut scratch) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return,
            }
        }
    }
}

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

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Arc::get_mut(&mut self.0) {
            Some(tcp) => Pin::new(tcp).poll_shutdown(cx),
            // Still shared: the socket closes when its last holder drops it.
            None => Poll::Ready(Ok(())),
        }
    }
}

impl AsyncRead for SharedTcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            ready!(self.0.poll_read_ready(cx))?;
            match self.0.try_read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::stream::frame::{parse, Frame, Incoming};
    use tokio::io::AsyncReadExt;

    pub(crate) fn frame(id: u64, message: &str) -> Arc<Frame> {
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
    pub(crate) async fn pair() -> (Arc<TcpStream>, TcpStream) {
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
            Some(EventId(2, 0, 0)),
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
        assert!(sink.write(Delivery::Keepalive(None)).is_none());
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

    /// A WebSocket's events go in as whole text frames (header, then the
    /// event's JSON), the one taken in part comes back as the rest of its
    /// frame; its keep-alives are the task's (it checks the last pong first).
    #[tokio::test]
    async fn a_websocket_gets_whole_frames_and_leaves_its_pings_to_the_task() {
        let (server, mut client) = pair().await;
        let sink = Direct::new(server.clone(), Transport::WebSocket, "firehose", None);
        assert!(matches!(
            sink.write(Delivery::Keepalive(None)),
            Some(Delivery::Keepalive(None))
        ));
        let framed = |f: &Frame| {
            let mut out = Vec::new();
            ws_codec::frame(op::TEXT, &f.json, &mut out);
            out
        };
        let mut expected: Vec<u8> = Vec::new();
        let small = frame(1, "hi");
        assert!(sink
            .write(Delivery::Event(small.clone(), "firehose"))
            .is_none());
        expected.extend_from_slice(&framed(&small));
        let big = "y".repeat(50_000);
        let mut rest = None;
        for id in 2..10_000 {
            let f = frame(id, &big);
            let whole = framed(&f);
            match sink.write(Delivery::Event(f.clone(), "firehose")) {
                None => expected.extend_from_slice(&whole),
                Some(Delivery::Rest(bytes)) => {
                    let taken = whole.len() - bytes.len();
                    assert!(taken > 0 && !bytes.is_empty());
                    assert_eq!(bytes, whole[taken..]);
                    expected.extend_from_slice(&whole[..taken]);
                    rest = Some(bytes);
                    break;
                }
                Some(Delivery::Event(..)) => break,
                Some(_) => panic!("an event comes back as itself or its rest"),
            }
        }
        let rest = rest.expect("a 50 KB frame overflows an 8 KB send buffer");
        expected.extend_from_slice(&rest);
        let mut writer = SharedTcp(server);
        let mut got = vec![0u8; expected.len()];
        let (wrote, read) = tokio::join!(
            tokio::io::AsyncWriteExt::write_all(&mut writer, &rest),
            client.read_exact(&mut got)
        );
        wrote.unwrap();
        read.unwrap();
        assert!(got == expected, "whole frames, in order");
    }

    /// A write that stops inside the header leaves the rest of the header,
    /// the whole body and the tail; one inside the body, the body's rest
    /// and the tail.
    #[test]
    fn the_unwritten_part_of_a_header_body_and_tail() {
        let parts = [b"ab".as_slice(), b"cdef".as_slice(), b"\r\n".as_slice()];
        assert_eq!(unwritten(&parts, 0), b"abcdef\r\n");
        assert_eq!(unwritten(&parts, 1), b"bcdef\r\n");
        assert_eq!(unwritten(&parts, 2), b"cdef\r\n");
        assert_eq!(unwritten(&parts, 5), b"f\r\n");
        assert_eq!(unwritten(&parts, 7), b"\n");
        assert_eq!(unwritten(&parts, 8), b"");
        assert_eq!(unwritten(&parts[..2], 6), b"");
    }
}
