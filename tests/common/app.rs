//! The server under test on a port-0 listener with its Redis, and helpers
//! that set up users and follows straight through the store.

use super::*;

/// The server under test with its Redis.
pub(crate) struct TestApp {
    pub addr: SocketAddr,
    pub redis: RedisServer,
    pub http: reqwest::Client,
    pub cfg: Config,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

/// Default test configuration against `redis`.
pub(crate) fn test_config(redis: &RedisServer) -> Config {
    let mut cfg = Config::defaults();
    cfg.redis_url = Some(redis.url());
    cfg.redis_cluster = redis.cluster_spec();
    cfg.jwt_secret = Some("test-secret-test-secret-test-secret".into());
    cfg.cleanup_interval = 0.05;
    cfg.rate_limits = firehose::config::Switch::Off;
    // Each server's history in `history-<port>` beside its Redis's data.
    cfg.data_dir = redis.data_dir().to_path_buf();
    cfg
}

impl TestApp {
    pub(crate) async fn start() -> TestApp {
        Self::start_with(|_| {}).await
    }

    pub(crate) async fn start_with(tweak: impl FnOnce(&mut Config)) -> TestApp {
        Self::start_on(RedisServer::start(), tweak).await
    }

    /// The app with the Mastodon API on a listener of its own: the app and
    /// that listener's base URL.
    #[allow(dead_code)]
    pub(crate) async fn with_mastodon() -> (TestApp, String) {
        // Bound here, on a port of its own: a port picked free and bound
        // later may be taken meanwhile by another test's server.
        let mastodon = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = mastodon.local_addr().unwrap();
        let app = TestApp::start_listening(RedisServer::start(), |_| {}, Some(mastodon)).await;
        (app, format!("http://{addr}"))
    }

    /// The app on a Redis of the test's choosing (a durable one, say).
    pub(crate) async fn start_on(redis: RedisServer, tweak: impl FnOnce(&mut Config)) -> TestApp {
        Self::start_listening(redis, tweak, None).await
    }

