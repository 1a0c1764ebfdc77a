//! Private accounts on every social path: follow requests, replies,
//! statuses and activity no outsider and no public stream sees.

use super::*;

#[tokio::test]
async fn private_statuses_are_404_to_others_on_every_social_path() {
    let app = TestApp::start().await;
    let (owner, ot) = app.user("secretive2").await;
    let (_, stranger) = app.user("stranger").await;
    make_private(&app, &ot).await;
    let sid = app.say(&ot, "for followers #hidden").await;
    for path in [
        format!("/api/v1/statuses/{sid}"),
        format!("/api/v1/statuses/{sid}/liked_by"),
        format!("/api/v1/statuses/{sid}/context"),
    ] {
        let (status, body) = app.get(&path, Some(&stranger)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
    }
    let (status, _) = app
        .post(
            &format!("/api/v1/statuses/{sid}/like"),
            Some(&stranger),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app
        .post(
            "/api/v1/statuses",
            Some(&stranger),
            json!({"message": "a reply", "reply_to": sid}),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "no replying to what one cannot see"
    );
    let (_, tagged) = app
        .get("/api/v1/timelines/tag/hidden", Some(&stranger))
        .await;
    assert_eq!(ids(&tagged), Vec::<String>::new());
    let (_, tagged) = app.get("/api/v1/timelines/tag/hidden", Some(&ot)).await;
    assert_eq!(ids(&tagged), vec![sid.clone()]);
    let (_, trends) = app.get("/api/v1/trends/tags?window=60", None).await;
    assert!(
        !trends.to_string().contains("hidden"),
        "private statuses never trend: {trends}"
    );
    let _ = owner;
}

#[tokio::test]
async fn following_a_private_account_asks_and_its_owner_decides() {
    let app = TestApp::start().await;
    let (owner, ot) = app.user("gatekeeper").await;
    let (asker, at) = app.user("asker").await;
    let (other, xt) = app.user("other_asker").await;
    make_private(&app, &ot).await;
    let secret = app.say(&ot, "approved eyes only").await;
    let mut owner_stream = app.stream("/api/v1/stream/user", Some(&ot), &[]).await;
    let follow = format!("/api/v1/users/{owner}/follow");
    for _ in 0..2 {
        let (status, body) = app.post(&follow, Some(&at), json!({})).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, json!({"following": false, "requested": true}));
    }
    let e = owner_stream.next_event("the follow request").await;
    assert_eq!(
        (e.data["type"].clone(), e.data["source"].clone()),
        (json!("follow_request"), json!(asker))
    );
    app.post(&follow, Some(&xt), json!({})).await;
    let (_, incoming) = app.get("/api/v1/follow_requests", Some(&ot)).await;
    let requesters: Vec<&str> = incoming["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["id"].as_str().unwrap())
        .collect();
    assert_eq!(requesters, vec![asker.as_str(), other.as_str()]);
    let (_, outgoing) = app.get("/api/v1/follow_requests/outgoing", Some(&at)).await;
    assert_eq!(outgoing["users"][0]["id"], json!(owner));
    // Not yet a follower: the status stays hidden.
    assert_eq!(
        app.get(&format!("/api/v1/statuses/{secret}"), Some(&at))
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    let (status, body) = app
        .post(
            &format!("/api/v1/follow_requests/{asker}/authorize"),
            Some(&ot),
            json!({}),
        )
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!({"following": true})));
    assert_eq!(
        app.get(&format!("/api/v1/statuses/{secret}"), Some(&at))
            .await
            .0,
        StatusCode::OK
    );
    assert_eq!(
        app.timeline_ids("/api/v1/timelines/home", Some(&at)).await,
        vec![secret.clone()]
    );
    let (status, _) = app
        .post(
            &format!("/api/v1/follow_requests/{asker}/authorize"),
            Some(&ot),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "no request any more");
    let (status, body) = app
        .post(
            &format!("/api/v1/follow_requests/{other}/reject"),
            Some(&ot),
            json!({}),
        )
        .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"following": false}))
    );
    assert_eq!(
        app.get(&format!("/api/v1/statuses/{secret}"), Some(&xt))
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    // Asking again, then cancelling.
    app.post(&follow, Some(&xt), json!({})).await;
    let (status, body) = app.delete(&follow, Some(&xt)).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::OK,
            json!({"following": false, "requested": false})
        )
    );
    let (_, incoming) = app.get("/api/v1/follow_requests", Some(&ot)).await;
    assert_eq!(incoming["users"], json!([]));
    // Going public approves whoever is waiting.
    app.post(&follow, Some(&xt), json!({})).await;
    let (status, _) = app
        .call(
            Method::PATCH,
            "/api/v1/me",
            Some(&ot),
            Some(json!({"private": false})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, me) = app.get(&format!("/api/v1/users/{owner}"), None).await;
    assert_eq!(me["followers"], 2);
    let (_, incoming) = app.get("/api/v1/follow_requests", Some(&ot)).await;
    assert_eq!(incoming["users"], json!([]));
}

