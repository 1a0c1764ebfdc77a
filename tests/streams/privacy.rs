//! What may be seen now: replays judged with the reader's present rights,
//! deletes that reach every stream that delivered the status, and replies
//! to a private account's status kept to those who may see it.

use super::*;
use reqwest::Method;

/// The events a stream replays (then quiet): (type, status id or message id).
async fn replayed(app: &TestApp, path: &str, token: &str, ndjson: bool) -> Vec<(String, String)> {
    let headers: &[(&str, &str)] = if ndjson {
        &[("accept", "application/x-ndjson")]
    } else {
        &[]
    };
    let mut s = app.stream(path, Some(token), headers).await;
    assert_eq!(s.status, StatusCode::OK, "{path}: {}", s.body);
    let mut out = Vec::new();
    while let Some(m) = s.next_within(SHORT).await {
        let id = m.data["status"]["id"]
            .as_str()
            .or(m.data["status_id"].as_str())
            .or(m.data["message"]["id"].as_str())
            .unwrap_or("")
            .to_string();
        out.push((m.event.clone(), id));
    }
    out
}

fn statuses(events: &[(String, String)]) -> Vec<&str> {
    events
        .iter()
        .filter(|(kind, _)| kind == "status")
        .map(|(_, id)| id.as_str())
        .collect()
}

