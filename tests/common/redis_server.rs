//! Real redis-server children on free ports: one server, or the three
//! masters of a local Redis Cluster; killed on drop.

use super::*;

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A free port whose cluster bus port (+10000) is free too.
pub(crate) fn free_cluster_port() -> u16 {
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
    /// Replicas per master (a cluster made with replicas).
    replicas: usize,
    created: bool,
    /// Its ports are fixed: a restart must come back on them.
    started: bool,
    /// Microseconds each node's wall clock runs ahead (`clock_skew`).
    skews: Vec<i64>,
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

    /// A local 3-master Redis Cluster whose first master's wall clock runs
    /// `ahead` milliseconds ahead of the others' (and the machine's).
    pub(crate) fn start_cluster_with_clock_ahead(ahead: i64) -> RedisServer {
        Self::launch_skewed(false, true, 0, vec![ahead * 1000])
    }

    /// A local Redis Cluster of 3 masters with one replica each, whose
    /// nodes give up on a silent peer after a second (so a killed master's
    /// replica takes over within a few).
    pub(crate) fn start_cluster_with_replicas() -> RedisServer {
        Self::launch_with(false, true, 1)
    }

    fn launch(durable: bool, cluster: bool) -> RedisServer {
        Self::launch_with(durable, cluster, 0)
    }

    fn launch_with(durable: bool, cluster: bool, replicas: usize) -> RedisServer {
        Self::launch_skewed(durable, cluster, replicas, Vec::new())
    }

    fn launch_skewed(
        durable: bool,
        cluster: bool,
        replicas: usize,
        skews: Vec<i64>,
    ) -> RedisServer {
        ensure_redis_installed();
        let ports: Vec<u16> = if cluster {
            (0..3 * (1 + replicas))
                .map(|_| free_cluster_port())
                .collect()
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
            replicas,
            created: false,
            started: false,
            skews,
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

    /// A directory that lives as long as this Redis: where the firehose
    /// processes of a test keep their histories.
    pub(crate) fn data_dir(&self) -> &std::path::Path {
        &self.dir
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
                if self.replicas > 0 { "1000" } else { "5000" },
                "--cluster-require-full-coverage",
                "no",
                // A replica's first sync starts at once (not 5 s later).
                "--repl-diskless-sync-delay",
                "0",
            ]);
        }
        if let Some(&skew) = self.skews.get(i).filter(|s| **s != 0) {
            cmd.env("LD_PRELOAD", clock_skew_library())
                .env("FIREHOSE_TEST_SKEW_US", skew.to_string());
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

    /// `redis-cli --cluster create` over the nodes: three masters, and the
    /// replicas asked for.
    fn create_cluster(&mut self) {
        let nodes: Vec<String> = self
            .ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&nodes)
            .args([
                "--cluster-replicas",
                &self.replicas.to_string(),
                "--cluster-yes",
            ])
            .output()
            .expect("redis-cli runs");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        self.created = true;
        self.wait_cluster_ok();
        // A replica that never synced cannot take over: wait for each.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let synced = (0..self.ports.len())
                .filter(|i| self.replica_in_sync(*i))
                .count();
            if synced == 3 * self.replicas {
                break;
            }
            assert!(Instant::now() < deadline, "the replicas never synced");
            std::thread::sleep(Duration::from_millis(50));
        }
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

    /// `CLUSTER NODES` as one running node sees it.
    pub(crate) fn cluster_nodes(&self) -> String {
        for (i, port) in self.ports.iter().enumerate() {
            if self.children[i].is_none() {
                continue;
            }
            let seen: redis::RedisResult<String> =
                redis::Client::open(format!("redis://127.0.0.1:{port}"))
                    .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(1)))
                    .and_then(|mut c| redis::cmd("CLUSTER").arg("NODES").query(&mut c));
            if let Ok(text) = seen {
                return text;
            }
        }
        panic!("no cluster node answers");
    }

    /// The index of the node that serves `key`'s slot as master, as the
    /// running nodes see it (`None`: no node they agree on yet).
    pub(crate) fn master_of(&self, key: &str) -> Option<usize> {
        let slot = i64::from(
            redis::Client::open(self.url_of_running())
                .unwrap()
                .get_connection()
                .and_then(|mut c| {
                    redis::cmd("CLUSTER")
                        .arg("KEYSLOT")
                        .arg(key)
                        .query::<u16>(&mut c)
                })
                .unwrap(),
        );
        let nodes = self.cluster_nodes();
        let line = nodes.lines().find(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let flags = fields.get(2).copied().unwrap_or("");
            flags.contains("master")
                && !flags.contains("fail")
                && fields.iter().skip(8).any(|range| {
                    let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                    match (lo.parse::<i64>(), hi.parse::<i64>()) {
                        (Ok(lo), Ok(hi)) => lo <= slot && slot <= hi,
                        _ => false,
                    }
                })
        })?;
        let addr = line.split_whitespace().nth(1)?;
        let port: u16 = addr.split(['@', ':']).nth(1)?.parse().ok()?;
        self.ports.iter().position(|p| *p == port)
    }

    fn url_of_running(&self) -> String {
        let i = (0..self.ports.len())
            .find(|i| self.children[*i].is_some())
            .expect("a running node");
        format!("redis://127.0.0.1:{}", self.ports[i])
    }

    /// The last lines of every node's log (for a failing test's message).
    pub(crate) fn log_tails(&self) -> String {
        self.ports
            .iter()
            .map(|p| {
                let log = std::fs::read_to_string(self.dir.join(p.to_string()).join("redis.log"))
                    .unwrap_or_default();
                let lines: Vec<&str> = log.lines().collect();
                format!(
                    "--- {p}\n{}",
                    lines[lines.len().saturating_sub(12)..].join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Makes this single server a replica of `master` and waits until it
    /// has synced.
    pub(crate) fn replicate(&self, master: &RedisServer) {
        let mut conn = redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap();
        let _: () = redis::cmd("REPLICAOF")
            .arg("127.0.0.1")
            .arg(master.port)
            .query(&mut conn)
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.replica_in_sync(0) {
            assert!(Instant::now() < deadline, "the replica never synced");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops (`SIGSTOP`) or continues (`SIGCONT`) node `i`: a server that
    /// holds its connections and answers nothing.
    pub(crate) fn signal_node(&self, i: usize, signal: &str) {
        let pid = self.children[i].as_ref().expect("a running node").id();
        let status = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} {pid}");
    }

    /// SIGKILLs one node.
    pub(crate) fn kill_node(&mut self, i: usize) {
        if let Some(mut child) = self.children[i].take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts a killed node again on its port; it rejoins the cluster from
    /// its nodes.conf (a master that was failed over comes back a replica).
    pub(crate) fn restart_node(&mut self, i: usize) {
        self.spawn_node(i);
    }

    /// Whether node `i` is a replica whose link to its master is up and
    /// synced.
    pub(crate) fn replica_in_sync(&self, i: usize) -> bool {
        redis::Client::open(format!("redis://127.0.0.1:{}", self.ports[i]))
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(1)))
            .and_then(|mut c| {
                redis::cmd("INFO")
                    .arg("replication")
                    .query::<String>(&mut c)
            })
            .is_ok_and(|info| {
                info.contains("role:slave")
                    && info.contains("master_link_status:up")
                    && info.contains("master_sync_in_progress:0")
            })
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
