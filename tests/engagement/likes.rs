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

/// A like's chain step that an earlier version left in an outbox (its
/// request died half way) never undoes a later change: on one Redis it is
/// finished before this version serves (data move 7), since likes there are
/// one script that no longer orders itself after chain steps; on a cluster
/// the later change's op number orders it.
#[tokio::test]
async fn a_like_left_half_done_by_an_earlier_version_never_undoes_a_later_unlike() {
    // No sweeper in this process: what finishes the left step is the move
    // (one Redis) or, after the unlike, another process's sweeper.
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (author, at) = app.user("left_author").await;
    let (fan, ft) = app.user("left_fan").await;
    let sid = app.say(&at, "liked before the upgrade").await;
    let (uid, status): (u64, u64) = (fan.parse().unwrap(), sid.parse().unwrap());
    let left = firehose::store::outbox::Op::Like(firehose::store::chains::like::LikeOp {
        uid,
        sid: status,
        author: author.parse().unwrap(),
        private: false,
        like: true,
        at: firehose::model::now() - 60.0,
    });
    let k = firehose::store::keys::like_part(uid, status);
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix);
    // Numbered as the earlier version numbered it: drawn from the
    // partition's counter, so below anything drawn since (never 0, which
    // no op is: `like.lua` reads 0 as "no change yet").
    let drawn: u64 = redis::cmd("INCR")
        .arg(keys.part_next_op(k))
        .query(&mut app.redis.conn())
        .unwrap();
    let n = drawn * firehose::store::keys::OUTBOX_PARTS as u64 + k as u64;
    let member = format!("{n}|{}", serde_json::to_string(&left).unwrap());
    let _: () = redis::cmd("ZADD")
        .arg(keys.part_outbox(k))
        .arg(0)
        .arg(&member)
        .query(&mut app.redis.conn())
        .unwrap();
    app.forget_migrations();
    app.migrate().await;
    let likers = || async {
        let (_, page) = app
            .get(&format!("/api/v1/statuses/{sid}/liked_by"), None)
            .await;
        ids(&page["users"])
    };
    if !app.redis.is_cluster() {
        assert_eq!(likers().await, vec![fan.clone()], "finished before serving");
    }
    let like = format!("/api/v1/statuses/{sid}/like");
    let (code, body) = app.call(Method::DELETE, &like, Some(&ft), None).await;
    assert_eq!(
        (code, body),
        (StatusCode::OK, json!({"liked": false, "likes": 0}))
    );
    // A process with a sweeper finishes whatever is left.
    let sweeper = ServerProcess::serve(&app.redis, &[("FIREHOSE_OUTBOX_LEASE", "1")]).await;
    app.eventually("the outbox entry is gone", || async {
        let score: Option<f64> = redis::cmd("ZSCORE")
            .arg(keys.part_outbox(k))
            .arg(&member)
            .query(&mut app.redis.conn())
            .unwrap();
        score.is_none()
    })
    .await;
    assert!(likers().await.is_empty(), "the later unlike stands");
    let (_, status) = app.get(&format!("/api/v1/statuses/{sid}"), None).await;
    assert_eq!(status["likes"], 0);
    let (_, mine) = app
        .get(&format!("/api/v1/users/{fan}/likes"), Some(&ft))
        .await;
    assert_eq!(mine, json!([]), "the user's list agrees");
    sweeper.kill9().await;
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
