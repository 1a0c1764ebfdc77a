//! Shared test harness: a real redis-server per test on a free port (killed
//! on drop, installed with apt-get when missing) and the real server on a
//! port-0 listener, talked to over real sockets.

#![allow(dead_code)]

pub(crate) mod browser;

use firehose::config::Config;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

static INSTALL: Once = Once::new();

/// Installs with apt-get what the tests run that a fresh Debian machine
/// lacks: redis-server (for every test) and curl (for the walkthrough).
fn ensure_redis_installed() {
    INSTALL.call_once(|| {
        let missing: Vec<&str> = [
            ("redis-server", "redis-server"),
            ("curl", "curl"),
            ("nginx", "nginx-light"),
        ]
        .into_iter()
        .filter(|(bin, _)| Command::new(bin).arg("--version").output().is_err())
        .map(|(_, package)| package)
        .collect();
        if missing.is_empty() {
            return;
        }
        let ok = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "(apt-get update -qq && apt-get install -y -qq {}) >/dev/null 2>&1",
                missing.join(" ")
            ))
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "{missing:?} missing and apt-get could not install them");
    });
}

static SCHEMATHESIS: Once = Once::new();

/// The schemathesis CLI: `st` on the PATH, or one installed with pip into a
/// virtual environment under the target directory (on a fresh Debian
/// machine, after apt-get installs python3-venv).
pub(crate) fn schemathesis() -> std::path::PathBuf {
    let venv = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/schemathesis");
    let st_in_venv = venv.join("bin/st");
    if Command::new("st")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return "st".into();
    }
    SCHEMATHESIS.call_once(|| {
        if st_in_venv.exists() {
            return;
        }
        let script = format!(
            "(python3 -m venv --help >/dev/null 2>&1 && python3 -m ensurepip --version >/dev/null 2>&1 \
               || (apt-get update -qq && apt-get install -y -qq python3-venv python3-pip)) >/dev/null 2>&1; \
             python3 -m venv {venv} && {venv}/bin/pip install -q schemathesis",
            venv = venv.display()
        );
        let ok = Command::new("sh")
            .arg("-c")
            .arg(script)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "could not install schemathesis with pip");
    });
    st_in_venv
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A free port whose cluster bus port (+10000) is free too.
fn free_cluster_port() -> u16 {
    loop {
        let p = free_port();
        if p < 55_000 && std::net::TcpListener::bind(("127.0.0.1", p + 10_000)).is_ok() {
            return p;
        }
    }
}

/// Whether this test run uses a Redis Cluster (`FIREHOSE_TEST_CLUSTER=1`)
/// wherever a test asks for "a Redis".
pub(crate) fn cluster_run() -> bool {
    std::env::var("FIREHOSE_TEST_CLUSTER").is_ok_and(|v| v == "1")
}

/// redis-server children on free ports: one server, or the three masters of
/// a local Redis Cluster. Killed on drop.
pub(crate) struct RedisServer {
    children: Vec<Option<Child>>,
    /// The (first) node's port.
    pub port: u16,
    ports: Vec<u16>,
    dir: std::path::PathBuf,
    /// AOF with fsync on every write, so a restart keeps everything.
    durable: bool,
    cluster: bool,
    created: bool,
    /// Its ports are fixed: a restart must come back on them.
    started: bool,
}

impl RedisServer {
    /// A Redis: a single server, or a 3-master cluster in a cluster run.
    pub(crate) fn start() -> RedisServer {
        Self::launch(false, cluster_run())
    }

    /// A server whose data survives `restart` (AOF, fsync always).
    pub(crate) fn start_durable() -> RedisServer {
        Self::launch(true, cluster_run())
    }

    /// A single server, whatever the run.
    pub(crate) fn start_single() -> RedisServer {
        Self::launch(false, false)
    }

    /// A local 3-master Redis Cluster, whatever the run.
    pub(crate) fn start_cluster() -> RedisServer {
        Self::launch(false, true)
    }

