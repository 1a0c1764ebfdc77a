//! The WebSocket protocol (RFC 6455) as the streams speak it, with
//! permessage-deflate (RFC 7692): the opening handshake, the frames the
//! server writes (unmasked, never fragmented) and an incremental reader of
//! the client's frames. No I/O here: the connection loop
//! (`http/stream/ws.rs`) moves the bytes.
//!
//! Written here rather than taken from a WebSocket library so that an event
//! is compressed once for every socket (the library compresses per
//! connection, or not at all), and so that an idle socket holds no buffer:
//! the reader's buffers are empty until a client sends something.

use super::deflate::SYNC_TAIL;
use axum::http::HeaderMap;
use base64::Engine as _;
use sha1::{Digest, Sha1};

/// Frame opcodes.
pub(crate) mod op {
    /// The rest of a fragmented message.
    pub(crate) const CONTINUATION: u8 = 0x0;
    /// A text message.
    pub(crate) const TEXT: u8 = 0x1;
    /// A binary message.
    pub(crate) const BINARY: u8 = 0x2;
    /// The closing handshake.
    pub(crate) const CLOSE: u8 = 0x8;
    /// A ping.
    pub(crate) const PING: u8 = 0x9;
    /// A pong.
    pub(crate) const PONG: u8 = 0xA;
}

/// Close codes the server sends.
pub(crate) mod close {
    /// The stream is over.
    pub(crate) const NORMAL: u16 = 1000;
    /// The client broke the protocol.
    pub(crate) const PROTOCOL: u16 = 1002;
    /// A text message that is not UTF-8 (or a malformed compressed one).
    pub(crate) const INVALID_DATA: u16 = 1007;
    /// A message larger than the server reads.
    pub(crate) const TOO_BIG: u16 = 1009;
    /// The server is restarting: come back later (the reason names when).
    pub(crate) const RESTART: u16 = 1012;
}

/// The extension response when the client's permessage-deflate offer is
/// taken: the server compresses every message on its own (so one event's
/// bytes serve every socket), and asks the same of the client, so a
/// compressed control message is inflated without keeping a 32 KiB window
/// per socket.
const DEFLATE_RESPONSE: &str =
    "permessage-deflate; server_no_context_takeover; client_no_context_takeover";

/// A valid opening handshake.
#[derive(Debug)]
pub(crate) struct Handshake {
    /// `Sec-WebSocket-Accept`.
    accept: String,
    /// Whether permessage-deflate was negotiated.
    pub deflate: bool,
}

