//! The history on disk under faults: a process killed with SIGKILL while
//! it writes, a torn last block, a damaged block in the middle. Each test
//! compares what a `since=0` resume serves with what a live stream saw.

use super::common::{ServerProcess, StreamClient, TestApp};
use firehose::history::block::HEADER_LEN;
use firehose::history::segment::Segment;
use futures::StreamExt;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Collects the ids of status events a live stream sees.
pub(super) struct Watch(StreamClient, Vec<String>);

impl Watch {
    pub(super) async fn open(app: &TestApp, fh: &str) -> Watch {
        let s = app
            .stream(
                "/api/v1/stream/firehose",
                Some(fh),
                &[("accept", "application/x-ndjson")],
            )
            .await;
        Watch(s, Vec::new())
    }

    /// Reads until the stream has been quiet for a second.
    pub(super) async fn settle(&mut self) -> &[String] {
        while let Some(m) = self.0.next_within(Duration::from_secs(1)).await {
            if m.event == "status" {
                self.1
                    .push(m.data["status"]["id"].as_str().unwrap().to_string());
            }
        }
        &self.1
    }
}

/// Posts `n` statuses to `base` with 8 in flight; the statuses answered.
pub(super) async fn burst(base: &str, token: &str, from: usize, n: usize) -> Vec<u16> {
    counted_burst(base, token, from, n, Default::default()).await
}

