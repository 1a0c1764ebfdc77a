//! Blocks and mutes: what they end, what they hide on every read path and
//! every stream kind, and how they race follows and fan-out.

use crate::assert_error;
use crate::common::{gated_app, home_in_redis, ids, ws_connect, ws_next, ws_send, TestApp};
use firehose::store::keys::Keys;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

fn user_ids(page: &Value) -> Vec<String> {
    ids(&page["users"])
}

async fn set(app: &TestApp, token: &str, id: &str, what: &str, on: bool) -> Value {
    let path = format!("/api/v1/users/{id}/{what}");
    let method = if on { Method::POST } else { Method::DELETE };
    let (status, body) = app.call(method, &path, Some(token), None).await;
    assert_eq!(status, StatusCode::OK, "{what} {id}: {body}");
    body
}

async fn counts(app: &TestApp, id: &str) -> (u64, u64) {
    let (_, u) = app.get(&format!("/api/v1/users/{id}"), None).await;
    (
        u["followers"].as_u64().unwrap(),
        u["following"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn a_block_ends_follows_and_requests_both_ways_and_keeps_them_ended() {
    let app = TestApp::start().await;
    let (a, at) = app.user("blocker_one").await;
    let (b, bt) = app.user("blocked_one").await;
    let (c, ct) = app.user("private_one").await;
    app.follow(&at, &b).await;
    app.follow(&bt, &a).await;
    // A follow request to a private account, from the user it will block.
    app.call(
        Method::PATCH,
        "/api/v1/me",
        Some(&ct),
        Some(json!({"private": true})),
    )
    .await;
    app.follow(&bt, &c).await;
    let mut a_stream = app.stream("/api/v1/stream/user", Some(&at), &[]).await;

    assert_eq!(
        set(&app, &at, &b, "block", true).await,
        json!({"blocking": true})
    );
    assert_eq!(
        set(&app, &at, &b, "block", true).await,
        json!({"blocking": true}),
        "idempotent"
    );
    assert_eq!(counts(&app, &a).await, (0, 0));
    assert_eq!(counts(&app, &b).await, (0, 0));
    // The ended follows are announced on the user stream, once each.
    let mut ended = Vec::new();
    for _ in 0..2 {
        let e = a_stream.next_event("an unfollow").await;
        assert_eq!(e.data["type"], "unfollow", "{}", e.data);
        ended.push((
            e.data["source"].as_str().unwrap().to_string(),
            e.data["target"].as_str().unwrap().to_string(),
        ));
    }
    ended.sort();
    let mut want = vec![(a.clone(), b.clone()), (b.clone(), a.clone())];
    want.sort();
    assert_eq!(ended, want);

    // Neither may follow the other while it lasts.
    for (token, id) in [(&bt, &a), (&at, &b)] {
        let (status, err) = app
            .post(
                &format!("/api/v1/users/{id}/follow"),
                Some(token),
                json!({}),
            )
            .await;
        assert_error(status, &err, StatusCode::FORBIDDEN);
    }
    let (_, results) = app
        .post("/api/v1/follows", Some(&bt), json!({"ids": [a]}))
        .await;
    assert_eq!(results["results"][&a], false);
    assert_eq!(counts(&app, &a).await, (0, 0));

    // C blocks B: the request B made is gone, and B cannot ask again.
    set(&app, &ct, &b, "block", true).await;
    let (_, requests) = app.get("/api/v1/follow_requests", Some(&ct)).await;
    assert_eq!(user_ids(&requests), Vec::<String>::new());
    let (_, outgoing) = app.get("/api/v1/follow_requests/outgoing", Some(&bt)).await;
    assert_eq!(user_ids(&outgoing), Vec::<String>::new());
    let (status, err) = app
        .post(&format!("/api/v1/users/{c}/follow"), Some(&bt), json!({}))
        .await;
    assert_error(status, &err, StatusCode::FORBIDDEN);

    // The list, newest first, paged by cursor.
    let (d, _) = app.user("blocked_two").await;
    set(&app, &at, &d, "block", true).await;
    let (_, first) = app.get("/api/v1/blocks?count=1", Some(&at)).await;
    assert_eq!(user_ids(&first), vec![d.clone()]);
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    let (_, second) = app
        .get(
            &format!("/api/v1/blocks?count=1&cursor={cursor}"),
            Some(&at),
        )
        .await;
    assert_eq!(user_ids(&second), vec![b.clone()]);
    assert!(second["next_cursor"].is_null());

    // Lifting the block restores no follow, and following works again.
    assert_eq!(
        set(&app, &at, &b, "block", false).await,
        json!({"blocking": false})
    );
    assert_eq!(counts(&app, &a).await, (0, 0));
    app.follow(&bt, &a).await;
    assert_eq!(counts(&app, &a).await, (1, 0));

    // Yourself: 400; nobody: 404; a bad id: 400.
    for what in ["block", "mute"] {
        let (status, err) = app
            .post(&format!("/api/v1/users/{a}/{what}"), Some(&at), json!({}))
            .await;
        assert_error(status, &err, StatusCode::BAD_REQUEST);
        let (status, err) = app
            .post(
                &format!("/api/v1/users/999999/{what}"),
                Some(&at),
                json!({}),
            )
            .await;
        assert_error(status, &err, StatusCode::NOT_FOUND);
        let (status, err) = app
            .post(&format!("/api/v1/users/x/{what}"), Some(&at), json!({}))
            .await;
        assert_error(status, &err, StatusCode::NOT_FOUND);
        let (status, err) = app
            .post(&format!("/api/v1/users/{b}/{what}"), None, json!({}))
            .await;
        assert_error(status, &err, StatusCode::UNAUTHORIZED);
    }
}

#[tokio::test]
async fn a_blocked_user_gets_404_for_the_blockers_statuses_on_every_read_path() {
    let app = TestApp::start().await;
    let (a, at) = app.user("hider").await;
    let (b, bt) = app.user("hidden_from").await;
    let (c, ct) = app.user("go_between").await;
    app.follow(&bt, &c).await;
    app.follow(&bt, &a).await;
    app.follow(&at, &b).await;
    let s1 = app.say(&at, "hello from a #blocktag").await;
    let (status, repost) = app
        .post(
            &format!("/api/v1/statuses/{s1}/repost"),
            Some(&ct),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let r1 = repost["id"].as_str().unwrap().to_string();
    app.post(&format!("/api/v1/statuses/{s1}/like"), Some(&ct), json!({}))
        .await;
    let reply = app
        .post_status(&ct, json!({"message": "a reply", "reply_to": s1}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let b1 = app.say(&bt, "b talks to @hider").await;
    // (A home shows a status once: here as C's repost.)
    let home = app.timeline_ids("/api/v1/timelines/home", Some(&bt)).await;
    assert!(home.contains(&r1), "{home:?}");

    set(&app, &at, &b, "block", true).await;

    // B: 404 for the status, its repost, its context, likes and reposts.
    for path in [
        format!("/api/v1/statuses/{s1}"),
        format!("/api/v1/statuses/{r1}"),
        format!("/api/v1/statuses/{s1}/context"),
        format!("/api/v1/statuses/{s1}/liked_by"),
        format!("/api/v1/users/{a}/statuses"),
    ] {
        let (status, err) = app.get(&path, Some(&bt)).await;
        assert_error(status, &err, StatusCode::NOT_FOUND);
    }
    for path in [
        format!("/api/v1/statuses/{s1}/like"),
        format!("/api/v1/statuses/{s1}/repost"),
        format!("/api/v1/statuses/{r1}/repost"),
    ] {
        let (status, err) = app.post(&path, Some(&bt), json!({})).await;
        assert_error(status, &err, StatusCode::NOT_FOUND);
    }
    let (status, err) = app
        .post(
            "/api/v1/statuses",
            Some(&bt),
            json!({"message": "reply", "reply_to": s1}),
        )
        .await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
    // A's user object stays readable.
    let (status, _) = app.get(&format!("/api/v1/users/{a}"), Some(&bt)).await;
    assert_eq!(status, StatusCode::OK);
    // None of A's statuses (nor reposts of them) in B's timelines.
    for path in [
        "/api/v1/timelines/home".to_string(),
        "/api/v1/timelines/tag/blocktag".to_string(),
        format!("/api/v1/users/{c}/statuses"),
        format!("/api/v1/users/{c}/likes"),
    ] {
        let shown = app.timeline_ids(&path, Some(&bt)).await;
        assert!(
            !shown.contains(&s1) && !shown.contains(&r1),
            "{path}: {shown:?}"
        );
    }
    let (_, context) = app
        .get(&format!("/api/v1/statuses/{reply}/context"), Some(&bt))
        .await;
    assert_eq!(ids(&context["ancestors"]), Vec::<String>::new());
    // Others still see everything.
    let (_, context) = app
        .get(&format!("/api/v1/statuses/{reply}/context"), Some(&ct))
        .await;
    assert_eq!(ids(&context["ancestors"]), vec![s1.clone()]);
    let tagged = app
        .timeline_ids("/api/v1/timelines/tag/blocktag", None)
        .await;
    assert_eq!(tagged, vec![s1.clone()]);

    // A: B's statuses leave A's home and mentions; A may still read them.
    let home = app.timeline_ids("/api/v1/timelines/home", Some(&at)).await;
    assert!(!home.contains(&b1), "{home:?}");
    let mentions = app
        .timeline_ids("/api/v1/timelines/mentions", Some(&at))
        .await;
    assert!(!mentions.contains(&b1), "{mentions:?}");
    let (status, _) = app.get(&format!("/api/v1/statuses/{b1}"), Some(&at)).await;
    assert_eq!(status, StatusCode::OK);

    // What B posts afterwards reaches none of A's timelines either.
    let b2 = app.say(&bt, "again @hider").await;
    let mentions = app
        .timeline_ids("/api/v1/timelines/mentions", Some(&at))
        .await;
    assert!(!mentions.contains(&b2), "{mentions:?}");
    // And once lifted, A's statuses are readable again (no follow back).
    set(&app, &at, &b, "block", false).await;
    let (status, _) = app.get(&format!("/api/v1/statuses/{s1}"), Some(&bt)).await;
    assert_eq!(status, StatusCode::OK);
    let mentions = app
        .timeline_ids("/api/v1/timelines/mentions", Some(&at))
        .await;
    assert!(mentions.contains(&b2), "{mentions:?}");
}

/// Reads events from a stream until a status with `marker` in its message
/// arrives; returns everything before it.
async fn until_marker(
    stream: &mut crate::common::StreamClient,
    marker: &str,
    what: &str,
) -> Vec<Value> {
    let mut before = Vec::new();
    loop {
        let e = stream.next_event(what).await;
        let is_marker = e.data["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(marker));
        if is_marker {
            return before;
        }
        before.push(e.data);
    }
}

async fn ws_until_marker(ws: &mut crate::common::Ws, marker: &str) -> Vec<Value> {
    let mut before = Vec::new();
    loop {
        let e = ws_next(ws).await;
        if e.get("id").is_none() {
            continue;
        }
        let is_marker = e["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(marker));
        if is_marker {
            return before;
        }
        before.push(e);
    }
}

/// The events `uid` caused: their statuses and reposts of them, their
/// likes, mentions and reposts.
fn mentions_of(events: &[Value], uid: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| {
            e["status"]["uid"] == json!(uid)
                || e["status"]["repost_of_uid"] == json!(uid)
                || (e["type"] == "like" && e["source"] == json!(uid))
        })
        .map(|e| e.to_string())
        .collect()
}

#[tokio::test]
async fn a_block_hides_the_blocker_on_every_stream_kind_and_transport() {
    let app = TestApp::start_with(|cfg| cfg.max_streams_per_user = 20).await;
    let (a, at) = app.user("streamblocker").await;
    let (b, bt) = app.user("streamblocked").await;
    let (c, ct) = app.user("streamrelay").await;
    let (_, dt) = app.user("streammarker").await;
    let d = app.register("unused_marker_peer").await;
    let _ = d;
    app.follow(&bt, &c).await;
    app.follow(&bt, &a).await;
    app.follow(&at, &b).await;
    let marker_author = app.get("/api/v1/me", Some(&dt)).await.1["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.follow(&bt, &marker_author).await;
    // Streams of B opened before the block (the hub hears of it) ...
    let filter = format!(
        "/api/v1/stream/filter?follow={a},{marker_author}&track=blockword&locations=-10,-10,10,10"
    );
    let mut before = [
        (
            "user",
            app.stream("/api/v1/stream/user", Some(&bt), &[]).await,
        ),
        ("filter", app.stream(&filter, Some(&bt), &[]).await),
        (
            "sample",
            app.stream("/api/v1/stream/sample?rate=1", Some(&bt), &[])
                .await,
        ),
        (
            "user ndjson",
            app.stream(
                "/api/v1/stream/user",
                Some(&bt),
                &[("accept", "application/x-ndjson")],
            )
            .await,
        ),
    ];
    let mut mux = ws_connect(&app, "/api/v1/stream", &bt).await;
    ws_send(&mut mux, json!({"type": "subscribe", "stream": "user"})).await;
    assert_eq!(ws_next(&mut mux).await["type"], "subscribed");
    ws_send(
        &mut mux,
        json!({"type": "subscribe", "stream": "filter", "track": ["blockword"]}),
    )
    .await;
    assert_eq!(ws_next(&mut mux).await["type"], "subscribed");
    let mut ws_path = ws_connect(&app, "/api/v1/stream/sample?rate=1", &bt).await;
    let mut a_user = app.stream("/api/v1/stream/user", Some(&at), &[]).await;

    set(&app, &at, &b, "block", true).await;
    // ... and one opened after it (the snapshot read at opening).
    let mut after = app.stream(&filter, Some(&bt), &[]).await;

    // Everything A does, and C's repost of it; B's mention and like of A.
    let s1 = app
        .post_status(
            &at,
            json!({"message": "blockword from a", "lat": 1.0, "lon": 1.0}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, _) = app
        .post(
            &format!("/api/v1/statuses/{s1}/repost"),
            Some(&ct),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let b1 = app.say(&bt, "hey @streamblocker blockword").await;
    let (status, _) = app
        .post(&format!("/api/v1/statuses/{b1}/like"), Some(&at), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    // A public marker every one of B's streams gets.
    app.post_status(
        &dt,
        json!({"message": "blockword marker", "lat": 2.0, "lon": 2.0}),
    )
    .await;

    for (name, stream) in before.iter_mut() {
        let got = until_marker(stream, "marker", name).await;
        assert_eq!(
            mentions_of(&got, &a),
            Vec::<String>::new(),
            "{name} got A's"
        );
    }
    let got = until_marker(&mut after, "marker", "filter opened after").await;
    assert_eq!(mentions_of(&got, &a), Vec::<String>::new());
    let got = ws_until_marker(&mut mux, "marker").await;
    assert_eq!(mentions_of(&got, &a), Vec::<String>::new(), "multiplexed");
    let got = ws_until_marker(&mut ws_path, "marker").await;
    assert_eq!(mentions_of(&got, &a), Vec::<String>::new(), "ws path");

    // A's user stream: nothing B caused (no mention, no status), up to a
    // status of A's own.
    app.say(&at, "own marker").await;
    let got = until_marker(&mut a_user, "own marker", "A's user stream").await;
    let caused_by_b: Vec<&Value> = got
        .iter()
        .filter(|e| {
            e["type"] != "unfollow" && (e["status"]["uid"] == json!(b) || e["source"] == json!(b))
        })
        .collect();
    assert!(caused_by_b.is_empty(), "{caused_by_b:?}");

    // A resume replays none of it either.
    let mut replay = app
        .stream("/api/v1/stream/sample?rate=1&count=50", Some(&bt), &[])
        .await;
    let got = until_marker(&mut replay, "marker", "replay").await;
    assert_eq!(mentions_of(&got, &a), Vec::<String>::new(), "replay");
    let _ = c;
}

#[tokio::test]
async fn a_mute_clears_the_home_at_once_and_an_unmute_brings_it_back() {
    let app = TestApp::start().await;
    let (a, at) = app.user("muter").await;
    let (b, bt) = app.user("mutee").await;
    let (c, ct) = app.user("mute_relay").await;
    app.follow(&at, &b).await;
    app.follow(&at, &c).await;
    let s1 = app.say(&bt, "muted words").await;
    let s2 = app.say(&bt, "more @muter").await;
    let r1 = app.repost(&ct, &s1).await;
    let c1 = app.say(&ct, "c's own").await;
    let home = app.timeline_ids("/api/v1/timelines/home", Some(&at)).await;
    // (A home shows a status once: s1 as C's repost.)
    assert_eq!(home, vec![c1.clone(), r1.clone(), s2.clone()]);

    assert_eq!(
        set(&app, &at, &b, "mute", true).await,
        json!({"muting": true})
    );
    assert_eq!(
        app.timeline_ids("/api/v1/timelines/home", Some(&at)).await,
        vec![c1.clone()]
    );
    assert_eq!(
        app.timeline_ids("/api/v1/timelines/mentions", Some(&at))
            .await,
        Vec::<String>::new()
    );
    let (_, mutes) = app.get("/api/v1/mutes", Some(&at)).await;
    assert_eq!(user_ids(&mutes), vec![b.clone()]);
    // Follows and counts stay; B sees everything as before.
    assert_eq!(counts(&app, &a).await, (0, 2));
    let (status, _) = app.get(&format!("/api/v1/statuses/{c1}"), Some(&bt)).await;
    assert_eq!(status, StatusCode::OK);

    // New statuses of B (and reposts of them) stay off the home and the
    // user stream.
    let mut a_user = app.stream("/api/v1/stream/user", Some(&at), &[]).await;
    let s3 = app.say(&bt, "while muted @muter").await;
    app.post(
        &format!("/api/v1/statuses/{s3}/repost"),
        Some(&ct),
        json!({}),
    )
    .await;
    app.say(&ct, "relay marker").await;
    let got = until_marker(&mut a_user, "relay marker", "A's user stream").await;
    assert!(
        got.iter().all(|e| !e.to_string().contains(&b)),
        "muted user on the stream: {got:?}"
    );
    let home = app.timeline_ids("/api/v1/timelines/home", Some(&at)).await;
    assert!(!home.contains(&s3), "{home:?}");

    // Unmute: B's statuses come back, as a follow's backfill brings them.
    assert_eq!(
        set(&app, &at, &b, "mute", false).await,
        json!({"muting": false})
    );
    let home = app.timeline_ids("/api/v1/timelines/home", Some(&at)).await;
    for s in [&s1, &s2, &s3] {
        assert!(home.contains(s), "{s} missing from {home:?}");
    }
    let mentions = app
        .timeline_ids("/api/v1/timelines/mentions", Some(&at))
        .await;
    assert_eq!(mentions, vec![s3.clone(), s2.clone()]);
    let (status, err) = app
        .post(&format!("/api/v1/users/{a}/mute"), Some(&at), json!({}))
        .await;
    assert_error(status, &err, StatusCode::BAD_REQUEST);
}

/// Whether `member` is in `uid`'s `hidden_by` SET (one Redis only).
fn hidden_by(app: &TestApp, uid: &str, member: &str) -> bool {
    let key = format!("{}:user:{{{uid}}}:hidden_by", app.cfg.key_prefix);
    redis::cmd("SISMEMBER")
        .arg(key)
        .arg(member)
        .query(&mut app.redis.conn())
        .unwrap()
}

/// A post reaches the home of every follower but those whose relations
/// hide its author (or the author it reposts). On one Redis it learns who
/// they may be from one SET, `hidden_by`, which relate.lua keeps with the
/// bits; the SET only
/// decides whose relation is read, so an entry it keeps too long keeps no
/// status out.
#[tokio::test]
async fn a_post_skips_the_homes_of_followers_whose_relations_hide_its_author() {
    let app = TestApp::start().await;
    let one = !app.redis.is_cluster();
    let (a, at) = app.user("hidden_author").await;
    let (m, mt) = app.user("muting_follower").await;
    let (f, ft) = app.user("plain_follower").await;
    let (c, ct) = app.user("relaying_friend").await;
    let (b, bt) = app.user("blocking_stranger").await;
    for t in [&mt, &ft] {
        app.follow(t, &a).await;
    }
    app.follow(&mt, &c).await;
    set(&app, &mt, &a, "mute", true).await;
    set(&app, &bt, &a, "block", true).await;
    if one {
        assert!(hidden_by(&app, &a, &m), "a mute enters the muted side");
        assert!(
            hidden_by(&app, &a, &b) && hidden_by(&app, &b, &a),
            "a block, both sides"
        );
        assert!(!hidden_by(&app, &a, &f) && !hidden_by(&app, &m, &a));
    }
    let s1 = app.say(&at, "one").await;
    let r1 = app.repost(&ct, &s1).await;
    let in_home = |uid: &str, sid: &str| home_in_redis(&app, uid).contains(&sid.to_string());
    app.eventually("the fan-out", || async { in_home(&f, &s1) })
        .await;
    assert!(!in_home(&m, &s1), "the muting follower's home");
    assert!(!in_home(&m, &r1), "a repost of the muted author");

    set(&app, &bt, &a, "block", false).await;
    set(&app, &mt, &a, "mute", false).await;
    if one {
        assert!(
            !hidden_by(&app, &a, &b) && !hidden_by(&app, &b, &a),
            "unblocked"
        );
        assert!(!hidden_by(&app, &a, &m), "unmuted");
    }
    let s2 = app.say(&at, "two").await;
    app.eventually("the fan-out", || async {
        in_home(&m, &s2) && in_home(&f, &s2)
    })
    .await;
    if !one {
        return;
    }

    // An entry kept too long: the plain follower's relation is read, and
    // holds nothing.
    let key = |uid: &str| format!("{}:user:{{{uid}}}:hidden_by", app.cfg.key_prefix);
    let _: () = redis::cmd("SADD")
        .arg(key(&a))
        .arg(&f)
        .query(&mut app.redis.conn())
        .unwrap();
    let s3 = app.say(&at, "three").await;
    assert!(in_home(&f, &s3), "a stale entry keeps a status out");

    // A mute set now enters the index at once.
    set(&app, &mt, &a, "mute", true).await;
    assert!(hidden_by(&app, &a, &m), "indexed by the mute");
    let s5 = app.say(&at, "five").await;
    assert!(!in_home(&m, &s5) && in_home(&f, &s5));
}

#[tokio::test]
async fn blocks_and_mutes_stop_at_their_limit_with_a_clear_error() {
    let app = TestApp::start_with(|cfg| {
        cfg.max_blocks = 2;
        cfg.max_mutes = 1;
    })
    .await;
    let (_, at) = app.user("limited").await;
    let mut others = Vec::new();
    for i in 0..3 {
        others.push(app.register(&format!("limit_target_{i}")).await);
    }
    set(&app, &at, &others[0], "block", true).await;
    set(&app, &at, &others[1], "block", true).await;
    // Blocking again someone blocked is no new entry.
    set(&app, &at, &others[1], "block", true).await;
    let (status, err) = app
        .post(
            &format!("/api/v1/users/{}/block", others[2]),
            Some(&at),
            json!({}),
        )
        .await;
    assert_error(status, &err, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(err["error"]["code"], "block_limit");
    set(&app, &at, &others[0], "mute", true).await;
    let (status, err) = app
        .post(
            &format!("/api/v1/users/{}/mute", others[1]),
            Some(&at),
            json!({}),
        )
        .await;
    assert_error(status, &err, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(err["error"]["code"], "mute_limit");
    let (_, blocks) = app.get("/api/v1/blocks", Some(&at)).await;
    assert_eq!(user_ids(&blocks).len(), 2);
    // Lifting one makes room.
    set(&app, &at, &others[0], "block", false).await;
    set(&app, &at, &others[2], "block", true).await;
}

#[tokio::test]
async fn a_block_racing_follows_and_a_fanout_leaves_nothing_of_the_blocker() {
    let app = TestApp::start().await;
    let (a, at) = app.user("race_blocker").await;
    let (b, bt) = app.user("race_blocked").await;
    let (c, ct) = app.user("race_relay").await;
    app.follow(&bt, &a).await;
    app.follow(&bt, &c).await;
    let original = app.say(&at, "to be reposted").await;
    // A posts and C reposts A's status while B keeps asking to follow A
    // and A blocks B.
    let posts = {
        let app_url = app.url("");
        let at = at.clone();
        tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut ids = Vec::new();
            for i in 0..30 {
                let r: Value = http
                    .post(format!("{app_url}/api/v1/statuses"))
                    .bearer_auth(&at)
                    .json(&json!({"message": format!("racing {i}")}))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                ids.push(r["id"].as_str().unwrap().to_string());
            }
            ids
        })
    };
    let follows = {
        let app_url = app.url("");
        let bt = bt.clone();
        let a = a.clone();
        tokio::spawn(async move {
            let http = reqwest::Client::new();
            for _ in 0..30 {
                let _ = http
                    .post(format!("{app_url}/api/v1/users/{a}/follow"))
                    .bearer_auth(&bt)
                    .json(&json!({}))
                    .send()
                    .await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(30)).await;
    set(&app, &at, &b, "block", true).await;
    let (status, _) = app
        .post(
            &format!("/api/v1/statuses/{original}/repost"),
            Some(&ct),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    // Right after the block answered, and after every racer is done:
    // nothing of A's in B's home, and no follow between them.
    let check = |home: Vec<String>, posted: &[String]| {
        assert!(
            !home.contains(&original) && posted.iter().all(|p| !home.contains(p)),
            "A's statuses in B's home: {home:?}"
        );
    };
    let home = app
        .timeline_ids("/api/v1/timelines/home?count=200", Some(&bt))
        .await;
    check(home, &[]);
    let posted = posts.await.unwrap();
    follows.await.unwrap();
    // Every write above ran its whole chain before answering (the
    // homes of so few followers are reached inline).
    let home = app
        .timeline_ids("/api/v1/timelines/home?count=200", Some(&bt))
        .await;
    check(home, &posted);
    assert_eq!(counts(&app, &a).await.0, 0, "B follows A");
    assert_eq!(counts(&app, &b).await.1, 1, "B follows only C");
    let (_, following) = app.get(&format!("/api/v1/users/{b}/following"), None).await;
    assert_eq!(user_ids(&following), vec![c.clone()]);
}

/// Likes and unlikes `sid` as `token` until one is answered with the
/// author's account and the liker's relations from the view cache (its
/// tracking connection open, both HASHes held).
async fn view_cache_warm(app: &TestApp, token: &str, sid: &str) {
    let path = format!("/api/v1/statuses/{sid}/like");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let hits = app.metric("firehose_view_cache_hits_total").await;
        for method in [Method::POST, Method::DELETE] {
            let (status, _) = app.call(method, &path, Some(token), None).await;
            assert_eq!(status, StatusCode::OK);
        }
        if app.metric("firehose_view_cache_hits_total").await >= hits + 2.0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the view cache never answered"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn a_view_cache_whose_invalidations_come_late_still_refuses_a_blocked_like() {
    // A gate holds back what Redis sends the view cache's tracking
    // connection (RESP3), invalidations included, while the server's other
    // connections run freely. Blocks and privacy are written by hand, as
    // another process would: only the invalidation tells this server.
    let (app, gate) = gated_app(|cfg| cfg.home_cache = 0).await;
    let (aid, author) = app.user("keeper").await;
    let (bid, liker) = app.user("fan").await;
    let keys = Keys::new(&app.cfg.key_prefix);
    let hide = keys.hide(bid.parse().unwrap());
    let account = keys.user(aid.parse().unwrap());
    let first = app.say(&author, "warm-up").await;
    let hand = |args: &[&str]| {
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        let _: redis::Value = cmd.query(&mut app.redis.conn()).unwrap();
    };
    let settle = || tokio::time::sleep(Duration::from_millis(150));
    let app = &app;
    let like = |sid: String| {
        let path = format!("/api/v1/statuses/{sid}/like");
        let liker = liker.clone();
        async move { app.call(Method::POST, &path, Some(&liker), None).await.0 }
    };
    let blocked: [&str; 4] = ["HSET", &hide, &aid, "2:1000000"];
    let private: [&str; 4] = ["HSET", &account, "private", "1"];

    // A hit after a change whose invalidation is held back waits for its
    // PING, which comes back behind the invalidation.
    for (round, change) in [blocked, private].iter().enumerate() {
        let sid = app.say(&author, &format!("round {round}")).await;
        view_cache_warm(app, &liker, &first).await;
        gate.close();
        hand(change);
        let (status, _) = tokio::join!(like(sid.clone()), async {
            settle().await;
            gate.open();
        });
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "hit after a change, round {round}"
        );
        hand(&["HDEL", &hide, &aid]);
        hand(&["HSET", &account, "private", "0"]);
        settle().await;
        assert_eq!(like(sid).await, StatusCode::OK, "round {round} undone");
    }

    // A fill overtaken by a change: Redis answers the fill, then the
    // change's invalidation follows in the same batch. The answer may serve
    // the like that asked, but must not stay in the cache.
    let (one, two) = (
        app.say(&author, "overtaken").await,
        app.say(&author, "after").await,
    );
    view_cache_warm(app, &liker, &first).await;
    hand(&["HSET", &hide, "1", "4:1"]); // a mute of no one: the HASH is a miss
    settle().await;
    gate.close();
    let (status, _) = tokio::join!(like(one), async {
        settle().await; // the fill has run at Redis
        hand(&blocked);
        settle().await;
        gate.open();
    });
    assert!(
        status == StatusCode::OK || status == StatusCode::NOT_FOUND,
        "{status}"
    );
    assert_eq!(
        like(two).await,
        StatusCode::NOT_FOUND,
        "after an overtaken fill"
    );
}
