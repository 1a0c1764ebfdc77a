//! `compress=zstd` on WebSocket (each event one binary zstd frame made
//! with the shared dictionary, the same bytes for every socket) and
//! `Accept-Encoding: zstd` on plain streams.

use super::*;
use ::zstd::zstd_safe;

/// The dictionary `?id=` names (the current one without), with its id.
async fn dictionary(app: &TestApp, id: Option<u32>) -> (StatusCode, u32, Vec<u8>) {
    let url = match id {
        Some(id) => app.url(&format!("/api/v1/stream/zstd-dictionary?id={id}")),
        None => app.url("/api/v1/stream/zstd-dictionary"),
    };
    let resp = app.http.get(url).send().await.unwrap();
    let status = resp.status();
    let header = resp
        .headers()
        .get("zstd-dictionary-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (status, header, resp.bytes().await.unwrap().to_vec())
}

/// The next binary message's bytes (text messages, pings and pongs passed
/// over), within 10 s.
async fn next_binary(ws: &mut common::Ws) -> Vec<u8> {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a message in time")
            .expect("open")
            .expect("ok");
        if let WsMessage::Binary(b) = msg {
            return b.to_vec();
        }
    }
}

fn assert_bad(status: StatusCode, body: &Value) {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"]["code"].is_string(), "{body}");
}

/// A frame's dictionary id and its JSON, decoded with `dict`.
fn decode(frame: &[u8], dict: &[u8]) -> (u32, Value) {
    let id = zstd_safe::get_dict_id_from_frame(frame).map_or(0, |i| i.get());
    let mut d = ::zstd::bulk::Decompressor::with_dictionary(dict).unwrap();
    let json = d
        .decompress(frame, 1 << 20)
        .expect("a frame of the dictionary");
    (id, serde_json::from_slice(&json).unwrap())
}

#[tokio::test]
async fn zstd_sockets_get_each_event_as_one_frame_of_the_shared_dictionary() {
    let app = TestApp::start().await;
    let (_, token, fh) = firehose_user(&app, "squeezed").await;
    let mut a = ws_connect(&app, "/api/v1/stream/firehose?compress=zstd", &fh).await;
    let mut b = ws_connect(&app, "/api/v1/stream/firehose?compress=zstd", &fh).await;
    let mut mux = ws_connect(&app, "/api/v1/stream?compress=zstd", &fh).await;
    ws_send(&mut mux, json!({"type": "subscribe", "stream": "firehose"})).await;
    // Answers stay text.
    assert_eq!(ws_next(&mut mux).await["type"], "subscribed");
    let (status, id, dict) = dictionary(&app, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(id > 0 && dict.len() > 1000, "{id}, {} bytes", dict.len());
    let message = "a status about compression, with the words people use every day";
    let sid = app.say(&token, message).await;
    let (fa, fb) = (next_binary(&mut a).await, next_binary(&mut b).await);
    assert_eq!(fa, fb, "compressed once, the same bytes for every socket");
    let (frame_id, event) = decode(&fa, &dict);
    assert_eq!(frame_id, id, "the frame names its dictionary");
    assert_eq!(event["type"], "status");
    assert_eq!(event["status"]["id"], sid.as_str());
    assert_eq!(event["status"]["message"], message);
    let plain = serde_json::to_vec(&event).unwrap();
    assert!(fa.len() < plain.len(), "{} of {}", fa.len(), plain.len());
    let (_, event) = decode(&next_binary(&mut mux).await, &dict);
    assert_eq!(
        (event["stream"].as_str(), event["status"]["id"].as_str()),
        (Some("firehose"), Some(sid.as_str()))
    );
    // The dictionary by its id; an unknown id is 404, a bad one 400.
    let (status, same, bytes) = dictionary(&app, Some(id)).await;
    assert_eq!((status, same, bytes == dict), (StatusCode::OK, id, true));
    assert_eq!(dictionary(&app, Some(1)).await.0, StatusCode::NOT_FOUND);
    let (status, body) = app.get("/api/v1/stream/zstd-dictionary?id=x", None).await;
    assert_bad(status, &body);
    // An unknown compress: 400, on a socket and on a plain stream.
    let (status, body) = app
        .get("/api/v1/stream/firehose?compress=brotli", Some(&fh))
        .await;
    assert_bad(status, &body);
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut req = format!("ws://{}/api/v1/stream/firehose?compress=lz4", app.addr)
        .into_client_request()
        .unwrap();
    req.headers_mut()
        .insert("authorization", format!("Bearer {fh}").parse().unwrap());
    match tokio_tungstenite::connect_async(req).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status(), StatusCode::BAD_REQUEST)
        }
        other => panic!("an unknown compress is refused: {:?}", other.map(|_| ())),
    }
}