/// Whether a comma-separated header holds `token` (case-insensitive).
fn has_token(headers: &HeaderMap, name: &str, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

impl Handshake {
    /// Reads an upgrade request's headers (RFC 6455 §4.2.1); the error says
    /// what is wrong.
    pub(crate) fn read(headers: &HeaderMap) -> Result<Handshake, &'static str> {
        if !has_token(headers, "upgrade", "websocket") {
            return Err("The Upgrade header must be websocket.");
        }
        if !has_token(headers, "connection", "upgrade") {
            return Err("The Connection header must include upgrade.");
        }
        if headers
            .get("sec-websocket-version")
            .is_none_or(|v| v.as_bytes() != b"13")
        {
            return Err("Sec-WebSocket-Version must be 13.");
        }
        let key = headers
            .get("sec-websocket-key")
            .map(|v| v.as_bytes().trim_ascii())
            .filter(|k| {
                base64::engine::general_purpose::STANDARD
                    .decode(k)
                    .is_ok_and(|raw| raw.len() == 16)
            })
            .ok_or("Sec-WebSocket-Key must be 16 bytes in base64.")?;
        let mut sha = Sha1::new();
        sha.update(key);
        sha.update(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
        let accept = base64::engine::general_purpose::STANDARD.encode(sha.finalize());
        let deflate = headers
            .get_all("sec-websocket-extensions")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(deflate_offer_acceptable);
        Ok(Handshake { accept, deflate })
    }

    /// The `101 Switching Protocols` response's headers.
    pub(crate) fn headers(&self) -> Vec<(&'static str, &str)> {
        let mut headers = vec![
            ("upgrade", "websocket"),
            ("connection", "upgrade"),
            ("sec-websocket-accept", self.accept.as_str()),
        ];
        if self.deflate {
            headers.push(("sec-websocket-extensions", DEFLATE_RESPONSE));
        }
        headers
    }

    /// The `101 Switching Protocols` response.
    pub(crate) fn response_head(&self) -> String {
        let mut head = String::from("HTTP/1.1 101 Switching Protocols\r\n");
        for (name, value) in self.headers() {
            head.push_str(name);
            head.push_str(": ");
            head.push_str(value);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        head
    }
}

/// Whether one permessage-deflate offer can be taken as
/// [`DEFLATE_RESPONSE`] answers it: every parameter known, none twice, and
/// no smaller server window than 32 KiB asked (the server's pieces are
/// deflated with the full window).
fn deflate_offer_acceptable(offer: &str) -> bool {
    let mut parts = offer.split(';').map(str::trim);
    if !parts
        .next()
        .is_some_and(|n| n.eq_ignore_ascii_case("permessage-deflate"))
    {
        return false;
    }
    let mut seen: Vec<&str> = Vec::new();
    for param in parts {
        let (name, value) = match param.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim().trim_matches('"'))),
            None => (param, None),
        };
        if seen.contains(&name) {
            return false;
        }
        seen.push(name);
        let bits = |v: &str| v.parse::<u8>().ok().filter(|b| (8..=15).contains(b));
        let ok = match (name, value) {
            ("server_no_context_takeover" | "client_no_context_takeover", None) => true,
            ("client_max_window_bits", None) => true,
            ("client_max_window_bits", Some(v)) => bits(v).is_some(),
            ("server_max_window_bits", Some(v)) => bits(v) == Some(15),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// A frame header (FIN set, RSV1 when the payload is deflated) in a
/// buffer of its own, and its length.
pub(crate) fn header(opcode: u8, deflated: bool, len: usize) -> ([u8; 10], usize) {
    let mut h = [0u8; 10];
    h[0] = 0x80 | if deflated { 0x40 } else { 0 } | opcode;
    let n = if len < 126 {
        h[1] = len as u8;
        2
    } else if let Ok(len) = u16::try_from(len) {
        h[1] = 126;
        h[2..4].copy_from_slice(&len.to_be_bytes());
        4
    } else {
        h[1] = 127;
        h[2..10].copy_from_slice(&(len as u64).to_be_bytes());
        10
    };
    (h, n)
}

/// Appends a frame header: FIN set, RSV1 when the payload is deflated.
pub(crate) fn frame_header(opcode: u8, deflated: bool, len: usize, out: &mut Vec<u8>) {
    let (h, n) = header(opcode, deflated, len);
    out.extend_from_slice(&h[..n]);
}

/// Appends a whole frame.
pub(crate) fn frame(opcode: u8, payload: &[u8], out: &mut Vec<u8>) {
    frame_header(opcode, false, payload.len(), out);
    out.extend_from_slice(payload);
}

/// Appends a close frame with `code` and a reason (at most 123 bytes).
pub(crate) fn close_frame(code: u16, reason: &str, out: &mut Vec<u8>) {
    let mut end = reason.len().min(123);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let mut payload = code.to_be_bytes().to_vec();
    payload.extend_from_slice(&reason.as_bytes()[..end]);
    frame(op::CLOSE, &payload, out);
}

/// A message from the client.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Message {
    /// A text message.
    Text(String),
    /// A binary message (the streams read none; it still counts as life).
    Binary,
    /// A ping, to be answered with a pong carrying the same payload.
    Ping(Vec<u8>),
    /// A pong.
    Pong,
    /// The client's close frame (its code, if it sent one).
    Close(Option<u16>),
}

/// How the client broke the protocol: the close code and reason to answer
/// with before closing.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ProtocolError {
    /// The close code.
    pub code: u16,
    /// A human sentence.
    pub reason: &'static str,
}

