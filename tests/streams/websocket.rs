//! WebSocket streams: a stream path upgraded, the multiplexed socket,
//! pings, permessage-deflate, protocol errors; and gzip on plain streams,
//! read off the raw socket.

use super::*;

#[tokio::test]
async fn websocket_on_a_stream_path_carries_the_same_json() {
    let app = TestApp::start().await;
    let (_, token) = app.user("wil").await;
    // The subscription is registered before the 101 is written: the
    // handshake is the readiness.
    let mut ws = ws_connect(&app, "/api/v1/stream/filter?track=wsword", &token).await;
    let sid = app.say(&token, "a wsword here").await;
    let v = ws_next(&mut ws).await;
    assert_eq!(
        (v["type"].clone(), v["status"]["id"].clone()),
        (json!("status"), json!(sid))
    );
    assert!(v["id"].is_string());
}

#[tokio::test]
async fn the_multiplexed_websocket_subscribes_and_unsubscribes_live() {
    let app = TestApp::start().await;
    let (ida, a) = app.user("xia").await;
    let (_, b) = app.user("yan").await;
    let mut ws = ws_connect(&app, "/api/v1/stream", &a).await;
    ws_send(&mut ws, json!({"type": "subscribe", "stream": "filter", "track": ["alpha"], "follow": [], "locations": [[0, 0, 10, 10]]})).await;
    let sub = ws_next(&mut ws).await;
    assert_eq!(
        (sub["type"].clone(), sub["stream"].clone()),
        (json!("subscribed"), json!("filter"))
    );
    ws_send(&mut ws, json!({"type": "subscribe", "stream": "user"})).await;
    let sub = ws_next(&mut ws).await;
    assert_eq!(
        (sub["type"].clone(), sub["stream"].clone()),
        (json!("subscribed"), json!("user"))
    );
    app.say(&b, "alpha from yan").await;
    let e = ws_next(&mut ws).await;
    assert_eq!(
        (e["stream"].clone(), e["status"]["message"].clone()),
        (json!("filter"), json!("alpha from yan"))
    );
    app.say(&a, "my own").await;
    let e = ws_next(&mut ws).await;
    assert_eq!(
        (e["stream"].clone(), e["status"]["uid"].clone()),
        (json!("user"), json!(ida))
    );
    ws_send(&mut ws, json!({"type": "unsubscribe", "stream": "filter"})).await;
    let un = ws_next(&mut ws).await;
    assert_eq!(
        (un["type"].clone(), un["stream"].clone()),
        (json!("unsubscribed"), json!("filter"))
    );
    app.say(&b, "alpha again").await;
    app.say(&a, "mine again").await;
    let e = ws_next(&mut ws).await;
    assert_eq!(
        (e["stream"].clone(), e["status"]["message"].clone()),
        (json!("user"), json!("mine again"))
    );
    for bad in [
        json!({"type": "subscribe", "stream": "firehose"}),
        json!({"type": "subscribe", "stream": "filter", "track": ["x".repeat(61)]}),
        json!({"type": "subscribe", "stream": "nope"}),
        json!({"type": "unsubscribe", "stream": "sample"}),
        json!({"type": "dance"}),
    ] {
        ws_send(&mut ws, bad.clone()).await;
        let err = ws_next(&mut ws).await;
        assert_eq!(err["type"], "error", "{bad}: {err}");
        assert!(err["code"].is_string() && err["message"].is_string());
    }
    ws.send(WsMessage::Text("not json".into())).await.unwrap();
    assert_eq!(ws_next(&mut ws).await["type"], "error");
}

