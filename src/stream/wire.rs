//! How a stream's output becomes bytes, for every transport: the encoding
//! of each output (an event's shared bytes, a control event, a keep-alive),
//! the plain streams' response head and headers, and the one batch-drain
//! loop used by the raw socket (`serve.rs`), the hyper body and the
//! WebSocket (`http/stream/`).

use super::{Feed, Out};
use bytes::{Bytes, BytesMut};

/// Outputs sent in one write at most.
pub const MAX_BATCH: usize = 256;

/// Response headers of every plain stream besides its Content-Type: never
/// cached or buffered by a proxy, and the connection closes with the stream
/// (it ends only when it is over for good).
pub const HEADERS: [(&str, &str); 3] = [
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
    ("connection", "close"),
];

/// How a stream reaches its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Server-Sent Events (the default of a plain GET).
    Sse,
    /// Newline-delimited JSON (`Accept: application/x-ndjson`).
    Ndjson,
    /// A stream path upgraded to WebSocket: one text message per event.
    WebSocket,
    /// The multiplexed WebSocket (`/api/v1/stream`): each event names the
    /// subscription it is for.
    Multiplexed,
}

impl Transport {
    /// Its name in logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Sse => "sse",
            Transport::Ndjson => "ndjson",
            Transport::WebSocket | Transport::Multiplexed => "websocket",
        }
    }

    /// The response's Content-Type (plain streams only).
    pub fn content_type(self) -> &'static str {
        match self {
            Transport::Sse => "text/event-stream",
            Transport::Ndjson => "application/x-ndjson",
            Transport::WebSocket | Transport::Multiplexed => "",
        }
    }

    /// What the body starts with (SSE: the reconnection delay).
    pub fn preamble(self) -> &'static str {
        match self {
            Transport::Sse => "retry: 3000\n\n",
            _ => "",
        }
    }

    /// The bytes of one output: for a plain stream what goes on the wire,
    /// for a WebSocket one text message's payload. `None` for a WebSocket
    /// keep-alive, which is a ping frame, not a message.
    pub fn encode(self, out: &Out) -> Option<Bytes> {
        Some(match (self, out) {
            (Transport::Sse, Out::Event(f, _)) => f.sse.clone(),
            (Transport::Ndjson, Out::Event(f, _)) => f.ndjson.clone(),
            (Transport::WebSocket, Out::Event(f, _)) => f.json.clone(),
            (Transport::Multiplexed, Out::Event(f, stream)) => {
                // `{"stream":"<name>",` then the event's fields.
                let rest = f.json.strip_prefix(b"{").unwrap_or(&f.json);
                let mut buf = BytesMut::with_capacity(f.json.len() + 32);
                buf.extend_from_slice(b"{\"stream\":\"");
                buf.extend_from_slice(stream.as_bytes());
                buf.extend_from_slice(b"\",");
                buf.extend_from_slice(rest);
                buf.freeze()
            }
            (Transport::Sse, Out::Control(c)) => {
                let mut buf = BytesMut::with_capacity(c.json.len() + 32);
                buf.extend_from_slice(b"event: ");
                buf.extend_from_slice(c.kind.as_bytes());
                buf.extend_from_slice(b"\ndata: ");
                buf.extend_from_slice(&c.json);
                buf.extend_from_slice(b"\n\n");
                buf.freeze()
            }
            (Transport::Ndjson, Out::Control(c)) => {
                let mut buf = BytesMut::with_capacity(c.json.len() + 1);
                buf.extend_from_slice(&c.json);
                buf.extend_from_slice(b"\n");
                buf.freeze()
            }
            (Transport::WebSocket | Transport::Multiplexed, Out::Control(c)) => c.json.clone(),
            (Transport::Sse, Out::Keepalive) => Bytes::from_static(b": keepalive\n\n"),
            (Transport::Ndjson, Out::Keepalive) => Bytes::from_static(b"\n"),
            (Transport::WebSocket | Transport::Multiplexed, Out::Keepalive) => return None,
        })
    }

    /// The raw socket's response head for a plain stream, with the preamble.
    pub fn response_head(self) -> String {
        let mut head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {}\r\n",
            self.content_type()
        );
        for (name, value) in HEADERS {
            head.push_str(name);
            head.push_str(": ");
            head.push_str(value);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        head.push_str(self.preamble());
        head
    }
}

/// Encodes `first` and whatever else the feed has ready (up to
/// [`MAX_BATCH`]) into `chunks` (one per output: for a WebSocket, one
/// message each); returns the events among them.
pub fn batch(feed: &mut Feed, first: &Out, transport: Transport, chunks: &mut Vec<Bytes>) -> u64 {
    let mut events = 0;
    let mut add = |out: &Out| {
        events += u64::from(matches!(out, Out::Event(..)));
        if let Some(bytes) = transport.encode(out) {
            chunks.push(bytes);
        }
    };
    add(first);
    for _ in 1..MAX_BATCH {
        let Some(out) = feed.try_next() else { break };
        add(&out);
    }
    events
}

/// One buffer holding `chunks` back to back (a plain stream's batch in one
/// write); the chunk itself when there is one.
pub fn concat(chunks: &mut Vec<Bytes>) -> Bytes {
    if chunks.len() == 1 {
        return chunks.pop().unwrap_or_default();
    }
    let mut buf = BytesMut::with_capacity(chunks.iter().map(Bytes::len).sum());
    for c in chunks.drain(..) {
        buf.extend_from_slice(&c);
    }
    buf.freeze()
}
