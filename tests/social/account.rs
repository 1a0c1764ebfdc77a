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
