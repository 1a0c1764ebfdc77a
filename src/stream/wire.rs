//! How a stream's output becomes bytes: the encodings of plain streams
//! (SSE, NDJSON), their response head, and the batch that one write sends.
//! Used by both plain-stream paths: the raw socket (`serve.rs`) and the
//! hyper body (`http/stream.rs`).

use super::{Feed, Out};
use bytes::Bytes;

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

/// A control event's `type` (its SSE event name).
fn control_kind(json: &str) -> String {
    serde_json::from_str::<serde_json::Value>(json)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
        .unwrap_or_else(|| "message".to_string())
}

/// How a plain (not WebSocket) stream is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Server-Sent Events.
    Sse,
    /// Newline-delimited JSON.
    Ndjson,
}

impl Encoding {
    /// The response's Content-Type.
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Sse => "text/event-stream",
            Encoding::Ndjson => "application/x-ndjson",
        }
    }

    /// What the body starts with (SSE: the reconnection delay).
    pub fn preamble(self) -> &'static str {
        match self {
            Encoding::Sse => "retry: 3000\n\n",
            Encoding::Ndjson => "",
        }
    }
}

/// Appends one output to an SSE or NDJSON chunk; returns events written.
pub fn write_out(chunks: &mut Vec<Bytes>, out: &Out, encoding: Encoding) -> u64 {
    let sse = encoding == Encoding::Sse;
    match out {
        Out::Event(f, _) => {
            chunks.push(if sse { f.sse.clone() } else { f.ndjson.clone() });
            1
        }
        Out::Control(json) => {
            let text = if sse {
                format!("event: {}\ndata: {json}\n\n", control_kind(json))
            } else {
                format!("{json}\n")
            };
            chunks.push(Bytes::from(text));
            0
        }
        Out::Keepalive => {
            chunks.push(Bytes::from_static(if sse {
                b": keepalive\n\n"
            } else {
                b"\n"
            }));
            0
        }
    }
}

/// The raw socket's response head for a plain stream, with the preamble.
pub fn response_head(encoding: Encoding) -> String {
    let mut head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {}\r\n",
        encoding.content_type()
    );
    for (name, value) in HEADERS {
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head.push_str(encoding.preamble());
    head
}

/// Encodes `first` and whatever else the feed has ready (up to
/// [`MAX_BATCH`]) into `chunks`; returns the events among them.
pub fn batch(feed: &mut Feed, first: &Out, encoding: Encoding, chunks: &mut Vec<Bytes>) -> u64 {
    let mut n = write_out(chunks, first, encoding);
    while chunks.len() < MAX_BATCH {
        let Some(out) = feed.try_next() else { break };
        n += write_out(chunks, &out, encoding);
    }
    n
}
