//! Timelines read and written under faults: pages while two skewed servers
//! write, follow times that tie, unfollows and deletes racing a fan-out.

use super::*;

/// A timeline read to its end by `max_id` (each page from the last id
/// shown, which comes again first and is dropped), `count` at a time.
pub(super) async fn read_by_max_id(http: &reqwest::Client, url: &str, token: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    loop {
        let page_url = match seen.last() {
            None => format!("{url}?count=20"),
            Some(last) => format!("{url}?count=20&max_id={last}"),
        };
        let page = timeline_page(http, &page_url, token).await;
        let fresh: Vec<String> = match seen.last() {
            Some(last) if page.first() == Some(last) => page[1..].to_vec(),
            _ => page,
        };
        if fresh.is_empty() {
            return seen;
        }
        seen.extend(fresh);
    }
}

/// A timeline read to its end by `page`.
pub(super) async fn read_by_page(http: &reqwest::Client, url: &str, token: &str) -> Vec<String> {
    let mut seen = Vec::new();
    for page in 1.. {
        let ids = timeline_page(http, &format!("{url}?count=20&page={page}"), token).await;
        if ids.is_empty() {
            break;
        }
        seen.extend(ids);
    }
    seen
}

async fn timeline_page(http: &reqwest::Client, url: &str, token: &str) -> Vec<String> {
    let r = http.get(url).bearer_auth(token).send().await.unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::OK, "{url}");
    let body: serde_json::Value = r.json().await.unwrap();
    body.as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

/// Panics unless `ids` holds each id once, newest (largest) first.
pub(super) fn once_newest_first(ids: &[String], what: &str) {
    let nums: Vec<u64> = ids.iter().map(|i| i.parse().unwrap()).collect();
    let bad = nums.windows(2).filter(|w| w[0] <= w[1]).count();
    assert_eq!(bad, 0, "{what}: {bad} neighbours out of order or repeated");
}

/// Panics unless `ids` holds each id once.
pub(super) fn each_once(ids: &[String], what: &str) -> std::collections::HashSet<String> {
    let set: std::collections::HashSet<String> = ids.iter().cloned().collect();
    assert_eq!(
        set.len(),
        ids.len(),
        "{what}: {} repeated",
        ids.len() - set.len()
    );
    set
}

/// Posts `n` statuses as `token` on `conns` connections at once, spread
/// over `bases` in turn; returns the ids answered.
async fn post_burst(
    bases: &[String],
    token: &str,
    n: usize,
    conns: usize,
    tag: &str,
) -> Vec<String> {
    let http = reqwest::Client::new();
    futures::stream::iter(0..n)
        .map(|i| {
            let req = http
                .post(format!("{}/api/v1/statuses", bases[i % bases.len()]))
                .bearer_auth(token)
                .json(&json!({"message": format!("#{tag} @pgreader {i}")}));
            async move {
                let r = req.send().await.unwrap();
                assert_eq!(r.status(), reqwest::StatusCode::CREATED);
                let s: serde_json::Value = r.json().await.unwrap();
                s["id"].as_str().unwrap().to_string()
            }
        })
        .buffer_unordered(conns)
        .collect()
        .await
}

/// Likes each status as `token`, `conns` at once; the likes in like order.
async fn like_burst(base: &str, token: &str, ids: &[String], conns: usize) {
    let http = reqwest::Client::new();
    futures::stream::iter(ids)
        .map(|id| {
            let req = http
                .post(format!("{base}/api/v1/statuses/{id}/like"))
                .bearer_auth(token);
            async move { assert_eq!(req.send().await.unwrap().status(), reqwest::StatusCode::OK) }
        })
        .buffer_unordered(conns)
        .collect::<Vec<()>>()
        .await;
}

