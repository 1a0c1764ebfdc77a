//! Edits: by the author, within the window, at most ten times, with the
//! versions kept; the old text's indices left and the new one's entered;
//! an edit racing a delete and a like leaves one consistent state.

use crate::assert_error;
use crate::common::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

async fn edit(app: &TestApp, token: &str, sid: &str, message: &str) -> (StatusCode, Value) {
    app.call(
        Method::PATCH,
        &format!("/api/v1/statuses/{sid}"),
        Some(token),
        Some(json!({ "message": message })),
    )
    .await
}

/// Ids of a timeline's first page.
async fn shows(app: &TestApp, path: &str, token: Option<&str>) -> Vec<String> {
    app.timeline_ids(path, token).await
}

/// The tags trending in the last hour.
async fn trending(app: &TestApp) -> Vec<String> {
    let (_, body) = app
        .get("/api/v1/trends/tags?window=3600&limit=50", None)
        .await;
    body.as_array()
        .unwrap()
        .iter()
        .map(|t| t["tag"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn an_edit_rewrites_the_status_keeps_its_versions_and_moves_its_indices() {
    let app = TestApp::start().await;
    let (_, author) = app.user("writer").await;
    let (_, bob) = app.user("bob").await;
    let (_, carol) = app.user("carol").await;
    let (_, stranger) = app.user("stranger").await;
    let sid = app.say(&author, "hello #oldtag @bob").await;
    let posted = app.get(&format!("/api/v1/statuses/{sid}"), None).await.1["posted"].clone();
    assert!(shows(&app, "/api/v1/timelines/tag/oldtag", None)
        .await
        .contains(&sid));
    assert!(shows(&app, "/api/v1/timelines/mentions", Some(&bob))
        .await
        .contains(&sid));
    assert!(trending(&app).await.contains(&"oldtag".to_string()));
    // Never edited: one version, the status as posted.
    let (status, history) = app
        .get(&format!("/api/v1/statuses/{sid}/history"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{history}");
    assert_eq!(history["versions"].as_array().unwrap().len(), 1);
    assert_eq!(history["versions"][0]["message"], "hello #oldtag @bob");
    // Refusals: someone else, nothing there, a bad text.
    let (status, body) = edit(&app, &stranger, &sid, "mine now").await;
    assert_error(status, &body, StatusCode::FORBIDDEN);
    let (status, body) = edit(&app, &author, "424242", "nothing").await;
    assert_error(status, &body, StatusCode::NOT_FOUND);
    for bad in ["", "   ", &"x".repeat(281)] {
        let (status, body) = edit(&app, &author, &sid, bad).await;
        assert_error(status, &body, StatusCode::BAD_REQUEST);
    }
    let (status, body) = app
        .call(
            Method::PATCH,
            &format!("/api/v1/statuses/{sid}"),
            None,
            Some(json!({"message": "anon"})),
        )
        .await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED);

    let (status, edited) = edit(&app, &author, &sid, "goodbye #newtag @carol").await;
    assert_eq!(status, StatusCode::OK, "{edited}");
    assert_eq!(edited["id"], sid.as_str());
    assert_eq!(edited["message"], "goodbye #newtag @carol");
    assert_eq!(edited["hashtags"], json!(["newtag"]));
    assert_eq!(edited["mentions"], json!(["carol"]));
    assert_eq!(edited["posted"], posted);
    assert!(edited["edited_at"].as_f64().unwrap() >= posted.as_f64().unwrap());
    let (_, shown) = app.get(&format!("/api/v1/statuses/{sid}"), None).await;
    assert_eq!(shown["message"], "goodbye #newtag @carol");
    assert_eq!(shown["edited_at"], edited["edited_at"]);
    // The old text's indices left, the new one's entered.
    assert!(!shows(&app, "/api/v1/timelines/tag/oldtag", None)
        .await
        .contains(&sid));
    assert!(shows(&app, "/api/v1/timelines/tag/newtag", None)
        .await
        .contains(&sid));
    assert!(!shows(&app, "/api/v1/timelines/mentions", Some(&bob))
        .await
        .contains(&sid));
    assert!(shows(&app, "/api/v1/timelines/mentions", Some(&carol))
        .await
        .contains(&sid));
    // (Trending answers are kept a second.)
    app.eventually("trending to follow the edit", || async {
        let tags = trending(&app).await;
        tags.contains(&"newtag".to_string()) && !tags.contains(&"oldtag".to_string())
    })
    .await;
    // Nine more edits, then no more.
    for i in 2..=10 {
        let (status, body) = edit(&app, &author, &sid, &format!("version {i} #newtag")).await;
        assert_eq!(status, StatusCode::OK, "edit {i}: {body}");
    }
    let (status, body) = edit(&app, &author, &sid, "one too many").await;
    assert_error(status, &body, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["code"], "too_many_edits");
    let (_, history) = app
        .get(&format!("/api/v1/statuses/{sid}/history"), None)
        .await;
    let versions = history["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 11);
    assert_eq!(versions[0]["message"], "hello #oldtag @bob");
    assert_eq!(versions[0]["hashtags"], json!(["oldtag"]));
    assert_eq!(versions[0]["mentions"], json!(["bob"]));
    assert_eq!(versions[0]["at"], posted);
    assert_eq!(versions[1]["message"], "goodbye #newtag @carol");
    assert_eq!(versions[10]["message"], "version 10 #newtag");
    let ats: Vec<f64> = versions.iter().map(|v| v["at"].as_f64().unwrap()).collect();
    assert!(ats.windows(2).all(|w| w[0] <= w[1]), "{ats:?}");
    // The tag counted once, whatever the number of edits.
    let (_, body) = app
        .get("/api/v1/trends/tags?window=3600&limit=50", None)
        .await;
    let newtag = body
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tag"] == "newtag")
        .unwrap()
        .clone();
    assert_eq!(newtag["count"], 1, "{body}");
}

#[tokio::test]
async fn edits_keep_to_their_window_their_author_and_what_a_reader_may_see() {
    let app = TestApp::start().await;
    let (_, author) = app.user("poster").await;
    let (other_id, other) = app.user("other").await;
    let (_, follower) = app.user("follower").await;
    let (author_id, _) = (
        app.get("/api/v1/me", Some(&author)).await.1["id"]
            .as_str()
            .unwrap()
            .to_string(),
        (),
    );
    // Posted over an hour ago (its time moved back in Redis).
    let old = app.say(&author, "from long ago").await;
    let mut conn = app.redis.conn();
    let posted: f64 = redis::cmd("HGET")
        .arg(format!("fh:status:{{s{old}}}"))
        .arg("posted")
        .query(&mut conn)
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg(format!("fh:status:{{s{old}}}"))
        .arg("posted")
        .arg(posted - 3601.0)
        .query(&mut conn)
        .unwrap();
    let (status, body) = edit(&app, &author, &old, "too late").await;
    assert_error(status, &body, StatusCode::FORBIDDEN);
    assert_eq!(body["error"]["code"], "edit_window_passed");
    // A retried edit with one Idempotency-Key edits once.
    let fresh = app.say(&author, "retry me").await;
    for _ in 0..2 {
        let resp = app
            .http
            .patch(app.url(&format!("/api/v1/statuses/{fresh}")))
            .bearer_auth(&author)
            .header("Idempotency-Key", "edit-once")
            .json(&json!({"message": "retried"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["message"], "retried");
    }
    let (_, history) = app
        .get(&format!("/api/v1/statuses/{fresh}/history"), None)
        .await;
    assert_eq!(
        history["versions"].as_array().unwrap().len(),
        2,
        "{history}"
    );
    // A repost has no text to edit.
    let original = app.say(&other, "repost me").await;
    let repost = app.repost(&author, &original).await;
    let (status, body) = edit(&app, &author, &repost, "my words").await;
    assert_error(status, &body, StatusCode::FORBIDDEN);
    // A private account's status: its history is for its followers.
    app.follow(&follower, &author_id).await;
    app.call(
        Method::PATCH,
        "/api/v1/me",
        Some(&author),
        Some(json!({"private": true})),
    )
    .await;
    let author = app.login("poster").await;
    let secret = app.say(&author, "for followers").await;
    let (status, _) = edit(&app, &author, &secret, "still for followers").await;
    assert_eq!(status, StatusCode::OK);
    let path = format!("/api/v1/statuses/{secret}/history");
    let (status, history) = app.get(&path, Some(&follower)).await;
    assert_eq!(status, StatusCode::OK, "{history}");
    assert_eq!(history["versions"].as_array().unwrap().len(), 2);
    for who in [Some(other.as_str()), None] {
        let (status, body) = app.get(&path, who).await;
        assert!(
            status == StatusCode::FORBIDDEN || status == StatusCode::NOT_FOUND,
            "{status} {body}"
        );
    }
    let _ = other_id;
}

#[tokio::test]
async fn an_edit_racing_a_delete_and_a_like_leaves_one_consistent_state() {
    let app = TestApp::start().await;
    let (_, author) = app.user("racer").await;
    let (_, liker) = app.user("liker").await;
    for round in 0..8 {
        let sid = app
            .say(&author, &format!("race {round} #before{round}"))
            .await;
        let (like_path, text, path) = (
            format!("/api/v1/statuses/{sid}/like"),
            format!("raced {round} #after{round}"),
            format!("/api/v1/statuses/{sid}"),
        );
        let like = app.post(&like_path, Some(&liker), json!({}));
        let e = edit(&app, &author, &sid, &text);
        let d = app.delete(&path, Some(&author));
        let (liked, edited, deleted) = tokio::join!(like, e, d);
        assert!(
            [StatusCode::OK, StatusCode::CREATED, StatusCode::NOT_FOUND].contains(&liked.0),
            "{liked:?}"
        );
        assert!(
            [StatusCode::OK, StatusCode::NOT_FOUND].contains(&edited.0),
            "{edited:?}"
        );
        assert_eq!(deleted.0, StatusCode::NO_CONTENT, "{deleted:?}");
        // Gone, from every index, whichever came first.
        let (status, _) = app.get(&format!("/api/v1/statuses/{sid}"), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        for tag in [format!("before{round}"), format!("after{round}")] {
            assert!(
                !shows(&app, &format!("/api/v1/timelines/tag/{tag}"), None)
                    .await
                    .contains(&sid),
                "round {round}: #{tag} still shows {sid}"
            );
        }
        let (before, after) = (format!("before{round}"), format!("after{round}"));
        app.eventually("the raced tags to leave trending", || async {
            let tags = trending(&app).await;
            !tags.contains(&before) && !tags.contains(&after)
        })
        .await;
        let mut conn = app.redis.conn();
        let versions: i64 = redis::cmd("EXISTS")
            .arg(format!("fh:status:{{s{sid}}}:versions"))
            .query(&mut conn)
            .unwrap();
        assert_eq!(versions, 0, "round {round}: versions left behind");
    }
}
