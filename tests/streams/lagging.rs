//! Slow consumers kept: a client that stops reading leaves live delivery
//! when its queue is full and goes on from the buffer and the history at
//! its own pace, every event once and in order, between a `lagging` and a
//! `caught_up` warning; only a socket that takes nothing is closed.

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Emits `n` status events of `uid`'s status `sid` (a replay serves only
/// what exists now), the i-th saying "{i} " then `size` bytes (more than a
/// post may, to fill sockets fast), one every 5 ms, straight into the
/// event log.
async fn emit(app: &TestApp, uid: &str, sid: &str, n: usize, size: usize) {
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let filler = "p".repeat(size);
    for i in 0..n {
        let body = json!({"type": "status", "at": i, "status": {"id": sid, "uid": uid, "login": "lena", "message": format!("{i} {filler}"), "posted": 1.0, "hashtags": [], "mentions": []}});
        store
            .events()
            .emit(&firehose::store::events::Body::from_json(body.to_string()))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A firehose (SSE, or NDJSON if `ndjson`) on a raw socket with a small
/// receive buffer, its head read: the client's side of a reader that can
/// pause.
async fn paused_reader(
    app: &TestApp,
    token: &str,
    ndjson: bool,
) -> (tokio::net::TcpStream, Unchunk, Vec<u8>) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut tcp = socket.connect(app.addr).await.unwrap();
    let accept = if ndjson {
        "application/x-ndjson"
    } else {
        "text/event-stream"
    };
    tcp.write_all(
        format!("GET /api/v1/stream/firehose HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\nAuthorization: Bearer {token}\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let (head, rest) = read_head(&mut tcp).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let mut unchunk = Unchunk::default();
    let body = unchunk.take(&rest);
    (tcp, unchunk, body)
}

/// Reads SSE messages (NDJSON lines if `ndjson`) as `(event, id, data)`
/// until `done` says so.
async fn read_until(
    (tcp, unchunk, body): &mut (tokio::net::TcpStream, Unchunk, Vec<u8>),
    ndjson: bool,
    done: impl Fn(&[(String, String, Value)]) -> bool,
) -> Vec<(String, String, Value)> {
    let mut got = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    while !done(&got) {
        let n = tokio::time::timeout(Duration::from_secs(30), tcp.read(&mut chunk))
            .await
            .expect("the stream keeps coming")
            .unwrap();
        assert!(
            n > 0,
            "the stream ended early, after {} messages",
            got.len()
        );
        body.extend(unchunk.take(&chunk[..n]));
        while let Some(end) = body.iter().position(|b| *b == b'\n').filter(|_| ndjson) {
            let line: Vec<u8> = body.drain(..end + 1).collect();
            let v: Value = serde_json::from_slice(&line).expect("each line's JSON whole");
            let id = v["id"].as_str().unwrap_or("").to_string();
            got.push((v["type"].as_str().unwrap_or("").to_string(), id, v));
        }
        while let Some(end) = body.windows(2).position(|w| w == b"\n\n") {
            let message: Vec<u8> = body.drain(..end + 2).collect();
            let text = String::from_utf8(message).expect("whole UTF-8 messages");
            let field = |name: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(name))
                    .unwrap_or("")
                    .to_string()
            };
            let data = field("data: ");
            if data.is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(&data).expect("each event's JSON whole");
            got.push((field("event: "), field("id: "), v));
        }
    }
    got
}

/// A user's firehose read by a paused reader ([`paused_reader`]) while `n`
/// events of 30 KB pass: the user's token and the reader.
async fn paused_through(
    app: &TestApp,
    ndjson: bool,
    n: usize,
) -> (String, (tokio::net::TcpStream, Unchunk, Vec<u8>)) {
    let (id, a, fh) = firehose_user(app, "lena").await;
    let sid = app.say(&a, "the status the events are of").await;
    let reader = paused_reader(app, &fh, ndjson).await;
    emit(app, &id, &sid, n, 30_000).await;
    (a, reader)
}

/// The codes of the warnings among `events` but `falling_behind`, in order.
fn warning_codes<'a>(events: impl Iterator<Item = &'a Value>) -> Vec<&'a str> {
    events
        .filter(|v| v["type"] == "warning")
        .filter_map(|v| v["code"].as_str())
        .filter(|c| *c != "falling_behind")
        .collect()
}

fn has_warning(got: &[(String, String, Value)], code: &str) -> bool {
    got.iter()
        .any(|(_, _, v)| v["type"] == "warning" && v["code"] == code)
}

