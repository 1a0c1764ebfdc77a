//! The streams over real SSE, NDJSON and WebSocket connections against a
//! real Redis: each stream and filter, resume, slow clients, auth, limits.

#[path = "../common/mod.rs"]
mod common;
mod edits;
mod history;
mod lifecycle;
mod lists;
mod partitions;
mod privacy;
mod refresh;
mod rules;
mod websocket;
mod zstd;

use common::{ws_connect, ws_next, ws_send, Msg, StreamClient, TestApp};
use futures::{SinkExt, StreamExt};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use websocket::read_head;

const SHORT: Duration = Duration::from_millis(400);

/// A user with a firehose token and an ordinary token.
async fn firehose_user(app: &TestApp, login: &str) -> (String, String, String) {
    let (id, token) = app.user(login).await;
    let fh = app
        .operator_token(&id, &["read", "write", "firehose"])
        .await;
    (id, token, fh)
}

fn status_message(m: &Msg) -> &str {
    m.data["status"]["message"].as_str().unwrap_or("")
}

#[tokio::test]
async fn firehose_needs_the_scope_and_carries_every_public_event_as_sse() {
    let app = TestApp::start().await;
    let (ida, token, fh) = firehose_user(&app, "alice").await;
    let mut denied = app
        .stream("/api/v1/stream/firehose", Some(&token), &[])
        .await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);
    assert!(denied.body["error"]["code"].is_string());
    assert!(denied.next_within(SHORT).await.is_none());

    let mut s = app.stream("/api/v1/stream/firehose", Some(&fh), &[]).await;
    assert_eq!(s.status, StatusCode::OK);
    let idb = app.register("bob").await;
    let user = s.next_event("user created").await;
    assert_eq!(user.event, "user");
    assert_eq!(user.data["user"]["id"], idb.as_str());
    assert!(s.retry_seen, "SSE starts with a retry hint");

    let sid = app.say(&token, "hello firehose").await;
    let m = s.next_event("status").await;
    assert_eq!(m.event, "status");
    assert_eq!(
        m.id.as_deref(),
        m.data["id"].as_str(),
        "SSE id equals the event id"
    );
    assert_eq!(m.data["type"], "status");
    assert!(m.data["at"].is_number());
    assert_eq!(m.data["status"]["id"], sid.as_str());
    assert_eq!(m.data["status"]["uid"], ida.as_str());

    app.follow(&token, &idb).await;
    let f = s.next_event("follow").await;
    assert_eq!(
        (
            f.event.as_str(),
            f.data["source"].clone(),
            f.data["target"].clone()
        ),
        ("follow", json!(ida), json!(idb))
    );
    app.delete(&format!("/api/v1/users/{idb}/follow"), Some(&token))
        .await;
    assert_eq!(s.next_event("unfollow").await.event, "unfollow");
    app.delete(&format!("/api/v1/statuses/{sid}"), Some(&token))
        .await;
    let d = s.next_event("delete").await;
    assert_eq!(d.event, "delete");
    assert_eq!(
        (d.data["status_id"].clone(), d.data["uid"].clone()),
        (json!(sid), json!(ida))
    );
    // Event ids grow.
    assert!(
        firehose::stream::EventId::parse(d.id.as_deref().unwrap())
            > firehose::stream::EventId::parse(m.id.as_deref().unwrap())
    );
}

