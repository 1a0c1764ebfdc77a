//! Lists: the owner's alone, bounded, their members answered per id, and a
//! timeline that pages exactly and shows only what its owner may see.

use crate::assert_error;
use crate::common::{bulk_users, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::HashSet;

async fn new_list(app: &TestApp, token: &str, title: &str) -> String {
    let (status, body) = app
        .post("/api/v1/lists", Some(token), json!({ "title": title }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["id"].as_str().unwrap().to_string()
}

async fn members(app: &TestApp, token: &str, lid: &str, method: Method, ids: Value) -> Value {
    let (status, body) = app
        .call(
            method,
            &format!("/api/v1/lists/{lid}/members"),
            Some(token),
            Some(json!({ "ids": ids })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["results"].clone()
}

/// Every id a list timeline shows, page after page by `max_id`.
async fn all_by_max_id(app: &TestApp, token: &str, lid: &str, count: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut path = format!("/api/v1/timelines/list/{lid}?count={count}");
    loop {
        let page = app.timeline_ids(&path, Some(token)).await;
        let fresh: Vec<String> = page
            .into_iter()
            .filter(|id| out.last() != Some(id))
            .collect();
        if fresh.is_empty() {
            return out;
        }
        // max_id includes its own status: the next page starts below it.
        let last: u64 = fresh.last().unwrap().parse().unwrap();
        out.extend(fresh);
        path = format!(
            "/api/v1/timelines/list/{lid}?count={count}&max_id={}",
            last - 1
        );
    }
}

#[tokio::test]
async fn lists_are_their_owners_alone_bounded_and_renamed() {
    let app = TestApp::start().await;
    let (_, owner) = app.user("lister").await;
    let (_, other) = app.user("peeker").await;
    let (status, list) = app
        .post(
            "/api/v1/lists",
            Some(&owner),
            json!({"title": "Rustaceans"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{list}");
    assert_eq!(list["title"], "Rustaceans");
    assert_eq!(list["members"], 0);
    let lid = list["id"].as_str().unwrap().to_string();
    let second = new_list(&app, &owner, "Second").await;
    // Bad titles.
    for title in [json!(""), json!("   "), json!("x".repeat(51)), json!(5)] {
        let (status, body) = app
            .post("/api/v1/lists", Some(&owner), json!({ "title": title }))
            .await;
        assert_error(status, &body, StatusCode::BAD_REQUEST);
    }
    // Oldest first; only the owner's.
    let (_, all) = app.get("/api/v1/lists", Some(&owner)).await;
    let titles: Vec<&str> = all["lists"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Rustaceans", "Second"]);
    let (_, none) = app.get("/api/v1/lists", Some(&other)).await;
    assert_eq!(none, json!({"lists": []}));
    // Another user's list is 404 on every call.
    let path = format!("/api/v1/lists/{lid}");
    for (method, p, body) in [
        (Method::GET, path.clone(), None),
        (Method::PATCH, path.clone(), Some(json!({"title": "mine"}))),
        (Method::DELETE, path.clone(), None),
        (Method::GET, format!("{path}/members"), None),
        (
            Method::POST,
            format!("{path}/members"),
            Some(json!({"ids": ["1"]})),
        ),
        (Method::GET, format!("/api/v1/timelines/list/{lid}"), None),
    ] {
        let (status, body) = app.call(method.clone(), &p, Some(&other), body).await;
        assert_error(status, &body, StatusCode::NOT_FOUND);
    }
    let (status, _) = app.get(&path, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Renamed.
    let (status, renamed) = app
        .call(
            Method::PATCH,
            &path,
            Some(&owner),
            Some(json!({"title": "Crabs"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{renamed}");
    assert_eq!(renamed["title"], "Crabs");
    let (_, shown) = app.get(&path, Some(&owner)).await;
    assert_eq!(shown, renamed);
    // Deleted: 204, then 404 everywhere.
    let (status, _) = app
        .delete(&format!("/api/v1/lists/{second}"), Some(&owner))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = app
        .delete(&format!("/api/v1/lists/{second}"), Some(&owner))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app
        .get(&format!("/api/v1/timelines/list/{second}"), Some(&owner))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A retried create with one Idempotency-Key makes one list.
    let mut ids = HashSet::new();
    for _ in 0..2 {
        let resp = app
            .http
            .post(app.url("/api/v1/lists"))
            .bearer_auth(&owner)
            .header("Idempotency-Key", "make-list-once")
            .json(&json!({"title": "Once"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::CREATED);
        let body: Value = resp.json().await.unwrap();
        ids.insert(body["id"].as_str().unwrap().to_string());
    }
    assert_eq!(ids.len(), 1);
    // At most 100 lists: the 101st is refused and nothing is made.
    let (_, all) = app.get("/api/v1/lists", Some(&owner)).await;
    let have = all["lists"].as_array().unwrap().len();
    for i in have..100 {
        new_list(&app, &owner, &format!("list {i}")).await;
    }
    let (status, body) = app
        .post(
            "/api/v1/lists",
            Some(&owner),
            json!({"title": "one too many"}),
        )
        .await;
    assert_error(status, &body, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["code"], "too_many_lists");
    let (_, all) = app.get("/api/v1/lists", Some(&owner)).await;
    assert_eq!(all["lists"].as_array().unwrap().len(), 100);
}

#[tokio::test]
async fn members_are_answered_per_id_paged_and_capped() {
    let app = TestApp::start().await;
    let (_, owner) = app.user("curator").await;
    let (a, _) = app.user("member_a").await;
    let (b, _) = app.user("member_b").await;
    let (blocker, blocker_token) = app.user("blocker").await;
    let owner_id = app
        .get("/api/v1/me", Some(&owner))
        .await
        .1
        .get("id")
        .and_then(Value::as_str)
        .unwrap()
        .to_string();
    app.post(
        &format!("/api/v1/users/{owner_id}/block"),
        Some(&blocker_token),
        json!({}),
    )
    .await;
    let lid = new_list(&app, &owner, "people").await;
    let results = members(
        &app,
        &owner,
        &lid,
        Method::POST,
        json!([
            a,
            b.parse::<u64>().unwrap(),
            "424242",
            blocker,
            "nonsense",
            a
        ]),
    )
    .await;
    assert_eq!(
        results,
        json!({a.clone(): true, b.clone(): true, "424242": false, blocker.clone(): false, "nonsense": false})
    );
    let (_, list) = app.get(&format!("/api/v1/lists/{lid}"), Some(&owner)).await;
    assert_eq!(list["members"], 2);
    // Added again: still a member, nothing changes.
    let again = members(&app, &owner, &lid, Method::POST, json!([a])).await;
    assert_eq!(again, json!({a.clone(): true}));
    // Paged by cursor, oldest member first.
    let (status, page) = app
        .get(
            &format!("/api/v1/lists/{lid}/members?count=1"),
            Some(&owner),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["users"][0]["id"], a.as_str());
    let cursor = page["next_cursor"].as_str().unwrap().to_string();
    let (_, page) = app
        .get(
            &format!("/api/v1/lists/{lid}/members?count=1&cursor={cursor}"),
            Some(&owner),
        )
        .await;
    assert_eq!(page["users"][0]["id"], b.as_str());
    assert_eq!(page["next_cursor"], Value::Null);
    // Removed: false after the call, for members and strangers alike.
    let gone = members(&app, &owner, &lid, Method::DELETE, json!([a, "424242"])).await;
    assert_eq!(gone, json!({a.clone(): false, "424242": false}));
    let (_, list) = app.get(&format!("/api/v1/lists/{lid}"), Some(&owner)).await;
    assert_eq!(list["members"], 1);
    // Bad bodies.
    let many: Vec<String> = (1..=101).map(|i| i.to_string()).collect();
    for body in [
        json!({"ids": many}),
        json!({"ids": [4.5]}),
        json!({"ids": "1"}),
    ] {
        let (status, answer) = app
            .post(&format!("/api/v1/lists/{lid}/members"), Some(&owner), body)
            .await;
        assert_error(status, &answer, StatusCode::BAD_REQUEST);
    }
    // At most 5,000 members: a call that would pass the cap adds no one.
    let crowd = bulk_users(&app, "crowd", 5_000).await;
    for chunk in crowd.chunks(100).take(49) {
        let results = members(&app, &owner, &lid, Method::POST, json!(chunk)).await;
        assert!(results.as_object().unwrap().values().all(|v| v == true));
    }
    // One member and 4,900 of the crowd: 100 more would pass the cap.
    let refused = |body: Value| {
        let (app, owner, lid) = (&app, &owner, &lid);
        async move {
            let (status, answer) = app
                .post(&format!("/api/v1/lists/{lid}/members"), Some(owner), body)
                .await;
            assert_error(status, &answer, StatusCode::BAD_REQUEST);
            assert_eq!(answer["error"]["code"], "too_many_members");
        }
    };
    refused(json!({"ids": crowd[4900..5000]})).await;
    let (_, list) = app.get(&format!("/api/v1/lists/{lid}"), Some(&owner)).await;
    assert_eq!(list["members"], 4_901);
    let fits = members(&app, &owner, &lid, Method::POST, json!(crowd[4900..4999])).await;
    assert!(fits.as_object().unwrap().values().all(|v| v == true));
    let (_, list) = app.get(&format!("/api/v1/lists/{lid}"), Some(&owner)).await;
    assert_eq!(list["members"], 5_000);
    refused(json!({"ids": [crowd[4999]]})).await;
    // A member already in counts nothing new.
    let again = members(&app, &owner, &lid, Method::POST, json!([crowd[0]])).await;
    assert_eq!(again, json!({crowd[0].to_string(): true}));
}

#[tokio::test]
async fn a_list_timeline_pages_exactly_and_shows_only_what_its_owner_may_see() {
    let app = TestApp::start().await;
    let (_, owner) = app.user("reader").await;
    let owner_id = app.get("/api/v1/me", Some(&owner)).await.1["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (public, public_t) = app.user("open_book").await;
    let (hidden, hidden_t) = app.user("closed_book").await;
    let (friend, friend_t) = app.user("friend").await;
    let (muted, muted_t) = app.user("loud").await;
    let (blocker, blocker_t) = app.user("grudge").await;
    let (_, outsider_t) = app.user("outsider").await;
    // The friend goes private after the owner follows them; the hidden one
    // is private and not followed.
    app.follow(&owner, &friend).await;
    for t in [&hidden_t, &friend_t] {
        let (status, _) = app
            .call(
                Method::PATCH,
                "/api/v1/me",
                Some(t),
                Some(json!({"private": true})),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    let lid = new_list(&app, &owner, "mixed").await;
    let results = members(
        &app,
        &owner,
        &lid,
        Method::POST,
        json!([public, hidden, friend, muted, blocker]),
    )
    .await;
    assert!(results.as_object().unwrap().values().all(|v| v == true));
    app.post(
        &format!("/api/v1/users/{muted}/mute"),
        Some(&owner),
        json!({}),
    )
    .await;
    let (mut shown, mut publics) = (Vec::new(), Vec::new());
    for round in 0..6 {
        let p = app.say(&public_t, &format!("public {round}")).await;
        publics.push(p.clone());
        shown.push(p);
        shown.push(app.say(&friend_t, &format!("friend {round}")).await);
        app.say(&hidden_t, &format!("hidden {round}")).await;
        app.say(&muted_t, &format!("muted {round}")).await;
        app.say(&blocker_t, &format!("grudge {round}")).await;
        app.say(&outsider_t, &format!("outside {round}")).await;
    }
    // The blocker blocks the owner after posting: their statuses go too.
    app.post(
        &format!("/api/v1/users/{owner_id}/block"),
        Some(&blocker_t),
        json!({}),
    )
    .await;
    shown.reverse();
    assert_eq!(all_by_max_id(&app, &owner, &lid, 4).await, shown);
    let first = app
        .timeline_ids(&format!("/api/v1/timelines/list/{lid}"), Some(&owner))
        .await;
    assert_eq!(first, shown);
    // Pages by number hold the same order (only visible ones are shown:
    // a page is the list's statuses, judged).
    let page2 = app
        .timeline_ids(
            &format!("/api/v1/timelines/list/{lid}?count=5&page=2"),
            Some(&owner),
        )
        .await;
    for id in &page2 {
        assert!(shown.contains(id), "page 2 showed {id}");
    }
    // A member taken out leaves the timeline.
    members(&app, &owner, &lid, Method::DELETE, json!([friend])).await;
    let after = app
        .timeline_ids(
            &format!("/api/v1/timelines/list/{lid}?count=50"),
            Some(&owner),
        )
        .await;
    publics.reverse();
    assert_eq!(after, publics);
    assert_eq!(after.len(), 6);
}

#[tokio::test]
async fn a_list_timeline_paged_under_concurrent_posts_skips_and_repeats_nothing() {
    let app = TestApp::start().await;
    let (_, owner) = app.user("pager").await;
    let mut writers = Vec::new();
    for i in 0..5 {
        writers.push(app.user(&format!("writer{i}")).await);
    }
    let lid = new_list(&app, &owner, "writers").await;
    let ids: Vec<&String> = writers.iter().map(|(id, _)| id).collect();
    members(&app, &owner, &lid, Method::POST, json!(ids)).await;
    let mut before = Vec::new();
    for round in 0..8 {
        for (_, t) in &writers {
            before.push(app.say(t, &format!("before {round}")).await);
        }
    }
    before.reverse();
    // Writers keep posting while the owner pages down from the top.
    let tokens: Vec<String> = writers.iter().map(|(_, t)| t.clone()).collect();
    let base = app.url("");
    let writing = tokio::spawn(async move {
        let http = reqwest::Client::new();
        for round in 0..10 {
            for t in &tokens {
                let r = http
                    .post(format!("{base}/api/v1/statuses"))
                    .bearer_auth(t)
                    .json(&json!({"message": format!("during {round}")}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), StatusCode::CREATED);
            }
        }
    });
    let top = app
        .timeline_ids(
            &format!("/api/v1/timelines/list/{lid}?count=1"),
            Some(&owner),
        )
        .await;
    let start: u64 = top[0].parse().unwrap();
    let mut paged = Vec::new();
    let mut max = start;
    loop {
        let page = app
            .timeline_ids(
                &format!("/api/v1/timelines/list/{lid}?count=7&max_id={max}"),
                Some(&owner),
            )
            .await;
        if page.is_empty() {
            break;
        }
        max = page.last().unwrap().parse::<u64>().unwrap() - 1;
        paged.extend(page);
    }
    writing.await.unwrap();
    let expect: Vec<String> = before
        .iter()
        .filter(|id| id.parse::<u64>().unwrap() <= start)
        .cloned()
        .collect();
    let older: Vec<String> = paged
        .iter()
        .filter(|id| !before.contains(id))
        .cloned()
        .collect();
    // Everything at or below the first page's top, each once, newest first
    // (statuses posted meanwhile that came before it are "during" ones).
    let unique: HashSet<&String> = paged.iter().collect();
    assert_eq!(unique.len(), paged.len(), "a page repeated a status");
    let tail: Vec<String> = paged
        .iter()
        .filter(|id| before.contains(id))
        .cloned()
        .collect();
    assert_eq!(tail, expect);
    for id in older {
        assert!(id.parse::<u64>().unwrap() <= start);
    }
}