    /// The app on `redis`, with the Mastodon API on `mastodon` if given.
    async fn start_listening(
        redis: RedisServer,
        tweak: impl FnOnce(&mut Config),
        mastodon: Option<tokio::net::TcpListener>,
    ) -> TestApp {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_env("TEST_LOG"))
            .with_test_writer()
            .try_init();
        let mut cfg = test_config(&redis);
        tweak(&mut cfg);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let stopping = async move {
            let _ = stopped.await;
        };
        let done = tokio::spawn(firehose::run_listening(
            cfg.clone(),
            listener,
            mastodon,
            stopping,
        ));
        let app = TestApp {
            addr,
            redis,
            http: reqwest::Client::new(),
            cfg,
            stop: Some(stop),
            done: Some(done),
        };
        // Wait for readiness by retrying, not sleeping a fixed time.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(r) = app.http.get(app.url("/readyz")).send().await {
                if r.status() == StatusCode::OK {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "server never became ready");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        app
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// The /metrics page.
    pub(crate) async fn metrics(&self) -> String {
        self.http
            .get(self.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// The value of the unlabelled metric `name` on the /metrics page.
    pub(crate) async fn metric(&self, name: &str) -> f64 {
        let text = self.metrics().await;
        let prefix = format!("{name} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no {name} in /metrics"))
            .parse()
            .unwrap()
    }

    /// Sends a request; returns status and JSON body (Null when empty or not JSON).
    pub(crate) async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = self.http.request(method, self.url(path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("request sent");
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    pub(crate) async fn get(&self, path: &str, token: Option<&str>) -> (StatusCode, Value) {
        self.call(Method::GET, path, token, None).await
    }

    pub(crate) async fn post(
        &self,
        path: &str,
        token: Option<&str>,
        body: Value,
    ) -> (StatusCode, Value) {
        self.call(Method::POST, path, token, Some(body)).await
    }

    pub(crate) async fn delete(&self, path: &str, token: Option<&str>) -> (StatusCode, Value) {
        self.call(Method::DELETE, path, token, None).await
    }

    /// Registers `login` (password "password123") and returns its id.
    pub(crate) async fn register(&self, login: &str) -> String {
        let (status, body) = self
            .post(
                "/api/v1/users",
                None,
                json!({"login": login, "name": format!("{login} name"), "email": format!("{login}@example.com"), "password": "password123"}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "register {login}: {body}");
        body["id"].as_str().expect("id is a string").to_string()
    }

    pub(crate) async fn login(&self, identifier: &str) -> String {
        let (status, body) = self
            .post(
                "/api/v1/sessions",
                None,
                json!({"identifier": identifier, "password": "password123"}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "login {identifier}: {body}");
        body["token"].as_str().unwrap().to_string()
    }

    /// A token of a fresh user, for calls that need any token (a lookup).
    pub(crate) async fn any_token(&self) -> String {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.user(&format!("anyone_{n}")).await.1
    }

    /// Registers and logs in: (id, token).
    pub(crate) async fn user(&self, login: &str) -> (String, String) {
        let id = self.register(login).await;
        let token = self.login(login).await;
        (id, token)
    }

    pub(crate) async fn post_status(&self, token: &str, body: Value) -> Value {
        let (status, body) = self.post("/api/v1/statuses", Some(token), body).await;
        assert_eq!(status, StatusCode::CREATED, "post status: {body}");
        body
    }

    pub(crate) async fn say(&self, token: &str, message: &str) -> String {
        self.post_status(token, json!({"message": message})).await["id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Reposts status `sid` (201 asserted); returns the repost's id.
    pub(crate) async fn repost(&self, token: &str, sid: &str) -> String {
        let (status, body) = self
            .post(
                &format!("/api/v1/statuses/{sid}/repost"),
                Some(token),
                json!({}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "repost {sid}: {body}");
        body["id"].as_str().unwrap().to_string()
    }

    pub(crate) async fn follow(&self, token: &str, id: &str) {
        let (status, body) = self
            .post(
                &format!("/api/v1/users/{id}/follow"),
                Some(token),
                json!({}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "follow {id}: {body}");
    }

    /// Ids of a timeline page.
    pub(crate) async fn timeline_ids(&self, path: &str, token: Option<&str>) -> Vec<String> {
        let (status, body) = self.get(path, token).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        body.as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    }

    /// A token with the given scopes for an existing user, as `firehose token` mints it.
    pub(crate) async fn operator_token(&self, uid: &str, scopes: &[&str]) -> String {
        let store = firehose::store::Store::open(&self.redis.url(), &self.cfg).unwrap();
        let uid: u64 = uid.parse().unwrap();
        let sid = store
            .sessions()
            .create(uid, firehose::model::now())
            .await
            .unwrap();
        let jwt = firehose::auth::Jwt::new(self.cfg.jwt_secret().unwrap());
        jwt.mint(uid, &sid, scopes, 3600).0
    }

    /// Waits until `/readyz` answers 200 again (after a fault), or fails
    /// as `eventually` does.
    #[allow(dead_code)]
    pub(crate) async fn ready_again(&self) {
        self.eventually("ready again", || async {
            self.http
                .get(self.url("/readyz"))
                .send()
                .await
                .is_ok_and(|r| r.status() == StatusCode::OK)
        })
        .await;
    }

    /// Waits until `check` holds, polling; panics with `what` after 20 s.
    pub(crate) async fn eventually<F, Fut>(&self, what: &str, mut check: F)
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !check().await {
            assert!(Instant::now() < deadline, "timed out waiting for: {what}");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Stops the server and waits for `run` to return.
    pub(crate) async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(done) = self.done.take() {
            let r = tokio::time::timeout(Duration::from_secs(20), done).await;
            assert!(r.is_ok(), "run did not return after shutdown");
        }
    }
}

/// A second server on a [`TestApp`]'s Redis (its own port and history),
/// stopped when dropped.
pub(crate) struct Beside {
    pub addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

impl Beside {
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }
}

impl TestApp {
    /// Starts another server on this app's Redis, configured as the tests'
    /// are and then by `tweak`.
    pub(crate) async fn beside(&self, tweak: impl FnOnce(&mut Config)) -> Beside {
        let mut cfg = test_config(&self.redis);
        tweak(&mut cfg);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(firehose::run(cfg, listener, async move {
            let _ = stopped.await;
        }));
        let beside = Beside { addr, _stop: stop };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !matches!(self.http.get(beside.url("/readyz")).send().await, Ok(r) if r.status() == StatusCode::OK)
        {
            assert!(
                Instant::now() < deadline,
                "the second server never became ready"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        beside
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Creates `n` users straight through the store (no password hashing), for
/// tests that need thousands of followers. Returns their ids.
pub(crate) async fn bulk_users(app: &TestApp, prefix: &str, n: usize) -> Vec<u64> {
    use futures::StreamExt;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    futures::stream::iter(0..n)
        .map(|i| {
            let store = store.clone();
            let login = format!("{prefix}{i}");
            async move {
                let email = format!("{login}@bulk.example");
                let new = firehose::store::users::NewUser {
                    login: &login,
                    name: "bulk",
                    email: &email,
                    password_hash: "x",
                };
                store
                    .users()
                    .create(&new, firehose::model::now())
                    .await
                    .unwrap()
                    .id
                    .get()
            }
        })
        .buffered(64)
        .collect()
        .await
}

/// Makes every one of `followers` follow `target` through the store.
pub(crate) async fn bulk_follow(app: &TestApp, followers: &[u64], target: u64) {
    use futures::StreamExt;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let results: Vec<bool> = futures::stream::iter(followers.to_vec())
        .map(|f| {
            let store = store.clone();
            async move {
                store
                    .follows()
                    .set(f, target, true, firehose::model::now())
                    .await
                    .unwrap()
            }
        })
        .buffer_unordered(64)
        .collect()
        .await;
    assert!(results.iter().all(|c| *c));
}

/// How many of `users` have `status_id` in their home timeline.
/// The home ids of `uid` straight from Redis, newest first.
/// Every entry of the sessions' clean-up index (`<uid>:<sid>`), over its
/// partitions.
pub(crate) fn indexed_sessions(app: &TestApp) -> Vec<String> {
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix)
        .with_log_shards(app.cfg.log_shards as usize);
    let mut conn = app.redis.conn();
    (0..firehose::store::keys::OUTBOX_PARTS)
        .flat_map(|k| {
            redis::cmd("ZRANGE")
                .arg(keys.session_index(k))
                .arg(0)
                .arg(-1)
                .query::<Vec<String>>(&mut conn)
                .unwrap()
        })
        .collect()
}

pub(crate) fn home_in_redis(app: &TestApp, uid: &str) -> Vec<String> {
    let key = format!("{}:user:{{{uid}}}:home", app.cfg.key_prefix);
    redis::cmd("ZREVRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .query(&mut app.redis.conn())
        .unwrap()
}

pub(crate) fn homes_with(app: &TestApp, users: &[u64], status_id: &str) -> usize {
    use redis::Commands;
    let mut conn = app.redis.conn();
    let key = |u: &u64| format!("{}:user:{{{u}}}:home", app.cfg.key_prefix);
    if app.redis.is_cluster() {
        // Homes live on every node: one command each.
        return users
            .iter()
            .filter(|u| {
                conn.zscore::<_, _, Option<f64>>(key(u), status_id)
                    .unwrap()
                    .is_some()
            })
            .count();
    }
    let mut pipe = redis::pipe();
    for u in users {
        pipe.zscore(key(u), status_id);
    }
    let scores: Vec<Option<f64>> = pipe.query(&mut conn).unwrap();
    scores.iter().filter(|s| s.is_some()).count()
}

/// The `id` of every object of a JSON array (statuses, users, ...).
pub(crate) fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|a| {
            a.iter()
                .map(|s| s["id"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// How many events in the replay buffer (read from Redis) are of `kind`
/// (`"type":"<kind>"`) and contain every one of `also` in their JSON.
pub(crate) fn buffered_events(app: &TestApp, kind: &str, also: &[&str]) -> usize {
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix)
        .with_log_shards(app.cfg.log_shards as usize);
    let mut conn = app.redis.conn();
    let entries: Vec<(String, Vec<(String, String)>)> = (0..keys.log_shards())
        .flat_map(|k| {
            redis::cmd("XRANGE")
                .arg(keys.log_events(k))
                .arg("-")
                .arg("+")
                .query::<Vec<(String, Vec<(String, String)>)>>(&mut conn)
                .unwrap()
        })
        .collect();
    let kind = format!("\"type\":\"{kind}\"");
    // An entry holds one event or a batch's, one `e` field each.
    entries
        .iter()
        .flat_map(|(_, fields)| fields.iter().filter(|(field, _)| field == "e"))
        .filter(|(_, body)| body.contains(&kind) && also.iter().all(|part| body.contains(part)))
        .count()
}

/// `emit_once.lua` as the server loads it (with `log_append` before it),
/// for tests that call it directly, and the publish command it is given on
/// this run's Redis.
pub(crate) fn emit_script() -> (redis::Script, &'static str) {
    let source = format!(
        "{}{}",
        include_str!("../../src/store/writes/lua/log_append.lua"),
        include_str!("../../src/store/writes/lua/emit_once.lua")
    );
    let publish = if cluster_run() { "SPUBLISH" } else { "PUBLISH" };
    (redis::Script::new(&source), publish)
}
