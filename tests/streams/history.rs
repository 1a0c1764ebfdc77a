//! The history on disk: resumes that reach past a small replay buffer on
//! every transport, judged with the reader's present rights, and the
//! stretches it does not hold told as `resume_gap` with `oldest`.

use super::*;
use common::buffered_events;

/// A server whose replay buffer holds about 20 entries.
async fn small_buffer() -> TestApp {
    TestApp::start_with(|c| {
        c.replay_maxlen = 20;
        c.log_shards = 1;
        c.log_shards = 1;
    })
    .await
}

/// Posts `n` statuses as `token` while a live firehose stream watches;
/// their (event id, status id) pairs in order, once the history holds the
/// last of them.
pub(super) async fn post_watched(
    app: &TestApp,
    fh: &str,
    token: &str,
    n: usize,
) -> Vec<(String, String)> {
    let mut live = app
        .stream(
            "/api/v1/stream/firehose",
            Some(fh),
            &[("accept", "application/x-ndjson")],
        )
        .await;
    assert_eq!(live.status, StatusCode::OK);
    let mut posted = Vec::new();
    for i in 0..n {
        posted.push(app.say(token, &format!("entry {i}")).await);
    }
    let mut seen = Vec::new();
    while seen.len() < n {
        let m = live.next_event("a posted status").await;
        if m.event == "status" {
            let sid = m.data["status"]["id"].as_str().unwrap().to_string();
            seen.push((m.data["id"].as_str().unwrap().to_string(), sid));
        }
    }
    let sids: Vec<&String> = seen.iter().map(|(_, s)| s).collect();
    assert_eq!(sids, posted.iter().collect::<Vec<_>>());
    let last = seen.last().unwrap().0.clone();
    app.eventually("the history holds the last status", || async {
        let (_, h) = app.get("/api/v1/history", Some(token)).await;
        h["newest_id"] == last.as_str()
    })
    .await;
    seen
}

/// What a plain stream replays until it goes quiet: statuses' ids, and
/// control events' codes.
pub(super) async fn plain_replay(s: &mut StreamClient) -> (Vec<String>, Vec<Value>) {
    let (mut ids, mut controls) = (Vec::new(), Vec::new());
    while let Some(m) = s.next_within(Duration::from_millis(1500)).await {
        match m.event.as_str() {
            "status" => ids.push(m.data["status"]["id"].as_str().unwrap().to_string()),
            "warning" | "disconnect" => controls.push(m.data),
            _ => {}
        }
    }
    (ids, controls)
}

/// The same for a WebSocket.
async fn ws_replay(ws: &mut common::Ws) -> (Vec<String>, Vec<Value>) {
    let (mut ids, mut controls) = (Vec::new(), Vec::new());
    while let Ok(Some(Ok(msg))) = tokio::time::timeout(Duration::from_millis(1500), ws.next()).await
    {
        let WsMessage::Text(t) = msg else { continue };
        let v: Value = serde_json::from_str(t.as_str()).unwrap();
        match v["type"].as_str() {
            Some("status") => ids.push(v["status"]["id"].as_str().unwrap().to_string()),
            Some("warning") | Some("disconnect") | Some("error") => controls.push(v),
            _ => {}
        }
    }
    (ids, controls)
}

fn from(posted: &[(String, String)], at: usize) -> Vec<String> {
    posted[at..].iter().map(|(_, s)| s.clone()).collect()
}

#[tokio::test]
async fn a_resume_reaches_past_a_small_buffer_on_every_transport() {
    let app = small_buffer().await;
    let (_, token, fh) = firehose_user(&app, "alice").await;
    let posted = post_watched(&app, &fh, &token, 150).await;
    assert!(
        buffered_events(&app, "status", &[]) < 100,
        "the buffer is small: the history has to serve the rest"
    );
    let at = |i: usize| posted[i].0.clone();

    let mut since = app
        .stream("/api/v1/stream/firehose?since=0", Some(&fh), &[])
        .await;
    let mut ndjson = app
        .stream(
            &format!("/api/v1/stream/firehose?last_event_id={}", at(9)),
            Some(&fh),
            &[("accept", "application/x-ndjson")],
        )
        .await;
    let mut header = app
        .stream(
            "/api/v1/stream/firehose",
            Some(&fh),
            &[("last-event-id", &at(49))],
        )
        .await;
    let mut ws = ws_connect(
        &app,
        &format!("/api/v1/stream/firehose?last_event_id={}", at(99)),
        &fh,
    )
    .await;
    let mut mux = ws_connect(&app, "/api/v1/stream", &fh).await;
    ws_send(
        &mut mux,
        json!({"type": "subscribe", "stream": "firehose", "last_event_id": at(119)}),
    )
    .await;

    let all = from(&posted, 0);
    assert_eq!(plain_replay(&mut since).await, (all.clone(), vec![]));
    assert_eq!(plain_replay(&mut ndjson).await, (from(&posted, 10), vec![]));
    assert_eq!(plain_replay(&mut header).await, (from(&posted, 50), vec![]));
    assert_eq!(ws_replay(&mut ws).await, (from(&posted, 100), vec![]));
    let (ids, controls) = ws_replay(&mut mux).await;
    assert_eq!(ids, from(&posted, 120));
    assert!(
        controls.iter().all(|c| c["type"] != "warning"),
        "{controls:?}"
    );

    // Then live, with no gap and no duplicate.
    let live = app.say(&token, "after the replay").await;
    for s in [&mut since, &mut ndjson, &mut header] {
        assert_eq!(plain_replay(s).await.0, vec![live.clone()]);
    }
    assert_eq!(ws_replay(&mut ws).await.0, vec![live.clone()]);
    assert_eq!(ws_replay(&mut mux).await.0, vec![live]);
}