#[tokio::test]
async fn replies_to_a_private_account_reach_only_those_who_may_see_it() {
    let app = TestApp::start().await;
    let (owner, ot) = app.user("private_p").await;
    let (replier, rt) = app.user("replier_r").await;
    let (fan, ft) = app.user("fan_f").await;
    let (_, qt) = app.user("outsider_q").await;
    make_private(&app, &ot).await;
    for (token, id) in [(&rt, &replier), (&ft, &fan)] {
        app.follow(token, &owner).await;
        app.post(
            &format!("/api/v1/follow_requests/{id}/authorize"),
            Some(&ot),
            json!({}),
        )
        .await;
    }
    app.follow(&ft, &replier).await;
    app.follow(&qt, &replier).await;
    let mut sample = app
        .stream("/api/v1/stream/sample?rate=1", Some(&qt), &[])
        .await;
    let root = app.say(&ot, "for approved eyes").await;
    let reply = app
        .post_status(
            &rt,
            json!({"message": "a reply in private", "reply_to": root}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/api/v1/statuses/{reply}");
    assert_eq!(app.get(&path, Some(&ft)).await.0, StatusCode::OK);
    assert_eq!(app.get(&path, Some(&qt)).await.0, StatusCode::NOT_FOUND);
    assert_eq!(app.get(&path, None).await.0, StatusCode::NOT_FOUND);
    assert!(app
        .timeline_ids("/api/v1/timelines/home", Some(&ft))
        .await
        .contains(&reply));
    assert!(!app
        .timeline_ids("/api/v1/timelines/home", Some(&qt))
        .await
        .contains(&reply));
    let (_, ctx) = app
        .get(&format!("/api/v1/statuses/{root}/context"), Some(&ft))
        .await;
    assert_eq!(ids(&ctx["descendants"]), vec![reply.clone()]);
    let (status, _) = app
        .post(&format!("{path}/repost"), Some(&ft), json!({}))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Never on the sample (public) stream: a public status after it arrives first.
    let public = app.say(&qt, "a public status").await;
    let e = sample.next_event("the public status").await;
    assert_eq!(e.data["status"]["id"], json!(public));
}

#[tokio::test]
async fn a_private_accounts_activity_reaches_no_public_stream_and_no_outsider() {
    let app = TestApp::start().await;
    let (owner, ot) = app.user("private_all").await;
    let (fan, ft) = app.user("approved_all").await;
    let (outsider, xt) = app.user("outsider_all").await;
    make_private(&app, &ot).await;
    app.follow(&ft, &owner).await;
    app.post(
        &format!("/api/v1/follow_requests/{fan}/authorize"),
        Some(&ot),
        json!({}),
    )
    .await;
    // The outsider asked too, and was not approved.
    app.follow(&xt, &owner).await;
    let firehose_token = app.operator_token(&outsider, &["read", "firehose"]).await;
    let mut watchers = [
        (
            "firehose",
            app.stream("/api/v1/stream/firehose", Some(&firehose_token), &[])
                .await,
        ),
        (
            "sample",
            app.stream("/api/v1/stream/sample?rate=1", Some(&xt), &[])
                .await,
        ),
        (
            "filter",
            app.stream(
                &format!("/api/v1/stream/filter?follow={owner}&track=secretword"),
                Some(&xt),
                &[],
            )
            .await,
        ),
        (
            "outsider's user stream",
            app.stream("/api/v1/stream/user", Some(&xt), &[]).await,
        ),
    ];
    let mut fan_stream = app.stream("/api/v1/stream/user", Some(&ft), &[]).await;
    // Everything the private account and its approved follower do.
    let sid = app.say(&ot, "secretword #secrettag @outsider_all").await;
    app.post(
        &format!("/api/v1/statuses/{sid}/like"),
        Some(&ft),
        json!({}),
    )
    .await;
    app.post_status(&ft, json!({"message": "secretword reply", "reply_to": sid}))
        .await;
    // The approved follower sees the status and the reply.
    let mut seen = Vec::new();
    for _ in 0..2 {
        let e = fan_stream.next_event("the follower's events").await;
        seen.push(e.data["type"].as_str().unwrap().to_string());
    }
    assert!(seen.iter().all(|t| t == "status"), "{seen:?}");
    // A public status afterwards is the first thing every public watcher
    // gets: nothing private came before it.
    let marker = app.say(&xt, "public marker secretword").await;
    for (name, stream) in watchers.iter_mut() {
        if *name == "outsider's user stream" {
            let e = stream.next_event("the outsider's own status").await;
            assert_eq!(e.data["status"]["id"], json!(marker), "{name}");
            continue;
        }
        if *name == "filter" {
            let e = stream.next_event("the marker").await;
            assert_eq!(e.data["status"]["id"], json!(marker), "{name}");
            continue;
        }
        loop {
            let e = stream.next_event("the marker").await;
            let t = e.data["type"].as_str().unwrap_or("");
            // Sign-ups and follows are public events on the firehose.
            if t == "status" {
                assert_eq!(
                    e.data["status"]["id"],
                    json!(marker),
                    "{name} got {}",
                    e.data
                );
                break;
            }
            assert!(
                !e.data.to_string().contains("secretword"),
                "{name} leaked {}",
                e.data
            );
        }
    }
    // No mention of the outsider, no hashtag or trend for anyone outside.
    let (_, mentions) = app.get("/api/v1/timelines/mentions", Some(&xt)).await;
    assert_eq!(ids(&mentions), Vec::<String>::new());
    let (_, tagged) = app.get("/api/v1/timelines/tag/secrettag", Some(&xt)).await;
    assert_eq!(ids(&tagged), Vec::<String>::new());
    let (_, liked) = app
        .get(&format!("/api/v1/users/{fan}/likes"), Some(&xt))
        .await;
    assert_eq!(ids(&liked), Vec::<String>::new());
    let (_, liked) = app
        .get(&format!("/api/v1/users/{fan}/likes"), Some(&ft))
        .await;
    assert_eq!(ids(&liked), vec![sid.clone()]);
}
