//! How a stream's output becomes bytes, for every transport: each output
//! (an event's shared bytes, a control event, a keep-alive) encoded by the
//! connection's [`Encoder`] straight into the buffer that is written, in
//! batches drained from the feed; plain (SSE, NDJSON) bodies gzipped when
//! the client accepts it, WebSocket messages framed, deflated when the
//! client negotiated permessage-deflate. Used by the raw socket
//! (`serve.rs`), the hyper body and the WebSocket loop (`http/stream/`).

pub mod chunked;
mod send;

use super::coding::Coding;
use super::deflate::{Deflated, Gzip};
use super::frame::{ControlFrame, EventId, Frame, DEFLATED_FORMS};
use super::queue::Out;
use super::ws_codec::{self, op};
use super::zstd::Dictionaries;
use super::zstd_body::ZstdBody;
pub use send::{send, send_telling};
use std::sync::Arc;
use std::sync::OnceLock;

/// Outputs encoded in one write at most.
pub const MAX_BATCH: usize = 256;

/// Response headers of every plain stream besides its Content-Type: never
/// cached or buffered by a proxy, and the connection closes with the stream
/// (it ends only when it is over for good).
pub const HEADERS: [(&str, &str); 5] = [
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
    ("connection", "close"),
    ("vary", "accept-encoding"),
    ("x-content-type-options", "nosniff"),
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
    fn preamble(self) -> &'static [u8] {
        match self {
            Transport::Sse => b"retry: 3000\n\n",
            _ => b"",
        }
    }

    /// Which of an event's [`Frame::deflated`] forms this transport sends
    /// for the subscription named `stream`; `None` for a list stream's
    /// multiplexed message (a status may be in several lists, each message
    /// naming its own, so it is not shared).
    fn form(self, stream: &str) -> Option<usize> {
        Some(match self {
            Transport::Sse => 0,
            Transport::Ndjson => 1,
            Transport::WebSocket => 2,
            Transport::Multiplexed => {
                3 + match stream {
                    "filter" => 0,
                    "user" => 1,
                    "sample" => 2,
                    "search" => 4,
                    name if name.starts_with("group") => 5,
                    name if name.starts_with("list") => return None,
                    _ => 3,
                }
            }
        })
    }
}

const _: () = assert!(DEFLATED_FORMS == 9, "Transport::form names every form");

/// The multiplexed message of an event: `{"stream":"<name>",` then the
/// event's own fields.
fn multiplexed(json: &[u8], stream: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"stream\":\"");
    out.extend_from_slice(stream.as_bytes());
    out.extend_from_slice(b"\",");
    out.extend_from_slice(json.strip_prefix(b"{").unwrap_or(json));
}

/// The length of [`multiplexed`]'s output.
fn multiplexed_len(json: &[u8], stream: &str) -> usize {
    json.strip_prefix(b"{").unwrap_or(json).len() + stream.len() + 13
}

/// A control event as the transport carries it (uncompressed).
fn control_bytes(transport: Transport, c: &ControlFrame) -> Vec<u8> {
    match transport {
        Transport::Sse => {
            let mut buf = Vec::with_capacity(c.json.len() + 48);
            if let Some(ms) = c.retry_ms {
                buf.extend_from_slice(format!("retry: {ms}\n").as_bytes());
            }
            buf.extend_from_slice(b"event: ");
            buf.extend_from_slice(c.kind.as_bytes());
            buf.extend_from_slice(b"\ndata: ");
            buf.extend_from_slice(&c.json);
            buf.extend_from_slice(b"\n\n");
            buf
        }
        Transport::Ndjson => {
            let mut buf = Vec::with_capacity(c.json.len() + 1);
            buf.extend_from_slice(&c.json);
            buf.push(b'\n');
            buf
        }
        Transport::WebSocket | Transport::Multiplexed => c.json.to_vec(),
    }
}

/// A plain stream's keep-alive.
pub(crate) fn keepalive_bytes(transport: Transport) -> &'static [u8] {
    match transport {
        Transport::Sse => b": keepalive\n\n",
        _ => b"\n",
    }
}

