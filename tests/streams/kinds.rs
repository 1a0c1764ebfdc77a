//! Each kind of stream and what it carries: the firehose, filter, sample and
//! user streams, NDJSON, private statuses, bursts and batches in order.

use super::*;

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
            uid: firehose::model::Id(a),
            private: false,
            group_id: None,
        })
    };
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix)
        .with_log_shards(app.cfg.log_shards as usize);
    // One shard's call, as the emitter makes it (here with events that
    // would go to several: the script takes what it is given).
    let (script, publish) = common::emit_script();
    let k = 5;
    let emit = || {
        let mut call = script.prepare_invoke();
        call.key(keys.log_emitted(k))
            .key(keys.log_events(k))
            .arg("~1000")
            .arg(keys.log_channel(k))
            .arg(publish)
            .arg(k)
            .arg("")
            .arg(9_000_001u64)
            .arg(1)
            .arg(delete(&one).json)
            .arg(9_000_033u64)
            .arg(2)
            .arg(
                body(firehose::model::Event::Follow {
                    at,
                    source: firehose::model::Id(a),
                    target: firehose::model::Id(b),
                })
                .json,
            )
            .arg(delete(&two).json);
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
        call.key(keys.log_emitted(k))
            .key(keys.log_events(k))
            .arg("~1000")
            .arg(keys.log_channel(k))
            .arg(publish)
            .arg(k)
            .arg("");
        for op in [9_000_001u64, 9_000_065, 9_000_065] {
            call.arg(op).arg(1).arg(delete(&one).json);
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
    let (emit, publish) = common::emit_script();
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix)
        .with_log_shards(app.cfg.log_shards as usize);
    let k = 7;
    let one = |b: &str| {
        let mut call = emit.prepare_invoke();
        call.key(keys.log_emitted(k))
            .key(keys.log_events(k))
            .arg(format!("~{}", app.cfg.replay_maxlen))
            .arg(keys.log_channel(k))
            .arg(publish)
            .arg(k)
            .arg("")
            .arg("-")
            .arg(1)
            .arg(b);
        let _: Vec<String> = call.invoke(&mut app.redis.conn()).unwrap();
    };
    one(&json!({"type": "ping", "at": -1}).to_string());
    // Sent together in one pipeline (one shard, so one node, on a cluster
    // too): Redis publishes them in this order.
    let mut pipe = redis::pipe();
    for b in &bodies {
        pipe.cmd("EVALSHA")
            .arg(emit.get_hash())
            .arg(2)
            .arg(keys.log_emitted(k))
            .arg(keys.log_events(k))
            .arg(format!("~{}", app.cfg.replay_maxlen))
            .arg(keys.log_channel(k))
            .arg(publish)
            .arg(k)
            .arg("")
            .arg("-")
            .arg(1)
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
