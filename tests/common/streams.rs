//! SSE and NDJSON stream clients over real sockets.

use super::*;

/// One parsed SSE message (or NDJSON line, with `id`/`event` from the JSON).
#[derive(Debug, Clone)]
pub(crate) struct Msg {
    pub id: Option<String>,
    pub event: String,
    pub data: Value,
}

/// A streaming client over SSE or NDJSON.
pub(crate) struct StreamClient {
    pub status: StatusCode,
    pub body: Value,
    resp: Option<reqwest::Response>,
    buf: Vec<u8>,
    ndjson: bool,
    /// Comment lines seen (keep-alives), and whether `retry:` came.
    pub comments: usize,
    pub retry_seen: bool,
    /// The last `retry:` value.
    pub retry: Option<u64>,
    /// Whether `notification` and `notification_removed` events are kept
    /// (tests of other things pass over them: they come from the
    /// notifier, a moment after the event that made them).
    pub notifications: bool,
    /// The last position a keep-alive carried (an SSE `id:` with no data,
    /// an NDJSON `position` event): what a browser's `lastEventId` holds.
    pub position: Option<String>,
}

impl TestApp {
    /// Opens a stream; `headers` are extra request headers.
    pub(crate) async fn stream(
        &self,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
    ) -> StreamClient {
        self.stream_url(&self.url(path), token, headers).await
    }

    /// A stream from any server (another process, say).
    pub(crate) async fn stream_url(
        &self,
        url: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
    ) -> StreamClient {
        let mut req = self.http.get(url);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let mut ndjson = false;
        for (k, v) in headers {
            if k.eq_ignore_ascii_case("accept") && v.contains("ndjson") {
                ndjson = true;
            }
            req = req.header(*k, *v);
        }
        let resp = req.send().await.expect("stream request");
        let status = resp.status();
        if status != StatusCode::OK {
            let text = resp.text().await.unwrap_or_default();
            return StreamClient {
                status,
                body: serde_json::from_str(&text).unwrap_or(Value::Null),
                resp: None,
                buf: Vec::new(),
                ndjson,
                comments: 0,
                retry_seen: false,
                retry: None,
                position: None,
                notifications: false,
            };
        }
        StreamClient {
            status,
            body: Value::Null,
            resp: Some(resp),
            buf: Vec::new(),
            ndjson,
            comments: 0,
            retry_seen: false,
            retry: None,
            position: None,
            notifications: false,
        }
    }
}

/// Whether an event is a notification's (made or taken away).
pub(crate) fn is_notification(data: &Value) -> bool {
    matches!(
        data["type"].as_str(),
        Some("notification" | "notification_removed")
    )
}

impl StreamClient {
    /// Keeps notification events (passed over by default).
    pub(crate) fn with_notifications(mut self) -> StreamClient {
        self.notifications = true;
        self
    }

    fn take_message(&mut self) -> Option<Option<Msg>> {
        if self.ndjson {
            let pos = self.buf.iter().position(|b| *b == b'\n')?;
            let line: Vec<u8> = self.buf.drain(..=pos).collect();
            let text = String::from_utf8_lossy(&line).trim().to_string();
            if text.is_empty() {
                self.comments += 1;
                return Some(None);
            }
            let data: Value = serde_json::from_str(&text).expect("ndjson line is json");
            if data["type"] == "position" {
                self.position = data["id"].as_str().map(str::to_string);
                self.comments += 1;
                return Some(None);
            }
            if !self.notifications && is_notification(&data) {
                return Some(None);
            }
            return Some(Some(Msg {
                id: data["id"].as_str().map(str::to_string),
                event: data["type"].as_str().unwrap_or("").to_string(),
                data,
            }));
        }
        let text = String::from_utf8_lossy(&self.buf).to_string();
        let end = text.find("\n\n")?;
        let block = text[..end].to_string();
        self.buf.drain(..end + 2);
        let (mut id, mut event, mut data) = (None, String::from("message"), String::new());
        let mut only_meta = true;
        for line in block.lines() {
            if line.starts_with(':') {
                self.comments += 1;
            } else if let Some(v) = line.strip_prefix("retry: ") {
                self.retry = Some(v.parse::<u64>().expect("a retry: value"));
                self.retry_seen = true;
            } else if let Some(v) = line.strip_prefix("id: ") {
                id = Some(v.to_string());
                only_meta = false;
            } else if let Some(v) = line.strip_prefix("event: ") {
                event = v.to_string();
                only_meta = false;
            } else if let Some(v) = line.strip_prefix("data: ") {
                data.push_str(v);
                only_meta = false;
            }
        }
        if only_meta {
            return Some(None);
        }
        if data.is_empty() {
            // No data: no event is dispatched, but the id moves
            // `lastEventId` (a keep-alive's position).
            self.position = id;
            return Some(None);
        }
        let data: Value = serde_json::from_str(&data).expect("data is json");
        if !self.notifications && is_notification(&data) {
            return Some(None);
        }
        Some(Some(Msg { id, event, data }))
    }

