//! What may be seen now, second pass: an `update` (and every other event
//! that carries a status) replayed only while its status may be seen, on
//! every stream kind and transport; a reply judged by its parent's author
//! as they are now; a refresh that applies the new token's scopes.

use super::privacy::patch;
use super::*;
use reqwest::Method;

/// How a replay is read.
#[derive(Debug, Clone, Copy)]
enum Via {
    Sse,
    Ndjson,
    /// The stream path upgraded to a WebSocket.
    Ws,
    /// The multiplexed socket, with a `subscribe` message.
    Mux,
}

const ALL_VIAS: [Via; 4] = [Via::Sse, Via::Ndjson, Via::Ws, Via::Mux];

/// The status id an event names (a status's, an update's, a delete's).
fn named(v: &Value) -> String {
    v["status"]["id"]
        .as_str()
        .or(v["status_id"].as_str())
        .unwrap_or("")
        .to_string()
}

/// What a WebSocket sends until it has been quiet for a moment: (type,
/// status id) of each event.
async fn ws_drain(ws: &mut common::Ws) -> Vec<(String, String)> {
    let mut out = Vec::new();
    while let Ok(Some(Ok(msg))) = tokio::time::timeout(SHORT, ws.next()).await {
        if let WsMessage::Text(t) = msg {
            let v: Value = serde_json::from_str(t.as_str()).unwrap();
            let kind = v["type"].as_str().unwrap_or("").to_string();
            if kind != "position" && !common::is_notification(&v) {
                out.push((kind, named(&v)));
            }
        }
    }
    out
}

/// The events a stream replays (then quiet), read `via`: `path` for the
/// stream paths, `sub` for the multiplexed socket.
async fn replay(
    app: &TestApp,
    via: Via,
    path: &str,
    sub: &Value,
    token: &str,
) -> Vec<(String, String)> {
    match via {
        Via::Sse | Via::Ndjson => {
            let headers: &[(&str, &str)] = match via {
                Via::Ndjson => &[("accept", "application/x-ndjson")],
                _ => &[],
            };
            let mut s = app.stream(path, Some(token), headers).await;
            assert_eq!(s.status, StatusCode::OK, "{path}: {}", s.body);
            let mut out = Vec::new();
            while let Some(m) = s.next_within(SHORT).await {
                out.push((m.event.clone(), named(&m.data)));
            }
            out
        }
        Via::Ws => {
            let mut ws = ws_connect(app, path, token).await;
            ws_drain(&mut ws).await
        }
        Via::Mux => {
            let mut ws = ws_connect(app, "/api/v1/stream", token).await;
            ws_send(&mut ws, sub.clone()).await;
            let got = ws_drain(&mut ws).await;
            assert!(got.iter().any(|(k, _)| k == "subscribed"), "{sub}: {got:?}");
            got
        }
    }
}

/// Of `events`, the ids of `kind` events among `ids`.
fn of_kind<'a>(events: &'a [(String, String)], kind: &str, ids: &[&str]) -> Vec<&'a str> {
    events
        .iter()
        .filter(|(k, id)| k == kind && ids.contains(&id.as_str()))
        .map(|(_, id)| id.as_str())
        .collect()
}