/// A subscribe message far larger than a socket's starting read buffer
/// (5,000 follow ids and 400 phrases, ~60 KB) is read whole; the socket's
/// errors use the query string's words (one parser for both).
#[tokio::test]
async fn the_multiplexed_websocket_reads_large_subscribes_and_words_errors_as_the_query_does() {
    let app = TestApp::start().await;
    let (uid, a) = app.user("big").await;
    let mut ws = ws_connect(&app, "/api/v1/stream", &a).await;
    let mut follow: Vec<Value> = (1..5000u64)
        .map(|n| json!((n + 1_000_000).to_string()))
        .collect();
    follow.push(json!(uid));
    let track: Vec<String> = (0..400).map(|n| format!("phrase{n} word{n}")).collect();
    ws_send(
        &mut ws,
        json!({"type": "subscribe", "stream": "filter", "follow": follow, "track": track}),
    )
    .await;
    let ok = ws_next(&mut ws).await;
    assert_eq!(
        (ok["type"].clone(), ok["stream"].clone()),
        (json!("subscribed"), json!("filter")),
        "{ok}"
    );
    app.say(&a, "from a followed id").await;
    assert_eq!(
        ws_next(&mut ws).await["status"]["message"],
        "from a followed id"
    );
    // The same bad values through the URL and through the socket.
    for (query, message) in [
        (
            "count=1001",
            json!({"type": "subscribe", "stream": "sample", "count": 1001}),
        ),
        (
            "rate=2",
            json!({"type": "subscribe", "stream": "sample", "rate": 2}),
        ),
    ] {
        let (status, body) = app
            .get(&format!("/api/v1/stream/sample?{query}"), Some(&a))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        ws_send(&mut ws, message.clone()).await;
        let err = ws_next(&mut ws).await;
        assert_eq!(
            (
                err["type"].clone(),
                err["code"].clone(),
                err["message"].clone()
            ),
            (
                json!("error"),
                body["error"]["code"].clone(),
                body["error"]["message"].clone()
            ),
            "{message}"
        );
    }
}

#[tokio::test]
async fn resubscribing_a_stream_name_replaces_its_filter_in_place() {
    let app = TestApp::start().await;
    let (_, a) = app.user("zoe").await;
    let mut ws = ws_connect(&app, "/api/v1/stream", &a).await;
    ws_send(
        &mut ws,
        json!({"type": "subscribe", "stream": "filter", "track": ["first"]}),
    )
    .await;
    assert_eq!(ws_next(&mut ws).await["type"], "subscribed");
    app.say(&a, "the first").await;
    assert_eq!(ws_next(&mut ws).await["status"]["message"], "the first");
    ws_send(
        &mut ws,
        json!({"type": "subscribe", "stream": "filter", "track": ["second"]}),
    )
    .await;
    ws_send(&mut ws, json!({"type": "subscribe", "stream": "user"})).await;
    assert_eq!(ws_next(&mut ws).await["type"], "subscribed");
    assert_eq!(ws_next(&mut ws).await["type"], "subscribed");
    app.say(&a, "first no more").await;
    let e = ws_next(&mut ws).await;
    assert_eq!(
        (e["stream"].clone(), e["status"]["message"].clone()),
        (json!("user"), json!("first no more"))
    );
    app.say(&a, "the second").await;
    let mut streams = vec![
        ws_next(&mut ws).await["stream"].clone(),
        ws_next(&mut ws).await["stream"].clone(),
    ];
    streams.sort_by_key(|v| v.to_string());
    assert_eq!(streams, vec![json!("filter"), json!("user")]);
}

#[tokio::test]
async fn websockets_are_pinged_and_closed_when_pongs_stop() {
    let app = TestApp::start_with(|c| c.keepalive_secs = 1).await;
    let (_, token) = app.user("pong").await;
    let mut ws = ws_connect(&app, "/api/v1/stream/user", &token).await;
    // Not reading means no pongs go back (the client answers pings as it reads).
    tokio::time::sleep(Duration::from_millis(4500)).await;
    let mut pings = 0;
    let mut bye = None;
    while let Ok(Some(Ok(msg))) = tokio::time::timeout(Duration::from_secs(5), ws.next()).await {
        match msg {
            WsMessage::Ping(_) => pings += 1,
            WsMessage::Text(t) => {
                let v = serde_json::from_str::<Value>(t.as_str()).unwrap();
                if v["type"] != "position" {
                    bye = Some(v);
                }
            }
            WsMessage::Close(_) => break,
            _ => {}
        }
    }
    assert!(pings >= 2, "pings were sent: {pings}");
    let bye = bye.expect("a disconnect event before the close");
    assert_eq!(
        (bye["type"].clone(), bye["code"].clone()),
        (json!("disconnect"), json!("timeout"))
    );
}

#[tokio::test]
async fn websockets_that_answer_pings_stay_open() {
    let app = TestApp::start_with(|c| c.keepalive_secs = 1).await;
    let (_, token) = app.user("alive").await;
    let mut ws = ws_connect(&app, "/api/v1/stream/user", &token).await;
    // Reading keeps answering pings; after 4 intervals the socket still delivers.
    let until = tokio::time::Instant::now() + Duration::from_millis(4500);
    while let Ok(Some(Ok(msg))) = tokio::time::timeout_at(until, ws.next()).await {
        let keepalive = match &msg {
            WsMessage::Text(t) => {
                serde_json::from_str::<Value>(t.as_str()).unwrap()["type"] == "position"
            }
            other => !matches!(other, WsMessage::Close(_)),
        };
        assert!(keepalive, "only pings and positions: {msg:?}");
    }
    app.say(&token, "still here").await;
    assert_eq!(ws_next(&mut ws).await["status"]["message"], "still here");
}

