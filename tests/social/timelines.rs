//! Timeline pages and the home timeline cap.

use crate::assert_error;
use crate::common::{gated_app, home_in_redis, RedisServer, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::json;

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
    // Seed 1005 statuses straight through the store (posting over HTTP would
    // be slow), and more until the author's own home holds entries past the
    // cap (posts trim one time in model::HOME_TRIM_EVERY), so that reads
    // must leave them out.
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let own_home = format!("{}:user:{{{id}}}:home", app.cfg.key_prefix);
    let own_size = || -> u64 {
        redis::cmd("ZCARD")
            .arg(&own_home)
            .query(&mut app.redis.conn())
            .unwrap()
    };
    let mut total = 0;
    while total < 1005 || (own_size() == 1000 && total < 1200) {
        let i = total;
        total += 1;
        let (sid, posted) = store.mint().snowflake().await.unwrap();
        let status = firehose::model::Status {
            id: firehose::model::Id(sid),
            uid: id.parse().unwrap(),
            login: "prolific".into(),
            message: format!("n{i}"),
            posted,
            lat: None,
            lon: None,
            reply_to: None,
            reply_to_uid: None,
            hashtags: vec![],
            mentions: vec![],
            repost_of: None,
            repost_of_uid: None,
            audience: None,
            group_id: None,
            group_private: false,
            edited_at: None,
            counts: Default::default(),
        };
        store
            .statuses()
            .post(&status, &Default::default())
            .await
            .unwrap();
    }
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
    // A follow's backfill trims at once.
    assert_eq!(theirs, 1000);
    assert!((1001..=1200).contains(&own), "own home holds {own}");
    let (_, user) = app.get(&format!("/api/v1/users/{id}"), None).await;
    assert_eq!(user["posts"], total);
    let message = |sid: String| {
        let app = &app;
        async move { app.get(&format!("/api/v1/statuses/{sid}"), None).await.1["message"].clone() }
    };
    let mut by_page = Vec::new();
    for page in 1..=7 {
        let ids = app
            .timeline_ids(
                &format!("/api/v1/timelines/home?count=200&page={page}"),
                Some(&token),
            )
            .await;
        by_page.extend(ids);
    }
    let mut by_max_id: Vec<String> = Vec::new();
    loop {
        let path = match by_max_id.last() {
            Some(last) => format!(
                "/api/v1/timelines/home?count=200&max_id={}",
                last.parse::<u64>().unwrap() - 1
            ),
            None => "/api/v1/timelines/home?count=200".to_string(),
        };
        let ids = app.timeline_ids(&path, Some(&token)).await;
        if ids.is_empty() {
            break;
        }
        by_max_id.extend(ids);
    }
    assert_eq!(by_page.len(), 1000, "pages of the author's own home");
    assert_eq!(by_page, by_max_id, "max_id pages to the end");
    assert_eq!(message(by_page[0].clone()).await, format!("n{}", total - 1));
    assert_eq!(
        message(by_page[999].clone()).await,
        format!("n{}", total - 1000)
    );
    let newest = app
        .timeline_ids("/api/v1/timelines/home?count=1", Some(&reader))
        .await;
    let (_, s) = app
        .get(&format!("/api/v1/statuses/{}", newest[0]), None)
        .await;
    assert_eq!(s["message"], format!("n{}", total - 1));
}

