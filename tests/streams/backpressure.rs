//! Slow and silent clients: the queue's warning and bound, a client that never
//! reads, and slow readers of sockets the hub writes into (a reader that
//! pauses long enough to lag: `lagging.rs`).

use super::*;

#[tokio::test]
async fn the_hub_warns_at_80_percent_and_a_full_queue_leaves_live_delivery() {
    use firehose::stream::frame::EventId;
    use firehose::stream::hub::ClientConn as Conn;
    use firehose::stream::queue::Delivery;
    let far = tokio::time::Instant::now() + Duration::from_secs(3600);
    let conn = Conn::new(1, 1, "s".into(), 10, far);
    let frame = |n: u64| {
        let json = format!(r#"{{"id":"1-{n}","type":"ping","at":1}}"#);
        let Some(firehose::stream::frame::Incoming::Event(frame)) =
            firehose::stream::frame::parse(&json)
        else {
            panic!("parse")
        };
        frame
    };
    // Eight events, the warning, a ninth: full. The tenth leaves live.
    for n in 0..10 {
        assert!(conn.offer(Delivery::Event(frame(n), "firehose"), true));
        assert_eq!(conn.is_lagging(), n == 9, "event {n}");
    }
    assert_eq!(
        conn.lag_start(),
        Some(EventId(1, 0, 0)),
        "from the first event it was not sent"
    );
    // Dropped while lagging: nothing more is queued.
    assert!(conn.offer(Delivery::Event(frame(10), "firehose"), true));
    let mut left = Vec::new();
    while let Some((d, _)) = conn.try_take() {
        left.push(d);
    }
    assert_eq!(left.len(), 1, "the queued events let go: {left:?}");
    match &left[0] {
        Delivery::Control(control) => {
            let v: Value = serde_json::from_slice(&control.json).unwrap();
            assert_eq!(
                (v["type"].clone(), v["code"].clone()),
                (json!("warning"), json!("falling_behind"))
            );
            assert!(v["percent_full"].as_u64().unwrap() >= 80);
        }
        other => panic!("only the warning stays, not {other:?}"),
    }
    // Rejoined: events are queued again.
    conn.rejoin();
    assert_eq!(conn.lag_start(), None);
    assert!(conn.offer(Delivery::Event(frame(12), "firehose"), true));
    assert!(
        matches!(conn.try_take(), Some((Delivery::Event(f, _), 0)) if f.id == EventId(1, 12, 0))
    );
    conn.close_queue();
    assert!(
        !conn.offer(Delivery::Event(frame(13), "firehose"), true),
        "gone"
    );
}

#[tokio::test]
async fn a_client_that_never_reads_is_cut_off_without_delaying_anyone() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::start_with(|c| {
        c.stream_queue = 20;
        c.write_timeout_secs = 2;
    })
    .await;
    let (id, a, fh) = firehose_user(&app, "quin").await;
    let mut reader = app.stream("/api/v1/stream/firehose", Some(&fh), &[]).await;
    // A raw client that sends its request and never reads a byte.
    // A tiny receive buffer keeps the kernel from soaking up the flood.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stalled = socket.connect(app.addr).await.unwrap();
    stalled
        .write_all(format!("GET /api/v1/stream/firehose HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {fh}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    // Open once the user holds two stream leases (the reader's and this).
    let leases = format!("{}:user:{{{id}}}:streams", app.cfg.key_prefix);
    app.eventually("the stalled stream is open", || async {
        let n: u64 = redis::Commands::zcard(&mut app.redis.conn(), &leases).unwrap_or(0);
        n == 2
    })
    .await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let big = "x".repeat(100_000);
    for i in 0..300 {
        let body = json!({"type": "status", "at": i, "status": {"id": (1000 + i).to_string(), "uid": id, "login": "quin", "message": big, "posted": 1.0, "hashtags": [], "mentions": []}});
        store
            .events()
            .emit(&firehose::store::events::Body::from_json(body.to_string()))
            .await
            .unwrap();
        // The reading client keeps up the whole time.
        let m = reader.next_event("reader keeps up").await;
        assert_eq!(m.data["at"], i);
    }
    app.say(&a, "still flowing").await;
    assert_eq!(
        status_message(&reader.next_event("after the flood").await),
        "still flowing"
    );
    // It lags rather than being dropped at once, and is closed when its
    // socket has taken no byte for the write timeout.
    app.eventually("the stalled client is disconnected", || async {
        app.metric("firehose_stall_disconnects_total").await >= 1.0
    })
    .await;
    assert!(app.metric("firehose_streams_lagging_total").await >= 1.0);
    // The server closes the socket: reading now drains what was buffered, then EOF.
    let mut buf = vec![0u8; 1 << 20];
    let drained = tokio::time::timeout(Duration::from_secs(20), async {
        let mut total = 0usize;
        loop {
            match stalled.read(&mut buf).await {
                Ok(0) | Err(_) => return total,
                Ok(n) => total += n,
            }
        }
    })
    .await
    .expect("the stalled connection is closed by the server");
    assert!(
        drained < 300 * 100_000,
        "the server did not buffer everything for it ({drained} bytes)"
    );
}

/// Publishes `n` statuses of `uid` (`login`), the i-th saying "{i} " and
/// then `size` bytes of filler (returned, for the readers' checks), one every
/// 5 ms, as a live stream's events mostly come.
async fn emit_big_statuses(app: &TestApp, uid: &str, login: &str, n: usize, size: usize) -> String {
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let big = "w".repeat(size);
    for i in 0..n {
        let body = json!({"type": "status", "at": i, "status": {"id": (5000 + i).to_string(), "uid": uid, "login": login, "message": format!("{i} {big}"), "posted": 1.0, "hashtags": [], "mentions": []}});
        store
            .events()
            .emit(&firehose::store::events::Body::from_json(body.to_string()))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    big
}

/// A live SSE stream's events are written into its socket by the hub while
/// the stream's task waits; a client that reads slowly makes those writes
/// fall short or block, and the rest is written by the task. Every event
/// still arrives whole, once, in order.
#[tokio::test]
async fn a_slow_reader_of_a_stream_the_hub_writes_into_gets_every_event_whole_in_order() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::start().await;
    let (id, _a, fh) = firehose_user(&app, "rhea").await;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut slow = socket.connect(app.addr).await.unwrap();
    slow.write_all(
        format!(
            "GET /api/v1/stream/firehose HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {fh}\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let (head, mut body) = read_head(&mut slow).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    // 200 x 30 KB: more than the 4 MB the kernel lets a socket's send
    // buffer grow to, so that the hub's writes do fall short.
    const N: usize = 200;
    let reader = tokio::spawn(async move {
        // A few KB at a time, with pauses: the server's writes outrun it.
        let mut chunk = vec![0u8; 4096];
        let mut events: Vec<Value> = Vec::new();
        while events.len() < N {
            let n = tokio::time::timeout(Duration::from_secs(30), slow.read(&mut chunk))
                .await
                .expect("the stream keeps coming")
                .unwrap();
            assert!(n > 0, "the stream ended early");
            body.extend_from_slice(&chunk[..n]);
            while let Some(end) = body.windows(2).position(|w| w == b"\n\n") {
                let message: Vec<u8> = body.drain(..end + 2).collect();
                let text = String::from_utf8(message).expect("whole UTF-8 messages");
                if let Some(data) = text.lines().find_map(|l| l.strip_prefix("data: ")) {
                    let v: Value = serde_json::from_str(data).expect("each event's JSON whole");
                    if v["type"] == "status" {
                        events.push(v);
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        events
    });
    let big = emit_big_statuses(&app, &id, "rhea", N, 30_000).await;
    let events = reader.await.unwrap();
    let ats: Vec<u64> = events.iter().map(|v| v["at"].as_u64().unwrap()).collect();
    assert_eq!(
        ats,
        (0..N as u64).collect::<Vec<_>>(),
        "every event once, in order"
    );
    for (i, v) in events.iter().enumerate() {
        assert_eq!(v["status"]["message"], format!("{i} {big}"));
    }
    let direct = app.metric("firehose_events_direct_total").await;
    assert!(direct >= 1.0, "the hub wrote some events itself: {direct}");
}

/// A WebSocket on a stream path has its live events framed and written
/// into its socket by the hub while its task waits. A client that reads in
/// slow and fast spells makes those writes fall short or block, and it
/// pings all the while, so the task's own frames (pongs, then the closing)
/// have to find their way between the hub's: every event still arrives as
/// a whole frame, once, in order, every ping gets its pong, in order, and a
/// logout ends the socket with a disconnect message and a Close.
#[tokio::test]
async fn a_slow_reader_of_a_websocket_the_hub_writes_into_gets_whole_frames_and_its_pongs() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let app = TestApp::start().await;
    let (id, _a, fh) = firehose_user(&app, "wren").await;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let tcp = socket.connect(app.addr).await.unwrap();
    let mut req = format!("ws://{}/api/v1/stream/firehose", app.addr)
        .into_client_request()
        .unwrap();
    req.headers_mut()
        .insert("authorization", format!("Bearer {fh}").parse().unwrap());
    let (ws, _) = tokio_tungstenite::client_async(req, tcp).await.unwrap();
    let (mut out, mut inbound) = ws.split();
    const N: usize = 200;
    let (through, all_read) = tokio::sync::oneshot::channel::<()>();
    let mut through = Some(through);
    let ponged = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let ponged_seen = ponged.clone();
    let reader = tokio::spawn(async move {
        let mut events: Vec<Value> = Vec::new();
        let mut pongs = Vec::new();
        let mut bye = None;
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(30), inbound.next())
                .await
                .expect("the socket keeps coming")
                .expect("the socket ended without a Close")
                .expect("every frame well formed");
            match msg {
                WsMessage::Text(t) => {
                    let v: Value = serde_json::from_str(t.as_str()).expect("whole JSON");
                    if v["type"] == "status" {
                        events.push(v);
                        if events.len() == N {
                            let _ = through.take().map(|t| t.send(()));
                        }
                        // Spells of 40 events slower than they come (enough
                        // to fill the server's send buffer, 4 MB at most),
                        // then 40 as fast as it can: the hub's writes fill
                        // the socket, then find it drained.
                        if events.len() < N && (events.len() / 40).is_multiple_of(2) {
                            tokio::time::sleep(Duration::from_millis(15)).await;
                        }
                    } else if v["type"] == "disconnect" {
                        bye = Some(v);
                    }
                }
                WsMessage::Pong(p) => {
                    pongs.push(u32::from_be_bytes(p[..].try_into().unwrap()));
                    ponged_seen.store(pongs.len() as u32, std::sync::atomic::Ordering::SeqCst);
                }
                WsMessage::Close(_) => break,
                _ => {}
            }
        }
        (events, pongs, bye)
    });
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let pinger = tokio::spawn(async move {
        let mut pings = 0u32;
        while stopped.try_recv().is_err() {
            out.send(WsMessage::Ping(pings.to_be_bytes().to_vec().into()))
                .await
                .unwrap();
            pings += 1;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        pings
    });
    let big = emit_big_statuses(&app, &id, "wren", N, 100_000).await;
    // Logged out once the reader is through the events and has the last
    // ping's pong.
    tokio::time::timeout(Duration::from_secs(60), all_read)
        .await
        .expect("the reader gets every event")
        .expect("the reader is still there");
    let _ = stop.send(());
    let pings = pinger.await.unwrap();
    app.eventually("a pong for every ping", || {
        let n = ponged.load(std::sync::atomic::Ordering::SeqCst);
        async move { n >= pings }
    })
    .await;
    let (status, _) = app.delete("/api/v1/sessions/current", Some(&fh)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (events, pongs, bye) = reader.await.unwrap();
    let ats: Vec<u64> = events.iter().map(|v| v["at"].as_u64().unwrap()).collect();
    assert_eq!(
        ats,
        (0..N as u64).collect::<Vec<_>>(),
        "every event once, in order"
    );
    for (i, v) in events.iter().enumerate() {
        assert_eq!(v["status"]["message"], format!("{i} {big}"));
    }
    assert!(pings > 100, "the client pinged all along ({pings})");
    assert_eq!(
        pongs,
        (0..pings).collect::<Vec<_>>(),
        "a pong for every ping"
    );
    assert_eq!(
        bye.expect("a disconnect before the Close")["code"],
        "revoked"
    );
    let direct = app.metric("firehose_events_direct_total").await;
    assert!(direct >= 1.0, "the hub wrote some frames itself: {direct}");
}
