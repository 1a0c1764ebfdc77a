//! Likes and mentions: idempotent, counted exactly under races, announced.

use super::*;

#[tokio::test]
async fn likes_are_idempotent_counted_listed_and_announced_to_the_author() {
    let app = TestApp::start().await;
    let (author, at) = app.user("liked").await;
    let (fan, ft) = app.user("liker").await;
    let sid = app.say(&at, "like me").await;
    let mut stream = app.stream("/api/v1/stream/user", Some(&at), &[]).await;
    let like = format!("/api/v1/statuses/{sid}/like");
    for _ in 0..2 {
        let (status, body) = app.post(&like, Some(&ft), json!({})).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, json!({"liked": true, "likes": 1}));
    }
    let event = stream.next_event("the like event").await;
    assert_eq!(event.data["type"], "like");
    assert_eq!(
        (
            event.data["status_id"].clone(),
            event.data["source"].clone()
        ),
        (json!(sid), json!(fan))
    );
    let (_, status) = app.get(&format!("/api/v1/statuses/{sid}"), None).await;
    assert_eq!(
        (
            status["likes"].clone(),
            status["reposts"].clone(),
            status["replies"].clone()
        ),
        (json!(1), json!(0), json!(0))
    );
    let (_, page) = app
        .get(&format!("/api/v1/statuses/{sid}/liked_by"), None)
        .await;
    assert_eq!(page["users"][0]["id"], json!(fan));
    assert_eq!(page["next_cursor"], Value::Null);
    let (_, liked) = app.get(&format!("/api/v1/users/{fan}/likes"), None).await;
    assert_eq!(ids(&liked), vec![sid.clone()]);
    assert_eq!(liked[0]["likes"], 1, "timelines carry current counts");
    for _ in 0..2 {
        let (status, body) = app.delete(&like, Some(&ft)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, json!({"liked": false, "likes": 0}));
    }
    let (_, liked) = app.get(&format!("/api/v1/users/{fan}/likes"), None).await;
    assert_eq!(ids(&liked), Vec::<String>::new());
    let _ = author;
    // Deleting a liked status takes it out of the liker's list at once.
    app.post(&like, Some(&ft), json!({})).await;
    app.delete(&format!("/api/v1/statuses/{sid}"), Some(&at))
        .await;
    let mut conn = app.redis.conn();
    let left: Option<f64> = redis::cmd("ZSCORE")
        .arg(format!("{}:user:{{{fan}}}:likes", app.cfg.key_prefix))
        .arg(&sid)
        .query(&mut conn)
        .unwrap();
    assert_eq!(left, None);
    let (status, _) = app
        .post("/api/v1/statuses/999999/like", Some(&ft), json!({}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn two_hundred_parallel_like_toggles_leave_the_count_equal_to_the_set() {
    let app = TestApp::start().await;
    let (_, at) = app.user("popular").await;
    let sid = app.say(&at, "toggle me").await;
    let mut tokens = Vec::new();
    let mut uids = Vec::new();
    for i in 0..20 {
        let (uid, token) = app.user(&format!("toggler{i}")).await;
        uids.push(uid);
        tokens.push(token);
    }
    let like = format!("/api/v1/statuses/{sid}/like");
    let calls = (0..200).map(|i| {
        let method = if i % 3 == 0 {
            Method::DELETE
        } else {
            Method::POST
        };
        app.call(method, &like, Some(&tokens[i % 20]), None)
    });
    for (status, _) in futures::future::join_all(calls).await {
        assert_eq!(status, StatusCode::OK);
    }
    let mut conn = app.redis.conn();
    let likers: u64 = redis::cmd("ZCARD")
        .arg(format!("{}:status:{{s{sid}}}:likers", app.cfg.key_prefix))
        .query(&mut conn)
        .unwrap();
    let (_, status) = app.get(&format!("/api/v1/statuses/{sid}"), None).await;
    assert_eq!(status["likes"], json!(likers));
    // Each user's list of likes agrees with the likers set.
    for uid in &uids {
        let likes_it: Option<f64> = redis::cmd("ZSCORE")
            .arg(format!("{}:status:{{s{sid}}}:likers", app.cfg.key_prefix))
            .arg(uid)
            .query(&mut conn)
            .unwrap();
        let listed: Option<f64> = redis::cmd("ZSCORE")
            .arg(format!("{}:user:{{{uid}}}:likes", app.cfg.key_prefix))
            .arg(&sid)
            .query(&mut conn)
            .unwrap();
        assert_eq!(likes_it.is_some(), listed.is_some(), "user {uid}");
    }
}

#[tokio::test]
async fn mentions_fill_a_timeline_and_reach_the_mentioned_users_stream() {
    let app = TestApp::start().await;
    let (_, at) = app.user("talker").await;
    let (bob, bt) = app.user("bob_m").await;
    let mut stream = app.stream("/api/v1/stream/user", Some(&bt), &[]).await;
    let sid = app
        .say(&at, "hello @bob_m and @BOB_M and @nobody_here")
        .await;
    let event = stream.next_event("the mention").await;
    assert_eq!(event.data["type"], "mention");
    assert_eq!(event.data["status"]["id"], json!(sid));
    assert_eq!(event.data["target"], json!(bob));
    stream
        .assert_quiet(std::time::Duration::from_millis(300))
        .await;
    let (_, mine) = app.get("/api/v1/timelines/mentions", Some(&bt)).await;
    assert_eq!(ids(&mine), vec![sid.clone()]);
    // A private author's mention reaches only a follower.
    let (_, ct) = app.user("quiet_one").await;
    make_private(&app, &ct).await;
    app.say(&ct, "psst @bob_m").await;
    let (_, mine) = app.get("/api/v1/timelines/mentions", Some(&bt)).await;
    assert_eq!(ids(&mine), vec![sid.clone()]);
    // Deleting the status takes it out of the timeline.
    app.delete(&format!("/api/v1/statuses/{sid}"), Some(&at))
        .await;
    let (_, mine) = app.get("/api/v1/timelines/mentions", Some(&bt)).await;
    assert_eq!(ids(&mine), Vec::<String>::new());
}
