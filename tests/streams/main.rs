//! The streams over real SSE, NDJSON and WebSocket connections against a
//! real Redis: each stream and filter, resume, slow clients, auth, limits.

#[path = "../common/mod.rs"]
mod common;
mod edits;
mod history;
mod lists;
mod privacy;
mod refresh;
mod rules;
mod zstd;

use common::{ws_connect, ws_next, ws_send, Msg, StreamClient, TestApp};
use futures::{SinkExt, StreamExt};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message as WsMessage;

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

#[tokio::test]
async fn every_auth_failure_is_refused_at_connect() {
    let app = TestApp::start().await;
    let (_, token) = app.user("rae").await;
    let secret = app.cfg.jwt_secret().unwrap().to_string();
    let claims = json!({"sub": "1", "sid": "nope", "scopes": ["read"], "exp": 4_000_000_000u64});
    let sign = |secret: &str, alg, claims: &Value| {
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(alg),
            claims,
            &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap()
    };
    let mut expired_claims = claims.clone();
    expired_claims["exp"] = json!(1000);
    let revoked = app.login("rae").await;
    app.delete("/api/v1/sessions/current", Some(&revoked)).await;
    let cases: Vec<(&str, Option<String>)> = vec![
        ("none", None),
        (
            "bad signature",
            Some(sign("wrong", jsonwebtoken::Algorithm::HS256, &claims)),
        ),
        (
            "expired",
            Some(sign(
                &secret,
                jsonwebtoken::Algorithm::HS256,
                &expired_claims,
            )),
        ),
        (
            "alg none",
            Some(format!(
                "{}.{}.",
                "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0",
                "eyJzdWIiOiIxIiwic2lkIjoibm9wZSIsImV4cCI6NDAwMDAwMDAwMH0"
            )),
        ),
        (
            "unknown session",
            Some(sign(&secret, jsonwebtoken::Algorithm::HS256, &claims)),
        ),
        ("revoked", Some(revoked)),
    ];
    for (what, t) in cases {
        let s = app.stream("/api/v1/stream/user", t.as_deref(), &[]).await;
        assert_eq!(s.status, StatusCode::UNAUTHORIZED, "{what}");
        assert!(s.body["error"]["code"].is_string(), "{what}");
        let s = app
            .stream(
                &format!(
                    "/api/v1/stream/user?access_token={}",
                    t.as_deref().unwrap_or("")
                ),
                None,
                &[],
            )
            .await;
        assert_eq!(s.status, StatusCode::UNAUTHORIZED, "{what} in query");
    }
    let s = app
        .stream("/api/v1/stream/firehose", Some(&token), &[])
        .await;
    assert_eq!(s.status, StatusCode::FORBIDDEN, "missing scope");
}

#[tokio::test]
async fn logout_closes_that_sessions_streams_with_a_disconnect() {
    let app = TestApp::start().await;
    let (_, token) = app.user("sol").await;
    let other = app.login("sol").await;
    let mut s = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
    let mut kept = app.stream("/api/v1/stream/user", Some(&other), &[]).await;
    app.delete("/api/v1/sessions/current", Some(&token)).await;
    let bye = s.next("disconnect").await;
    assert_eq!(
        (bye.event.as_str(), bye.data["code"].clone()),
        ("disconnect", json!("revoked"))
    );
    assert!(bye.data["reason"].is_string());
    assert!(s.ended_within(Duration::from_secs(5)).await);
    app.say(&other, "kept").await;
    assert_eq!(
        status_message(&kept.next_event("other session still streams").await),
        "kept"
    );
}

