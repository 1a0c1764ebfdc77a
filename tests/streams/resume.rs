//! Resume and replay: `Last-Event-ID`, `count`, resume gaps, and catching up
//! after a lost subscription or a Redis restart.

use super::*;

/// Buffer entries that hold no event (no field `e`: none of this server's
/// writing) are passed over by a replay, however many there are in a row.
#[tokio::test]
async fn a_replay_passes_over_entries_that_hold_no_event() {
    let app = TestApp::start().await;
    let (_, token, fh) = firehose_user(&app, "skipper").await;
    app.say(&token, "before the gap").await;
    let mut s = app
        .stream("/api/v1/stream/firehose?count=1", Some(&fh), &[])
        .await;
    let before = s.next_event("the status before").await;
    assert_eq!(status_message(&before), "before the gap");
    drop(s);
    // More than a replay page (256) of foreign entries in a row.
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix)
        .with_log_shards(app.cfg.log_shards as usize);
    let mut pipe = redis::pipe();
    for _ in 0..300 {
        pipe.cmd("XADD")
            .arg(keys.log_events(11))
            .arg("*")
            .arg("x")
            .arg("y")
            .ignore();
    }
    let _: () = pipe.query(&mut app.redis.conn()).unwrap();
    // Newest, they leave the newest event where it was.
    let path = format!(
        "/api/v1/stream/firehose?last_event_id={}",
        before.id.as_deref().unwrap()
    );
    let mut s = app.stream(&path, Some(&fh), &[]).await;
    app.say(&token, "after the gap").await;
    // Not a `resume_gap` first: the resume point is still known.
    let m = s.next("the status after the gap, live").await;
    assert_eq!(
        (m.event.as_str(), status_message(&m)),
        ("status", "after the gap")
    );
    s.assert_quiet(SHORT).await;
    let path = format!(
        "/api/v1/stream/firehose?last_event_id={}",
        before.id.as_deref().unwrap()
    );
    let mut s = app.stream(&path, Some(&fh), &[]).await;
    let m = s.next_event("the status after the gap").await;
    assert_eq!(status_message(&m), "after the gap");
    s.assert_quiet(SHORT).await;
}

#[tokio::test]
async fn a_resume_point_the_buffer_cannot_serve_opens_the_stream_with_resume_gap() {
    let app = TestApp::start().await;
    let (_, token) = app.user("resumer").await;
    let before = app.say(&token, "already in the buffer").await;
    let _ = before;
    // Malformed (query or header) and from the future: each opens, warns
    // resume_gap, and then delivers live events.
    let cases: [(&str, &[(&str, &str)]); 4] = [
        ("/api/v1/stream/sample?rate=1&last_event_id=garbage", &[]),
        (
            "/api/v1/stream/sample?rate=1",
            &[("last-event-id", "not-an-id")],
        ),
        (
            "/api/v1/stream/sample?rate=1&last_event_id=99999999999999-0",
            &[],
        ),
        (
            "/api/v1/stream/sample?rate=1",
            &[("last-event-id", "99999999999999-7")],
        ),
    ];
    for (path, headers) in cases {
        let mut s = app.stream(path, Some(&token), headers).await;
        assert_eq!(s.status, StatusCode::OK, "{path} {headers:?}");
        let w = s.next("warning").await;
        assert_eq!(
            (w.event.as_str(), w.data["code"].clone()),
            ("warning", json!("resume_gap")),
            "{path} {headers:?}"
        );
        let id = app.say(&token, "live after the gap").await;
        let e = s.next_event("the live status").await;
        assert_eq!(e.data["status"]["id"], json!(id), "{path} {headers:?}");
    }
    // The same over a WebSocket subscription.
    let mut ws = ws_connect(&app, "/api/v1/stream", &token).await;
    ws_send(
        &mut ws,
        json!({"type": "subscribe", "stream": "sample", "rate": 1, "last_event_id": "garbage"}),
    )
    .await;
    assert_eq!(ws_next(&mut ws).await["type"], "subscribed");
    let w = ws_next(&mut ws).await;
    assert_eq!(
        (w["type"].clone(), w["code"].clone()),
        (json!("warning"), json!("resume_gap"))
    );
    let id = app.say(&token, "live on the socket").await;
    assert_eq!(ws_next(&mut ws).await["status"]["id"], json!(id));
}