/// A client that pauses while 300 events of 30 KB go by (more than its
/// queue of 20 and every socket buffer) is not dropped: once it reads it
/// gets `lagging` with how far behind it is, every event once and in
/// order with its own id, then `caught_up`, and live events after that.
/// On SSE with a buffer that holds them all, and on NDJSON with a buffer of
/// 50 events, where the missed ones come from the history.
#[tokio::test]
async fn a_reader_that_pauses_goes_on_from_the_history_and_catches_up() {
    for (ndjson, buffer) in [(false, 100_000), (true, 50)] {
        let app = TestApp::start_with(|c| {
            c.stream_queue = 20;
            c.replay_maxlen = buffer;
            c.log_shards = 1;
        })
        .await;
        const N: usize = 300;
        let (a, mut reader) = paused_through(&app, ndjson, N).await;
        app.eventually("the stream left live delivery", || async {
            app.metric("firehose_streams_lagging_total").await >= 1.0
        })
        .await;
        let got = read_until(&mut reader, ndjson, |got| has_warning(got, "caught_up")).await;
        let statuses: Vec<&(String, String, Value)> = got
            .iter()
            .filter(|(_, _, v)| v["type"] == "status")
            .collect();
        let ats: Vec<u64> = statuses
            .iter()
            .map(|(_, _, v)| v["at"].as_u64().unwrap())
            .collect();
        assert_eq!(
            ats,
            (0..N as u64).collect::<Vec<_>>(),
            "buffer {buffer}: every event once, in order"
        );
        let ids: Vec<firehose::stream::frame::EventId> = statuses
            .iter()
            .map(|(_, id, v)| {
                assert_eq!(id, v["id"].as_str().unwrap(), "the SSE id is the event's");
                firehose::stream::frame::EventId::parse(id).unwrap()
            })
            .collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids in order");
        let at = |code: &str| {
            got.iter()
                .position(|(_, _, v)| v["type"] == "warning" && v["code"] == code)
        };
        let lagging = at("lagging").expect("a lagging warning");
        let caught_up = at("caught_up").expect("a caught_up warning");
        assert_eq!(
            got.iter()
                .filter(|(_, _, v)| v["code"] == "lagging")
                .count(),
            1,
            "lagging once"
        );
        assert!(got[lagging].2["behind"].as_f64().unwrap() >= 0.0);
        assert!(
            lagging > 0 && lagging < got.len() - 1 && caught_up == got.len() - 1,
            "lagging among the events, caught_up after the last ({lagging}, {caught_up}, {})",
            got.len()
        );
        assert!(
            got.iter()
                .all(|(_, _, v)| v["type"] != "disconnect" && v["code"] != "resume_gap"),
            "nothing lost, nothing told lost"
        );
        // Live again.
        app.say(&a, "live again").await;
        let more = read_until(&mut reader, ndjson, |got| {
            got.iter().any(|(_, _, v)| v["type"] == "status")
        })
        .await;
        let live = more.iter().find(|(_, _, v)| v["type"] == "status").unwrap();
        assert_eq!(live.2["status"]["message"], "live again");
        assert!(firehose::stream::frame::EventId::parse(&live.1).unwrap() > ids[N - 1]);
        assert!(app.metric("firehose_streams_caught_up_total").await >= 1.0);
        if buffer == 50 {
            let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
            let page = store
                .events()
                .after(firehose::stream::frame::EventId::ZERO, 1);
            let (oldest, _) = page.await.unwrap().events[0].clone();
            assert!(
                oldest > ids[N / 2],
                "the buffer lost most of them: they came from the history"
            );
        }
    }
}

/// A multiplexed socket subscribed to the firehose and to its user's stream
/// pauses while 200 events of 30 KB go by, each for both, and for five
/// keep-alive periods (pings it cannot answer while it reads nothing): once
/// it reads, each subscription gets every event once and in order, with one
/// `lagging` for the socket and `caught_up` after the last. So does a
/// WebSocket on the firehose's path.
#[tokio::test]
async fn a_multiplexed_socket_that_pauses_catches_up_on_every_subscription() {
    pausing_websocket(&["firehose", "user"]).await;
    pausing_websocket(&[]).await;
}

