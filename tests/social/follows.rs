//! Follows, batches, counters under concurrency and the fan-out queue.

use crate::assert_error;
use crate::common::{buffered_events, bulk_follow, bulk_users, homes_with, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

#[tokio::test]
async fn follow_backfills_and_unfollow_removes_the_followees_statuses() {
    let app = TestApp::start().await;
    let (ida, a) = app.user("nina").await;
    let (idb, b) = app.user("omar").await;
    let b1 = app.say(&b, "before follow").await;
    let a1 = app.say(&a, "mine").await;
    let (status, body) = app
        .post(&format!("/api/v1/users/{idb}/follow"), Some(&a), json!({}))
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!({"following": true})));
    assert_eq!(
        app.timeline_ids("/api/v1/timelines/home", Some(&a)).await,
        vec![a1.clone(), b1.clone()]
    );
    let b2 = app.say(&b, "after follow").await;
    assert_eq!(
        app.timeline_ids("/api/v1/timelines/home", Some(&a)).await,
        vec![b2, a1.clone(), b1]
    );
    let (status, err) = app
        .post(&format!("/api/v1/users/{idb}/follow"), Some(&a), json!({}))
        .await;
    assert_error(status, &err, StatusCode::CONFLICT);
    let (_, ua) = app.get(&format!("/api/v1/users/{ida}"), None).await;
    let (_, ub) = app.get(&format!("/api/v1/users/{idb}"), None).await;
    assert_eq!(
        (ua["following"].clone(), ub["followers"].clone()),
        (json!(1), json!(1))
    );
    let (_, list) = app
        .get(&format!("/api/v1/users/{idb}/followers"), None)
        .await;
    assert_eq!(list["users"][0]["id"], ida.as_str());
    assert!(list["next_cursor"].is_null());
    let (status, body) = app
        .delete(&format!("/api/v1/users/{idb}/follow"), Some(&a))
        .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"following": false}))
    );
    assert_eq!(
        app.timeline_ids("/api/v1/timelines/home", Some(&a)).await,
        vec![a1]
    );
    let (_, ub) = app.get(&format!("/api/v1/users/{idb}"), None).await;
    assert_eq!(ub["followers"], 0);
    let (status, err) = app
        .post(&format!("/api/v1/users/{ida}/follow"), Some(&a), json!({}))
        .await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    let (status, err) = app
        .post("/api/v1/users/777777/follow", Some(&a), json!({}))
        .await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
    let (status, err) = app
        .post(&format!("/api/v1/users/{idb}/follow"), None, json!({}))
        .await;
    assert_error(status, &err, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn batch_follow_reports_per_id_and_lists_page_with_cursors() {
    let app = TestApp::start().await;
    let (ida, a) = app.user("pia").await;
    let targets = bulk_users(&app, "target", 5).await;
    let mut ids: Vec<Value> = targets.iter().map(|t| json!(t.to_string())).collect();
    ids.push(json!(targets[0]));
    ids.push(json!("999999"));
    ids.push(json!(ida));
    ids.push(json!("abc"));
    let (status, body) = app
        .post("/api/v1/follows", Some(&a), json!({"ids": ids}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let results = body["results"].as_object().unwrap();
    for t in &targets {
        assert_eq!(results[&t.to_string()], true, "{body}");
    }
    for bad in ["999999", ida.as_str(), "abc"] {
        assert_eq!(results[bad], false, "{bad}: {body}");
    }
    let (_, me) = app.get("/api/v1/me", Some(&a)).await;
    assert_eq!(me["following"], 5);
    let (_, page1) = app
        .get(&format!("/api/v1/users/{ida}/following?count=2"), None)
        .await;
    assert_eq!(page1["users"].as_array().unwrap().len(), 2);
    let cursor = page1["next_cursor"].as_str().unwrap().to_string();
    let (_, page2) = app
        .get(
            &format!("/api/v1/users/{ida}/following?count=3&cursor={cursor}"),
            None,
        )
        .await;
    assert_eq!(page2["users"].as_array().unwrap().len(), 3);
    assert!(page2["next_cursor"].is_null());
    let too_many: Vec<String> = (1..=1001).map(|i| i.to_string()).collect();
    let (status, err) = app
        .post("/api/v1/follows", Some(&a), json!({"ids": too_many}))
        .await;
    assert_error(status, &err, StatusCode::BAD_REQUEST);
    let (status, body) = app
        .call(
            Method::DELETE,
            "/api/v1/follows",
            Some(&a),
            Some(json!({"ids": [targets[0].to_string(), targets[1].to_string()]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["results"][targets[0].to_string()], true);
    let (_, me) = app.get("/api/v1/me", Some(&a)).await;
    assert_eq!(me["following"], 3);
}

/// A batch larger than one script's chunk (`store::follows::FOLLOW_CHUNK`
/// on one Redis): every change counted once on both sides, announced once,
/// the backfill copied except from a muted user, and nothing for a user a
/// block stands between, one followed already, or one who is gone.
#[tokio::test]
async fn a_batch_over_several_chunks_changes_counts_and_announces_each_follow_once() {
    let app = TestApp::start().await;
    let (ida, a) = app.user("chunky").await;
    let n = 2 * firehose::store::follows::FOLLOW_CHUNK + 5;
    let plain = bulk_users(&app, "chunk", n).await;
    let (muted, muted_t) = app.user("chunk_muted").await;
    let (blocker, blocker_t) = app.user("chunk_blocker").await;
    let (already, already_t) = app.user("chunk_already").await;
    let (gone, gone_t) = app.user("chunk_gone").await;
    let muted_says = app.say(&muted_t, "muted, not copied").await;
    let already_says = app.say(&already_t, "followed before").await;
    app.say(&blocker_t, "blocks the batch's author").await;
    let (status, _) = app
        .post(&format!("/api/v1/users/{muted}/mute"), Some(&a), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app
        .post(
            &format!("/api/v1/users/{ida}/block"),
            Some(&blocker_t),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    app.follow(&a, &already).await;
    let (status, _) = app
        .call(
            Method::DELETE,
            "/api/v1/me",
            Some(&gone_t),
            Some(json!({"password": "password123"})),
        )
        .await;
    assert!(status.is_success(), "the account deletion: {status}");
    let source = format!("\"source\":\"{ida}\"");
    let follow_events = || buffered_events(&app, "follow", &[&source]);
    let before = follow_events();

    // A followee with a status, in the second chunk, to see its backfill.
    let (middle, middle_t) = app.user("chunk_middle").await;
    let middle_says = app.say(&middle_t, "copied by the batch").await;

    let mut ids: Vec<Value> = plain.iter().map(|id| json!(id.to_string())).collect();
    ids.insert(n / 2, json!(middle));
    for id in [&muted, &blocker, &already, &gone] {
        ids.push(json!(id));
    }
    let (status, body) = app
        .post("/api/v1/follows", Some(&a), json!({"ids": ids}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let results = body["results"].as_object().unwrap();
    for id in &plain {
        assert_eq!(results[&id.to_string()], true, "{id}: {body}");
    }
    assert_eq!(results[&middle], true, "{body}");
    assert_eq!(results[&muted], true, "a muted user is followed: {body}");
    for id in [&blocker, &already, &gone] {
        assert_eq!(results[id.as_str()], false, "{id}: {body}");
    }
    let (_, me) = app.get("/api/v1/me", Some(&a)).await;
    assert_eq!(
        me["following"],
        n + 3,
        "the batch's follows and the one before"
    );
    for id in plain
        .iter()
        .map(u64::to_string)
        .chain([middle.clone(), muted.clone()])
    {
        let (_, user) = app.get(&format!("/api/v1/users/{id}"), None).await;
        assert_eq!(user["followers"], 1, "{id}: {user}");
    }
    assert_eq!(follow_events() - before, n + 2, "one event per follow made");
    let home = app.timeline_ids("/api/v1/timelines/home", Some(&a)).await;
    assert!(home.contains(&middle_says), "the backfill: {home:?}");
    assert!(home.contains(&already_says), "{home:?}");
    assert!(
        !home.contains(&muted_says),
        "a muted user's statuses: {home:?}"
    );

    // And back: the batch unfollow takes every one out again.
    let (status, body) = app
        .call(
            Method::DELETE,
            "/api/v1/follows",
            Some(&a),
            Some(json!({"ids": ids})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let results = body["results"].as_object().unwrap();
    assert_eq!(results[&already], true, "{body}");
    assert_eq!(results[&blocker], false, "{body}");
    let (_, me) = app.get("/api/v1/me", Some(&a)).await;
    assert_eq!(me["following"], 0);
    let home = app.timeline_ids("/api/v1/timelines/home", Some(&a)).await;
    assert!(
        !home.contains(&middle_says) && !home.contains(&already_says),
        "{home:?}"
    );
}

/// Followees whose profiles hold more than one script call may copy
/// (`store::follows::FOLLOW_COPY_BUDGET`) are followed all the same, each
/// once, and unfollowed again.
#[tokio::test]
async fn a_batch_whose_backfills_outgrow_one_call_follows_everyone_once() {
    let app = TestApp::start().await;
    let (ida, a) = app.user("copier").await;
    let targets = bulk_users(&app, "prolific", 5).await;
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix)
        .with_log_shards(app.cfg.log_shards as usize);
    let per = firehose::store::follows::FOLLOW_COPY_BUDGET * 3 / 4;
    {
        let mut conn = app.redis.conn();
        for (n, t) in targets.iter().enumerate() {
            let mut add = redis::cmd("ZADD");
            add.arg(keys.profile(*t));
            for i in 0..per {
                let id = 1_000_000 * (n as u64 + 1) + i as u64;
                add.arg(id).arg(id);
            }
            let _: i64 = add.query(&mut conn).unwrap();
        }
    }
    let ids: Vec<String> = targets.iter().map(u64::to_string).collect();
    for (method, want) in [(Method::POST, 5), (Method::DELETE, 0)] {
        let (status, body) = app
            .call(
                method,
                "/api/v1/follows",
                Some(&a),
                Some(json!({"ids": ids})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        for id in &ids {
            assert_eq!(body["results"][id], true, "{id}: {body}");
        }
        let (_, me) = app.get("/api/v1/me", Some(&a)).await;
        assert_eq!(me["following"], want, "{me}");
        for id in &ids {
            let (_, user) = app.get(&format!("/api/v1/users/{id}"), None).await;
            assert_eq!(user["followers"], want / 5, "{id}: {user}");
        }
        let (_, following) = app
            .get(&format!("/api/v1/users/{ida}/following?count=10"), None)
            .await;
        assert_eq!(following["users"].as_array().unwrap().len(), want);
    }
}

#[tokio::test]
async fn concurrent_follow_unfollow_pairs_leave_counters_equal_to_set_sizes() {
    let app = TestApp::start().await;
    let users = bulk_users(&app, "racer", 10).await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let mut tasks = Vec::new();
    for round in 0..50u64 {
        let source = users[(round % 10) as usize];
        let target = users[((round * 3 + 1) % 10) as usize];
        if source == target {
            continue;
        }
        for follow in [true, false, true] {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                store
                    .follows()
                    .set(source, target, follow, firehose::model::now())
                    .await
                    .unwrap();
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut conn = app.redis.conn();
    let p = &app.cfg.key_prefix;
    for &u in &users {
        let (followers, following, fcount, gcount): (u64, u64, u64, u64) = redis::pipe()
            .zcard(format!("{p}:user:{{{u}}}:followers"))
            .zcard(format!("{p}:user:{{{u}}}:following"))
            .hget(format!("{p}:user:{{{u}}}"), "followers")
            .hget(format!("{p}:user:{{{u}}}"), "following")
            .query(&mut conn)
            .unwrap();
        assert_eq!((fcount, gcount), (followers, following), "user {u}");
        // Both sides agree on every relationship.
        let followed: Vec<u64> = redis::cmd("ZRANGE")
            .arg(format!("{p}:user:{{{u}}}:following"))
            .arg(0)
            .arg(-1)
            .query(&mut conn)
            .unwrap();
        for f in followed {
            let score: Option<f64> = redis::cmd("ZSCORE")
                .arg(format!("{p}:user:{{{f}}}:followers"))
                .arg(u)
                .query(&mut conn)
                .unwrap();
            assert!(
                score.is_some(),
                "{u} follows {f} but is not among their followers"
            );
        }
    }
}

#[tokio::test]
async fn fanout_reaches_2500_followers_once_the_workers_drain() {
    let app = TestApp::start().await;
    let (idc, celeb) = app.user("celeb").await;
    let followers = bulk_users(&app, "fan", 2500).await;
    bulk_follow(&app, &followers, idc.parse().unwrap()).await;
    let sid = app.say(&celeb, "hello, all 2500 of you").await;
    // The first 1000 (oldest follows) are reached before POST returns.
    assert!(
        homes_with(&app, &followers[..1000], &sid) == 1000
            || homes_with(&app, &followers, &sid) >= 1000
    );
    app.eventually("every follower's home has the status", || async {
        homes_with(&app, &followers, &sid) == 2500
    })
    .await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    app.eventually("the fan-out queue is empty", || async {
        store.fanout().depth().await.unwrap() == 0
    })
    .await;
    // Delete fans out the same way: gone from every home, not just filtered on read.
    let (status, _) = app
        .delete(&format!("/api/v1/statuses/{sid}"), Some(&celeb))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    app.eventually("the status left every follower's home", || async {
        homes_with(&app, &followers, &sid) == 0
    })
    .await;
}

#[tokio::test]
async fn a_batch_abandoned_by_a_dead_worker_is_reclaimed_and_finished() {
    // No workers in the server: the test plays a worker that dies mid-batch.
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (idc, celeb) = app.user("star").await;
    let followers = bulk_users(&app, "f", 1600).await;
    bulk_follow(&app, &followers, idc.parse().unwrap()).await;
    let sid = app.say(&celeb, "for everyone").await;
    assert_eq!(homes_with(&app, &followers, &sid), 1000, "inline part only");
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let mut conn = store.blocking_connection(Duration::from_secs(1)).unwrap();
    // The task is in the queue of the author's outbox partition.
    let queue = firehose::store::keys::user_part(idc.parse().unwrap());
    store.fanout().ensure_group(&mut conn, queue).await.unwrap();
    // The dead worker claims the task and never acknowledges it.
    let claimed = store
        .fanout()
        .claim(&mut conn, queue, "dead-worker", 60_000)
        .await
        .unwrap();
    assert!(claimed.is_some(), "a task was queued");
    assert_eq!(homes_with(&app, &followers, &sid), 1000);
    // A live worker with a short reclaim time finishes the batch; it learns
    // of the queue from a sweeper (this store queued nothing itself).
    let (trigger, shutdown) = firehose::shutdown::channel();
    let worker = tokio::spawn(firehose::workers::fanout_worker(
        store.clone(),
        "live".into(),
        200,
        shutdown.clone(),
    ));
    let sweeper = tokio::spawn(firehose::workers::outbox_sweeper(
        store.clone(),
        Duration::from_millis(100),
        shutdown,
    ));
    app.eventually("the reclaimed batch reached everyone", || async {
        homes_with(&app, &followers, &sid) == 1600
    })
    .await;
    app.eventually("nothing is left pending", || async {
        store.fanout().depth().await.unwrap() == 0
    })
    .await;
    trigger.fire();
    worker.await.unwrap();
    sweeper.await.unwrap();
}

/// The fan-out queues live in the outbox partitions, and a process with no
/// workers leaves its tasks to another process's: that one's sweeper finds
/// the queue non-empty and wakes its workers (no blocking read on any
/// queue).
#[tokio::test]
async fn tasks_queued_by_a_process_without_workers_are_worked_by_another() {
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (idc, celeb) = app.user("remote_star").await;
    let followers = bulk_users(&app, "rf", 1500).await;
    bulk_follow(&app, &followers, idc.parse().unwrap()).await;
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix)
        .with_log_shards(app.cfg.log_shards as usize);
    let part = firehose::store::keys::user_part(idc.parse().unwrap());
    let len = |key: String| -> u64 {
        redis::cmd("XLEN")
            .arg(key)
            .query(&mut app.redis.conn())
            .unwrap()
    };

    let first = app.say(&celeb, "the first").await;
    assert_eq!(
        homes_with(&app, &followers, &first),
        1000,
        "inline part only"
    );
    assert_eq!(len(keys.part_fanout(part)), 1, "queued in the partition");
    let second = app.say(&celeb, "the second").await;
    assert_eq!(len(keys.part_fanout(part)), 2, "queued behind the first");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(homes_with(&app, &followers, &first), 1000, "no worker yet");

    let other = crate::common::ServerProcess::serve(&app.redis, &[]).await;
    app.eventually("the other process reached every follower", || async {
        homes_with(&app, &followers, &first) == 1500
            && homes_with(&app, &followers, &second) == 1500
    })
    .await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    app.eventually("every queue is empty", || async {
        store.fanout().depth().await.unwrap() == 0
    })
    .await;
    drop(other);
}
