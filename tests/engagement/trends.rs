//! Hashtag timelines, trending and `order=top`.

use super::*;

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
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix)
        .with_log_shards(app.cfg.log_shards as usize);
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