/// A WebSocket subscribed to `streams` on the multiplexed path, or on the
/// firehose's path when there are none, that pauses and then reads.
async fn pausing_websocket(streams: &[&str]) {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let app = TestApp::start_with(|c| {
        c.stream_queue = 20;
        c.keepalive_secs = 1;
    })
    .await;
    let (id, a, fh) = firehose_user(&app, "lena").await;
    let sid = app.say(&a, "the status the events are of").await;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let tcp = socket.connect(app.addr).await.unwrap();
    let path = if streams.is_empty() {
        "/api/v1/stream/firehose"
    } else {
        "/api/v1/stream"
    };
    let mut req = format!("ws://{}{path}", app.addr)
        .into_client_request()
        .unwrap();
    req.headers_mut()
        .insert("authorization", format!("Bearer {fh}").parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::client_async(req, tcp).await.unwrap();
    for stream in streams {
        let subscribe = json!({"type": "subscribe", "stream": stream}).to_string();
        ws.send(WsMessage::Text(subscribe.into())).await.unwrap();
    }
    let mut subscribed = 0;
    while subscribed < streams.len() {
        let msg = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let WsMessage::Text(t) = msg {
            let v: Value = serde_json::from_str(t.as_str()).unwrap();
            assert_ne!(v["type"], "error", "{v}");
            subscribed += usize::from(v["type"] == "subscribed");
        }
    }
    const N: usize = 200;
    emit(&app, &id, &sid, N, 30_000).await;
    app.eventually("the socket left live delivery", || async {
        app.metric("firehose_streams_lagging_total").await >= 1.0
    })
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut got: Vec<Value> = Vec::new();
    while !got
        .iter()
        .any(|v| v["type"] == "warning" && v["code"] == "caught_up")
    {
        let msg = tokio::time::timeout(Duration::from_secs(30), ws.next())
            .await
            .expect("the socket keeps coming")
            .expect("the socket is open")
            .expect("whole frames");
        if let WsMessage::Text(t) = msg {
            got.push(serde_json::from_str(t.as_str()).expect("whole JSON"));
        }
    }
    let each = if streams.is_empty() {
        &["firehose"][..]
    } else {
        streams
    };
    for stream in each {
        let ats: Vec<u64> = got
            .iter()
            .filter(|v| v["type"] == "status" && (streams.is_empty() || v["stream"] == *stream))
            .map(|v| v["at"].as_u64().unwrap())
            .collect();
        assert_eq!(
            ats,
            (0..N as u64).collect::<Vec<_>>(),
            "{stream}: every event once, in order"
        );
    }
    let codes = warning_codes(got.iter());
    assert_eq!(codes, ["lagging", "caught_up"], "{got:?}");
    // Live again, the pings it could not answer while paused forgiven.
    tokio::time::sleep(Duration::from_secs(2)).await;
    app.say(&a, "live again").await;
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(30), ws.next())
            .await
            .expect("the socket keeps coming")
            .expect("the socket is open")
            .expect("whole frames");
        if let WsMessage::Text(t) = msg {
            let v: Value = serde_json::from_str(t.as_str()).unwrap();
            assert_ne!(v["type"], "disconnect", "{v}");
            if v["type"] == "status" {
                assert_eq!(v["status"]["message"], "live again");
                break;
            }
        }
    }
}

/// A paused reader whose place leaves what the server holds (no history,
/// a buffer of 50 events) is told `resume_gap` and goes on with what is
/// held: the newest events, in order, then `caught_up`.
#[tokio::test]
async fn a_reader_whose_place_leaves_the_history_gets_resume_gap_and_goes_on() {
    let app = TestApp::start_with(|c| {
        c.stream_queue = 20;
        c.replay_maxlen = 50;
        c.log_shards = 1;
        c.history_secs = 0;
    })
    .await;
    const N: usize = 300;
    let (_, mut reader) = paused_through(&app, false, N).await;
    let got = read_until(&mut reader, false, |got| has_warning(got, "caught_up")).await;
    let codes = warning_codes(got.iter().map(|(_, _, v)| v));
    assert_eq!(codes, ["lagging", "resume_gap", "caught_up"], "{codes:?}");
    let ats: Vec<u64> = got
        .iter()
        .filter(|(_, _, v)| v["type"] == "status")
        .map(|(_, _, v)| v["at"].as_u64().unwrap())
        .collect();
    let gap = ats
        .windows(2)
        .position(|w| w[1] != w[0] + 1)
        .expect("a stretch missed");
    assert!(
        ats[gap + 1..].windows(2).all(|w| w[1] == w[0] + 1),
        "after the gap, each event once, in order: {ats:?}"
    );
    assert_eq!(*ats.last().unwrap(), N as u64 - 1, "up to the newest");
    assert!(got.iter().all(|(_, _, v)| v["type"] != "disconnect"));
}
