//! Partitioned streams: N consumers get every event exactly once between
//! them, on the stream paths and on multiplexed WebSockets.

use super::*;
use firehose::stream::want::part_of;

/// The partition (from 0) of `of` that the status `sid` and its delete
/// belong to.
fn part_of_status(sid: &str, of: u8) -> u8 {
    part_of(sid.parse().expect("a numeric status id"), of)
}

/// Whether the statuses `sids` fall into every one of `of` partitions (so a
/// test can post until each consumer is owed something, whatever ids the
/// server hands out).
fn covers(sids: &[String], of: u8) -> bool {
    let parts: BTreeSet<u8> = sids.iter().map(|s| part_of_status(s, of)).collect();
    parts.len() == usize::from(of)
}

/// Every event id a stream gets until it has been quiet for a second.
async fn ids_until_quiet(s: &mut StreamClient) -> Vec<String> {
    messages_until_quiet(s)
        .await
        .iter()
        .filter_map(|m| m.data["id"].as_str().map(str::to_string))
        .collect()
}

/// Every message a stream gets until it has been quiet for a second, the
/// first waited for up to ten: a replay's first page on a process just
/// started, on a loaded host and a cluster, was seen to take longer than a
/// second (an empty partition then read as "nothing to replay").
async fn messages_until_quiet(s: &mut StreamClient) -> Vec<Msg> {
    let mut got = Vec::new();
    let mut wait = Duration::from_secs(10);
    while let Some(m) = s.next_within(wait).await {
        got.push(m);
        wait = Duration::from_secs(1);
    }
    got
}