pub(crate) async fn patch(app: &TestApp, token: &str, body: Value) {
    let (status, body) = app
        .call(Method::PATCH, "/api/v1/me", Some(token), Some(body))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn a_replay_serves_no_status_deleted_since_nor_of_an_author_gone_or_private() {
    let app = TestApp::start().await;
    let (_, alice) = app.user("alice").await;
    let (_, dave) = app.user("dave").await;
    let (_, bob) = app.user("bob").await;
    let kept = app
        .post_status(
            &alice,
            json!({"message": "zebra one", "lat": 48.85, "lon": 2.35}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let deleted = app.say(&alice, "zebra two").await;
    let daves = app.say(&dave, "zebra three").await;
    let (status, _) = app
        .delete(&format!("/api/v1/statuses/{deleted}"), Some(&alice))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = app
        .call(
            Method::DELETE,
            "/api/v1/me",
            Some(&dave),
            Some(json!({"password": "password123"})),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    let paths = [
        "/api/v1/stream/filter?track=zebra&count=100",
        "/api/v1/stream/filter?track=zebra&since=0",
        "/api/v1/stream/filter?locations=-180,-90,180,90&count=100",
    ];
    for path in paths {
        for ndjson in [false, true] {
            let events = replayed(&app, path, &bob, ndjson).await;
            assert_eq!(statuses(&events), vec![kept.as_str()], "{path}: {events:?}");
        }
    }
    let events = replayed(
        &app,
        "/api/v1/stream/filter?track=zebra&count=100",
        &bob,
        false,
    )
    .await;
    assert!(
        events.iter().any(|(k, id)| k == "delete" && *id == deleted),
        "the delete itself may be replayed: {events:?}"
    );
    assert!(!statuses(&events).contains(&daves.as_str()));

    // Gone private: nothing of theirs is replayed on a filter stream.
    patch(&app, &alice, json!({"private": true})).await;
    for path in paths {
        let events = replayed(&app, path, &bob, false).await;
        assert!(statuses(&events).is_empty(), "{path}: {events:?}");
    }
}

#[tokio::test]
async fn a_participant_who_left_a_conversation_gets_none_of_its_messages_by_replay() {
    let app = TestApp::start().await;
    let (_, ann) = app.user("ann").await;
    let (bid, bea) = app.user("bea").await;
    let (cid_user, _) = app.user("cal").await;
    let (status, conv) = app
        .post(
            "/api/v1/conversations",
            Some(&ann),
            json!({"participants": [bid, cid_user], "text": "secret plans", "title": "plans"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{conv}");
    let cid = conv["id"].as_str().unwrap().to_string();
    let before = replayed(&app, "/api/v1/stream/user?count=100", &bea, false).await;
    assert!(
        before.iter().any(|(k, _)| k == "direct_message"),
        "a participant replays the message: {before:?}"
    );
    let (status, _) = app
        .post(
            &format!("/api/v1/conversations/{cid}/leave"),
            Some(&bea),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    for path in [
        "/api/v1/stream/user?count=100",
        "/api/v1/stream/user?since=0",
    ] {
        let after = replayed(&app, path, &bea, true).await;
        assert!(
            !after.iter().any(|(k, _)| k == "direct_message"),
            "{path}: {after:?}"
        );
    }
}

#[tokio::test]
async fn a_reply_to_a_private_status_reaches_no_one_who_may_not_see_that_status() {
    let app = TestApp::start().await;
    let (pid, pat) = app.user("pat").await;
    let (bid, ben) = app.user("ben").await;
    let (_, cid_token) = app.user("cyd").await;
    patch(&app, &pat, json!({"private": true})).await;
    // Ben asks, Pat approves; Cyd follows Ben only.
    let (status, _) = app
        .post(
            &format!("/api/v1/users/{pid}/follow"),
            Some(&ben),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app
        .post(
            &format!("/api/v1/follow_requests/{bid}/authorize"),
            Some(&pat),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    app.follow(&cid_token, &bid).await;
    let secret = app.say(&pat, "for followers").await;

    let mut live = app
        .stream("/api/v1/stream/user", Some(&cid_token), &[])
        .await;
    let mut bens = app.stream("/api/v1/stream/user", Some(&ben), &[]).await;
    let reply = app
        .post_status(&ben, json!({"message": "agreed", "reply_to": secret}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let public = app.say(&ben, "something public").await;

    let got = bens.next_event("ben's own reply").await;
    assert_eq!(got.data["status"]["id"], reply.as_str());
    let got = live.next_event("ben's public status").await;
    assert_eq!(
        got.data["status"]["id"],
        public.as_str(),
        "the reply came first on a user stream of a non-follower of pat"
    );

    let (status, _) = app
        .get(&format!("/api/v1/statuses/{reply}"), Some(&cid_token))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let profile = app
        .timeline_ids(&format!("/api/v1/users/{bid}/statuses"), Some(&cid_token))
        .await;
    assert!(
        !profile.contains(&reply),
        "profile shows the reply: {profile:?}"
    );
    assert!(profile.contains(&public));
    let own = app
        .timeline_ids(&format!("/api/v1/users/{bid}/statuses"), Some(&ben))
        .await;
    assert!(own.contains(&reply));
    for path in [
        "/api/v1/stream/user?count=100",
        "/api/v1/stream/user?since=0",
    ] {
        let events = replayed(&app, path, &cid_token, false).await;
        assert!(
            !events.iter().any(|(_, id)| *id == reply),
            "{path}: {events:?}"
        );
        assert!(statuses(&events).contains(&public.as_str()), "{events:?}");
    }
}

#[tokio::test]
async fn track_and_location_streams_get_the_delete_of_a_status_they_delivered() {
    let app = TestApp::start().await;
    let (_, amy) = app.user("amy").await;
    let (_, reader) = app.user("reader").await;
    for ndjson in [false, true] {
        let headers: &[(&str, &str)] = if ndjson {
            &[("accept", "application/x-ndjson")]
        } else {
            &[]
        };
        let mut track = app
            .stream("/api/v1/stream/filter?track=quokka", Some(&reader), headers)
            .await;
        let mut boxed = app
            .stream(
                "/api/v1/stream/filter?locations=0,40,10,50",
                Some(&reader),
                headers,
            )
            .await;
        let sid = app
            .post_status(
                &amy,
                json!({"message": "a quokka", "lat": 45.0, "lon": 5.0}),
            )
            .await["id"]
            .as_str()
            .unwrap()
            .to_string();
        for s in [&mut track, &mut boxed] {
            let m = s.next_event("status").await;
            assert_eq!(m.data["status"]["id"], sid.as_str());
        }
        let (status, _) = app
            .delete(&format!("/api/v1/statuses/{sid}"), Some(&amy))
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        for s in [&mut track, &mut boxed] {
            let m = s.next_event("delete").await;
            assert_eq!(m.event, "delete");
            assert_eq!(m.data["status_id"], sid.as_str());
        }
    }
}

#[tokio::test]
async fn an_account_deletion_sends_its_deletes_to_followers_and_track_streams() {
    let app = TestApp::start().await;
    let (gid, gus) = app.user("gus").await;
    let (_, fan) = app.user("fan").await;
    app.follow(&fan, &gid).await;
    let sid = app.say(&gus, "walrus news").await;
    let mut user = app.stream("/api/v1/stream/user", Some(&fan), &[]).await;
    let mut track = app
        .stream("/api/v1/stream/filter?track=walrus", Some(&fan), &[])
        .await;
    let (status, _) = app
        .call(
            Method::DELETE,
            "/api/v1/me",
            Some(&gus),
            Some(json!({"password": "password123"})),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let mut user_events = Vec::new();
    while let Some(m) = user.next_within(Duration::from_secs(3)).await {
        user_events.push((m.event.clone(), m.data["status_id"].clone()));
        if m.event == "delete" {
            break;
        }
    }
    assert!(
        user_events
            .iter()
            .any(|(k, id)| k == "delete" && *id == json!(sid)),
        "the follower's user stream: {user_events:?}"
    );
    let m = track.next_event("delete").await;
    assert_eq!(m.event, "delete");
    assert_eq!(m.data["status_id"], sid.as_str());
}
