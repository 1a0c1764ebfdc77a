//! The shared history under faults (a real S3 server): the sealing process
//! killed with SIGKILL in the middle of a burst, a damaged object in the
//! bucket, and a store that refuses every request (403) for a while. A
//! process started afterwards with an empty disk serves every status once,
//! in order, as a live stream saw them; a damaged window is a
//! `resume_gap`, never garbage.

use super::common::{sealed_past, S3Server, ServerProcess, TestApp};
use super::history::{burst, counted_burst, resume, Watch};
use std::time::Duration;

/// The environment of a process sharing the history in `s3`.
fn env(s3: &S3Server) -> Vec<(&'static str, String)> {
    vec![
        ("FIREHOSE_HISTORY_STORE", "s3://history/faults".into()),
        ("AWS_ENDPOINT_URL", s3.endpoint()),
        ("FIREHOSE_HISTORY_WINDOW", "1s".into()),
        ("FIREHOSE_REPLAY_MAXLEN", "300".into()),
        ("FIREHOSE_LOG_SHARDS", "1".into()),
    ]
}

async fn serve(app: &TestApp, env: &[(&'static str, String)]) -> ServerProcess {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    ServerProcess::serve(&app.redis, &env).await
}

/// Waits until the store holds every event `app`'s history holds, the log
/// moving on through `server`.
async fn all_sealed(app: &TestApp, server: &ServerProcess, token: &str) {
    let (_, h) = app.get("/api/v1/history", Some(token)).await;
    let newest = h["newest_id"].as_str().unwrap().to_string();
    sealed_past(
        app,
        &server.url(""),
        token,
        &newest,
        Duration::from_secs(60),
    )
    .await;
}

/// A watcher (keeping no shared history: the processes do), a writer with
/// a firehose token, and a first process sharing the history in `s3`.
struct Setup {
    app: TestApp,
    token: String,
    fh: String,
    env: Vec<(&'static str, String)>,
    watch: Watch,
    first: ServerProcess,
}

impl Setup {
    async fn on(s3: &S3Server) -> Setup {
        let app = TestApp::start_with(|c| {
            c.replay_maxlen = 300;
            c.log_shards = 1;
        })
        .await;
        let (uid, token) = app.user("writer").await;
        let fh = app.operator_token(&uid, &["read", "firehose"]).await;
        let env = env(s3);
        let watch = Watch::open(&app, &fh).await;
        let first = serve(&app, &env).await;
        Setup {
            app,
            token,
            fh,
            env,
            watch,
            first,
        }
    }
}

#[tokio::test]
async fn a_sealer_killed_mid_burst_and_a_damaged_window_lose_nothing_else() {
    let s3 = S3Server::start().await;
    let Setup {
        app,
        token,
        fh,
        env,
        mut watch,
        first,
    } = Setup::on(&s3).await;
    let base = first.url("");
    assert!(burst(&base, &token, 0, 100).await.iter().all(|s| *s == 201));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let posting = tokio::spawn({
        let (base, token, count) = (base.clone(), token.clone(), count.clone());
        async move { counted_burst(&base, &token, 100, 200, count).await }
    });
    while count.load(std::sync::atomic::Ordering::Relaxed) < 80 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The only process sealing, killed whatever it was doing.
    first.kill9().await;
    let answered = posting.await.unwrap();
    let ok = answered.iter().filter(|s| **s == 201).count();

    // Another takes the lease once the dead one's lapses, and goes on.
    let second = serve(&app, &env).await;
    assert!(burst(&second.url(""), &token, 1000, 100)
        .await
        .iter()
        .all(|s| *s == 201));
    let seen = watch.settle().await.to_vec();
    all_sealed(&app, &second, &token).await;

    let third = serve(&app, &env).await;
    let (ids, warnings) = resume(&app, &third, &fh).await;
    let ids: Vec<String> = ids.into_iter().filter(|id| seen.contains(id)).collect();
    let twice = ids.len() - ids.iter().collect::<std::collections::HashSet<_>>().len();
    println!(
        "shared history kill -9: {ok} of 200 posts answered (the sealer killed after 80), {} seen live, \
         {} resumed from an empty disk, {twice} twice",
        seen.len(),
        ids.len()
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(ids, seen, "every status once, in order");
    assert!(seen.len() >= 100 + ok + 100);

    // A window damaged in the bucket: a gap where it was, nothing else.
    // The largest window: one of the bursts.
    let mut largest = (0, String::new(), Vec::new());
    for key in s3.keys().await {
        let bytes = s3.read(&key).await;
        if bytes.len() > largest.0 {
            largest = (bytes.len(), key, bytes);
        }
    }
    let (_, middle, mut bytes) = largest;
    let at = bytes.len() / 2;
    bytes[at] ^= 0xff;
    bytes.truncate(bytes.len() - 3);
    s3.overwrite(&middle, bytes).await;
    // The buffer moves on past it: only the store holds it now.
    assert!(burst(&second.url(""), &token, 2000, 400)
        .await
        .iter()
        .all(|s| *s == 201));
    all_sealed(&app, &second, &token).await;
    let fourth = serve(&app, &env).await;
    let (ids, warnings) = resume(&app, &fourth, &fh).await;
    let ids: Vec<String> = ids.into_iter().filter(|id| seen.contains(id)).collect();
    assert!(!warnings.is_empty(), "the damaged window is a gap");
    assert!(
        warnings.iter().all(|w| w["code"] == "resume_gap"),
        "{warnings:?}"
    );
    assert!(
        ids.len() < seen.len(),
        "the damaged window's statuses are not served"
    );
    let mut rest = seen.iter();
    assert!(
        ids.iter().all(|id| rest.any(|s| s == id)),
        "what is served is what was seen, in order"
    );
}

#[tokio::test]
async fn a_store_that_refuses_is_told_and_loses_nothing_once_it_accepts() {
    let mut s3 = S3Server::start_refusing().await;
    let Setup {
        app,
        token,
        fh,
        env,
        mut watch,
        first,
    } = Setup::on(&s3).await;
    let readyz = || async {
        let r: serde_json::Value = app
            .http
            .get(first.url("/readyz"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        r["history_store"].as_str().unwrap_or("").to_string()
    };
    app.eventually("readyz says the store refuses", || async {
        readyz().await == "unreachable"
    })
    .await;
    // Posts and streams go on; more than the buffer holds.
    assert!(burst(&first.url(""), &token, 0, 400)
        .await
        .iter()
        .all(|s| *s == 201));
    s3.accept().await;
    let seen = watch.settle().await.to_vec();
    all_sealed(&app, &first, &token).await;
    // (Each process asks the store every 5 s.)
    app.eventually("readyz says the store answers again", || async {
        readyz().await == "ok"
    })
    .await;
    let second = serve(&app, &env).await;
    let (ids, warnings) = resume(&app, &second, &fh).await;
    let ids: Vec<String> = ids.into_iter().filter(|id| seen.contains(id)).collect();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(ids, seen, "every status once, in order, from an empty disk");
    assert_eq!(seen.len(), 400);
}
