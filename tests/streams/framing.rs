//! Plain streams on the wire: an HTTP/1.1 client gets the body in chunks,
//! each holding whole events, so a client that reads in blocks (Python's
//! `requests`) hands every event over as it comes; an HTTP/1.0 client gets
//! a body that ends with the connection.

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Opens `path` on a new connection as `version` ("1.1" or "1.0"); the
/// response head and the body bytes that came with it.
async fn open(
    app: &TestApp,
    path: &str,
    version: &str,
    token: &str,
) -> (TcpStream, String, Vec<u8>) {
    let mut tcp = TcpStream::connect(app.addr).await.unwrap();
    let req = format!(
        "GET {path} HTTP/{version}\r\nhost: x\r\nauthorization: Bearer {token}\r\naccept: application/x-ndjson\r\n\r\n"
    );
    tcp.write_all(req.as_bytes()).await.unwrap();
    let (head, early) = read_head(&mut tcp).await;
    (tcp, head, early)
}

/// The next whole chunk's data in `raw` (read from `tcp` as needed):
/// `None` for the last chunk.
async fn next_chunk(tcp: &mut TcpStream, raw: &mut Vec<u8>) -> Option<Vec<u8>> {
    loop {
        if let Some(nl) = raw.windows(2).position(|w| w == b"\r\n") {
            let size = std::str::from_utf8(&raw[..nl]).expect("a chunk size line");
            let size = usize::from_str_radix(size, 16).expect("a chunk size in hex");
            if raw.len() >= nl + 2 + size + 2 {
                let data = raw[nl + 2..nl + 2 + size].to_vec();
                assert_eq!(
                    &raw[nl + 2 + size..nl + 4 + size],
                    b"\r\n",
                    "CRLF after data"
                );
                raw.drain(..nl + 4 + size);
                return (size > 0).then_some(data);
            }
        }
        let mut buf = [0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut buf))
            .await
            .expect("a chunk within 10 s")
            .unwrap();
        assert!(
            n > 0,
            "closed inside a chunk: {:?}",
            String::from_utf8_lossy(raw)
        );
        raw.extend_from_slice(&buf[..n]);
    }
}

#[tokio::test]
async fn an_http11_stream_comes_in_chunks_of_whole_events_and_ends_with_the_last() {
    let app = TestApp::start().await;
    let (_, token) = app.user("chunky").await;
    let (mut tcp, head, mut raw) =
        open(&app, "/api/v1/stream/filter?track=chunkword", "1.1", &token).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("transfer-encoding: chunked"), "{head}");
    assert!(!head.contains("content-length"), "{head}");
    // Live events: each is its own chunk (the hub writes it into the
    // socket as it comes, or the stream's task writes a batch), never a
    // part of one.
    let mut sids = Vec::new();
    let mut got = Vec::new();
    for i in 0..5 {
        sids.push(app.say(&token, &format!("chunkword {i}")).await);
        while got.len() < sids.len() {
            let data = next_chunk(&mut tcp, &mut raw)
                .await
                .expect("an event's chunk");
            let text = String::from_utf8(data).unwrap();
            assert!(text.ends_with('\n'), "whole lines in a chunk: {text:?}");
            for line in text.lines().filter(|l| !l.is_empty()) {
                let v: Value = serde_json::from_str(line).expect("a whole JSON line");
                if let Some(id) = v["status"]["id"].as_str() {
                    got.push(id.to_string());
                }
            }
        }
    }
    assert_eq!(got, sids);
    // Logging out ends the stream: its disconnect, then the last chunk.
    let (status, _) = app.delete("/api/v1/sessions/current", Some(&token)).await;
    assert!(status.is_success(), "{status}");
    let mut tail = String::new();
    while let Some(data) = next_chunk(&mut tcp, &mut raw).await {
        tail.push_str(&String::from_utf8(data).unwrap());
    }
    assert!(tail.contains("\"disconnect\""), "{tail}");
    let mut after = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut after)).await;
    assert!(
        raw.is_empty() && after.is_empty(),
        "nothing after the last chunk"
    );
}

#[tokio::test]
async fn a_catch_up_comes_many_events_to_a_chunk() {
    let app = TestApp::start().await;
    let (_, token) = app.user("catcher").await;
    let n = 600;
    let mut sids = Vec::new();
    for i in 0..n {
        sids.push(app.say(&token, &format!("catchword {i}")).await);
    }
    let (mut tcp, head, mut raw) = open(
        &app,
        "/api/v1/stream/filter?track=catchword&since=0",
        "1.1",
        &token,
    )
    .await;
    assert!(head.contains("transfer-encoding: chunked"), "{head}");
    let (mut got, mut chunks) = (Vec::new(), 0);
    while got.len() < n {
        let data = next_chunk(&mut tcp, &mut raw).await.expect("a chunk");
        chunks += 1;
        let text = String::from_utf8(data).unwrap();
        assert!(text.ends_with('\n'), "whole lines in a chunk: {text:?}");
        for line in text.lines().filter(|l| !l.is_empty()) {
            let v: Value = serde_json::from_str(line).expect("a whole JSON line");
            if let Some(id) = v["status"]["id"].as_str() {
                got.push(id.to_string());
            }
        }
    }
    assert_eq!(got, sids);
    // A write of the catch-up is one chunk (256 events at most), not one
    // chunk an event: a client's chunk parser is paid per write.
    assert!(chunks * 10 <= n, "{chunks} chunks for {n} events");
}

#[tokio::test]
async fn an_http10_stream_ends_with_the_connection_unframed() {
    let app = TestApp::start().await;
    let (_, token) = app.user("oldhttp").await;
    let (mut tcp, head, mut body) =
        open(&app, "/api/v1/stream/filter?track=oldword", "1.0", &token).await;
    assert!(head.contains(" 200"), "{head}");
    assert!(!head.contains("transfer-encoding"), "{head}");
    let sid = app.say(&token, "oldword here").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let line = loop {
        if let Some(nl) = body.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = body.drain(..=nl).collect();
            if line.len() > 1 {
                break String::from_utf8(line).unwrap();
            }
            continue;
        }
        let mut buf = [0u8; 4096];
        let n = tokio::time::timeout_at(deadline, tcp.read(&mut buf))
            .await
            .expect("the event in time")
            .unwrap();
        assert!(n > 0);
        body.extend_from_slice(&buf[..n]);
    };
    let v: Value = serde_json::from_str(line.trim()).expect("a bare JSON line");
    assert_eq!(v["status"]["id"], sid.as_str());
}