/// A plain stream's keep-alive carrying the stream's position: on SSE the
/// comment and an `id:` line with no data (the browser's `lastEventId`
/// moves, no event is dispatched), on NDJSON a `position` control event.
pub(crate) fn position_bytes(transport: Transport, at: EventId) -> Vec<u8> {
    match transport {
        Transport::Sse => format!(": keepalive\nid: {at}\n\n").into_bytes(),
        _ => format!("{}\n", position_json(at)).into_bytes(),
    }
}

/// The `position` control event.
fn position_json(at: EventId) -> String {
    format!("{{\"type\":\"position\",\"id\":\"{at}\"}}")
}

/// Bytes every gzip body of `transport` may carry (its preamble, its
/// keep-alive), deflated once per process.
fn deflated_once(transport: Transport, keepalive: bool) -> &'static Deflated {
    static CELLS: [OnceLock<Deflated>; 4] = [const { OnceLock::new() }; 4];
    let index = usize::from(transport == Transport::Sse) * 2 + usize::from(keepalive);
    CELLS[index].get_or_init(|| {
        Deflated::of(if keepalive {
            keepalive_bytes(transport)
        } else {
            transport.preamble()
        })
    })
}

/// The ping a WebSocket keep-alive sends.
const PING: [u8; 4] = [0x80 | op::PING, 2, b'f', b'h'];

/// One connection's encoding: its transport and compression.
#[derive(Debug)]
pub struct Encoder {
    transport: Transport,
    /// A plain body's gzip state, when the client accepts gzip.
    gzip: Option<Box<Gzip>>,
    /// A plain body's zstd state, when the client asked for zstd.
    zbody: Option<Box<ZstdBody>>,
    /// Whether WebSocket messages are deflated (permessage-deflate).
    deflate: bool,
    /// A `compress=zstd` WebSocket's dictionaries: its events go as binary
    /// messages, each a zstd frame shared by every such socket.
    zstd: Option<Arc<Dictionaries>>,
    /// For a page on another origin that may read the stream (CORS): the
    /// `Access-Control-Allow-Origin` value the raw response head carries.
    cors: Option<String>,
    /// Whether a plain stream on the raw socket frames its body in chunks
    /// (HTTP/1.1 clients; see [`chunked`]).
    chunked: bool,
}

impl Encoder {
    /// For a plain stream (SSE or NDJSON), encoded by `coding` (zstd only
    /// while fewer than `max_zstd` zstd bodies are open in the process;
    /// past that as `fallback`).
    pub fn plain(
        transport: Transport,
        coding: Coding,
        max_zstd: usize,
        fallback: Coding,
    ) -> Encoder {
        let zbody = match coding {
            Coding::Zstd => ZstdBody::open(max_zstd).map(Box::new),
            _ => None,
        };
        let gzip = coding == Coding::Gzip
            || (coding == Coding::Zstd && zbody.is_none() && fallback == Coding::Gzip);
        Encoder {
            transport,
            gzip: gzip.then(Box::default),
            zbody,
            deflate: false,
            zstd: None,
            cors: None,
            chunked: false,
        }
    }

    /// For a WebSocket, deflating its messages or not, or (`zstd`) sending
    /// its events as zstd frames made with the shared dictionary.
    pub fn websocket(
        transport: Transport,
        deflate: bool,
        zstd: Option<Arc<Dictionaries>>,
    ) -> Encoder {
        Encoder {
            transport,
            gzip: None,
            zbody: None,
            deflate,
            zstd,
            cors: None,
            chunked: false,
        }
    }

    /// Lets a page on another origin read the stream (the raw response
    /// head's CORS headers): `allow` is the `Access-Control-Allow-Origin`
    /// value.
    pub fn allow_origin(&mut self, allow: Option<String>) {
        self.cors = allow;
    }