/// Every way into a timeline (a post done whole, the post chain's own
/// timelines and its queued fan-out, a follow's backfill, an unmute, a
/// reply, a mention, a hashtag) scores an entry by the whole second of its
/// status's `posted`, and the timeline is in id order. (A fraction would be
/// a text every insert into a small timeline parses again.)
#[tokio::test]
async fn every_way_into_a_timeline_keeps_the_whole_second_and_id_order() {
    // Past 2 followers a post takes the chain and queues its fan-out.
    let app = TestApp::start_with(|c| c.fanout_inline = 2).await;
    let (a, at) = app.user("wide").await;
    let (b, bt) = app.user("narrow").await;
    let mut readers = Vec::new();
    for name in ["reader1", "reader2", "reader3"] {
        let (id, token) = app.user(name).await;
        app.follow(&token, &a).await;
        readers.push((id, token));
    }
    app.follow(&readers[0].1, &b).await;
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(app.say(&at, &format!("wide {i} #whole")).await);
        ids.push(app.say(&bt, &format!("narrow {i}")).await);
    }
    // A reply that mentions: the parent's replies and a mention timeline.
    let reply = app
        .post_status(
            &bt,
            json!({"message": "@wide yes #whole", "reply_to": ids[0]}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (r1, r1t) = (&readers[0].0, &readers[0].1);
    let (s, _) = app
        .call(
            Method::POST,
            &format!("/api/v1/users/{b}/mute"),
            Some(r1t),
            None,
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/users/{b}/mute"),
            Some(r1t),
            None,
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let (late, late_t) = app.user("late").await;
    app.follow(&late_t, &a).await;
    app.follow(&late_t, &b).await;

    let mut newest_first = ids.clone();
    newest_first.push(reply.clone());
    newest_first.sort_by_key(|id| std::cmp::Reverse(id.parse::<u64>().unwrap()));
    app.eventually("the queued fan-out reached every reader", || async {
        readers
            .iter()
            .all(|(id, _)| home_in_redis(&app, id).len() == 3 + usize::from(id == r1) * 4)
    })
    .await;
    // A page from an id not in the timeline starts where it would be.
    assert_eq!(
        app.timeline_ids(
            &format!("/api/v1/users/{b}/statuses?max_id={}", ids[2]),
            None
        )
        .await,
        vec![ids[1].clone()]
    );
    assert_eq!(
        app.timeline_ids(
            &format!("/api/v1/timelines/tag/whole?max_id={}", ids[3]),
            None
        )
        .await,
        vec![ids[2].clone(), ids[0].clone()]
    );
    let mut posted = std::collections::HashMap::new();
    for id in ids.iter().chain([&reply]) {
        let (_, s) = app.get(&format!("/api/v1/statuses/{id}"), None).await;
        posted.insert(id.clone(), s["posted"].as_f64().unwrap());
    }
    let p = &app.cfg.key_prefix;
    for (key, expect) in [
        (format!("{p}:user:{{{a}}}:home"), 3),
        (format!("{p}:user:{{{b}}}:home"), 4),
        (format!("{p}:user:{{{r1}}}:home"), 7),
        (format!("{p}:user:{{{}}}:home", readers[1].0), 3),
        (format!("{p}:user:{{{late}}}:home"), 7),
        (format!("{p}:user:{{{b}}}:profile"), 4),
        (format!("{p}:user:{{{a}}}:mentions"), 1),
        (format!("{p}:tag:{{#whole}}"), 4),
        (format!("{p}:status:{{s{}}}:replies", ids[0]), 1),
    ] {
        let uid = &key;
        let scored: Vec<(String, String)> = redis::cmd("ZREVRANGE")
            .arg(&key)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(&mut app.redis.conn())
            .unwrap();
        assert_eq!(scored.len(), expect, "{uid}: {scored:?}");
        for (id, score) in &scored {
            assert_eq!(
                score.parse::<u64>().ok(),
                Some(posted[id].floor() as u64),
                "{uid}'s entry {id}"
            );
        }
        let order: Vec<&String> = scored.iter().map(|(id, _)| id).collect();
        let want: Vec<&String> = newest_first
            .iter()
            .filter(|id| order.contains(id))
            .collect();
        assert_eq!(order, want, "{uid} in id order");
    }
}

/// The Redis client id of the server's home-cache tracking connection,
/// once it is open with tracking on and answering reads.
async fn home_cache_link(app: &TestApp, token: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        // A home read opens the connection when there is none.
        app.get("/api/v1/timelines/home", Some(token)).await;
        let clients: String = redis::cmd("CLIENT")
            .arg("LIST")
            .query(&mut app.redis.conn())
            .unwrap();
        let link = clients
            .lines()
            .filter(|l| l.contains("name=firehose-home-cache"))
            .filter(|l| {
                l.split(' ')
                    .any(|f| f.starts_with("flags=") && f.contains('t'))
            })
            .find_map(|l| l.split(' ').find_map(|f| f.strip_prefix("id=")));
        if let Some(id) = link {
            // Open at Redis; in use here once a read runs no script.
            let scripts = scripts_run(app);
            app.get("/api/v1/timelines/home", Some(token)).await;
            if scripts_run(app) == scripts {
                return id.to_string();
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no tracking connection of the home cache"
        );
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

/// Scripts Redis has run so far (a home read from Redis runs one; one
/// answered from the home cache does not).
fn scripts_run(app: &TestApp) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut app.redis.conn())
        .unwrap();
    info.lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .filter_map(|l| {
            l.split("calls=")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

#[tokio::test]
async fn home_reads_from_the_home_cache_see_every_change_made_before_them() {
    // One Redis even in a cluster run: the home cache is not used on a cluster.
    let app = TestApp::start_on(RedisServer::start_single(), |_| {}).await;
    let (wid, writer) = app.user("scribe").await;
    let (rid, reader) = app.user("watcher").await;
    app.follow(&reader, &wid).await;
    for i in 0..5 {
        app.say(&writer, &format!("first {i}")).await;
    }
    let home = "/api/v1/timelines/home?count=30";
    home_cache_link(&app, &reader).await;
    // Reads with nothing changing run the script once (the fill) at most.
    let scripts = scripts_run(&app);
    for _ in 0..10 {
        assert_eq!(app.timeline_ids(home, Some(&reader)).await.len(), 5);
    }
    assert!(
        scripts_run(&app) <= scripts + 1,
        "the reads were answered from the cache"
    );

    // Changes by a post (its fan-out writes on the server's own connection)
    // and by hand on another connection, each read twice (a fill, then a
    // hit), several readers at once: every read sees every change made
    // before it.
    let mut removed = 0;
    for round in 0..40 {
        match round % 3 {
            0 | 1 => {
                app.say(&writer, &format!("round {round}")).await;
            }
            _ => {
                let top = home_in_redis(&app, &rid)[0].clone();
                let key = format!("{}:user:{{{rid}}}:home", app.cfg.key_prefix);
                let _: u64 = redis::cmd("ZREM")
                    .arg(key)
                    .arg(&top)
                    .query(&mut app.redis.conn())
                    .unwrap();
                removed += 1;
            }
        }
        let expected: Vec<String> = home_in_redis(&app, &rid).into_iter().take(30).collect();
        for _ in 0..2 {
            let reads =
                futures::future::join_all((0..4).map(|_| app.timeline_ids(home, Some(&reader))))
                    .await;
            for read in reads {
                assert_eq!(read, expected, "round {round}");
            }
        }
    }
    assert!(removed > 10);

    // The tracking connection killed by Redis: reads stay right while the
    // cache reconnects.
    let link = home_cache_link(&app, &reader).await;
    let mut conn = app.redis.conn();
    let _: () = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(&link)
        .query(&mut conn)
        .unwrap();
    for i in 0..20 {
        let id = app.say(&writer, &format!("after the kill {i}")).await;
        let read = app.timeline_ids(home, Some(&reader)).await;
        assert_eq!(read[0], id, "read {i} after the kill");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let relinked = home_cache_link(&app, &reader).await;
    assert_ne!(relinked, link, "a new tracking connection");
    let expected: Vec<String> = home_in_redis(&app, &rid).into_iter().take(30).collect();
    assert_eq!(app.timeline_ids(home, Some(&reader)).await, expected);
}

#[tokio::test]
async fn a_home_cache_whose_invalidations_come_late_still_answers_fresh_reads() {
    // A gate holds back what Redis sends the home cache's tracking
    // connection (RESP3), invalidations included, while the server's other
    // connections run freely.
    let (app, gate) = gated_app(|cfg| cfg.view_cache = 0).await;
    let (uid, token) = app.user("tardy").await;
    for i in 0..3 {
        app.say(&token, &format!("early {i}")).await;
    }
    let home = "/api/v1/timelines/home";
    home_cache_link(&app, &token).await;
    let key = format!("{}:user:{{{uid}}}:home", app.cfg.key_prefix);
    let drop_top = || {
        let top = home_in_redis(&app, &uid)[0].clone();
        let _: u64 = redis::cmd("ZREM")
            .arg(&key)
            .arg(&top)
            .query(&mut app.redis.conn())
            .unwrap();
    };
    let settle = || tokio::time::sleep(std::time::Duration::from_millis(100));
    for round in 0..3 {
        // A hit after a change whose invalidation is held back: it must
        // wait for its PING, which comes back behind the invalidation.
        app.timeline_ids(home, Some(&token)).await;
        gate.close();
        if round % 2 == 0 {
            app.say(&token, &format!("round {round}")).await;
        } else {
            drop_top();
        }
        let expected = home_in_redis(&app, &uid);
        let read = tokio::spawn({
            let (url, token) = (app.url(home), token.clone());
            async move {
                let page: serde_json::Value = reqwest::Client::new()
                    .get(url)
                    .bearer_auth(token)
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                page
            }
        });
        settle().await;
        gate.open();
        let page = read.await.unwrap();
        let ids: Vec<String> = page
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(ids, expected, "hit after a change, round {round}");

        // A fill overtaken by a change: Redis answers the read, then the
        // change's invalidation follows in the same batch. The answer may
        // serve the read that asked, but must not stay in the cache.
        app.say(&token, &format!("refill {round}")).await;
        settle().await; // its invalidation applied: no entry
        gate.close();
        let read = tokio::spawn({
            let (url, token) = (app.url(home), token.clone());
            async move {
                reqwest::Client::new()
                    .get(url)
                    .bearer_auth(token)
                    .send()
                    .await
            }
        });
        settle().await; // the read's script has run at Redis
        drop_top();
        settle().await;
        gate.open();
        read.await.unwrap().unwrap();
        let expected = home_in_redis(&app, &uid);
        for _ in 0..2 {
            assert_eq!(
                app.timeline_ids(home, Some(&token)).await,
                expected,
                "read after an overtaken fill, round {round}"
            );
        }
    }
}