#[tokio::test]
async fn partitions_of_the_firehose_get_every_event_exactly_once_between_them() {
    let app = TestApp::start().await;
    let (_, token, fh) = firehose_user(&app, "parted").await;
    let mut whole = app.stream("/api/v1/stream/firehose", Some(&fh), &[]).await;
    let mut parts = Vec::new();
    for k in 1..=3 {
        let s = app
            .stream(
                &format!("/api/v1/stream/firehose?partition={k}&partitions=3"),
                Some(&fh),
                &[("accept", "application/x-ndjson")],
            )
            .await;
        assert_eq!(s.status, StatusCode::OK, "{}", s.body);
        parts.push(s);
    }
    let (other_id, other) = app.user("parted_other").await;
    let mut sids = Vec::new();
    let mut i = 0;
    while i < 12 || !covers(&sids, 3) {
        let t = if i % 2 == 0 { &token } else { &other };
        sids.push(app.say(t, &format!("split me {i}")).await);
        i += 1;
        assert!(i < 200, "200 statuses and a partition still owed none");
    }
    app.follow(&token, &other_id).await;
    for sid in &sids[..4] {
        app.post(
            &format!("/api/v1/statuses/{sid}/like"),
            Some(&token),
            json!({}),
        )
        .await;
    }
    app.delete(&format!("/api/v1/statuses/{}", sids[1]), Some(&other))
        .await;
    let mut all = ids_until_quiet(&mut whole).await;
    assert!(all.len() >= 18, "{all:?}");
    let mut between: Vec<String> = Vec::new();
    let mut sizes = Vec::new();
    for (k, s) in (0u8..).zip(&mut parts) {
        let messages = messages_until_quiet(s).await;
        let statuses: Vec<&str> = messages
            .iter()
            .filter(|m| m.event == "status")
            .filter_map(|m| m.data["status"]["id"].as_str())
            .collect();
        for sid in &sids {
            let owed = part_of_status(sid, 3) == k;
            let held = statuses.contains(&sid.as_str());
            assert_eq!(held, owed, "status {sid} in partition {}", k + 1);
        }
        let got: Vec<String> = messages
            .iter()
            .filter_map(|m| m.data["id"].as_str().map(str::to_string))
            .collect();
        sizes.push(got.len());
        between.extend(got);
    }
    all.sort();
    between.sort();
    assert_eq!(between, all, "partition sizes {sizes:?}");
    assert!(sizes.iter().all(|n| *n > 0), "{sizes:?}");
    // A replay by count is split the same way.
    let mut replayed: Vec<String> = Vec::new();
    for k in 1..=3 {
        let mut s = app
            .stream(
                &format!("/api/v1/stream/firehose?partition={k}&partitions=3&count=1000"),
                Some(&fh),
                &[],
            )
            .await;
        replayed.extend(ids_until_quiet(&mut s).await);
    }
    replayed.sort();
    let mut whole_replay = app
        .stream("/api/v1/stream/firehose?count=1000", Some(&fh), &[])
        .await;
    let mut expected = ids_until_quiet(&mut whole_replay).await;
    expected.sort();
    assert_eq!(replayed, expected);
    drop((whole, parts, whole_replay));
    // A resume from the buffer's start on a process that keeps no history
    // (so the buffer is read), split in four, which divides the log's 64
    // shards (each partition reads only its own sixteen): the whole buffer
    // between them, each event once.
    let bare = app.beside(|c| c.history_secs = 0).await;
    let mut resumed: Vec<String> = Vec::new();
    for k in 1..=4 {
        let path = format!("/api/v1/stream/firehose?partition={k}&partitions=4&since=0");
        let mut s = app.stream_url(&bare.url(&path), Some(&fh), &[]).await;
        let got = ids_until_quiet(&mut s).await;
        assert!(!got.is_empty(), "partition {k} of 4 replays its events");
        resumed.extend(got);
    }
    resumed.sort();
    let mut whole = app
        .stream_url(&bare.url("/api/v1/stream/firehose?since=0"), Some(&fh), &[])
        .await;
    let mut expected = ids_until_quiet(&mut whole).await;
    expected.sort();
    assert_eq!(resumed, expected, "a resume split in four");
    // Bad partitions: 400 in the contract's shape.
    for q in [
        "partition=0&partitions=3",
        "partition=4&partitions=3",
        "partition=1&partitions=33",
        "partition=1",
        "partitions=2",
        "partition=x&partitions=2",
        // Repeated or padded: which one was meant is not guessed.
        "partition=1&partition=2&partitions=2",
        "partition=1&partitions=2&partitions=3",
        "partition=%201&partitions=2",
        "partition=1&partitions=2%20",
    ] {
        let s = app
            .stream(&format!("/api/v1/stream/firehose?{q}"), Some(&fh), &[])
            .await;
        assert_eq!(s.status, StatusCode::BAD_REQUEST, "{q}");
        assert!(s.body["error"]["code"].is_string(), "{q}: {}", s.body);
    }
    let s = app
        .stream(
            "/api/v1/stream/user?partition=1&partitions=2",
            Some(&token),
            &[],
        )
        .await;
    assert_eq!(s.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn websocket_subscriptions_split_a_stream_into_partitions_too() {
    let app = TestApp::start().await;
    let (_, token) = app.user("wsparted").await;
    let mut sockets = Vec::new();
    for k in 1..=2 {
        let mut ws = ws_connect(&app, "/api/v1/stream", &token).await;
        ws_send(
            &mut ws,
            json!({"type": "subscribe", "stream": "sample", "rate": 1, "partition": k, "partitions": 2}),
        )
        .await;
        assert_eq!(ws_next(&mut ws).await["type"], "subscribed");
        sockets.push(ws);
    }
    let mut sids = Vec::new();
    while sids.len() < 10 || !covers(&sids, 2) {
        let i = sids.len();
        assert!(i < 200, "200 statuses and a partition still owed none");
        sids.push(app.say(&token, &format!("socket split {i}")).await);
    }
    let mut got: Vec<Vec<String>> = Vec::new();
    for ws in &mut sockets {
        let mut ids = Vec::new();
        while let Ok(m) = tokio::time::timeout(Duration::from_secs(1), ws_next(ws)).await {
            if let Some(id) = m["status"]["id"].as_str() {
                ids.push(id.to_string());
            }
        }
        got.push(ids);
    }
    for (k, ids) in (0u8..).zip(&got) {
        for id in ids {
            assert_eq!(
                part_of_status(id, 2),
                k,
                "status {id} in partition {}",
                k + 1
            );
        }
    }
    assert!(got.iter().all(|ids| !ids.is_empty()), "{got:?}");
    let mut all: Vec<String> = got.concat();
    all.sort();
    sids.sort();
    assert_eq!(all, sids);
    // A partition past partitions: an error event naming it, the socket
    // kept.
    let ws = &mut sockets[0];
    ws_send(
        ws,
        json!({"type": "subscribe", "stream": "search", "partition": 3, "partitions": 2}),
    )
    .await;
    let e = ws_next(ws).await;
    assert_eq!(e["type"], "error", "{e}");
    assert!(e.to_string().contains("partition"), "{e}");
    ws_send(ws, json!({"type": "subscribe", "stream": "user"})).await;
    assert_eq!(ws_next(ws).await["type"], "subscribed");
}