    /// Frames the raw socket's body in chunks (an HTTP/1.1 request's plain
    /// stream): the head says so, and [`Encoder::start`]'s bytes, every
    /// [`Encoder::batch`] and [`Encoder::finish`] are framed.
    pub fn frame_in_chunks(&mut self) {
        self.chunked = true;
    }

    /// Whether the body is framed in chunks.
    pub fn is_chunked(&self) -> bool {
        self.chunked
    }

    /// The transport.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// Whether the stream is compressed (gzip, zstd or permessage-deflate).
    pub fn is_compressed(&self) -> bool {
        self.gzip.is_some() || self.zbody.is_some() || self.deflate || self.zstd.is_some()
    }

    /// A plain stream's response headers besides the status.
    pub fn headers(&self) -> impl Iterator<Item = (&'static str, &'static str)> {
        let encoding = match (&self.gzip, &self.zbody) {
            (Some(_), _) => Some(("content-encoding", "gzip")),
            (_, Some(_)) => Some(("content-encoding", "zstd")),
            _ => None,
        };
        std::iter::once(("content-type", self.transport.content_type()))
            .chain(HEADERS)
            .chain(encoding)
    }

    /// Appends the start of a plain body: the gzip header, the preamble.
    pub fn start(&mut self, out: &mut Vec<u8>) {
        let preamble = self.transport.preamble();
        if let Some(z) = &mut self.zbody {
            // The frame starts even with no preamble (NDJSON): a client
            // sees zstd bytes from the first read.
            z.push(preamble, out);
            return;
        }
        match &mut self.gzip {
            Some(gz) => {
                out.extend_from_slice(&Gzip::HEADER);
                if !preamble.is_empty() {
                    gz.push(deflated_once(self.transport, false), out);
                }
            }
            None => out.extend_from_slice(preamble),
        }
    }

    /// Appends the raw socket's response head for a plain stream, then the
    /// start of its body.
    pub fn response_head(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        for (name, value) in self.headers() {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        if let Some(allow) = &self.cors {
            out.extend_from_slice(b"access-control-allow-origin: ");
            out.extend_from_slice(allow.as_bytes());
            out.extend_from_slice(
                b"\r\naccess-control-expose-headers: Retry-After, X-Request-Id\r\n",
            );
            if allow != "*" {
                out.extend_from_slice(b"vary: origin\r\n");
            }
        }
        if self.chunked {
            out.extend_from_slice(b"transfer-encoding: chunked\r\n");
        }
        out.extend_from_slice(b"\r\n");
        let body = out.len();
        self.start(out);
        if self.chunked {
            chunked::frame_from(out, body);
        }
    }

    /// Appends the end of a plain body that ends for good (the gzip
    /// trailer; nothing uncompressed).
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let from = out.len();
        if let Some(gz) = &self.gzip {
            gz.finish(out);
        }
        if let Some(z) = &mut self.zbody {
            z.finish(out);
        }
        if self.chunked {
            chunked::frame_from(out, from);
            out.extend_from_slice(chunked::LAST);
        }
    }

    /// Appends one output; returns whether it was an event.
    pub fn push(&mut self, output: &Out, out: &mut Vec<u8>) -> bool {
        match output {
            Out::Event(f, stream) => {
                self.event(f, stream, out);
                true
            }
            Out::Control(c) => {
                let bytes = control_bytes(self.transport, c);
                match &self.zstd {
                    // A stream's own events (not a socket's answers) go
                    // as zstd frames too.
                    Some(dicts) if matches!(c.kind, "warning" | "disconnect") => {
                        match dicts.current() {
                            Some(d) => ws_codec::frame(op::BINARY, &d.compress(&bytes), out),
                            None => self.piece(&bytes, out),
                        }
                    }
                    _ => self.piece(&bytes, out),
                }
                false
            }
            Out::Raw(bytes) => {
                out.extend_from_slice(bytes);
                false
            }
            Out::Keepalive(at) => {
                match (self.transport, &mut self.gzip, at) {
                    (Transport::WebSocket | Transport::Multiplexed, _, at) => {
                        out.extend_from_slice(&PING);
                        if let Some(at) = at {
                            self.piece(position_json(*at).as_bytes(), out);
                        }
                    }
                    (t, _, Some(at)) => self.piece(&position_bytes(t, *at), out),
                    (t, Some(gz), None) => gz.push(deflated_once(t, true), out),
                    (t, None, None) => match &mut self.zbody {
                        Some(z) => z.push(keepalive_bytes(t), out),
                        None => out.extend_from_slice(keepalive_bytes(t)),
                    },
                }
                false
            }
        }
    }

