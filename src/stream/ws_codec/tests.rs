use super::*;
use crate::stream::deflate::Deflated;

/// A client frame: masked, as a client must send it.
fn client_frame(first: u8, payload: &[u8]) -> Vec<u8> {
    let mask = [0x12, 0x34, 0x56, 0x78];
    let mut out = vec![first];
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len < 65536 {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    out
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, v.parse().unwrap());
    }
    h
}

const UPGRADE: [(&str, &str); 4] = [
    ("upgrade", "websocket"),
    ("connection", "keep-alive, Upgrade"),
    ("sec-websocket-version", "13"),
    ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
];

#[test]
fn the_handshake_answers_with_the_rfcs_accept_key() {
    let hs = Handshake::read(&headers(&UPGRADE)).unwrap();
    assert!(!hs.deflate);
    let head = hs.response_head();
    assert!(head.starts_with("HTTP/1.1 101 Switching Protocols\r\n"));
    // RFC 6455 §1.3's example.
    assert!(head.contains("sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
    assert!(!head.contains("extensions"));
}

#[test]
fn a_bad_handshake_says_what_is_wrong() {
    let mut h = headers(&UPGRADE);
    h.insert("sec-websocket-version", "8".parse().unwrap());
    assert_eq!(
        Handshake::read(&h).unwrap_err(),
        "Sec-WebSocket-Version must be 13."
    );
    let mut h = headers(&UPGRADE);
    h.insert("sec-websocket-key", "c2hvcnQ=".parse().unwrap());
    assert!(Handshake::read(&h)
        .unwrap_err()
        .contains("Sec-WebSocket-Key"));
    let mut h = headers(&UPGRADE);
    h.remove("connection");
    assert!(Handshake::read(&h).unwrap_err().contains("Connection"));
}

#[test]
fn permessage_deflate_is_taken_when_an_offer_can_be_honoured() {
    let with = |ext: &str| {
        let mut h = headers(&UPGRADE);
        h.append("sec-websocket-extensions", ext.parse().unwrap());
        Handshake::read(&h).unwrap().deflate
    };
    // What browsers send.
    assert!(with("permessage-deflate; client_max_window_bits"));
    assert!(with(
        "permessage-deflate; server_no_context_takeover; client_max_window_bits=10"
    ));
    assert!(with("x-webkit-deflate-frame, permessage-deflate"));
    assert!(with(
        "permessage-deflate; server_max_window_bits=10, permessage-deflate"
    ));
    assert!(!with("permessage-deflate; server_max_window_bits=10"));
    assert!(!with("permessage-deflate; unknown_param"));
    assert!(!with(
        "permessage-deflate; client_max_window_bits; client_max_window_bits"
    ));
    assert!(!with("x-webkit-deflate-frame"));
    let mut h = headers(&UPGRADE);
    h.append(
        "sec-websocket-extensions",
        "permessage-deflate".parse().unwrap(),
    );
    let head = Handshake::read(&h).unwrap().response_head();
    assert!(head.contains(
        "sec-websocket-extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover\r\n"
    ));
}

#[test]
fn server_frames_carry_the_length_in_the_shortest_form() {
    for (len, header_len) in [(0, 2), (125, 2), (126, 4), (65535, 4), (65536, 10)] {
        let mut out = Vec::new();
        frame_header(op::TEXT, false, len, &mut out);
        assert_eq!(out.len(), header_len, "{len}");
        assert_eq!(out[0], 0x81);
    }
    let mut out = Vec::new();
    frame_header(op::TEXT, true, 3, &mut out);
    assert_eq!(out, [0xC1, 3]);
}

#[test]
fn fragments_and_interleaved_pings_are_read_whole_however_the_bytes_arrive() {
    let mut bytes = client_frame(op::TEXT, b"hel");
    bytes.extend(client_frame(0x80 | op::PING, b"p"));
    bytes.extend(client_frame(op::CONTINUATION, b"lo "));
    bytes.extend(client_frame(0x80 | op::CONTINUATION, "wörld".as_bytes()));
    bytes.extend(client_frame(0x80 | op::CLOSE, &[0x03, 0xE8]));
    // One byte at a time: every split point is a partial frame.
    let mut r = Reader::new(false, 1024);
    let mut got = Vec::new();
    for b in &bytes {
        r.push(std::slice::from_ref(b));
        while let Some(m) = r.next_message().unwrap() {
            got.push(m);
        }
    }
    assert_eq!(
        got,
        [
            Message::Ping(b"p".to_vec()),
            Message::Text("hello wörld".into()),
            Message::Close(Some(1000)),
        ]
    );
    assert_eq!(r.pending.capacity(), 0, "an idle reader holds no buffer");
}

#[test]
fn a_compressed_message_is_inflated() {
    let text = "{\"type\":\"subscribe\",\"stream\":\"filter\",\"track\":[\"rust\"]}";
    let d = Deflated::of(text.as_bytes());
    let mut r = Reader::new(true, 1024);
    r.push(&client_frame(0x80 | 0x40 | op::TEXT, d.message()));
    assert_eq!(r.next_message().unwrap(), Some(Message::Text(text.into())));
    // Compressed bytes split over fragments.
    let m = d.message();
    let (a, b) = m.split_at(m.len() / 2);
    r.push(&client_frame(0x40 | op::TEXT, a));
    r.push(&client_frame(0x80 | op::CONTINUATION, b));
    assert_eq!(r.next_message().unwrap(), Some(Message::Text(text.into())));
}

#[test]
fn protocol_violations_close_with_the_rfcs_codes() {
    let err = |deflate: bool, bytes: Vec<u8>| {
        let mut r = Reader::new(deflate, 1000);
        r.push(&bytes);
        r.next_message().unwrap_err().code
    };
    let mut unmasked = client_frame(0x80 | op::TEXT, b"x");
    unmasked[1] &= 0x7f;
    assert_eq!(err(false, unmasked), close::PROTOCOL);
    assert_eq!(
        err(false, client_frame(0x80 | 0x40 | op::TEXT, b"x")),
        close::PROTOCOL
    );
    assert_eq!(
        err(true, client_frame(0x80 | 0x40 | op::PING, b"x")),
        close::PROTOCOL
    );
    assert_eq!(
        err(false, client_frame(0x80 | 0x20 | op::TEXT, b"x")),
        close::PROTOCOL
    );
    assert_eq!(err(false, client_frame(0x80 | 0x3, b"x")), close::PROTOCOL);
    assert_eq!(err(false, client_frame(op::PING, b"x")), close::PROTOCOL);
    assert_eq!(
        err(false, client_frame(0x80 | op::PING, &[0; 126])),
        close::PROTOCOL
    );
    assert_eq!(
        err(false, client_frame(0x80 | op::CONTINUATION, b"x")),
        close::PROTOCOL
    );
    assert_eq!(
        err(false, client_frame(0x80 | op::TEXT, &[0xff, 0xfe])),
        close::INVALID_DATA
    );
    assert_eq!(
        err(false, client_frame(0x80 | op::CLOSE, &[0x03])),
        close::PROTOCOL
    );
    assert_eq!(
        err(false, client_frame(0x80 | op::CLOSE, &[0x03, 0xED])),
        close::PROTOCOL
    );
    assert_eq!(
        err(true, client_frame(0x80 | 0x40 | op::TEXT, b"\xff\xff\xff")),
        close::INVALID_DATA
    );
    // Too large, by its header alone (nothing buffered) or in fragments.
    let mut huge = vec![0x81, 0xFF];
    huge.extend_from_slice(&(1u64 << 40).to_be_bytes());
    assert_eq!(err(false, huge), close::TOO_BIG);
    let mut parts = client_frame(op::TEXT, &[b'a'; 600]);
    parts.extend(client_frame(0x80 | op::CONTINUATION, &[b'a'; 600]));
    assert_eq!(err(false, parts), close::TOO_BIG);
    // A small compressed message that inflates past the bound.
    let bomb = Deflated::of(&[b'a'; 100_000]);
    assert_eq!(
        err(true, client_frame(0x80 | 0x40 | op::TEXT, bomb.message())),
        close::TOO_BIG
    );
}