#[tokio::test]
async fn logout_closes_every_kind_of_stream_even_a_websocket_with_no_subscription() {
    let app = TestApp::start().await;
    let (_, token) = app.user("leaver").await;
    let mut idle_ws = ws_connect(&app, "/api/v1/stream", &token).await;
    let mut ndjson = app
        .stream(
            "/api/v1/stream/sample?rate=1",
            Some(&token),
            &[("accept", "application/x-ndjson")],
        )
        .await;
    // The socket has been accepted; make sure the server has registered it
    // by a round trip on it before the logout.
    ws_send(
        &mut idle_ws,
        json!({"type": "unsubscribe", "stream": "user"}),
    )
    .await;
    assert_eq!(ws_next(&mut idle_ws).await["type"], "error");
    let mut path_ws = ws_connect(&app, "/api/v1/stream/sample?rate=1", &token).await;
    let mut filter_sse = app
        .stream("/api/v1/stream/filter?track=never", Some(&token), &[])
        .await;
    // A fresh client: its stream cannot ride a kept-alive connection, so it
    // is served on the raw socket.
    let raw_user = reqwest::Client::new()
        .get(app.url("/api/v1/stream/user"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(raw_user.status(), StatusCode::OK);
    let (status, _) = app.delete("/api/v1/sessions/current", Some(&token)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let bye = ws_next(&mut path_ws).await;
    assert_eq!(bye["code"], "revoked", "WebSocket on a stream path");
    assert_eq!(filter_sse.next("disconnect").await.data["code"], "revoked");
    let raw_body = tokio::time::timeout(Duration::from_secs(10), raw_user.text())
        .await
        .expect("the raw stream ends")
        .unwrap_or_default();
    assert!(raw_body.contains("\"revoked\""), "{raw_body}");
    let bye = ws_next(&mut idle_ws).await;
    assert_eq!(
        (bye["type"].clone(), bye["code"].clone()),
        (json!("disconnect"), json!("revoked"))
    );
    let bye = ndjson.next("disconnect").await;
    assert_eq!(bye.data["code"], "revoked");
    // Whatever it tries next, the socket gets nothing more of the user's.
    let _ = idle_ws
        .send(WsMessage::Text(
            json!({"type": "subscribe", "stream": "user"})
                .to_string()
                .into(),
        ))
        .await;
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(m)) = idle_ws.next().await {
            if let WsMessage::Text(t) = m {
                let v: Value = serde_json::from_str(t.as_str()).unwrap();
                assert_ne!(v["type"], "subscribed", "a revoked socket subscribed");
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the revoked socket was not closed");
}

#[tokio::test]
async fn a_logout_while_the_hubs_subscription_is_down_still_closes_the_stream() {
    let app = TestApp::start().await;
    let (_, token) = app.user("missed").await;
    let mut s = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
    // Drop the hub's pub/sub connection and log out at once: the revocation
    // is published while nobody listens, and must come from the buffer.
    app.redis.kill_pubsub();
    app.delete("/api/v1/sessions/current", Some(&token)).await;
    let bye = s.next("disconnect").await;
    assert_eq!(bye.data["code"], "revoked");
}

#[tokio::test]
async fn a_stream_whose_token_expires_is_closed_with_expired() {
    let app = TestApp::start_with(|c| c.token_ttl = 2).await;
    let (_, token) = app.user("shortlived").await;
    let mut s = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
    assert_eq!(s.status, StatusCode::OK);
    // Warned first (the token has less than a minute), then ended.
    let warned = s.next("warning").await;
    assert_eq!(warned.data["code"], "token_expiring");
    let bye = s.next("disconnect").await;
    assert_eq!(
        (bye.event.as_str(), bye.data["code"].clone()),
        ("disconnect", json!("expired"))
    );
    assert!(s.ended_within(Duration::from_secs(5)).await);
}

#[tokio::test]
async fn a_stream_is_warned_before_its_token_expires_on_every_transport() {
    // A token of 30 s: less than the warning's minute, so it comes at once.
    let app = TestApp::start_with(|c| c.token_ttl = 30).await;
    let (_, token) = app.user("expiring").await;
    let (_, body) = app.get("/api/v1/me", Some(&token)).await;
    assert!(body["id"].is_string());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let check = |data: &Value| {
        assert_eq!(data["code"], "token_expiring", "{data}");
        let at = data["expires_at"].as_u64().expect("expires_at");
        assert!(at > now && at <= now + 32, "{at} vs {now}");
    };
    for headers in [vec![], vec![("accept", "application/x-ndjson")]] {
        let mut s = app
            .stream("/api/v1/stream/user", Some(&token), &headers)
            .await;
        assert_eq!(s.status, StatusCode::OK);
        let m = s.next("warning").await;
        check(&m.data);
    }
    let mut ws = ws_connect(&app, "/api/v1/stream/user", &token).await;
    let m = ws_next(&mut ws).await;
    assert_eq!(m["type"], "warning", "{m}");
    check(&m);
    // A token far from its end gets no warning.
    let app = TestApp::start().await;
    let (_, token) = app.user("lasting").await;
    let mut s = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
    assert!(s.next_within(Duration::from_secs(2)).await.is_none());
}

#[tokio::test]
async fn at_most_five_streams_per_user_then_429() {
    let app = TestApp::start().await;
    let (_, token) = app.user("tao").await;
    let mut open: Vec<StreamClient> = Vec::new();
    for _ in 0..5 {
        let s = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
        assert_eq!(s.status, StatusCode::OK);
        open.push(s);
    }
    let s = app.stream("/api/v1/stream/sample", Some(&token), &[]).await;
    assert_eq!(s.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(s.body["error"]["code"].is_string());
    // The raw stream path answers the refusal with its Retry-After too.
    let refused = app
        .http
        .get(app.url("/api/v1/stream/sample"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(
        refused.headers().contains_key("retry-after"),
        "{:?}",
        refused.headers()
    );
    open.pop();
    app.eventually("a slot frees up", || async {
        app.stream("/api/v1/stream/sample", Some(&token), &[])
            .await
            .status
            == StatusCode::OK
    })
    .await;
}

#[tokio::test]
async fn sse_sends_keepalive_comments() {
    let app = TestApp::start_with(|c| c.keepalive_secs = 1).await;
    let (_, token) = app.user("uli").await;
    let mut s = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
    assert!(s.next_within(Duration::from_millis(2500)).await.is_none());
    assert!(s.comments >= 1, "a comment line arrived");
}

/// A feed on tokio's paused clock: nothing real to wait for (its hub's
/// Redis is never reached), so the clock jumps from timer to timer and the
/// timing is exact. Shutdown fires when the returned trigger is dropped.
fn paused_feed(
    keepalive: Duration,
    expires_in: u64,
) -> (firehose::stream::Feed, firehose::shutdown::Trigger) {
    let mut cfg = firehose::config::Config::defaults();
    cfg.redis_url = Some("redis://127.0.0.1:1".into());
    let store = firehose::store::Store::open("redis://127.0.0.1:1", &cfg).unwrap();
    let (trigger, shutdown) = firehose::shutdown::channel();
    let (hub, _tasks) = firehose::stream::Hub::start(store, shutdown.clone(), keepalive);
    let expires = firehose::model::now() as u64 + expires_in;
    let feed = firehose::stream::Feed::new(hub, None, 1, "s".into(), expires, 16, shutdown);
    (feed, trigger)
}

#[tokio::test(start_paused = true)]
async fn an_idle_feed_hands_out_a_keepalive_every_period() {
    let period = Duration::from_secs(15);
    let (mut feed, _trigger) = paused_feed(period, 3600);
    let start = tokio::time::Instant::now();
    for n in 1..=4u32 {
        let out = feed.next().await.expect("the feed goes on");
        assert!(
            matches!(out, firehose::stream::Out::Keepalive(_)),
            "{out:?}"
        );
        assert_eq!(start.elapsed(), period * n, "keep-alive {n}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_feed_ends_with_disconnect_expired_when_its_token_expires() {
    let (mut feed, _trigger) = paused_feed(Duration::from_secs(30), 100);
    let start = tokio::time::Instant::now();
    let mut warnings = Vec::new();
    let bye = loop {
        match feed.next().await.expect("a disconnect before the end") {
            firehose::stream::Out::Keepalive(_) => continue,
            firehose::stream::Out::Control(c) if c.kind == "warning" => {
                let v: Value = serde_json::from_slice(&c.json).unwrap();
                warnings.push(v["code"].clone());
            }
            other => break other,
        }
    };
    // The token had less than a minute: warned before its end.
    assert_eq!(warnings, vec![json!("token_expiring")]);
    let firehose::stream::Out::Control(bye) = bye else {
        panic!("{bye:?}");
    };
    let v: Value = serde_json::from_slice(&bye.json).unwrap();
    assert_eq!((bye.kind, &v["code"]), ("disconnect", &json!("expired")));
    // The expiry is whole seconds away from a clock that had moved on by
    // less than one when the feed was made.
    let waited = start.elapsed();
    assert!(
        waited > Duration::from_secs(98) && waited <= Duration::from_secs(100),
        "{waited:?}"
    );
    assert!(feed.next().await.is_none(), "nothing after the disconnect");
}

#[tokio::test]
async fn shutdown_sends_disconnect_to_every_client_before_closing() {
    let app = TestApp::start().await;
    let (_, token) = app.user("val").await;
    let mut s = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
    let mut n = app
        .stream(
            "/api/v1/stream/user",
            Some(&token),
            &[("accept", "application/x-ndjson")],
        )
        .await;
    let stopping = tokio::spawn(app.shutdown());
    for c in [&mut s, &mut n] {
        let bye = c.next("disconnect").await;
        assert_eq!(
            (bye.data["type"].clone(), bye.data["code"].clone()),
            (json!("disconnect"), json!("shutdown"))
        );
        assert!(c.ended_within(Duration::from_secs(5)).await);
    }
    stopping.await.unwrap();
}

#[tokio::test]
async fn shutdown_spreads_the_clients_return_over_the_window() {
    use futures::StreamExt;
    let app = TestApp::start_with(|c| c.reconnect_spread = 8.0).await;
    let mut plain = Vec::new();
    for i in 0..24 {
        let (_, token) = app.user(&format!("spread{i}")).await;
        let accept = if i % 4 == 0 {
            "application/x-ndjson"
        } else {
            "text/event-stream"
        };
        plain.push(
            app.stream("/api/v1/stream/sample", Some(&token), &[("accept", accept)])
                .await,
        );
    }
    let (_, token) = app.user("spread_ws").await;
    let mut ws = ws_connect(&app, "/api/v1/stream/sample", &token).await;
    let stopping = tokio::spawn(app.shutdown());
    let mut hints = Vec::new();
    for (i, c) in plain.iter_mut().enumerate() {
        let bye = c.next("disconnect").await;
        assert_eq!(bye.data["code"], "shutdown");
        let ms = bye.data["retry_after_ms"].as_u64().expect("a hint");
        assert!((800..=8000).contains(&ms), "{ms} ms is in the window");
        if i % 4 != 0 {
            // SSE: the browser's reconnection delay is set to the same.
            assert_eq!(c.retry, Some(ms));
        }
        hints.push(ms);
        assert!(c.ended_within(Duration::from_secs(5)).await);
    }
    let bye = ws_next(&mut ws).await;
    let ms = bye["retry_after_ms"].as_u64().expect("a hint");
    let close = loop {
        match tokio::time::timeout(Duration::from_secs(5), ws.next()).await {
            Ok(Some(Ok(tokio_tungstenite::tungstenite::Message::Close(f)))) => break f,
            Ok(Some(Ok(_))) => continue,
            other => panic!("no close frame: {other:?}"),
        }
    };
    let close = close.expect("a close frame with a code");
    assert_eq!(u16::from(close.code), 1012);
    assert!(
        close.reason.contains(&format!("{ms} ms")),
        "{}",
        close.reason
    );
    // Spread out, not one value: 24 draws over 0.8-8 s.
    hints.sort_unstable();
    hints.dedup();
    assert!(hints.len() >= 12, "{hints:?}");
    assert!(hints[hints.len() - 1] - hints[0] >= 3000, "{hints:?}");
    stopping.await.unwrap();
}

#[tokio::test]
async fn websocket_on_a_stream_path_carries_the_same_json() {
    let app = TestApp::start().await;
    let (_, token) = app.user("wil").await;
    // The subscription is registered before the 101 is written: the
    // handshake is the readiness.
    let mut ws = ws_connect(&app, "/api/v1/stream/filter?track=wsword", &token).await;
    let sid = app.say(&token, "a wsword here").await;
    let v = ws_next(&mut ws).await;
    assert_eq!(
        (v["type"].clone(), v["status"]["id"].clone()),
        (json!("status"), json!(sid))
    );
    assert!(v["id"].is_string());
}

#[tokio::test]
async fn the_multiplexed_websocket_subscribes_and_unsubscribes_live() {
    let app = TestApp::start().await;
    let (ida, a) = app.user("xia").await;
    let (_, b) = app.user("yan").await;
    let mut ws = ws_connect(&app, "/api/v1/stream", &a).await;
    ws_send(&mut ws, json!({"type": "subscribe", "stream": "filter", "track": ["alpha"], "follow": [], "locations": [[0, 0, 10, 10]]})).await;
    let sub = ws_next(&mut ws).await;
    assert_eq!(
        (sub["type"].clone(), sub["stream"].clone()),
        (json!("subscribed"), json!("filter"))
    );
    ws_send(&mut ws, json!({"type": "subscribe", "stream": "user"})).await;
    let sub = ws_next(&mut ws).await;
    assert_eq!(
        (sub["type"].clone(), sub["stream"].clone()),
        (json!("subscribed"), json!("user"))
    );
    app.say(&b, "alpha from yan").await;
    let e = ws_next(&mut ws).await;
    assert_eq!(
        (e["stream"].clone(), e["status"]["message"].clone()),
        (json!("filter"), json!("alpha from yan"))
    );
    app.say(&a, "my own").await;
    let e = ws_next(&mut ws).await;
    assert_eq!(
        (e["stream"].clone(), e["status"]["uid"].clone()),
        (json!("user"), json!(ida))
    );
    ws_send(&mut ws, json!({"type": "unsubscribe", "stream": "filter"})).await;
    let un = ws_next(&mut ws).await;
    assert_eq!(
        (un["type"].clone(), un["stream"].clone()),
        (json!("unsubscribed"), json!("filter"))
    );
    app.say(&b, "alpha again").await;
    app.say(&a, "mine again").await;
    let e = ws_next(&mut ws).await;
    assert_eq!(
        (e["stream"].clone(), e["status"]["message"].clone()),
        (json!("user"), json!("mine again"))
    );
    for bad in [
        json!({"type": "subscribe", "stream": "firehose"}),
        json!({"type": "subscribe", "stream": "filter", "track": ["x".repeat(61)]}),
        json!({"type": "subscribe", "stream": "nope"}),
        json!({"type": "unsubscribe", "stream": "sample"}),
        json!({"type": "dance"}),
    ] {
        ws_send(&mut ws, bad.clone()).await;
        let err = ws_next(&mut ws).await;
        assert_eq!(err["type"], "error", "{bad}: {err}");
        assert!(err["code"].is_string() && err["message"].is_string());
    }
    ws.send(WsMessage::Text("not json".into())).await.unwrap();
    assert_eq!(ws_next(&mut ws).await["type"], "error");
}

/// A subscribe message far larger than a socket's starting read buffer
/// (5,000 follow ids and 400 phrases, ~60 KB) is read whole; the socket's
/// errors use the query string's words (one parser for both).
#[tokio::test]
async fn the_multiplexed_websocket_reads_large_subscribes_and_words_errors_as_the_query_does() {
    let app = TestApp::start().await;
    let (uid, a) = app.user("big").await;
    let mut ws = ws_connect(&app, "/api/v1/stream", &a).await;
    let mut follow: Vec<Value> = (1..5000u64)
        .map(|n| json!((n + 1_000_000).to_string()))
        .collect();
    follow.push(json!(uid));
    let track: Vec<String> = (0..400).map(|n| format!("phrase{n} word{n}")).collect();
    ws_send(
        &mut ws,
        json!({"type": "subscribe", "stream": "filter", "follow": follow, "track": track}),
    )
    .await;
    let ok = ws_next(&mut ws).await;
    assert_eq!(
        (ok["type"].clone(), ok["stream"].clone()),
        (json!("subscribed"), json!("filter")),
        "{ok}"
    );
    app.say(&a, "from a followed id").await;
    assert_eq!(
        ws_next(&mut ws).await["status"]["message"],
        "from a followed id"
    );
    // The same bad values through the URL and through the socket.
    for (query, message) in [
        (
            "count=1001",
            json!({"type": "subscribe", "stream": "sample", "count": 1001}),
        ),
        (
            "rate=2",
            json!({"type": "subscribe", "stream": "sample", "rate": 2}),
        ),
    ] {
        let (status, body) = app
            .get(&format!("/api/v1/stream/sample?{query}"), Some(&a))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        ws_send(&mut ws, message.clone()).await;
        let err = ws_next(&mut ws).await;
        assert_eq!(
            (
                err["type"].clone(),
                err["code"].clone(),
                err["message"].clone()
            ),
            (
                json!("error"),
                body["error"]["code"].clone(),
                body["error"]["message"].clone()
            ),
            "{message}"
        );
    }
}

#[tokio::test]
async fn resubscribing_a_stream_name_replaces_its_filter_in_place() {
    let app = TestApp::start().await;
    let (_, a) = app.user("zoe").await;
    let mut ws = ws_connect(&app, "/api/v1/stream", &a).await;
    ws_send(
        &mut ws,
        json!({"type": "subscribe", "stream": "filter", "track": ["first"]}),
    )
    .await;
    assert_eq!(ws_next(&mut ws).await["type"], "subscribed");
    app.say(&a, "the first").await;
    assert_eq!(ws_next(&mut ws).await["status"]["message"], "the first");
    ws_send(
        &mut ws,
        json!({"type": "subscribe", "stream": "filter", "track": ["second"]}),
    )
    .await;
    ws_send(&mut ws, json!({"type": "subscribe", "stream": "user"})).await;
    assert_eq!(ws_next(&mut ws).await["type"], "subscribed");
    assert_eq!(ws_next(&mut ws).await["type"], "subscribed");
    app.say(&a, "first no more").await;
    let e = ws_next(&mut ws).await;
    assert_eq!(
        (e["stream"].clone(), e["status"]["message"].clone()),
        (json!("user"), json!("first no more"))
    );
    app.say(&a, "the second").await;
    let mut streams = vec![
        ws_next(&mut ws).await["stream"].clone(),
        ws_next(&mut ws).await["stream"].clone(),
    ];
    streams.sort_by_key(|v| v.to_string());
    assert_eq!(streams, vec![json!("filter"), json!("user")]);
}

#[tokio::test]
async fn websockets_are_pinged_and_closed_when_pongs_stop() {
    let app = TestApp::start_with(|c| c.keepalive_secs = 1).await;
    let (_, token) = app.user("pong").await;
    let mut ws = ws_connect(&app, "/api/v1/stream/user", &token).await;
    // Not reading means no pongs go back (the client answers pings as it reads).
    tokio::time::sleep(Duration::from_millis(4500)).await;
    let mut pings = 0;
    let mut bye = None;
    while let Ok(Some(Ok(msg))) = tokio::time::timeout(Duration::from_secs(5), ws.next()).await {
        match msg {
            WsMessage::Ping(_) => pings += 1,
            WsMessage::Text(t) => {
                let v = serde_json::from_str::<Value>(t.as_str()).unwrap();
                if v["type"] != "position" {
                    bye = Some(v);
                }
            }
            WsMessage::Close(_) => break,
            _ => {}
        }
    }
    assert!(pings >= 2, "pings were sent: {pings}");
    let bye = bye.expect("a disconnect event before the close");
    assert_eq!(
        (bye["type"].clone(), bye["code"].clone()),
        (json!("disconnect"), json!("timeout"))
    );
}

#[tokio::test]
async fn websockets_that_answer_pings_stay_open() {
    let app = TestApp::start_with(|c| c.keepalive_secs = 1).await;
    let (_, token) = app.user("alive").await;
    let mut ws = ws_connect(&app, "/api/v1/stream/user", &token).await;
    // Reading keeps answering pings; after 4 intervals the socket still delivers.
    let until = tokio::time::Instant::now() + Duration::from_millis(4500);
    while let Ok(Some(Ok(msg))) = tokio::time::timeout_at(until, ws.next()).await {
        let keepalive = match &msg {
            WsMessage::Text(t) => {
                serde_json::from_str::<Value>(t.as_str()).unwrap()["type"] == "position"
            }
            other => !matches!(other, WsMessage::Close(_)),
        };
        assert!(keepalive, "only pings and positions: {msg:?}");
    }
    app.say(&token, "still here").await;
    assert_eq!(ws_next(&mut ws).await["status"]["message"], "still here");
}

/// Appends what the socket sends next to `buf` (within 10 s; not closed
/// before `what` is whole).
async fn read_more(tcp: &mut tokio::net::TcpStream, buf: &mut Vec<u8>, what: &str) {
    use tokio::io::AsyncReadExt;
    let mut chunk = [0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut chunk))
        .await
        .unwrap_or_else(|_| panic!("{what} in time"))
        .unwrap();
    assert!(n > 0, "closed before {what} was whole");
    buf.extend_from_slice(&chunk[..n]);
}

/// Reads a response head from a raw socket: the head's text and whatever
/// body bytes came with it.
async fn read_head(tcp: &mut tokio::net::TcpStream) -> (String, Vec<u8>) {
    let mut buf = Vec::new();
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            return (head, buf[end + 4..].to_vec());
        }
        read_more(tcp, &mut buf, "a response head").await;
    }
}

/// A WebSocket upgrade request for `path` (RFC 6455's sample key), with
/// extra header lines.
fn upgrade_request(path: &str, token: &str, extra: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n{extra}\r\n"
    )
}

/// A gzipped SSE stream decodes event by event as the bytes arrive (each
/// event is flushed whole), and ends, when the stream is over, as a
/// complete gzip body whose trailer checks out.
#[tokio::test]
async fn a_client_that_accepts_gzip_gets_each_event_compressed_and_decodable_on_arrival() {
    use std::io::Write;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::start().await;
    let (_, token) = app.user("zip").await;
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let req = format!(
        "GET /api/v1/stream/filter?track=zipword HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\naccept-encoding: br, gzip;q=0.8\r\n\r\n"
    );
    tcp.write_all(req.as_bytes()).await.unwrap();
    let (head, early) = read_head(&mut tcp).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-encoding: gzip"), "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    assert!(head.contains("vary: accept-encoding"), "{head}");
    let mut gz = flate2::write::GzDecoder::new(Vec::new());
    gz.write_all(&early).unwrap();
    let mut wire_bytes = early.len();
    // Reads until the decoded text holds `want`.
    async fn until(
        tcp: &mut tokio::net::TcpStream,
        gz: &mut flate2::write::GzDecoder<Vec<u8>>,
        wire_bytes: &mut usize,
        want: &str,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            gz.flush().unwrap();
            if String::from_utf8_lossy(gz.get_ref()).contains(want) {
                return true;
            }
            let mut chunk = [0u8; 4096];
            let read = tokio::time::timeout_at(deadline, tcp.read(&mut chunk)).await;
            let Ok(Ok(n)) = read else { return false };
            if n == 0 {
                gz.flush().unwrap();
                return String::from_utf8_lossy(gz.get_ref()).contains(want);
            }
            *wire_bytes += n;
            gz.write_all(&chunk[..n]).unwrap();
        }
    }
    assert!(until(&mut tcp, &mut gz, &mut wire_bytes, "retry: 3000").await);
    let long = "zipword ".repeat(30);
    let first = app.say(&token, long.trim()).await;
    assert!(
        until(
            &mut tcp,
            &mut gz,
            &mut wire_bytes,
            &format!("\"id\":\"{first}\"")
        )
        .await,
        "the first event decodes on its own"
    );
    let second = app.say(&token, &format!("{} again", long.trim())).await;
    assert!(
        until(
            &mut tcp,
            &mut gz,
            &mut wire_bytes,
            &format!("\"id\":\"{second}\"")
        )
        .await
    );
    let decoded = gz.get_ref().len();
    assert!(
        wire_bytes * 2 < decoded,
        "repetitive events compress: {wire_bytes} bytes on the wire for {decoded}"
    );
    // Logging out ends the stream for good: a disconnect, then the trailer.
    let (status, _) = app.delete("/api/v1/sessions/current", Some(&token)).await;
    assert!(status.is_success(), "{status}");
    assert!(until(&mut tcp, &mut gz, &mut wire_bytes, "event: disconnect").await);
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut rest)).await;
    gz.write_all(&rest).unwrap();
    let text = String::from_utf8(
        gz.finish()
            .expect("a complete gzip body, CRC and length right"),
    )
    .unwrap();
    assert!(text.starts_with("retry: 3000\n\n"), "{text}");
    assert_eq!(text.matches("event: status").count(), 2, "{text}");
}

/// A client frame: FIN, masked; RSV1 when `deflated`.
fn client_frame(opcode: u8, deflated: bool, payload: &[u8]) -> Vec<u8> {
    let mask = [7u8, 99, 13, 200];
    let mut out = vec![0x80 | if deflated { 0x40 } else { 0 } | opcode];
    match payload.len() {
        n if n < 126 => out.push(0x80 | n as u8),
        n if n < 65536 => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    out
}

/// Deflates a message as a permessage-deflate client does (no context
/// takeover: a fresh compressor each time).
fn deflate_message(text: &str) -> Vec<u8> {
    let mut c = flate2::Compress::new(flate2::Compression::default(), false);
    let mut out = Vec::with_capacity(text.len() + 64);
    c.compress_vec(text.as_bytes(), &mut out, flate2::FlushCompress::Sync)
        .unwrap();
    assert!(out.ends_with(&[0, 0, 0xff, 0xff]));
    out.truncate(out.len() - 4);
    out
}

/// A server frame read off a raw socket: opcode, RSV1 and payload (the
/// payload inflated with a fresh window when RSV1 is set).
async fn server_frame(tcp: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> (u8, bool, Vec<u8>) {
    loop {
        if buf.len() >= 2 {
            let (len, at) = match buf[1] & 0x7f {
                126 if buf.len() >= 4 => (u16::from_be_bytes([buf[2], buf[3]]) as usize, 4),
                127 if buf.len() >= 10 => (
                    u64::from_be_bytes(buf[2..10].try_into().unwrap()) as usize,
                    10,
                ),
                126 | 127 => (usize::MAX, 0),
                n => (n as usize, 2),
            };
            assert_eq!(buf[1] & 0x80, 0, "server frames are not masked");
            if len != usize::MAX && buf.len() >= at + len {
                let (op, rsv1) = (buf[0] & 0x0f, buf[0] & 0x40 != 0);
                let mut payload: Vec<u8> = buf[at..at + len].to_vec();
                buf.drain(..at + len);
                if rsv1 {
                    payload.extend_from_slice(&[0, 0, 0xff, 0xff]);
                    let mut d = flate2::Decompress::new(false);
                    let mut out = Vec::with_capacity(payload.len() * 20 + 64);
                    d.decompress_vec(&payload, &mut out, flate2::FlushDecompress::Sync)
                        .expect("a message deflated on its own");
                    payload = out;
                }
                return (op, rsv1, payload);
            }
        }
        read_more(tcp, buf, "a frame").await;
    }
}

/// permessage-deflate end to end on the multiplexed socket: negotiated
/// from a browser's offer, every message from the server compressed on its
/// own, a compressed subscribe from the client read, pings answered with
/// the same payload, and a close answered with a close.
#[tokio::test]
async fn a_websocket_that_offers_permessage_deflate_gets_compressed_messages_both_ways() {
    use tokio::io::AsyncWriteExt;
    let app = TestApp::start().await;
    let (_, token) = app.user("def").await;
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let req = upgrade_request(
        "/api/v1/stream",
        &token,
        "sec-websocket-extensions: permessage-deflate; client_max_window_bits\r\n",
    );
    tcp.write_all(req.as_bytes()).await.unwrap();
    let (head, mut buf) = read_head(&mut tcp).await;
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(
        head.contains("sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo="),
        "{head}"
    );
    assert!(
        head.contains("sec-websocket-extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover"),
        "{head}"
    );
    let subscribe = json!({"type": "subscribe", "stream": "filter", "track": ["deflword"]});
    let msg = deflate_message(&subscribe.to_string());
    tcp.write_all(&client_frame(0x1, true, &msg)).await.unwrap();
    let (op, rsv1, payload) = server_frame(&mut tcp, &mut buf).await;
    let v: Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(
        (op, rsv1, v["type"].as_str()),
        (0x1, true, Some("subscribed")),
        "{v}"
    );
    let text = "deflword ".repeat(25);
    let sid = app.say(&token, text.trim()).await;
    let (op, rsv1, payload) = server_frame(&mut tcp, &mut buf).await;
    let v: Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!((op, rsv1), (0x1, true));
    assert_eq!(
        (v["stream"].as_str(), v["status"]["id"].as_str()),
        (Some("filter"), Some(sid.as_str())),
        "{v}"
    );
    // A ping is answered with its payload, uncompressed (control frames are).
    tcp.write_all(&client_frame(0x9, false, b"are you there"))
        .await
        .unwrap();
    assert_eq!(
        server_frame(&mut tcp, &mut buf).await,
        (0xA, false, b"are you there".to_vec())
    );
    // An uncompressed message is read too (compression is per message).
    let un = json!({"type": "unsubscribe", "stream": "filter"}).to_string();
    tcp.write_all(&client_frame(0x1, false, un.as_bytes()))
        .await
        .unwrap();
    let (_, _, payload) = server_frame(&mut tcp, &mut buf).await;
    assert_eq!(
        serde_json::from_slice::<Value>(&payload).unwrap()["type"],
        "unsubscribed"
    );
    tcp.write_all(&client_frame(0x8, false, &1000u16.to_be_bytes()))
        .await
        .unwrap();
    let (op, _, payload) = server_frame(&mut tcp, &mut buf).await;
    assert_eq!((op, &payload[..2]), (0x8, &1000u16.to_be_bytes()[..]));
}

/// A client that breaks the protocol is closed with the RFC's code: an
/// unmasked frame (1002), a compressed frame on a socket that negotiated no
/// compression (1002), a message past the bound (1009).
#[tokio::test]
async fn a_websocket_client_that_breaks_the_protocol_is_closed_with_the_rfcs_code() {
    use tokio::io::AsyncWriteExt;
    let app = TestApp::start().await;
    let (_, token) = app.user("brk").await;
    let cases: [(&str, Vec<u8>, u16); 3] = [
        ("unmasked", vec![0x81, 0x02, b'h', b'i'], 1002),
        ("rsv1 without deflate", client_frame(0x1, true, b"hi"), 1002),
        (
            "too big",
            {
                let mut f = vec![0x81, 0x80 | 127];
                f.extend_from_slice(&(2u64 << 20).to_be_bytes());
                f
            },
            1009,
        ),
    ];
    for (what, frame, code) in cases {
        let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
        let req = upgrade_request("/api/v1/stream/sample", &token, "");
        tcp.write_all(req.as_bytes()).await.unwrap();
        let (head, mut buf) = read_head(&mut tcp).await;
        assert!(head.starts_with("http/1.1 101"), "{what}: {head}");
        assert!(!head.contains("sec-websocket-extensions"), "{what}: {head}");
        tcp.write_all(&frame).await.unwrap();
        let (op, _, payload) = server_frame(&mut tcp, &mut buf).await;
        assert_eq!(op, 0x8, "{what}");
        assert_eq!(u16::from_be_bytes([payload[0], payload[1]]), code, "{what}");
    }
    // A handshake without a valid key is refused in the contract's shape.
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let req = format!(
        "GET /api/v1/stream/sample HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\nupgrade: websocket\r\nconnection: upgrade\r\nsec-websocket-version: 13\r\n\r\n"
    );
    tcp.write_all(req.as_bytes()).await.unwrap();
    let (head, _) = read_head(&mut tcp).await;
    assert!(head.starts_with("http/1.1 400"), "{head}");
}

/// A WebSocket upgrade on a connection that already served a request goes
/// through the router and hyper's upgrade, and works the same.
#[tokio::test]
async fn a_websocket_upgrade_on_a_kept_alive_connection_is_served_too() {
    use tokio::io::AsyncWriteExt;
    let app = TestApp::start().await;
    let (_, token) = app.user("kal").await;
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let (head, mut body) = read_head(&mut tcp).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .and_then(|n| n.trim().parse().ok())
        .expect("a sized health answer");
    while body.len() < len {
        read_more(&mut tcp, &mut body, "the health answer").await;
    }
    let req = upgrade_request(
        "/api/v1/stream/filter?track=kaword",
        &token,
        "sec-websocket-extensions: permessage-deflate\r\n",
    );
    tcp.write_all(req.as_bytes()).await.unwrap();
    let (head, mut buf) = read_head(&mut tcp).await;
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(head.contains("permessage-deflate"), "{head}");
    let sid = app.say(&token, "a kaword here").await;
    let (op, rsv1, payload) = server_frame(&mut tcp, &mut buf).await;
    let v: Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(
        (op, rsv1, v["status"]["id"].as_str()),
        (0x1, true, Some(sid.as_str())),
        "{v}"
    );
}

/// The allocator settings one `serve` process runs with: its environment's
/// mimalloc variables and whether the kernel may give it transparent huge
/// pages (`None` on a kernel without the `THP_enabled` line).
fn allocator_of(server: &common::ServerProcess) -> (Vec<String>, Option<bool>) {
    let pid = server.child.id().expect("the server is running");
    let environ = std::fs::read(format!("/proc/{pid}/environ")).expect("its environment");
    let mut vars: Vec<String> = environ
        .split(|b| *b == 0)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .filter(|v| v.starts_with("MIMALLOC_"))
        .collect();
    vars.sort();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("its status");
    let thp = status
        .lines()
        .find_map(|l| l.strip_prefix("THP_enabled:"))
        .map(|v| v.trim() == "1");
    (vars, thp)
}

/// Idle connections stay lean (docs/benchmarks.md, *Streams*): `serve` re-runs itself
/// once with mimalloc's huge pages off and immediate purging, keeps a value
/// the operator set, and leaves the allocator alone with `--huge-pages on`.
#[tokio::test]
async fn serve_runs_without_huge_pages_unless_asked() {
    let redis = common::RedisServer::start();
    let lean = common::ServerProcess::serve(&redis, &[]).await;
    let (vars, thp) = allocator_of(&lean);
    assert_eq!(vars, ["MIMALLOC_ALLOW_THP=0", "MIMALLOC_PURGE_DELAY=0"]);
    assert_ne!(thp, Some(true), "huge pages are off for the process");
    lean.kill9().await;

    let own = common::ServerProcess::serve(&redis, &[("MIMALLOC_PURGE_DELAY", "50")]).await;
    assert_eq!(
        allocator_of(&own).0,
        ["MIMALLOC_ALLOW_THP=0", "MIMALLOC_PURGE_DELAY=50"]
    );
    own.kill9().await;

    let huge = common::ServerProcess::serve(&redis, &[("FIREHOSE_HUGE_PAGES", "on")]).await;
    let (vars, thp) = allocator_of(&huge);
    assert!(vars.is_empty(), "{vars:?}");
    assert_ne!(
        thp,
        Some(false),
        "huge pages are left to the kernel's setting"
    );
    huge.kill9().await;
}

/// Every event id a stream gets until it has been quiet for a second.
async fn ids_until_quiet(s: &mut StreamClient) -> Vec<String> {
    let mut ids = Vec::new();
    while let Some(m) = s.next_within(Duration::from_secs(1)).await {
        if let Some(id) = m.data["id"].as_str() {
            ids.push(id.to_string());
        }
    }
    ids
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
    for i in 0..12 {
        let t = if i % 2 == 0 { &token } else { &other };
        sids.push(app.say(t, &format!("split me {i}")).await);
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
    for s in &mut parts {
        let got = ids_until_quiet(s).await;
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
    // Bad partitions: 400 in the contract's shape.
    for q in [
        "partition=0&partitions=3",
        "partition=4&partitions=3",
        "partition=1&partitions=33",
        "partition=1",
        "partitions=2",
        "partition=x&partitions=2",
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
    for i in 0..10 {
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