    /// [`Encoder::push`], into a chunk begun at `from` when the body is
    /// chunked: the rest of a write the hub began ends the chunk, goes as it
    /// is, and a new one begins; an uncompressed event goes the same way, as
    /// its shared chunk.
    fn push_framed(&mut self, output: &Out, out: &mut Vec<u8>, from: &mut usize) -> bool {
        if !self.chunked {
            return self.push(output, out);
        }
        let whole: &[u8] = match output {
            Out::Raw(bytes) => bytes,
            Out::Event(f, _) if self.gzip.is_none() && self.zbody.is_none() => {
                match self.transport {
                    Transport::Sse => f.chunk(false),
                    Transport::Ndjson => f.chunk(true),
                    _ => return self.push(output, out),
                }
            }
            _ => return self.push(output, out),
        };
        chunked::frame_from(out, *from);
        out.extend_from_slice(whole);
        *from = out.len();
        matches!(output, Out::Event(..))
    }

    /// Appends bytes of this connection's own (a control event): deflated
    /// here when the connection compresses.
    fn piece(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        match (self.transport, &mut self.gzip) {
            (Transport::WebSocket | Transport::Multiplexed, _) => {
                if self.deflate {
                    let d = Deflated::of(bytes);
                    ws_codec::frame_header(op::TEXT, true, d.message().len(), out);
                    out.extend_from_slice(d.message());
                } else {
                    ws_codec::frame(op::TEXT, bytes, out);
                }
            }
            (_, Some(gz)) => gz.push(&Deflated::of(bytes), out),
            (_, None) => match &mut self.zbody {
                Some(z) => z.push(bytes, out),
                None => out.extend_from_slice(bytes),
            },
        }
    }

    /// Appends an event: its shared bytes, or its shared deflated bytes.
    fn event(&mut self, f: &Frame, stream: &str, out: &mut Vec<u8>) {
        let t = self.transport;
        let shared = |f: &Frame| match t {
            Transport::Sse => f.sse.clone(),
            Transport::Ndjson => f.ndjson.clone(),
            Transport::WebSocket => f.json.clone(),
            Transport::Multiplexed => {
                let mut buf = Vec::with_capacity(multiplexed_len(&f.json, stream));
                multiplexed(&f.json, stream, &mut buf);
                buf.into()
            }
        };
        // A socket is opened with its dictionary loaded (else it sends
        // plain text).
        let dict = self.zstd.as_ref().and_then(|d| d.current());
        if let (Transport::WebSocket | Transport::Multiplexed, Some(dict)) = (t, dict) {
            let own;
            let compress = || dict.compress(&shared(f));
            let z = match t.form(stream) {
                Some(form) => f.zstd(form, compress),
                None => {
                    own = compress();
                    &own
                }
            };
            ws_codec::frame(op::BINARY, z, out);
            return;
        }
        match (t, &mut self.gzip) {
            (Transport::WebSocket | Transport::Multiplexed, _) if self.deflate => {
                let own;
                let d = match t.form(stream) {
                    Some(form) => f.deflated(form, || shared(f)),
                    None => {
                        own = super::deflate::Deflated::of(&shared(f));
                        &own
                    }
                };
                ws_codec::frame_header(op::TEXT, true, d.message().len(), out);
                out.extend_from_slice(d.message());
            }
            (Transport::WebSocket, _) => ws_codec::frame(op::TEXT, &f.json, out),
            (Transport::Multiplexed, _) => {
                let len = multiplexed_len(&f.json, stream);
                ws_codec::frame_header(op::TEXT, false, len, out);
                multiplexed(&f.json, stream, out);
            }
            (_, Some(gz)) => gz.push(f.deflated(t.form(stream).unwrap_or(0), || shared(f)), out),
            (Transport::Sse, None) => match &mut self.zbody {
                Some(z) => z.push(&f.sse, out),
                None => out.extend_from_slice(&f.sse),
            },
            (Transport::Ndjson, None) => match &mut self.zbody {
                Some(z) => z.push(&f.ndjson, out),
                None => out.extend_from_slice(&f.ndjson),
            },
        }
    }

