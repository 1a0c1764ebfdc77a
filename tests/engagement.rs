//! The social features around statuses: likes, mentions, hashtags,
//! trending, replies and conversations, each with its privacy rules.

mod common;

use common::{ids, ServerProcess, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

/// `[{tag, count}]` as pairs.
fn trend_counts(trends: &Value) -> Vec<(String, u64)> {
    trends
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["tag"].as_str().unwrap().to_string(),
                t["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The trends at `query` once they hold `want` (the sum is kept up to
/// 2 s, so a change shows a little later), or as last read after 4 s.
async fn trends_once_they_hold(
    app: &TestApp,
    query: &str,
    want: (&str, u64),
) -> Vec<(String, u64)> {
    let url = format!("/api/v1/trends/tags?{query}");
    let mut last = Vec::new();
    for _ in 0..40 {
        let (_, t) = app.get(&url, None).await;
        last = trend_counts(&t);
        if last.iter().any(|(tag, n)| tag == want.0 && *n == want.1) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    last
}

/// Makes the account of `token` private.
async fn make_private(app: &TestApp, token: &str) {
    let (status, _) = app
        .call(
            Method::PATCH,
            "/api/v1/me",
            Some(token),
            Some(json!({"private": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}

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
    let left = firehose::store::outbox::Op::Like {
        uid,
        sid: status,
        author: author.parse().unwrap(),
        private: false,
        like: true,
        at: firehose::model::now() - 60.0,
    };
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

/// Hashtags are counted in the trending partition of each (no write goes
/// to one trending slot): a status whose tags fall in two partitions is
/// counted in both, the top of the partitions' tops is the top of all, and
/// a delete takes it out of both.
#[tokio::test]
async fn trends_are_counted_in_each_hashtags_partition_and_merged_in_order() {
    let app = TestApp::start().await;
    let (_, at) = app.user("spreader").await;
    let part = firehose::store::keys::trend_part;
    // Three tags, the first two in different partitions.
    let a = "alpha".to_string();
    let b = (0..)
        .map(|i| format!("beta{i}"))
        .find(|t| part(t) != part(&a))
        .unwrap();
    let c = (0..)
        .map(|i| format!("gamma{i}"))
        .find(|t| part(t) != part(&a) && part(t) != part(&b))
        .unwrap();
    let both = app.say(&at, &format!("#{a} and #{b}")).await;
    app.say(&at, &format!("#{a} again")).await;
    app.say(&at, &format!("#{a} thrice, #{c}")).await;
    app.say(&at, &format!("#{b} twice")).await;
    let (_, trends) = app.get("/api/v1/trends/tags?window=60", None).await;
    assert_eq!(
        trend_counts(&trends),
        vec![(a.clone(), 3), (b.clone(), 2), (c.clone(), 1)],
        "by count, across partitions"
    );
    let (_, top) = app.get("/api/v1/trends/tags?window=60&limit=2", None).await;
    assert_eq!(trend_counts(&top), vec![(a.clone(), 3), (b.clone(), 2)]);
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix);
    let minute = firehose::model::now() as u64 / 60;
    let mut conn = app.redis.conn();
    for m in [minute - 1, minute] {
        let old: bool = redis::cmd("EXISTS")
            .arg(keys.legacy_trend_bucket(m))
            .query(&mut conn)
            .unwrap();
        assert!(!old, "nothing is counted in the one trending slot");
    }
    app.delete(&format!("/api/v1/statuses/{both}"), Some(&at))
        .await;
    let after = trends_once_they_hold(&app, "window=60", (&a, 2)).await;
    // Ties in the order ZREVRANGE gives them (by tag, descending).
    assert_eq!(
        after,
        vec![(a, 2), (c, 1), (b, 1)],
        "out of both partitions"
    );
}

/// Trending buckets the first layout kept in one slot (`{trends}`) are
/// moved to the hashtags' partitions before this version serves (data
/// move 8): their counts trend as before, a move started again after one
/// that died half way adds nothing twice, and deleting a status counted
/// before the move takes its tags out.
#[tokio::test]
async fn trending_buckets_kept_in_one_slot_are_moved_to_the_partitions() {
    let app = TestApp::start().await;
    let (_, at) = app.user("old_trender").await;
    let sid = app.say(&at, "posted before the upgrade").await;
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix);
    let mut conn = app.redis.conn();
    let status_key = format!("{}:status:{{s{sid}}}", app.cfg.key_prefix);
    let posted: f64 = redis::cmd("HGET")
        .arg(&status_key)
        .arg("posted")
        .query(&mut conn)
        .unwrap();
    let minute = posted as u64 / 60;
    // What the first layout held: this status counted for #oldtag, and
    // other statuses for #oldtag and #othertag, in the status's minute.
    let (bucket, seen) = (
        keys.legacy_trend_bucket(minute),
        keys.legacy_trend_seen(minute),
    );
    let _: () = redis::pipe()
        .cmd("ZADD")
        .arg(&bucket)
        .arg(3)
        .arg("oldtag")
        .arg(2)
        .arg("othertag")
        .ignore()
        .cmd("SADD")
        .arg(&seen)
        .arg(&sid)
        .arg("1")
        .arg("2")
        .ignore()
        .cmd("EXPIRE")
        .arg(&bucket)
        .arg(3600)
        .ignore()
        .cmd("EXPIRE")
        .arg(&seen)
        .arg(3600)
        .ignore()
        .query(&mut conn)
        .unwrap();
    // Its hashtag, as the first layout's post stored it (the delete takes
    // the status's tags from there).
    let _: () = redis::cmd("HSET")
        .arg(&status_key)
        .arg("hashtags")
        .arg(r#"["oldtag"]"#)
        .query(&mut conn)
        .unwrap();
    // A move that died after it had moved #oldtag's partition and before
    // it dropped the old bucket: the next one must not count it again.
    let p = firehose::store::keys::trend_part("oldtag");
    let q = firehose::store::keys::trend_part("othertag");
    let script = redis::Script::new(include_str!("../src/store/lua/trend_move.lua"));
    let mut call = script.prepare_invoke();
    call.key(keys.trend_bucket(p, minute))
        .key(keys.trend_seen(p, minute))
        .arg(3_600_000)
        .arg(if p == q { 2 } else { 1 })
        .arg("oldtag")
        .arg(3);
    if p == q {
        call.arg("othertag").arg(2);
    }
    let moved: i64 = call.arg(&sid).arg("1").arg("2").invoke(&mut conn).unwrap();
    assert_eq!(moved, 1);
    app.forget_migrations();
    app.migrate().await;
    app.forget_migrations();
    app.migrate().await;
    let exists: bool = redis::cmd("EXISTS").arg(&bucket).query(&mut conn).unwrap();
    assert!(!exists, "the old bucket is dropped");
    let ttl: i64 = redis::cmd("TTL")
        .arg(keys.trend_bucket(p, minute))
        .query(&mut conn)
        .unwrap();
    assert!((3500..=3600).contains(&ttl), "the time it had left: {ttl}");
    let (_, trends) = app.get("/api/v1/trends/tags?window=300", None).await;
    assert_eq!(
        trend_counts(&trends),
        vec![("oldtag".to_string(), 3), ("othertag".to_string(), 2)],
        "moved once, though a move died half way and two ran"
    );
    app.delete(&format!("/api/v1/statuses/{sid}"), Some(&at))
        .await;
    let after = trends_once_they_hold(&app, "window=300", ("oldtag", 2)).await;
    assert_eq!(
        after,
        vec![("othertag".to_string(), 2), ("oldtag".to_string(), 2)],
        "the delete took the moved count out (ties by tag, descending)"
    );
}

#[tokio::test]
async fn hashtag_timelines_ignore_case_and_trends_count_a_sliding_window() {
    let app = TestApp::start().await;
    let (_, at) = app.user("tagger").await;
    let one = app.say(&at, "learning #Rust today").await;
    let two = app.say(&at, "more #rust and #redis, #RUST again").await;
    let three = app.say(&at, "just #redis").await;
    let (status, tagged) = app.get("/api/v1/timelines/tag/RUST", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        ids(&tagged),
        vec![two.clone(), one.clone()],
        "newest first, once each"
    );
    let (_, tagged) = app.get("/api/v1/timelines/tag/%23redis", None).await;
    assert_eq!(ids(&tagged), vec![three.clone(), two.clone()]);
    let (status, trends) = app
        .get("/api/v1/trends/tags?window=60&limit=10", None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let counts: Vec<(String, u64)> = trend_counts(&trends);
    assert!(
        counts.contains(&("rust".into(), 2)) && counts.contains(&("redis".into(), 2)),
        "{counts:?}"
    );
    let (_, top) = app.get("/api/v1/trends/tags?window=60&limit=1", None).await;
    assert_eq!(top.as_array().unwrap().len(), 1);
    // Every trending key expires: a bucket and its counted set get their
    // TTL with the first tag counted, and keep it as the tags repeat.
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix);
    let minute = firehose::model::now() as u64 / 60;
    let mut conn = app.redis.conn();
    let mut buckets = 0;
    let p = firehose::store::keys::trend_part("rust");
    for m in [minute - 1, minute] {
        for key in [keys.trend_bucket(p, m), keys.trend_seen(p, m)] {
            let ttl: i64 = redis::cmd("TTL").arg(&key).query(&mut conn).unwrap();
            assert_ne!(ttl, -1, "{key} has no TTL");
            buckets += usize::from(ttl > 0);
        }
    }
    assert!(buckets >= 2, "the bucket and its set exist");
    app.delete(&format!("/api/v1/statuses/{two}"), Some(&at))
        .await;
    let after = trends_once_they_hold(&app, "window=60", ("rust", 1)).await;
    assert!(
        after.contains(&("rust".into(), 1)) && after.contains(&("redis".into(), 1)),
        "{after:?}"
    );
    let (_, tagged) = app.get("/api/v1/timelines/tag/rust", None).await;
    assert_eq!(ids(&tagged), vec![one]);
    for bad in [
        "window=59",
        "window=86401",
        "limit=0",
        "limit=101",
        "window=x",
        "other=1",
    ] {
        let (status, _) = app.get(&format!("/api/v1/trends/tags?{bad}"), None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
    }
}

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
                .set_follow(f, target, false, firehose::model::now())
                .await
                .unwrap()
        }
    }));
    let path = format!("/api/v1/statuses/{sid}/repost");
    let repost = app.post(&path, Some(&rt), json!({}));
    let (_, (_, repost)) = futures::join!(unfollows, repost);
    let rid = repost["id"].as_str().unwrap().to_string();
    app.eventually("the fan-out is done", || async {
        store.outbox_depth().await.is_ok_and(|d| d == 0)
            && store.fanout_depth().await.is_ok_and(|d| d == 0)
    })
    .await;
    assert_eq!(
        common::homes_with(&app, &fans, &rid),
        0,
        "a repost stayed with an unfollower"
    );
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

#[tokio::test]
async fn order_top_ranks_home_and_tag_timelines_by_engagement_and_age() {
    let app = TestApp::start().await;
    let (_, reader) = app.user("ranker").await;
    let (author, at) = app.user("ranked").await;
    app.follow(&reader, &author).await;
    let old = app.say(&at, "old #ranktag").await;
    let engaged = app.say(&at, "engaged #ranktag").await;
    let new = app.say(&at, "new #ranktag").await;
    for i in 0..3 {
        let (_, fan) = app.user(&format!("rank_fan{i}")).await;
        app.post(
            &format!("/api/v1/statuses/{engaged}/like"),
            Some(&fan),
            json!({}),
        )
        .await;
    }
    for path in [
        "/api/v1/timelines/home?order=top".to_string(),
        "/api/v1/timelines/tag/ranktag?order=top".to_string(),
    ] {
        let (status, ranked) = app.get(&path, Some(&reader)).await;
        assert_eq!(status, StatusCode::OK, "{path}: {ranked}");
        // Engagement first; equal engagement: the newer first.
        assert_eq!(
            ids(&ranked),
            vec![engaged.clone(), new.clone(), old.clone()],
            "{path}"
        );
        let scores: Vec<f64> = ranked
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["score"].as_f64().unwrap())
            .collect();
        assert!(
            scores[0] > scores[1] && scores[1] >= scores[2],
            "{scores:?}"
        );
        // (1 + 3 likes) / 2^1.5 for a status just posted.
        assert!(
            (scores[0] - 4.0 / 2f64.powf(1.5)).abs() < 0.01,
            "{scores:?}"
        );
        let (_, second) = app
            .get(&format!("{path}&count=1&page=2"), Some(&reader))
            .await;
        assert_eq!(ids(&second), vec![new.clone()]);
    }
    // latest is the default and unchanged; bad orders and max_id with top: 400.
    let latest = app
        .timeline_ids("/api/v1/timelines/home?order=latest", Some(&reader))
        .await;
    assert_eq!(latest, vec![new.clone(), engaged.clone(), old.clone()]);
    for path in [
        "/api/v1/timelines/home?order=best",
        "/api/v1/timelines/home?order=top&max_id=5",
        "/api/v1/timelines/tag/ranktag?order=",
    ] {
        let (status, _) = app.get(path, Some(&reader)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}");
    }
    // A status posted after a ranking was read is in the next one at once;
    // new engagement shows within the 5 s its counts may lag.
    let newest = app.say(&at, "newest #ranktag").await;
    let (_, ranked) = app
        .get("/api/v1/timelines/home?order=top", Some(&reader))
        .await;
    assert!(ids(&ranked).contains(&newest), "{ranked}");
    for i in 0..6 {
        let (_, fan) = app.user(&format!("late_fan{i}")).await;
        app.post(
            &format!("/api/v1/statuses/{old}/like"),
            Some(&fan),
            json!({}),
        )
        .await;
    }
    let started = std::time::Instant::now();
    app.eventually("the liked old status ranks first", || async {
        let (_, ranked) = app
            .get("/api/v1/timelines/tag/ranktag?order=top", Some(&reader))
            .await;
        ids(&ranked).first() == Some(&old)
    })
    .await;
    assert!(started.elapsed() < std::time::Duration::from_secs(6));
}