fn broke(code: u16, reason: &'static str) -> ProtocolError {
    ProtocolError { code, reason }
}

/// The client's frames, read incrementally from whatever bytes arrive.
#[derive(Debug)]
pub(crate) struct Reader {
    /// Whether permessage-deflate was negotiated.
    deflate: bool,
    /// The largest message (and frame) read, compressed or not.
    max_message: usize,
    /// Bytes of a frame not complete yet (empty, unallocated, while idle).
    pending: Vec<u8>,
    /// The fragments of a data message so far.
    message: Vec<u8>,
    /// The opcode of the data message being assembled and whether it is
    /// compressed; `None` between messages.
    assembling: Option<(u8, bool)>,
}

impl Reader {
    /// A reader for a socket with or without permessage-deflate.
    pub(crate) fn new(deflate: bool, max_message: usize) -> Reader {
        Reader {
            deflate,
            max_message,
            pending: Vec::new(),
            message: Vec::new(),
            assembling: None,
        }
    }

    /// Takes bytes read from the socket.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
    }

    /// The next complete message, `Ok(None)` when more bytes are needed.
    pub(crate) fn next_message(&mut self) -> Result<Option<Message>, ProtocolError> {
        loop {
            let Some((fin, rsv1, opcode, payload)) = self.frame()? else {
                // Between frames an idle socket keeps no buffer.
                if self.pending.is_empty() && self.pending.capacity() > 0 {
                    self.pending = Vec::new();
                }
                return Ok(None);
            };
            if opcode >= op::CLOSE {
                return self.control(opcode, payload).map(Some);
            }
            match (opcode, self.assembling) {
                (op::CONTINUATION, None) => {
                    return Err(broke(close::PROTOCOL, "A continuation without a message."))
                }
                (op::CONTINUATION, Some(_)) => {}
                (_, Some(_)) => {
                    return Err(broke(
                        close::PROTOCOL,
                        "A new message before the last one ended.",
                    ))
                }
                (_, None) => self.assembling = Some((opcode, rsv1)),
            }
            if self.message.len() + payload.len() > self.max_message {
                return Err(broke(close::TOO_BIG, "The message is too large."));
            }
            self.message.extend_from_slice(&payload);
            if !fin {
                continue;
            }
            let (opcode, compressed) = self.assembling.take().unwrap_or((op::BINARY, false));
            let mut data = std::mem::take(&mut self.message);
            if compressed {
                data = inflate(&data, self.max_message)?;
            }
            if opcode == op::BINARY {
                return Ok(Some(Message::Binary));
            }
            return String::from_utf8(data)
                .map(|t| Some(Message::Text(t)))
                .map_err(|_| broke(close::INVALID_DATA, "A text message is not valid UTF-8."));
        }
    }

    /// A control frame's message.
    fn control(&self, opcode: u8, payload: Vec<u8>) -> Result<Message, ProtocolError> {
        match opcode {
            op::PING => Ok(Message::Ping(payload)),
            op::PONG => Ok(Message::Pong),
            _ => {
                if payload.is_empty() {
                    return Ok(Message::Close(None));
                }
                if payload.len() == 1 {
                    return Err(broke(close::PROTOCOL, "A close frame's code is two bytes."));
                }
                let code = u16::from_be_bytes([payload[0], payload[1]]);
                let valid = matches!(code, 1000..=1003 | 1007..=1011 | 3000..=4999);
                if !valid {
                    return Err(broke(
                        close::PROTOCOL,
                        "The close code is not one a peer may send.",
                    ));
                }
                if std::str::from_utf8(&payload[2..]).is_err() {
                    return Err(broke(
                        close::INVALID_DATA,
                        "The close reason is not valid UTF-8.",
                    ));
                }
                Ok(Message::Close(Some(code)))
            }
        }
    }

    /// The next whole frame, unmasked: FIN, RSV1, opcode and payload.
    #[allow(clippy::type_complexity)]
    fn frame(&mut self) -> Result<Option<(bool, bool, u8, Vec<u8>)>, ProtocolError> {
        let b = &self.pending;
        if b.len() < 2 {
            return Ok(None);
        }
        let (fin, rsv1, rsv23, opcode) =
            (b[0] & 0x80 != 0, b[0] & 0x40 != 0, b[0] & 0x30, b[0] & 0x0f);
        let masked = b[1] & 0x80 != 0;
        if rsv23 != 0 {
            return Err(broke(close::PROTOCOL, "Reserved bits are set."));
        }
        if !masked {
            return Err(broke(close::PROTOCOL, "A client frame must be masked."));
        }
        let control = opcode >= op::CLOSE;
        match opcode {
            op::CONTINUATION | op::TEXT | op::BINARY | op::CLOSE | op::PING | op::PONG => {}
            _ => return Err(broke(close::PROTOCOL, "Unknown opcode.")),
        }
        // RSV1 marks a compressed message, on its first frame only.
        if rsv1 && (!self.deflate || control || opcode == op::CONTINUATION) {
            return Err(broke(
                close::PROTOCOL,
                "RSV1 is set where no compression applies.",
            ));
        }
        let (len, at) = match b[1] & 0x7f {
            126 if b.len() >= 4 => (u64::from(u16::from_be_bytes([b[2], b[3]])), 4),
            127 if b.len() >= 10 => {
                let mut n = [0u8; 8];
                n.copy_from_slice(&b[2..10]);
                (u64::from_be_bytes(n), 10)
            }
            126 | 127 => return Ok(None),
            n => (u64::from(n), 2),
        };
        if control && (!fin || len > 125) {
            return Err(broke(
                close::PROTOCOL,
                "A control frame must be whole and at most 125 bytes.",
            ));
        }
        if len > self.max_message as u64 {
            return Err(broke(close::TOO_BIG, "The message is too large."));
        }
        let len = len as usize;
        let end = at + 4 + len;
        if b.len() < end {
            return Ok(None);
        }
        let mask = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        let mut payload = b[at + 4..end].to_vec();
        for (i, byte) in payload.iter_mut().enumerate() {
            *byte ^= mask[i % 4];
        }
        self.pending.drain(..end);
        Ok(Some((fin, rsv1, opcode, payload)))
    }
}