    /// The next message (skipping keep-alives) within `wait`; `None` on
    /// timeout or end of stream.
    pub(crate) async fn next_within(&mut self, wait: Duration) -> Option<Msg> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            while let Some(m) = self.take_message() {
                if let Some(m) = m {
                    return Some(m);
                }
            }
            let resp = self.resp.as_mut()?;
            match tokio::time::timeout_at(deadline, resp.chunk()).await {
                Ok(Ok(Some(chunk))) => self.buf.extend_from_slice(&chunk),
                Ok(_) => {
                    self.resp = None;
                    return None;
                }
                Err(_) => return None,
            }
        }
    }

    /// The next message within 10 s, or a panic naming `what`.
    pub(crate) async fn next(&mut self, what: &str) -> Msg {
        self.next_within(Duration::from_secs(10))
            .await
            .unwrap_or_else(|| panic!("no event: {what}"))
    }

    /// The next event that is not a control event, within 30 s (control
    /// events included: a stream that only ever warns fails), or a panic
    /// naming `what`.
    pub(crate) async fn next_event(&mut self, what: &str) -> Msg {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let m = self
                .next_within(left.min(Duration::from_secs(10)))
                .await
                .unwrap_or_else(|| panic!("no event: {what}"));
            if m.data.get("id").is_some() {
                return m;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "only control events for 30 s: {what} (the last: {:?})",
                m.data
            );
        }
    }

    /// Asserts nothing but keep-alives arrives within `wait`.
    pub(crate) async fn assert_quiet(&mut self, wait: Duration) {
        if let Some(m) = self.next_within(wait).await {
            panic!("unexpected event: {:?}", m.data);
        }
    }

    /// Whether the server ended the stream within `wait`.
    pub(crate) async fn ended_within(&mut self, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let Some(resp) = self.resp.as_mut() else {
                return true;
            };
            match tokio::time::timeout_at(deadline, resp.chunk()).await {
                Ok(Ok(Some(chunk))) => self.buf.extend_from_slice(&chunk),
                Ok(_) => {
                    self.resp = None;
                    return true;
                }
                Err(_) => return false,
            }
        }
    }
}

/// A chunked body read off a raw socket, its framing undone as the bytes
/// arrive (and every byte kept, to check how it ended).
#[derive(Default)]
#[allow(dead_code)] // not every test binary reads raw bodies
pub(crate) struct Unchunk {
    pending: Vec<u8>,
    /// Every byte of the body as it came.
    pub wire: Vec<u8>,
}

#[allow(dead_code)]
impl Unchunk {
    /// The data of the chunks `bytes` completes.
    pub(crate) fn take(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.wire.extend_from_slice(bytes);
        self.pending.extend_from_slice(bytes);
        let mut data = Vec::new();
        firehose::stream::wire::chunked::dechunk(&mut self.pending, &mut data);
        data
    }

    /// Whether the body ended with its last chunk and nothing is left
    /// over.
    pub(crate) fn ended(&self) -> bool {
        self.pending.is_empty() && self.wire.ends_with(b"0\r\n\r\n")
    }
}