/// [`burst`], counting the answers in `answered` as they come.
pub(super) async fn counted_burst(
    base: &str,
    token: &str,
    from: usize,
    n: usize,
    answered: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> Vec<u16> {
    let http = reqwest::Client::new();
    futures::stream::iter(from..from + n)
        .map(|i| {
            let req = http
                .post(format!("{base}/api/v1/statuses"))
                .bearer_auth(token)
                .json(&json!({"message": format!("kept {i}")}));
            let answered = answered.clone();
            async move {
                let status = req.send().await.map(|r| r.status().as_u16()).unwrap_or(0);
                answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                status
            }
        })
        .buffer_unordered(8)
        .collect()
        .await
}

/// A `since=0` firehose resume from `server`: statuses' ids, and warnings.
pub(super) async fn resume(
    app: &TestApp,
    server: &ServerProcess,
    fh: &str,
) -> (Vec<String>, Vec<Value>) {
    let mut s = app
        .stream_url(
            &server.url("/api/v1/stream/firehose?since=0"),
            Some(fh),
            &[("accept", "application/x-ndjson")],
        )
        .await;
    let (mut ids, mut warnings) = (Vec::new(), Vec::new());
    while let Some(m) = s.next_within(Duration::from_millis(1500)).await {
        match m.event.as_str() {
            "status" => ids.push(m.data["status"]["id"].as_str().unwrap().to_string()),
            "warning" => warnings.push(m.data),
            _ => {}
        }
    }
    (ids, warnings)
}

/// Waits until `server`'s history holds the newest event in the buffer.
async fn archived(app: &TestApp, server: &ServerProcess, token: &str) {
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let newest = store
        .events()
        .newest_id()
        .await
        .unwrap()
        .unwrap()
        .to_string();
    app.eventually("the history holds the newest event", || async {
        let h: Value = app
            .http
            .get(server.url("/api/v1/history"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        h["newest_id"] == newest.as_str() && h["bytes"].as_u64().unwrap_or(0) > 0
    })
    .await;
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "seg"))
        .collect();
    paths.sort();
    paths
}

#[tokio::test]
async fn a_process_killed_while_it_writes_its_history_resumes_it_with_nothing_lost_or_twice() {
    let app = TestApp::start_with(|c| {
        c.replay_maxlen = 300;
        c.log_shards = 1;
    })
    .await;
    let (uid, token) = app.user("writer").await;
    let fh = app.operator_token(&uid, &["read", "firehose"]).await;
    let dir = app.cfg.data_dir.join("killed-history");
    let dir_s = dir.to_str().unwrap().to_string();
    let env = [
        ("FIREHOSE_HISTORY_DIR", dir_s.as_str()),
        ("FIREHOSE_REPLAY_MAXLEN", "300"),
        ("FIREHOSE_LOG_SHARDS", "1"),
    ];
    let mut watch = Watch::open(&app, &fh).await;
    let first = ServerProcess::serve(&app.redis, &env).await;
    let port = first.port;
    let base = first.url("");
    // A first block on disk, then a burst the process dies in.
    assert!(burst(&base, &token, 0, 50).await.iter().all(|s| *s == 201));
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let posting = tokio::spawn({
        let (base, token, count) = (base.clone(), token.clone(), count.clone());
        async move { counted_burst(&base, &token, 50, 350, count).await }
    });
    while count.load(std::sync::atomic::Ordering::Relaxed) < 150 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    first.kill9().await;
    let answered = posting.await.unwrap();
    let ok = answered.iter().filter(|s| **s == 201).count();
    // A torn block, as a kill in the middle of a write leaves one.
    let last = segments(&dir).pop().expect("a segment was written");
    let mut torn = std::fs::read(&last).unwrap();
    torn.extend_from_within(..HEADER_LEN.min(torn.len()));
    torn.extend_from_slice(b"half a block");
    std::fs::write(&last, &torn).unwrap();

    let again = ServerProcess::serve_on(&app.redis, port, &env).await;
    let more = burst(&again.url(""), &token, 1000, 400).await;
    assert!(more.iter().all(|s| *s == 201));
    let seen = watch.settle().await.to_vec();
    archived(&app, &again, &token).await;
    let (ids, warnings) = resume(&app, &again, &fh).await;
    let twice = ids.len() - ids.iter().collect::<std::collections::HashSet<_>>().len();
    println!(
        "history kill -9: {ok} of the 350 posts of the burst answered (the process killed after 150), {} statuses seen live, \
         {} resumed from the history, {twice} twice",
        seen.len(),
        ids.len()
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(twice, 0);
    assert_eq!(ids, seen, "every status once, in order");
    assert!(seen.len() >= 50 + ok + 400);
}

#[tokio::test]
async fn a_damaged_block_is_passed_over_as_a_gap_never_served() {
    let app = TestApp::start_with(|c| {
        c.replay_maxlen = 20;
        c.log_shards = 1;
    })
    .await;
    let (uid, token) = app.user("writer").await;
    let fh = app.operator_token(&uid, &["read", "firehose"]).await;
    let dir = app.cfg.data_dir.join("damaged-history");
    let dir_s = dir.to_str().unwrap().to_string();
    let env = [
        ("FIREHOSE_HISTORY_DIR", dir_s.as_str()),
        ("FIREHOSE_REPLAY_MAXLEN", "20"),
        ("FIREHOSE_LOG_SHARDS", "1"),
    ];
    let mut watch = Watch::open(&app, &fh).await;
    let server = ServerProcess::serve(&app.redis, &env).await;
    let port = server.port;
    // Three bursts a block apart.
    for round in 0..3 {
        let answered = burst(&server.url(""), &token, round * 100, 100).await;
        assert!(answered.iter().all(|s| *s == 201));
        tokio::time::sleep(Duration::from_millis(1300)).await;
    }
    let seen = watch.settle().await.to_vec();
    archived(&app, &server, &token).await;
    server.kill9().await;

    // One byte of a middle block's body flipped.
    let path = segments(&dir).pop().unwrap();
    let (seg, _) = Segment::open(&path, false).unwrap();
    assert!(seg.blocks.len() >= 3, "{} blocks", seg.blocks.len());
    let victim = seg.blocks[seg.blocks.len() / 2];
    let mut bytes = std::fs::read(&path).unwrap();
    let at = victim.offset as usize + HEADER_LEN + victim.header.body_len() as usize / 2;
    bytes[at] ^= 0x20;
    std::fs::write(&path, &bytes).unwrap();
    drop(seg);

    let server = ServerProcess::serve_on(&app.redis, port, &env).await;
    let (ids, warnings) = resume(&app, &server, &fh).await;
    println!(
        "damaged block: {} of {} statuses served, {} warnings",
        ids.len(),
        seen.len(),
        warnings.len()
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0]["code"], "resume_gap");
    assert!(warnings[0]["oldest"].as_f64().unwrap() > 0.0);
    // What is served is what was seen, in order, less one stretch.
    let lost = seen.len() - ids.len();
    assert!(lost > 0 && lost <= victim.header.count as usize, "{lost}");
    let start = seen.iter().position(|s| !ids.contains(s)).unwrap();
    let mut expected = seen.clone();
    expected.drain(start..start + lost);
    assert_eq!(ids, expected);
}

/// Redis killed and started again under a burst of posts. The process's
/// archiver follows the hub's events once it is in step with the buffer
/// (`store::events::tap`); the hub's subscription is lost with Redis, so
/// the archiver must go back to the buffer for what the tap did not carry.
/// Its history then holds every status once, in the order a live stream
/// saw them, over four shards of the log.
#[tokio::test]
async fn a_redis_restart_under_posts_leaves_the_history_whole() {
    let redis = super::common::RedisServer::start_durable();
    let mut app = TestApp::start_on(redis, |c| {
        c.replay_maxlen = 400;
        c.log_shards = 4;
    })
    .await;
    let (uid, token) = app.user("writer").await;
    let fh = app.operator_token(&uid, &["read", "firehose"]).await;
    let dir = app.cfg.data_dir.join("restarted-history");
    let dir_s = dir.to_str().unwrap().to_string();
    let env = [
        ("FIREHOSE_HISTORY_DIR", dir_s.as_str()),
        ("FIREHOSE_REPLAY_MAXLEN", "400"),
        ("FIREHOSE_LOG_SHARDS", "4"),
    ];
    let mut watch = Watch::open(&app, &fh).await;
    let server = ServerProcess::serve(&app.redis, &env).await;
    let base = server.url("");
    assert!(burst(&base, &token, 0, 50).await.iter().all(|s| *s == 201));
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let posting = tokio::spawn({
        let (base, token, count) = (base.clone(), token.clone(), count.clone());
        async move { counted_burst(&base, &token, 50, 350, count).await }
    });
    while count.load(std::sync::atomic::Ordering::Relaxed) < 150 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    app.redis.restart();
    let answered = posting.await.unwrap();
    let ok = answered.iter().filter(|s| **s == 201).count();
    // Past the buffer's length: the resume below reads the history.
    let more = burst(&base, &token, 1000, 500).await;
    assert!(more.iter().all(|s| *s == 201), "{more:?}");
    let seen = watch.settle().await.to_vec();
    archived(&app, &server, &token).await;
    let (ids, warnings) = resume(&app, &server, &fh).await;
    let twice = ids.len() - ids.iter().collect::<std::collections::HashSet<_>>().len();
    println!(
        "Redis restarted under posts: {ok} of the 350 posts of the burst answered, {} statuses seen live, \
         {} resumed from the history, {twice} twice",
        seen.len(),
        ids.len()
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(twice, 0);
    assert_eq!(ids, seen, "every status once, in order");
    assert!(seen.len() >= 50 + ok + 500);
}
