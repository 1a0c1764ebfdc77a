//! Account-wide operations killed half way (messages, deletion,
//! suspension, logout, sign-up) and finished by the next process.

use super::*;

#[tokio::test]
async fn a_server_killed_mid_send_leaves_each_message_stored_once_and_delivered_once() {
    // The in-process app sets up, watches and reads: no workers of its own.
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (_, sender) = app.user("dm_killed").await;
    let (reader, reader_token) = app.user("dm_survivor").await;
    let (_, c) = app
        .post(
            "/api/v1/conversations",
            Some(&sender),
            json!({"participants": [reader], "text": "before the burst"}),
        )
        .await;
    let cid = c["id"].as_str().unwrap().to_string();
    let mut stream = app
        .stream("/api/v1/stream/user", Some(&reader_token), &[])
        .await;
    let env = [("FIREHOSE_OUTBOX_LEASE", "1")];
    let first = ServerProcess::serve(&app.redis, &env).await;
    let http = reqwest::Client::new();
    let send = |base: String, i: usize| {
        let req = http
            .post(format!("{base}/api/v1/conversations/{cid}/messages"))
            .bearer_auth(&sender)
            .header("Idempotency-Key", format!("burst-{i}"))
            .json(&json!({"text": format!("burst {i}")}));
        async move {
            match req.send().await {
                Ok(r) if r.status() == 201 => r.json::<serde_json::Value>().await.ok(),
                _ => None,
            }
        }
    };
    let base = first.url("");
    let base = base.trim_end_matches('/').to_string();
    let answered: Vec<_> = futures::stream::iter(0..100)
        .map(|i| send(base.clone(), i))
        .buffer_unordered(16)
        .take(20)
        .collect()
        .await;
    first.kill9().await;
    assert!(answered.iter().all(Option::is_some));
    // The sender retries every message, with its key, on another process.
    let second = ServerProcess::serve(&app.redis, &env).await;
    let base = second.url("");
    let base = base.trim_end_matches('/').to_string();
    let mut by_key = Vec::new();
    for i in 0..100 {
        let m = send(base.clone(), i).await.expect("a retry answers 201");
        assert_eq!(m["text"], json!(format!("burst {i}")));
        by_key.push(m["id"].as_str().unwrap().to_string());
    }
    drained(&app).await;
    // Stored once each: the conversation holds exactly the 100 (and the first).
    let (_, all) = app
        .get(
            &format!("/api/v1/conversations/{cid}/messages?count=200"),
            Some(&sender),
        )
        .await;
    let stored: Vec<String> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    let unique: std::collections::HashSet<&String> = stored.iter().collect();
    assert_eq!((stored.len(), unique.len()), (101, 101));
    for id in &by_key {
        assert!(unique.contains(id), "answered {id} is not stored");
    }
    // Delivered once each.
    let mut delivered = std::collections::HashMap::<String, usize>::new();
    while delivered.len() < 100 {
        let e = stream.next_event("a direct message").await;
        if e.data["type"] == "direct_message" {
            *delivered
                .entry(e.data["message"]["id"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
    }
    stream.assert_quiet(Duration::from_millis(1000)).await;
    let repeated = delivered.values().filter(|n| **n > 1).count();
    println!(
        "kill -9 mid-send: {} answered before the kill, {} stored, {} delivered, {repeated} repeated",
        answered.len(),
        stored.len() - 1,
        delivered.len()
    );
    assert_eq!(repeated, 0);
    assert!(by_key.iter().all(|id| delivered.contains_key(id)));
    second.kill9().await;
}

#[tokio::test]
async fn an_account_deletion_killed_half_way_is_finished_by_the_next_process() {
    account_deletion_killed_during(false).await;
}

#[tokio::test]
async fn an_account_deletion_killed_during_its_unfollows_is_finished_by_the_next_process() {
    account_deletion_killed_during(true).await;
}

/// Kills the process deleting an account of 300 statuses and 300
/// followers once its undoing has begun (`unfollows`: once its statuses are
/// gone and its followers going), then checks the next process leaves
/// nothing of it.
async fn account_deletion_killed_during(unfollows: bool) {
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (me, token) = app.user("half_deleted").await;
    let fans = bulk_users(&app, "hd", 300).await;
    bulk_follow(&app, &fans, me.parse().unwrap()).await;
    let http = reqwest::Client::new();
    futures::stream::iter(0..300)
        .map(|i| {
            let req = http
                .post(app.url("/api/v1/statuses"))
                .bearer_auth(&token)
                .json(&json!({"message": format!("soon gone {i} #halfway")}));
            async move { req.send().await.map(|r| r.status().as_u16()).unwrap_or(0) }
        })
        .buffer_unordered(16)
        .for_each(|_| async {})
        .await;
    let env = [("FIREHOSE_OUTBOX_LEASE", "1")];
    let first = ServerProcess::serve(&app.redis, &env).await;
    let request = http
        .delete(first.url("/api/v1/me"))
        .bearer_auth(&token)
        .json(&json!({"password": "password123"}))
        .send();
    let asked = tokio::spawn(request);
    // Kill the process once the account is closed and its undoing has begun.
    let user_key = format!("{}:user:{{{me}}}", app.cfg.key_prefix);
    let followers_key = format!("{user_key}:followers");
    app.eventually("the account is closed", || async {
        let mut conn = app.redis.conn();
        let deleted: Option<String> = conn.hget(&user_key, "deleted").unwrap_or(None);
        // Its statuses go first (while the follows stand), then the follows.
        let followers: usize = conn.zcard(&followers_key).unwrap_or(0);
        let statuses: usize = conn.zcard(format!("{user_key}:profile")).unwrap_or(0);
        deleted.is_some()
            && if unfollows {
                statuses == 0 && followers < 300
            } else {
                followers < 300 || statuses < 300
            }
    })
    .await;
    first.kill9().await;
    let _ = asked.await;
    let (followers_left, statuses_left) = {
        let mut conn = app.redis.conn();
        let f: usize = conn.zcard(&followers_key).unwrap();
        let s: usize = conn.zcard(format!("{user_key}:profile")).unwrap();
        (f, s)
    };
    let second = ServerProcess::serve(&app.redis, &env).await;
    drained(&app).await;
    let mut conn = app.redis.conn();
    let exists: bool = conn.exists(&user_key).unwrap();
    println!(
        "account deletion killed half way: {followers_left} of 300 followers and {statuses_left} of 300 statuses left at the kill; user key after restart: {exists}"
    );
    assert!(
        followers_left > 0 || statuses_left > 0,
        "the kill came too late to test anything"
    );
    assert!(!exists);
    // Nothing of the account anywhere: homes, the tag, follow counts.
    let mut in_homes = 0;
    for f in &fans {
        let home: usize = conn
            .zcard(format!("{}:user:{{{f}}}:home", app.cfg.key_prefix))
            .unwrap();
        in_homes += home;
        let following: usize = conn
            .zcard(format!("{}:user:{{{f}}}:following", app.cfg.key_prefix))
            .unwrap();
        assert_eq!(following, 0);
    }
    let left: Vec<String> = conn
        .zrange(
            format!("{}:user:{{{}}}:home", app.cfg.key_prefix, fans[0]),
            0,
            -1,
        )
        .unwrap();
    let described: Vec<String> = left
        .iter()
        .map(|sid| {
            let h: std::collections::HashMap<String, String> = conn
                .hgetall(format!("{}:status:{{s{sid}}}", app.cfg.key_prefix))
                .unwrap();
            format!("{sid}: {h:?}")
        })
        .collect();
    assert_eq!(
        in_homes, 0,
        "statuses left in followers' homes: {described:?}"
    );
    let (_, tagged) = app.get("/api/v1/timelines/tag/halfway", None).await;
    assert_eq!(tagged, json!([]));
    second.kill9().await;
}

/// A suspension made through one process ends the user's streams on
/// another and hides them there; their writes racing it (answered or
/// not) leave nothing visible behind; lifting it brings back what they
/// wrote before.
#[tokio::test]
async fn a_suspension_reaches_every_process_and_writes_racing_it_leave_nothing_visible() {
    let app = TestApp::start().await;
    let other = ServerProcess::serve(&app.redis, &[]).await;
    let (alice_id, alice) = app.user("race_alice").await;
    let (bob_id, bob) = app.user("race_bob").await;
    let admin = app.operator_token(&bob_id, &["read", "admin"]).await;
    app.follow(&bob, &alice_id).await;
    let before = app.say(&alice, "before #racetag").await;
    let http = reqwest::Client::new();
    let mut theirs = app
        .stream_url(&other.url("/api/v1/stream/user"), Some(&alice), &[])
        .await;
    assert_eq!(theirs.status, reqwest::StatusCode::OK);
    // Alice writes from 8 connections while the suspension lands.
    let writer = {
        let (http, url, token) = (http.clone(), other.url("/api/v1/statuses"), alice.clone());
        tokio::spawn(async move {
            let answered = futures::stream::iter(0..400)
                .map(|i| {
                    let req = http
                        .post(&url)
                        .bearer_auth(&token)
                        .json(&json!({"message": format!("racing {i} #racetag")}));
                    async move {
                        match req.send().await {
                            Ok(r) if r.status().as_u16() == 201 => {
                                let v: serde_json::Value = r.json().await.unwrap_or_default();
                                v["id"].as_str().map(str::to_string)
                            }
                            _ => None,
                        }
                    }
                })
                .buffer_unordered(8)
                .filter_map(|id| async move { id })
                .collect::<Vec<String>>()
                .await;
            answered
        })
    };
    tokio::time::sleep(Duration::from_millis(30)).await;
    let (status, _) = app
        .post(
            &format!("/api/v1/admin/users/{alice_id}/suspend"),
            Some(&admin),
            json!({}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK);
    // Her own statuses come first; then the end, with `suspended`.
    let bye = loop {
        let m = theirs.next("her stream on the other process ends").await;
        if m.data["type"] == "disconnect" {
            break m;
        }
    };
    assert_eq!(bye.data["code"], "suspended", "{:?}", bye.data);
    let answered = writer.await.unwrap();
    // Let what was under way finish (workers sweep too), then look
    // everywhere, on both processes.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut seen = 0;
    for base in [app.url(""), other.url("")] {
        for path in [
            "/api/v1/timelines/tag/racetag".to_string(),
            format!("/api/v1/users/{alice_id}/statuses"),
        ] {
            let r = http
                .get(format!("{base}{path}"))
                .bearer_auth(&bob)
                .send()
                .await
                .unwrap();
            if r.status().is_success() {
                let v: serde_json::Value = r.json().await.unwrap();
                seen += v.as_array().map_or(0, Vec::len);
            }
        }
        let r = http
            .get(format!("{base}/api/v1/timelines/home?count=200"))
            .bearer_auth(&bob)
            .send()
            .await
            .unwrap();
        let home: serde_json::Value = r.json().await.unwrap();
        seen += home
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["uid"] == alice_id.as_str())
            .count();
        for id in answered.iter().take(50).chain(std::iter::once(&before)) {
            let r = http
                .get(format!("{base}/api/v1/statuses/{id}"))
                .send()
                .await
                .unwrap();
            seen += usize::from(r.status().is_success());
        }
    }
    println!(
        "suspension racing 400 posts: {} answered 201 before it landed, {seen} visible after it on two processes",
        answered.len()
    );
    assert_eq!(seen, 0, "nothing of a suspended user is visible");
    let (status, _) = app
        .call(
            reqwest::Method::DELETE,
            &format!("/api/v1/admin/users/{alice_id}/suspend"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK);
    app.eventually("the other process shows her again", || async {
        let r = http
            .get(other.url(&format!("/api/v1/statuses/{before}")))
            .send()
            .await
            .unwrap();
        r.status().is_success()
    })
    .await;
    other.kill9().await;
}

/// A process killed in the middle of a suspension (after the user's flag
/// is set, before the sessions end and the event goes out): the next
/// process's sweeper finishes it. The user's stream on a third process
/// ends with `suspended`, their token is refused, nothing of theirs shows.
#[tokio::test]
async fn a_suspension_killed_half_way_is_finished_by_the_next_process() {
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (alice_id, alice) = app.user("half_suspended").await;
    let (bob_id, _) = app.user("half_watcher").await;
    let admin = app.operator_token(&bob_id, &["read", "admin"]).await;
    let sid = app.say(&alice, "soon hidden #halfsusp").await;
    // A process that only serves (no workers, so no sweeper).
    let watcher = ServerProcess::serve(&app.redis, &[("FIREHOSE_WORKERS", "0")]).await;
    let mut theirs = app
        .stream_url(&watcher.url("/api/v1/stream/user"), Some(&alice), &[])
        .await;
    assert_eq!(theirs.status, reqwest::StatusCode::OK);
    // This process stops for 30 s after setting the flag: it is killed then.
    let env = [
        ("FIREHOSE_OUTBOX_LEASE", "1"),
        ("FIREHOSE_TEST_PAUSE_SUSPEND_MS", "30000"),
    ];
    let first = ServerProcess::serve(&app.redis, &env).await;
    let http = reqwest::Client::new();
    let asked = tokio::spawn(
        http.post(first.url(&format!("/api/v1/admin/users/{alice_id}/suspend")))
            .bearer_auth(&admin)
            .send(),
    );
    let user_key = format!("{}:user:{{{alice_id}}}", app.cfg.key_prefix);
    app.eventually("the flag is set", || async {
        let mut conn = app.redis.conn();
        let v: Option<String> = conn.hget(&user_key, "suspended").unwrap_or(None);
        v.as_deref() == Some("1")
    })
    .await;
    first.kill9().await;
    let _ = asked.await;
    // Half way: her session still lives (her user is already hidden: 404).
    let (status, _) = app.get("/api/v1/me", Some(&alice)).await;
    assert_ne!(
        status,
        reqwest::StatusCode::UNAUTHORIZED,
        "the kill came before the sessions ended"
    );
    let second = ServerProcess::serve(&app.redis, &[("FIREHOSE_OUTBOX_LEASE", "1")]).await;
    let bye = loop {
        let m = theirs.next("the end of her stream").await;
        if m.data["type"] == "disconnect" {
            break m;
        }
    };
    assert_eq!(bye.data["code"], "suspended", "{:?}", bye.data);
    // The event goes out just before the sessions end.
    app.eventually("her token is refused", || async {
        app.get("/api/v1/me", Some(&alice)).await.0 == reqwest::StatusCode::UNAUTHORIZED
    })
    .await;
    for base in [app.url(""), watcher.url(""), second.url("")] {
        let r = http
            .get(format!("{base}/api/v1/statuses/{sid}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), reqwest::StatusCode::NOT_FOUND, "{base}");
        let r = http
            .get(format!("{base}/api/v1/timelines/tag/halfsusp"))
            .send()
            .await
            .unwrap();
        let v: serde_json::Value = r.json().await.unwrap();
        assert_eq!(v, json!([]), "{base}");
    }
    let (_, audit) = app.get("/api/v1/admin/audit", Some(&admin)).await;
    assert_eq!(
        audit["actions"].as_array().unwrap().len(),
        1,
        "one entry, whoever finished it: {audit}"
    );
    println!("suspension killed half way: finished by the next process's sweeper, one audit entry");
    second.kill9().await;
    watcher.kill9().await;
}

/// A process killed while ending a session (its authority gone, its
/// revocation not yet out): the token is refused from the first step, and
/// the next process's sweeper announces the end, so the session's stream on
/// another process closes with `revoked`.
#[tokio::test]
async fn a_logout_killed_half_way_still_closes_the_sessions_streams() {
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (_, token) = app.user("half_logged_out").await;
    // A process that only serves (no workers, so no sweeper).
    let watcher = ServerProcess::serve(&app.redis, &[("FIREHOSE_WORKERS", "0")]).await;
    let mut theirs = app
        .stream_url(&watcher.url("/api/v1/stream/user"), Some(&token), &[])
        .await;
    assert_eq!(theirs.status, reqwest::StatusCode::OK);
    let env = [
        ("FIREHOSE_OUTBOX_LEASE", "1"),
        ("FIREHOSE_WORKERS", "0"),
        ("FIREHOSE_TEST_PAUSE_SESSION_END_MS", "30000"),
    ];
    let first = ServerProcess::serve(&app.redis, &env).await;
    let asked = tokio::spawn(
        reqwest::Client::new()
            .delete(first.url("/api/v1/sessions/current"))
            .bearer_auth(&token)
            .send(),
    );
    app.eventually("the token is refused", || async {
        app.get("/api/v1/me", Some(&token)).await.0 == reqwest::StatusCode::UNAUTHORIZED
    })
    .await;
    first.kill9().await;
    let _ = asked.await;
    let second = ServerProcess::serve(&app.redis, &[("FIREHOSE_OUTBOX_LEASE", "1")]).await;
    let bye = loop {
        let m = theirs.next("the end of the stream").await;
        if m.data["type"] == "disconnect" {
            break m;
        }
    };
    assert_eq!(bye.data["code"], "revoked", "{:?}", bye.data);
    app.eventually("the index forgets it", || async {
        indexed_sessions(&app).is_empty()
    })
    .await;
    println!("logout killed half way: token refused at once, stream closed by the next process");
    second.kill9().await;
    watcher.kill9().await;
}

/// Processes killed between a sign-up's two name claims (its login held,
/// its email not yet): the next process's sweeper finishes the one whose
/// email is still free (the user logs in), and gives back the login of the
/// one whose email someone else took meanwhile (the login registers).
#[tokio::test]
async fn sign_ups_killed_between_their_names_are_finished_or_give_their_login_back() {
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let env = [
        ("FIREHOSE_OUTBOX_LEASE", "1"),
        ("FIREHOSE_WORKERS", "0"),
        ("FIREHOSE_TEST_PAUSE_SIGNUP_MS", "30000"),
    ];
    let first = ServerProcess::serve(&app.redis, &env).await;
    let http = reqwest::Client::new();
    let asked: Vec<_> = ["halfway_kept", "halfway_lost"]
        .into_iter()
        .map(|login| {
            tokio::spawn(
                http.post(first.url("/api/v1/users"))
                    .json(&json!({"login": login, "name": "n", "email": format!("{login}@example.com"), "password": "password123"}))
                    .send(),
            )
        })
        .collect();
    for login in ["halfway_kept", "halfway_lost"] {
        let key = format!("{}:name:{{{login}}}", app.cfg.key_prefix);
        app.eventually("the login is claimed", || async {
            let mut conn = app.redis.conn();
            conn.exists::<_, bool>(&key).unwrap_or(false)
        })
        .await;
    }
    first.kill9().await;
    for a in asked {
        let _ = a.await;
    }
    // Someone takes the second one's email while its sign-up is stopped.
    let (status, body) = app
        .post(
            "/api/v1/users",
            None,
            json!({"login": "quick_one", "name": "n", "email": "halfway_lost@example.com", "password": "password123"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{body}");
    let second = ServerProcess::serve(&app.redis, &[("FIREHOSE_OUTBOX_LEASE", "1")]).await;
    app.eventually("the kept sign-up is finished", || async {
        let (status, _) = app
            .post(
                "/api/v1/sessions",
                None,
                json!({"identifier": "halfway_kept@example.com", "password": "password123"}),
            )
            .await;
        status == reqwest::StatusCode::CREATED
    })
    .await;
    let looker = app.any_token().await;
    app.eventually("the lost sign-up gives its login back", || async {
        let (status, _) = app
            .get("/api/v1/users/lookup?login=halfway_lost", Some(&looker))
            .await;
        let mut conn = app.redis.conn();
        let held: bool = conn
            .exists(format!("{}:name:{{halfway_lost}}", app.cfg.key_prefix))
            .unwrap_or(true);
        status == reqwest::StatusCode::NOT_FOUND && !held
    })
    .await;
    let (status, body) = app
        .post(
            "/api/v1/users",
            None,
            json!({"login": "halfway_lost", "name": "n", "email": "another@example.com", "password": "password123"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{body}");
    println!("sign-ups killed between their names: one finished, one gave its login back");
    second.kill9().await;
}
