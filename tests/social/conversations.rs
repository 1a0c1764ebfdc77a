//! Conversations: direct and group, consent, blocks, unread counts,
//! paging, leaving, limits, idempotent sends, and where messages go (the
//! participants' user streams only) and where they never go.

use crate::assert_error;
use crate::common::{ws_connect, ws_next, ws_send, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

async fn start(app: &TestApp, token: &str, body: Value) -> (StatusCode, Value) {
    app.post("/api/v1/conversations", Some(token), body).await
}

async fn send(app: &TestApp, token: &str, cid: &str, text: &str) -> Value {
    let (status, body) = app
        .post(
            &format!("/api/v1/conversations/{cid}/messages"),
            Some(token),
            json!({ "text": text }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "send: {body}");
    body
}

fn texts(messages: &Value) -> Vec<String> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect()
}

fn participant_ids(c: &Value) -> Vec<String> {
    let mut ids: Vec<String> = c["participants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn a_pair_has_one_direct_conversation_with_unread_counts_and_paging() {
    let app = TestApp::start().await;
    let (a, at) = app.user("dm_alice").await;
    let (b, bt) = app.user("dm_bob").await;
    let (_, et) = app.user("dm_eve").await;

    let (status, c) = start(&app, &at, json!({"participants": [b], "text": "hi bob"})).await;
    assert_eq!(status, StatusCode::CREATED, "{c}");
    let cid = c["id"].as_str().unwrap().to_string();
    assert_eq!(c["kind"], "direct");
    assert!(c["title"].is_null());
    assert_eq!(c["unread"], 0, "sending marks it read for the sender");
    assert_eq!(c["last_message"]["text"], "hi bob");
    assert_eq!(c["last_message"]["uid"], json!(a));
    assert_eq!(c["last_message"]["login"], "dm_alice");
    assert_eq!(c["last_message"]["conversation_id"], json!(cid));
    let mut pair = vec![a.clone(), b.clone()];
    pair.sort();
    assert_eq!(participant_ids(&c), pair);

    // Bob starting one with Alice gets the same conversation: 200.
    let (status, again) = start(
        &app,
        &bt,
        json!({"participants": [a.clone(), a.clone()], "text": "hello alice"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["id"], json!(cid));
    assert_eq!(again["last_message"]["text"], "hello alice");

    for i in 0..5 {
        send(&app, &bt, &cid, &format!("bob {i}")).await;
    }
    let (_, seen) = app
        .get(&format!("/api/v1/conversations/{cid}"), Some(&at))
        .await;
    assert_eq!(seen["unread"], 6, "{seen}");
    assert!(seen["updated"].as_f64().unwrap() >= seen["created"].as_f64().unwrap());
    let (_, list) = app.get("/api/v1/conversations", Some(&at)).await;
    assert_eq!(list["conversations"][0]["id"], json!(cid));
    assert_eq!(list["conversations"][0]["unread"], 6);
    assert!(list["next_cursor"].is_null());

    // Newest first; max_id pages as on timelines.
    let (_, page) = app
        .get(
            &format!("/api/v1/conversations/{cid}/messages?count=3"),
            Some(&at),
        )
        .await;
    assert_eq!(texts(&page), vec!["bob 4", "bob 3", "bob 2"]);
    let last = page[2]["id"].as_str().unwrap();
    let (_, older) = app
        .get(
            &format!("/api/v1/conversations/{cid}/messages?count=10&max_id={last}"),
            Some(&at),
        )
        .await;
    assert_eq!(
        texts(&older),
        vec!["bob 2", "bob 1", "bob 0", "hello alice", "hi bob"]
    );

    let (status, read) = app
        .post(
            &format!("/api/v1/conversations/{cid}/read"),
            Some(&at),
            json!({}),
        )
        .await;
    assert_eq!((status, read["unread"].clone()), (StatusCode::OK, json!(0)));
    let (status, err) = app
        .post(
            &format!("/api/v1/conversations/{cid}/leave"),
            Some(&at),
            json!({}),
        )
        .await;
    assert_error(status, &err, StatusCode::BAD_REQUEST);

    // Not a participant: 404 on every call.
    for (method, path) in [
        (Method::GET, format!("/api/v1/conversations/{cid}")),
        (Method::GET, format!("/api/v1/conversations/{cid}/messages")),
        (
            Method::POST,
            format!("/api/v1/conversations/{cid}/messages"),
        ),
        (Method::POST, format!("/api/v1/conversations/{cid}/read")),
        (Method::POST, format!("/api/v1/conversations/{cid}/leave")),
        (Method::GET, "/api/v1/conversations/999999".to_string()),
        (Method::GET, "/api/v1/conversations/nope".to_string()),
    ] {
        let (status, err) = app
            .call(method, &path, Some(&et), Some(json!({"text": "let me in"})))
            .await;
        assert_error(status, &err, StatusCode::NOT_FOUND);
    }
    let (_, eves) = app.get("/api/v1/conversations", Some(&et)).await;
    assert_eq!(eves["conversations"], json!([]));
}

#[tokio::test]
async fn bad_conversation_input_is_400_and_creates_nothing() {
    let app = TestApp::start().await;
    let (a, at) = app.user("cv_asker").await;
    let (b, _) = app.user("cv_other").await;
    let long = "x".repeat(1001);
    let many: Vec<String> = (0..51).map(|i| (1000 + i).to_string()).collect();
    for body in [
        json!({"participants": [], "text": "hi"}),
        json!({"participants": [a], "text": "hi"}),
        json!({"participants": [b, a], "text": "hi"}),
        json!({"participants": many, "text": "hi"}),
        json!({"participants": ["x1"], "text": "hi"}),
        json!({"participants": [b], "text": ""}),
        json!({"participants": [b], "text": "   \n"}),
        json!({"participants": [b], "text": long}),
        json!({"participants": [b], "text": "hi", "title": "no titles here"}),
        json!({"participants": [b, "1"], "text": "hi", "title": ""}),
        json!({"participants": [b], "text": 5}),
        json!({"text": "hi"}),
    ] {
        let (status, err) = start(&app, &at, body.clone()).await;
        assert_error(status, &err, StatusCode::BAD_REQUEST);
    }
    let (status, err) = start(&app, &at, json!({"participants": ["987654"], "text": "hi"})).await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
    let (_, list) = app.get("/api/v1/conversations", Some(&at)).await;
    assert_eq!(list["conversations"], json!([]));
    // 1000 characters is fine, counted as Unicode scalar values.
    let (status, _) = start(
        &app,
        &at,
        json!({"participants": [b], "text": "é".repeat(1000)}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
}

#[tokio::test]
async fn consent_and_blocks_decide_who_may_message_whom() {
    let app = TestApp::start().await;
    let (a, at) = app.user("consent_a").await;
    let (b, bt) = app.user("consent_b").await;
    let (c, ct) = app.user("consent_c").await;
    // B takes messages only from those B follows.
    let (status, me) = app
        .call(
            Method::PATCH,
            "/api/v1/me",
            Some(&bt),
            Some(json!({"dm_policy": "following"})),
        )
        .await;
    assert_eq!(
        (status, me["dm_policy"].clone()),
        (StatusCode::OK, json!("following"))
    );
    let (status, err) = start(&app, &at, json!({"participants": [b], "text": "hi"})).await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    // A group naming B is refused whole: nothing is created for C either.
    let (status, err) = start(
        &app,
        &at,
        json!({"participants": [b, c], "text": "hi all", "title": "t"}),
    )
    .await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    let (_, list) = app.get("/api/v1/conversations", Some(&ct)).await;
    assert_eq!(list["conversations"], json!([]));
    app.follow(&bt, &a).await;
    let (status, direct) = start(&app, &at, json!({"participants": [b], "text": "hi"})).await;
    assert_eq!(status, StatusCode::CREATED);
    let cid = direct["id"].as_str().unwrap().to_string();

    // A block either way closes the direct conversation both ways.
    let (status, _) = app
        .post(&format!("/api/v1/users/{a}/block"), Some(&bt), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    for token in [&at, &bt] {
        let (status, err) = app
            .post(
                &format!("/api/v1/conversations/{cid}/messages"),
                Some(token),
                json!({"text": "still there?"}),
            )
            .await;
        assert_error(status, &err, StatusCode::FORBIDDEN);
    }
    let (status, err) = start(&app, &at, json!({"participants": [b], "text": "again"})).await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    // ... and starting any with them.
    let (status, err) = start(
        &app,
        &bt,
        json!({"participants": [a, c], "text": "group", "title": "g"}),
    )
    .await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    // The conversation is still readable; lifting the block reopens it.
    let (status, _) = app
        .get(&format!("/api/v1/conversations/{cid}/messages"), Some(&at))
        .await;
    assert_eq!(status, StatusCode::OK);
    app.delete(&format!("/api/v1/users/{a}/block"), Some(&bt))
        .await;
    send(&app, &at, &cid, "back").await;
    // Mutes do not touch conversations.
    app.post(&format!("/api/v1/users/{a}/mute"), Some(&ct), json!({}))
        .await;
    let (status, _) = start(&app, &at, json!({"participants": [c], "text": "muted?"})).await;
    assert_eq!(status, StatusCode::CREATED);
}

#[tokio::test]
async fn group_conversations_have_a_title_and_members_who_leave() {
    let app = TestApp::start_with(|cfg| cfg.max_streams_per_user = 20).await;
    let (a, at) = app.user("grp_a").await;
    let (b, bt) = app.user("grp_b").await;
    let (c, ct) = app.user("grp_c").await;
    let mut c_stream = app.stream("/api/v1/stream/user", Some(&ct), &[]).await;
    let (status, g) = start(
        &app,
        &at,
        json!({"participants": [b, c], "text": "welcome", "title": "The plan"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{g}");
    assert_eq!(
        (g["kind"].clone(), g["title"].clone()),
        (json!("group"), json!("The plan"))
    );
    let gid = g["id"].as_str().unwrap().to_string();
    // Each POST makes a new group conversation.
    let (_, g2) = start(
        &app,
        &at,
        json!({"participants": [b, c], "text": "another", "title": "The plan"}),
    )
    .await;
    assert_ne!(g2["id"], json!(gid));
    let e = c_stream.next_event("the first message").await;
    assert_eq!(e.data["type"], "direct_message");
    assert_eq!(e.data["message"]["text"], "welcome");
    c_stream.next_event("the second conversation's").await;

    let (status, _) = app
        .post(
            &format!("/api/v1/conversations/{gid}/leave"),
            Some(&ct),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    send(&app, &bt, &gid, "after c left").await;
    let (_, now) = app
        .get(&format!("/api/v1/conversations/{gid}"), Some(&at))
        .await;
    let mut left = vec![a.clone(), b.clone()];
    left.sort();
    assert_eq!(participant_ids(&now), left);
    // C gets nothing more, and the conversation is 404 to C.
    c_stream.assert_quiet(Duration::from_millis(500)).await;
    let (status, err) = app
        .get(&format!("/api/v1/conversations/{gid}/messages"), Some(&ct))
        .await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
    let (_, list) = app.get("/api/v1/conversations", Some(&ct)).await;
    assert_eq!(list["conversations"].as_array().unwrap().len(), 1);
    let (status, err) = app
        .post(
            &format!("/api/v1/conversations/{gid}/messages"),
            Some(&ct),
            json!({"text": "let me back"}),
        )
        .await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
    let _ = c;
}

#[tokio::test]
async fn messages_reach_the_participants_user_streams_only_and_enter_no_timeline() {
    let app = TestApp::start_with(|cfg| cfg.max_streams_per_user = 20).await;
    let (a, at) = app.user("msg_sender").await;
    let (b, bt) = app.user("msg_reader").await;
    let (_, xt) = app.user("msg_outsider").await;
    let firehose = app.operator_token(&a, &["read", "firehose"]).await;
    app.follow(&xt, &a).await;
    app.follow(&bt, &a).await;
    let mut b_sse = app.stream("/api/v1/stream/user", Some(&bt), &[]).await;
    let mut b_ndjson = app
        .stream(
            "/api/v1/stream/user",
            Some(&bt),
            &[("accept", "application/x-ndjson")],
        )
        .await;
    let mut a_user = app.stream("/api/v1/stream/user", Some(&at), &[]).await;
    let mut b_ws = ws_connect(&app, "/api/v1/stream", &bt).await;
    ws_send(&mut b_ws, json!({"type": "subscribe", "stream": "user"})).await;
    assert_eq!(ws_next(&mut b_ws).await["type"], "subscribed");
    let mut b_ws_path = ws_connect(&app, "/api/v1/stream/user", &bt).await;
    let mut outsiders = [
        app.stream("/api/v1/stream/firehose", Some(&firehose), &[])
            .await,
        app.stream("/api/v1/stream/sample?rate=1", Some(&xt), &[])
            .await,
        app.stream(
            &format!("/api/v1/stream/filter?follow={a}&track=secretdm"),
            Some(&xt),
            &[],
        )
        .await,
        app.stream("/api/v1/stream/user", Some(&xt), &[]).await,
    ];
    let (status, c) = start(
        &app,
        &at,
        json!({"participants": [b], "text": "secretdm #dmtag @msg_outsider"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let cid = c["id"].as_str().unwrap().to_string();
    for stream in [&mut b_sse, &mut b_ndjson, &mut a_user] {
        let e = stream.next_event("the direct message").await;
        assert_eq!(e.data["type"], "direct_message");
        assert_eq!(e.data["message"]["conversation_id"], json!(cid));
        assert_eq!(e.data["message"]["text"], "secretdm #dmtag @msg_outsider");
    }
    let e = ws_next(&mut b_ws).await;
    assert_eq!(
        (e["type"].clone(), e["stream"].clone()),
        (json!("direct_message"), json!("user"))
    );
    let e = loop {
        let e = ws_next(&mut b_ws_path).await;
        if e.get("id").is_some() {
            break e;
        }
    };
    assert_eq!(e["type"], "direct_message", "{e}");
    // A public status after it is the first thing every outsider's stream
    // gets.
    app.say(&at, "public secretdm marker").await;
    for s in outsiders.iter_mut() {
        loop {
            let e = s.next_event("the marker").await;
            assert_ne!(e.data["type"], "direct_message", "{}", e.data);
            if e.data["type"] == "status" {
                assert_eq!(e.data["status"]["message"], "public secretdm marker");
                break;
            }
        }
    }
    // No timeline, hashtag, mention or trend holds it.
    let (_, tagged) = app.get("/api/v1/timelines/tag/dmtag", None).await;
    assert_eq!(tagged, json!([]));
    let (_, mentions) = app.get("/api/v1/timelines/mentions", Some(&xt)).await;
    assert_eq!(mentions, json!([]));
    let (_, trends) = app.get("/api/v1/trends/tags?window=3600", None).await;
    assert!(!trends.to_string().contains("dmtag"), "{trends}");
    let home = app.timeline_ids("/api/v1/timelines/home", Some(&bt)).await;
    assert_eq!(home.len(), 1, "only the public marker: {home:?}");

    // A participant who resumes gets the messages they missed.
    let last = b_sse.next_event("the marker on B's stream").await.id;
    drop(b_sse);
    send(&app, &at, &cid, "while you were away").await;
    let mut resumed = app
        .stream(
            "/api/v1/stream/user",
            Some(&bt),
            &[("last-event-id", last.as_deref().unwrap())],
        )
        .await;
    let e = resumed.next_event("the missed message").await;
    assert_eq!(e.data["message"]["text"], "while you were away");
}

#[tokio::test]
async fn an_idempotent_send_stores_one_message_and_limits_answer_429() {
    let app = TestApp::start_with(|cfg| {
        cfg.max_conversation_messages = 3;
        cfg.max_conversations_per_user = 2;
    })
    .await;
    let (_, at) = app.user("idem_a").await;
    let (b, _) = app.user("idem_b").await;
    let (c, _) = app.user("idem_c").await;
    let (d, _) = app.user("idem_d").await;
    let (_, c1) = start(&app, &at, json!({"participants": [b], "text": "one"})).await;
    let cid = c1["id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/conversations/{cid}/messages");
    let mut ids = Vec::new();
    for _ in 0..2 {
        let resp = reqwest::Client::new()
            .post(app.url(&path))
            .bearer_auth(&at)
            .header("Idempotency-Key", "msg-key-1")
            .json(&json!({"text": "only once"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::CREATED);
        let m: Value = resp.json().await.unwrap();
        ids.push(m["id"].clone());
    }
    assert_eq!(ids[0], ids[1]);
    let (_, all) = app.get(&path, Some(&at)).await;
    assert_eq!(texts(&all), vec!["only once", "one"]);
    send(&app, &at, &cid, "three").await;
    let (status, err) = app.post(&path, Some(&at), json!({"text": "four"})).await;
    assert_error(status, &err, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(err["error"]["code"], "conversation_full");
    let (_, all) = app.get(&path, Some(&at)).await;
    assert_eq!(all.as_array().unwrap().len(), 3, "nothing dropped");

    start(&app, &at, json!({"participants": [c], "text": "two"})).await;
    let (status, err) = start(&app, &at, json!({"participants": [d], "text": "three"})).await;
    assert_error(status, &err, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(err["error"]["code"], "conversation_limit");
}
