//! Faults with real processes: clients that hang up mid-request, a server
//! killed with SIGKILL mid-burst, races between fan-out and unfollow or
//! delete, and follow times that tie. Each test counts what was lost and
//! asserts that it is nothing. The counts are printed (`-- --nocapture`).

#![allow(clippy::print_stdout)]

mod accounts;
mod cluster;
#[path = "../common/mod.rs"]
mod common;
mod edits;
mod failover;
mod history;
mod limits;
mod mastodon;
mod notifier;
mod shared_history;
mod tail;
mod timelines;
mod upgrade;

use common::{bulk_follow, bulk_users, homes_with, indexed_sessions, ServerProcess, TestApp};
use futures::StreamExt;
use redis::Commands;
use serde_json::json;
use std::time::Duration;
use timelines::{each_once, once_newest_first, read_by_max_id, read_by_page};
use tokio::io::AsyncWriteExt;

/// Every status id in `uid`'s profile timeline.
fn profile_ids(app: &TestApp, uid: &str) -> Vec<String> {
    let mut conn = app.redis.conn();
    conn.zrange(
        format!("{}:user:{{{uid}}}:profile", app.cfg.key_prefix),
        0,
        -1,
    )
    .unwrap()
}

/// Waits until no committed write owes any work (outbox and fan-out queue empty).
async fn drained(app: &TestApp) {
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    app.eventually("the outbox and the fan-out queue are empty", || async {
        // Errors (Redis still loading after a restart) count as not yet.
        store.outbox().depth().await.is_ok_and(|d| d == 0)
            && store.fanout().depth().await.is_ok_and(|d| d == 0)
    })
    .await;
}

/// For every status of the author, how many followers lack it at home.
fn missing_from_homes(app: &TestApp, author: &str, fans: &[u64]) -> (usize, usize) {
    let ids = profile_ids(app, author);
    let missing = ids
        .iter()
        .map(|sid| fans.len() - homes_with(app, fans, sid))
        .sum();
    (ids.len(), missing)
}

