//! Bookmarks: private, paged newest first, judged when read, bounded.

use crate::common::TestApp;
use futures::StreamExt;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

async fn bookmark(app: &TestApp, token: &str, sid: &str, on: bool) -> (StatusCode, Value) {
    let method = if on { Method::POST } else { Method::DELETE };
    app.call(
        method,
        &format!("/api/v1/statuses/{sid}/bookmark"),
        Some(token),
        None,
    )
    .await
}

/// Every bookmark the caller's pages show, page after page by cursor.
async fn all_bookmarks(app: &TestApp, token: &str, count: usize) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/v1/bookmarks?count={count}&cursor={c}"),
            None => format!("/api/v1/bookmarks?count={count}"),
        };
        let (status, page) = app.get(&path, Some(token)).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        for s in page["statuses"].as_array().unwrap() {
            ids.push(s["id"].as_str().unwrap().to_string());
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return ids,
        }
    }
}

#[tokio::test]
async fn bookmarks_are_idempotent_private_and_paged_newest_first() {
    let app = TestApp::start().await;
    let (_, reader) = app.user("bookworm").await;
    let (_, other) = app.user("nosy").await;
    let (_, author) = app.user("scribe").await;
    let mut sids = Vec::new();
    for i in 0..7 {
        sids.push(app.say(&author, &format!("worth keeping {i}")).await);
    }
    for sid in &sids {
        let (status, body) = bookmark(&app, &reader, sid, true).await;
        assert_eq!(
            (status, body),
            (StatusCode::OK, json!({"bookmarked": true}))
        );
    }
    // Again: nothing moves (the first bookmark keeps its place).
    let (status, body) = bookmark(&app, &reader, &sids[0], true).await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"bookmarked": true}))
    );
    let newest_first: Vec<String> = sids.iter().rev().cloned().collect();
    assert_eq!(all_bookmarks(&app, &reader, 3).await, newest_first);
    let (_, page) = app.get("/api/v1/bookmarks", Some(&reader)).await;
    assert_eq!(page["statuses"][0]["message"], "worth keeping 6");
    assert!(page["statuses"][0]["likes"].is_number(), "{page}");
    // Only the user sees their bookmarks.
    assert!(all_bookmarks(&app, &other, 20).await.is_empty());
    let (status, _) = app.get("/api/v1/bookmarks", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Removed, twice.
    for _ in 0..2 {
        let (status, body) = bookmark(&app, &reader, &sids[3], false).await;
        assert_eq!(
            (status, body),
            (StatusCode::OK, json!({"bookmarked": false}))
        );
    }
    assert!(!all_bookmarks(&app, &reader, 50).await.contains(&sids[3]));
    // Bad input.
    let (status, body) = bookmark(&app, &reader, "99999999999", true).await;
    crate::assert_error(status, &body, StatusCode::NOT_FOUND);
    let (status, body) = app
        .get("/api/v1/bookmarks?cursor=nonsense", Some(&reader))
        .await;
    crate::assert_error(status, &body, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_bookmark_drops_out_when_its_status_goes_or_can_no_longer_be_seen() {
    let app = TestApp::start().await;
    let (_, reader) = app.user("keeper").await;
    let (_, author) = app.user("deleter").await;
    let (_, blocker) = app.user("blocker").await;
    let (_, hider) = app.user("hider").await;
    let deleted = app.say(&author, "soon deleted").await;
    let kept = app.say(&author, "stays").await;
    let blocked = app.say(&blocker, "then blocks").await;
    let hidden = app.say(&hider, "then private").await;
    for sid in [&deleted, &kept, &blocked, &hidden] {
        assert_eq!(bookmark(&app, &reader, sid, true).await.0, StatusCode::OK);
    }
    let (status, _) = app
        .delete(&format!("/api/v1/statuses/{deleted}"), Some(&author))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let reader_id = app.get("/api/v1/me", Some(&reader)).await.1["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, _) = app
        .post(
            &format!("/api/v1/users/{reader_id}/block"),
            Some(&blocker),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app
        .call(
            Method::PATCH,
            "/api/v1/me",
            Some(&hider),
            Some(json!({"private": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    assert_eq!(all_bookmarks(&app, &reader, 20).await, vec![kept.clone()]);
    // A status the reader may not see cannot be bookmarked (again); the
    // bookmark of one gone or hidden can still be removed, and removing is
    // `false` for any id (it tells nothing about the status).
    for sid in [&hidden, &blocked, &deleted] {
        let (status, body) = bookmark(&app, &reader, sid, true).await;
        crate::assert_error(status, &body, StatusCode::NOT_FOUND);
    }
    let (status, body) = bookmark(&app, &reader, &hidden, false).await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"bookmarked": false}))
    );
    for sid in [deleted.as_str(), "99999999999"] {
        let (status, body) = bookmark(&app, &reader, sid, false).await;
        assert_eq!(
            (status, body),
            (StatusCode::OK, json!({"bookmarked": false}))
        );
    }
}

#[tokio::test]
async fn bookmarks_stop_at_ten_thousand_even_when_added_in_parallel() {
    let app = TestApp::start().await;
    let (uid, reader) = app.user("hoarder").await;
    let (_, author) = app.user("prolific").await;
    // 9,990 bookmarks put in place directly (of statuses that need not
    // exist: the cap counts entries), then 30 real ones at once.
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix)
        .with_log_shards(app.cfg.log_shards as usize);
    let key = keys.bookmarks(uid.parse().unwrap());
    let mut conn = app.redis.conn();
    for chunk in (1..=9_990u64).collect::<Vec<_>>().chunks(1000) {
        let mut cmd = redis::cmd("ZADD");
        cmd.arg(&key);
        for n in chunk {
            cmd.arg(-(*n as f64)).arg(*n);
        }
        let _: () = cmd.query(&mut conn).unwrap();
    }
    let mut sids = Vec::new();
    for i in 0..30 {
        sids.push(app.say(&author, &format!("one of many {i}")).await);
    }
    let answers: Vec<(StatusCode, Value)> = futures::stream::iter(&sids)
        .map(|sid| bookmark(&app, &reader, sid, true))
        .buffer_unordered(30)
        .collect()
        .await;
    let ok = answers.iter().filter(|(s, _)| *s == StatusCode::OK).count();
    assert_eq!(ok, 10, "{answers:?}");
    for (status, body) in answers.iter().filter(|(s, _)| *s != StatusCode::OK) {
        crate::assert_error(*status, body, StatusCode::BAD_REQUEST);
        assert_eq!(body["error"]["code"], "too_many_bookmarks");
    }
    let n: u64 = redis::cmd("ZCARD").arg(&key).query(&mut conn).unwrap();
    assert_eq!(n, 10_000);
    // The account's deletion takes them all.
    let (status, _) = app
        .call(
            Method::DELETE,
            "/api/v1/me",
            Some(&reader),
            Some(json!({"password": "password123"})),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    app.eventually("the bookmarks are gone", || async {
        let mut conn = app.redis.conn();
        redis::cmd("EXISTS")
            .arg(&key)
            .query::<u64>(&mut conn)
            .is_ok_and(|n| n == 0)
    })
    .await;
}
