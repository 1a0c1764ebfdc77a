//! `serve --demo` and the page's dashboard: a live world without logging
//! in, a read-only viewer, and the chart, map and drawn-box filter in a
//! real Chromium.

use crate::common::browser::Browser;
use crate::common::{RedisServer, ServerProcess, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// A demo world of 40 users making 20 writes a second.
async fn demo_app(viewer_streams: usize) -> TestApp {
    TestApp::start_with(|c| {
        c.demo = true;
        c.demo_users = 40;
        c.demo_rate = 20.0;
        c.demo_viewer_streams = viewer_streams;
    })
    .await
}

async fn viewer_token(app: &TestApp) -> String {
    let (status, pass) = app.get("/api/v1/demo", None).await;
    assert_eq!(status, StatusCode::OK, "{pass}");
    assert_eq!(pass["scopes"], json!(["read", "firehose"]));
    pass["token"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn serve_demo_shows_a_live_world_to_a_read_only_viewer() {
    let app = demo_app(7).await;
    let token = viewer_token(&app).await;
    // The same pass for every visitor.
    assert_eq!(viewer_token(&app).await, token);
    // Every kind of write the world makes reaches the firehose.
    let mut firehose = app
        .stream("/api/v1/stream/firehose", Some(&token), &[])
        .await;
    assert_eq!(firehose.status, StatusCode::OK, "{}", firehose.body);
    let mut seen = HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.len() < 5 {
        assert!(Instant::now() < deadline, "only {seen:?} within a minute");
        let m = firehose.next_event("a demo event").await;
        let s = &m.data["status"];
        seen.insert(match m.event.as_str() {
            "status" if !s["repost_of"].is_null() => "repost",
            "status" if !s["reply_to"].is_null() => "reply",
            "status" if s["lat"].is_number() => "geotagged",
            "status" => "status",
            "like" => "like",
            _ => continue,
        });
    }
    // Read only: no writes, and the viewer's streams are counted together,
    // against --demo-viewer-streams rather than the per-user limit of 5.
    let (status, body) = app
        .post("/api/v1/statuses", Some(&token), json!({"message": "hi"}))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let mut open = Vec::new();
    for _ in 0..6 {
        let s = app.stream("/api/v1/stream/sample", Some(&token), &[]).await;
        assert_eq!(s.status, StatusCode::OK, "{}", s.body);
        open.push(s);
    }
    let over = app.stream("/api/v1/stream/sample", Some(&token), &[]).await;
    assert_eq!(over.status, StatusCode::TOO_MANY_REQUESTS, "{}", over.body);
    // No visitor can end the session the others share.
    let (status, body) = app.delete("/api/v1/sessions/current", Some(&token)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (_, list) = app.get("/api/v1/sessions", Some(&token)).await;
    let sid = list["sessions"][0]["id"].as_str().unwrap().to_string();
    let (status, _) = app
        .delete(&format!("/api/v1/sessions/{sid}"), Some(&token))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = app.get("/api/v1/me", Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "the pass still works");
    // Its account is nobody's to log in to.
    let (_, me) = app.get("/api/v1/me", Some(&token)).await;
    let login = me["login"].as_str().unwrap();
    let (status, _) = app
        .post(
            "/api/v1/sessions",
            None,
            json!({"identifier": login, "password": "demo-password"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_demo_world_stays_bounded_by_deleting_each_users_oldest() {
    // Three users writing 100 times a second pass 40 statuses each within
    // seconds; from then on each deletes their oldest instead of growing.
    let app = TestApp::start_with(|c| {
        c.demo = true;
        c.demo_users = 3;
        c.demo_rate = 100.0;
    })
    .await;
    let token = viewer_token(&app).await;
    let mut firehose = app
        .stream("/api/v1/stream/firehose", Some(&token), &[])
        .await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "no delete within a minute");
        if firehose.next_event("a demo event").await.event == "delete" {
            break;
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    for login in ["ada_0", "alan_1", "grace_2"] {
        let (_, user) = app
            .get(&format!("/api/v1/users/lookup?login={login}"), Some(&token))
            .await;
        let posts = user["posts"].as_u64().unwrap();
        assert!(posts <= 41, "{login} holds {posts}");
    }
}

#[tokio::test]
async fn without_demo_there_is_no_viewer() {
    let app = TestApp::start().await;
    let (status, body) = app.get("/api/v1/demo", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["code"], "not_found");
}

async fn user_id(http: &reqwest::Client, url: &str, login: &str) -> Value {
    let me: Value = http
        .post(format!("{url}/api/v1/sessions"))
        .json(&json!({"identifier": login, "password": "demo-password"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    me["user"]["id"].clone()
}

#[tokio::test]
async fn serve_demo_seeds_once_and_a_restart_goes_on_with_the_same_world() {
    let redis = RedisServer::start();
    let env = [
        ("FIREHOSE_DEMO", "1"),
        ("FIREHOSE_DEMO_USERS", "30"),
        ("FIREHOSE_DEMO_RATE", "10"),
    ];
    let http = reqwest::Client::new();
    let first = ServerProcess::serve(&redis, &env).await;
    let url = first.url("");
    let url = url.trim_end_matches('/');
    let deadline = Instant::now() + Duration::from_secs(30);
    let ada = loop {
        let ada = user_id(&http, url, "ada_0").await;
        if ada.is_string() {
            break ada;
        }
        assert!(Instant::now() < deadline, "the world is never seeded");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let viewer: Value = http
        .get(format!("{url}/api/v1/demo"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    first.kill9().await;

    let second = ServerProcess::serve(&redis, &env).await;
    let url = second.url("");
    let url = url.trim_end_matches('/');
    assert_eq!(user_id(&http, url, "ada_0").await, ada);
    // No second world: the 31st user (the viewer aside) was never made.
    let nobody: Value = http
        .post(format!("{url}/api/v1/sessions"))
        .json(&json!({"identifier": "ada_40", "password": "demo-password"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(nobody["token"].is_null(), "{nobody}");
    let again: Value = http
        .get(format!("{url}/api/v1/demo"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(again["user_id"], viewer["user_id"], "the same viewer");
    // And it goes on posting: statuses newer than the restart arrive.
    let token = again["token"].as_str().unwrap();
    let mut resp = http
        .get(format!("{url}/api/v1/stream/firehose?access_token={token}"))
        .send()
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut text = String::new();
    while !text.contains("event: status") {
        assert!(Instant::now() < deadline, "no status after the restart");
        if let Ok(Ok(Some(chunk))) =
            tokio::time::timeout(Duration::from_secs(1), resp.chunk()).await
        {
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
    second.kill9().await;
}

/// Evaluates `expr` in the page.
async fn eval(browser: &Browser, expr: &str) -> Value {
    browser
        .run_async(
            &format!("const done = arguments[arguments.length - 1]; done({expr});"),
            vec![],
        )
        .await
}

/// Waits until `expr` is true in the page.
async fn until(browser: &Browser, what: &str, expr: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while eval(browser, expr).await != json!(true) {
        assert!(Instant::now() < deadline, "never: {what} ({expr})");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn the_dashboard_charts_maps_and_filters_the_demo_world() {
    let browser = Browser::needed().await;
    let app = demo_app(1000).await;
    browser.goto(&format!("http://{}/", app.addr)).await;
    // No login: the demo world, live.
    browser.wait_for_text("who", "demo world").await;
    browser.wait_for_text("dash-source", "firehose: live").await;
    // The chart moves.
    until(
        &browser,
        "events counted",
        "Number(document.getElementById('chart').dataset.total) > 5",
    )
    .await;
    let before = eval(&browser, "document.getElementById('chart').toDataURL()").await;
    let total = eval(
        &browser,
        "Number(document.getElementById('chart').dataset.total)",
    )
    .await;
    until(
        &browser,
        "more events counted",
        &format!("Number(document.getElementById('chart').dataset.total) > {total}"),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let after = eval(&browser, "document.getElementById('chart').toDataURL()").await;
    assert_ne!(before, after, "the chart was redrawn with the new events");
    // Points appear on the map; the server's own figures are shown.
    until(
        &browser,
        "points on the map",
        "Number(document.getElementById('map').dataset.points) > 0",
    )
    .await;
    until(
        &browser,
        "the figures",
        "/^[0-9]/.test(document.getElementById('dash-clients').textContent) && /^[0-9]/.test(document.getElementById('dash-deliveries').textContent)",
    )
    .await;
    until(
        &browser,
        "trending tags",
        "document.getElementById('dash-trends').children.length > 0",
    )
    .await;

    // A box drawn around Paris (lon 0..5, lat 46..51) opens a filter stream.
    let drawn = eval(
        &browser,
        r#"(() => {
            const map = document.getElementById('map');
            const r = map.getBoundingClientRect();
            const at = (lon, lat) => ({ clientX: r.left + (lon + 180) / 360 * r.width,
                                        clientY: r.top + (90 - lat) / 180 * r.height,
                                        pointerId: 1, bubbles: true });
            map.dispatchEvent(new PointerEvent('pointerdown', at(0, 46)));
            map.dispatchEvent(new PointerEvent('pointermove', at(3, 49)));
            map.dispatchEvent(new PointerEvent('pointerup', at(5, 51)));
            return document.getElementById('dash-box').value;
        })()"#,
    )
    .await;
    let corners: Vec<f64> = drawn
        .as_str()
        .unwrap()
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(corners.len(), 4, "{drawn}");
    for (got, want) in corners.iter().zip([0.0, 46.0, 5.0, 51.0]) {
        assert!((got - want).abs() < 0.5, "box {drawn}");
    }
    browser
        .wait_for_text("dash-filter-info", "filter stream live")
        .await;
    let (_, tok) = app.user("dash_poster").await;
    app.post_status(
        &tok,
        json!({"message": "tokyo marker", "lat": 35.68, "lon": 139.69}),
    )
    .await;
    app.post_status(
        &tok,
        json!({"message": "paris marker", "lat": 48.86, "lon": 2.35}),
    )
    .await;
    browser.wait_for_text("dash-filtered", "paris marker").await;
    let outside = eval(
        &browser,
        "[...document.querySelectorAll('#dash-filtered li')].filter((li) => { \
           const lon = Number(li.dataset.lon), lat = Number(li.dataset.lat); \
           return !(lon >= 0 && lon <= 5 && lat >= 46 && lat <= 51); }).length",
    )
    .await;
    assert_eq!(outside, json!(0), "only statuses inside the box");
    let text = eval(
        &browser,
        "document.getElementById('dash-filtered').textContent",
    )
    .await;
    assert!(!text.as_str().unwrap().contains("tokyo marker"));
    until(
        &browser,
        "hits on the map",
        "Number(document.getElementById('map').dataset.hits) > 0",
    )
    .await;

    let png = browser.screenshot().await;
    assert!(png.len() > 10_000, "a screenshot was taken");
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("dashboard.png"), png).unwrap();
    browser.stop().await;
}

#[tokio::test]
async fn a_logged_in_user_without_the_firehose_scope_gets_the_sample_on_the_dashboard() {
    let browser = Browser::needed().await;
    let app = TestApp::start().await;
    app.register("dash_user").await;
    browser.goto(&format!("http://{}/", app.addr)).await;
    // Without --demo, nothing until a login.
    let hidden = eval(
        &browser,
        "document.getElementById('dashboard').classList.contains('hidden')",
    )
    .await;
    assert_eq!(hidden, json!(true));
    browser.log_in("dash_user").await;
    browser.wait_for_text("who", "@dash_user").await;
    browser
        .wait_for_text("dash-source", "sample stream, 100 %: live")
        .await;
    let (_, tok) = app.user("dash_writer").await;
    app.post_status(
        &tok,
        json!({"message": "seen on the dashboard", "lat": 10.0, "lon": 20.0}),
    )
    .await;
    browser
        .wait_for_text("dash-live", "seen on the dashboard")
        .await;
    until(
        &browser,
        "a point on the map",
        "Number(document.getElementById('map').dataset.points) > 0",
    )
    .await;
    browser.stop().await;
}