#[tokio::test]
async fn statuses_whose_client_hangs_up_mid_post_still_reach_every_follower() {
    let app = TestApp::start_with(|c| {
        c.fanout_inline = 200;
        c.fanout_batch = 200;
    })
    .await;
    let (author, token) = app.user("hangup").await;
    let fans = bulk_users(&app, "hf", 1200).await;
    bulk_follow(&app, &fans, author.parse().unwrap()).await;
    for i in 0..20 {
        let body = json!({"message": format!("posted and gone {i}")}).to_string();
        let request = format!(
            "POST /api/v1/statuses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut socket = tokio::net::TcpStream::connect(app.addr).await.unwrap();
        socket.write_all(request.as_bytes()).await.unwrap();
        // Hang up without reading the answer, at once or a little later
        // (while the token is checked, the status stored, or fanned out).
        tokio::time::sleep(Duration::from_millis(i % 5 * 2)).await;
        drop(socket);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    drained(&app).await;
    let (stored, missing) = missing_from_homes(&app, &author, &fans);
    println!(
        "hang-ups: {stored} of 20 statuses stored, {missing} (status, follower) pairs missing"
    );
    assert!(stored > 0, "no post got far enough to be stored");
    assert_eq!(missing, 0);
}

#[tokio::test]
async fn a_server_killed_mid_burst_leaves_its_fanout_to_the_next_process() {
    // The in-process app only sets up and reads: no workers of its own.
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (author, token) = app.user("killed").await;
    let fans = bulk_users(&app, "kf", 600).await;
    bulk_follow(&app, &fans, author.parse().unwrap()).await;
    let env = [("FIREHOSE_OUTBOX_LEASE", "1")];
    let first = ServerProcess::serve(&app.redis, &env).await;
    let url = first.url("/api/v1/statuses");
    let http = reqwest::Client::new();
    let posts = futures::stream::iter(0..200)
        .map(|i| {
            let req = http
                .post(&url)
                .bearer_auth(&token)
                .json(&json!({"message": format!("burst {i}")}));
            async move { req.send().await.map(|r| r.status().as_u16()).unwrap_or(0) }
        })
        .buffer_unordered(16);
    // Kill the process after a few posts have been answered.
    let answered: Vec<u16> = posts.take(20).collect().await;
    first.kill9().await;
    assert!(answered.iter().all(|s| *s == 201), "{answered:?}");
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let owed = store.outbox().depth().await.unwrap();
    let (stored, missing_before) = missing_from_homes(&app, &author, &fans);
    // A new process (with workers) finishes what the dead one owed.
    let second = ServerProcess::serve(&app.redis, &env).await;
    drained(&app).await;
    let (stored_after, missing) = missing_from_homes(&app, &author, &fans);
    println!(
        "kill -9: {stored} statuses stored, {owed} writes owed in the outbox, \
         {missing_before} (status, follower) pairs missing right after the kill, {missing} after restart"
    );
    assert!(stored >= 20);
    // A post recorded in the outbox but not yet stored when the process
    // died is finished by the next one (its chain runs from the record):
    // nothing stored goes, and at most the owed writes are added.
    assert!(
        stored <= stored_after && stored_after <= stored + owed as usize,
        "{stored} stored at the kill, {owed} owed, {stored_after} after"
    );
    assert_eq!(missing, 0);
    // Paged by max_id and by page, the profile and a follower's home show
    // every stored status once, newest first (outbox-completed ones too).
    let stored: std::collections::HashSet<String> =
        profile_ids(&app, &author).into_iter().collect();
    let fan_token = app.operator_token(&fans[0].to_string(), &["read"]).await;
    for (path, token) in [
        (format!("/api/v1/users/{author}/statuses"), &token),
        ("/api/v1/timelines/home".to_string(), &fan_token),
    ] {
        let by_max_id = read_by_max_id(&http, &second.url(&path), token).await;
        let by_page = read_by_page(&http, &second.url(&path), token).await;
        assert_eq!(by_max_id, by_page, "{path}");
        once_newest_first(&by_max_id, &path);
        assert_eq!(each_once(&by_max_id, &path), stored, "{path}");
    }
    second.kill9().await;
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn an_unread_socket_asking_for_the_whole_buffer_again_and_again_stays_bounded() {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (uid, token) = app.user("hoarder").await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let padding = "x".repeat(500);
    // The statuses exist (a replay serves only what its reader may see now).
    {
        let mut conn = app.redis.conn();
        let mut pipe = redis::pipe();
        for i in 0..20_000u64 {
            let id = (i + 1).to_string();
            pipe.hset_multiple(
                format!("{}:status:{{s{id}}}", app.cfg.key_prefix),
                &[
                    ("id", id.as_str()),
                    ("uid", uid.as_str()),
                    ("login", "hoarder"),
                    ("message", "x"),
                    ("posted", "1"),
                    ("hashtags", "[]"),
                    ("mentions", "[]"),
                ],
            )
            .ignore();
        }
        let () = pipe.query(&mut conn).unwrap();
    }
    futures::stream::iter(0..20_000)
        .map(|i| {
            let store = store.clone();
            let body = json!({"type": "status", "at": i, "status": {"id": (i + 1).to_string(),
                "uid": uid, "login": "l", "message": padding, "posted": i, "hashtags": [], "mentions": []}})
            .to_string();
            async move { store.events().emit(&firehose::store::events::Body::from_json(body)).await.unwrap() }
        })
        .buffered(64)
        .collect::<Vec<_>>()
        .await;
    let server = ServerProcess::serve(&app.redis, &[]).await;
    let pid = server.child.id().unwrap();
    let before = rss_kib(pid);
    let mut ws = common::ws_connect_url(
        &format!("ws://127.0.0.1:{}/api/v1/stream", server.port),
        &token,
    )
    .await;
    for _ in 0..10 {
        let msg =
            json!({"type": "subscribe", "stream": "sample", "rate": 1, "last_event_id": "0-0"});
        ws.send(Message::Text(msg.to_string().into()))
            .await
            .unwrap();
    }
    // Let the server do what it will with the requests, unread.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let grown = rss_kib(pid).saturating_sub(before);
    println!("10 whole-buffer subscribes on an unread socket: server RSS grew {grown} KiB");
    assert!(grown < 64 * 1024, "grew {grown} KiB");
    // Read it all: after the tenth confirmation, the whole buffer once.
    let mut subscribed = 0;
    let mut ids = Vec::new();
    while subscribed < 10 || ids.len() < 20_000 {
        let msg = tokio::time::timeout(Duration::from_secs(30), ws.next())
            .await
            .expect("the replay keeps coming")
            .unwrap()
            .unwrap();
        let Message::Text(t) = msg else { continue };
        let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap();
        match v["type"].as_str() {
            Some("subscribed") => {
                // What an earlier subscription had already sent is its own.
                subscribed += 1;
                ids.clear();
            }
            Some("status") => ids.push(v["status"]["id"].as_str().unwrap().parse::<u64>().unwrap()),
            _ => {}
        }
    }
    assert_eq!(subscribed, 10);
    let distinct: std::collections::HashSet<u64> = ids.iter().copied().collect();
    assert_eq!(
        (ids.len(), distinct.len()),
        (20_000, 20_000),
        "the last replay, once each"
    );
    server.kill9().await;
}

#[tokio::test]
async fn killing_the_hubs_pubsub_connection_loses_and_repeats_nothing() {
    let app = TestApp::start().await;
    let (_, token) = app.user("steady").await;
    let mut sse = app
        .stream("/api/v1/stream/sample?rate=1", Some(&token), &[])
        .await;
    let mut ndjson = app
        .stream(
            "/api/v1/stream/user",
            Some(&token),
            &[("accept", "application/x-ndjson")],
        )
        .await;
    let mut posted = Vec::new();
    for i in 0..60 {
        if i % 15 == 7 {
            app.redis.kill_pubsub();
        }
        posted.push(app.say(&token, &format!("through the cut {i}")).await);
    }
    for (name, stream) in [("sse", &mut sse), ("ndjson", &mut ndjson)] {
        let mut seen = Vec::new();
        while seen.len() < posted.len() {
            let m = stream.next_event("a status").await;
            if m.data["type"] == "status" {
                seen.push(m.data["status"]["id"].as_str().unwrap().to_string());
            }
        }
        stream.assert_quiet(Duration::from_millis(300)).await;
        println!(
            "pub/sub killed 4 times: {name} got {} of {} statuses",
            seen.len(),
            posted.len()
        );
        assert_eq!(seen, posted, "{name}: every status once, in order");
    }
}

#[tokio::test]
async fn a_paused_redis_gives_503s_then_everything_recovers() {
    let app = TestApp::start().await;
    let (_, token) = app.user("patient").await;
    let mut s = app
        .stream("/api/v1/stream/sample?rate=1", Some(&token), &[])
        .await;
    let mut conn = app.redis.conn();
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(8000)
        .arg("ALL")
        .query(&mut conn)
        .unwrap();
    let started = std::time::Instant::now();
    let (status, body) = app.get("/api/v1/me", Some(&token)).await;
    let waited = started.elapsed();
    println!("paused Redis: /api/v1/me answered {status} after {waited:?}");
    assert_eq!(status, reqwest::StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "unavailable");
    // Once the pause ends, requests, readiness and streams come back alone.
    app.ready_again().await;
    let id = app.say(&token, "after the pause").await;
    let e = s.next_event("the status after the pause").await;
    assert_eq!(e.data["status"]["id"], json!(id));
}

#[tokio::test]
async fn redis_killed_and_restarted_in_a_large_fanout_loses_no_follower() {
    let redis = common::RedisServer::start_durable();
    let mut app = TestApp::start_on(redis, |c| {
        c.fanout_inline = 50;
        c.fanout_batch = 50;
        c.reclaim_ms = 500;
    })
    .await;
    let (author, token) = app.user("survivor").await;
    let fans = bulk_users(&app, "rr", 5000).await;
    bulk_follow(&app, &fans, author.parse().unwrap()).await;
    // A home read before the crashes loads its script into this Redis; a
    // restarted Redis has none, and reads must load it again.
    let fan = fans[0].to_string();
    let reader = app.operator_token(&fan, &["read"]).await;
    assert!(app
        .timeline_ids("/api/v1/timelines/home", Some(&reader))
        .await
        .is_empty());
    let sid = app.say(&token, "through two Redis crashes").await;
    let mut reached = Vec::new();
    for wait in [0, 40] {
        tokio::time::sleep(Duration::from_millis(wait)).await;
        reached.push(homes_with(&app, &fans, &sid));
        // SIGKILL: only what was fsynced (everything acknowledged) is kept.
        app.redis.restart();
    }
    drained(&app).await;
    let reached_after = homes_with(&app, &fans, &sid);
    println!(
        "Redis killed twice mid fan-out: {reached:?} of 5000 homes reached before each kill, {reached_after} after"
    );
    assert!(
        reached[0] < 5000,
        "the first kill came after the fan-out: make it bigger"
    );
    assert_eq!(reached_after, 5000);
    let reader = app.operator_token(&fan, &["read"]).await;
    assert_eq!(
        app.timeline_ids("/api/v1/timelines/home", Some(&reader))
            .await,
        vec![sid],
        "a home read works on the restarted Redis"
    );
}

/// A block killed after its events went out and before its outbox entry
/// was retired (a partitioned op: `store::outbox`). The next process's
/// sweeper finishes it without announcing it again, and forgets the op's
/// mark in `emitted` once the op has been retired long enough.
#[tokio::test]
async fn a_block_killed_between_its_events_and_its_retirement_is_announced_once() {
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (a, at) = app.user("blocks_once").await;
    let (b, _) = app.user("blocked_once").await;
    let env = [
        ("FIREHOSE_OUTBOX_LEASE", "1"),
        ("FIREHOSE_WORKERS", "0"),
        ("FIREHOSE_TEST_PAUSE_RETIRE_MS", "30000"),
    ];
    // The sign-ups above are partitioned writes too: their marks and notes
    // are set aside from the block's.
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix)
        .with_log_shards(app.cfg.log_shards as usize);
    let (ua, ub): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
    let part = firehose::store::keys::pair_part(ua, ub);
    // The relation event's shard (it is no one's: `log_shard(0)`).
    let emitted = keys.log_emitted(keys.log_shard(0));
    let marks_before: Vec<String> = app.redis.conn().hkeys(&emitted).unwrap();
    let notes_before: Vec<String> = app
        .redis
        .conn()
        .zrange(keys.part_retired(part), 0, -1)
        .unwrap();
    let first = ServerProcess::serve(&app.redis, &env).await;
    let asked = tokio::spawn(
        reqwest::Client::new()
            .post(first.url(&format!("/api/v1/users/{b}/block")))
            .bearer_auth(&at)
            .json(&json!({}))
            .send(),
    );
    let relation_events = || common::buffered_events(&app, "relation", &[]);
    app.eventually("the relation event is out", || async {
        relation_events() == 1
    })
    .await;
    first.kill9().await;
    let _ = asked.await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    assert_eq!(
        store.outbox().depth().await.unwrap(),
        1,
        "the block is owed"
    );
    let second = ServerProcess::serve(&app.redis, &[("FIREHOSE_OUTBOX_LEASE", "1")]).await;
    app.eventually("the sweeper retires it", || async {
        store.outbox().depth().await.is_ok_and(|d| d == 0)
    })
    .await;
    assert_eq!(relation_events(), 1, "announced once");
    assert_ne!(
        store.relations().bits(ua, ub).await.unwrap(),
        0,
        "the block holds"
    );
    // The mark stays while the op is recent; once it has been retired
    // long enough (its note aged by hand here), the sweeper forgets it.
    let mut conn = app.redis.conn();
    let marks: Vec<String> = conn.hkeys(&emitted).unwrap();
    // (`~n` is the shard's count of entries, not an op's mark.)
    let marks: Vec<String> = marks
        .into_iter()
        .filter(|m| !marks_before.contains(m) && !m.starts_with('~'))
        .collect();
    assert_eq!(marks.len(), 1, "the block's mark");
    let retired: Vec<String> = conn.zrange(keys.part_retired(part), 0, -1).unwrap();
    let retired: Vec<String> = retired
        .into_iter()
        .filter(|n| !notes_before.contains(n))
        .collect();
    assert_eq!(retired.len(), 1, "{retired:?}");
    let (op, shards) = retired[0].split_once(':').unwrap();
    assert_eq!(op, marks[0], "the block's note names its op");
    assert!(
        shards
            .split(',')
            .any(|k| k == keys.log_shard(0).to_string()),
        "and the shards it emitted in: {shards}"
    );
    let _: () = redis::cmd("ZADD")
        .arg(keys.part_retired(part))
        .arg("XX")
        .arg(0)
        .arg(&retired[0])
        .query(&mut conn)
        .unwrap();
    app.eventually("the mark is forgotten", || async {
        let mut conn = app.redis.conn();
        let mark: bool = conn.hexists(&emitted, &marks[0]).unwrap_or(true);
        let note: Option<f64> = conn
            .zscore(keys.part_retired(part), &retired[0])
            .unwrap_or(Some(0.0));
        !mark && note.is_none()
    })
    .await;
    println!("block killed before retirement: one relation event, mark forgotten later");
    second.kill9().await;
}

#[tokio::test]
async fn an_unfinished_write_that_keeps_failing_holds_up_no_other() {
    let app = TestApp::start_with(|c| c.outbox_lease = 1.0).await;
    let (me, token) = app.user("unblocked").await;
    let uid: u64 = me.parse().unwrap();
    let sid = app.say(&token, "to be deleted by a sweep").await;
    let part = firehose::store::keys::user_part(uid);
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix)
        .with_log_shards(app.cfg.log_shards as usize);
    // A poison: an account deletion of a user whose HASH is a string
    // (WRONGTYPE on every run), in the same outbox partition, claimed first.
    let poison = (1_000_000u64..)
        .find(|p| firehose::store::keys::user_part(*p) == part)
        .unwrap();
    let mut conn = app.redis.conn();
    let _: () = conn.set(keys.user(poison), "not a hash").unwrap();
    let member = |n: u64, op: &firehose::store::outbox::Op| {
        format!("{n}|{}", serde_json::to_string(op).unwrap())
    };
    let bad = firehose::store::outbox::Op::DeleteAccount(
        firehose::store::chains::payloads::DeleteAccountOp {
            uid: poison,
            login: "poison".into(),
            email: String::new(),
            at: 1.0,
        },
    );
    let good = firehose::store::outbox::Op::Delete(firehose::store::chains::delete::DeleteOp {
        sid: sid.parse().unwrap(),
        uid,
        private: false,
        at: 2.0,
    });
    let outbox = keys.part_outbox(part);
    let _: () = conn.zadd(&outbox, member(999_000_001, &bad), 1.0).unwrap();
    let _: () = conn.zadd(&outbox, member(999_000_002, &good), 2.0).unwrap();
    app.eventually("the other write is finished by a sweep", || async {
        app.get(&format!("/api/v1/statuses/{sid}"), None).await.0 == 404
    })
    .await;
    let poisoned: Option<f64> = conn.zscore(&outbox, member(999_000_001, &bad)).unwrap();
    assert!(poisoned.is_some(), "the failing write stays owed");
}

#[tokio::test]
async fn a_server_killed_mid_burst_of_likes_leaves_one_notification_per_like() {
    let app = TestApp::start().await;
    let (author_id, author) = app.user("liked_a_lot").await;
    let sids: Vec<String> = {
        let mut v = Vec::new();
        for i in 0..4 {
            v.push(app.say(&author, &format!("like me {i}")).await);
        }
        v
    };
    let fans = bulk_users(&app, "kfan", 60).await;
    let mut tokens = Vec::new();
    for fan in &fans {
        tokens.push(
            app.operator_token(&fan.to_string(), &["read", "write"])
                .await,
        );
    }
    let first = ServerProcess::serve(&app.redis, &[]).await;
    let http = reqwest::Client::new();
    let likes = futures::stream::iter(
        tokens
            .iter()
            .enumerate()
            .flat_map(|(i, t)| sids.iter().map(move |sid| (i, t.clone(), sid.clone()))),
    )
    .map(|(_, token, sid)| {
        let req = http
            .post(first.url(&format!("/api/v1/statuses/{sid}/like")))
            .bearer_auth(token);
        async move { req.send().await.map(|r| r.status().as_u16()).unwrap_or(0) }
    })
    .buffer_unordered(16);
    // Killed after a part of the burst was answered.
    let answered: Vec<u16> = likes.take(100).collect().await;
    first.kill9().await;
    assert!(
        answered.iter().all(|s| *s == 200 || *s == 201),
        "{answered:?}"
    );
    // Every like that stands, and only those, has one notification, once
    // the notifier (this process's, or the dead one's after its lease) has
    // read the buffer.
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let mut likers = 0;
    for sid in &sids {
        let page = store
            .likes()
            .likers(
                sid.parse().unwrap(),
                &firehose::store::paging::Cursor::Start,
                1000,
            )
            .await
            .unwrap();
        likers += page.ids.len();
    }
    let count = || async {
        let mut n = 0;
        let mut query = "?types=like&count=200".to_string();
        loop {
            let (_, body) = app
                .get(&format!("/api/v1/notifications{query}"), Some(&author))
                .await;
            n += body["notifications"].as_array().unwrap().len();
            match body["next_cursor"].as_str() {
                Some(c) => query = format!("?types=like&count=200&cursor={c}"),
                None => return n,
            }
        }
    };
    app.eventually("one notification per standing like", || async {
        count().await == likers
    })
    .await;
    // And no more come.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let notified = count().await;
    println!(
        "kill -9 mid-burst of likes: {} answered, {likers} likes stand, {notified} like notifications",
        answered.len()
    );
    assert_eq!(notified, likers);
    assert!(likers >= answered.len());
    let _ = author_id;
}