/// Appends what the socket sends next to `buf` (within 10 s; not closed
/// before `what` is whole).
async fn read_more(tcp: &mut tokio::net::TcpStream, buf: &mut Vec<u8>, what: &str) {
    use tokio::io::AsyncReadExt;
    let mut chunk = [0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut chunk))
        .await
        .unwrap_or_else(|_| panic!("{what} in time"))
        .unwrap();
    assert!(n > 0, "closed before {what} was whole");
    buf.extend_from_slice(&chunk[..n]);
}

/// Reads a response head from a raw socket: the head's text and whatever
/// body bytes came with it.
pub(super) async fn read_head(tcp: &mut tokio::net::TcpStream) -> (String, Vec<u8>) {
    let mut buf = Vec::new();
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            return (head, buf[end + 4..].to_vec());
        }
        read_more(tcp, &mut buf, "a response head").await;
    }
}

/// A WebSocket upgrade request for `path` (RFC 6455's sample key), with
/// extra header lines.
fn upgrade_request(path: &str, token: &str, extra: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n{extra}\r\n"
    )
}

/// A gzipped SSE stream decodes event by event as the bytes arrive (each
/// event is flushed whole), and ends, when the stream is over, as a
/// complete gzip body whose trailer checks out.
#[tokio::test]
async fn a_client_that_accepts_gzip_gets_each_event_compressed_and_decodable_on_arrival() {
    use std::io::Write;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::start().await;
    let (_, token) = app.user("zip").await;
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let req = format!(
        "GET /api/v1/stream/filter?track=zipword HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\naccept-encoding: br, gzip;q=0.8\r\n\r\n"
    );
    tcp.write_all(req.as_bytes()).await.unwrap();
    let (head, early) = read_head(&mut tcp).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-encoding: gzip"), "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    assert!(head.contains("vary: accept-encoding"), "{head}");
    assert!(head.contains("transfer-encoding: chunked"), "{head}");
    // The body in chunks, each chunk's bytes into the decoder.
    let mut chunks = Unchunk::default();
    let mut gz = flate2::write::GzDecoder::new(Vec::new());
    gz.write_all(&chunks.take(&early)).unwrap();
    let mut wire_bytes = early.len();
    // Reads until the decoded text holds `want`.
    async fn until(
        tcp: &mut tokio::net::TcpStream,
        chunks: &mut Unchunk,
        gz: &mut flate2::write::GzDecoder<Vec<u8>>,
        wire_bytes: &mut usize,
        want: &str,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            gz.flush().unwrap();
            if String::from_utf8_lossy(gz.get_ref()).contains(want) {
                return true;
            }
            let mut chunk = [0u8; 4096];
            let read = tokio::time::timeout_at(deadline, tcp.read(&mut chunk)).await;
            let Ok(Ok(n)) = read else { return false };
            if n == 0 {
                gz.flush().unwrap();
                return String::from_utf8_lossy(gz.get_ref()).contains(want);
            }
            *wire_bytes += n;
            gz.write_all(&chunks.take(&chunk[..n])).unwrap();
        }
    }
    assert!(
        until(
            &mut tcp,
            &mut chunks,
            &mut gz,
            &mut wire_bytes,
            "retry: 3000"
        )
        .await
    );
    let long = "zipword ".repeat(30);
    let first = app.say(&token, long.trim()).await;
    assert!(
        until(
            &mut tcp,
            &mut chunks,
            &mut gz,
            &mut wire_bytes,
            &format!("\"id\":\"{first}\"")
        )
        .await,
        "the first event decodes on its own"
    );
    let second = app.say(&token, &format!("{} again", long.trim())).await;
    assert!(
        until(
            &mut tcp,
            &mut chunks,
            &mut gz,
            &mut wire_bytes,
            &format!("\"id\":\"{second}\"")
        )
        .await
    );
    let decoded = gz.get_ref().len();
    assert!(
        wire_bytes * 2 < decoded,
        "repetitive events compress: {wire_bytes} bytes on the wire for {decoded}"
    );
    // Logging out ends the stream for good: a disconnect, then the trailer.
    let (status, _) = app.delete("/api/v1/sessions/current", Some(&token)).await;
    assert!(status.is_success(), "{status}");
    assert!(
        until(
            &mut tcp,
            &mut chunks,
            &mut gz,
            &mut wire_bytes,
            "event: disconnect"
        )
        .await
    );
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut rest)).await;
    gz.write_all(&chunks.take(&rest)).unwrap();
    assert!(chunks.ended(), "the body ends with its last chunk");
    let text = String::from_utf8(
        gz.finish()
            .expect("a complete gzip body, CRC and length right"),
    )
    .unwrap();
    assert!(text.starts_with("retry: 3000\n\n"), "{text}");
    assert_eq!(text.matches("event: status").count(), 2, "{text}");
}

