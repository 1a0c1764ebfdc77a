//! Groups: creating, joining (at once or by request), leaving, roles and
//! their refusals, the last owner, posting (members; announcement groups'
//! owners and moderators), where group statuses go and never go (private
//! ones to members only, on every read path and stream), and the group
//! stream on every transport.

use crate::assert_error;
use crate::common::{ids, ws_connect, ws_next, ws_send, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

async fn create(app: &TestApp, token: &str, name: &str, kind: &str) -> String {
    let (status, g) = app
        .post(
            "/api/v1/groups",
            Some(token),
            json!({"name": name, "description": "about it", "kind": kind}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{g}");
    g["id"].as_str().unwrap().to_string()
}

async fn group_call(app: &TestApp, token: &str, gid: &str, what: &str) -> (StatusCode, Value) {
    app.post(
        &format!("/api/v1/groups/{gid}/{what}"),
        Some(token),
        json!({}),
    )
    .await
}

async fn post_in(app: &TestApp, token: &str, gid: &str, message: &str) -> (StatusCode, Value) {
    app.post(
        "/api/v1/statuses",
        Some(token),
        json!({"message": message, "group_id": gid}),
    )
    .await
}

#[tokio::test]
async fn groups_are_made_joined_left_and_managed_by_role() {
    let app = TestApp::start().await;
    let (owner_id, owner) = app.user("g_owner").await;
    let (bob_id, bob) = app.user("g_bob").await;
    let (carol_id, carol) = app.user("g_carol").await;
    let (dave_id, dave) = app.user("g_dave").await;
    // Bad input.
    for body in [
        json!({"name": "x", "kind": "secret"}),
        json!({"name": "", "kind": "public"}),
        json!({"name": "   ", "kind": "public"}),
        json!({"name": "n".repeat(51), "kind": "public"}),
        json!({"name": "ok", "kind": "public", "description": "d".repeat(501)}),
        json!({"kind": "public"}),
    ] {
        let (status, err) = app.post("/api/v1/groups", Some(&owner), body.clone()).await;
        assert_error(status, &err, StatusCode::BAD_REQUEST);
    }
    let gid = create(&app, &owner, "Rustaceans", "public").await;
    let (_, g) = app
        .get(&format!("/api/v1/groups/{gid}"), Some(&owner))
        .await;
    assert_eq!(
        (
            g["kind"].as_str(),
            g["members"].as_u64(),
            g["role"].as_str(),
            g["owner"].as_str(),
            g["requested"].as_bool()
        ),
        (
            Some("public"),
            Some(1),
            Some("owner"),
            Some(owner_id.as_str()),
            Some(false)
        ),
        "{g}"
    );
    let (status, anon) = app.get(&format!("/api/v1/groups/{gid}"), None).await;
    assert_eq!(
        (status, anon["role"].clone()),
        (StatusCode::OK, Value::Null)
    );
    let (status, _) = app.get("/api/v1/groups/987654321", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Joining a public group is at once, and idempotent.
    for _ in 0..2 {
        let (status, m) = group_call(&app, &bob, &gid, "join").await;
        assert_eq!(status, StatusCode::OK, "{m}");
        assert_eq!(
            m,
            json!({"group_id": gid, "user_id": bob_id, "member": true, "role": "member", "requested": false})
        );
    }
    let (_, mine) = app.get("/api/v1/groups", Some(&bob)).await;
    assert_eq!(mine["groups"][0]["id"], gid.as_str());
    assert_eq!(mine["groups"][0]["role"], "member");
    assert_eq!(mine["groups"][0]["members"], 2);
    let (_, members) = app
        .get(&format!("/api/v1/groups/{gid}/members"), None)
        .await;
    let roles: Vec<(String, String)> = members["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["id"].as_str().unwrap().into(),
                u["role"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        roles,
        vec![
            (owner_id.clone(), "owner".into()),
            (bob_id.clone(), "member".into())
        ]
    );

    // The last owner cannot leave, be demoted or removed.
    let (status, err) = group_call(&app, &owner, &gid, "leave").await;
    assert_error(status, &err, StatusCode::CONFLICT);
    assert_eq!(err["error"]["code"], "last_owner");
    let member_path = |uid: &str| format!("/api/v1/groups/{gid}/members/{uid}");
    let (status, err) = app
        .call(
            Method::PATCH,
            &member_path(&owner_id),
            Some(&owner),
            Some(json!({"role": "member"})),
        )
        .await;
    assert_error(status, &err, StatusCode::CONFLICT);
    let (status, err) = app.delete(&member_path(&owner_id), Some(&owner)).await;
    assert_error(status, &err, StatusCode::CONFLICT);

    // Roles: only owners set them; a bad role is 400; a non-member 404.
    let (status, err) = app
        .call(
            Method::PATCH,
            &member_path(&bob_id),
            Some(&owner),
            Some(json!({"role": "king"})),
        )
        .await;
    assert_error(status, &err, StatusCode::BAD_REQUEST);
    let (status, err) = app
        .call(
            Method::PATCH,
            &member_path(&carol_id),
            Some(&owner),
            Some(json!({"role": "member"})),
        )
        .await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
    let (status, err) = app
        .call(
            Method::PATCH,
            &member_path(&owner_id),
            Some(&bob),
            Some(json!({"role": "member"})),
        )
        .await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    let (status, m) = app
        .call(
            Method::PATCH,
            &member_path(&bob_id),
            Some(&owner),
            Some(json!({"role": "moderator"})),
        )
        .await;
    assert_eq!(
        (status, m["role"].as_str()),
        (StatusCode::OK, Some("moderator"))
    );

    // Adding: owners and moderators; someone who blocks the adder: 403.
    let (status, err) = app
        .post(
            &format!("/api/v1/groups/{gid}/members"),
            Some(&carol),
            json!({"user_id": dave_id}),
        )
        .await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    let (status, m) = app
        .post(
            &format!("/api/v1/groups/{gid}/members"),
            Some(&bob),
            json!({"user_id": carol_id}),
        )
        .await;
    assert_eq!(
        (status, m["member"].as_bool()),
        (StatusCode::OK, Some(true)),
        "{m}"
    );
    let (status, _) = app
        .post(
            &format!("/api/v1/users/{bob_id}/block"),
            Some(&dave),
            json!({}),
        )
        .await;
    assert!(status.is_success());
    let (status, err) = app
        .post(
            &format!("/api/v1/groups/{gid}/members"),
            Some(&bob),
            json!({"user_id": dave_id}),
        )
        .await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    let (status, err) = app
        .post(
            &format!("/api/v1/groups/{gid}/members"),
            Some(&bob),
            json!({"user_id": "99999999"}),
        )
        .await;
    assert_error(status, &err, StatusCode::NOT_FOUND);

    // Moderators remove members, not owners or moderators.
    let (status, err) = app.delete(&member_path(&owner_id), Some(&bob)).await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    let (status, m) = app.delete(&member_path(&carol_id), Some(&bob)).await;
    assert_eq!(
        (status, m["member"].as_bool()),
        (StatusCode::OK, Some(false)),
        "{m}"
    );
    let (status, err) = app.delete(&member_path(&carol_id), Some(&bob)).await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
    let (_, theirs) = app.get("/api/v1/groups", Some(&carol)).await;
    assert_eq!(theirs["groups"], json!([]), "a removed member's list");

    // A second owner, then the first may leave; the group names the other.
    app.call(
        Method::PATCH,
        &member_path(&bob_id),
        Some(&owner),
        Some(json!({"role": "owner"})),
    )
    .await;
    let (status, m) = group_call(&app, &owner, &gid, "leave").await;
    assert_eq!(
        (status, m["member"].as_bool()),
        (StatusCode::OK, Some(false))
    );
    let (status, again) = group_call(&app, &owner, &gid, "leave").await;
    assert_eq!(
        (status, again["member"].as_bool()),
        (StatusCode::OK, Some(false)),
        "idempotent"
    );
    let (_, g) = app.get(&format!("/api/v1/groups/{gid}"), None).await;
    assert_eq!(
        (g["owner"].as_str(), g["members"].as_u64()),
        (Some(bob_id.as_str()), Some(1))
    );
}

#[tokio::test]
async fn private_groups_take_requests_that_owners_and_moderators_decide() {
    let app = TestApp::start().await;
    let (_, owner) = app.user("p_owner").await;
    let (carol_id, carol) = app.user("p_carol").await;
    let (erin_id, erin) = app.user("p_erin").await;
    let gid = create(&app, &owner, "Secret club", "private").await;
    let (status, m) = group_call(&app, &carol, &gid, "join").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (m["member"].as_bool(), m["requested"].as_bool()),
        (Some(false), Some(true))
    );
    let (_, g) = app
        .get(&format!("/api/v1/groups/{gid}"), Some(&carol))
        .await;
    assert_eq!(
        (g["role"].clone(), g["requested"].as_bool()),
        (Value::Null, Some(true))
    );
    // Requests: owners and moderators only.
    let (status, err) = app
        .get(&format!("/api/v1/groups/{gid}/requests"), Some(&carol))
        .await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    let (_, reqs) = app
        .get(&format!("/api/v1/groups/{gid}/requests"), Some(&owner))
        .await;
    assert_eq!(ids(&reqs["users"]), vec![carol_id.clone()]);
    // A private group's members are 404 to non-members.
    let (status, _) = app
        .get(&format!("/api/v1/groups/{gid}/members"), Some(&carol))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, err) =
        group_call(&app, &owner, &gid, &format!("requests/{erin_id}/authorize")).await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
    let (status, m) = group_call(
        &app,
        &owner,
        &gid,
        &format!("requests/{carol_id}/authorize"),
    )
    .await;
    assert_eq!(
        (status, m["role"].as_str()),
        (StatusCode::OK, Some("member")),
        "{m}"
    );
    let (status, members) = app
        .get(&format!("/api/v1/groups/{gid}/members"), Some(&carol))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(members["users"].as_array().unwrap().len(), 2);
    // A request cancelled by leaving; a rejected one is gone.
    group_call(&app, &erin, &gid, "join").await;
    let (_, m) = group_call(&app, &erin, &gid, "leave").await;
    assert_eq!(m["requested"].as_bool(), Some(false));
    group_call(&app, &erin, &gid, "join").await;
    let (status, m) = group_call(&app, &owner, &gid, &format!("requests/{erin_id}/reject")).await;
    assert_eq!(
        (status, m["requested"].as_bool(), m["member"].as_bool()),
        (StatusCode::OK, Some(false), Some(false))
    );
    let (_, reqs) = app
        .get(&format!("/api/v1/groups/{gid}/requests"), Some(&owner))
        .await;
    assert_eq!(reqs["users"], json!([]));
}

#[tokio::test]
async fn group_statuses_stay_in_their_group_and_private_ones_with_its_members() {
    let app = TestApp::start().await;
    let (owner_id, owner) = app.user("s_owner").await;
    let (member_id, member) = app.user("s_member").await;
    let (outsider_id, outsider) = app.user("s_outsider").await;
    // The outsider follows both: a group status never reaches their home.
    app.follow(&outsider, &owner_id).await;
    app.follow(&outsider, &member_id).await;
    let public = create(&app, &owner, "Open", "public").await;
    let private = create(&app, &owner, "Closed", "private").await;
    let news = create(&app, &owner, "News", "announcement").await;
    for gid in [&public, &news] {
        group_call(&app, &member, gid, "join").await;
    }
    app.post(
        &format!("/api/v1/groups/{private}/members"),
        Some(&owner),
        json!({"user_id": member_id}),
    )
    .await;

    // Who may post: members; in an announcement group owners and moderators.
    let (status, err) = post_in(&app, &outsider, &public, "not a member").await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    let (status, err) = post_in(&app, &member, &news, "members do not announce").await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    let (status, err) = post_in(&app, &member, "123456789", "no such group").await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
    let (status, s) = post_in(&app, &owner, &news, "an announcement").await;
    assert_eq!(status, StatusCode::CREATED, "{s}");

    // A public group's status: public everywhere but homes, profiles.
    let (status, open) = post_in(&app, &member, &public, "hello #grouptag open").await;
    assert_eq!(status, StatusCode::CREATED, "{open}");
    assert_eq!(open["group_id"], public.as_str());
    let open_id = open["id"].as_str().unwrap().to_string();
    let (_, timeline) = app
        .get(&format!("/api/v1/groups/{public}/statuses"), None)
        .await;
    assert_eq!(ids(&timeline), vec![open_id.clone()]);
    assert!(!app
        .timeline_ids("/api/v1/timelines/home", Some(&outsider))
        .await
        .contains(&open_id));
    assert!(!app
        .timeline_ids("/api/v1/timelines/home", Some(&member))
        .await
        .contains(&open_id));
    assert!(!app
        .timeline_ids(&format!("/api/v1/users/{member_id}/statuses"), None)
        .await
        .contains(&open_id));
    assert!(app
        .timeline_ids("/api/v1/timelines/tag/grouptag", None)
        .await
        .contains(&open_id));
    let (status, _) = app.get(&format!("/api/v1/statuses/{open_id}"), None).await;
    assert_eq!(status, StatusCode::OK);
    // A reply belongs to its parent's group; another group is refused.
    let (status, reply) = app
        .post(
            "/api/v1/statuses",
            Some(&member),
            json!({"message": "a reply", "reply_to": open_id}),
        )
        .await;
    assert_eq!(
        (status, reply["group_id"].as_str()),
        (StatusCode::CREATED, Some(public.as_str())),
        "{reply}"
    );
    let (status, err) = app
        .post(
            "/api/v1/statuses",
            Some(&member),
            json!({"message": "elsewhere", "reply_to": open_id, "group_id": private}),
        )
        .await;
    assert_error(status, &err, StatusCode::BAD_REQUEST);
    let (status, err) = app
        .post(
            "/api/v1/statuses",
            Some(&outsider),
            json!({"message": "a reply", "reply_to": open_id}),
        )
        .await;
    assert_error(status, &err, StatusCode::FORBIDDEN);

    // A private group's status: its members alone, on every read path.
    let (status, closed) = post_in(
        &app,
        &member,
        &private,
        "secret #closedtag for @s_owner and @s_outsider",
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{closed}");
    let closed_id = closed["id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/statuses/{closed_id}");
    for viewer in [None, Some(outsider.as_str())] {
        let (status, _) = app.get(&path, viewer).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        for read in ["statuses", "members"] {
            let (status, _) = app
                .get(&format!("/api/v1/groups/{private}/{read}"), viewer)
                .await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{read}");
        }
        for sub in ["context", "liked_by"] {
            let (status, _) = app.get(&format!("{path}/{sub}"), viewer).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{sub}");
        }
    }
    let (status, seen) = app.get(&path, Some(&owner)).await;
    assert_eq!(
        (status, seen["group_id"].as_str()),
        (StatusCode::OK, Some(private.as_str()))
    );
    assert_eq!(
        ids(&app
            .get(&format!("/api/v1/groups/{private}/statuses"), Some(&member))
            .await
            .1),
        vec![closed_id.clone()]
    );
    assert!(!app
        .timeline_ids("/api/v1/timelines/tag/closedtag", Some(&owner))
        .await
        .contains(&closed_id));
    assert!(app
        .timeline_ids("/api/v1/timelines/mentions", Some(&owner))
        .await
        .contains(&closed_id));
    assert!(!app
        .timeline_ids("/api/v1/timelines/mentions", Some(&outsider))
        .await
        .contains(&closed_id));
    let (status, err) = app
        .post(&format!("{path}/repost"), Some(&owner), json!({}))
        .await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    let (_, trends) = app.get("/api/v1/trends/tags", None).await;
    assert!(!trends.to_string().contains("closedtag"), "{trends}");
    assert!(trends.to_string().contains("grouptag"), "{trends}");
    // A like by a member shows on their likes page to members only.
    app.post(&format!("{path}/like"), Some(&owner), json!({}))
        .await;
    assert!(!app
        .timeline_ids(&format!("/api/v1/users/{owner_id}/likes"), Some(&outsider))
        .await
        .contains(&closed_id));
    assert!(app
        .timeline_ids(&format!("/api/v1/users/{owner_id}/likes"), Some(&member))
        .await
        .contains(&closed_id));
    let _ = outsider_id;

    // Removing a group's status: its author, an owner or a moderator.
    let remove = |sid: &str| format!("/api/v1/groups/{public}/statuses/{sid}");
    let (_, other) = post_in(&app, &owner, &public, "the owner's").await;
    let other_id = other["id"].as_str().unwrap().to_string();
    let (status, err) = app.delete(&remove(&other_id), Some(&member)).await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    let (status, _) = app.delete(&remove(&open_id), Some(&owner)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = app.get(&format!("/api/v1/statuses/{open_id}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    app.eventually("the timeline forgets it", || async {
        !app.timeline_ids(&format!("/api/v1/groups/{public}/statuses"), None)
            .await
            .contains(&open_id)
    })
    .await;
    let (status, err) = app.delete(&remove("12345"), Some(&owner)).await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn group_streams_carry_their_group_alone_and_end_for_a_member_who_leaves() {
    let app = TestApp::start().await;
    let (owner_id, owner) = app.user("st_owner").await;
    let (member_id, member) = app.user("st_member").await;
    let (outsider_id, outsider) = app.user("st_outsider").await;
    app.follow(&outsider, &owner_id).await;
    let private = create(&app, &owner, "Private stream", "private").await;
    let public = create(&app, &owner, "Public stream", "public").await;
    app.post(
        &format!("/api/v1/groups/{private}/members"),
        Some(&owner),
        json!({"user_id": member_id}),
    )
    .await;
    let firehose = app
        .operator_token(&outsider_id, &["read", "firehose"])
        .await;
    let mut fh = app
        .stream("/api/v1/stream/firehose", Some(&firehose), &[])
        .await;
    let mut home = app
        .stream("/api/v1/stream/user", Some(&outsider), &[])
        .await;
    let adhoc = "/api/v1/stream/filter?track=streamword";
    let mut filter = app.stream(adhoc, Some(&outsider), &[]).await;
    let mut sample = app
        .stream("/api/v1/stream/sample?rate=1", Some(&outsider), &[])
        .await;
    app.post(
        "/api/v1/stream/rules",
        Some(&outsider),
        json!({"add": [{"value": "streamword"}]}),
    )
    .await;
    let mut search = app
        .stream("/api/v1/stream/search", Some(&outsider), &[])
        .await;
    // Refusals: no id, a group one may not read, no such group.
    let s = app.stream("/api/v1/stream/group", Some(&member), &[]).await;
    assert_eq!(s.status, StatusCode::BAD_REQUEST);
    let s = app
        .stream(
            &format!("/api/v1/stream/group?id={private}"),
            Some(&outsider),
            &[],
        )
        .await;
    assert_eq!(s.status, StatusCode::NOT_FOUND);
    let s = app
        .stream("/api/v1/stream/group?id=424242", Some(&member), &[])
        .await;
    assert_eq!(s.status, StatusCode::NOT_FOUND);

    let mut sse = app
        .stream(
            &format!("/api/v1/stream/group?id={private}"),
            Some(&member),
            &[],
        )
        .await;
    assert_eq!(sse.status, StatusCode::OK, "{}", sse.body);
    let mut ndjson = app
        .stream(
            &format!("/api/v1/stream/group?id={private}"),
            Some(&member),
            &[("accept", "application/x-ndjson")],
        )
        .await;
    let mut ws = ws_connect(&app, "/api/v1/stream", &member).await;
    for gid in [&private, &public] {
        ws_send(
            &mut ws,
            json!({"type": "subscribe", "stream": "group", "group": gid}),
        )
        .await;
        let ok = ws_next(&mut ws).await;
        assert_eq!(
            (ok["type"].as_str(), ok["group"].as_str()),
            (Some("subscribed"), Some(gid.as_str())),
            "{ok}"
        );
    }
    ws_send(
        &mut ws,
        json!({"type": "subscribe", "stream": "group", "group": "424242"}),
    )
    .await;
    let e = ws_next(&mut ws).await;
    assert_eq!(
        (e["type"].as_str(), e["group"].as_str()),
        (Some("error"), Some("424242")),
        "{e}"
    );

    let (_, secret) = post_in(&app, &owner, &private, "secret streamword").await;
    let secret_id = secret["id"].as_str().unwrap().to_string();
    for s in [&mut sse, &mut ndjson] {
        let m = s.next_event("the private group's status").await;
        assert_eq!(m.data["status"]["id"], secret_id.as_str());
        assert_eq!(m.data["status"]["group_id"], private.as_str());
    }
    let w = ws_next(&mut ws).await;
    assert_eq!(
        (
            w["stream"].as_str(),
            w["group"].as_str(),
            w["status"]["id"].as_str()
        ),
        (
            Some("group"),
            Some(private.as_str()),
            Some(secret_id.as_str())
        )
    );
    let (_, open) = post_in(&app, &owner, &public, "open streamword").await;
    let w = ws_next(&mut ws).await;
    assert_eq!(
        (w["group"].as_str(), w["status"]["id"].as_str()),
        (Some(public.as_str()), open["id"].as_str())
    );
    // The public group's status reaches the public streams; the private
    // one's never does, nor the followers' user streams.
    for s in [&mut fh, &mut filter, &mut sample, &mut search] {
        let m = s.next_event("the public group's status").await;
        assert_eq!(m.data["status"]["id"], open["id"], "{:?}", m.data);
    }
    home.assert_quiet(Duration::from_millis(300)).await;
    // Unsubscribing one group leaves the other.
    ws_send(
        &mut ws,
        json!({"type": "unsubscribe", "stream": "group", "group": public}),
    )
    .await;
    assert_eq!(ws_next(&mut ws).await["type"], "unsubscribed");
    post_in(&app, &owner, &public, "after unsubscribing").await;
    // Removed from the private group: nothing more, and the plain streams end.
    app.delete(
        &format!("/api/v1/groups/{private}/members/{member_id}"),
        Some(&owner),
    )
    .await;
    post_in(&app, &owner, &private, "after the removal").await;
    for s in [&mut sse, &mut ndjson] {
        let m = s.next("the end").await;
        assert_eq!(
            (m.data["type"].as_str(), m.data["code"].as_str()),
            (Some("disconnect"), Some("group_left")),
            "{:?}",
            m.data
        );
        assert!(s.ended_within(Duration::from_secs(5)).await);
    }
    let quiet = tokio::time::timeout(Duration::from_millis(600), ws_next(&mut ws)).await;
    if let Ok(v) = quiet {
        assert_ne!(v["type"], "status", "the socket got {v}");
    }
    let m = fh.next_event("the public status").await;
    assert_eq!(m.data["status"]["message"], "after unsubscribing");
    fh.assert_quiet(Duration::from_millis(300)).await;
    let (status, _) = app
        .call(
            Method::GET,
            &format!("/api/v1/groups/{private}/statuses"),
            Some(&member),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_deleted_account_leaves_its_groups_and_its_group_statuses_go() {
    let app = TestApp::start().await;
    let (_, founder) = app.user("d_founder").await;
    let (other_id, other) = app.user("d_other").await;
    let gid = create(&app, &founder, "Left behind", "private").await;
    app.post(
        &format!("/api/v1/groups/{gid}/members"),
        Some(&founder),
        json!({"user_id": other_id}),
    )
    .await;
    let (_, s) = post_in(&app, &founder, &gid, "the founder's words").await;
    let sid = s["id"].as_str().unwrap().to_string();
    let (status, body) = app
        .call(
            Method::DELETE,
            "/api/v1/me",
            Some(&founder),
            Some(json!({"password": "password123"})),
        )
        .await;
    assert!(status.is_success(), "{body}");
    app.eventually("the founder is out and their status gone", || async {
        let (_, g) = app
            .get(&format!("/api/v1/groups/{gid}"), Some(&other))
            .await;
        let (_, timeline) = app
            .get(&format!("/api/v1/groups/{gid}/statuses"), Some(&other))
            .await;
        g["members"] == 1 && !ids(&timeline).contains(&sid)
    })
    .await;
    // The last owner gone, the longest-standing member owns the group.
    let (_, g) = app
        .get(&format!("/api/v1/groups/{gid}"), Some(&other))
        .await;
    assert_eq!(
        (g["owner"].as_str(), g["role"].as_str()),
        (Some(other_id.as_str()), Some("owner")),
        "{g}"
    );
}

#[tokio::test]
async fn a_reply_in_a_private_group_is_not_counted_on_a_status_outside_it() {
    let app = TestApp::start().await;
    let (_, owner) = app.user("vault_owner").await;
    let (_, outsider) = app.user("outsider").await;
    let gid = create(&app, &owner, "vault", "private").await;
    let public = app.say(&outsider, "what do you think").await;
    let (status, reply) = app
        .post(
            "/api/v1/statuses",
            Some(&owner),
            json!({"message": "we talk about it", "group_id": gid, "reply_to": public}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{reply}");
    let inside = post_in(&app, &owner, &gid, "inside").await.1["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, _) = app
        .post(
            "/api/v1/statuses",
            Some(&owner),
            json!({"message": "an answer inside", "group_id": gid, "reply_to": inside}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    for token in [&outsider, &owner] {
        let (_, seen) = app
            .get(&format!("/api/v1/statuses/{public}"), Some(token))
            .await;
        assert_eq!(seen["replies"], 0, "{seen}");
    }
    let (_, seen) = app
        .get(&format!("/api/v1/statuses/{inside}"), Some(&owner))
        .await;
    assert_eq!(
        seen["replies"], 1,
        "a reply within the group counts: {seen}"
    );
}