#[tokio::test]
async fn last_event_id_replays_what_was_missed_then_goes_live_without_duplicates() {
    let app = TestApp::start().await;
    let (_, a) = app.user("lea").await;
    let path = "/api/v1/stream/filter?track=keep";
    let mut s = app.stream(path, Some(&a), &[]).await;
    app.say(&a, "keep 1").await;
    let first = s.next_event("keep 1").await;
    drop(s);
    app.say(&a, "keep 2").await;
    app.say(&a, "drop this").await;
    app.say(&a, "keep 3").await;
    let last = first.id.clone().unwrap();
    let mut s = app
        .stream(path, Some(&a), &[("last-event-id", &last)])
        .await;
    assert_eq!(status_message(&s.next_event("replayed 2").await), "keep 2");
    assert_eq!(status_message(&s.next_event("replayed 3").await), "keep 3");
    app.say(&a, "keep 4").await;
    assert_eq!(status_message(&s.next_event("live 4").await), "keep 4");
    s.assert_quiet(SHORT).await;
    // The query form, on NDJSON.
    let mut q = app
        .stream(
            &format!("{path}&last_event_id={last}"),
            Some(&a),
            &[("accept", "application/x-ndjson")],
        )
        .await;
    let got: Vec<String> = [
        q.next_event("2").await,
        q.next_event("3").await,
        q.next_event("4").await,
    ]
    .iter()
    .map(|m| status_message(m).to_string())
    .collect();
    assert_eq!(got, ["keep 2", "keep 3", "keep 4"]);
    q.assert_quiet(SHORT).await;
}

#[tokio::test]
async fn count_replays_the_newest_matching_events_first() {
    let app = TestApp::start().await;
    let (_, a) = app.user("max").await;
    for i in 0..6 {
        app.say(&a, &format!("tick {i}")).await;
        app.say(&a, "noise").await;
    }
    let mut s = app
        .stream("/api/v1/stream/filter?track=tick&count=3", Some(&a), &[])
        .await;
    let got: Vec<String> = [
        s.next_event("a").await,
        s.next_event("b").await,
        s.next_event("c").await,
    ]
    .iter()
    .map(|m| status_message(m).to_string())
    .collect();
    assert_eq!(got, ["tick 3", "tick 4", "tick 5"]);
    s.assert_quiet(SHORT).await;
    app.say(&a, "tick live").await;
    assert_eq!(status_message(&s.next_event("live").await), "tick live");
}

#[tokio::test]
async fn an_id_older_than_the_buffer_gets_a_resume_gap_warning_and_carries_on() {
    // No history: the buffer alone (history.rs has the resumes it serves).
    let app = TestApp::start_with(|c| {
        c.replay_maxlen = 10;
        c.log_shards = 1;
        c.history_secs = 0;
    })
    .await;
    let (_, a, fh) = firehose_user(&app, "ned").await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    // Enough events for the approximate trim to drop whole stream nodes.
    for i in 0..300 {
        store
            .events()
            .emit(&firehose::store::events::Body::from_json(
                json!({"type": "ping", "at": i}).to_string(),
            ))
            .await
            .unwrap();
    }
    let mut s = app
        .stream("/api/v1/stream/firehose?last_event_id=1-0", Some(&fh), &[])
        .await;
    let w = s.next("warning").await;
    assert_eq!(
        (w.event.as_str(), w.data["code"].clone()),
        ("warning", json!("resume_gap"))
    );
    assert!(w.id.is_none(), "control events carry no id");
    let first = s.next_event("what is left").await;
    assert_eq!(first.data["type"], "ping");
    let mut last = first;
    while let Some(m) = s.next_within(SHORT).await {
        last = m;
    }
    assert_eq!(last.data["at"], 299);
    app.say(&a, "live after gap").await;
    assert_eq!(
        status_message(&s.next_event("live").await),
        "live after gap"
    );
}

