//! Upgrades: the key layout a process checks before it serves or works.

use crate::common::TestApp;
use redis::Commands;
use std::time::Duration;

/// A process stamps the data with its key layout, and one that finds data
/// in another layout, a server or a worker, refuses to run (it exits with
/// the reason) instead of reading or changing keys where it does not look.
#[tokio::test]
async fn a_process_refuses_data_in_a_foreign_key_layout() {
    let app = TestApp::start().await;
    let layout = format!("{}:{{g}}:layout", app.cfg.key_prefix);
    let stamped: String = app.redis.conn().get(&layout).unwrap();
    assert_eq!(stamped, firehose::store::layout::LAYOUT.to_string());
    let (_, tok) = app.user("stays").await;
    let sid = app.say(&tok, "written in layout one").await;

    let _: () = app.redis.conn().set(&layout, "99").unwrap();
    for command in [&["serve", "--listen", "127.0.0.1:0"][..], &["worker"]] {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_firehose"))
            .args(command)
            .args(app.redis.args())
            .arg("--data-dir")
            .arg(app.redis.data_dir())
            .env("FIREHOSE_JWT_SECRET", "test-secret-test-secret-test-secret")
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(30), out)
            .await
            .unwrap_or_else(|_| panic!("{command:?} exits instead of running"))
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{command:?}: {stderr}");
        assert!(stderr.contains("key layout 99"), "{command:?}: {stderr}");
    }
    let kept: String = app.redis.conn().get(&layout).unwrap();
    assert_eq!(kept, "99", "the stamp is left as found");
    let (status, _) = app
        .get(&format!("/api/v1/statuses/{sid}"), Some(&tok))
        .await;
    assert_eq!(status, 200, "nothing was changed");
}

/// Data of key layout 1 (the event log in one stream, `fh:{g}:events`) is
/// upgraded in place by the first process that starts on it: every event
/// keeps its id (a resume from one written before the upgrade goes on with
/// the rest of them, then the events written after), a resume point
/// older than what the old buffer held still gets `resume_gap`, and the
/// users, statuses and sessions are kept.
#[tokio::test]
async fn a_server_upgrades_the_one_stream_layout_in_place() {
    let app = TestApp::start().await;
    let (id, tok) = app.user("ancient").await;
    let fh = app
        .operator_token(&id, &["read", "write", "firehose"])
        .await;
    let mut sids = Vec::new();
    for i in 0..3 {
        sids.push(app.say(&tok, &format!("from layout one {i}")).await);
    }
    // Their events as layout 1 held them: one stream, ids of Redis's
    // own kind, a batch of two in one entry; the buffer had trimmed older
    // entries, and the shards did not exist.
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix)
        .with_log_shards(app.cfg.log_shards as usize);
    let mut conn = app.redis.conn();
    let mut bodies: Vec<(u64, String)> = Vec::new();
    for k in 0..keys.log_shards() {
        let rows: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
            .arg(keys.log_events(k))
            .arg("-")
            .arg("+")
            .query(&mut conn)
            .unwrap();
        for (_, fields) in rows {
            for (_, body) in fields.into_iter().filter(|(f, _)| f == "e") {
                let v: serde_json::Value = serde_json::from_str(&body).unwrap();
                if v["type"] == "status" {
                    let sid: u64 = v["status"]["id"].as_str().unwrap().parse().unwrap();
                    bodies.push((sid, body));
                }
            }
        }
        let _: () = conn.del(keys.log_events(k)).unwrap();
    }
    bodies.sort();
    assert_eq!(bodies.len(), 3);
    let ms = (firehose::model::now() * 1000.0) as u64 - 5_000;
    let old = |seq: u64| format!("{ms}-{seq}");
    let _: String = redis::cmd("XADD")
        .arg(keys.events())
        .arg(old(0))
        .arg("e")
        .arg(r#"{"type":"user_gone_long_ago"}"#)
        .query(&mut conn)
        .unwrap();
    let _: String = redis::cmd("XADD")
        .arg(keys.events())
        .arg(old(1))
        .arg("e")
        .arg(&bodies[0].1)
        .arg("e")
        .arg(&bodies[1].1)
        .query(&mut conn)
        .unwrap();
    let _: String = redis::cmd("XADD")
        .arg(keys.events())
        .arg(old(2))
        .arg("e")
        .arg(&bodies[2].1)
        .query(&mut conn)
        .unwrap();
    let _: i64 = redis::cmd("XTRIM")
        .arg(keys.events())
        .arg("MAXLEN")
        .arg(2)
        .query(&mut conn)
        .unwrap();
    let layout = format!("{}:{{g}}:layout", app.cfg.key_prefix);
    let _: () = conn.set(&layout, "1").unwrap();
    let _: () = conn.del(keys.log_shard_count()).unwrap();

    // A server starts on it, with a reader resuming from inside the batch.
    let second = app.beside(|_| {}).await;
    let stamped: String = conn.get(&layout).unwrap();
    assert_eq!(stamped, firehose::store::layout::LAYOUT.to_string());
    let gone: bool = conn.exists(keys.events()).unwrap();
    assert!(!gone, "the old stream is removed once copied");
    let mut s = app
        .stream_url(
            &second.url(&format!("/api/v1/stream/firehose?last_event_id={}", old(1))),
            Some(&fh),
            &[],
        )
        .await;
    let m = s.next_event("the batch's second event").await;
    assert_eq!(m.id.as_deref(), Some(format!("{}.1", old(1)).as_str()));
    assert_eq!(m.data["status"]["id"], bodies[1].0.to_string());
    let m = s.next_event("the last old event").await;
    assert_eq!(m.id.as_deref(), Some(old(2).as_str()));
    let new = app.say(&tok, "in layout two").await;
    let m = s.next_event("a status written after the upgrade").await;
    assert_eq!(m.data["status"]["id"], new.as_str());
    let (a, b) = (
        firehose::stream::EventId::parse(m.id.as_deref().unwrap()).unwrap(),
        firehose::stream::EventId::parse(&old(2)).unwrap(),
    );
    assert!(a > b, "new ids follow the old ones");

    // Older than what the old buffer held: told.
    let mut s = app
        .stream_url(
            &second.url(&format!("/api/v1/stream/firehose?last_event_id={ms}-0")),
            Some(&fh),
            &[],
        )
        .await;
    let m = s.next("a warning").await;
    assert_eq!(m.data["code"], "resume_gap", "{:?}", m.data);
    // The data stays: the statuses and the session the token names.
    for sid in &sids {
        let (status, _) = app
            .get(&format!("/api/v1/statuses/{sid}"), Some(&tok))
            .await;
        assert_eq!(status, 200);
    }
}
