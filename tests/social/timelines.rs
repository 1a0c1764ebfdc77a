//! Timeline pages and the home timeline cap.

use crate::assert_error;
use crate::common::TestApp;
use reqwest::StatusCode;

#[tokio::test]
async fn timelines_page_by_count_page_and_max_id_newest_first() {
    let app = TestApp::start().await;
    let (ida, a) = app.user("mia").await;
    let mut ids = Vec::new();
    for i in 0..7 {
        ids.push(app.say(&a, &format!("status {i}")).await);
    }
    ids.reverse();
    let home = app.timeline_ids("/api/v1/timelines/home", Some(&a)).await;
    assert_eq!(home, ids);
    let p1 = app
        .timeline_ids("/api/v1/timelines/home?count=3", Some(&a))
        .await;
    let p2 = app
        .timeline_ids("/api/v1/timelines/home?count=3&page=2", Some(&a))
        .await;
    let p3 = app
        .timeline_ids("/api/v1/timelines/home?count=3&page=3", Some(&a))
        .await;
    assert_eq!([p1, p2, p3].concat(), ids);
    let older = app
        .timeline_ids(
            &format!("/api/v1/users/{ida}/statuses?count=2&max_id={}", ids[2]),
            None,
        )
        .await;
    assert_eq!(older, ids[2..4].to_vec());
    assert!(app
        .timeline_ids("/api/v1/timelines/home?page=9", Some(&a))
        .await
        .is_empty());
    for q in [
        "count=0",
        "count=201",
        "count=x",
        "page=0",
        "page=-1",
        "max_id=abc",
        "page=1&max_id=3",
    ] {
        let (status, err) = app
            .get(&format!("/api/v1/timelines/home?{q}"), Some(&a))
            .await;
        assert_error(status, &err, StatusCode::BAD_REQUEST);
    }
    let (status, err) = app.get("/api/v1/timelines/home", None).await;
    assert_error(status, &err, StatusCode::UNAUTHORIZED);
    let (status, err) = app.get("/api/v1/users/424242/statuses", None).await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn home_timelines_keep_the_newest_1000() {
    let app = TestApp::start().await;
    let (id, token) = app.user("prolific").await;
    let (_, reader) = app.user("reader").await;
    // Seed 1005 statuses straight through the store (posting over HTTP would be slow).
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    for i in 0..1005 {
        let sid = store.next_status_id().await.unwrap();
        let status = firehose::model::Status {
            id: sid.to_string(),
            uid: id.clone(),
            login: "prolific".into(),
            message: format!("n{i}"),
            posted: firehose::model::now(),
            lat: None,
            lon: None,
            reply_to: None,
            reply_to_uid: None,
            hashtags: vec![],
            mentions: vec![],
            repost_of: None,
            repost_of_uid: None,
            audience: None,
            counts: Default::default(),
        };
        store
            .post_status(&status, &Default::default())
            .await
            .unwrap();
    }
    let _ = token;
    app.follow(&reader, &id).await;
    let mut conn = app.redis.conn();
    let p = &app.cfg.key_prefix;
    let (own, rid): (u64, String) = (
        redis::cmd("ZCARD")
            .arg(format!("{p}:user:{{{id}}}:home"))
            .query(&mut conn)
            .unwrap(),
        app.get("/api/v1/me", Some(&reader)).await.1["id"]
            .as_str()
            .unwrap()
            .to_string(),
    );
    let theirs: u64 = redis::cmd("ZCARD")
        .arg(format!("{p}:user:{{{rid}}}:home"))
        .query(&mut conn)
        .unwrap();
    assert_eq!((own, theirs), (1000, 1000));
    let (_, user) = app.get(&format!("/api/v1/users/{id}"), None).await;
    assert_eq!(user["posts"], 1005);
    let newest = app
        .timeline_ids("/api/v1/timelines/home?count=1", Some(&reader))
        .await;
    let (_, s) = app
        .get(&format!("/api/v1/statuses/{}", newest[0]), None)
        .await;
    assert_eq!(s["message"], "n1004");
}