/// Inflates a permessage-deflate message (the tail appended back), with a
/// fresh window (the client was asked for no context takeover), refusing
/// one that grows past `max`.
fn inflate(data: &[u8], max: usize) -> Result<Vec<u8>, ProtocolError> {
    let too_big = || broke(close::TOO_BIG, "The message is too large.");
    let malformed = || broke(close::INVALID_DATA, "A compressed message is malformed.");
    let mut input = data.to_vec();
    input.extend_from_slice(&SYNC_TAIL);
    let mut inflater = flate2::Decompress::new(false);
    let mut out = Vec::with_capacity((data.len() * 4).clamp(64, max + 1));
    loop {
        if out.len() == out.capacity() {
            if out.len() > max {
                return Err(too_big());
            }
            out.reserve(out.len().max(64).min(max + 1 - out.len()));
        }
        let before = (inflater.total_in(), inflater.total_out());
        let read = before.0 as usize;
        let status = inflater
            .decompress_vec(&input[read..], &mut out, flate2::FlushDecompress::Sync)
            .map_err(|_| malformed())?;
        if out.len() > max {
            return Err(too_big());
        }
        let room = out.len() < out.capacity();
        if status == flate2::Status::StreamEnd
            || (inflater.total_in() as usize == input.len() && room)
        {
            return Ok(out);
        }
        if room && (inflater.total_in(), inflater.total_out()) == before {
            // Input left, room for output, and no progress.
            return Err(malformed());
        }
    }
}

#[cfg(test)]
mod tests;