#[tokio::test]
async fn a_lost_redis_subscription_is_caught_up_from_the_buffer() {
    let app = TestApp::start().await;
    let (_, a, fh) = firehose_user(&app, "ora").await;
    let mut s = app.stream("/api/v1/stream/firehose", Some(&fh), &[]).await;
    app.say(&a, "before").await;
    assert_eq!(status_message(&s.next_event("before").await), "before");
    let killed = app.redis.kill_pubsub();
    assert!(killed >= 1);
    let mut sent = Vec::new();
    for i in 0..20 {
        sent.push(format!("during {i}"));
        app.say(&a, &format!("during {i}")).await;
    }
    let mut got = Vec::new();
    while got.len() < sent.len() {
        got.push(status_message(&s.next_event("caught up").await).to_string());
    }
    assert_eq!(got, sent, "no gap, no duplicate, in order");
    s.assert_quiet(SHORT).await;
}

#[tokio::test]
async fn streams_survive_a_redis_restart() {
    let mut app = TestApp::start().await;
    let (_, _, fh) = firehose_user(&app, "pam").await;
    let mut s = app.stream("/api/v1/stream/firehose", Some(&fh), &[]).await;
    app.redis.restart();
    // The test Redis keeps no data, so post as a user made after the restart.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let token = loop {
        let (status, _) = app
            .post(
                "/api/v1/users",
                None,
                json!({"login": "pam2", "name": "p", "email": "p2@x", "password": "password123"}),
            )
            .await;
        if status == StatusCode::CREATED || status == StatusCode::CONFLICT {
            break app.login("pam2").await;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "redis never came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // Events published after the hub re-subscribed reach the old connection.
    let mut seen = false;
    for i in 0..100 {
        app.say(&token, &format!("after restart {i}")).await;
        if let Some(m) = s.next_within(Duration::from_millis(200)).await {
            if m.data["type"] == "status" {
                seen = true;
                break;
            }
        }
    }
    assert!(seen, "the stream resumed after the restart");
}

#[tokio::test]
async fn the_multiplexed_sockets_query_resumes_each_streams_first_subscription() {
    let app = TestApp::start().await;
    let (_, token) = app.user("muxer").await;
    let first = app.say(&token, "bilby one").await;
    let second = app.say(&token, "bilby two").await;
    // A point in the query: the first subscription to each stream starts
    // there when its message names none of its own.
    let mut all = vec![first.clone(), second.clone()];
    for query in ["since=0", "count=2"] {
        all.push(app.say(&token, "bilby three").await);
        let mut ws = ws_connect(&app, &format!("/api/v1/stream?{query}"), &token).await;
        ws_send(
            &mut ws,
            json!({"type": "subscribe", "stream": "filter", "track": ["bilby"]}),
        )
        .await;
        assert_eq!(ws_next(&mut ws).await["type"], "subscribed");
        let expected = match query {
            "since=0" => &all[..],
            _ => &all[all.len() - 2..],
        };
        for sid in expected {
            let v = ws_next(&mut ws).await;
            assert_eq!(
                v["status"]["id"].as_str(),
                Some(sid.as_str()),
                "{query}: {v}"
            );
        }
        // Unsubscribed and subscribed again: live from then on.
        ws_send(&mut ws, json!({"type": "unsubscribe", "stream": "filter"})).await;
        assert_eq!(ws_next(&mut ws).await["type"], "unsubscribed");
        ws_send(
            &mut ws,
            json!({"type": "subscribe", "stream": "filter", "track": ["bilby"]}),
        )
        .await;
        assert_eq!(ws_next(&mut ws).await["type"], "subscribed");
        let live = app.say(&token, "bilby live").await;
        all.push(live.clone());
        let v = ws_next(&mut ws).await;
        assert_eq!(
            v["status"]["id"].as_str(),
            Some(live.as_str()),
            "{query}: {v}"
        );
    }
    // The first one's event id as last_event_id: what followed it.
    let mut s = app
        .stream(
            "/api/v1/stream/filter?track=bilby&since=0",
            Some(&token),
            &[],
        )
        .await;
    let m = s.next_event("the first bilby").await;
    assert_eq!(m.data["status"]["id"].as_str(), Some(first.as_str()));
    let after_first = m.id.clone().unwrap();
    let mut ws = ws_connect(
        &app,
        &format!("/api/v1/stream?last_event_id={after_first}"),
        &token,
    )
    .await;
    ws_send(
        &mut ws,
        json!({"type": "subscribe", "stream": "filter", "track": ["bilby"]}),
    )
    .await;
    assert_eq!(ws_next(&mut ws).await["type"], "subscribed");
    let v = ws_next(&mut ws).await;
    assert_eq!(v["status"]["id"].as_str(), Some(second.as_str()), "{v}");
}
