//! Reports and moderation: filing reports, the admin scope, the queue and
//! its resolutions (once), removing statuses, suspensions (sessions and
//! streams end, everything of the user hidden until it is lifted) and the
//! audit log.

use crate::assert_error;
use crate::common::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

async fn admin_token(app: &TestApp) -> String {
    let (id, _) = app.user("the_admin").await;
    app.operator_token(&id, &["read", "admin"]).await
}

fn audit_actions(page: &Value) -> Vec<(String, String, Value)> {
    page["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["action"].as_str().unwrap().to_string(),
                a["target"].as_str().unwrap().to_string(),
                a["report"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn reports_are_filed_and_resolved_once_with_one_audit_entry_each() {
    let app = TestApp::start().await;
    let (alice_id, alice) = app.user("r_alice").await;
    let (_, bob) = app.user("r_bob").await;
    let admin = admin_token(&app).await;
    let sid = app.say(&alice, "buy cheap pills").await;
    let other = app.say(&alice, "another one").await;
    // Bad reports.
    for body in [
        json!({"reason": "spam"}),
        json!({"status_id": sid, "user_id": alice_id, "reason": "spam"}),
        json!({"status_id": sid, "reason": "boring"}),
        json!({"status_id": sid, "reason": "spam", "comment": "c".repeat(1001)}),
    ] {
        let (status, err) = app.post("/api/v1/reports", Some(&bob), body.clone()).await;
        assert_error(status, &err, StatusCode::BAD_REQUEST);
    }
    let (status, err) = app
        .post(
            "/api/v1/reports",
            Some(&bob),
            json!({"status_id": "424242", "reason": "spam"}),
        )
        .await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
    let (status, on_status) = app
        .post(
            "/api/v1/reports",
            Some(&bob),
            json!({"status_id": sid, "reason": "spam", "comment": "pills again"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{on_status}");
    assert_eq!(
        (
            on_status["user_id"].as_str(),
            on_status["status_id"].as_str(),
            on_status["state"].as_str()
        ),
        (Some(alice_id.as_str()), Some(sid.as_str()), Some("open"))
    );
    assert_eq!(on_status["action"], Value::Null);
    let (status, on_user) = app
        .post(
            "/api/v1/reports",
            Some(&bob),
            json!({"user_id": alice_id, "reason": "abuse"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{on_user}");
    assert_eq!(on_user["status_id"], Value::Null);

    // Admin paths: 401 without a token, 403 without the admin scope.
    let (status, _) = app.get("/api/v1/admin/reports", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, err) = app.get("/api/v1/admin/reports", Some(&bob)).await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    let (_, queue) = app.get("/api/v1/admin/reports", Some(&admin)).await;
    let ids: Vec<&str> = queue["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![
            on_user["id"].as_str().unwrap(),
            on_status["id"].as_str().unwrap()
        ],
        "newest first"
    );
    let resolve = |id: &Value| format!("/api/v1/admin/reports/{}/resolve", id.as_str().unwrap());
    let (status, err) = app
        .post(
            &resolve(&on_user["id"]),
            Some(&admin),
            json!({"action": "remove_status"}),
        )
        .await;
    assert_error(status, &err, StatusCode::BAD_REQUEST);
    let (status, err) = app
        .post(
            &resolve(&on_user["id"]),
            Some(&admin),
            json!({"action": "ban"}),
        )
        .await;
    assert_error(status, &err, StatusCode::BAD_REQUEST);
    let (status, done) = app
        .post(
            &resolve(&on_status["id"]),
            Some(&admin),
            json!({"action": "remove_status", "note": "spam"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(
        (done["state"].as_str(), done["action"].as_str()),
        (Some("resolved"), Some("remove_status"))
    );
    assert!(done["resolved_at"].is_number() && done["resolved_by"].is_string());
    let (status, _) = app.get(&format!("/api/v1/statuses/{sid}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "removed as by its author");
    let (status, err) = app
        .post(
            &resolve(&on_status["id"]),
            Some(&admin),
            json!({"action": "none"}),
        )
        .await;
    assert_error(status, &err, StatusCode::CONFLICT);
    let (status, _) = app
        .post(
            &resolve(&on_user["id"]),
            Some(&admin),
            json!({"action": "none"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, open) = app.get("/api/v1/admin/reports", Some(&admin)).await;
    assert_eq!(open["reports"], json!([]));
    let (_, resolved) = app
        .get("/api/v1/admin/reports?state=resolved", Some(&admin))
        .await;
    assert_eq!(resolved["reports"].as_array().unwrap().len(), 2);
    let (status, one) = app
        .get(
            &format!("/api/v1/admin/reports/{}", on_user["id"].as_str().unwrap()),
            Some(&admin),
        )
        .await;
    assert_eq!(
        (status, one["action"].as_str()),
        (StatusCode::OK, Some("none"))
    );

    // Removing any status; a second removal changes nothing and adds nothing.
    let (status, _) = app
        .delete(&format!("/api/v1/admin/statuses/{other}"), Some(&admin))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = app
        .delete(&format!("/api/v1/admin/statuses/{other}"), Some(&admin))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, audit) = app.get("/api/v1/admin/audit", Some(&admin)).await;
    assert_eq!(
        audit_actions(&audit),
        vec![
            ("remove_status".to_string(), other.clone(), Value::Null),
            (
                "dismiss_report".to_string(),
                alice_id.clone(),
                on_user["id"].clone()
            ),
            (
                "remove_status".to_string(),
                sid.clone(),
                on_status["id"].clone()
            ),
        ]
    );
}

#[tokio::test]
async fn a_suspension_ends_sessions_and_streams_and_hides_everything_until_lifted() {
    let app = TestApp::start().await;
    let (alice_id, alice) = app.user("s_alice").await;
    let (_, bob) = app.user("s_bob").await;
    let admin = admin_token(&app).await;
    app.follow(&bob, &alice_id).await;
    let sid = app.say(&alice, "hello #susptag").await;
    let repost = {
        let (_, r) = app
            .post(
                &format!("/api/v1/statuses/{sid}/repost"),
                Some(&bob),
                json!({}),
            )
            .await;
        r["id"].as_str().unwrap().to_string()
    };
    let mut own = app.stream("/api/v1/stream/user", Some(&alice), &[]).await;
    let mut bobs = app.stream("/api/v1/stream/user", Some(&bob), &[]).await;
    let (status, body) = app
        .post(
            &format!("/api/v1/admin/users/{alice_id}/suspend"),
            Some(&admin),
            json!({}),
        )
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!({"suspended": true})));
    // Her stream ends with `suspended`; her token is refused; so is her login.
    let bye = own.next("the end of her stream").await;
    assert_eq!(
        (bye.data["type"].as_str(), bye.data["code"].as_str()),
        (Some("disconnect"), Some("suspended"))
    );
    let (status, _) = app.get("/api/v1/me", Some(&alice)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, err) = app
        .post(
            "/api/v1/sessions",
            None,
            json!({"identifier": "s_alice", "password": "password123"}),
        )
        .await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    assert_eq!(err["error"]["code"], "suspended");
    // Everything of hers is gone for everyone else.
    for path in [
        format!("/api/v1/users/{alice_id}"),
        format!("/api/v1/users/{alice_id}/statuses"),
        format!("/api/v1/statuses/{sid}"),
        format!("/api/v1/statuses/{repost}"),
    ] {
        let (status, _) = app.get(&path, Some(&bob)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
    }
    let home = app.timeline_ids("/api/v1/timelines/home", Some(&bob)).await;
    assert!(!home.contains(&sid) && !home.contains(&repost), "{home:?}");
    assert!(!app
        .timeline_ids("/api/v1/timelines/tag/susptag", None)
        .await
        .contains(&sid));
    let mut replay = app
        .stream("/api/v1/stream/user?count=10", Some(&bob), &[])
        .await;
    while let Some(m) = replay.next_within(Duration::from_millis(400)).await {
        assert_ne!(m.data["status"]["uid"], alice_id.as_str(), "{:?}", m.data);
    }
    bobs.assert_quiet(Duration::from_millis(200)).await;
    // Admins still see her; a repeated suspension changes nothing.
    let (_, u) = app
        .get(&format!("/api/v1/admin/users/{alice_id}"), Some(&admin))
        .await;
    assert_eq!(u["suspended"], true);
    let (status, _) = app
        .post(
            &format!("/api/v1/admin/users/{alice_id}/suspend"),
            Some(&admin),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    // Lifted: everything but the ended sessions comes back.
    let (status, body) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/admin/users/{alice_id}/suspend"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"suspended": false}))
    );
    let (status, _) = app
        .get(&format!("/api/v1/statuses/{sid}"), Some(&bob))
        .await;
    assert_eq!(status, StatusCode::OK);
    // (A home shows a status once: here as bob's repost of it, the newest.)
    assert!(app
        .timeline_ids("/api/v1/timelines/home", Some(&bob))
        .await
        .contains(&repost));
    assert!(app
        .timeline_ids("/api/v1/timelines/tag/susptag", None)
        .await
        .contains(&sid));
    let (status, _) = app.get("/api/v1/me", Some(&alice)).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "ended sessions stay ended"
    );
    let again = app.login("s_alice").await;
    let (status, _) = app.get("/api/v1/me", Some(&again)).await;
    assert_eq!(status, StatusCode::OK);
    let (_, audit) = app.get("/api/v1/admin/audit", Some(&admin)).await;
    assert_eq!(
        audit_actions(&audit),
        vec![
            ("unsuspend_user".to_string(), alice_id.clone(), Value::Null),
            ("suspend_user".to_string(), alice_id.clone(), Value::Null),
        ],
        "one entry per change"
    );
}

#[tokio::test]
async fn reporting_yourself_or_your_own_status_is_refused() {
    let app = TestApp::start().await;
    let (me, token) = app.user("selfish").await;
    let sid = app.say(&token, "mine").await;
    for body in [
        json!({"user_id": me, "reason": "spam"}),
        json!({"status_id": sid, "reason": "spam"}),
    ] {
        let (status, answer) = app.post("/api/v1/reports", Some(&token), body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
        assert!(answer["error"]["code"].is_string());
    }
}
