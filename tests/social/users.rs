//! Sign-up, lookup and private accounts.

use crate::assert_error;
use crate::common::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

#[tokio::test]
async fn registration_returns_the_public_user_and_never_secrets() {
    let app = TestApp::start().await;
    let (status, user) = app
        .post("/api/v1/users", None, json!({"login": "Alice_1", "name": "Alice", "email": "Alice@Example.com", "password": "password123"}))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    assert!(user["id"].is_string());
    assert_eq!(user["login"], "Alice_1");
    assert_eq!(user["name"], "Alice");
    for counter in ["followers", "following", "posts"] {
        assert_eq!(user[counter], 0, "{counter}");
    }
    assert!(user["signup"].is_number());
    assert!(
        user.get("email").is_none() && user.get("password").is_none(),
        "{user}"
    );
    let (_, public) = app
        .get(
            &format!("/api/v1/users/{}", user["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert!(public.get("email").is_none(), "{public}");
    assert_eq!(public["login"], "Alice_1");
}

#[tokio::test]
async fn registration_rejects_each_invalid_field_with_400() {
    let app = TestApp::start().await;
    let good = json!({"login": "bob", "name": "Bob", "email": "bob@example.com", "password": "password123"});
    let with = |field: &str, value: Value| {
        let mut v = good.clone();
        v[field] = value;
        v
    };
    let without = |field: &str| {
        let mut v = good.clone();
        v.as_object_mut().unwrap().remove(field);
        v
    };
    let cases = [
        with("login", json!("ab")),
        with("login", json!("a".repeat(31))),
        with("login", json!("bad-login")),
        with("login", json!("has space")),
        with("login", json!("12345")),
        with("login", json!("bob@example")),
        with("email", json!("not-an-email")),
        with("password", json!("short")),
        with("name", json!("")),
        with("name", json!("   ")),
        with("name", json!("n".repeat(51))),
        with("login", json!(42)),
        without("password"),
        json!([1, 2]),
    ];
    for body in cases {
        let (status, err) = app.post("/api/v1/users", None, body.clone()).await;
        assert_error(status, &err, StatusCode::BAD_REQUEST);
    }
    let resp = app
        .http
        .post(app.url("/api/v1/users"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    // A valid JSON body under another Content-Type, or none, is 415.
    let valid = json!({"login": "typed", "name": "n", "email": "t@y", "password": "12345678"});
    for content_type in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
    ] {
        let mut req = app
            .http
            .post(app.url("/api/v1/users"))
            .body(valid.to_string());
        if let Some(t) = content_type {
            req = req.header("content-type", t);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(
            resp.status(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{content_type:?}"
        );
        let err: Value = resp.json().await.unwrap();
        assert_eq!(err["error"]["code"], "unsupported_media_type");
    }
    let resp = app
        .http
        .post(app.url("/api/v1/users"))
        .header("content-type", "Application/JSON; charset=utf-8")
        .body(valid.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    // Edge values that are valid.
    let (status, _) = app
        .post(
            "/api/v1/users",
            None,
            json!({"login": "a_1", "name": "n".repeat(50), "email": "x@y", "password": "12345678"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = app
        .post(
            "/api/v1/users",
            None,
            json!({"login": "L".repeat(30), "name": "é", "email": "z@y", "password": "ééééééééé"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
}

#[tokio::test]
async fn login_and_email_are_unique_ignoring_case_across_both_fields() {
    let app = TestApp::start().await;
    app.register("carol").await;
    let (status, err) = app
        .post("/api/v1/users", None, json!({"login": "CAROL", "name": "x", "email": "other@example.com", "password": "password123"}))
        .await;
    assert_error(status, &err, StatusCode::CONFLICT);
    assert_eq!(err["error"]["code"], "login_taken");
    let (status, err) = app
        .post("/api/v1/users", None, json!({"login": "carol2", "name": "x", "email": "CAROL@EXAMPLE.COM", "password": "password123"}))
        .await;
    assert_error(status, &err, StatusCode::CONFLICT);
    assert_eq!(err["error"]["code"], "email_taken");
}

#[tokio::test]
async fn two_hundred_concurrent_registrations_of_one_login_give_exactly_one_201() {
    let app = TestApp::start().await;
    let mut tasks = Vec::new();
    for i in 0..200 {
        let http = app.http.clone();
        let url = app.url("/api/v1/users");
        tasks.push(tokio::spawn(async move {
            let body = json!({"login": "Racer", "name": "r", "email": format!("racer{i}@example.com"), "password": "password123"});
            http.post(url).json(&body).send().await.unwrap().status()
        }));
    }
    let mut created = 0;
    let mut conflicts = 0;
    for t in tasks {
        match t.await.unwrap() {
            StatusCode::CREATED => created += 1,
            StatusCode::CONFLICT => conflicts += 1,
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!((created, conflicts), (1, 199));
    let (status, user) = app
        .get(
            "/api/v1/users/lookup?login=racer",
            Some(&app.any_token().await),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(user["login"], "Racer");
}

/// The email is claimed after the login, in another slot: a sign-up that
/// loses the email gives its login back.
#[tokio::test]
async fn concurrent_registrations_of_one_email_give_one_201_and_free_the_losers_logins() {
    let app = TestApp::start().await;
    let answers = futures::future::join_all((0..50).map(|i| {
        app.post(
            "/api/v1/users",
            None,
            json!({"login": format!("mail_racer{i}"), "name": "r", "email": "Shared@example.com", "password": "password123"}),
        )
    }))
    .await;
    let won: Vec<usize> = (0..50)
        .filter(|&i| answers[i].0 == StatusCode::CREATED)
        .collect();
    assert_eq!(won.len(), 1, "{answers:?}");
    for (i, (status, err)) in answers.iter().enumerate() {
        if i != won[0] {
            assert_eq!(*status, StatusCode::CONFLICT);
            assert_eq!(err["error"]["code"], "email_taken");
        }
    }
    let (_, user) = app
        .get(
            "/api/v1/users/lookup?email=shared@example.com",
            Some(&app.any_token().await),
        )
        .await;
    assert_eq!(user["login"], format!("mail_racer{}", won[0]));
    // Every loser's login is free again.
    for i in (0..50).filter(|&i| i != won[0]) {
        let (status, _) = app
            .get(
                &format!("/api/v1/users/lookup?login=mail_racer{i}"),
                Some(&app.any_token().await),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "mail_racer{i}");
    }
    app.register(&format!("mail_racer{}", (won[0] + 1) % 50))
        .await;
}

#[tokio::test]
async fn lookup_takes_exactly_one_of_login_email_any() {
    let app = TestApp::start().await;
    let id = app.register("erin").await;
    for q in [
        "login=ERIN",
        "email=erin@EXAMPLE.com",
        "any=erin",
        "any=Erin@example.com",
    ] {
        let (status, user) = app
            .get(
                &format!("/api/v1/users/lookup?{q}"),
                Some(&app.any_token().await),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{q}");
        assert_eq!(user["id"], id.as_str());
        assert!(user.get("email").is_none());
    }
    for q in [
        "login=nobody",
        "email=erin",
        "login=erin@example.com",
        "any=zzz",
    ] {
        let (status, err) = app
            .get(
                &format!("/api/v1/users/lookup?{q}"),
                Some(&app.any_token().await),
            )
            .await;
        assert_error(status, &err, StatusCode::NOT_FOUND);
    }
    for q in ["", "login=erin&email=erin@example.com", "name=erin"] {
        let (status, err) = app
            .get(
                &format!("/api/v1/users/lookup?{q}"),
                Some(&app.any_token().await),
            )
            .await;
        assert_error(status, &err, StatusCode::BAD_REQUEST);
    }
    for path in [
        "/api/v1/users/999999",
        "/api/v1/users/abc",
        "/api/v1/users/0",
    ] {
        let (status, err) = app.get(path, None).await;
        assert_error(status, &err, StatusCode::NOT_FOUND);
    }
}

#[tokio::test]
async fn private_accounts_show_statuses_to_followers_only() {
    let app = TestApp::start().await;
    let (ida, a) = app.user("uma").await;
    let (_, b) = app.user("vic").await;
    let (_, c) = app.user("wes").await;
    let (status, me) = app
        .call(
            Method::PATCH,
            "/api/v1/me",
            Some(&a),
            Some(json!({"private": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["private"], true);
    let sid = app.say(&a, "only for followers").await;
    // Following a private account asks; the owner approves.
    app.follow(&b, &ida).await;
    let (_, vic) = app.get("/api/v1/me", Some(&b)).await;
    let (status, _) = app
        .post(
            &format!(
                "/api/v1/follow_requests/{}/authorize",
                vic["id"].as_str().unwrap()
            ),
            Some(&a),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        app.get(&format!("/api/v1/statuses/{sid}"), Some(&b))
            .await
            .0,
        StatusCode::OK
    );
    assert_eq!(
        app.get(&format!("/api/v1/statuses/{sid}"), Some(&c))
            .await
            .0,
        StatusCode::NOT_FOUND,
        "to anyone else a private status does not exist"
    );
    assert_eq!(
        app.get(&format!("/api/v1/statuses/{sid}"), None).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.get(&format!("/api/v1/users/{ida}/statuses"), Some(&c))
            .await
            .0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        app.timeline_ids("/api/v1/timelines/home", Some(&b)).await,
        vec![sid]
    );
}

/// A sign-up takes nothing shared but its event: its id is a snowflake the
/// process issues and its outbox entry is in the user's partition, so no
/// `{g}` counter or outbox is touched. A sign-up whose request died half
/// way is finished from that partition by the sweeper.
#[tokio::test]
async fn sign_ups_take_no_global_counter_and_those_left_half_done_are_finished() {
    let app = TestApp::start().await;
    let p = &app.cfg.key_prefix;
    let (id, _) = app.user("snowy").await;
    let id: u64 = id.parse().unwrap();
    assert!(id >= firehose::store::ids::FIRST, "a snowflake: {id}");
    let mut conn = app.redis.conn();
    let counter: bool = redis::cmd("EXISTS")
        .arg(format!("{p}:{{g}}:next_uid"))
        .query(&mut conn)
        .unwrap();
    let outbox: u64 = redis::cmd("ZCARD")
        .arg(format!("{p}:{{g}}:outbox"))
        .query(&mut conn)
        .unwrap();
    assert_eq!((counter, outbox), (false, 0));

    let left = firehose::store::outbox::Op::User(firehose::store::chains::signup::UserOp {
        uid: 77,
        login: "left_behind".into(),
        name: "Left".into(),
        email: "left_behind@example.com".into(),
        password: "x".into(),
        at: firehose::model::now(),
    });
    let part = firehose::store::keys::user_part(77);
    let n = 7 * firehose::store::keys::OUTBOX_PARTS + part;
    let member = format!("{n}|{}", serde_json::to_string(&left).unwrap());
    let _: () = redis::cmd("ZADD")
        .arg(firehose::store::keys::Keys::new(p).part_outbox(part))
        .arg(0)
        .arg(member)
        .query(&mut conn)
        .unwrap();
    app.eventually("the sweeper finishes it", || async {
        app.get("/api/v1/users/77", None).await.1["login"] == "left_behind"
    })
    .await;
    let (status, body) = app
        .post(
            "/api/v1/users",
            None,
            json!({"login": "LEFT_behind", "name": "n", "email": "other@example.com", "password": "password123"}),
        )
        .await;
    assert_error(status, &body, StatusCode::CONFLICT);
}
