//! Replies, conversations and reposts: counted once, fanned out, undone.

use super::*;

#[tokio::test]
async fn replies_are_counted_and_conversations_read_in_order() {
    let app = TestApp::start().await;
    let (_, at) = app.user("root_author").await;
    let (_, bt) = app.user("replier").await;
    let root = app.say(&at, "what do you think?").await;
    let reply = |token: String, to: String, message: &'static str| {
        let app = &app;
        async move {
            app.post_status(&token, json!({"message": message, "reply_to": to}))
                .await["id"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    let b = reply(bt.clone(), root.clone(), "I agree").await;
    let c = reply(at.clone(), b.clone(), "thanks").await;
    let d = reply(bt.clone(), root.clone(), "also this").await;
    let (_, status) = app.get(&format!("/api/v1/statuses/{root}"), None).await;
    assert_eq!(status["replies"], 2);
    let (_, ctx) = app
        .get(&format!("/api/v1/statuses/{c}/context"), None)
        .await;
    assert_eq!(ids(&ctx["ancestors"]), vec![root.clone(), b.clone()]);
    assert_eq!(ids(&ctx["descendants"]), Vec::<String>::new());
    let (_, ctx) = app
        .get(&format!("/api/v1/statuses/{root}/context"), None)
        .await;
    assert_eq!(ids(&ctx["ancestors"]), Vec::<String>::new());
    assert_eq!(
        ids(&ctx["descendants"]),
        vec![b.clone(), c.clone(), d.clone()]
    );
    let (_, page) = app
        .get(&format!("/api/v1/statuses/{root}/context?count=2"), None)
        .await;
    assert_eq!(ids(&page["descendants"]), vec![b.clone(), c.clone()]);
    let cursor = page["next_cursor"].as_str().unwrap().to_string();
    let (_, page) = app
        .get(
            &format!("/api/v1/statuses/{root}/context?count=2&cursor={cursor}"),
            None,
        )
        .await;
    assert_eq!(ids(&page["descendants"]), vec![d.clone()]);
    // A reply whose parent is gone: the count drops and its context stops.
    app.delete(&format!("/api/v1/statuses/{b}"), Some(&bt))
        .await;
    let (_, status) = app.get(&format!("/api/v1/statuses/{root}"), None).await;
    assert_eq!(status["replies"], 1);
    let (_, ctx) = app
        .get(&format!("/api/v1/statuses/{c}/context"), None)
        .await;
    assert_eq!(ids(&ctx["ancestors"]), Vec::<String>::new());
    assert_eq!(
        ctx["parent_missing"], true,
        "the conversation says the parent is gone"
    );
    let (_, ctx) = app
        .get(&format!("/api/v1/statuses/{root}/context"), None)
        .await;
    assert_eq!(ctx["parent_missing"], false);
    let (_, gone) = app.get(&format!("/api/v1/statuses/{b}"), None).await;
    assert_eq!(gone["error"]["code"], "not_found");
}

#[tokio::test]
async fn reposts_are_once_per_user_counted_fanned_out_and_undone() {
    let app = TestApp::start().await;
    let (author, at) = app.user("original").await;
    let (reposter, rt) = app.user("amplifier").await;
    let (_, ft) = app.user("follower_r").await;
    app.follow(&ft, &reposter).await;
    let sid = app.say(&at, "worth sharing").await;
    let mut author_stream = app.stream("/api/v1/stream/user", Some(&at), &[]).await;
    let mut follower_stream = app.stream("/api/v1/stream/user", Some(&ft), &[]).await;
    let mut by_author = app
        .stream(
            &format!("/api/v1/stream/filter?follow={author}"),
            Some(&ft),
            &[],
        )
        .await;
    let path = format!("/api/v1/statuses/{sid}/repost");
    let (status, repost) = app.post(&path, Some(&rt), json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{repost}");
    assert_eq!(repost["repost_of"], json!(sid));
    assert_eq!(repost["uid"], json!(reposter));
    let (status, again) = app.post(&path, Some(&rt), json!({})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again["id"], repost["id"], "once per user");
    let (_, original) = app.get(&format!("/api/v1/statuses/{sid}"), None).await;
    assert_eq!(original["reposts"], 1);
    let e = author_stream.next_event("the repost event").await;
    assert_eq!(
        (e.data["type"].clone(), e.data["status"]["id"].clone()),
        (json!("repost"), repost["id"].clone())
    );
    let e = follower_stream
        .next_event("the repost in the follower's stream")
        .await;
    assert_eq!(
        (
            e.data["type"].clone(),
            e.data["status"]["repost_of"].clone()
        ),
        (json!("status"), json!(sid))
    );
    let e = by_author
        .next_event("follow matches reposts of the followed user")
        .await;
    assert_eq!(e.data["status"]["id"], repost["id"]);
    let home = app.timeline_ids("/api/v1/timelines/home", Some(&ft)).await;
    assert_eq!(home, vec![repost["id"].as_str().unwrap().to_string()]);
    // Undo, twice: idempotent; the repost leaves the follower's home.
    for _ in 0..2 {
        let (status, body) = app.delete(&path, Some(&rt)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, json!({"reposted": false, "reposts": 0}));
    }
    app.eventually("the repost left the home", || async {
        app.timeline_ids("/api/v1/timelines/home", Some(&ft))
            .await
            .is_empty()
    })
    .await;
    // Reposting again, then the original is deleted: the repost goes too.
    let (_, second) = app.post(&path, Some(&rt), json!({})).await;
    app.delete(&format!("/api/v1/statuses/{sid}"), Some(&at))
        .await;
    let (status, _) = app
        .get(
            &format!("/api/v1/statuses/{}", second["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A private account's status cannot be reposted.
    let (_, pt) = app.user("private_poster").await;
    make_private(&app, &pt).await;
    let private_sid = app.say(&pt, "mine only").await;
    let (status, _) = app
        .post(
            &format!("/api/v1/statuses/{private_sid}/repost"),
            Some(&pt),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_status_reposted_by_several_followees_shows_once_in_a_home() {
    let app = TestApp::start().await;
    let (_, at) = app.user("viral").await;
    let (r1, t1) = app.user("sharer1").await;
    let (r2, t2) = app.user("sharer2").await;
    let (_, reader) = app.user("reader_h").await;
    app.follow(&reader, &r1).await;
    app.follow(&reader, &r2).await;
    let sid = app.say(&at, "everyone shares this").await;
    app.post(
        &format!("/api/v1/statuses/{sid}/repost"),
        Some(&t1),
        json!({}),
    )
    .await;
    // Statuses between the two reposts put them on different pages.
    let mut between = Vec::new();
    for i in 0..3 {
        between.push(app.say(&t2, &format!("in between {i}")).await);
    }
    let (_, newest) = app
        .post(
            &format!("/api/v1/statuses/{sid}/repost"),
            Some(&t2),
            json!({}),
        )
        .await;
    let newest = newest["id"].as_str().unwrap().to_string();
    let home = app
        .timeline_ids("/api/v1/timelines/home", Some(&reader))
        .await;
    let mut expected = vec![newest.clone()];
    expected.extend(between.iter().rev().cloned());
    assert_eq!(home, expected, "the older repost is not shown again");
    let mut paged = Vec::new();
    for page in 1..=3 {
        paged.extend(
            app.timeline_ids(
                &format!("/api/v1/timelines/home?count=2&page={page}"),
                Some(&reader),
            )
            .await,
        );
    }
    assert_eq!(paged, expected, "not on a later page either");
    let below = app
        .timeline_ids(
            &format!("/api/v1/timelines/home?max_id={}", between[0]),
            Some(&reader),
        )
        .await;
    assert_eq!(below, vec![between[0].clone()]);
}

#[tokio::test]
async fn reposts_racing_unfollows_leave_nothing_behind() {
    let app = TestApp::start_with(|c| {
        c.fanout_inline = 20;
        c.fanout_batch = 20;
    })
    .await;
    let (_, at) = app.user("source_r").await;
    let (reposter, rt) = app.user("racing_reposter").await;
    let fans = common::bulk_users(&app, "rrf", 300).await;
    common::bulk_follow(&app, &fans, reposter.parse().unwrap()).await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let sid = app.say(&at, "to be reposted").await;
    let target: u64 = reposter.parse().unwrap();
    // The repost fans out while every follower unfollows.
    let unfollows = futures::future::join_all(fans.iter().map(|f| {
        let store = store.clone();
        let f = *f;
        async move {
            store
                .follows()
                .set(f, target, false, firehose::model::now())
                .await
                .unwrap()
        }
    }));
    let path = format!("/api/v1/statuses/{sid}/repost");
    let repost = app.post(&path, Some(&rt), json!({}));
    let (_, (_, repost)) = futures::join!(unfollows, repost);
    let rid = repost["id"].as_str().unwrap().to_string();
    app.eventually("the fan-out is done", || async {
        store.outbox().depth().await.is_ok_and(|d| d == 0)
            && store.fanout().depth().await.is_ok_and(|d| d == 0)
    })
    .await;
    assert_eq!(
        common::homes_with(&app, &fans, &rid),
        0,
        "a repost stayed with an unfollower"
    );
}