#[tokio::test]
async fn timelines_paged_while_two_skewed_servers_write_skip_and_repeat_nothing() {
    // Two processes whose clocks differ by 80 ms, one author posting on 12
    // connections and three more into one home: the case where an id
    // counter and a clock used to disagree.
    let app = TestApp::start().await;
    let ahead = ServerProcess::serve(&app.redis, &[("FIREHOSE_CLOCK_OFFSET_MS", "40")]).await;
    let behind = ServerProcess::serve(&app.redis, &[("FIREHOSE_CLOCK_OFFSET_MS", "-40")]).await;
    let bases = vec![ahead.url(""), behind.url("")];
    let (reader, rtok) = app.user("pgreader").await;
    let (author, atok) = app.user("pgauthor").await;
    app.follow(&rtok, &author).await;
    let mut others = Vec::new();
    for i in 0..3 {
        let (id, token) = app.user(&format!("pgother{i}")).await;
        app.follow(&rtok, &id).await;
        others.push(token);
    }
    let burst = |n_author: usize, n_other: usize| {
        let mut all = vec![post_burst(&bases, &atok, n_author, 12, "pgtag")];
        for token in &others {
            all.push(post_burst(&bases, token, n_other, 4, "pgtag"));
        }
        futures::future::join_all(all)
    };
    let first: Vec<String> = burst(240, 40).await.concat();
    like_burst(&bases[0], &rtok, &first[..120], 8).await;
    drained(&app).await;
    let timelines = [
        format!("/api/v1/users/{author}/statuses"),
        "/api/v1/timelines/home".to_string(),
        "/api/v1/timelines/mentions".to_string(),
        "/api/v1/timelines/tag/pgtag".to_string(),
        format!("/api/v1/users/{reader}/likes"),
    ];
    // What each timeline held when the reading began.
    let http = reqwest::Client::new();
    let mut before = Vec::new();
    for path in &timelines {
        let ids = read_by_page(&http, &format!("{}{path}", bases[0]), &rtok).await;
        before.push(each_once(&ids, path));
    }
    // Read every timeline by max_id on both processes while the writers
    // (and a liker) go on.
    let writing = async {
        let more = burst(120, 20).await.concat();
        like_burst(&bases[1], &rtok, &more[..60], 8).await;
        more
    };
    let reading = async {
        let mut read = Vec::new();
        for (i, path) in timelines.iter().enumerate() {
            let base = &bases[i % 2];
            read.push(read_by_max_id(&http, &format!("{base}{path}"), &rtok).await);
        }
        read
    };
    let (second, read) = tokio::join!(writing, reading);
    for ((path, ids), existed) in timelines.iter().zip(&read).zip(&before) {
        let seen = each_once(ids, path);
        let skipped = existed.difference(&seen).count();
        println!(
            "{path}: {} read by max_id during writes, {skipped} of {} skipped",
            ids.len(),
            existed.len()
        );
        assert_eq!(skipped, 0, "{path}: entries that existed were skipped");
        if !path.ends_with("/likes") {
            once_newest_first(ids, path);
        }
    }
    drained(&app).await;
    // Once the writes are over: by max_id and by page, the same entries.
    let all: std::collections::HashSet<String> = first.iter().chain(&second).cloned().collect();
    for (i, path) in timelines.iter().enumerate() {
        let url = format!("{}{path}", bases[i % 2]);
        let by_max_id = read_by_max_id(&http, &url, &rtok).await;
        let by_page = read_by_page(&http, &url, &rtok).await;
        assert_eq!(by_max_id, by_page, "{path}: max_id and page read the same");
        let set = each_once(&by_max_id, path);
        assert!(set.is_subset(&all), "{path}");
        if path.ends_with("/likes") {
            assert_eq!(set.len(), 180, "{path}");
        } else {
            once_newest_first(&by_max_id, path);
        }
    }
    let profile = read_by_page(&http, &format!("{}{}", bases[0], timelines[0]), &rtok).await;
    assert_eq!(
        profile.len(),
        360,
        "every status the author was answered 201 for"
    );
    let home = read_by_page(&http, &format!("{}{}", bases[1], timelines[1]), &rtok).await;
    assert_eq!(
        each_once(&home, "home"),
        all,
        "every status reached the home"
    );
    ahead.kill9().await;
    behind.kill9().await;
}

#[tokio::test]
async fn followers_sharing_one_follow_time_are_each_reached_once() {
    let app = TestApp::start_with(|c| {
        c.fanout_inline = 100;
        c.fanout_batch = 100;
    })
    .await;
    let (author, token) = app.user("importer").await;
    let target: u64 = author.parse().unwrap();
    let fans = bulk_users(&app, "tie", 2500).await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    // One follow time for everyone, as an import would give.
    futures::stream::iter(fans.clone())
        .map(|f| {
            let store = store.clone();
            async move {
                store
                    .follows()
                    .set(f, target, true, 1_700_000_000.0)
                    .await
                    .unwrap()
            }
        })
        .buffer_unordered(64)
        .collect::<Vec<_>>()
        .await;
    let sid = app.say(&token, "to everyone who imported me").await;
    drained(&app).await;
    assert_eq!(homes_with(&app, &fans, &sid), 2500);
}

#[tokio::test]
async fn unfollows_and_deletes_racing_a_fanout_leave_nothing_behind() {
    let app = TestApp::start_with(|c| {
        c.fanout_inline = 50;
        c.fanout_batch = 50;
        c.workers = 4;
    })
    .await;
    let (author, token) = app.user("racer").await;
    let target: u64 = author.parse().unwrap();
    let fans = bulk_users(&app, "rf", 1500).await;
    bulk_follow(&app, &fans, target).await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    // Everyone unfollows while the workers fan a status out.
    let kept = app.say(&token, "racing the unfollows").await;
    futures::stream::iter(fans.clone())
        .map(|f| {
            let store = store.clone();
            async move {
                store
                    .follows()
                    .set(f, target, false, firehose::model::now())
                    .await
                    .unwrap()
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    drained(&app).await;
    assert_eq!(
        homes_with(&app, &fans, &kept),
        0,
        "an unfollowed author's status stayed"
    );
    // Follow again, then delete a status while its fan-out runs.
    bulk_follow(&app, &fans, target).await;
    let gone = app.say(&token, "deleted at once").await;
    let (status, _) = app
        .delete(&format!("/api/v1/statuses/{gone}"), Some(&token))
        .await;
    assert_eq!(status, reqwest::StatusCode::NO_CONTENT);
    drained(&app).await;
    assert_eq!(
        homes_with(&app, &fans, &gone),
        0,
        "a deleted status stayed in a home"
    );
    // The first status is back in every home through the follow backfill.
    assert_eq!(homes_with(&app, &fans, &kept), 1500);
    tokio::time::sleep(Duration::from_millis(10)).await;
}