/// Several ops' events emitted in one `emit_once.lua` call (the group
/// commit of `store::emitter`) are published as one message, one JSON a
/// line: every stream gets each event once, in buffer order, and a second
/// call for the same ops emits nothing.
#[tokio::test]
async fn events_published_together_in_one_message_reach_each_stream_once_in_order() {
    let app = TestApp::start().await;
    let (ida, token, fh) = firehose_user(&app, "batcher").await;
    let (idb, _) = app.user("batched").await;
    let one = app.say(&token, "first").await;
    let two = app.say(&token, "second").await;
    let mut fire = app.stream("/api/v1/stream/firehose", Some(&fh), &[]).await;
    let mut own = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
    let (a, b): (u64, u64) = (ida.parse().unwrap(), idb.parse().unwrap());
    let at = firehose::model::now();
    let body = |e: firehose::model::Event| firehose::store::events::body(&e);
    let delete = |sid: &str| {
        body(firehose::model::Event::Delete {
            at,
            status_id: sid.parse().unwrap(),
            uid: a,
            private: false,
            group_id: None,
        })
    };
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix);
    let script = redis::Script::new(include_str!("../../src/store/lua/emit_once.lua"));
    let emit = || {
        let mut call = script.prepare_invoke();
        call.key(keys.emitted())
            .key(keys.events())
            .arg(1000)
            .arg(keys.channel())
            .arg(9_000_001u64)
            .arg(1)
            .arg(delete(&one))
            .arg(9_000_033u64)
            .arg(2)
            .arg(body(firehose::model::Event::Follow {
                at,
                source: a,
                target: b,
            }))
            .arg(delete(&two));
        let firsts: Vec<String> = call.invoke(&mut app.redis.conn()).unwrap();
        firsts
    };
    let firsts = emit();
    assert!(firsts.iter().all(|f| !f.is_empty()), "{firsts:?}");
    for s in [&mut fire, &mut own] {
        let got: Vec<Msg> = vec![
            s.next_event("the first delete").await,
            s.next_event("the follow").await,
            s.next_event("the second delete").await,
        ];
        let kinds: Vec<&str> = got.iter().map(|m| m.event.as_str()).collect();
        assert_eq!(kinds, ["delete", "follow", "delete"]);
        assert_eq!(got[0].data["status_id"], one.as_str());
        assert_eq!(got[2].data["status_id"], two.as_str());
        assert_eq!(got[0].id.as_deref(), Some(firsts[0].as_str()));
        assert_eq!(got[1].id.as_deref(), Some(firsts[1].as_str()));
        let ids: Vec<_> = got
            .iter()
            .map(|m| firehose::stream::EventId::parse(m.id.as_deref().unwrap()))
            .collect();
        assert!(ids[0] < ids[1] && ids[1] < ids[2], "buffer order");
    }
    assert_eq!(emit(), ["", ""], "the marks hold: nothing twice");
    fire.assert_quiet(SHORT).await;
    own.assert_quiet(SHORT).await;

    // The batch is one buffer entry: resuming from inside it replays the
    // rest of it, once, and `count` reaches into it.
    assert_eq!(common::buffered_events(&app, "delete", &[]), 2);
    let follow_id = format!("{}.1", firsts[0]);
    assert_eq!(
        firsts[1], follow_id,
        "the follow is the entry's second event"
    );
    for (resume, want) in [
        (firsts[0].clone(), vec!["follow", "delete"]),
        (follow_id.clone(), vec!["delete"]),
    ] {
        let path = format!("/api/v1/stream/firehose?last_event_id={resume}");
        let mut s = app.stream(&path, Some(&fh), &[]).await;
        let mut kinds = Vec::new();
        for _ in 0..want.len() {
            kinds.push(s.next_event("a replayed event of the batch").await.event);
        }
        assert_eq!(kinds, want, "after {resume}");
        s.assert_quiet(SHORT).await;
    }
    let mut newest = app
        .stream("/api/v1/stream/firehose?count=2", Some(&fh), &[])
        .await;
    let m = newest.next_event("the batch's follow").await;
    assert_eq!(
        (m.event.as_str(), m.id.as_deref()),
        ("follow", Some(follow_id.as_str()))
    );
    let m = newest.next_event("the batch's last event").await;
    assert_eq!(
        (m.event.as_str(), &m.data["status_id"]),
        ("delete", &json!(two))
    );
    assert_eq!(m.id, Some(format!("{}.2", firsts[0])));
    newest.assert_quiet(SHORT).await;

    // A batch mixing a marked op, a new one and the new one named again:
    // only the new one's first mention emits, and it is marked after.
    let mixed = || {
        let mut call = script.prepare_invoke();
        call.key(keys.emitted())
            .key(keys.events())
            .arg(1000)
            .arg(keys.channel());
        for op in [9_000_001u64, 9_000_065, 9_000_065] {
            call.arg(op).arg(1).arg(delete(&one));
        }
        let firsts: Vec<String> = call.invoke(&mut app.redis.conn()).unwrap();
        firsts
    };
    let firsts = mixed();
    assert!(
        firsts[0].is_empty() && !firsts[1].is_empty() && firsts[2].is_empty(),
        "{firsts:?}"
    );
    for s in [&mut fire, &mut own] {
        let m = s.next_event("the new op's delete").await;
        assert_eq!(m.id.as_deref(), Some(firsts[1].as_str()));
        s.assert_quiet(SHORT).await;
    }
    assert_eq!(mixed(), ["", "", ""], "every op of the batch is marked");
    fire.assert_quiet(SHORT).await;

    // A batch of follows (on one Redis one script, its events in one
    // message) and a post with a mention (its status and mention events).
    let (idc, _) = app.user("batched_too").await;
    assert_eq!(fire.next_event("the sign-up").await.event, "user");
    let (status, body) = app
        .post("/api/v1/follows", Some(&token), json!({"ids": [idb, idc]}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut targets = BTreeSet::new();
    for _ in 0..2 {
        let m = fire.next_event("a follow of the batch").await;
        assert_eq!(m.event, "follow", "{:?}", m.data);
        targets.insert(m.data["target"].as_str().unwrap().to_string());
    }
    assert_eq!(targets, BTreeSet::from([idb.clone(), idc.clone()]));
    let said = app.say(&token, "hello @batched_too").await;
    let m = fire.next_event("the status").await;
    assert_eq!(
        (m.event.as_str(), &m.data["status"]["id"]),
        ("status", &json!(said))
    );
    let m = fire.next_event("its mention").await;
    assert_eq!(m.event, "mention", "{:?}", m.data);
    fire.assert_quiet(SHORT).await;
}

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
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix);
    let mut pipe = redis::pipe();
    for _ in 0..300 {
        pipe.cmd("XADD")
            .arg(keys.events())
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

/// Deletes made at once go through the group commit together: each
/// stream gets every delete once, in buffer order, and the buffer holds
/// each once.
#[tokio::test]
async fn concurrent_deletes_are_announced_once_each_in_order() {
    let app = TestApp::start().await;
    let (_, token, fh) = firehose_user(&app, "deleter").await;
    let mut sids = Vec::new();
    for i in 0..40 {
        sids.push(app.say(&token, &format!("to delete {i}")).await);
    }
    let mut fire = app.stream("/api/v1/stream/firehose", Some(&fh), &[]).await;
    let deletes = futures::future::join_all(sids.iter().map(|sid| {
        let app = &app;
        let token = token.clone();
        async move {
            app.delete(&format!("/api/v1/statuses/{sid}"), Some(&token))
                .await
                .0
        }
    }))
    .await;
    assert!(
        deletes.iter().all(|s| *s == StatusCode::NO_CONTENT),
        "{deletes:?}"
    );
    let mut seen = BTreeSet::new();
    let mut last = None;
    for _ in 0..sids.len() {
        let m = fire.next_event("a delete").await;
        assert_eq!(m.event, "delete", "{:?}", m.data);
        assert!(seen.insert(m.data["status_id"].as_str().unwrap().to_string()));
        let id = firehose::stream::EventId::parse(m.id.as_deref().unwrap());
        assert!(last < Some(id), "buffer order");
        last = Some(id);
    }
    assert_eq!(seen, sids.iter().cloned().collect::<BTreeSet<_>>());
    fire.assert_quiet(SHORT).await;
    let in_buffer = common::buffered_events(&app, "delete", &[]);
    assert_eq!(in_buffer, sids.len());
}

#[tokio::test]
async fn ndjson_is_served_on_accept_and_access_token_works_in_the_query() {
    let app = TestApp::start().await;
    let (_, token, fh) = firehose_user(&app, "carol").await;
    let mut s = app
        .stream(
            &format!("/api/v1/stream/firehose?access_token={fh}"),
            None,
            &[("accept", "application/x-ndjson")],
        )
        .await;
    assert_eq!(s.status, StatusCode::OK);
    app.say(&token, "as ndjson").await;
    let m = s.next_event("ndjson status").await;
    assert_eq!(m.data["type"], "status");
    assert_eq!(status_message(&m), "as ndjson");
}

#[tokio::test]
async fn filter_follow_track_and_locations_deliver_only_matching_statuses() {
    let app = TestApp::start().await;
    let (ida, a) = app.user("dana").await;
    let (idb, b) = app.user("eli").await;
    let (_, c) = app.user("fay").await;
    let mut by_follow = app
        .stream(
            &format!("/api/v1/stream/filter?follow={ida}"),
            Some(&c),
            &[],
        )
        .await;
    let mut by_track = app
        .stream(
            "/api/v1/stream/filter?track=rust%20lang,redis",
            Some(&c),
            &[],
        )
        .await;
    let mut by_box = app
        .stream(
            "/api/v1/stream/filter?locations=-122.75,36.8,-121.75,37.8",
            Some(&c),
            &[],
        )
        .await;
    for s in [&by_follow, &by_track, &by_box] {
        assert_eq!(s.status, StatusCode::OK);
    }
    let a1 = app.say(&a, "from dana").await;
    let b_reply = app
        .post_status(&b, json!({"message": "reply to dana", "reply_to": a1}))
        .await;
    app.say(&b, "Lang of choice: RUST!").await;
    app.say(&b, "rust only").await;
    app.say(&b, "#Redis rocks").await;
    app.post_status(&b, json!({"message": "in sf", "lat": 37.0, "lon": -122.0}))
        .await;
    app.post_status(&b, json!({"message": "in la", "lat": 34.0, "lon": -118.0}))
        .await;

    assert_eq!(
        status_message(&by_follow.next_event("dana's status").await),
        "from dana"
    );
    let reply = by_follow.next_event("reply to dana").await;
    assert_eq!(reply.data["status"]["id"], b_reply["id"]);
    assert_eq!(reply.data["status"]["uid"], idb.as_str());
    by_follow.assert_quiet(SHORT).await;

    assert_eq!(
        status_message(&by_track.next_event("rust lang").await),
        "Lang of choice: RUST!"
    );
    assert_eq!(
        status_message(&by_track.next_event("#redis").await),
        "#Redis rocks"
    );
    by_track.assert_quiet(SHORT).await;

    assert_eq!(status_message(&by_box.next_event("in sf").await), "in sf");
    by_box.assert_quiet(SHORT).await;
}

#[tokio::test]
async fn filter_parameters_out_of_bounds_get_400_naming_the_parameter() {
    let app = TestApp::start().await;
    let (_, token) = app.user("gus").await;
    let ids = (1..=5001)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let long = "x".repeat(61);
    let boxes = vec!["0,0,1,1"; 26].join(",");
    let cases = [
        ("", "follow"),
        ("follow=abc", "follow"),
        (&*format!("follow={ids}"), "follow"),
        (&*format!("track={long}"), "track"),
        ("locations=1,2,3", "locations"),
        ("locations=0,95,1,96", "locations"),
        (&*format!("locations={boxes}"), "locations"),
    ];
    for (query, param) in cases {
        let s = app
            .stream(&format!("/api/v1/stream/filter?{query}"), Some(&token), &[])
            .await;
        assert_eq!(s.status, StatusCode::BAD_REQUEST, "{query}");
        let message = s.body["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(param), "{query}: {message}");
    }
    for query in ["rate=0", "rate=2", "rate=x"] {
        let s = app
            .stream(&format!("/api/v1/stream/sample?{query}"), Some(&token), &[])
            .await;
        assert_eq!(s.status, StatusCode::BAD_REQUEST, "{query}");
        assert!(s.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("rate"));
    }
    let s = app
        .stream("/api/v1/stream/sample?count=1001", Some(&token), &[])
        .await;
    assert_eq!(s.status, StatusCode::BAD_REQUEST);
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
async fn sample_gives_every_client_at_one_rate_the_same_statuses() {
    let app = TestApp::start().await;
    let (_, token) = app.user("hal").await;
    let mut one = app
        .stream("/api/v1/stream/sample?rate=0.5", Some(&token), &[])
        .await;
    let mut two = app
        .stream("/api/v1/stream/sample?rate=0.5", Some(&token), &[])
        .await;
    let mut all = app
        .stream("/api/v1/stream/sample?rate=1", Some(&token), &[])
        .await;
    let mut expected = BTreeSet::new();
    for i in 0..40 {
        let sid = app.say(&token, &format!("sample {i}")).await;
        let id: u64 = sid.parse().unwrap();
        if firehose_filters::sample::hit(id, firehose_filters::sample::threshold(0.5)) {
            expected.insert(sid);
        }
    }
    assert!(!expected.is_empty() && expected.len() < 40);
    for s in [&mut one, &mut two] {
        let mut got = BTreeSet::new();
        while got.len() < expected.len() {
            got.insert(
                s.next_event("sampled").await.data["status"]["id"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
        }
        assert_eq!(got, expected);
        s.assert_quiet(SHORT).await;
    }
    let mut n = 0;
    while n < 40 {
        all.next_event("rate 1 gets everything").await;
        n += 1;
    }
}

#[tokio::test]
async fn user_stream_gets_the_home_timeline_follows_and_deletes_it_could_see() {
    let app = TestApp::start().await;
    let (ida, a) = app.user("ida").await;
    let (idb, b) = app.user("jon").await;
    let (idc, c) = app.user("kai").await;
    app.follow(&a, &idb).await;
    let mut s = app.stream("/api/v1/stream/user", Some(&a), &[]).await;
    assert_eq!(s.status, StatusCode::OK);
    app.say(&c, "stranger").await;
    let own = app.say(&a, "mine").await;
    assert_eq!(
        s.next_event("own status").await.data["status"]["id"],
        own.as_str()
    );
    let b1 = app.say(&b, "followee").await;
    assert_eq!(
        s.next_event("followee status").await.data["status"]["id"],
        b1.as_str()
    );
    app.follow(&c, &ida).await;
    let f = s.next_event("followed by kai").await;
    assert_eq!(
        (f.data["type"].clone(), f.data["source"].clone()),
        (json!("follow"), json!(idc))
    );
    app.follow(&a, &idc).await;
    assert_eq!(
        s.next_event("follows kai").await.data["target"],
        idc.as_str()
    );
    let c2 = app.say(&c, "now followed").await;
    assert_eq!(
        s.next_event("new followee").await.data["status"]["id"],
        c2.as_str()
    );
    app.delete(&format!("/api/v1/statuses/{b1}"), Some(&b))
        .await;
    let d = s.next_event("delete").await;
    assert_eq!(
        (d.data["type"].clone(), d.data["status_id"].clone()),
        (json!("delete"), json!(b1))
    );
    app.delete(&format!("/api/v1/users/{idb}/follow"), Some(&a))
        .await;
    assert_eq!(s.next_event("unfollow").await.data["type"], "unfollow");
    app.say(&b, "after unfollow").await;
    s.assert_quiet(SHORT).await;
}

/// Events published back to back reach the hub together and are routed as a
/// batch: each stream still gets exactly its events, in order, and a follow in
/// the middle of the burst takes effect for the events after it only.
#[tokio::test]
async fn a_burst_is_routed_in_order_with_follows_taking_effect_mid_burst() {
    let app = TestApp::start().await;
    let (idu, u) = app.user("una").await;
    let (ida, _) = app.user("abe").await;
    let (idb, _) = app.user("bea").await;
    let (_, _, fh) = firehose_user(&app, "fay").await;
    let mut home = app.stream("/api/v1/stream/user", Some(&u), &[]).await;
    let mut hot = app
        .stream("/api/v1/stream/filter?track=hot", Some(&fh), &[])
        .await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let bodies: Vec<String> = (0..120)
        .map(|i| {
            if i == 60 {
                json!({"type": "follow", "at": i, "source": idu, "target": idb})
            } else {
                let (author, word) = (if i % 2 == 0 { &idb } else { &ida }, if i % 3 == 0 { "hot" } else { "cold" });
                json!({"type": "status", "at": i, "status": {"id": (5000 + i).to_string(), "uid": author, "login": "x", "message": format!("{word} {i}"), "posted": 1.0, "hashtags": [], "mentions": []}})
            }
            .to_string()
        })
        .collect();
    // One event first loads the script, so that none of the burst is
    // retried out of order after a NOSCRIPT reply.
    store
        .emit(&json!({"type": "ping", "at": -1}).to_string())
        .await
        .unwrap();
    // Sent together in one pipeline (one slot, so one node, on a cluster
    // too): Redis publishes them in this order.
    let emit = redis::Script::new(include_str!("../../src/store/lua/emit.lua"));
    let mut pipe = redis::pipe();
    for b in &bodies {
        pipe.cmd("EVALSHA")
            .arg(emit.get_hash())
            .arg(1)
            .arg(format!("{}:{{g}}:events", app.cfg.key_prefix))
            .arg(app.cfg.replay_maxlen)
            .arg(format!("{}:events", app.cfg.key_prefix))
            .arg(b)
            .ignore();
    }
    let _: () = pipe.query(&mut app.redis.conn()).unwrap();
    for i in (0..120).filter(|i| i % 3 == 0 && *i != 60) {
        let m = hot.next_event("hot status").await;
        assert_eq!(status_message(&m), format!("hot {i}"));
    }
    hot.assert_quiet(SHORT).await;
    let f = home.next_event("the follow").await;
    assert_eq!(
        (f.data["type"].clone(), f.data["at"].clone()),
        (json!("follow"), json!(60))
    );
    for i in (61..120).filter(|i| i % 2 == 0) {
        let m = home.next_event("followee's status after the follow").await;
        assert_eq!(m.data["at"], i);
    }
    home.assert_quiet(SHORT).await;
}

#[tokio::test]
async fn private_statuses_reach_only_user_streams_of_followers() {
    let app = TestApp::start().await;
    let (idp, p) = app.user("priv").await;
    let (_, fan, fh) = firehose_user(&app, "fan").await;
    app.follow(&fan, &idp).await;
    app.call(
        reqwest::Method::PATCH,
        "/api/v1/me",
        Some(&p),
        Some(json!({"private": true})),
    )
    .await;
    let mut hose = app.stream("/api/v1/stream/firehose", Some(&fh), &[]).await;
    let mut sample = app
        .stream("/api/v1/stream/sample?rate=1", Some(&fan), &[])
        .await;
    let mut filter = app
        .stream(
            &format!("/api/v1/stream/filter?follow={idp}&track=secret"),
            Some(&fan),
            &[],
        )
        .await;
    let mut user = app.stream("/api/v1/stream/user", Some(&fan), &[]).await;
    let sid = app
        .post_status(&p, json!({"message": "a secret", "lat": 1.0, "lon": 1.0}))
        .await["id"]
        .clone();
    assert_eq!(
        user.next_event("private status to a follower").await.data["status"]["id"],
        sid
    );
    app.delete(
        &format!("/api/v1/statuses/{}", sid.as_str().unwrap()),
        Some(&p),
    )
    .await;
    assert_eq!(
        user.next_event("private delete").await.data["type"],
        "delete"
    );
    for s in [&mut hose, &mut sample, &mut filter] {
        s.assert_quiet(SHORT).await;
    }
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
        c.history_secs = 0;
    })
    .await;
    let (_, a, fh) = firehose_user(&app, "ned").await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    // Enough events for the approximate trim to drop whole stream nodes.
    for i in 0..300 {
        store
            .emit(&json!({"type": "ping", "at": i}).to_string())
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
async fn the_hub_warns_at_80_percent_and_refuses_at_the_bound() {
    use firehose::stream::hub::ClientConn as Conn;
    use firehose::stream::queue::Delivery;
    let far = tokio::time::Instant::now() + Duration::from_secs(3600);
    let conn = Conn::new(1, 1, "s".into(), 10, far);
    let Some(firehose::stream::frame::Incoming::Event(frame)) =
        firehose::stream::frame::parse(r#"{"id":"1-0","type":"ping","at":1}"#)
    else {
        panic!("parse")
    };
    let mut accepted = 0;
    while conn.offer(Delivery::Event(frame.clone(), "firehose"), true) {
        accepted += 1;
        assert!(accepted <= 10);
    }
    let mut warnings = 0;
    let mut events = 0;
    while let Some((d, _)) = conn.try_take() {
        match d {
            Delivery::Event(..) => events += 1,
            Delivery::Control(control) => {
                let v: Value = serde_json::from_slice(&control.json).unwrap();
                assert_eq!(
                    (v["type"].clone(), v["code"].clone()),
                    (json!("warning"), json!("falling_behind"))
                );
                assert!(v["percent_full"].as_u64().unwrap() >= 80);
                warnings += 1;
            }
            Delivery::Wake | Delivery::Keepalive(_) | Delivery::Rest(_) => {
                panic!("only events and a warning were queued")
            }
        }
    }
    assert_eq!(warnings, 1, "one warning per crossing");
    assert_eq!(events + warnings, 10);
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
        store.emit(&body.to_string()).await.unwrap();
        // The reading client keeps up the whole time.
        let m = reader.next_event("reader keeps up").await;
        assert_eq!(m.data["at"], i);
    }
    app.say(&a, "still flowing").await;
    assert_eq!(
        status_message(&reader.next_event("after the flood").await),
        "still flowing"
    );
    let stalls = app.metric("firehose_stall_disconnects_total").await;
    assert!(
        stalls >= 1.0,
        "the stalled client was disconnected: {stalls}"
    );
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
        store.emit(&body.to_string()).await.unwrap();
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
