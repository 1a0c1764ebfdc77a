//! The shared history (`--history-store`, a real S3 server): a process
//! started with an empty disk serves what was posted before it started,
//! each once, in order, with no `resume_gap`, as the process that saw it
//! live does; search and counts reach it too; the store going away and
//! coming back loses nothing the buffer still held.

use super::history::{plain_replay, post_watched};
use super::*;
use common::{buffered_events, sealed_past, S3Server};

/// The settings of every server of these tests: a small buffer over four
/// shards, the shared history in `s3`, windows of a second.
fn shared(s3: &S3Server) -> impl Fn(&mut firehose::config::Config) + '_ {
    move |c| {
        c.replay_maxlen = 20;
        // A few shards: a process started late reads a ragged buffer (each
        // shard trimmed at its own point), which it must not serve as whole.
        c.log_shards = 4;
        c.history_store = Some("s3://history/tests".into());
        c.history_store_endpoint = Some(s3.endpoint());
        c.history_window_secs = 1;
    }
}

/// Longest wait for the store to seal what was posted.
const WAIT: Duration = Duration::from_secs(45);

/// Posts a status every 300 ms for `secs` seconds, in the background: the
/// log moving on while a new process starts, so that the stretch the
/// others hold and it does not gets sealed.
fn ticking(app: &TestApp, token: &str, secs: u64) {
    let (http, url, token) = (
        app.http.clone(),
        app.url("/api/v1/statuses"),
        token.to_owned(),
    );
    tokio::spawn(async move {
        for _ in 0..secs * 10 / 3 {
            let _ = http
                .post(&url)
                .bearer_auth(&token)
                .json(&json!({"message": "tick"}))
                .send()
                .await;
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    });
}

/// A `since=0` replay from the server at `url`: statuses' ids, controls.
async fn replay(app: &TestApp, url: &str, fh: &str) -> (Vec<String>, Vec<Value>) {
    let mut s = app
        .stream_url(
            &format!("{url}/api/v1/stream/firehose?since=0"),
            Some(fh),
            &[],
        )
        .await;
    assert_eq!(s.status, StatusCode::OK);
    plain_replay(&mut s).await
}

async fn get(app: &TestApp, url: String, token: &str) -> Value {
    app.http
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn an_empty_disk_serves_the_history_from_the_store() {
    let mut s3 = S3Server::start().await;
    let app = TestApp::start_with(shared(&s3)).await;
    let (_, token, fh) = firehose_user(&app, "alice").await;
    let mut early = post_watched(&app, &fh, &token, 250).await;
    assert!(
        buffered_events(&app, "status", &[]) < 100,
        "the buffer is small"
    );
    sealed_past(&app, &app.url(""), &token, &early.last().unwrap().0, WAIT).await;
    assert!(
        !s3.keys().await.is_empty(),
        "windows are objects in the bucket"
    );
    // Deleted after it was sealed: the store still holds its event.
    let deleted = early.remove(10).1;
    let (status, _) = app
        .delete(&format!("/api/v1/statuses/{deleted}"), Some(&token))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    // A process started now, with nothing on its disk.
    ticking(&app, &token, 5);
    let second = app.beside(shared(&s3)).await;
    let (ids, controls) = replay(&app, &second.url(""), &fh).await;
    assert!(controls.is_empty(), "no resume_gap: {controls:?}");
    let early_ids: Vec<String> = early.iter().map(|(_, s)| s.clone()).collect();
    let served: Vec<String> = ids
        .iter()
        .filter(|id| early_ids.contains(id))
        .cloned()
        .collect();
    assert_eq!(served, early_ids, "every early status once, in order");
    let (first_ids, first_controls) = replay(&app, &app.url(""), &fh).await;
    assert!(first_controls.is_empty(), "{first_controls:?}");
    // (Ticks posted between the two replays follow on the first's.)
    assert!(
        first_ids.starts_with(&ids),
        "the same sequence as the process that saw them"
    );
    let h = get(&app, second.url("/api/v1/history"), &token).await;
    assert!(
        h["events"].as_u64().unwrap() > 250,
        "the store's events are counted: {h}"
    );

    // Search and counts on the new process reach the store's windows.
    let found = get(
        &app,
        second.url("/api/v1/history/search?query=entry&count=500"),
        &token,
    )
    .await;
    let found: Vec<&str> = found["statuses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    let newest_first: Vec<&str> = early_ids.iter().rev().map(String::as_str).collect();
    assert_eq!(found, newest_first, "every early status, newest first");
    let counts = get(
        &app,
        second.url("/api/v1/history/counts?query=entry&bucket=day"),
        &token,
    )
    .await;
    assert_eq!(counts["total"], 249, "{counts}");

    // Judged by what the reader may see now: a reader's replay from the
    // store has every status but the deleted one, then none once their
    // author went private.
    let (_, bob) = app.user("bob").await;
    let filter = second.url("/api/v1/stream/filter?track=entry&since=0");
    let mut s = app.stream_url(&filter, Some(&bob), &[]).await;
    let (ids, controls) = plain_replay(&mut s).await;
    assert!(controls.is_empty(), "{controls:?}");
    assert_eq!(ids, early_ids, "every early status but the deleted one");
    let (status, body) = app
        .call(
            reqwest::Method::PATCH,
            "/api/v1/me",
            Some(&token),
            Some(json!({"private": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut s = app.stream_url(&filter, Some(&bob), &[]).await;
    let (ids, _) = plain_replay(&mut s).await;
    assert!(ids.is_empty(), "nothing of an author gone private: {ids:?}");
    let (status, body) = app
        .call(
            reqwest::Method::PATCH,
            "/api/v1/me",
            Some(&token),
            Some(json!({"private": false})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // The store goes away: posts and streams go on, and it is said.
    s3.stop();
    app.eventually("readyz says the store is unreachable", || async {
        get(&app, second.url("/readyz"), &token).await["history_store"] == "unreachable"
    })
    .await;
    let mut late = Vec::new();
    for i in 0..40 {
        late.push(app.say(&token, &format!("late {i}")).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    app.eventually("the metric says the store is unreachable", || async {
        app.metric("firehose_history_store_reachable").await == 0.0
    })
    .await;
    s3.restart().await;
    let last_late = {
        let (_, h) = app.get("/api/v1/history", Some(&token)).await;
        h["newest_id"].as_str().unwrap().to_string()
    };
    sealed_past(&app, &app.url(""), &token, &last_late, WAIT).await;
    // (Each process asks the store every 5 s.)
    app.eventually("readyz says the store answers again", || async {
        get(&app, second.url("/readyz"), &token).await["history_store"] == "ok"
    })
    .await;

    // A third process, started after all that, serves it all.
    ticking(&app, &token, 5);
    let third = app.beside(shared(&s3)).await;
    let (ids, controls) = replay(&app, &third.url(""), &fh).await;
    assert!(
        controls.is_empty(),
        "nothing lost while the store was away: {controls:?}"
    );
    let wanted: Vec<String> = early_ids.iter().chain(late.iter()).cloned().collect();
    let served: Vec<String> = ids
        .iter()
        .filter(|id| wanted.contains(id))
        .cloned()
        .collect();
    assert_eq!(
        served, wanted,
        "early and late statuses, once each, in order"
    );
}

#[tokio::test]
async fn windows_older_than_the_history_leave_the_store() {
    let s3 = S3Server::start().await;
    let app = TestApp::start_with(|c| {
        shared(&s3)(c);
        c.history_secs = 4;
    })
    .await;
    let (_, token) = app.user("alice").await;
    app.say(&token, "soon gone").await;
    let (_, h) = app.get("/api/v1/history", Some(&token)).await;
    let newest = h["newest_id"].as_str().unwrap().to_string();
    sealed_past(&app, &app.url(""), &token, &newest, WAIT).await;
    let first = s3
        .keys()
        .await
        .into_iter()
        .min()
        .expect("a window in the bucket");
    let window_ms: u64 = first
        .rsplit('/')
        .next()
        .and_then(|name| name.strip_suffix(".seg"))
        .and_then(|ms| ms.parse().ok())
        .unwrap();
    // The log moves on; past `--history` the window leaves the bucket and
    // the manifest, removed by the process holding the sealer's lease.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while s3.keys().await.contains(&first) {
        assert!(
            std::time::Instant::now() < deadline,
            "{first} is still in the bucket"
        );
        app.say(&token, "tick").await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix);
    let listed: Vec<String> = redis::cmd("ZRANGE")
        .arg(keys.history_windows())
        .arg(0)
        .arg(window_ms)
        .arg("BYSCORE")
        .query(&mut app.redis.conn())
        .unwrap();
    assert!(listed.is_empty(), "the manifest forgot it: {listed:?}");
}
