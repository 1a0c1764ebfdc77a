//! The browser page in a real headless Chromium, the policy pages carry,
//! and which other origins may use the API and the streams (CORS).

use super::*;

#[tokio::test]
async fn the_browser_page_shows_a_followed_users_post_live() {
    let browser = common::browser::Browser::needed().await;
    let app = TestApp::start().await;
    let (ida, alice) = app.user("alice").await;
    let _ = ida;
    let page = format!("http://{}/", app.addr);
    browser.goto(&page).await;
    // Bob signs up through the page, follows alice and opens his live stream.
    browser.fill("su-login", "bob").await;
    browser.fill("su-email", "bob@example.com").await;
    browser.fill("su-password", "password123").await;
    browser.click("signup").await;
    browser.wait_for_text("who", "@bob").await;
    browser.fill("follow-login", "alice").await;
    browser.click("follow").await;
    browser
        .wait_for_text("follow-msg", "following @alice")
        .await;
    browser.click("connect").await;
    browser.wait_for_text("live-status", "live").await;
    app.say(&alice, "hello bob, live from alice").await;
    browser
        .wait_for_text("events", "hello bob, live from alice")
        .await;
    // Bob posts through the page, with a location, and sees it on his timeline.
    browser.fill("message", "bob posts from the page").await;
    browser.fill("lat", "37.77").await;
    browser.fill("lon", "-122.42").await;
    browser.click("post").await;
    browser
        .wait_for_text("timeline", "bob posts from the page")
        .await;
    // Like (the newest status, his own), reply in a thread, and trending
    // hashtags fed by the live stream.
    browser.click("timeline .like").await;
    browser.wait_for_text("timeline", "♥ 1").await;
    browser.click("timeline .reply").await;
    browser.fill("message", "bob replies to himself").await;
    browser.fill("lat", "").await;
    browser.fill("lon", "").await;
    browser.click("post").await;
    browser
        .wait_for_text("timeline", "bob replies to himself")
        .await;
    browser.click("timeline li:nth-child(2) .thread").await;
    browser
        .wait_for_text("conversation", "bob replies to himself")
        .await;
    app.say(&alice, "everyone talks about #browsertag").await;
    browser.wait_for_text("trending", "#browsertag (1)").await;
    // Chromium's own WebSocket on the multiplexed socket: it offers
    // permessage-deflate, compresses what it sends (the subscribe), and
    // inflates what the server compressed once for every socket.
    let script = r#"
        const [url, token, done] = arguments;
        const ws = new WebSocket(url + "?access_token=" + encodeURIComponent(token));
        const seen = [];
        const timer = setTimeout(() => done({error: "timed out", seen}), 10000);
        ws.onopen = () => ws.send(JSON.stringify(
            {type: "subscribe", stream: "filter", track: ["wsbrowserword"]}));
        ws.onmessage = async (m) => {
            const v = JSON.parse(m.data);
            seen.push(v.type);
            if (v.type === "subscribed") {
                await fetch("/api/v1/statuses", {method: "POST",
                    headers: {"content-type": "application/json", "authorization": "Bearer " + token},
                    body: JSON.stringify({message: "a wsbrowserword from chromium"})});
            } else if (v.type === "status") {
                clearTimeout(timer);
                done({extensions: ws.extensions, message: v.status.message, stream: v.stream, seen});
                ws.close();
            }
        };
        ws.onerror = () => done({error: "websocket error", seen});
    "#;
    let got = browser
        .run_async(
            script,
            vec![
                json!(format!("ws://{}/api/v1/stream", app.addr)),
                json!(alice),
            ],
        )
        .await;
    assert_eq!(got["message"], "a wsbrowserword from chromium", "{got}");
    assert_eq!(got["stream"], "filter", "{got}");
    assert!(
        got["extensions"]
            .as_str()
            .is_some_and(|e| e.starts_with("permessage-deflate")),
        "{got}"
    );
    // Conversations: Bob starts one with alice, her answer arrives live in
    // the open thread, and the list counts what he has not read.
    browser.fill("dm-to", "alice").await;
    browser.fill("dm-first", "hi alice, from the page").await;
    browser.click("dm-start").await;
    browser
        .wait_for_text("dm-thread", "hi alice, from the page")
        .await;
    let (_, convs) = app.get("/api/v1/conversations", Some(&alice)).await;
    let cid = convs["conversations"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.post(
        &format!("/api/v1/conversations/{cid}/messages"),
        Some(&alice),
        json!({"text": "hello bob, live in the thread"}),
    )
    .await;
    browser
        .wait_for_text("dm-thread", "hello bob, live in the thread")
        .await;
    browser.fill("dm-text", "bob answers").await;
    browser.click("dm-send").await;
    browser.wait_for_text("dm-thread", "bob answers").await;
    browser.click("dm-close").await;
    app.post(
        &format!("/api/v1/conversations/{cid}/messages"),
        Some(&alice),
        json!({"text": "are you there?"}),
    )
    .await;
    browser.wait_for_text("convs", "1 unread").await;
    // Mute and block buttons act on the user named in the box.
    browser.fill("follow-login", "alice").await;
    browser.click("mute").await;
    browser.wait_for_text("follow-msg", "muted @alice").await;
    browser.click("block").await;
    browser.wait_for_text("follow-msg", "blocked @alice").await;
    let (_, blocks) = app
        .get("/api/v1/blocks", Some(&bob_token(&app).await))
        .await;
    assert_eq!(blocks["users"][0]["login"], "alice");
    let png = browser.screenshot().await;
    assert!(png.len() > 1000, "a screenshot was taken");
    let _ = std::fs::write(std::env::temp_dir().join("firehose-page.png"), png);
    browser.stop().await;
}

#[tokio::test]
async fn the_page_keeps_filter_rules_and_shows_which_matched_live() {
    let browser = common::browser::Browser::needed().await;
    let app = TestApp::start().await;
    let (_, writer) = app.user("rule_writer").await;
    app.register("carol").await;
    browser.goto(&format!("http://{}/", app.addr)).await;
    browser.log_in("carol").await;
    browser.wait_for_text("who", "@carol").await;
    // An invalid rule names its column; a valid one joins the list.
    browser.fill("rule-value", "a (b").await;
    browser.click("rule-add").await;
    browser.wait_for_text("rule-msg", "column 3").await;
    browser
        .fill("rule-value", "#pagetag OR from:rule_writer")
        .await;
    browser.fill("rule-tag", "watch").await;
    browser.click("rule-add").await;
    browser
        .wait_for_text("rule-list", "#pagetag OR from:rule_writer")
        .await;
    browser.fill("rule-value", "zebra").await;
    browser.fill("rule-tag", "").await;
    browser.click("rule-add").await;
    browser.wait_for_text("rule-list", "zebra").await;
    // The search stream shows each status with the rules it matched.
    browser
        .run_async(
            r#"const [done] = arguments;
               const s = document.getElementById("stream-kind");
               s.value = "search"; s.onchange(); done(true);"#,
            vec![],
        )
        .await;
    browser.click("connect").await;
    browser.wait_for_text("live-status", "live").await;
    app.say(&writer, "a zebra crossing").await;
    browser.wait_for_text("events", "a zebra crossing").await;
    browser.wait_for_text("events", "rule watch").await;
    // Deleting a rule from the list: the stream hears of it within a second.
    browser
        .click("rule-list li:nth-child(2) .rule-delete")
        .await;
    let carol = app.login("carol").await;
    app.eventually("the rule is gone", || async {
        let (_, rules) = app.get("/api/v1/stream/rules", Some(&carol)).await;
        rules["data"].as_array().is_some_and(|r| r.len() == 1)
    })
    .await;
    // The same rule language over the history: a bad rule names its
    // column; a good one lists the matches and charts the counts.
    browser.fill("hs-query", "zebra (").await;
    browser.click("hs-search").await;
    browser.wait_for_text("hs-msg", "column").await;
    browser.fill("hs-query", "zebra").await;
    browser.click("hs-search").await;
    browser.wait_for_text("hs-msg", "1 matching status").await;
    browser
        .wait_for_text("hs-results", "a zebra crossing")
        .await;
    let bars = browser
        .run_async(
            r#"const [done] = arguments;
               done(document.getElementById("hs-chart").querySelectorAll(".bar").length);"#,
            vec![],
        )
        .await;
    assert!(bars.as_u64().unwrap_or(0) >= 1, "{bars}");
    let png = browser.screenshot().await;
    assert!(png.len() > 1000, "a screenshot was taken");
    let _ = std::fs::write(std::env::temp_dir().join("firehose-rules-page.png"), png);
    browser.stop().await;
}

#[tokio::test]
async fn the_page_makes_a_group_and_posts_into_it() {
    let browser = common::browser::Browser::needed().await;
    let app = TestApp::start().await;
    let (_, friend) = app.user("group_friend").await;
    app.register("gina").await;
    browser.goto(&format!("http://{}/", app.addr)).await;
    browser.log_in("gina").await;
    browser.wait_for_text("who", "@gina").await;
    browser.fill("group-name", "Page people").await;
    browser.click("group-create").await;
    browser.wait_for_text("group-list", "Page people").await;
    browser.wait_for_text("group-list", "owner").await;
    let gina = app.login("gina").await;
    let (_, mine) = app.get("/api/v1/groups", Some(&gina)).await;
    let gid = mine["groups"][0]["id"].as_str().unwrap().to_string();
    // A friend joins through the API and posts; the page posts too.
    let (status, _) = app
        .post(
            &format!("/api/v1/groups/{gid}/join"),
            Some(&friend),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    app.post(
        "/api/v1/statuses",
        Some(&friend),
        json!({"message": "hello page people", "group_id": gid}),
    )
    .await;
    browser
        .fill("group-message", "gina posts to the group")
        .await;
    browser.click("group-post").await;
    browser
        .wait_for_text("group-timeline", "gina posts to the group")
        .await;
    browser
        .wait_for_text("group-timeline", "hello page people")
        .await;
    let (_, timeline) = app
        .get(&format!("/api/v1/groups/{gid}/statuses"), None)
        .await;
    assert_eq!(timeline.as_array().unwrap().len(), 2);
    // Not in her home timeline.
    let home = app
        .timeline_ids("/api/v1/timelines/home", Some(&gina))
        .await;
    assert!(home.is_empty(), "{home:?}");
    browser.stop().await;
}

#[tokio::test]
async fn the_page_reports_a_status_and_an_admin_resolves_and_suspends() {
    let browser = common::browser::Browser::needed().await;
    let app = TestApp::start().await;
    let (alice_id, alice) = app.user("page_spammer").await;
    let (admin_id, _) = app.user("page_admin").await;
    app.register("page_reporter").await;
    let sid = app.say(&alice, "buy my pills now").await;
    // A user reports it with the page's button on their timeline.
    let reporter = app.login("page_reporter").await;
    app.follow(&reporter, &alice_id).await;
    browser.goto(&format!("http://{}/", app.addr)).await;
    browser.log_in("page_reporter").await;
    browser.wait_for_text("timeline", "buy my pills now").await;
    browser.click("timeline .report").await;
    browser.wait_for_text("post-msg", "reported").await;
    browser.click("logout").await;
    // The admin, with an operator's token, resolves it and suspends.
    let admin = app.operator_token(&admin_id, &["read", "admin"]).await;
    browser.wait_for_text("auth", "use a token").await;
    browser.fill("use-token", &admin).await;
    browser.click("token-go").await;
    browser
        .wait_for_text("admin-reports", &format!("spam: status {sid}"))
        .await;
    browser.click("admin-reports .resolve-remove_status").await;
    browser
        .wait_for_text("admin-msg", "resolved: remove_status")
        .await;
    let (status, _) = app.get(&format!("/api/v1/statuses/{sid}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    browser.fill("admin-user", &alice_id).await;
    browser.click("admin-suspend").await;
    browser.wait_for_text("admin-msg", "suspended").await;
    let (_, user) = app
        .get(&format!("/api/v1/admin/users/{alice_id}"), Some(&admin))
        .await;
    assert_eq!(user["suspended"], true);
    let (_, audit) = app.get("/api/v1/admin/audit", Some(&admin)).await;
    assert_eq!(audit["actions"].as_array().unwrap().len(), 2, "{audit}");
    browser.stop().await;
}

/// A page on another local origin: every request gets the same empty page.
fn other_origin() -> String {
    serving("<!doctype html><title>elsewhere</title><p>another origin</p>".to_string())
}

#[tokio::test]
async fn pages_carry_their_policy_and_other_origins_may_use_the_api_and_streams() {
    let app = TestApp::start().await;
    let (_, token) = app.user("cors_user").await;
    let http = reqwest::Client::new();
    // The page and /docs: their own scripts and styles only; nosniff.
    for path in ["/", "/docs"] {
        let r = http.get(app.url(path)).send().await.unwrap();
        let csp = r.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_string();
        assert!(
            csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
            "{csp}"
        );
        assert_eq!(r.headers()["x-content-type-options"], "nosniff");
        let html = r.text().await.unwrap();
        assert!(
            !html.contains("<script>") && !html.contains("<style>"),
            "no inline code"
        );
    }
    let r = http.get(app.url("/assets/page.js")).send().await.unwrap();
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/javascript"));
    // A preflight from another origin, and the answers it then reads.
    let r = http
        .request(reqwest::Method::OPTIONS, app.url("/api/v1/statuses"))
        .header("origin", "http://elsewhere.example")
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization, content-type",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(r.headers()["access-control-allow-origin"], "*");
    let allowed = r.headers()["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_lowercase();
    assert!(
        allowed.contains("authorization") && allowed.contains("last-event-id"),
        "{allowed}"
    );
    let r = http
        .get(app.url("/api/v1/me"))
        .header("origin", "http://elsewhere.example")
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["access-control-allow-origin"], "*");
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    let exposed = r.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_lowercase();
    assert!(exposed.contains("retry-after") && exposed.contains("x-request-id"));
    let mut s = app
        .stream(
            "/api/v1/stream/filter?track=corsword",
            Some(&token),
            &[("origin", "http://elsewhere.example")],
        )
        .await;
    assert_eq!(s.status, StatusCode::OK);
    drop(s.next_within(Duration::from_millis(10)).await);

    // In Chromium, from a page on a second local origin: fetch with a
    // bearer token, and an EventSource with access_token.
    let browser = common::browser::Browser::needed().await;
    browser.goto(&other_origin()).await;
    let script = r#"
        const [api, token, done] = arguments;
        const seen = {};
        const timer = setTimeout(() => done({error: "timed out", seen}), 10000);
        // Done once both the fetch and the event are in (either may be first).
        const finish = () => {
            if (("login" in seen || "fetch_error" in seen) && "message" in seen) {
                clearTimeout(timer);
                done(seen);
            }
        };
        fetch(api + "/api/v1/me", {headers: {"authorization": "Bearer " + token}})
            .then((r) => r.json()).then((me) => { seen.login = me.login; finish(); })
            .catch((e) => { seen.fetch_error = String(e); finish(); });
        const es = new EventSource(api + "/api/v1/stream/filter?track=corsword&access_token=" + encodeURIComponent(token));
        es.onopen = () => {
            fetch(api + "/api/v1/statuses", {method: "POST",
                headers: {"content-type": "application/json", "authorization": "Bearer " + token},
                body: JSON.stringify({message: "a corsword from elsewhere"})});
        };
        es.addEventListener("status", (e) => {
            seen.message = JSON.parse(e.data).status.message;
            seen.origin = location.origin;
            es.close();
            finish();
        });
        es.onerror = () => { seen.es_error = true; };
    "#;
    let got = browser
        .run_async(
            script,
            vec![json!(format!("http://{}", app.addr)), json!(token)],
        )
        .await;
    assert_eq!(got["message"], "a corsword from elsewhere", "{got}");
    assert_eq!(got["login"], "cors_user", "{got}");
    assert_ne!(got["origin"], json!(format!("http://{}", app.addr)));
    browser.stop().await;
}

#[tokio::test]
async fn cors_origins_limits_which_pages_may_read_answers() {
    let app = TestApp::start_with(|c| c.cors_origins = "http://good.example".into()).await;
    let http = reqwest::Client::new();
    let ask = |origin: &'static str| {
        http.get(app.url("/healthz"))
            .header("origin", origin)
            .send()
    };
    let r = ask("http://good.example").await.unwrap();
    assert_eq!(
        r.headers()["access-control-allow-origin"],
        "http://good.example"
    );
    assert!(r
        .headers()
        .get_all("vary")
        .iter()
        .any(|v| v.to_str().unwrap().contains("origin")));
    let r = ask("http://evil.example").await.unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
}