    /// [`Encoder::push`] into the chunk begun at `from`, for a write of
    /// several events: they share one chunk (a client's chunk parser is
    /// then paid once per write, not once per event); only the rest of a
    /// write the hub began ends the chunk and goes as it is.
    fn push_into_chunk(&mut self, output: &Out, out: &mut Vec<u8>, from: &mut usize) -> bool {
        if let (true, Out::Raw(bytes)) = (self.chunked, output) {
            chunked::frame_from(out, *from);
            out.extend_from_slice(bytes);
            *from = out.len();
            return false;
        }
        self.push(output, out)
    }

    /// Appends `first` and whatever else `ready` hands over at once (up to
    /// [`MAX_BATCH`]: a feed's `try_next`); returns the events among them.
    /// Chunked, one event alone goes as its shared chunk (a live event
    /// written to many connections is framed once), several as one chunk
    /// (a catch-up: 256 events to a chunk, not one each).
    pub fn batch(
        &mut self,
        mut ready: impl FnMut() -> Option<Out>,
        first: &Out,
        out: &mut Vec<u8>,
    ) -> u64 {
        // Chunked, the rest of a write the hub began (already framed) goes
        // as it is, between chunks; everything else in chunks.
        let mut from = out.len();
        let Some(second) = ready() else {
            let event = self.push_framed(first, out, &mut from);
            if self.chunked {
                chunked::frame_from(out, from);
            }
            return u64::from(event);
        };
        // A compressed plain body takes the batch's events as one piece
        // (one deflate or zstd flush a write, not one an event: a catch-up
        // to a client that takes gzip, as httpx does by default, was bound
        // by the per-event compression).
        let mut plain = Vec::new();
        let mut events = u64::from(self.push_many(first, &mut plain, out, &mut from));
        events += u64::from(self.push_many(&second, &mut plain, out, &mut from));
        for _ in 2..MAX_BATCH {
            let Some(next) = ready() else { break };
            events += u64::from(self.push_many(&next, &mut plain, out, &mut from));
        }
        self.flush_plain(&mut plain, out);
        if self.chunked {
            chunked::frame_from(out, from);
        }
        events
    }

    /// One item of a write of several: an event of a compressed plain
    /// body gathered into `plain` (compressed with the rest by
    /// [`Encoder::flush_plain`]), anything else after what was gathered.
    fn push_many(
        &mut self,
        output: &Out,
        plain: &mut Vec<u8>,
        out: &mut Vec<u8>,
        from: &mut usize,
    ) -> bool {
        let compressed = self.gzip.is_some() || self.zbody.is_some();
        match (output, self.transport) {
            (Out::Event(f, _), Transport::Sse) if compressed => plain.extend_from_slice(&f.sse),
            (Out::Event(f, _), Transport::Ndjson) if compressed => {
                plain.extend_from_slice(&f.ndjson)
            }
            _ => {
                self.flush_plain(plain, out);
                return self.push_into_chunk(output, out, from);
            }
        }
        true
    }

    /// Compresses what [`Encoder::push_many`] gathered, as one piece.
    fn flush_plain(&mut self, plain: &mut Vec<u8>, out: &mut Vec<u8>) {
        if !plain.is_empty() {
            self.piece(plain, out);
            plain.clear();
        }
    }
}

#[cfg(test)]
mod tests;
