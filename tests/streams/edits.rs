//! Edits on the streams: an `update` to every stream that had the status,
//! on every transport; a `status` to a filter that matches only the new
//! text; nothing to a stream that never had it; replays serve the current
//! version.

use super::privacy::patch;
use super::*;
use reqwest::Method;

async fn edit(app: &TestApp, token: &str, sid: &str, message: &str) -> Value {
    let (status, body) = app
        .call(
            Method::PATCH,
            &format!("/api/v1/statuses/{sid}"),
            Some(token),
            Some(json!({ "message": message })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

#[tokio::test]
async fn an_edit_reaches_every_stream_that_had_the_status_and_no_other() {
    let app = TestApp::start().await;
    let (author_id, author) = app.user("editor").await;
    let (_, follower) = app.user("follower").await;
    let (_, _, fh_token) = firehose_user(&app, "watcher").await;
    app.follow(&follower, &author_id).await;
    let mut home = app
        .stream("/api/v1/stream/user", Some(&follower), &[])
        .await;
    let mut fh = app
        .stream(
            "/api/v1/stream/firehose",
            Some(&fh_token),
            &[("accept", "application/x-ndjson")],
        )
        .await;
    let mut old_word = ws_connect(&app, "/api/v1/stream/filter?track=oldword", &follower).await;
    let mut new_word = app
        .stream("/api/v1/stream/filter?track=newword", Some(&follower), &[])
        .await;
    let mut neither = app
        .stream(
            "/api/v1/stream/filter?track=otherword",
            Some(&follower),
            &[],
        )
        .await;
    let mut mux = ws_connect(&app, "/api/v1/stream", &follower).await;
    ws_send(&mut mux, json!({"type": "subscribe", "stream": "user"})).await;
    assert_eq!(ws_next(&mut mux).await["type"], "subscribed");

    let sid = app.say(&author, "first draft oldword").await;
    for s in [&mut home, &mut fh] {
        assert_eq!(
            s.next_event("the status").await.data["status"]["id"],
            sid.as_str()
        );
    }
    assert_eq!(ws_next(&mut old_word).await["status"]["id"], sid.as_str());
    assert_eq!(ws_next(&mut mux).await["status"]["id"], sid.as_str());

    edit(&app, &author, &sid, "second draft newword").await;
    // Those that had it get the update, with the new text.
    for s in [&mut home, &mut fh] {
        let m = s.next_event("the update").await;
        assert_eq!(m.event, "update", "{:?}", m.data);
        assert_eq!(m.data["type"], "update");
        assert_eq!(m.data["status"]["id"], sid.as_str());
        assert_eq!(m.data["status"]["message"], "second draft newword");
        assert!(m.data["status"]["edited_at"].is_number(), "{:?}", m.data);
    }
    let u = ws_next(&mut old_word).await;
    assert_eq!(
        (u["type"].as_str(), u["status"]["message"].as_str()),
        (Some("update"), Some("second draft newword")),
        "{u}"
    );
    let u = ws_next(&mut mux).await;
    assert_eq!(
        (
            u["type"].as_str(),
            u["stream"].as_str(),
            u["status"]["id"].as_str()
        ),
        (Some("update"), Some("user"), Some(sid.as_str())),
        "{u}"
    );
    // The filter only the new text matches gets it as a status.
    let m = new_word.next_event("the edited status").await;
    assert_eq!(m.event, "status", "{:?}", m.data);
    assert_eq!(m.data["status"]["id"], sid.as_str());
    assert_eq!(m.data["status"]["message"], "second draft newword");
    // The one that never had it gets nothing.
    neither.assert_quiet(SHORT).await;
    // A later edit back to the old word: the new-word stream, which has
    // it now, gets the update too.
    edit(&app, &author, &sid, "third draft newword oldword").await;
    let m = new_word.next_event("the second update").await;
    assert_eq!(m.event, "update");
    assert_eq!(
        ws_next(&mut old_word).await["status"]["message"],
        "third draft newword oldword"
    );
    neither.assert_quiet(SHORT).await;
}

#[tokio::test]
async fn a_private_accounts_edit_reaches_followers_only_and_replays_serve_the_current_version() {
    let app = TestApp::start().await;
    let (author_id, author) = app.user("quiet").await;
    let (_, follower) = app.user("friend").await;
    let (_, _, fh_token) = firehose_user(&app, "lurker").await;
    app.follow(&follower, &author_id).await;
    let mut fh = app
        .stream("/api/v1/stream/firehose", Some(&fh_token), &[])
        .await;
    // A public status, then edited: a replay from before it serves the
    // edited text (and the update).
    let public = app.say(&author, "public draft").await;
    fh.next_event("the public status").await;
    edit(&app, &author, &public, "public final").await;
    assert_eq!(fh.next_event("the public update").await.event, "update");
    let mut replay = app
        .stream("/api/v1/stream/firehose?count=10", Some(&fh_token), &[])
        .await;
    let mut seen = Vec::new();
    while let Some(m) = replay.next_within(SHORT).await {
        if m.data["status"]["id"] == public.as_str() {
            seen.push((m.event.clone(), m.data["status"]["message"].clone()));
        }
    }
    assert_eq!(
        seen,
        vec![
            ("status".to_string(), json!("public final")),
            ("update".to_string(), json!("public final")),
        ]
    );
    // Private from now on: its edits reach its followers, not the firehose.
    patch(&app, &author, json!({"private": true})).await;
    let author = app.login("quiet").await;
    let mut home = app
        .stream("/api/v1/stream/user", Some(&follower), &[])
        .await;
    let secret = app.say(&author, "for friends").await;
    assert_eq!(
        home.next_event("the private status").await.data["status"]["id"],
        secret.as_str()
    );
    edit(&app, &author, &secret, "for friends, edited").await;
    let m = home.next_event("the private update").await;
    assert_eq!(
        (m.event.as_str(), m.data["status"]["message"].as_str()),
        ("update", Some("for friends, edited"))
    );
    fh.assert_quiet(SHORT).await;
}

/// A history search finds an edited status by its text now, once, at its
/// latest edit (as a page of it is read, whatever the page size), and by
/// no word it no longer holds; the counts agree.
#[tokio::test]
async fn a_history_search_finds_an_edited_status_by_its_text_now_once() {
    let app = TestApp::start().await;
    let (_, alice) = app.user("alice").await;
    let (_, reader) = app.user("reader").await;
    let before = history_events(&app, &alice).await;
    let plain = app.say(&alice, "okapi never edited").await;
    let once = app.say(&alice, "okapi zebraword at first").await;
    let twice = app.say(&alice, "quagga first").await;
    edit(&app, &alice, &once, "okapi giraffeword now").await;
    edit(&app, &alice, &twice, "quagga second").await;
    edit(&app, &alice, &twice, "quagga third okapi").await;
    app.eventually("the history holds the posts and edits", || async {
        history_events(&app, &alice).await >= before + 6
    })
    .await;
    for count in [100, 1] {
        let search = |q: &'static str| super::history::search_all(&app, &reader, q, count);
        assert_eq!(search("zebraword").await, Vec::<String>::new(), "old words");
        assert_eq!(search("giraffeword").await, vec![once.clone()]);
        assert_eq!(search("quagga second").await, Vec::<String>::new());
        assert_eq!(
            search("okapi").await,
            vec![twice.clone(), once.clone(), plain.clone()],
            "each once, newest version first (count {count})"
        );
    }
    let (status, counts) = app
        .get(
            "/api/v1/history/counts?query=okapi&bucket=day",
            Some(&reader),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{counts}");
    assert_eq!(counts["total"], 3, "{counts}");
}

/// How many events the history holds.
async fn history_events(app: &TestApp, token: &str) -> u64 {
    let (_, h) = app.get("/api/v1/history", Some(token)).await;
    h["events"].as_u64().unwrap_or(0)
}
