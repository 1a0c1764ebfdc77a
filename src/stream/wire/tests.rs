use super::*;
use crate::stream::frame::WarningCode;
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

/// A gzip body and a zstd body, decoded.
fn decoded(gzip: &[u8], zstd_body: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(gzip)
        .read_to_end(&mut plain)
        .unwrap();
    (plain, zstd::stream::decode_all(zstd_body).unwrap())
}

#[test]
fn gzip_and_zstd_bodies_decode_to_the_plain_one() {
    let f = frame();
    let outs = [
        Out::Event(f.clone(), "firehose"),
        Out::Keepalive(None),
        Out::Control(Control::warning(WarningCode::ResumeGap, "gap").encode()),
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
        let (decoded, zd) = decoded(&b, &c);
        assert_eq!(decoded, a, "{t:?}");
        assert_eq!(zd, a, "{t:?}");
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
        &Out::Control(Control::warning(WarningCode::ResumeGap, "gap").encode()),
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

#[test]
fn a_batch_of_a_compressed_body_is_one_piece_that_decodes_to_the_plain_batch() {
    let f = frame();
    // Encoded once: a control carries the time it was made.
    let warning = Control::warning(WarningCode::ResumeGap, "gap").encode();
    let outs = || {
        let mut outs: Vec<Out> = (0..50).map(|_| Out::Event(f.clone(), "firehose")).collect();
        // Things that are not events go in order between the gathered ones.
        outs.insert(20, Out::Control(warning.clone()));
        outs.insert(30, Out::Keepalive(None));
        outs
    };
    let none = Coding::Identity;
    for t in [Transport::Sse, Transport::Ndjson] {
        let batch = |enc: &mut Encoder, out: &mut Vec<u8>| {
            let mut rest = outs().into_iter();
            let first = rest.next().unwrap();
            enc.batch(|| rest.next(), &first, out)
        };
        let mut plain = Encoder::plain(t, none, 0, none);
        let mut gz = Encoder::plain(t, Coding::Gzip, 0, none);
        let mut zs = Encoder::plain(t, Coding::Zstd, usize::MAX, none);
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        plain.start(&mut a);
        gz.start(&mut b);
        zs.start(&mut c);
        assert_eq!(batch(&mut plain, &mut a), 50);
        assert_eq!(batch(&mut gz, &mut b), 50);
        assert_eq!(batch(&mut zs, &mut c), 50);
        plain.finish(&mut a);
        gz.finish(&mut b);
        zs.finish(&mut c);
        let (decoded, zd) = decoded(&b, &c);
        for (what, got) in [("gzip", &decoded), ("zstd", &zd)] {
            let at = got.iter().zip(&a).position(|(x, y)| x != y);
            assert!(
                *got == a,
                "{t:?} {what}: {} bytes against {}, first difference at {at:?}: {:?}",
                got.len(),
                a.len(),
                String::from_utf8_lossy(
                    &got[at.unwrap_or(0).saturating_sub(20)..]
                        [..60.min(got.len() - at.unwrap_or(0).saturating_sub(20))]
                )
            );
        }
        // One piece for the run of events, not one an event.
        let mut each = Encoder::plain(t, Coding::Gzip, 0, none);
        let mut d = Vec::new();
        each.start(&mut d);
        for o in &outs() {
            each.push(o, &mut d);
        }
        assert!(
            b.len() * 3 < d.len(),
            "{t:?}: {} against {}",
            b.len(),
            d.len()
        );
    }
}