#[tokio::test]
async fn a_replay_from_the_history_serves_what_its_reader_may_see_now() {
    let app = small_buffer().await;
    let (_, alice, fh) = firehose_user(&app, "alice").await;
    let (_, carol) = app.user("carol").await;
    let posted = post_watched(&app, &fh, &alice, 40).await;
    let carols = post_watched(&app, &fh, &carol, 20).await;
    // Pushed out of the buffer by later writes (Redis trims whole nodes of
    // 100 entries).
    post_watched(&app, &fh, &alice, 150).await;
    assert!(buffered_events(&app, "status", &[]) < 150);
    let gone: Vec<String> = posted[..10].iter().map(|(_, s)| s.clone()).collect();
    for sid in &gone {
        let (status, _) = app
            .delete(&format!("/api/v1/statuses/{sid}"), Some(&alice))
            .await;
        assert!(status.is_success());
    }
    super::privacy::patch(&app, &carol, json!({"private": true})).await;

    let mut s = app
        .stream("/api/v1/stream/firehose?since=0", Some(&fh), &[])
        .await;
    let (ids, controls) = plain_replay(&mut s).await;
    assert!(controls.is_empty(), "{controls:?}");
    assert_eq!(ids.len(), 180, "190 of alice's less the 10 deleted");
    for sid in gone.iter().chain(carols.iter().map(|(_, s)| s)) {
        assert!(!ids.contains(sid), "{sid} was served again");
    }
}