    fn launch(durable: bool, cluster: bool) -> RedisServer {
        ensure_redis_installed();
        let ports: Vec<u16> = if cluster {
            (0..3).map(|_| free_cluster_port()).collect()
        } else {
            vec![free_port()]
        };
        let dir = std::env::temp_dir().join(format!(
            "firehose-test-redis-{}-{}",
            ports[0],
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut me = RedisServer {
            children: ports.iter().map(|_| None).collect(),
            port: ports[0],
            ports,
            dir,
            durable,
            cluster,
            created: false,
            started: false,
        };
        me.spawn();
        if cluster {
            me.create_cluster();
        }
        me.started = true;
        me
    }

    /// The (first) node's URL.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Whether this is a cluster.
    pub(crate) fn is_cluster(&self) -> bool {
        self.cluster
    }

    /// The `--redis-cluster` value (every node), on a cluster.
    pub(crate) fn cluster_spec(&self) -> Option<String> {
        self.cluster.then(|| {
            self.ports
                .iter()
                .map(|p| format!("redis://127.0.0.1:{p}"))
                .collect::<Vec<_>>()
                .join(",")
        })
    }

    /// The command-line arguments that point a firehose process here.
    pub(crate) fn args(&self) -> Vec<String> {
        match self.cluster_spec() {
            Some(spec) => vec!["--redis-cluster".into(), spec],
            None => vec!["--redis-url".into(), self.url()],
        }
    }

    fn spawn(&mut self) {
        for i in 0..self.ports.len() {
            self.spawn_node(i);
        }
        if self.cluster && self.created {
            // A restart: the nodes find each other again from nodes.conf.
            self.wait_cluster_ok();
        }
    }

    fn spawn_node(&mut self, i: usize) {
        self.spawn_node_by(i, Instant::now() + Duration::from_secs(60));
    }

    fn spawn_node_by(&mut self, i: usize, deadline: Instant) {
        let port = self.ports[i];
        let dir = self.dir.join(port.to_string());
        std::fs::create_dir_all(&dir).expect("node dir");
        let log = dir.join("redis.log");
        let mut cmd = Command::new("redis-server");
        cmd.args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            if self.durable { "yes" } else { "no" },
            "--appendfsync",
            "always",
        ]);
        if self.cluster {
            cmd.args([
                "--cluster-enabled",
                "yes",
                "--cluster-node-timeout",
                "5000",
                "--cluster-require-full-coverage",
                "no",
            ]);
        }
        let child = cmd
            .arg("--dir")
            .arg(&dir)
            .arg("--logfile")
            .arg(&log)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.children[i] = Some(child);
        // Accepting connections is not serving (an AOF may still be
        // loading), and a port that answers may be another process's: the
        // node is up when it names our directory and answers PING.
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).expect("redis url");
        loop {
            let exited = self.children[i]
                .as_mut()
                .is_some_and(|c| c.try_wait().ok().flatten().is_some());
            if exited {
                // Another process took the port (or its bus port) between
                // our check and the spawn: before the cluster exists, take
                // others.
                if self.started {
                    // A restart keeps its port: try it again until it is free.
                    assert!(
                        Instant::now() < deadline,
                        "redis-server on {port} exited at restart; log: {}",
                        std::fs::read_to_string(&log).unwrap_or_default()
                    );
                    std::thread::sleep(Duration::from_millis(100));
                    return self.spawn_node_by(i, deadline);
                }
                self.ports[i] = if self.cluster {
                    free_cluster_port()
                } else {
                    free_port()
                };
                if i == 0 {
                    self.port = self.ports[0];
                }
                return self.spawn_node_by(i, deadline);
            }
            // Ours when it names our directory (another test's Redis on a
            // reused port would name its own).
            let served: redis::RedisResult<Vec<String>> = client
                .get_connection_with_timeout(Duration::from_secs(1))
                .and_then(|mut c| {
                    c.set_read_timeout(Some(Duration::from_secs(1)))?;
                    let pair = redis::cmd("CONFIG").arg("GET").arg("dir").query(&mut c)?;
                    // PING waits out an AOF that is still loading.
                    redis::cmd("PING").query::<String>(&mut c)?;
                    Ok(pair)
                });
            if let Ok(pair) = served {
                let ours = std::fs::canonicalize(&dir).ok();
                if pair.get(1).map(std::path::PathBuf::from) == ours {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "redis-server on {port} did not start serving; log: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// `redis-cli --cluster create` over the nodes: three masters, no replicas.
    fn create_cluster(&mut self) {
        let nodes: Vec<String> = self
            .ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&nodes)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli runs");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        self.created = true;
        self.wait_cluster_ok();
    }

    /// Waits until every node that runs reports `cluster_state:ok` and
    /// knows every slot's owner.
    fn wait_cluster_ok(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        for (i, port) in self.ports.iter().enumerate() {
            if self.children[i].is_none() {
                continue;
            }
            let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).unwrap();
            loop {
                let info: String = client
                    .get_connection()
                    .and_then(|mut c| redis::cmd("CLUSTER").arg("INFO").query(&mut c))
                    .unwrap_or_default();
                if info.contains("cluster_state:ok") && info.contains("cluster_slots_ok:16384") {
                    break;
                }
                assert!(Instant::now() < deadline, "the cluster never became ok");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// Kills the server(s) (data is lost unless started durable).
    pub(crate) fn stop(&mut self) {
        for child in &mut self.children {
            if let Some(mut child) = child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }

    /// Starts it again on the same port(s).
    pub(crate) fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// A plain connection to every node (for node-level commands: CLIENT
    /// KILL, INFO).
    pub(crate) fn node_conns(&self) -> Vec<redis::Connection> {
        self.ports
            .iter()
            .map(|p| {
                redis::Client::open(format!("redis://127.0.0.1:{p}"))
                    .unwrap()
                    .get_connection()
                    .unwrap()
            })
            .collect()
    }

    /// Drops every pub/sub connection on every node (the server's event
    /// subscriptions among them); returns how many went.
    pub(crate) fn kill_pubsub(&self) -> u64 {
        self.node_conns()
            .iter_mut()
            .map(|conn| {
                redis::cmd("CLIENT")
                    .arg("KILL")
                    .arg("TYPE")
                    .arg("pubsub")
                    .query::<u64>(conn)
                    .unwrap()
            })
            .sum()
    }

    /// A synchronous connection for poking at keys (cluster-aware in a
    /// cluster; pipelines there must stay within one slot).
    pub(crate) fn conn(&self) -> Poke {
        match self.cluster_spec() {
            Some(_) => Poke::Cluster(Box::new(
                redis::cluster::ClusterClient::new(
                    self.ports
                        .iter()
                        .map(|p| format!("redis://127.0.0.1:{p}"))
                        .collect::<Vec<_>>(),
                )
                .unwrap()
                .get_connection()
                .unwrap(),
            )),
            None => Poke::Single(
                redis::Client::open(self.url())
                    .unwrap()
                    .get_connection()
                    .unwrap(),
            ),
        }
    }
}

/// A synchronous connection to the test Redis or cluster.
pub(crate) enum Poke {
    Single(redis::Connection),
    Cluster(Box<redis::cluster::ClusterConnection>),
}

impl redis::ConnectionLike for Poke {
    fn req_packed_command(&mut self, cmd: &[u8]) -> redis::RedisResult<redis::Value> {
        match self {
            Poke::Single(c) => c.req_packed_command(cmd),
            Poke::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> redis::RedisResult<Vec<redis::Value>> {
        match self {
            Poke::Single(c) => c.req_packed_commands(cmd, offset, count),
            Poke::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        0
    }

    fn check_connection(&mut self) -> bool {
        match self {
            Poke::Single(c) => c.check_connection(),
            Poke::Cluster(c) => c.check_connection(),
        }
    }

    fn is_open(&self) -> bool {
        match self {
            Poke::Single(c) => c.is_open(),
            Poke::Cluster(c) => c.is_open(),
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

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
    cfg
}

impl TestApp {
    pub(crate) async fn start() -> TestApp {
        Self::start_with(|_| {}).await
    }

    pub(crate) async fn start_with(tweak: impl FnOnce(&mut Config)) -> TestApp {
        Self::start_on(RedisServer::start(), tweak).await
    }

    /// The app on a Redis of the test's choosing (a durable one, say).
    pub(crate) async fn start_on(redis: RedisServer, tweak: impl FnOnce(&mut Config)) -> TestApp {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_env("TEST_LOG"))
            .with_test_writer()
            .try_init();
        let mut cfg = test_config(&redis);
        tweak(&mut cfg);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(firehose::run(cfg.clone(), listener, async move {
            let _ = stopped.await;
        }));
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

    pub(crate) async fn post(&self, path: &str, token: Option<&str>, body: Value) -> (StatusCode, Value) {
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
            .create_session(uid, firehose::model::now())
            .await
            .unwrap();
        let jwt = firehose::auth::Jwt::new(self.cfg.jwt_secret().unwrap());
        jwt.mint(uid, &sid, scopes, 3600).0
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
                    .create_user(&new, firehose::model::now())
                    .await
                    .unwrap()
                    .id
                    .parse::<u64>()
                    .unwrap()
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
                    .set_follow(f, target, true, firehose::model::now())
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
        }
    }
}

impl StreamClient {
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
                assert!(v.parse::<u64>().is_ok());
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
        let data: Value = serde_json::from_str(&data).expect("data is json");
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

    /// The next event that is not a control event.
    pub(crate) async fn next_event(&mut self, what: &str) -> Msg {
        loop {
            let m = self.next(what).await;
            if m.data.get("id").is_some() {
                return m;
            }
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

/// The firehose binary as a child process (`serve` or `worker`), for tests
/// that kill it with SIGKILL or run several processes on one Redis.
pub(crate) struct ServerProcess {
    pub child: tokio::process::Child,
    pub port: u16,
}

impl ServerProcess {
    /// Starts `firehose serve` on a free port against `redis_url` and waits
    /// until it answers /readyz.
    pub(crate) async fn serve(redis: &RedisServer, env: &[(&str, &str)]) -> ServerProcess {
        Self::start(redis, env, None).await
    }

    /// [`ServerProcess::serve`] from a shell whose soft open-file limit is
    /// `soft` (`ulimit -Sn`), as a login shell's often is.
    pub(crate) async fn serve_with_soft_nofile(
        redis: &RedisServer,
        env: &[(&str, &str)],
        soft: u64,
    ) -> ServerProcess {
        Self::start(redis, env, Some(soft)).await
    }

    async fn start(redis: &RedisServer, env: &[(&str, &str)], soft: Option<u64>) -> ServerProcess {
        let port = free_port();
        let bin = env!("CARGO_BIN_EXE_firehose");
        let mut cmd = match soft {
            None => tokio::process::Command::new(bin),
            Some(soft) => {
                let mut sh = tokio::process::Command::new("sh");
                sh.args([
                    "-c",
                    &format!("ulimit -Sn {soft} && exec \"$0\" \"$@\""),
                    bin,
                ]);
                sh
            }
        };
        cmd.args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(redis.args())
            .env("FIREHOSE_JWT_SECRET", "test-secret-test-secret-test-secret")
            .env("FIREHOSE_RATE_LIMITS", "off")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("the firehose binary starts");
        let server = ServerProcess { child, port };
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(r) = http.get(server.url("/readyz")).send().await {
                if r.status() == StatusCode::OK {
                    break;
                }
            }
            assert!(
                Instant::now() < deadline,
                "the server process never became ready"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        server
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.port, path)
    }

    /// SIGKILL: no shutdown, no clean-up, whatever it was doing.
    pub(crate) async fn kill9(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

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

/// The next text message as JSON (pings and pongs skipped), within 10 s.
pub(crate) async fn ws_next(ws: &mut Ws) -> Value {
    use futures::StreamExt;
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a websocket message in time")
            .expect("open")
            .expect("ok");
        if let tokio_tungstenite::tungstenite::Message::Text(t) = msg {
            return serde_json::from_str(t.as_str()).unwrap();
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

/// A gate in a TCP proxy in front of Redis: while closed, everything Redis
/// sends on RESP3 connections (those opened with `HELLO 3`) is held back,
/// and on opening it goes out in one write, in order; other connections
/// pass straight through.
#[derive(Clone)]
pub(crate) struct Gate(std::sync::Arc<tokio::sync::watch::Sender<bool>>);

impl Gate {
    pub(crate) fn close(&self) {
        self.0.send_replace(false);
    }

    pub(crate) fn open(&self) {
        self.0.send_replace(true);
    }
}

/// Starts a proxy to the Redis at `upstream` with a [`Gate`] (open) on its
/// RESP3 connections; returns the proxy's port and the gate. It runs until
/// the test's runtime ends.
pub(crate) async fn resp3_gate_proxy(upstream: u16) -> (u16, Gate) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let gate = Gate(std::sync::Arc::new(tokio::sync::watch::channel(true).0));
    let shared = gate.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let gate = shared.clone();
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await
                else {
                    return;
                };
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                let mut first = vec![0u8; 4096];
                let Ok(n) = client_read.read(&mut first).await else {
                    return;
                };
                let gated = first[..n]
                    .windows(5)
                    .any(|w| w.eq_ignore_ascii_case(b"HELLO"));
                if server_write.write_all(&first[..n]).await.is_err() {
                    return;
                }
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
                });
                if !gated {
                    let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                    return;
                }
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
                tokio::spawn(async move {
                    let mut open = gate.0.subscribe();
                    while let Some(mut bytes) = rx.recv().await {
                        if open.wait_for(|&o| o).await.is_err() {
                            return;
                        }
                        while let Ok(more) = rx.try_recv() {
                            bytes.extend_from_slice(&more);
                        }
                        if client_write.write_all(&bytes).await.is_err() {
                            return;
                        }
                    }
                });
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    match server_read.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if tx.send(buf[..n].to_vec()).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    (port, gate)
}