/// Posts `message` (geotagged) as `token` and edits it; its id.
async fn posted_and_edited(app: &TestApp, token: &str, message: &str) -> String {
    let sid = app
        .post_status(token, json!({"message": message, "lat": 10.0, "lon": 20.0}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, body) = app
        .call(
            Method::PATCH,
            &format!("/api/v1/statuses/{sid}"),
            Some(token),
            Some(json!({"message": format!("{message} edited")})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    sid
}

#[tokio::test]
async fn an_update_is_replayed_only_while_its_status_may_be_seen_on_every_stream() {
    let app = TestApp::start().await;
    let (alice_id, alice) = app.user("alice").await;
    let (carol_id, carol) = app.user("carol").await;
    let (dave_id, dave) = app.user("dave").await;
    let (erin_id, erin) = app.user("erin").await;
    let (_, bob, fh) = firehose_user(&app, "bob").await;
    // Bob's kept rule, and his list of the four authors.
    let (status, body) = app
        .post(
            "/api/v1/stream/rules",
            Some(&bob),
            json!({"add": [{"value": "quokka"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (_, list) = app
        .post("/api/v1/lists", Some(&bob), json!({"title": "authors"}))
        .await;
    let lid = list["id"].as_str().unwrap().to_string();
    let members = [&alice_id, &carol_id, &dave_id, &erin_id];
    let (status, body) = app
        .post(
            &format!("/api/v1/lists/{lid}/members"),
            Some(&bob),
            json!({ "ids": members }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let deleted = posted_and_edited(&app, &alice, "quokka deleted later").await;
    let private = posted_and_edited(&app, &carol, "quokka private later").await;
    let gone = posted_and_edited(&app, &dave, "quokka author gone later").await;
    let kept = posted_and_edited(&app, &erin, "quokka kept").await;
    let hidden = [deleted.as_str(), private.as_str(), gone.as_str()];

    let follow = members
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let rules = "%5B%22quokka%22%5D";
    let streams: Vec<(String, Value, &str)> = vec![
        (
            "/api/v1/stream/firehose?count=1000".into(),
            json!({"type": "subscribe", "stream": "firehose", "count": 1000}),
            fh.as_str(),
        ),
        (
            "/api/v1/stream/sample?rate=1&since=0".into(),
            json!({"type": "subscribe", "stream": "sample", "rate": 1, "since": 0}),
            bob.as_str(),
        ),
        (
            "/api/v1/stream/filter?track=quokka&count=1000".into(),
            json!({"type": "subscribe", "stream": "filter", "track": ["quokka"], "count": 1000}),
            bob.as_str(),
        ),
        (
            format!("/api/v1/stream/filter?follow={follow}&since=0"),
            json!({"type": "subscribe", "stream": "filter", "follow": members, "since": 0}),
            bob.as_str(),
        ),
        (
            "/api/v1/stream/filter?locations=-180,-90,180,90&count=1000".into(),
            json!({"type": "subscribe", "stream": "filter", "locations": [[-180, -90, 180, 90]], "count": 1000}),
            bob.as_str(),
        ),
        (
            format!("/api/v1/stream/filter?rules={rules}&since=0"),
            json!({"type": "subscribe", "stream": "filter", "rules": ["quokka"], "since": 0}),
            bob.as_str(),
        ),
        (
            "/api/v1/stream/search?count=1000".into(),
            json!({"type": "subscribe", "stream": "search", "count": 1000}),
            bob.as_str(),
        ),
        (
            format!("/api/v1/stream/list?id={lid}&since=0"),
            json!({"type": "subscribe", "stream": "list", "list": lid, "count": 1000}),
            bob.as_str(),
        ),
    ];
    // Before: every stream replays each update (the positive control).
    for (path, sub, token) in &streams {
        let events = replay(&app, Via::Sse, path, sub, token).await;
        let mut updates = of_kind(&events, "update", &hidden);
        updates.sort();
        let mut want = hidden.to_vec();
        want.sort();
        assert_eq!(updates, want, "{path}: {events:?}");
    }

    // Deleted; author made private; account deleted.
    let (status, _) = app
        .delete(&format!("/api/v1/statuses/{deleted}"), Some(&alice))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    patch(&app, &carol, json!({"private": true})).await;
    let (status, _) = app
        .call(
            Method::DELETE,
            "/api/v1/me",
            Some(&dave),
            Some(json!({"password": "password123"})),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    for (path, sub, token) in &streams {
        for via in ALL_VIAS {
            let events = replay(&app, via, path, sub, token).await;
            for kind in ["status", "update"] {
                assert!(
                    of_kind(&events, kind, &hidden).is_empty(),
                    "{via:?} {path}: a {kind} of a status that may not be seen now: {events:?}"
                );
            }
            // The control: what may still be seen still comes.
            assert_eq!(
                of_kind(&events, "update", &[kept.as_str()]),
                vec![kept.as_str()],
                "{via:?} {path}: {events:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_reply_to_an_account_made_private_since_is_for_those_who_may_see_it() {
    let app = TestApp::start().await;
    let (alice_id, alice) = app.user("alice").await;
    let (bob_id, bob) = app.user("bob").await;
    let (_, frank) = app.user("frank").await;
    let (_, eve, eve_fh) = firehose_user(&app, "eve").await;
    app.follow(&frank, &alice_id).await;
    let parent = app.say(&alice, "a public thought").await;
    let reply = app
        .post_status(
            &bob,
            json!({"message": "wombat agrees", "reply_to": parent}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let track = "/api/v1/stream/filter?track=wombat&since=0";
    let profile = format!("/api/v1/users/{bob_id}/statuses");

    // Before: the stranger reads the reply everywhere (the control).
    let (status, _) = app
        .get(&format!("/api/v1/statuses/{reply}"), Some(&eve))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(app
        .timeline_ids(&profile, Some(&eve))
        .await
        .contains(&reply));
    let events = replay(&app, Via::Sse, track, &Value::Null, &eve).await;
    assert_eq!(
        of_kind(&events, "status", &[reply.as_str()]),
        vec![reply.as_str()]
    );

    patch(&app, &alice, json!({"private": true})).await;
    // A stranger: the parent and the reply are 404 alike, on every path.
    for sid in [&parent, &reply] {
        let (status, _) = app
            .get(&format!("/api/v1/statuses/{sid}"), Some(&eve))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{sid}");
    }
    assert!(!app
        .timeline_ids(&profile, Some(&eve))
        .await
        .contains(&reply));
    let (status, _) = app
        .get(&format!("/api/v1/statuses/{reply}/context"), Some(&eve))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let follow = format!("/api/v1/stream/filter?follow={bob_id}&count=100");
    for (path, token) in [
        (track, eve.as_str()),
        (follow.as_str(), eve.as_str()),
        ("/api/v1/stream/firehose?since=0", eve_fh.as_str()),
        ("/api/v1/stream/sample?rate=1&count=100", eve.as_str()),
        // The approved follower's public streams never carry it either.
        (track, frank.as_str()),
    ] {
        for via in [Via::Sse, Via::Ndjson, Via::Ws] {
            let events = replay(&app, via, path, &Value::Null, token).await;
            assert!(
                of_kind(&events, "status", &[reply.as_str()]).is_empty(),
                "{via:?} {path}: {events:?}"
            );
        }
    }
    for token in [&eve, &frank] {
        app.eventually("the history holds the reply", || async {
            let (_, h) = app.get("/api/v1/history", Some(&alice)).await;
            h["events"].as_u64().unwrap_or(0) >= 3
        })
        .await;
        let (_, found) = app
            .get("/api/v1/history/search?query=wombat", Some(token))
            .await;
        assert_eq!(found["statuses"], json!([]), "{found}");
        let (_, counts) = app
            .get(
                &format!("/api/v1/history/counts?query=to:{alice_id}"),
                Some(token),
            )
            .await;
        assert_eq!(counts["total"], 0, "{counts}");
    }
    // The approved follower reads it where followers' statuses show.
    let (status, _) = app
        .get(&format!("/api/v1/statuses/{reply}"), Some(&frank))
        .await;
    assert_eq!(status, StatusCode::OK);

    // Live: its edit now reaches no public stream, not even the follower's.
    let mut live_frank = app
        .stream("/api/v1/stream/filter?track=wombat", Some(&frank), &[])
        .await;
    let mut live_fh = app
        .stream("/api/v1/stream/firehose", Some(&eve_fh), &[])
        .await;
    let (status, body) = app
        .call(
            Method::PATCH,
            &format!("/api/v1/statuses/{reply}"),
            Some(&bob),
            Some(json!({"message": "wombat agrees, edited"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let control = app.say(&bob, "wombat control").await;
    for live in [&mut live_frank, &mut live_fh] {
        loop {
            let m = live.next_event("the control status").await;
            assert_ne!(named(&m.data), reply, "{:?}", m.data);
            if named(&m.data) == control {
                break;
            }
        }
    }
    // Nor may it be reposted now.
    let (status, _) = app
        .post(
            &format!("/api/v1/statuses/{reply}/repost"),
            Some(&frank),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_refresh_applies_the_new_tokens_scopes_to_every_subscription() {
    let app = TestApp::start().await;
    let (uid, _, fh) = firehose_user(&app, "tailer").await;
    let plain = app.operator_token(&uid, &["read", "write"]).await;
    // The multiplexed socket: the firehose ends with an error, the user
    // stream lives on.
    let mut mux = ws_connect(&app, "/api/v1/stream", &fh).await;
    for stream in ["firehose", "user"] {
        ws_send(&mut mux, json!({"type": "subscribe", "stream": stream})).await;
        assert_eq!(ws_next(&mut mux).await["type"], "subscribed");
    }
    ws_send(&mut mux, json!({"type": "refresh", "token": plain})).await;
    assert_eq!(ws_next(&mut mux).await["type"], "refreshed");
    let e = ws_next(&mut mux).await;
    assert_eq!(
        (e["type"].as_str(), e["code"].as_str(), e["stream"].as_str()),
        (Some("error"), Some("forbidden"), Some("firehose")),
        "{e}"
    );
    let sid = app.say(&plain, "after the refresh").await;
    let v = ws_next(&mut mux).await;
    assert_eq!(
        (v["stream"].as_str(), named(&v)),
        (Some("user"), sid.clone()),
        "only the user stream is left: {v}"
    );
    // The firehose path upgraded: nothing is left, so the socket ends.
    let mut path = ws_connect(&app, "/api/v1/stream/firehose", &fh).await;
    ws_send(&mut path, json!({"type": "refresh", "token": plain})).await;
    let d = ws_next(&mut path).await;
    assert_eq!(
        (d["type"].as_str(), d["code"].as_str()),
        (Some("disconnect"), Some("forbidden")),
        "{d}"
    );
    // A token that is not a string is answered, on either socket.
    let mut path = ws_connect(&app, "/api/v1/stream/user", &plain).await;
    for ws in [&mut mux, &mut path] {
        ws_send(ws, json!({"type": "refresh", "token": 123})).await;
        let e = ws_next(ws).await;
        assert_eq!(
            (e["type"].as_str(), e["code"].as_str()),
            (Some("error"), Some("invalid_token")),
            "{e}"
        );
    }
    // A refresh to a token that keeps the scope keeps the firehose.
    let mut mux = ws_connect(&app, "/api/v1/stream", &fh).await;
    ws_send(&mut mux, json!({"type": "subscribe", "stream": "firehose"})).await;
    assert_eq!(ws_next(&mut mux).await["type"], "subscribed");
    let fh2 = app
        .operator_token(&uid, &["read", "write", "firehose"])
        .await;
    ws_send(&mut mux, json!({"type": "refresh", "token": fh2})).await;
    assert_eq!(ws_next(&mut mux).await["type"], "refreshed");
    let sid = app.say(&plain, "still the firehose").await;
    let v = ws_next(&mut mux).await;
    assert_eq!((v["stream"].as_str(), named(&v)), (Some("firehose"), sid));
}

/// The (type, status id) of what a user stream replays, notifications
/// included (a notification by the status it is about).
async fn user_replay(app: &TestApp, token: &str, ndjson: bool) -> Vec<(String, String)> {
    let headers: &[(&str, &str)] = if ndjson {
        &[("accept", "application/x-ndjson")]
    } else {
        &[]
    };
    let mut s = app
        .stream("/api/v1/stream/user?since=0", Some(token), headers)
        .await
        .with_notifications();
    let mut out = Vec::new();
    while let Some(m) = s.next_within(SHORT).await {
        let id = match m.event.as_str() {
            "notification" => m.data["notification"]["status"]["id"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            _ => named(&m.data),
        };
        out.push((m.event.clone(), id));
    }
    out
}

#[tokio::test]
async fn likes_reposts_and_notifications_are_replayed_by_their_status_now() {
    let app = TestApp::start().await;
    let (_, dan) = app.user("dan").await;
    let (eve_id, eve) = app.user("eve").await;
    app.follow(&dan, &eve_id).await;
    let sid = app.say(&dan, "a status to like").await;
    let (status, _) = app
        .post(
            &format!("/api/v1/statuses/{sid}/like"),
            Some(&eve),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let repost = app.repost(&eve, &sid).await;
    app.eventually("dan's notifications", || async {
        let (_, n) = app.get("/api/v1/notifications", Some(&dan)).await;
        n["notifications"].as_array().map_or(0, Vec::len) >= 2
    })
    .await;
    // Before: the like, the repost and their notifications come back.
    let before = user_replay(&app, &dan, false).await;
    for kind in ["like", "repost", "notification"] {
        assert!(
            before
                .iter()
                .any(|(k, id)| k == kind && (*id == sid || *id == repost)),
            "{kind}: {before:?}"
        );
    }
    let (status, _) = app
        .delete(&format!("/api/v1/statuses/{sid}"), Some(&dan))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    for ndjson in [false, true] {
        let after = user_replay(&app, &dan, ndjson).await;
        for kind in ["like", "repost", "notification", "status"] {
            assert!(
                !after
                    .iter()
                    .any(|(k, id)| k == kind && (*id == sid || *id == repost)),
                "{kind} of a deleted status replayed: {after:?}"
            );
        }
        assert!(
            after.iter().any(|(k, id)| k == "delete" && *id == sid),
            "{after:?}"
        );
    }
}