/// A client frame: FIN, masked; RSV1 when `deflated`.
fn client_frame(opcode: u8, deflated: bool, payload: &[u8]) -> Vec<u8> {
    let mask = [7u8, 99, 13, 200];
    let mut out = vec![0x80 | if deflated { 0x40 } else { 0 } | opcode];
    match payload.len() {
        n if n < 126 => out.push(0x80 | n as u8),
        n if n < 65536 => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    out
}

/// Deflates a message as a permessage-deflate client does (no context
/// takeover: a fresh compressor each time).
fn deflate_message(text: &str) -> Vec<u8> {
    let mut c = flate2::Compress::new(flate2::Compression::default(), false);
    let mut out = Vec::with_capacity(text.len() + 64);
    c.compress_vec(text.as_bytes(), &mut out, flate2::FlushCompress::Sync)
        .unwrap();
    assert!(out.ends_with(&[0, 0, 0xff, 0xff]));
    out.truncate(out.len() - 4);
    out
}

/// A server frame read off a raw socket: opcode, RSV1 and payload (the
/// payload inflated with a fresh window when RSV1 is set).
async fn server_frame(tcp: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> (u8, bool, Vec<u8>) {
    loop {
        if buf.len() >= 2 {
            let (len, at) = match buf[1] & 0x7f {
                126 if buf.len() >= 4 => (u16::from_be_bytes([buf[2], buf[3]]) as usize, 4),
                127 if buf.len() >= 10 => (
                    u64::from_be_bytes(buf[2..10].try_into().unwrap()) as usize,
                    10,
                ),
                126 | 127 => (usize::MAX, 0),
                n => (n as usize, 2),
            };
            assert_eq!(buf[1] & 0x80, 0, "server frames are not masked");
            if len != usize::MAX && buf.len() >= at + len {
                let (op, rsv1) = (buf[0] & 0x0f, buf[0] & 0x40 != 0);
                let mut payload: Vec<u8> = buf[at..at + len].to_vec();
                buf.drain(..at + len);
                if rsv1 {
                    payload.extend_from_slice(&[0, 0, 0xff, 0xff]);
                    let mut d = flate2::Decompress::new(false);
                    let mut out = Vec::with_capacity(payload.len() * 20 + 64);
                    d.decompress_vec(&payload, &mut out, flate2::FlushDecompress::Sync)
                        .expect("a message deflated on its own");
                    payload = out;
                }
                return (op, rsv1, payload);
            }
        }
        read_more(tcp, buf, "a frame").await;
    }
}

/// permessage-deflate end to end on the multiplexed socket: negotiated
/// from a browser's offer, every message from the server compressed on its
/// own, a compressed subscribe from the client read, pings answered with
/// the same payload, and a close answered with a close.
#[tokio::test]
async fn a_websocket_that_offers_permessage_deflate_gets_compressed_messages_both_ways() {
    use tokio::io::AsyncWriteExt;
    let app = TestApp::start().await;
    let (_, token) = app.user("def").await;
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let req = upgrade_request(
        "/api/v1/stream",
        &token,
        "sec-websocket-extensions: permessage-deflate; client_max_window_bits\r\n",
    );
    tcp.write_all(req.as_bytes()).await.unwrap();
    let (head, mut buf) = read_head(&mut tcp).await;
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(
        head.contains("sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo="),
        "{head}"
    );
    assert!(
        head.contains("sec-websocket-extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover"),
        "{head}"
    );
    let subscribe = json!({"type": "subscribe", "stream": "filter", "track": ["deflword"]});
    let msg = deflate_message(&subscribe.to_string());
    tcp.write_all(&client_frame(0x1, true, &msg)).await.unwrap();
    let (op, rsv1, payload) = server_frame(&mut tcp, &mut buf).await;
    let v: Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(
        (op, rsv1, v["type"].as_str()),
        (0x1, true, Some("subscribed")),
        "{v}"
    );
    let text = "deflword ".repeat(25);
    let sid = app.say(&token, text.trim()).await;
    let (op, rsv1, payload) = server_frame(&mut tcp, &mut buf).await;
    let v: Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!((op, rsv1), (0x1, true));
    assert_eq!(
        (v["stream"].as_str(), v["status"]["id"].as_str()),
        (Some("filter"), Some(sid.as_str())),
        "{v}"
    );
    // A ping is answered with its payload, uncompressed (control frames are).
    tcp.write_all(&client_frame(0x9, false, b"are you there"))
        .await
        .unwrap();
    assert_eq!(
        server_frame(&mut tcp, &mut buf).await,
        (0xA, false, b"are you there".to_vec())
    );
    // An uncompressed message is read too (compression is per message).
    let un = json!({"type": "unsubscribe", "stream": "filter"}).to_string();
    tcp.write_all(&client_frame(0x1, false, un.as_bytes()))
        .await
        .unwrap();
    let (_, _, payload) = server_frame(&mut tcp, &mut buf).await;
    assert_eq!(
        serde_json::from_slice::<Value>(&payload).unwrap()["type"],
        "unsubscribed"
    );
    tcp.write_all(&client_frame(0x8, false, &1000u16.to_be_bytes()))
        .await
        .unwrap();
    let (op, _, payload) = server_frame(&mut tcp, &mut buf).await;
    assert_eq!((op, &payload[..2]), (0x8, &1000u16.to_be_bytes()[..]));
}

/// A client that breaks the protocol is closed with the RFC's code: an
/// unmasked frame (1002), a compressed frame on a socket that negotiated no
/// compression (1002), a message past the bound (1009).
#[tokio::test]
async fn a_websocket_client_that_breaks_the_protocol_is_closed_with_the_rfcs_code() {
    use tokio::io::AsyncWriteExt;
    let app = TestApp::start().await;
    let (_, token) = app.user("brk").await;
    let cases: [(&str, Vec<u8>, u16); 3] = [
        ("unmasked", vec![0x81, 0x02, b'h', b'i'], 1002),
        ("rsv1 without deflate", client_frame(0x1, true, b"hi"), 1002),
        (
            "too big",
            {
                let mut f = vec![0x81, 0x80 | 127];
                f.extend_from_slice(&(2u64 << 20).to_be_bytes());
                f
            },
            1009,
        ),
    ];
    for (what, frame, code) in cases {
        let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
        let req = upgrade_request("/api/v1/stream/sample", &token, "");
        tcp.write_all(req.as_bytes()).await.unwrap();
        let (head, mut buf) = read_head(&mut tcp).await;
        assert!(head.starts_with("http/1.1 101"), "{what}: {head}");
        assert!(!head.contains("sec-websocket-extensions"), "{what}: {head}");
        tcp.write_all(&frame).await.unwrap();
        let (op, _, payload) = server_frame(&mut tcp, &mut buf).await;
        assert_eq!(op, 0x8, "{what}");
        assert_eq!(u16::from_be_bytes([payload[0], payload[1]]), code, "{what}");
    }
    // A handshake without a valid key is refused in the contract's shape.
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let req = format!(
        "GET /api/v1/stream/sample HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\nupgrade: websocket\r\nconnection: upgrade\r\nsec-websocket-version: 13\r\n\r\n"
    );
    tcp.write_all(req.as_bytes()).await.unwrap();
    let (head, _) = read_head(&mut tcp).await;
    assert!(head.starts_with("http/1.1 400"), "{head}");
}

/// A WebSocket upgrade on a connection that already served a request goes
/// through the router and hyper's upgrade, and works the same.
#[tokio::test]
async fn a_websocket_upgrade_on_a_kept_alive_connection_is_served_too() {
    use tokio::io::AsyncWriteExt;
    let app = TestApp::start().await;
    let (_, token) = app.user("kal").await;
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let (head, mut body) = read_head(&mut tcp).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .and_then(|n| n.trim().parse().ok())
        .expect("a sized health answer");
    while body.len() < len {
        read_more(&mut tcp, &mut body, "the health answer").await;
    }
    let req = upgrade_request(
        "/api/v1/stream/filter?track=kaword",
        &token,
        "sec-websocket-extensions: permessage-deflate\r\n",
    );
    tcp.write_all(req.as_bytes()).await.unwrap();
    let (head, mut buf) = read_head(&mut tcp).await;
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(head.contains("permessage-deflate"), "{head}");
    let sid = app.say(&token, "a kaword here").await;
    let (op, rsv1, payload) = server_frame(&mut tcp, &mut buf).await;
    let v: Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(
        (op, rsv1, v["status"]["id"].as_str()),
        (0x1, true, Some(sid.as_str())),
        "{v}"
    );
}
