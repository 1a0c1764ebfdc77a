//! The Mastodon listener's streams through faults, with real processes: a
//! reader of `/api/v1/streaming/public` on a server killed with SIGKILL
//! (then on the process started after it), then through a Redis killed and
//! restarted, resumes by `Last-Event-ID` and gets every status acknowledged
//! meanwhile, each once, in order.

use crate::common::{self, free_port, ServerProcess, StreamClient, TestApp};
use std::time::Duration;

/// A Mastodon SSE reader that reconnects where it stopped.
struct Reader {
    url: String,
    token: String,
    /// The last id any message carried (an event's or a keep-alive's).
    last: Option<String>,
    /// The statuses of the `update` events read, in order.
    seen: Vec<String>,
    client: Option<StreamClient>,
}

impl Reader {
    /// Connects (again), resuming after the last id read; retries while
    /// the listener is not there.
    async fn connect(&mut self, app: &TestApp) {
        for _ in 0..200 {
            let headers: Vec<(&str, &str)> = match &self.last {
                Some(at) => vec![("Last-Event-ID", at.as_str())],
                None => Vec::new(),
            };
            let attempt = tokio::time::timeout(
                Duration::from_secs(2),
                app.stream_url(&self.url, Some(&self.token), &headers),
            );
            if let Ok(client) = attempt.await {
                if client.status == reqwest::StatusCode::OK {
                    self.client = Some(client);
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the Mastodon listener never came back");
    }

    /// Reads until `want` statuses were seen, reconnecting whenever the
    /// stream ends (at most 30 s).
    async fn read_until(&mut self, app: &TestApp, want: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while self.seen.len() < want {
            assert!(
                tokio::time::Instant::now() < deadline,
                "only {} of {want} statuses arrived: {:?}",
                self.seen.len(),
                self.seen
            );
            if self.client.is_none() {
                self.connect(app).await;
            }
            let Some(client) = self.client.as_mut() else {
                continue;
            };
            match client.next_within(Duration::from_millis(500)).await {
                Some(msg) => {
                    if msg.id.is_some() {
                        self.last = msg.id.clone();
                    }
                    if msg.event == "update" {
                        self.seen.push(msg.data["id"].as_str().unwrap().to_string());
                    }
                }
                None if client.ended_within(Duration::ZERO).await => {
                    if client.position.is_some() {
                        self.last = client.position.clone();
                    }
                    self.client = None;
                }
                None => {}
            }
        }
    }
}

/// A server process with the Mastodon listener on a port picked free,
/// checked to be this test's (its Redis knows `login`, whose `token` it
/// takes: a port picked free
/// may be taken by another test's server before this one binds it).
async fn mastodon_server(app: &TestApp, login: &str, token: &str) -> (ServerProcess, String) {
    for _ in 0..5 {
        let mastodon = format!("127.0.0.1:{}", free_port());
        let env = [("FIREHOSE_MASTODON_LISTEN", mastodon.as_str())];
        let server = ServerProcess::serve(&app.redis, &env).await;
        let lookup = format!("http://{mastodon}/api/v1/accounts/lookup?acct={login}");
        let ours = app
            .http
            .get(lookup)
            .bearer_auth(token)
            .send()
            .await
            .is_ok_and(|r| r.status() == reqwest::StatusCode::OK);
        if ours {
            return (server, mastodon);
        }
        server.kill9().await;
    }
    panic!("no Mastodon listener of this test's after 5 ports");
}

#[tokio::test]
async fn a_mastodon_reader_resumes_across_a_server_kill_and_a_redis_restart() {
    let redis = common::RedisServer::start_durable();
    let mut app = TestApp::start_on(redis, |_| {}).await;
    let (_, token) = app.user("mastodon_faults").await;
    let (server, mastodon) = mastodon_server(&app, "mastodon_faults", &token).await;
    let mut reader = Reader {
        url: format!("http://{mastodon}/api/v1/streaming/public"),
        token: token.clone(),
        last: None,
        seen: Vec::new(),
        client: None,
    };
    reader.connect(&app).await;
    let mut posted = Vec::new();
    for i in 0..5 {
        posted.push(app.say(&token, &format!("before the kill {i}")).await);
    }
    reader.read_until(&app, posted.len()).await;

    // Posted as the process dies (some may reach the reader first), and
    // while it is gone: the writes go through another process.
    for i in 0..5 {
        posted.push(app.say(&token, &format!("as it dies {i}")).await);
    }
    server.kill9().await;
    for i in 0..5 {
        posted.push(app.say(&token, &format!("while it is gone {i}")).await);
    }
    // Back on another port (as behind a load balancer): the reader
    // resumes there.
    let (server, mastodon) = mastodon_server(&app, "mastodon_faults", &token).await;
    reader.url = format!("http://{mastodon}/api/v1/streaming/public");
    reader.client = None;
    for i in 0..5 {
        posted.push(app.say(&token, &format!("after it is back {i}")).await);
    }
    reader.read_until(&app, posted.len()).await;

    // Redis killed (AOF, every write synced) and started again under the
    // reader; what is posted once it is back arrives too.
    app.redis.restart();
    app.ready_again().await;
    for i in 0..5 {
        posted.push(app.say(&token, &format!("after Redis restarted {i}")).await);
    }
    reader.read_until(&app, posted.len()).await;
    // Nothing more arrives: no status twice.
    tokio::time::sleep(Duration::from_millis(500)).await;
    if let Some(client) = reader.client.as_mut() {
        while let Some(msg) = client.next_within(Duration::from_millis(300)).await {
            if msg.event == "update" {
                reader
                    .seen
                    .push(msg.data["id"].as_str().unwrap().to_string());
            }
        }
    }
    println!(
        "Mastodon reader through a kill -9 and a Redis restart: {} posted, {} delivered",
        posted.len(),
        reader.seen.len()
    );
    assert_eq!(reader.seen, posted, "each status once, in the order posted");
    server.terminate().await;
}
