//! List streams: a list's members' statuses and deletes on every
//! transport, with the privacy and blocks of the home; following the
//! list's members as they change; ended with the list.

use super::privacy::patch;
use super::*;
use reqwest::Method;

async fn new_list(app: &TestApp, token: &str, members: &[&str]) -> String {
    let (status, body) = app
        .post("/api/v1/lists", Some(token), json!({"title": "watched"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let lid = body["id"].as_str().unwrap().to_string();
    if !members.is_empty() {
        set_members(app, token, &lid, members, true).await;
    }
    lid
}

async fn set_members(app: &TestApp, token: &str, lid: &str, ids: &[&str], add: bool) {
    let method = if add { Method::POST } else { Method::DELETE };
    let (status, body) = app
        .call(
            method,
            &format!("/api/v1/lists/{lid}/members"),
            Some(token),
            Some(json!({ "ids": ids })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for id in ids {
        assert_eq!(body["results"][id], add, "{body}");
    }
}

/// The status id or deleted status id an event names.
fn named(v: &Value) -> (String, String) {
    let id = v["status"]["id"]
        .as_str()
        .or(v["status_id"].as_str())
        .unwrap_or("")
        .to_string();
    (v["type"].as_str().unwrap_or("").to_string(), id)
}

#[tokio::test]
async fn a_list_stream_gets_its_members_statuses_and_deletes_on_every_transport() {
    let app = TestApp::start().await;
    let (owner_id, owner) = app.user("owner").await;
    let (open_id, open) = app.user("open").await;
    let (friend_id, friend) = app.user("friend").await;
    let (hidden_id, hidden) = app.user("hidden").await;
    let (grudge_id, grudge) = app.user("grudge").await;
    let (_, outsider) = app.user("outsider").await;
    app.follow(&owner, &friend_id).await;
    patch(&app, &friend, json!({"private": true})).await;
    patch(&app, &hidden, json!({"private": true})).await;
    let lid = new_list(
        &app,
        &owner,
        &[&open_id, &friend_id, &hidden_id, &grudge_id],
    )
    .await;
    app.post(
        &format!("/api/v1/users/{owner_id}/block"),
        Some(&grudge),
        json!({}),
    )
    .await;
    let path = format!("/api/v1/stream/list?id={lid}");
    let mut sse = app.stream(&path, Some(&owner), &[]).await;
    assert_eq!(sse.status, StatusCode::OK, "{}", sse.body);
    let mut ndjson = app
        .stream(&path, Some(&owner), &[("accept", "application/x-ndjson")])
        .await;
    let mut ws = ws_connect(&app, &path, &owner).await;
    let mut mux = ws_connect(&app, "/api/v1/stream", &owner).await;
    ws_send(
        &mut mux,
        json!({"type": "subscribe", "stream": "list", "list": lid}),
    )
    .await;
    let ok = ws_next(&mut mux).await;
    assert_eq!(
        (ok["type"].as_str(), ok["list"].as_str()),
        (Some("subscribed"), Some(lid.as_str())),
        "{ok}"
    );
    // Another user's list and no list are refused, on a socket too.
    let (other_id, other) = app.user("other").await;
    let s = app.stream(&path, Some(&other), &[]).await;
    assert_eq!(s.status, StatusCode::NOT_FOUND);
    let s = app.stream("/api/v1/stream/list", Some(&owner), &[]).await;
    assert_eq!(s.status, StatusCode::BAD_REQUEST);
    ws_send(
        &mut mux,
        json!({"type": "subscribe", "stream": "list", "list": "424242"}),
    )
    .await;
    let e = ws_next(&mut mux).await;
    assert_eq!(
        (e["type"].as_str(), e["list"].as_str()),
        (Some("error"), Some("424242")),
        "{e}"
    );
    let _ = other_id;

    // Only the public member's and the followed private member's statuses.
    app.say(&outsider, "not a member").await;
    app.say(&hidden, "private, not followed").await;
    app.say(&grudge, "blocks the owner").await;
    let first = app.say(&open, "public member").await;
    let second = app.say(&friend, "followed private member").await;
    app.delete(&format!("/api/v1/statuses/{first}"), Some(&open))
        .await;
    let want = vec![
        ("status".to_string(), first.clone()),
        ("status".to_string(), second.clone()),
        ("delete".to_string(), first.clone()),
    ];
    for s in [&mut sse, &mut ndjson] {
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(named(&s.next_event("a list event").await.data));
        }
        assert_eq!(got, want);
        s.assert_quiet(SHORT).await;
    }
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(named(&ws_next(&mut ws).await));
    }
    assert_eq!(got, want);
    let mut got = Vec::new();
    for _ in 0..3 {
        let v = ws_next(&mut mux).await;
        assert_eq!(
            (v["stream"].as_str(), v["list"].as_str()),
            (Some("list"), Some(lid.as_str())),
            "{v}"
        );
        got.push(named(&v));
    }
    assert_eq!(got, want);
    // Unsubscribed, the socket gets no more of the list.
    ws_send(
        &mut mux,
        json!({"type": "unsubscribe", "stream": "list", "list": lid}),
    )
    .await;
    let done = ws_next(&mut mux).await;
    assert_eq!(
        (done["type"].as_str(), done["list"].as_str()),
        (Some("unsubscribed"), Some(lid.as_str()))
    );
    app.say(&open, "after the unsubscribe").await;
    let quiet = tokio::time::timeout(SHORT, ws_next(&mut mux)).await;
    assert!(quiet.is_err(), "the socket got {quiet:?}");
}

#[tokio::test]
async fn a_list_stream_follows_its_members_replays_and_ends_with_its_list() {
    let app = TestApp::start().await;
    let (_, owner) = app.user("keeper").await;
    let (a_id, a) = app.user("anna").await;
    let (b_id, b) = app.user("bert").await;
    let lid = new_list(&app, &owner, &[]).await;
    let path = format!("/api/v1/stream/list?id={lid}");
    let mut s = app.stream(&path, Some(&owner), &[]).await;
    assert_eq!(s.status, StatusCode::OK, "{}", s.body);
    app.say(&a, "before joining").await;
    set_members(&app, &owner, &lid, &[&a_id], true).await;
    let joined = app.say(&a, "after joining").await;
    let m = s.next_event("a member's status").await;
    assert_eq!(m.data["status"]["id"], joined.as_str());
    let resume_at = m.id.clone().unwrap();
    // B joins, A leaves: A's statuses stop, B's come.
    set_members(&app, &owner, &lid, &[&b_id], true).await;
    set_members(&app, &owner, &lid, &[&a_id], false).await;
    app.say(&a, "after leaving").await;
    let from_b = app.say(&b, "b speaks").await;
    let m = s.next_event("the new member's status").await;
    assert_eq!(m.data["status"]["id"], from_b.as_str());
    s.assert_quiet(SHORT).await;
    // A resume replays what the list holds now, from the buffer.
    let mut again = app
        .stream(&path, Some(&owner), &[("last-event-id", &resume_at)])
        .await;
    let m = again.next_event("the replayed status").await;
    assert_eq!(m.data["status"]["id"], from_b.as_str());
    again.assert_quiet(SHORT).await;
    // The list deleted: its streams end with list_deleted.
    let (status, _) = app
        .delete(&format!("/api/v1/lists/{lid}"), Some(&owner))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    for s in [&mut s, &mut again] {
        let m = s.next("the end").await;
        assert_eq!(
            (m.data["type"].as_str(), m.data["code"].as_str()),
            (Some("disconnect"), Some("list_deleted")),
            "{:?}",
            m.data
        );
        assert!(s.ended_within(Duration::from_secs(5)).await);
    }
    let s = app.stream(&path, Some(&owner), &[]).await;
    assert_eq!(s.status, StatusCode::NOT_FOUND);
}
