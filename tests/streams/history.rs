//! The history on disk: resumes that reach past a small replay buffer on
//! every transport, judged with the reader's present rights, and the
//! stretches it does not hold told as `resume_gap` with `oldest`.

use super::*;
use common::buffered_events;
use reqwest::Method;

/// A server whose replay buffer holds about 20 entries.
async fn small_buffer() -> TestApp {
    TestApp::start_with(|c| c.replay_maxlen = 20).await
}

/// Posts `n` statuses as `token` while a live firehose stream watches;
/// their (event id, status id) pairs in order, once the history holds the
/// last of them.
async fn post_watched(app: &TestApp, fh: &str, token: &str, n: usize) -> Vec<(String, String)> {
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
async fn plain_replay(s: &mut StreamClient) -> (Vec<String>, Vec<Value>) {
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
    let (status, _) = app
        .call(
            Method::PATCH,
            "/api/v1/me",
            Some(&carol),
            Some(json!({"private": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

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
        c.history_secs = 0;
    })
    .await;
    let (_, token, fh) = firehose_user(&app, "alice").await;
    let early = post_watched_without_history(&app, &fh, &token, 250).await;
    let (status, h) = app.get("/api/v1/history", Some(&token)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(h["events"], 0, "{h}");

    // A server that starts now holds from the buffer's oldest on.
    let second = app.beside(|c| c.replay_maxlen = 20).await;
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
