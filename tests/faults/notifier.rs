//! The notifier split over processes by the log's shards: each makes about
//! its share of the notifications, and one that is killed leaves its shards
//! to the others, with every notification made once.

use super::*;

/// A process's `firehose_notifier_shards`.
async fn shards_held(http: &reqwest::Client, metrics_url: &str) -> i64 {
    let text = match http.get(metrics_url).send().await {
        Ok(r) => r.text().await.unwrap_or_default(),
        Err(_) => return -1,
    };
    text.lines()
        .find_map(|l| l.strip_prefix("firehose_notifier_shards "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(-1)
}

// Prints the shares and counts of a run.
#[allow(clippy::print_stdout)]
#[tokio::test]
async fn two_processes_split_the_notifications_and_one_takes_the_others_when_it_is_killed() {
    let app = TestApp::start().await;
    let (_, author) = app.user("split_author").await;
    let mut sids = Vec::new();
    for i in 0..4 {
        sids.push(app.say(&author, &format!("like me {i}")).await);
    }
    let fans = bulk_users(&app, "sfan", 40).await;
    let mut tokens = Vec::new();
    for fan in &fans {
        tokens.push(
            app.operator_token(&fan.to_string(), &["read", "write"])
                .await,
        );
    }
    let other = ServerProcess::serve(&app.redis, &[]).await;
    let http = reqwest::Client::new();
    let shards = app.cfg.log_shards as i64;
    // Each process holds about half of the shards, together all of them.
    let other_base = other.url("");
    let shares = || async {
        (
            shards_held(&http, &app.url("/metrics")).await,
            shards_held(&http, &format!("{other_base}/metrics")).await,
        )
    };
    app.eventually("the two processes split the shards", || async {
        let (here, there) = shares().await;
        here > 0 && there > 0 && here + there == shards && (here - there).abs() <= 1
    })
    .await;
    let (here, there) = shares().await;
    // Likes through both processes: each one's shard is the liker's.
    let like = |i: usize, sid: &String, via_other: bool| {
        let url = if via_other {
            format!("{other_base}/api/v1/statuses/{sid}/like")
        } else {
            app.url(&format!("/api/v1/statuses/{sid}/like"))
        };
        http.post(url).bearer_auth(tokens[i].clone()).send()
    };
    for (i, _) in fans.iter().enumerate().take(20) {
        for sid in &sids {
            let r = like(i, sid, i % 2 == 1).await.unwrap();
            assert!(r.status().is_success(), "{}", r.status());
        }
    }
    // Killed; the likes go on through the one left, which takes its shards.
    other.kill9().await;
    for (i, _) in fans.iter().enumerate().skip(20) {
        for sid in &sids {
            let r = like(i, sid, false).await.unwrap();
            assert!(r.status().is_success(), "{}", r.status());
        }
    }
    app.eventually("the one left holds every shard", || async {
        shards_held(&http, &app.url("/metrics")).await == shards
    })
    .await;
    let likes = fans.len() * sids.len();
    let notified = || async {
        let mut keys = Vec::new();
        let mut query = "?types=like&count=200".to_string();
        loop {
            let (_, body) = app
                .get(&format!("/api/v1/notifications{query}"), Some(&author))
                .await;
            for n in body["notifications"].as_array().unwrap() {
                keys.push(format!("{}:{}", n["account"]["id"], n["status"]["id"]));
            }
            match body["next_cursor"].as_str() {
                Some(c) => query = format!("?types=like&count=200&cursor={c}"),
                None => return keys,
            }
        }
    };
    app.eventually("a notification for every like", || async {
        notified().await.len() >= likes
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut keys = notified().await;
    let all = keys.len();
    keys.sort();
    keys.dedup();
    println!(
        "notifier shards split {here} and {there}; the second killed after half of {likes} \
         likes; {all} like notifications, {} distinct",
        keys.len()
    );
    assert_eq!(keys.len(), likes, "every like notified");
    assert_eq!(all, likes, "none twice");
}

#[tokio::test]
async fn a_process_that_stops_leaves_its_shards_and_the_register_at_once() {
    let app = TestApp::start().await;
    let other = ServerProcess::serve(&app.redis, &[]).await;
    let http = reqwest::Client::new();
    let shards = app.cfg.log_shards as i64;
    let other_metrics = other.url("/metrics");
    app.eventually("the two processes split the shards", || async {
        let here = shards_held(&http, &app.url("/metrics")).await;
        let there = shards_held(&http, &other_metrics).await;
        here > 0 && there > 0 && here + there == shards
    })
    .await;
    // A clean stop (SIGTERM): it takes itself off the register before it
    // exits, rather than leaving its entry to lapse 5 s later.
    other.terminate().await;
    let registered: usize = redis::cmd("ZCARD")
        .arg(format!("{}:{{g}}:work:notifier", app.cfg.key_prefix))
        .query(&mut app.redis.conn())
        .unwrap();
    assert_eq!(
        registered, 1,
        "only the process still running is registered"
    );
    app.eventually("the one left holds every shard", || async {
        shards_held(&http, &app.url("/metrics")).await == shards
    })
    .await;
}
