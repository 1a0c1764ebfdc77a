//! Notifications: made by the actions that cause them, taken away when they
//! are undone, judged with the reader's relations, grouped, counted
//! against one read marker.

use crate::assert_error;
use crate::common::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

async fn notifications(app: &TestApp, token: &str, query: &str) -> Value {
    let (status, body) = app
        .get(&format!("/api/v1/notifications{query}"), Some(token))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// (type, account login, status message) of each notification.
fn summary(body: &Value) -> Vec<(String, String, String)> {
    body["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["type"].as_str().unwrap().to_string(),
                n["account"]["login"].as_str().unwrap_or("").to_string(),
                n["status"]["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn t(kind: &str, who: &str, message: &str) -> (String, String, String) {
    (kind.into(), who.into(), message.into())
}

async fn unread(app: &TestApp, token: &str) -> u64 {
    let (status, body) = app.get("/api/v1/notifications/unread", Some(token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["count"].as_u64().unwrap()
}

#[tokio::test]
async fn actions_notify_their_target_once_and_undoing_them_takes_it_away() {
    let app = TestApp::start().await;
    let (author_id, author) = app.user("noticed").await;
    let (_, fan) = app.user("fan").await;
    let mut stream = app
        .stream("/api/v1/stream/user", Some(&author), &[])
        .await
        .with_notifications();
    let sid = app.say(&author, "notice me").await;
    // One's own doing notifies no one.
    app.post(
        &format!("/api/v1/statuses/{sid}/like"),
        Some(&author),
        json!({}),
    )
    .await;
    app.follow(&fan, &author_id).await;
    for _ in 0..2 {
        app.post(
            &format!("/api/v1/statuses/{sid}/like"),
            Some(&fan),
            json!({}),
        )
        .await;
    }
    let reply = app
        .post_status(
            &fan,
            json!({"message": "@noticed yes you", "reply_to": sid}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.say(&fan, "hello @noticed").await;
    let repost = app.repost(&fan, &sid).await;
    let body = notifications(&app, &author, "").await;
    assert_eq!(
        summary(&body),
        vec![
            t("repost", "fan", "notice me"),
            t("mention", "fan", "hello @noticed"),
            t("reply", "fan", "@noticed yes you"),
            t("like", "fan", "notice me"),
            t("follow", "fan", ""),
        ],
        "{body}"
    );
    assert_eq!(unread(&app, &author).await, 5);
    // The user stream got each as it happened.
    let mut live = Vec::new();
    while live.len() < 5 {
        let m = stream.next("a notification").await;
        if m.event == "notification" {
            live.push(m.data["notification"]["type"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(live, ["follow", "like", "reply", "mention", "repost"]);
    // Undone: the like, the repost, the follow; the reply deleted.
    app.call(
        Method::DELETE,
        &format!("/api/v1/statuses/{sid}/like"),
        Some(&fan),
        None,
    )
    .await;
    app.delete(&format!("/api/v1/statuses/{sid}/repost"), Some(&fan))
        .await;
    app.delete(&format!("/api/v1/users/{author_id}/follow"), Some(&fan))
        .await;
    app.delete(&format!("/api/v1/statuses/{reply}"), Some(&fan))
        .await;
    let _ = repost;
    let body = notifications(&app, &author, "").await;
    assert_eq!(
        summary(&body),
        vec![t("mention", "fan", "hello @noticed")],
        "{body}"
    );
    let mut removed = 0;
    while removed < 2 {
        let m = stream.next("a removal").await;
        if m.event == "notification_removed" {
            assert!(m.data["notification_id"].is_string(), "{:?}", m.data);
            removed += 1;
        }
    }
}

#[tokio::test]
async fn blocks_mutes_and_gone_accounts_hide_notifications_already_there() {
    let app = TestApp::start().await;
    let (author_id, author) = app.user("popular").await;
    let (blocked_id, blocked) = app.user("pest").await;
    let (muted_id, muted) = app.user("noisy").await;
    let (_, kept) = app.user("friendly").await;
    let sid = app.say(&author, "like this").await;
    for who in [&blocked, &muted, &kept] {
        app.post(
            &format!("/api/v1/statuses/{sid}/like"),
            Some(who),
            json!({}),
        )
        .await;
    }
    assert_eq!(summary(&notifications(&app, &author, "").await).len(), 3);
    app.post(
        &format!("/api/v1/users/{blocked_id}/block"),
        Some(&author),
        json!({}),
    )
    .await;
    app.post(
        &format!("/api/v1/users/{muted_id}/mute"),
        Some(&author),
        json!({}),
    )
    .await;
    let body = notifications(&app, &author, "").await;
    assert_eq!(summary(&body), vec![t("like", "friendly", "like this")]);
    // A private account's reply to me that I may not see: not shown.
    let (_, secretive) = app.user("secretive").await;
    app.call(
        Method::PATCH,
        "/api/v1/me",
        Some(&secretive),
        Some(json!({"private": true})),
    )
    .await;
    let secretive = app.login("secretive").await;
    app.post_status(
        &secretive,
        json!({"message": "a hidden reply", "reply_to": sid}),
    )
    .await;
    let body = notifications(&app, &author, "").await;
    assert_eq!(summary(&body), vec![t("like", "friendly", "like this")]);
    // The status deleted: its notifications go with it.
    app.delete(&format!("/api/v1/statuses/{sid}"), Some(&author))
        .await;
    assert!(summary(&notifications(&app, &author, "").await).is_empty());
    let _ = author_id;
}

#[tokio::test]
async fn notifications_page_filter_group_and_count_against_one_marker() {
    let app = TestApp::start().await;
    let (author_id, author) = app.user("star").await;
    let mut fans = Vec::new();
    for i in 0..5 {
        fans.push(app.user(&format!("fan{i}")).await);
    }
    let first = app.say(&author, "first").await;
    let second = app.say(&author, "second").await;
    for (_, token) in &fans {
        app.post(
            &format!("/api/v1/statuses/{first}/like"),
            Some(token),
            json!({}),
        )
        .await;
        app.follow(token, &author_id).await;
    }
    app.post(
        &format!("/api/v1/statuses/{second}/like"),
        Some(&fans[0].1),
        json!({}),
    )
    .await;
    // Paged by cursor, every one once, newest first.
    let mut ids = Vec::new();
    let mut query = "?count=3".to_string();
    loop {
        let body = notifications(&app, &author, &query).await;
        for n in body["notifications"].as_array().unwrap() {
            ids.push(n["id"].as_str().unwrap().parse::<u64>().unwrap());
        }
        match body["next_cursor"].as_str() {
            Some(c) => query = format!("?count=3&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(ids.len(), 11);
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");
    // By type.
    let follows = notifications(&app, &author, "?types=follow").await;
    assert_eq!(summary(&follows).len(), 5);
    let (status, body) = app
        .get("/api/v1/notifications?types=poke", Some(&author))
        .await;
    assert_error(status, &body, StatusCode::BAD_REQUEST);
    // Grouped: the five likes of the first status, the five follows, the
    // like of the second.
    let grouped = notifications(&app, &author, "?grouped=true").await;
    let groups: Vec<(String, u64, usize, String)> = grouped["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["type"].as_str().unwrap().to_string(),
                g["count"].as_u64().unwrap(),
                g["accounts"].as_array().unwrap().len(),
                g["status"]["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        groups,
        vec![
            ("like".to_string(), 1, 1, "second".to_string()),
            ("follow".to_string(), 5, 3, String::new()),
            ("like".to_string(), 5, 3, "first".to_string()),
        ],
        "{grouped}"
    );
    assert_eq!(grouped["notifications"][1]["accounts"][0]["login"], "fan4");
    // One marker: read up to the sixth newest, from another session.
    assert_eq!(unread(&app, &author).await, 11);
    let other_session = app.login("star").await;
    let (status, _) = app
        .post(
            "/api/v1/notifications/read",
            Some(&other_session),
            json!({"up_to": ids[5].to_string()}),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(unread(&app, &author).await, 5);
    // It never moves back.
    app.post(
        "/api/v1/notifications/read",
        Some(&author),
        json!({"up_to": ids[10].to_string()}),
    )
    .await;
    assert_eq!(unread(&app, &author).await, 5);
    let (status, body) = app
        .post(
            "/api/v1/notifications/read",
            Some(&author),
            json!({"up_to": "nope"}),
        )
        .await;
    assert_error(status, &body, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn join_requests_notify_the_staff_and_resolved_reports_the_reporter() {
    let app = TestApp::start().await;
    let (_, owner) = app.user("group_owner").await;
    let (moderator_id, moderator) = app.user("group_mod").await;
    let (member_id, member) = app.user("group_member").await;
    let (asker_id, asker) = app.user("asker").await;
    let (_, group) = app
        .post(
            "/api/v1/groups",
            Some(&owner),
            json!({"name": "closed", "kind": "private"}),
        )
        .await;
    let gid = group["id"].as_str().unwrap().to_string();
    for uid in [&moderator_id, &member_id] {
        let (status, body) = app
            .post(
                &format!("/api/v1/groups/{gid}/members"),
                Some(&owner),
                json!({"user_id": uid}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    app.call(
        Method::PATCH,
        &format!("/api/v1/groups/{gid}/members/{moderator_id}"),
        Some(&owner),
        Some(json!({"role": "moderator"})),
    )
    .await;
    let mut live = app
        .stream("/api/v1/stream/user", Some(&moderator), &[])
        .await
        .with_notifications();
    // Asked twice (a retry): one notification for each of the staff.
    for _ in 0..2 {
        let (status, body) = app
            .post(
                &format!("/api/v1/groups/{gid}/join"),
                Some(&asker),
                json!({}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["requested"], true, "{body}");
    }
    let m = live.next("the request's notification").await;
    assert_eq!(m.event, "notification", "{:?}", m.data);
    assert_eq!(m.data["notification"]["type"], "group_request");
    assert_eq!(m.data["notification"]["group_id"], gid.as_str());
    for token in [&owner, &moderator] {
        let body = notifications(&app, token, "?types=group_request").await;
        assert_eq!(
            summary(&body),
            vec![t("group_request", "asker", "")],
            "{body}"
        );
        assert_eq!(body["notifications"][0]["group_id"], gid.as_str());
    }
    assert!(summary(&notifications(&app, &member, "").await).is_empty());
    // Rejected, then asked again: a new request, notified again.
    app.post(
        &format!("/api/v1/groups/{gid}/requests/{asker_id}/reject"),
        Some(&owner),
        json!({}),
    )
    .await;
    app.post(
        &format!("/api/v1/groups/{gid}/join"),
        Some(&asker),
        json!({}),
    )
    .await;
    let body = notifications(&app, &owner, "").await;
    assert_eq!(summary(&body).len(), 2, "{body}");
    // One who blocks the asker sees none of theirs.
    app.post(
        &format!("/api/v1/users/{asker_id}/block"),
        Some(&moderator),
        json!({}),
    )
    .await;
    assert!(summary(&notifications(&app, &moderator, "").await).is_empty());
    // Demoted to member: the owner's requests are no longer the member's
    // to see.
    app.call(
        Method::PATCH,
        &format!("/api/v1/groups/{gid}/members/{moderator_id}"),
        Some(&owner),
        Some(json!({"role": "member"})),
    )
    .await;
    app.call(
        Method::DELETE,
        &format!("/api/v1/users/{asker_id}/block"),
        Some(&moderator),
        None,
    )
    .await;
    assert!(
        summary(&notifications(&app, &moderator, "").await).is_empty(),
        "a former moderator sees no join requests"
    );
    assert_eq!(summary(&notifications(&app, &owner, "").await).len(), 2);

    // A report resolved: its reporter is told, by the admin; the reported
    // user is not.
    let (admin_id, _) = app.user("the_admin").await;
    let admin = app.operator_token(&admin_id, &["read", "admin"]).await;
    let (reported_id, reported) = app.user("reported").await;
    let (status, report) = app
        .post(
            "/api/v1/reports",
            Some(&asker),
            json!({"user_id": reported_id, "reason": "spam"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{report}");
    let rid = report["id"].as_str().unwrap().to_string();
    assert!(
        notifications(&app, &asker, "?types=report_resolved").await["notifications"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let (status, body) = app
        .post(
            &format!("/api/v1/admin/reports/{rid}/resolve"),
            Some(&admin),
            json!({"action": "none"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let body = notifications(&app, &asker, "?types=report_resolved").await;
    assert_eq!(
        summary(&body),
        vec![t("report_resolved", "the_admin", "")],
        "{body}"
    );
    assert_eq!(body["notifications"][0]["report_id"], rid.as_str());
    let grouped = notifications(&app, &asker, "?grouped=true").await;
    assert_eq!(grouped["notifications"][0]["report_id"], rid.as_str());
    assert_eq!(grouped["notifications"][0]["count"], 1);
    assert!(summary(&notifications(&app, &reported, "").await).is_empty());
}

#[tokio::test]
async fn a_read_marker_past_the_newest_notification_stops_at_it() {
    let app = TestApp::start().await;
    let (star_id, star) = app.user("star").await;
    let (_, fan) = app.user("fan").await;
    let (_, late) = app.user("late").await;
    // Nothing to read yet: a marker asked for reads nothing ahead.
    let ahead = "18446744073709551615";
    let (status, _) = app
        .post(
            "/api/v1/notifications/read",
            Some(&star),
            json!({ "up_to": ahead }),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    app.follow(&fan, &star_id).await;
    app.eventually("the follow's notification", || async {
        unread(&app, &star).await == 1
    })
    .await;
    // Up to an id beyond the newest: up to the newest, no further.
    let (status, _) = app
        .post(
            "/api/v1/notifications/read",
            Some(&star),
            json!({ "up_to": ahead }),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(unread(&app, &star).await, 0);
    app.follow(&late, &star_id).await;
    app.eventually("a later notification is unread", || async {
        unread(&app, &star).await == 1
    })
    .await;
}

#[tokio::test]
async fn an_edit_that_adds_a_mention_notifies_the_newly_mentioned_once() {
    let app = TestApp::start().await;
    let (_, ada) = app.user("ada").await;
    let (_, bob) = app.user("bob").await;
    let (_, cy) = app.user("cyd").await;
    let sid = app.say(&ada, "hello @cyd").await;
    app.eventually("cyd mention", || async {
        summary(&notifications(&app, &cy, "").await) == vec![t("mention", "ada", "hello @cyd")]
    })
    .await;
    assert!(summary(&notifications(&app, &bob, "").await).is_empty());
    let (status, body) = app
        .call(
            Method::PATCH,
            &format!("/api/v1/statuses/{sid}"),
            Some(&ada),
            Some(json!({"message": "hello @cyd and @bob"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    app.eventually("bob's mention", || async {
        summary(&notifications(&app, &bob, "").await)
            == vec![t("mention", "ada", "hello @cyd and @bob")]
    })
    .await;
    // Cy, mentioned before, is not told again.
    let cys = notifications(&app, &cy, "").await;
    assert_eq!(cys["notifications"].as_array().unwrap().len(), 1, "{cys}");
}
