//! A token refreshed on a live WebSocket: the socket lives on under the new
//! session past the old token's expiry, a refresh with a bad token or
//! another user's changes nothing, and the new session's end closes it.

use super::*;

#[tokio::test]
async fn a_websocket_refreshes_its_token_and_lives_on_under_the_new_session() {
    // Tokens of 3 s from logins; the refreshed ones last an hour.
    let app = TestApp::start_with(|c| c.token_ttl = 3).await;
    let (uid, short) = app.user("refresher").await;
    let (other_uid, _) = app.user("someone").await;
    let mut mux = ws_connect(&app, "/api/v1/stream", &short).await;
    ws_send(&mut mux, json!({"type": "subscribe", "stream": "user"})).await;
    let mut path = ws_connect(&app, "/api/v1/stream/user", &short).await;
    let long = app.operator_token(&uid, &["read", "write"]).await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for ws in [&mut mux, &mut path] {
        // Bad refreshes first: nothing changes.
        let other = app.operator_token(&other_uid, &["read"]).await;
        for bad in [json!("not a token"), json!(other), Value::Null] {
            ws_send(ws, json!({"type": "refresh", "token": bad})).await;
            let e = loop {
                let v = ws_next(ws).await;
                if v["type"] == "error" {
                    break v;
                }
            };
            assert_eq!(e["code"], "invalid_token", "{e}");
        }
        ws_send(ws, json!({"type": "refresh", "token": long})).await;
        let r = loop {
            let v = ws_next(ws).await;
            if v["type"] == "refreshed" {
                break v;
            }
            assert_ne!(v["type"], "disconnect", "{v}");
        };
        let at = r["expires_at"].as_u64().unwrap();
        assert!(at >= now + 3000, "{r}");
    }
    // Past the first token's expiry, both sockets still carry events.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let sid = app.say(&long, "still here").await;
    for ws in [&mut mux, &mut path] {
        let v = loop {
            let v = ws_next(ws).await;
            if v["type"] != "warning" {
                break v;
            }
        };
        assert_eq!(
            (v["type"].as_str(), v["status"]["id"].as_str()),
            (Some("status"), Some(sid.as_str())),
            "{v}"
        );
    }
    // The new session's end closes them.
    let (status, _) = app.delete("/api/v1/sessions/current", Some(&long)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    for ws in [&mut mux, &mut path] {
        let v = ws_next(ws).await;
        assert_eq!(
            (v["type"].as_str(), v["code"].as_str()),
            (Some("disconnect"), Some("revoked")),
            "{v}"
        );
    }
}