#[tokio::test]
async fn a_resume_older_than_the_history_says_resume_gap_with_oldest() {
    // The first server keeps no history, and its buffer moves on.
    let app = TestApp::start_with(|c| {
        c.replay_maxlen = 20;
        c.log_shards = 1;
        c.history_secs = 0;
    })
    .await;
    let (_, token, fh) = firehose_user(&app, "alice").await;
    let early = post_watched_without_history(&app, &fh, &token, 250).await;
    let (status, h) = app.get("/api/v1/history", Some(&token)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(h["events"], 0, "{h}");

    // A server that starts now holds from the buffer's oldest on.
    let second = app
        .beside(|c| {
            c.replay_maxlen = 20;
            c.log_shards = 1;
        })
        .await;
    let summary = || async {
        app.http
            .get(second.url("/api/v1/history"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()
    };
    app.eventually("the second server writes its first block", || async {
        summary().await["bytes"].as_u64().unwrap() > 0
    })
    .await;
    let h = summary().await;
    assert!(h["oldest"].as_f64().unwrap() > 0.0, "{h}");
    for key in ["oldest_id", "newest_id"] {
        assert!(h[key].is_string(), "{h}");
    }

    let mut s = app
        .stream_url(
            &second.url(&format!(
                "/api/v1/stream/firehose?last_event_id={}",
                early[0].0
            )),
            Some(&fh),
            &[],
        )
        .await;
    let (ids, controls) = plain_replay(&mut s).await;
    assert_eq!(controls.len(), 1, "{controls:?}");
    assert_eq!(controls[0]["code"], "resume_gap");
    assert_eq!(controls[0]["oldest"], h["oldest"]);
    let held = early.len() - ids.len();
    assert!(held > 0 && !ids.is_empty(), "{} served", ids.len());
    assert_eq!(ids, from(&early, held), "the newest, in order, once");
}

/// [`post_watched`] for a server with no history: waits for nothing more.
async fn post_watched_without_history(
    app: &TestApp,
    fh: &str,
    token: &str,
    n: usize,
) -> Vec<(String, String)> {
    let mut live = app
        .stream(
            "/api/v1/stream/firehose",
            Some(fh),
            &[("accept", "application/x-ndjson")],
        )
        .await;
    for i in 0..n {
        app.say(token, &format!("early {i}")).await;
    }
    let mut seen = Vec::new();
    while seen.len() < n {
        let m = live.next_event("a posted status").await;
        if m.event == "status" {
            let sid = m.data["status"]["id"].as_str().unwrap().to_string();
            seen.push((m.data["id"].as_str().unwrap().to_string(), sid));
        }
    }
    seen
}

#[tokio::test]
async fn the_history_summary_needs_a_token_and_counts_what_it_holds() {
    let app = TestApp::start().await;
    let (status, _) = app.get("/api/v1/history", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (_, token, fh) = firehose_user(&app, "alice").await;
    post_watched(&app, &fh, &token, 5).await;
    let (status, h) = app.get("/api/v1/history", Some(&token)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(h["events"].as_u64().unwrap() >= 5, "{h}");
    assert!(
        app.metric("firehose_history_events").await >= 5.0,
        "the metric agrees"
    );
}

/// Every page of a history search, `count` at a time: the statuses' ids,
/// newest first.
pub(super) async fn search_all(
    app: &TestApp,
    token: &str,
    query: &str,
    count: usize,
) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let mut path = format!(
            "/api/v1/history/search?query={}&count={count}",
            super::rules::enc(query)
        );
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let (status, page) = app.get(&path, Some(token)).await;
        assert_eq!(status, StatusCode::OK, "{query}: {page}");
        assert!(page["oldest"].is_number(), "{page}");
        let statuses = page["statuses"].as_array().unwrap();
        assert!(statuses.len() <= count);
        ids.extend(
            statuses
                .iter()
                .map(|s| s["id"].as_str().unwrap().to_string()),
        );
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return ids,
        }
    }
    panic!("{query}: the pages never ended");
}

#[tokio::test]
async fn a_history_search_finds_what_the_live_stream_delivered_for_the_rule() {
    let app = small_buffer().await;
    let (alice_id, alice) = app.user("alice").await;
    let (_, bob) = app.user("bob").await;
    let rules = [
        "#rust",
        "rust -is:repost",
        "from:alice",
        "@bob",
        "has:geo hello",
        "point_radius:[2.35 48.86 10km]",
        "\"hello world\"",
        "is:reply rust",
        "from:bob is:repost",
        "quetzal OR #zebra",
        "sample:50 hello",
        "king",
    ];
    // One reader per rule, each with the rule live.
    let mut live = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        let (_, token) = app.user(&format!("reader{i}")).await;
        let rules_json = json!([rule]).to_string();
        let s = app
            .stream(
                &format!(
                    "/api/v1/stream/filter?rules={}",
                    super::rules::enc(&rules_json)
                ),
                Some(&token),
                &[("accept", "application/x-ndjson")],
            )
            .await;
        assert_eq!(s.status, StatusCode::OK, "{rule}: {}", s.body);
        live.push((token, s));
    }
    let mut firsts = Vec::new();
    for i in 0..40 {
        let (who, body) = match i % 8 {
            0 => (&alice, json!({"message": format!("I love #rust {i}")})),
            1 => (&bob, json!({"message": format!("rust lang and @bob {i}")})),
            2 => (
                &alice,
                json!({"message": format!("hello world {i}"), "lat": 48.86, "lon": 2.35}),
            ),
            3 => (
                &bob,
                json!({"message": format!("far away {i}"), "lat": 40.0, "lon": -74.0}),
            ),
            // Upper case, and a Kelvin sign (`K`, a word `king` once
            // lowercased): the search's raw-text prefilter must keep both.
            4 => (
                &bob,
                json!({"message": format!("a QUETZAL and a \u{212A}ing {i}")}),
            ),
            5 => (
                &alice,
                json!({"message": format!("#Zebra crossing, hello {i}")}),
            ),
            6 => (
                &bob,
                json!({"message": format!("hello rust {i}"), "reply_to": firsts.first().cloned().unwrap_or_default()}),
            ),
            _ => (&alice, json!({"message": format!("plain words {i}")})),
        };
        if i % 8 == 6 && firsts.is_empty() {
            continue;
        }
        let status = app.post_status(who, body).await;
        firsts.push(status["id"].as_str().unwrap().to_string());
    }
    for sid in firsts.iter().take(5) {
        app.repost(&bob, sid).await;
    }
    // Enough more to push the corpus out of the small buffer.
    for i in 0..130 {
        app.say(&alice, &format!("filler {i}")).await;
    }
    app.eventually("the history holds everything", || async {
        let (_, h) = app.get("/api/v1/history", Some(&alice)).await;
        h["events"].as_u64().unwrap_or(0) >= 180
    })
    .await;
    let _ = alice_id;
    for ((token, mut s), rule) in live.into_iter().zip(rules) {
        let mut delivered = Vec::new();
        while let Some(m) = s.next_within(Duration::from_millis(800)).await {
            if m.event == "status" {
                delivered.push(m.data["status"]["id"].as_str().unwrap().to_string());
            }
        }
        delivered.reverse();
        if ["king", "quetzal OR #zebra"].contains(&rule) {
            assert!(!delivered.is_empty(), "{rule}: the live stream matched it");
        }
        let found = search_all(&app, &token, rule, 3).await;
        assert_eq!(
            found, delivered,
            "{rule}: the search and the live stream agree"
        );
        let (status, counts) = app
            .get(
                &format!(
                    "/api/v1/history/counts?query={}&bucket=minute",
                    super::rules::enc(rule)
                ),
                Some(&token),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{counts}");
        assert_eq!(counts["total"], delivered.len(), "{rule}: {counts}");
        let summed: u64 = counts["counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["count"].as_u64().unwrap())
            .sum();
        assert_eq!(summed, delivered.len() as u64);
    }
}

#[tokio::test]
async fn a_history_search_never_shows_what_its_reader_may_not_see_now() {
    let app = small_buffer().await;
    let (_, alice) = app.user("alice").await;
    let (_, bob) = app.user("bob").await;
    let (carol_id, carol) = app.user("carol").await;
    let (dave_id, dave) = app.user("dave").await;
    let (_, reader) = app.user("reader").await;
    let a = app.say(&alice, "kiwi from alice").await;
    let gone = app.say(&alice, "kiwi deleted later").await;
    let b = app.say(&bob, "kiwi from bob, private later").await;
    let c = app
        .say(&carol, "kiwi from carol, who blocks the reader")
        .await;
    let d = app
        .say(&dave, "kiwi from dave, whom the reader blocks")
        .await;
    for i in 0..130 {
        app.say(&alice, &format!("filler {i}")).await;
    }
    let (status, _) = app
        .delete(&format!("/api/v1/statuses/{gone}"), Some(&alice))
        .await;
    assert!(status.is_success());
    super::privacy::patch(&app, &bob, json!({"private": true})).await;
    let reader_id = app.get("/api/v1/me", Some(&reader)).await.1["id"]
        .as_str()
        .unwrap()
        .to_string();
    for (token, target) in [(&carol, &reader_id), (&reader, &dave_id)] {
        let (status, body) = app
            .post(
                &format!("/api/v1/users/{target}/block"),
                Some(token),
                json!({}),
            )
            .await;
        assert!(status.is_success(), "{body}");
    }
    app.eventually("the history holds everything", || async {
        let (_, h) = app.get("/api/v1/history", Some(&alice)).await;
        h["events"].as_u64().unwrap_or(0) >= 135
    })
    .await;
    assert_eq!(
        search_all(&app, &reader, "kiwi", 100).await,
        vec![a.clone()]
    );
    // Others see what they may: carol's and dave's to alice.
    let seen = search_all(&app, &alice, "kiwi", 100).await;
    assert_eq!(seen, vec![d, c, a]);
    let _ = (b, carol_id);
}

#[tokio::test]
async fn bad_history_queries_are_400_naming_the_parameter() {
    let app = TestApp::start().await;
    let (_, token) = app.user("alice").await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let (status, body) = app
        .get("/api/v1/history/search?query=rust%20(", Some(&token))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["code"], "invalid_rule", "{body}");
    assert!(body["error"]["column"].is_number(), "{body}");
    for (path, code) in [
        ("/api/v1/history/search".to_string(), "invalid_rule"),
        (
            "/api/v1/history/search?query=rust&count=0".into(),
            "invalid_count",
        ),
        (
            "/api/v1/history/search?query=rust&count=501".into(),
            "invalid_count",
        ),
        (
            "/api/v1/history/search?query=rust&cursor=x".into(),
            "invalid_cursor",
        ),
        (
            format!("/api/v1/history/search?query=rust&since={}", now + 3600),
            "invalid_since",
        ),
        (
            "/api/v1/history/search?query=rust&since=100&until=50".into(),
            "invalid_until",
        ),
        (
            "/api/v1/history/search?query=rust&since=soon".into(),
            "invalid_since",
        ),
        (
            "/api/v1/history/counts?query=rust&bucket=week".into(),
            "invalid_bucket",
        ),
        (
            "/api/v1/history/counts?query=rust&until=-1".into(),
            "invalid_until",
        ),
    ] {
        let (status, body) = app.get(&path, Some(&token)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert_eq!(body["error"]["code"], code, "{path}: {body}");
    }
    let (status, _) = app.get("/api/v1/history/search?query=rust", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}
