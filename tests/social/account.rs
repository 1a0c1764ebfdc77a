//! Your account: taking everything it holds away (the export).

use crate::common::{bulk_users, TestApp};
use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{json, Value};

#[tokio::test]
async fn the_export_streams_everything_the_account_holds_newest_first() {
    let app = TestApp::start().await;
    let (me, token) = app.user("exporter").await;
    let (friend, friend_token) = app.user("friendly").await;
    // More statuses than one page of the export (200).
    let mut posted = Vec::new();
    for i in 0..230 {
        posted.push(app.say(&token, &format!("status number {i}")).await);
    }
    app.follow(&token, &friend).await;
    app.follow(&friend_token, &me).await;
    let theirs = app.say(&friend_token, "like me").await;
    let (status, _) = app
        .post(
            &format!("/api/v1/statuses/{theirs}/like"),
            Some(&token),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let fans = bulk_users(&app, "exportfan", 3).await;
    crate::common::bulk_follow(&app, &fans, me.parse().unwrap()).await;

    let resp = app
        .http
        .get(app.url("/api/v1/me/export"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "application/x-ndjson"
    );
    // Read as a stream, a chunk at a time.
    let mut text = String::new();
    let mut chunks = resp.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |kind: &str| -> Vec<&Value> { lines.iter().filter(|l| l["type"] == kind).collect() };
    let user = of("user");
    assert_eq!(user.len(), 1);
    assert_eq!(lines[0]["type"], "user", "the user comes first");
    assert_eq!(user[0]["email"], "exporter@example.com");
    assert!(user[0].get("password").is_none() && !text.contains("argon2"));
    let statuses: Vec<String> = of("status")
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    let mut newest_first = posted.clone();
    newest_first.reverse();
    assert_eq!(statuses, newest_first, "every status, newest first, once");
    assert_eq!(of("status")[0]["message"], "status number 229");
    let following = of("following");
    assert_eq!(following.len(), 1);
    assert_eq!(
        (following[0]["id"].as_str(), following[0]["login"].as_str()),
        (Some(friend.as_str()), Some("friendly"))
    );
    let followers: Vec<&str> = of("follower")
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(followers.len(), 4);
    assert!(followers.contains(&friend.as_str()));
    let likes = of("like");
    assert_eq!(likes.len(), 1);
    assert_eq!(likes[0]["status_id"], theirs.as_str());
    // The types come in order: user, statuses, following, followers, likes.
    let order: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    let mut kinds = order.clone();
    kinds.dedup();
    assert_eq!(kinds, ["user", "status", "following", "follower", "like"]);
    // Only for the account itself.
    let (status, _) = app.get("/api/v1/me/export", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

/// PATCH /api/v1/me as `token`.
async fn patch_me(app: &TestApp, token: &str, body: Value) -> (StatusCode, Value) {
    let resp = app
        .http
        .patch(app.url("/api/v1/me"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_new_login_or_email_is_unique_and_frees_the_old_one_at_once() {
    let app = TestApp::start().await;
    let (id, token) = app.user("olga").await;
    app.register("petra").await;
    // Statuses posted before the change, read (and so cached) here and by
    // another process on the same Redis.
    let before = app.say(&token, "posted as olga").await;
    let other = crate::common::ServerProcess::serve(&app.redis, &[]).await;
    let http = reqwest::Client::new();
    let read_elsewhere = || async {
        let s: Value = http
            .get(other.url(&format!("/api/v1/statuses/{before}")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        s["login"].as_str().unwrap_or("").to_string()
    };
    assert_eq!(read_elsewhere().await, "olga");
    let (_, s) = app.get(&format!("/api/v1/statuses/{before}"), None).await;
    assert_eq!(s["login"], "olga");
    // Taken, as a login or an email, in any case: 409, nothing changes.
    for body in [
        json!({"login": "PETRA"}),
        json!({"login": "petra"}),
        json!({"email": "Petra@Example.com"}),
    ] {
        let (status, err) = patch_me(&app, &token, body.clone()).await;
        crate::assert_error(status, &err, StatusCode::CONFLICT);
    }
    for body in [
        json!({"login": "no"}),
        json!({"login": "12345"}),
        json!({"login": "bad login"}),
        json!({"email": "nowhere"}),
    ] {
        let (status, err) = patch_me(&app, &token, body.clone()).await;
        crate::assert_error(status, &err, StatusCode::BAD_REQUEST);
    }
    let (status, me) = patch_me(
        &app,
        &token,
        json!({"login": "Olga_New", "email": "olga@new.example"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(me["login"], "Olga_New");
    assert_eq!(me["email"], "olga@new.example");
    let (_, shown) = app.get(&format!("/api/v1/users/{id}"), None).await;
    assert_eq!(shown["login"], "Olga_New");
    // Lookups by the new values work, by the old ones never.
    let (status, found) = app
        .get(
            "/api/v1/users/lookup?login=olga_new",
            Some(&app.any_token().await),
        )
        .await;
    assert_eq!(
        (status, found["id"].as_str()),
        (StatusCode::OK, Some(id.as_str()))
    );
    let (status, _) = app
        .get(
            "/api/v1/users/lookup?email=OLGA@new.example",
            Some(&app.any_token().await),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    for old in ["login=olga", "email=olga@example.com"] {
        let (status, _) = app
            .get(
                &format!("/api/v1/users/lookup?{old}"),
                Some(&app.any_token().await),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{old}");
    }
    // The new names log in, the old do not; the old are free for others.
    let login = |identifier: &str| json!({"identifier": identifier, "password": "password123"});
    assert_eq!(
        app.post("/api/v1/sessions", None, login("olga_new"))
            .await
            .0,
        StatusCode::CREATED
    );
    assert_eq!(
        app.post("/api/v1/sessions", None, login("olga@new.example"))
            .await
            .0,
        StatusCode::CREATED
    );
    assert_eq!(
        app.post("/api/v1/sessions", None, login("olga")).await.0,
        StatusCode::UNAUTHORIZED
    );
    app.register("olga").await;
    // A status posted after the change carries the new login, and those
    // posted before show it too, here and in the other process.
    let status = app.post_status(&token, json!({"message": "renamed"})).await;
    assert_eq!(status["login"], "Olga_New");
    let (_, s) = app.get(&format!("/api/v1/statuses/{before}"), None).await;
    assert_eq!(s["login"], "Olga_New");
    let (_, page) = app.get(&format!("/api/v1/users/{id}/statuses"), None).await;
    assert!(
        page.as_array()
            .unwrap()
            .iter()
            .all(|s| s["login"] == "Olga_New"),
        "{page}"
    );
    app.eventually("the other process shows the new login", || async {
        read_elsewhere().await == "Olga_New"
    })
    .await;
    other.kill9().await;
    // Only the case: still the same user's, kept as typed.
    let (status, me) = patch_me(&app, &token, json!({"login": "OLGA_NEW"})).await;
    assert_eq!(
        (status, me["login"].as_str()),
        (StatusCode::OK, Some("OLGA_NEW"))
    );
}

#[tokio::test]
async fn users_racing_for_one_login_get_one_winner() {
    let app = TestApp::start().await;
    let mut tokens = Vec::new();
    for i in 0..8 {
        tokens.push(app.user(&format!("racer{i}")).await.1);
    }
    for round in 0..5 {
        let wanted = format!("prize{round}");
        let answers = futures::future::join_all(
            tokens
                .iter()
                .map(|t| patch_me(&app, t, json!({"login": wanted.clone()}))),
        )
        .await;
        let won: Vec<&Value> = answers
            .iter()
            .filter(|(s, _)| *s == StatusCode::OK)
            .map(|(_, me)| me)
            .collect();
        let lost = answers
            .iter()
            .filter(|(s, _)| *s == StatusCode::CONFLICT)
            .count();
        assert_eq!((won.len(), lost), (1, 7), "round {round}: {answers:?}");
        // The index and the winner agree; the loser kept their own login.
        let (_, found) = app
            .get(
                &format!("/api/v1/users/lookup?login={wanted}"),
                Some(&tokens[0]),
            )
            .await;
        assert_eq!(found["id"], won[0]["id"]);
        assert_eq!(found["login"], wanted.as_str());
    }
    // Every user still holds exactly one login, and every login one user.
    let mut conn = app.redis.conn();
    let names: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:name:*", app.cfg.key_prefix))
        .query(&mut conn)
        .unwrap();
    let holders: std::collections::HashSet<String> = names
        .iter()
        .filter(|k| !k.contains('@'))
        .map(|k| redis::cmd("GET").arg(k).query(&mut conn).unwrap())
        .collect();
    let logins = names.iter().filter(|k| !k.contains('@')).count();
    assert_eq!((logins, holders.len()), (8, 8), "{names:?}");
}

#[tokio::test]
async fn dm_policy_is_everyone_until_changed_and_shown_only_to_its_owner() {
    let app = TestApp::start().await;
    let (id, token) = app.user("dora").await;
    let (_, me) = app.get("/api/v1/me", Some(&token)).await;
    assert_eq!(me["dm_policy"], "everyone");
    let (status, me) = patch_me(&app, &token, json!({"dm_policy": "following"})).await;
    assert_eq!(
        (status, me["dm_policy"].as_str()),
        (StatusCode::OK, Some("following"))
    );
    assert_eq!(me["email"], "dora@example.com");
    let (_, me) = app.get("/api/v1/me", Some(&token)).await;
    assert_eq!(me["dm_policy"], "following");
    let (_, public) = app.get(&format!("/api/v1/users/{id}"), None).await;
    assert!(public.get("dm_policy").is_none() && public.get("email").is_none());
    let (status, err) = patch_me(&app, &token, json!({"dm_policy": "nobody"})).await;
    crate::assert_error(status, &err, StatusCode::BAD_REQUEST);
}

async fn delete_me(app: &TestApp, token: &str, password: &str) -> (StatusCode, Value) {
    app.call(
        reqwest::Method::DELETE,
        "/api/v1/me",
        Some(token),
        Some(json!({ "password": password })),
    )
    .await
}

#[tokio::test]
async fn an_account_with_statuses_and_no_followers_is_deleted_to_its_last_key() {
    let app = TestApp::start().await;
    let (me, token) = app.user("nobody_follows").await;
    app.say(&token, "said to no one").await;
    let (status, _) = delete_me(&app, &token, "password123").await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix)
        .with_log_shards(app.cfg.log_shards as usize);
    let uid: u64 = me.parse().unwrap();
    app.eventually("the account's keys are gone", || async {
        let mut conn = app.redis.conn();
        let left: u64 = redis::cmd("EXISTS")
            .arg(keys.user(uid))
            .arg(keys.profile(uid))
            .query(&mut conn)
            .unwrap_or(1);
        left == 0
    })
    .await;
}

#[tokio::test]
async fn a_deleted_account_is_gone_at_once_and_everything_it_held_is_undone() {
    let app = TestApp::start_with(|cfg| cfg.max_streams_per_user = 20).await;
    let (me, token) = app.user("leaving").await;
    let (b, bt) = app.user("stays_b").await;
    let (c, ct) = app.user("stays_c").await;
    let (e, et) = app.user("stays_e").await;
    // Everything an account holds: statuses (a tag, a mention, a reply),
    // follows both ways, a request, a like and a repost, a block, a mute on
    // it, conversations.
    app.follow(&token, &b).await;
    app.follow(&ct, &me).await;
    let mine = app.say(&token, "my #leavingtag status for @stays_c").await;
    let theirs = app.say(&bt, "b's status").await;
    let reply = app
        .post_status(&token, json!({"message": "a reply", "reply_to": theirs}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.post(
        &format!("/api/v1/statuses/{theirs}/like"),
        Some(&token),
        json!({}),
    )
    .await;
    let (_, repost) = app
        .post(
            &format!("/api/v1/statuses/{theirs}/repost"),
            Some(&token),
            json!({}),
        )
        .await;
    let repost = repost["id"].as_str().unwrap().to_string();
    app.post(&format!("/api/v1/users/{e}/block"), Some(&token), json!({}))
        .await;
    app.post(&format!("/api/v1/users/{me}/mute"), Some(&bt), json!({}))
        .await;
    app.call(
        reqwest::Method::PATCH,
        "/api/v1/me",
        Some(&et),
        Some(json!({"private": true})),
    )
    .await;
    let (_, group) = app
        .post(
            "/api/v1/conversations",
            Some(&token),
            json!({"participants": [b, c], "text": "group hello", "title": "g"}),
        )
        .await;
    let group = group["id"].as_str().unwrap().to_string();
    let (_, direct) = app
        .post(
            "/api/v1/conversations",
            Some(&token),
            json!({"participants": [c], "text": "just us"}),
        )
        .await;
    let direct = direct["id"].as_str().unwrap().to_string();
    let other_session = app.login("leaving").await;
    let mut stream = app
        .stream("/api/v1/stream/user", Some(&other_session), &[])
        .await;
    let firehose = app.operator_token(&c, &["read", "firehose"]).await;
    let mut c_stream = app
        .stream("/api/v1/stream/firehose", Some(&firehose), &[])
        .await;

    let (status, err) = delete_me(&app, &token, "not my password").await;
    crate::assert_error(status, &err, StatusCode::FORBIDDEN);
    assert_eq!(err["error"]["code"], "wrong_password");
    let (status, _) = delete_me(&app, &token, "password123").await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    // Gone at once: sessions, login, the user, their statuses.
    let (status, _) = app.get("/api/v1/me", Some(&token)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = app.get("/api/v1/me", Some(&other_session)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(stream.ended_within(std::time::Duration::from_secs(5)).await);
    let (status, _) = app
        .post(
            "/api/v1/sessions",
            None,
            json!({"identifier": "leaving", "password": "password123"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = app.get(&format!("/api/v1/users/{me}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app
        .get(
            "/api/v1/users/lookup?login=leaving",
            Some(&app.any_token().await),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    for sid in [&mine, &reply, &repost] {
        let (status, _) = app.get(&format!("/api/v1/statuses/{sid}"), Some(&bt)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{sid}");
    }
    // Each status was deleted as its author would: the firehose hears it.
    loop {
        let ev = c_stream.next_event("the delete of the status").await;
        if ev.data["type"] == "delete" && ev.data["status_id"] == json!(mine) {
            break;
        }
    }
    // Counts follow; timelines and indexes hold nothing of theirs.
    let (_, their_status) = app.get(&format!("/api/v1/statuses/{theirs}"), None).await;
    assert_eq!(
        (
            their_status["likes"].clone(),
            their_status["reposts"].clone(),
            their_status["replies"].clone()
        ),
        (json!(0), json!(0), json!(0))
    );
    let (_, ub) = app.get(&format!("/api/v1/users/{b}"), None).await;
    let (_, uc) = app.get(&format!("/api/v1/users/{c}"), None).await;
    assert_eq!(
        (ub["followers"].clone(), uc["following"].clone()),
        (json!(0), json!(0))
    );
    for (path, tok) in [
        ("/api/v1/timelines/home", &ct),
        ("/api/v1/timelines/mentions", &ct),
        ("/api/v1/timelines/tag/leavingtag", &ct),
    ] {
        assert_eq!(
            app.timeline_ids(path, Some(tok)).await,
            Vec::<String>::new(),
            "{path}"
        );
    }
    let (_, likers) = app
        .get(&format!("/api/v1/statuses/{theirs}/liked_by"), None)
        .await;
    assert_eq!(likers["users"], json!([]));
    // Relations lifted: B mutes nobody, E is blocked by nobody.
    let (_, mutes) = app.get("/api/v1/mutes", Some(&bt)).await;
    assert_eq!(mutes["users"], json!([]));
    // Conversations: left as leaving would.
    for cid in [&group, &direct] {
        let (status, conv) = app
            .get(&format!("/api/v1/conversations/{cid}"), Some(&ct))
            .await;
        assert_eq!(status, StatusCode::OK);
        let ids: Vec<&str> = conv["participants"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["id"].as_str().unwrap())
            .collect();
        assert!(!ids.contains(&me.as_str()), "{conv}");
    }
    // The email is free at once; the login stays reserved.
    let (status, _) = app
        .post(
            "/api/v1/users",
            None,
            json!({"login": "leaving", "name": "n", "email": "new@example.com", "password": "password123"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, _) = app
        .post(
            "/api/v1/users",
            None,
            json!({"login": "newcomer", "name": "n", "email": "leaving@example.com", "password": "password123"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = patch_me(&app, &bt, json!({"login": "LEAVING"})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    // The reservation goes by itself when it ends (30 days here).
    let mut conn = app.redis.conn();
    let ttl: i64 = redis::cmd("TTL")
        .arg(format!("{}:name:{{leaving}}", app.cfg.key_prefix))
        .query(&mut conn)
        .unwrap();
    assert!(ttl > 29 * 86_400 && ttl <= 30 * 86_400, "{ttl}");
    let _ = et;
}

#[tokio::test]
async fn a_deleted_accounts_login_is_free_after_its_reservation() {
    let app = TestApp::start_with(|cfg| cfg.login_reservation_days = 0).await;
    let (_, token) = app.user("brief").await;
    let (status, _) = delete_me(&app, &token, "password123").await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = app
        .post(
            "/api/v1/users",
            None,
            json!({"login": "brief", "name": "n", "email": "brief2@example.com", "password": "password123"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
}

#[tokio::test]
async fn a_change_of_login_and_email_is_all_or_nothing() {
    let app = TestApp::start().await;
    let (_, token) = app.user("renamer").await;
    app.register("holder").await;
    let (status, answer) = app
        .call(
            reqwest::Method::PATCH,
            "/api/v1/me",
            Some(&token),
            Some(json!({"login": "freshname", "email": "holder@example.com"})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    let (_, me) = app.get("/api/v1/me", Some(&token)).await;
    assert_eq!(me["login"], "renamer", "{me}");
    assert_eq!(me["email"], "renamer@example.com");
    // The login asked for is still free, and so is nothing else taken.
    app.register("freshname").await;
    let (status, answer) = app
        .call(
            reqwest::Method::PATCH,
            "/api/v1/me",
            Some(&token),
            Some(json!({"login": "holder", "email": "new@example.com"})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    let (_, me) = app.get("/api/v1/me", Some(&token)).await;
    assert_eq!(me["email"], "renamer@example.com", "{me}");
    // The email held while the login was tried is free again.
    app.register("new").await;
    let (status, me) = app
        .call(
            reqwest::Method::PATCH,
            "/api/v1/me",
            Some(&token),
            Some(json!({"login": "renamed", "email": "renamed@example.com"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(me["login"], "renamed");
    assert_eq!(me["email"], "renamed@example.com");
}
