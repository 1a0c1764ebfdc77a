//! Filter rules: the rules endpoint, the search stream (matching_rules,
//! changes reaching open streams, resume), ad-hoc rules on the filter
//! stream and the multiplexed socket, and their privacy.

use crate::common::{ws_connect, ws_next, ws_send, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::time::Duration;

async fn rules_call(app: &TestApp, token: &str, query: &str, body: Value) -> (StatusCode, Value) {
    app.post(&format!("/api/v1/stream/rules{query}"), Some(token), body)
        .await
}

#[tokio::test]
async fn filter_rules_are_kept_per_user_with_duplicates_dry_runs_and_deletes() {
    let app = TestApp::start().await;
    let (_, token) = app.user("ruler").await;
    let (_, other) = app.user("other_ruler").await;
    app.register("ada").await;
    // A dry run validates and answers as the call would, changing nothing.
    let (status, body) = rules_call(
        &app,
        &token,
        "?dry_run=true",
        json!({"add": [{"value": "rust OR from:ada", "tag": "lang"}]}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["data"][0]["id"], Value::Null);
    assert_eq!(body["meta"]["created"], 1);
    let (_, listed) = app.get("/api/v1/stream/rules", Some(&token)).await;
    assert_eq!(listed["data"], json!([]));

    let (status, body) = rules_call(
        &app,
        &token,
        "",
        json!({"add": [
            {"value": "rust OR from:ada", "tag": "lang"},
            {"value": "\"exact phrase\" -is:reply"},
            {"value": "rust OR from:ada", "tag": "ignored"},
        ]}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["meta"]["created"], 2);
    let first = body["data"][0]["id"].as_str().unwrap().to_string();
    let second = body["data"][1]["id"].as_str().unwrap().to_string();
    assert_eq!(
        body["data"][2]["id"],
        json!(first),
        "an earlier item's duplicate"
    );
    assert_eq!(
        body["data"][2]["tag"], "lang",
        "a tag is set at creation only"
    );
    assert_eq!(body["data"][1]["tag"], Value::Null);
    // Adding it again creates nothing: 200 with the rule.
    let (status, body) = rules_call(
        &app,
        &token,
        "",
        json!({"add": [{"value": "rust OR from:ada"}]}),
    )
    .await;
    assert_eq!(
        (
            status,
            body["data"][0]["id"].clone(),
            body["meta"]["created"].clone()
        ),
        (StatusCode::OK, json!(first), json!(0))
    );
    let (_, listed) = app.get("/api/v1/stream/rules", Some(&token)).await;
    let ids: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![first.as_str(), second.as_str()], "oldest first");
    // Another user sees none of them and cannot delete them.
    let (_, theirs) = app.get("/api/v1/stream/rules", Some(&other)).await;
    assert_eq!(theirs["data"], json!([]));
    let (status, body) = rules_call(&app, &other, "", json!({"delete": {"ids": [first]}})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["meta"], json!({"deleted": [], "not_found": [first]}));
    // A dry delete sorts, a real one deletes.
    let (_, body) = rules_call(
        &app,
        &token,
        "?dry_run=true",
        json!({"delete": {"ids": [first, "12345"]}}),
    )
    .await;
    assert_eq!(
        body["meta"],
        json!({"deleted": [first], "not_found": ["12345"]})
    );
    let (_, body) = rules_call(&app, &token, "", json!({"delete": {"ids": [first]}})).await;
    assert_eq!(body["meta"], json!({"deleted": [first], "not_found": []}));
    let (_, listed) = app.get("/api/v1/stream/rules", Some(&token)).await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    // An id is never reused: the same value again gets a new one.
    let (_, body) = rules_call(
        &app,
        &token,
        "",
        json!({"add": [{"value": "rust OR from:ada"}]}),
    )
    .await;
    assert_ne!(body["data"][0]["id"], json!(first));
}

#[tokio::test]
async fn invalid_rules_name_the_item_and_the_column_and_change_nothing() {
    let app = TestApp::start().await;
    let (_, token) = app.user("bad_ruler").await;
    for (body, rule, column) in [
        (
            json!({"add": [{"value": "ok"}, {"value": "a nope:x"}]}),
            1,
            Some(3),
        ),
        (json!({"add": [{"value": "-a"}]}), 0, Some(1)),
        (json!({"add": [{"value": "a (b"}]}), 0, Some(3)),
        (json!({"add": [{"value": "from:nobody_here"}]}), 0, Some(1)),
        (json!({"add": [{"value": "x".repeat(1025)}]}), 0, Some(1025)),
        (
            json!({"add": [{"value": "ok", "tag": "t".repeat(129)}]}),
            0,
            None,
        ),
    ] {
        let (status, err) = rules_call(&app, &token, "", body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {err}");
        assert_eq!(err["error"]["code"], "invalid_rule", "{err}");
        assert_eq!(err["error"]["rule"], rule, "{err}");
        assert_eq!(err["error"]["column"], json!(column), "{err}");
        assert!(err["error"]["message"].is_string());
    }
    for body in [
        json!({}),
        json!({"add": []}),
        json!({"add": [{"value": "a"}], "delete": {"ids": ["1"]}}),
        json!({"delete": {"ids": []}}),
        json!({"delete": {"ids": [{}]}}),
    ] {
        let (status, _) = rules_call(&app, &token, "", body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    }
    let (status, _) = rules_call(
        &app,
        &token,
        "?dry_run=maybe",
        json!({"add": [{"value": "a"}]}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (_, listed) = app.get("/api/v1/stream/rules", Some(&token)).await;
    assert_eq!(
        listed["data"],
        json!([]),
        "nothing of the refused adds was kept"
    );
}

#[tokio::test]
async fn a_user_keeps_at_most_1000_rules() {
    let app = TestApp::start().await;
    let (_, token) = app.user("many_rules").await;
    let add: Vec<Value> = (0..1000)
        .map(|i| json!({"value": format!("word{i}")}))
        .collect();
    let (status, body) = rules_call(&app, &token, "", json!({ "add": add })).await;
    assert_eq!(
        (status, body["meta"]["created"].clone()),
        (StatusCode::CREATED, json!(1000))
    );
    let (status, err) = rules_call(&app, &token, "", json!({"add": [{"value": "one more"}]})).await;
    assert_eq!(
        (status, err["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!("too_many_rules"))
    );
    // A duplicate still answers its rule.
    let (status, _) = rules_call(&app, &token, "", json!({"add": [{"value": "word7"}]})).await;
    assert_eq!(status, StatusCode::OK);
}

/// `s` percent-encoded for a query string.
pub(crate) fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Adds rules `(value, tag)` to the caller's set: their ids, in order.
async fn add_rules(app: &TestApp, token: &str, rules: &[(&str, Option<&str>)]) -> Vec<String> {
    let add: Vec<Value> = rules
        .iter()
        .map(|(v, t)| match t {
            Some(t) => json!({"value": v, "tag": t}),
            None => json!({"value": v}),
        })
        .collect();
    let (status, body) = rules_call(app, token, "", json!({ "add": add })).await;
    assert!(status.is_success(), "{body}");
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// The `(id, tag)` pairs of an event's `matching_rules`.
fn matched(data: &Value) -> Vec<(String, Value)> {
    data["matching_rules"]
        .as_array()
        .unwrap_or_else(|| panic!("matching_rules in {data}"))
        .iter()
        .map(|r| (r["id"].as_str().unwrap().to_string(), r["tag"].clone()))
        .collect()
}

/// Rule changes are announced through Redis; a status posted a second
/// after the answer is judged by the new rules.
const SETTLE: Duration = Duration::from_millis(1100);

#[tokio::test]
async fn the_search_stream_delivers_public_statuses_with_every_rule_they_match() {
    let app = TestApp::start().await;
    let (_, analyst) = app.user("analyst").await;
    let (_, writer) = app.user("writer").await;
    let (_, other) = app.user("other_writer").await;
    let (_, hidden) = app.user("hidden_writer").await;
    let (status, _) = app
        .call(
            reqwest::Method::PATCH,
            "/api/v1/me",
            Some(&hidden),
            Some(json!({"private": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let ids = add_rules(
        &app,
        &analyst,
        &[
            ("rust", Some("lang")),
            ("from:writer -is:reply", None),
            ("\"deep learning\" OR #ml", Some("ai")),
        ],
    )
    .await;
    for accept in ["text/event-stream", "application/x-ndjson"] {
        let mut s = app
            .stream(
                "/api/v1/stream/search",
                Some(&analyst),
                &[("accept", accept)],
            )
            .await;
        assert_eq!(s.status, StatusCode::OK, "{}", s.body);
        let both = app.say(&writer, "I write rust daily").await;
        let m = s.next_event("a status matching two rules").await;
        assert_eq!(m.data["status"]["id"], both.as_str(), "{accept}");
        assert_eq!(
            matched(&m.data),
            vec![
                (ids[0].clone(), json!("lang")),
                (ids[1].clone(), Value::Null)
            ],
            "{accept}: every rule it matches, in the rules' order"
        );
        // Matches none: a word inside another, a private account, a phrase
        // out of order, a negated part.
        app.say(&other, "rusty nails").await;
        app.say(&hidden, "rust from a private account").await;
        app.say(&other, "learning deep things").await;
        let reply = app
            .post_status(&writer, json!({"message": "a reply", "reply_to": both}))
            .await;
        assert!(reply["id"].is_string(), "{reply}");
        let ai = app.say(&other, "Deep learning with #ML").await;
        let m = s.next_event("the phrase rule").await;
        assert_eq!(m.data["status"]["id"], ai.as_str(), "{accept}: {}", m.data);
        assert_eq!(matched(&m.data), vec![(ids[2].clone(), json!("ai"))]);
        // A delivered status deleted: its delete follows.
        let (status, _) = app
            .delete(&format!("/api/v1/statuses/{ai}"), Some(&other))
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let m = s.next_event("the delete").await;
        assert_eq!(m.event, "delete");
        assert_eq!(m.data["status_id"], ai.as_str());
        assert!(m.data.get("matching_rules").is_none());
    }
    // A search stream opens with no rules too, and gets nothing.
    let (_, empty) = app.user("no_rules").await;
    let mut s = app.stream("/api/v1/stream/search", Some(&empty), &[]).await;
    assert_eq!(s.status, StatusCode::OK);
    app.say(&writer, "rust again").await;
    s.assert_quiet(Duration::from_millis(500)).await;
}

#[tokio::test]
async fn rule_changes_reach_open_search_streams_without_a_reconnect() {
    let app = TestApp::start().await;
    let (_, analyst) = app.user("live_analyst").await;
    let (_, writer) = app.user("live_writer").await;
    let mut s = app
        .stream("/api/v1/stream/search", Some(&analyst), &[])
        .await;
    let mut ws = ws_connect(&app, "/api/v1/stream", &analyst).await;
    ws_send(&mut ws, json!({"type": "subscribe", "stream": "search"})).await;
    assert_eq!(ws_next(&mut ws).await["type"], "subscribed");
    app.say(&writer, "kiwi before any rule").await;
    let ids = add_rules(&app, &analyst, &[("kiwi", Some("fruit"))]).await;
    tokio::time::sleep(SETTLE).await;
    let kiwi = app.say(&writer, "kiwi after the rule").await;
    let m = s.next_event("the new rule's match").await;
    assert_eq!(m.data["status"]["id"], kiwi.as_str());
    assert_eq!(matched(&m.data), vec![(ids[0].clone(), json!("fruit"))]);
    let w = ws_next(&mut ws).await;
    assert_eq!(
        (w["stream"].as_str(), w["type"].as_str()),
        (Some("search"), Some("status"))
    );
    assert_eq!(w["status"]["id"], kiwi.as_str());
    assert_eq!(w["matching_rules"][0]["id"], ids[0].as_str());
    // A second rule joins the first; then the first goes.
    let more = add_rules(&app, &analyst, &[("mango", None)]).await;
    let (status, _) = rules_call(&app, &analyst, "", json!({"delete": {"ids": [ids[0]]}})).await;
    assert_eq!(status, StatusCode::OK);
    tokio::time::sleep(SETTLE).await;
    app.say(&writer, "kiwi after its rule went").await;
    let mango = app.say(&writer, "mango and kiwi").await;
    let m = s.next_event("only the remaining rule").await;
    assert_eq!(m.data["status"]["id"], mango.as_str());
    assert_eq!(matched(&m.data), vec![(more[0].clone(), Value::Null)]);
    // Another session of the same user sees the same rules.
    let second = app.login("live_analyst").await;
    let mut s2 = app
        .stream("/api/v1/stream/search", Some(&second), &[])
        .await;
    let again = app.say(&writer, "mango once more").await;
    assert_eq!(
        s2.next_event("the other session").await.data["status"]["id"],
        again.as_str()
    );
    assert_eq!(
        s.next_event("the first session").await.data["status"]["id"],
        again.as_str()
    );
}

#[tokio::test]
async fn a_search_stream_resumes_judging_the_replay_by_the_current_rules() {
    let app = TestApp::start().await;
    let (_, analyst) = app.user("resume_analyst").await;
    let (_, writer) = app.user("resume_writer").await;
    let ids = add_rules(&app, &analyst, &[("papaya", Some("p"))]).await;
    let mut s = app
        .stream("/api/v1/stream/search", Some(&analyst), &[])
        .await;
    let first = app.say(&writer, "papaya one").await;
    let m = s.next_event("first").await;
    assert_eq!(m.data["status"]["id"], first.as_str());
    let resume_from = m.id.clone().expect("an SSE id");
    drop(s);
    let second = app.say(&writer, "papaya two").await;
    app.say(&writer, "guava three").await;
    let guava = add_rules(&app, &analyst, &[("guava", None)]).await;
    let mut s = app
        .stream(
            "/api/v1/stream/search",
            Some(&analyst),
            &[("last-event-id", resume_from.as_str())],
        )
        .await;
    let m = s.next_event("the missed papaya").await;
    assert_eq!(m.data["status"]["id"], second.as_str());
    assert_eq!(matched(&m.data), vec![(ids[0].clone(), json!("p"))]);
    let m = s.next_event("guava, by the rule added since").await;
    assert_eq!(status_text(&m.data), "guava three");
    assert_eq!(matched(&m.data), vec![(guava[0].clone(), Value::Null)]);
    // count=N: the newest N matching events.
    let mut s = app
        .stream("/api/v1/stream/search?count=2", Some(&analyst), &[])
        .await;
    assert_eq!(
        status_text(&s.next_event("replayed").await.data),
        "papaya two"
    );
    assert_eq!(
        status_text(&s.next_event("replayed").await.data),
        "guava three"
    );
}

fn status_text(data: &Value) -> &str {
    data["status"]["message"].as_str().unwrap_or("")
}

#[tokio::test]
async fn ad_hoc_rules_join_the_filter_stream_with_index_ids() {
    let app = TestApp::start().await;
    let (_, reader) = app.user("adhoc_reader").await;
    let (writer_id, writer) = app.user("adhoc_writer").await;
    let rules = json!([{"value": "apple", "tag": "fruit"}, "from:adhoc_writer pie"]);
    let path = format!(
        "/api/v1/stream/filter?track=banana&rules={}",
        enc(&rules.to_string())
    );
    let mut s = app.stream(&path, Some(&reader), &[]).await;
    assert_eq!(s.status, StatusCode::OK, "{}", s.body);
    let (_, other) = app.user("adhoc_other").await;
    app.say(&other, "apple").await;
    let m = s.next_event("apple").await;
    assert_eq!(matched(&m.data), vec![("0".to_string(), json!("fruit"))]);
    app.say(&other, "banana split").await;
    let m = s.next_event("banana, by track").await;
    assert_eq!(status_text(&m.data), "banana split");
    assert_eq!(m.data["matching_rules"], json!([]), "only track matched");
    app.say(&writer, "apple pie with banana").await;
    let m = s.next_event("all three").await;
    assert_eq!(
        matched(&m.data),
        vec![
            ("0".to_string(), json!("fruit")),
            ("1".to_string(), Value::Null)
        ],
        "once, with both rules"
    );
    s.assert_quiet(Duration::from_millis(300)).await;
    // Rules alone are a filter.
    let only = format!(
        "/api/v1/stream/filter?rules={}",
        enc(r#"["from:adhoc_writer"]"#)
    );
    let mut s = app.stream(&only, Some(&reader), &[]).await;
    assert_eq!(s.status, StatusCode::OK, "{}", s.body);
    app.say(&writer, "anything").await;
    let m = s.next_event("from the writer").await;
    assert_eq!(m.data["status"]["uid"], writer_id.as_str());
    assert_eq!(m.data["matching_rules"], json!([{"id": "0", "tag": null}]));

    // Refusals: not JSON, empty, too many, an invalid item.
    let many: Vec<String> = (0..101).map(|i| format!("w{i}")).collect();
    for (rules, rule, column) in [
        ("not json".to_string(), None, None),
        ("[]".to_string(), None, None),
        (json!(many).to_string(), None, None),
        (json!(["ok", "-neg"]).to_string(), Some(1), Some(1)),
        (json!([{"value": "a nope:x"}]).to_string(), Some(0), Some(3)),
        (json!(["from:nobody_at_all"]).to_string(), Some(0), Some(1)),
    ] {
        let path = format!("/api/v1/stream/filter?rules={}", enc(&rules));
        let s = app.stream(&path, Some(&reader), &[]).await;
        assert_eq!(s.status, StatusCode::BAD_REQUEST, "{rules}");
        assert_eq!(
            s.body["error"]["code"], "invalid_rule",
            "{rules}: {}",
            s.body
        );
        assert!(s.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("rules"));
        assert_eq!(
            s.body["error"].get("rule").cloned(),
            rule.map(|r: i32| json!(r))
        );
        assert_eq!(
            s.body["error"].get("column").cloned(),
            column.map(|c: i32| json!(c))
        );
    }
}

#[tokio::test]
async fn the_multiplexed_socket_takes_ad_hoc_rules_and_answers_invalid_ones_with_an_error() {
    let app = TestApp::start().await;
    let (_, reader) = app.user("mux_reader").await;
    let (_, writer) = app.user("mux_writer").await;
    let mut ws = ws_connect(&app, "/api/v1/stream", &reader).await;
    ws_send(
        &mut ws,
        json!({"type": "subscribe", "stream": "filter", "rules": [{"value": "a (b", "tag": "t"}]}),
    )
    .await;
    let e = ws_next(&mut ws).await;
    assert_eq!(e["type"], "error", "{e}");
    assert_eq!(
        (e["code"].as_str(), e["rule"].as_i64(), e["column"].as_i64()),
        (Some("invalid_rule"), Some(0), Some(3)),
        "{e}"
    );
    ws_send(
        &mut ws,
        json!({"type": "subscribe", "stream": "filter", "rules": ["cherry", {"value": "plum", "tag": "p"}]}),
    )
    .await;
    assert_eq!(ws_next(&mut ws).await["type"], "subscribed");
    app.say(&writer, "plum").await;
    let m = ws_next(&mut ws).await;
    assert_eq!(m["stream"], "filter");
    assert_eq!(m["matching_rules"], json!([{"id": "1", "tag": "p"}]));
}

#[tokio::test]
async fn rule_streams_never_carry_private_statuses_whoever_owns_the_rules() {
    let app = TestApp::start().await;
    let (private_id, private) = app.user("secret_poster").await;
    let (_, follower) = app.user("secret_follower").await;
    let (status, _) = app
        .call(
            reqwest::Method::PATCH,
            "/api/v1/me",
            Some(&private),
            Some(json!({"private": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    // The follower is approved: they may read the account, yet rules
    // streams stay public-only.
    let (status, _) = app
        .post(
            &format!("/api/v1/users/{private_id}/follow"),
            Some(&follower),
            json!({}),
        )
        .await;
    assert!(status.is_success());
    let (_, requester) = app.get("/api/v1/me", Some(&follower)).await;
    let fid = requester["id"].as_str().unwrap().to_string();
    let (status, body) = app
        .post(
            &format!("/api/v1/follow_requests/{fid}/authorize"),
            Some(&private),
            json!({}),
        )
        .await;
    assert!(status.is_success(), "{body}");
    add_rules(
        &app,
        &follower,
        &[("from:secret_poster", None), ("secret", None)],
    )
    .await;
    add_rules(&app, &private, &[("secret", None)]).await;
    let mut theirs = app
        .stream("/api/v1/stream/search", Some(&follower), &[])
        .await;
    let mut own = app
        .stream("/api/v1/stream/search", Some(&private), &[])
        .await;
    let adhoc = format!("/api/v1/stream/filter?rules={}", enc(r#"["secret"]"#));
    let mut filter = app.stream(&adhoc, Some(&follower), &[]).await;
    let secret = app.say(&private, "secret words").await;
    // The follower's reply to it is private too.
    app.post_status(
        &follower,
        json!({"message": "secret reply", "reply_to": secret}),
    )
    .await;
    for s in [&mut theirs, &mut own, &mut filter] {
        s.assert_quiet(Duration::from_millis(600)).await;
    }
    // A replay holds none of them either.
    let mut replay = app
        .stream("/api/v1/stream/search?count=10", Some(&follower), &[])
        .await;
    replay.assert_quiet(Duration::from_millis(400)).await;
}

/// Waits for a keep-alive carrying a position at or past `past` (an event
/// id), and answers it.
async fn position_past(s: &mut crate::common::StreamClient, past: &str) -> String {
    let past = event_id(past);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(p) = s.position.clone() {
            if event_id(&p) >= past {
                return p;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no keep-alive position past {past:?}"
        );
        if let Some(m) = s.next_within(Duration::from_millis(200)).await {
            panic!("unexpected event: {:?}", m.data);
        }
    }
}

fn event_id(id: &str) -> firehose::stream::EventId {
    firehose::stream::EventId::parse(id).unwrap()
}

#[tokio::test]
async fn a_sparse_stream_resumes_from_its_keep_alive_position_after_the_buffer_turns_over() {
    // No history: the buffer alone (history.rs has the resumes it serves).
    let app = TestApp::start_with(|c| {
        c.replay_maxlen = 100;
        c.log_shards = 1;
        c.keepalive_secs = 1;
        c.history_secs = 0;
    })
    .await;
    let (reader_id, reader) = app.user("sparse_reader").await;
    let (_, writer) = app.user("sparse_writer").await;
    let firehose = app.operator_token(&reader_id, &["read", "firehose"]).await;
    for accept in ["text/event-stream", "application/x-ndjson"] {
        let path = format!("/api/v1/stream/filter?rules={}", enc(r#"["quetzal"]"#));
        let mut s = app
            .stream(&path, Some(&reader), &[("accept", accept)])
            .await;
        app.say(&writer, "a quetzal").await;
        let first = s.next_event("the rare match").await;
        let first_id = first.id.clone().unwrap();
        // One match in hundreds: the buffer (100 entries) turns over.
        for i in 0..300 {
            app.say(&writer, &format!("filler {i}")).await;
        }
        // The newest event's id (the last filler's), from the firehose.
        let mut tail = app
            .stream("/api/v1/stream/firehose?count=1", Some(&firehose), &[])
            .await;
        let last = tail.next_event("the newest event").await.id.unwrap();
        drop(tail);
        let position = position_past(&mut s, &last).await;
        drop(s);
        let missed = app.say(&writer, "another quetzal").await;
        // From the position: exactly the missed match, no warning.
        let mut again = app
            .stream(
                &path,
                Some(&reader),
                &[("accept", accept), ("last-event-id", &position)],
            )
            .await;
        let m = again.next("the missed match").await;
        assert_eq!(m.data["type"], "status", "{accept}: {:?}", m.data);
        assert_eq!(m.data["status"]["id"], missed.as_str());
        // From its last match instead, the buffer no longer holds the way.
        let mut stale = app
            .stream(
                &path,
                Some(&reader),
                &[("accept", accept), ("last-event-id", &first_id)],
            )
            .await;
        let w = stale.next("a warning").await;
        assert_eq!(
            (w.data["type"].as_str(), w.data["code"].as_str()),
            (Some("warning"), Some("resume_gap"))
        );
    }
}

#[tokio::test]
async fn since_opens_a_stream_at_a_time_the_buffer_still_holds() {
    // No history: the buffer alone (history.rs has the resumes it serves).
    let app = TestApp::start_with(|c| {
        c.replay_maxlen = 50;
        c.log_shards = 1;
        c.history_secs = 0;
    })
    .await;
    let (_, reader) = app.user("since_reader").await;
    let (_, writer) = app.user("since_writer").await;
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    app.say(&writer, "ocelot before").await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let t = now();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let after = app.say(&writer, "ocelot after").await;
    let mut s = app
        .stream(
            &format!("/api/v1/stream/filter?track=ocelot&since={t}"),
            Some(&reader),
            &[],
        )
        .await;
    let m = s.next("the status after the time").await;
    assert_eq!(m.data["status"]["id"], after.as_str(), "{:?}", m.data);
    let live = app.say(&writer, "ocelot live").await;
    assert_eq!(
        s.next_event("live").await.data["status"]["id"],
        live.as_str()
    );
    // A time in the future: live only, no warning.
    let mut s = app
        .stream(
            &format!(
                "/api/v1/stream/filter?track=ocelot&since={}",
                now() + 3600.0
            ),
            Some(&reader),
            &[],
        )
        .await;
    s.assert_quiet(Duration::from_millis(300)).await;
    // A time the buffer has turned over since: resume_gap, then what it holds.
    for i in 0..80 {
        app.say(&writer, &format!("churn {i}")).await;
    }
    let mut s = app
        .stream(
            &format!("/api/v1/stream/filter?track=ocelot&since={t}"),
            Some(&reader),
            &[],
        )
        .await;
    let w = s.next("a warning").await;
    assert_eq!(
        (w.data["type"].as_str(), w.data["code"].as_str()),
        (Some("warning"), Some("resume_gap"))
    );
    // Not a time: 400.
    let bad = app
        .stream(
            "/api/v1/stream/filter?track=ocelot&since=yesterday",
            Some(&reader),
            &[],
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad.body["error"]["code"], "invalid_since");
}
