use super::*;
use crate::stream::frame::{parse, Control, Incoming};
use std::io::Read;
use std::sync::Arc;

fn frame() -> Arc<Frame> {
    let json = r#"{"id":"1-0","type":"status","at":1.0,"status":{"id":"7","uid":"3","login":"ann","message":"hello there","posted":1.0,"hashtags":[],"mentions":[]},"private":false}"#;
    match parse(json) {
        Some(Incoming::Event(f)) => f,
        _ => panic!("a status parses"),
    }
}

#[test]
fn gzip_and_zstd_bodies_decode_to_the_plain_one() {
    let f = frame();
    let outs = [
        Out::Event(f.clone(), "firehose"),
        Out::Keepalive(None),
        Out::Control(Control::warning("resume_gap", "gap").encode()),
        Out::Event(f, "firehose"),
    ];
    let none = Coding::Identity;
    for t in [Transport::Sse, Transport::Ndjson] {
        let mut plain = Encoder::plain(t, none, 0, none);
        let mut gz = Encoder::plain(t, Coding::Gzip, 0, none);
        let mut zs = Encoder::plain(t, Coding::Zstd, usize::MAX, none);
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        plain.start(&mut a);
        gz.start(&mut b);
        zs.start(&mut c);
        for o in &outs {
            plain.push(o, &mut a);
            gz.push(o, &mut b);
            zs.push(o, &mut c);
        }
        plain.finish(&mut a);
        gz.finish(&mut b);
        zs.finish(&mut c);
        let mut decoded = Vec::new();
        flate2::read::GzDecoder::new(&b[..])
            .read_to_end(&mut decoded)
            .unwrap();
        assert_eq!(decoded, a, "{t:?}");
        assert_eq!(zstd::stream::decode_all(&c[..]).unwrap(), a, "{t:?}");
        assert!(gz.headers().any(|h| h == ("content-encoding", "gzip")));
        assert!(zs.headers().any(|h| h == ("content-encoding", "zstd")));
        assert!(!plain.headers().any(|(n, _)| n == "content-encoding"));
    }
    // None may open past the bound: the fallback instead.
    let capped = Encoder::plain(Transport::Sse, Coding::Zstd, 0, Coding::Gzip);
    assert!(capped.headers().any(|h| h == ("content-encoding", "gzip")));
}

#[test]
fn zstd_sockets_send_events_as_binary_frames_and_answers_as_text() {
    let dicts = Arc::new(crate::stream::zstd::Dictionaries::loaded(
        crate::stream::zstd::train(Vec::new()).unwrap(),
    ));
    let mut enc = Encoder::websocket(Transport::Multiplexed, false, Some(dicts));
    let mut out = Vec::new();
    enc.push(&Out::Event(frame(), "firehose"), &mut out);
    assert_eq!(out[0], 0x80 | op::BINARY);
    let subscribed = Control::Subscribed {
        stream: "firehose",
        group: None,
        list: None,
    };
    let mut answer = Vec::new();
    enc.push(&Out::Control(subscribed.encode()), &mut answer);
    assert_eq!(answer[0], 0x80 | op::TEXT);
    let mut warning = Vec::new();
    enc.push(
        &Out::Control(Control::warning("resume_gap", "gap").encode()),
        &mut warning,
    );
    assert_eq!(warning[0], 0x80 | op::BINARY);
}

/// A server frame's payload (unmasked), inflated if RSV1 is set.
fn read_frame(bytes: &[u8]) -> (u8, String, usize) {
    let (b0, len) = (bytes[0], bytes[1] as usize);
    let (len, at) = match len {
        126 => (u16::from_be_bytes([bytes[2], bytes[3]]) as usize, 4),
        n => (n, 2),
    };
    let payload = &bytes[at..at + len];
    let text = if b0 & 0x40 != 0 {
        // A message is sent without its sync tail (RFC 7692 §7.2.1).
        let mut data = payload.to_vec();
        data.extend_from_slice(&crate::stream::deflate::SYNC_TAIL);
        String::from_utf8(crate::stream::deflate::tests::inflate_raw(&data)).unwrap()
    } else {
        String::from_utf8(payload.to_vec()).unwrap()
    };
    (b0 & 0x0f, text, at + len)
}

#[test]
fn websocket_messages_read_the_same_deflated_or_not() {
    let f = frame();
    for t in [Transport::WebSocket, Transport::Multiplexed] {
        let mut texts = Vec::new();
        for deflate in [false, true] {
            let mut enc = Encoder::websocket(t, deflate, None);
            let mut out = Vec::new();
            enc.push(&Out::Event(f.clone(), "filter"), &mut out);
            enc.push(&Out::Keepalive(None), &mut out);
            let (opcode, text, used) = read_frame(&out);
            assert_eq!(opcode, op::TEXT);
            assert_eq!(out[0] & 0x40 != 0, deflate);
            assert_eq!(&out[used..], &PING, "a keep-alive is a ping");
            texts.push(text);
        }
        assert_eq!(texts[0], texts[1], "{t:?}");
        let v: serde_json::Value = serde_json::from_str(&texts[0]).unwrap();
        assert_eq!(v["type"], "status");
        assert_eq!(v.get("stream").is_some(), t == Transport::Multiplexed);
    }
}

#[test]
fn an_event_is_deflated_once_for_every_connection() {
    let f = frame();
    let mut a = Encoder::websocket(Transport::WebSocket, true, None);
    let mut b = Encoder::websocket(Transport::WebSocket, true, None);
    let (mut x, mut y) = (Vec::new(), Vec::new());
    a.push(&Out::Event(f.clone(), "filter"), &mut x);
    b.push(&Out::Event(f.clone(), "filter"), &mut y);
    assert_eq!(x, y);
    let first = f.deflated(2, || unreachable!("computed already")) as *const Deflated;
    let again = f.deflated(2, || unreachable!("computed already")) as *const Deflated;
    assert_eq!(first, again);
}