#[tokio::test]
async fn a_retrained_dictionary_takes_over_and_the_old_one_stays_fetchable() {
    let app = TestApp::start_with(|c| c.zstd_retrain_secs = 1).await;
    let (_, token, fh) = firehose_user(&app, "rotator").await;
    let mut ws = ws_connect(&app, "/api/v1/stream/firehose?compress=zstd", &fh).await;
    let (_, first, first_dict) = dictionary(&app, None).await;
    app.say(&token, "before the retraining").await;
    let before = next_binary(&mut ws).await;
    // Retrained within a few seconds (with these events in it).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let second = loop {
        let (_, id, _) = dictionary(&app, None).await;
        if id != first {
            break id;
        }
        assert!(tokio::time::Instant::now() < deadline, "never retrained");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // The process follows; new frames name the new dictionary.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let (_, second_dict) = {
        let (_, _, d) = dictionary(&app, Some(second)).await;
        (second, d)
    };
    loop {
        app.say(&token, "after the retraining").await;
        let frame = next_binary(&mut ws).await;
        let named = zstd_safe::get_dict_id_from_frame(&frame).map_or(0, |i| i.get());
        if named != first {
            let (_, event) = decode(&frame, &second_dict);
            assert_eq!(event["status"]["message"], "after the retraining");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "never followed");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // A frame made with the first still decodes with it, fetched by id.
    let (status, _, again) = dictionary(&app, Some(first)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again, first_dict);
    let (_, event) = decode(&before, &again);
    assert_eq!(event["status"]["message"], "before the retraining");
}

/// A plain stream with `Accept-Encoding: zstd` is one zstd frame, each
/// event decodable as it arrives.
#[tokio::test]
async fn a_plain_stream_that_accepts_zstd_decodes_event_by_event() {
    use std::io::Write;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::start().await;
    let (_, token) = app.user("zstdplain").await;
    for (accept, marker) in [
        ("text/event-stream", "retry: 3000"),
        ("application/x-ndjson", ""),
    ] {
        let word = if marker.is_empty() {
            "ndjsonword"
        } else {
            "sseword"
        };
        let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
        let req = format!(
            "GET /api/v1/stream/filter?track={word} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\naccept: {accept}\r\naccept-encoding: zstd\r\n\r\n"
        );
        tcp.write_all(req.as_bytes()).await.unwrap();
        let (head, early) = read_head(&mut tcp).await;
        assert!(head.starts_with("http/1.1 200"), "{head}");
        assert!(head.contains("content-encoding: zstd"), "{head}");
        assert!(head.contains("transfer-encoding: chunked"), "{head}");
        let mut chunks = Unchunk::default();
        let mut z = ::zstd::stream::write::Decoder::new(Vec::new()).unwrap();
        z.write_all(&chunks.take(&early)).unwrap();
        async fn until(
            tcp: &mut tokio::net::TcpStream,
            chunks: &mut Unchunk,
            z: &mut ::zstd::stream::write::Decoder<'static, Vec<u8>>,
            want: &str,
        ) -> bool {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            loop {
                z.flush().unwrap();
                if String::from_utf8_lossy(z.get_ref()).contains(want) {
                    return true;
                }
                let mut chunk = [0u8; 4096];
                let read = tokio::time::timeout_at(deadline, tcp.read(&mut chunk)).await;
                let Ok(Ok(n)) = read else { return false };
                if n == 0 {
                    return false;
                }
                z.write_all(&chunks.take(&chunk[..n])).unwrap();
            }
        }
        if !marker.is_empty() {
            assert!(until(&mut tcp, &mut chunks, &mut z, marker).await);
        }
        for n in 0..2 {
            let sid = app.say(&token, &format!("{word} number {n}")).await;
            assert!(
                until(&mut tcp, &mut chunks, &mut z, &format!("\"id\":\"{sid}\"")).await,
                "event {n} decodes on arrival ({accept})"
            );
        }
    }
}
