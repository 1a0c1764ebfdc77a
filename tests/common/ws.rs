//! WebSocket clients (tokio-tungstenite).

use super::*;

/// A WebSocket client connection.
pub(crate) type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens a WebSocket to `path` on the app with a bearer token.
pub(crate) async fn ws_connect(app: &TestApp, path: &str, token: &str) -> Ws {
    ws_connect_url(&format!("ws://{}{}", app.addr, path), token).await
}

/// Opens a WebSocket to `url` (`ws://...`) with a bearer token.
pub(crate) async fn ws_connect_url(url: &str, token: &str) -> Ws {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut req = url.into_client_request().unwrap();
    req.headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    tokio_tungstenite::connect_async(req)
        .await
        .expect("websocket")
        .0
}

/// The next text message as JSON (pings, pongs and keep-alive `position`
/// events skipped), within 10 s.
pub(crate) async fn ws_next(ws: &mut Ws) -> Value {
    use futures::StreamExt;
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a websocket message in time")
            .expect("open")
            .expect("ok");
        if let tokio_tungstenite::tungstenite::Message::Text(t) = msg {
            let v: Value = serde_json::from_str(t.as_str()).unwrap();
            // Notifications come from the notifier a moment after what
            // made them: tests of other things pass over them.
            if v["type"] != "position" && !super::streams::is_notification(&v) {
                return v;
            }
        }
    }
}

/// Sends `v` as a text message.
pub(crate) async fn ws_send(ws: &mut Ws, v: Value) {
    use futures::SinkExt;
    ws.send(tokio_tungstenite::tungstenite::Message::Text(
        v.to_string().into(),
    ))
    .await
    .unwrap();
}
