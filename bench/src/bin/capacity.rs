//! Capacity model: what one firehose instance and one Redis shard cost per
//! follow, per post and per connected client, measured on N local `serve`
//! processes over one Redis or a Redis Cluster, then projected to a target
//! load (by default 1,000,000 connected clients and 10,000 posts/s).
//!
//! The tool starts the instances itself (so it knows their pids and reads
//! their CPU and RSS from /proc) and reads every Redis node's CPU, command
//! count and bytes from INFO. Phases:
//! 1. follows over HTTP (each follower follows every poster);
//! 2. posts over HTTP, each fanned out to `--followers` homes (instances
//!    spread round robin; every instance receives every event);
//! 3. idle SSE firehose clients spread over the instances: RSS per client;
//! 4. deliveries: posts at `--rate` to every client, giving CPU per delivery;
//! 5. the check: another mix (half the clients, twice the rate) whose CPU
//!    the linear model from phases 2 to 4 predicts, next to what it took.
//!
//! ```sh
//! cargo build --release --workspace --bins
//! target/release/capacity --redis-cluster redis://127.0.0.1:7000,redis://127.0.0.1:7001,redis://127.0.0.1:7002
//! ```

// Examples are command-line programs: printing is their output.
#![allow(clippy::print_stdout)]

use clap::Parser;
use firehose::config::Config;
use firehose::store::Store;
use firehose_bench::run_all;
use firehose_bench::users::users;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

const SECRET: &str = "capacity-model-secret-capacity-model-secret";

#[derive(Parser)]
struct Args {
    /// One Redis.
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// A Redis Cluster's nodes (comma-separated); every master should be listed.
    #[arg(long)]
    redis_cluster: Option<String>,
    /// firehose serve processes to start.
    #[arg(long, default_value_t = 3)]
    instances: usize,
    /// First listen port (the instances take consecutive ports).
    #[arg(long, default_value_t = 18200)]
    base_port: u16,
    /// The firehose binary (default: next to this example's directory).
    #[arg(long)]
    firehose: Option<String>,
    /// Posters, each followed by every follower.
    #[arg(long, default_value_t = 10)]
    posters: usize,
    /// Followers of each poster (homes each post fans out to).
    #[arg(long, default_value_t = 100)]
    followers: usize,
    /// Posts in the write phase.
    #[arg(long, default_value_t = 3000)]
    posts: usize,
    /// SSE clients in the idle and delivery phases.
    #[arg(long, default_value_t = 3000)]
    clients: usize,
    /// Posts per second in the delivery phase (every client gets each).
    #[arg(long, default_value_t = 50.0)]
    rate: f64,
    /// Seconds of each delivery phase.
    #[arg(long, default_value_t = 15.0)]
    duration: f64,
    /// Projection: connected clients.
    #[arg(long, default_value_t = 1_000_000.0)]
    project_clients: f64,
    /// Projection: posts per second.
    #[arg(long, default_value_t = 10_000.0)]
    project_posts: f64,
    /// Projection: stream deliveries per post (followers online, filters).
    #[arg(long, default_value_t = 20.0)]
    project_deliveries: f64,
    /// Projection: cores one instance may use (kept at 70 % busy).
    #[arg(long, default_value_t = 8.0)]
    instance_cores: f64,
    /// Projection: memory one instance may use, GiB.
    #[arg(long, default_value_t = 16.0)]
    instance_gib: f64,
}

/// utime+stime in seconds and VmRSS in KiB of a process (zeros if gone).
fn proc_stats(pid: u32) -> (f64, u64) {
    firehose_bench::procfs::stats(pid).map_or((0.0, 0), |s| (s.cpu, s.rss_kib))
}

use firehose_bench::redis_info::{self, Node};

/// Everything measured at one moment.
#[derive(Clone)]
struct Snap {
    at: Instant,
    cpu: Vec<f64>,
    rss: Vec<u64>,
    nodes: Vec<Node>,
}

/// The difference between two snapshots, summed.
struct Delta {
    /// Commands by time spent on the `{g}` node, most first.
    g_top: Vec<(String, f64)>,
    secs: f64,
    instance_cpu: f64,
    redis_cpu: Vec<f64>,
    calls: u64,
    bytes: u64,
}

/// CPU per second with nothing to do: the instances', each node's.
#[derive(Default)]
struct Idle {
    instances: f64,
    nodes: Vec<f64>,
}

impl Delta {
    /// From `a` to `b`, less the idle cost of that long (`idle`: instance
    /// CPU and each node's CPU per second with nothing to do).
    fn of(a: &Snap, b: &Snap, idle: &Idle, g: usize) -> Delta {
        let secs = b.at.duration_since(a.at).as_secs_f64();
        let mut g_top: Vec<(String, f64)> = b.nodes[g]
            .usec
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v - a.nodes[g].usec.get(k).copied().unwrap_or(0.0),
                )
            })
            .filter(|(_, v)| *v > 0.0)
            .collect();
        g_top.sort_by(|x, y| y.1.total_cmp(&x.1));
        g_top.truncate(6);
        Delta {
            g_top,
            secs,
            instance_cpu: b.cpu.iter().sum::<f64>()
                - a.cpu.iter().sum::<f64>()
                - idle.instances * secs,
            redis_cpu: a
                .nodes
                .iter()
                .zip(&b.nodes)
                .zip(&idle.nodes)
                .map(|((x, y), i)| y.cpu - x.cpu - i * secs)
                .collect(),
            calls: b.nodes.iter().map(|n| n.calls).sum::<u64>()
                - a.nodes.iter().map(|n| n.calls).sum::<u64>(),
            bytes: b.nodes.iter().map(|n| n.bytes).sum::<u64>()
                - a.nodes.iter().map(|n| n.bytes).sum::<u64>(),
        }
    }
    fn redis_total(&self) -> f64 {
        self.redis_cpu.iter().sum()
    }
}

struct Probe {
    pids: Vec<u32>,
    nodes: Vec<redis::aio::MultiplexedConnection>,
}

impl Probe {
    async fn snap(&mut self) -> anyhow::Result<Snap> {
        let mut nodes = Vec::new();
        for conn in &mut self.nodes {
            nodes.push(redis_info::read(conn).await?);
        }
        let stats: Vec<(f64, u64)> = self.pids.iter().map(|p| proc_stats(*p)).collect();
        Ok(Snap {
            at: Instant::now(),
            cpu: stats.iter().map(|s| s.0).collect(),
            rss: stats.iter().map(|s| s.1).collect(),
            nodes,
        })
    }
}

/// A raw SSE firehose client that counts `data:` lines until stopped.
async fn sse_client(
    addr: String,
    token: String,
    got: Arc<AtomicU64>,
    up: Arc<AtomicU64>,
    mut stop: watch::Receiver<bool>,
) {
    let Some(mut sock) =
        firehose_bench::sse::open(&addr, "/api/v1/stream/firehose", &token, "").await
    else {
        return;
    };
    up.fetch_add(1, Ordering::Relaxed);
    let mut buf = vec![0u8; 16 * 1024];
    let mut at_line_start = true;
    loop {
        let n = tokio::select! {
            _ = stop.changed() => return,
            r = sock.read(&mut buf) => match r { Ok(n) if n > 0 => n, _ => return },
        };
        // Counts lines that begin with "data:" (a line may span reads only
        // at its end, and a data line's first bytes arrive together).
        let mut lines = 0;
        for (i, b) in buf[..n].iter().enumerate() {
            if at_line_start && buf[i..n].starts_with(b"data:") {
                lines += 1;
            }
            at_line_start = *b == b'\n';
        }
        got.fetch_add(lines, Ordering::Relaxed);
    }
}

/// Posts `rate` statuses a second for `secs` through the instances in turn.
async fn post_at(
    http: &reqwest::Client,
    addrs: &[String],
    tokens: &[String],
    rate: f64,
    secs: f64,
) -> u64 {
    let mut interval = tokio::time::interval(Duration::from_millis(10));
    let start = Instant::now();
    let (mut owed, mut sent) = (0.0, 0u64);
    let ok = Arc::new(AtomicU64::new(0));
    let mut flights = Vec::new();
    while start.elapsed().as_secs_f64() < secs {
        interval.tick().await;
        owed += rate / 100.0;
        while owed >= 1.0 {
            owed -= 1.0;
            let i = sent as usize;
            sent += 1;
            let (http, ok) = (http.clone(), ok.clone());
            let url = format!("http://{}/api/v1/statuses", addrs[i % addrs.len()]);
            let token = tokens[i % tokens.len()].clone();
            flights.push(tokio::spawn(async move {
                let r = http
                    .post(url)
                    .bearer_auth(token)
                    .json(&serde_json::json!({"message": format!("capacity {i}")}))
                    .send()
                    .await;
                if r.is_ok_and(|r| r.status().is_success()) {
                    ok.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
    }
    for f in flights {
        let _ = f.await;
    }
    ok.load(Ordering::Relaxed)
}

/// The index of the node that owns the `{g}` slot (0 on one Redis).
async fn global_owner(nodes: &mut [redis::aio::MultiplexedConnection], ports: &[u16]) -> usize {
    if nodes.len() < 2 {
        return 0;
    }
    let slot = firehose::store::conn::slot(b"fh:{g}:events") as i64;
    let slots: redis::Value = match redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(&mut nodes[0])
        .await
    {
        Ok(v) => v,
        Err(_) => return 0,
    };
    let redis::Value::Array(ranges) = slots else {
        return 0;
    };
    for range in ranges {
        let redis::Value::Array(r) = range else {
            continue;
        };
        let int = |v: Option<&redis::Value>| match v {
            Some(redis::Value::Int(i)) => *i,
            _ => -1,
        };
        if int(r.first()) <= slot && slot <= int(r.get(1)) {
            if let Some(redis::Value::Array(owner)) = r.get(2) {
                let port = int(owner.get(1));
                return ports
                    .iter()
                    .position(|p| i64::from(*p) == port)
                    .unwrap_or(0);
            }
        }
    }
    0
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let node_urls: Vec<String> = match &args.redis_cluster {
        Some(spec) => spec.split(',').map(|s| s.trim().to_string()).collect(),
        None => vec![args.redis_url.clone()],
    };
    let ports: Vec<u16> = node_urls
        .iter()
        .map(|u| {
            u.rsplit(':')
                .next()
                .and_then(|p| p.trim_end_matches('/').parse().ok())
                .unwrap_or(6379)
        })
        .collect();
    let mut cfg = Config::defaults();
    cfg.redis_url = Some(node_urls[0].clone());
    cfg.redis_cluster = args.redis_cluster.clone();
    cfg.jwt_secret = Some(SECRET.into());
    let store = Store::open(&node_urls[0], &cfg)?;
    let jwt = firehose::auth::Jwt::new(SECRET);

    // The instances.
    let binary = args.firehose.clone().unwrap_or_else(|| {
        let exe = std::env::current_exe().expect("own path");
        exe.parent()
            .map(|d| d.join("firehose"))
            .expect("target dir")
            .display()
            .to_string()
    });
    let redis_args: Vec<String> = match &args.redis_cluster {
        Some(spec) => vec!["--redis-cluster".into(), spec.clone()],
        None => vec!["--redis-url".into(), args.redis_url.clone()],
    };
    let addrs: Vec<String> = (0..args.instances)
        .map(|i| format!("127.0.0.1:{}", args.base_port + i as u16))
        .collect();
    let mut children = Vec::new();
    for addr in &addrs {
        children.push(
            tokio::process::Command::new(&binary)
                .args(["serve", "--listen", addr])
                .args(&redis_args)
                .env("FIREHOSE_JWT_SECRET", SECRET)
                .env("FIREHOSE_RATE_LIMITS", "off")
                .env("FIREHOSE_MAX_STREAMS_PER_USER", "10000000")
                .env("FIREHOSE_WORKERS", "1")
                .env("FIREHOSE_MAX_CONNECTIONS", "200000")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .kill_on_drop(true)
                .spawn()?,
        );
    }
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()?;
    for addr in &addrs {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !http
            .get(format!("http://{addr}/readyz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            anyhow::ensure!(Instant::now() < deadline, "{addr} never became ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let mut nodes = Vec::new();
    for url in &node_urls {
        nodes.push(
            redis::Client::open(url.as_str())?
                .get_multiplexed_async_connection()
                .await?,
        );
    }
    let g = global_owner(&mut nodes, &ports).await;
    let mut probe = Probe {
        pids: children.iter().filter_map(|c| c.id()).collect(),
        nodes,
    };
    println!(
        "{} instances on {} Redis node(s) ({}); the {{g}} slot on node {}",
        args.instances,
        node_urls.len(),
        if args.redis_cluster.is_some() {
            "cluster"
        } else {
            "single"
        },
        node_urls[g]
    );

    // Users and tokens.
    let run = format!("cap{}_", firehose::model::now() as u64 % 100_000);
    let posters = users(&store, &format!("{run}p"), args.posters).await?;
    let fans = users(&store, &format!("{run}f"), args.followers).await?;
    let token = |uid: u64, scopes: &[&str]| {
        let store = store.clone();
        let jwt = &jwt;
        let scopes: Vec<String> = scopes.iter().map(|s| s.to_string()).collect();
        async move {
            let sid = store.sessions().create(uid, firehose::model::now()).await?;
            let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
            anyhow::Ok(jwt.mint(uid, &sid, &scopes, 7200).0)
        }
    };
    let mut fan_tokens = Vec::new();
    for f in &fans {
        fan_tokens.push(token(*f, &["read", "write"]).await?);
    }
    let mut poster_tokens = Vec::new();
    for p in &posters {
        poster_tokens.push(token(*p, &["read", "write"]).await?);
    }
    let watcher = token(posters[0], &["read", "firehose"]).await?;

    // 0. The idle cost (keep-alives, polling, lease renewals), taken out
    // of every phase below.
    let s0 = probe.snap().await?;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let s1 = probe.snap().await?;
    let zero = Idle {
        instances: 0.0,
        nodes: vec![0.0; s0.nodes.len()],
    };
    let d = Delta::of(&s0, &s1, &zero, g);
    let idle = Idle {
        instances: d.instance_cpu / d.secs,
        nodes: d.redis_cpu.iter().map(|c| c / d.secs).collect(),
    };
    println!(
        "idle: instances {:.1} ms CPU/s in all, Redis nodes {:?} ms CPU/s",
        idle.instances * 1e3,
        idle.nodes
            .iter()
            .map(|c| (c * 1e4).round() / 10.0)
            .collect::<Vec<_>>()
    );

    // 1. Follows.
    let follows = args.followers * args.posters;
    let s0 = probe.snap().await?;
    let followed = run_all(follows, 32, |i| {
        let url = format!(
            "http://{}/api/v1/users/{}/follow",
            addrs[i % addrs.len()],
            posters[i % posters.len()]
        );
        let req = http.post(url).bearer_auth(&fan_tokens[i / posters.len()]);
        async move { req.send().await.is_ok_and(|r| r.status().is_success()) }
    })
    .await;
    let s1 = probe.snap().await?;
    let d = Delta::of(&s0, &s1, &idle, g);
    let per = |x: f64| x / followed.max(1) as f64;
    println!(
        "follows: {followed}/{follows} at {:.0}/s; per follow: instances {:.1} µs CPU, Redis {:.1} µs CPU, {:.1} commands, {:.0} bytes (in + out)",
        followed as f64 / d.secs,
        per(d.instance_cpu) * 1e6,
        per(d.redis_total()) * 1e6,
        per(d.calls as f64),
        per(d.bytes as f64)
    );

    // 2. Posts, each to `followers` homes.
    let s0 = probe.snap().await?;
    let posted = run_all(args.posts, 32, |i| {
        let url = format!("http://{}/api/v1/statuses", addrs[i % addrs.len()]);
        let req = http
            .post(url)
            .bearer_auth(&poster_tokens[i % posters.len()])
            .json(&serde_json::json!({"message": format!("capacity write {i} #cap")}));
        async move { req.send().await.is_ok_and(|r| r.status().is_success()) }
    })
    .await;
    // The workers finish the fan-out past the inline part.
    while store.fanout().depth().await? > 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let s1 = probe.snap().await?;
    let d = Delta::of(&s0, &s1, &idle, g);
    let per = |x: f64| x / posted.max(1) as f64;
    let post_cpu = per(d.instance_cpu);
    let post_redis = per(d.redis_total());
    let post_g = per(d.redis_cpu[g]);
    let post_calls = per(d.calls as f64);
    let post_bytes = per(d.bytes as f64);
    println!(
        "posts: {posted}/{} at {:.0}/s, each to {} homes; per post: instances {:.1} µs CPU, Redis {:.1} µs CPU (the {{g}} node {:.1} µs), {:.1} commands, {:.0} bytes",
        args.posts,
        posted as f64 / d.secs,
        args.followers,
        post_cpu * 1e6,
        post_redis * 1e6,
        post_g * 1e6,
        post_calls,
        post_bytes
    );
    println!(
        "  on the {{g}} node, µs per post: {}",
        d.g_top
            .iter()
            .map(|(k, v)| format!("{k} {:.1}", v / posted.max(1) as f64))
            .collect::<Vec<_>>()
            .join(", ")
    );

    // 3. Idle clients.
    let (stop_tx, stop) = watch::channel(false);
    let got = Arc::new(AtomicU64::new(0));
    let up = Arc::new(AtomicU64::new(0));
    let s0 = probe.snap().await?;
    let mut clients = Vec::new();
    for i in 0..args.clients {
        clients.push(tokio::spawn(sse_client(
            addrs[i % addrs.len()].clone(),
            watcher.clone(),
            got.clone(),
            up.clone(),
            stop.clone(),
        )));
        if i % 500 == 499 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while (up.load(Ordering::Relaxed) as usize) < args.clients && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let s1 = probe.snap().await?;
    let connected = up.load(Ordering::Relaxed);
    let kib_per_client = (s1.rss.iter().sum::<u64>() as f64 - s0.rss.iter().sum::<u64>() as f64)
        / connected.max(1) as f64;
    println!("idle clients: {connected} connected over {} instances; RSS {kib_per_client:.2} KiB per client", args.instances);

    // 4. and 5. Deliveries: the unit cost, then a check of the model.
    let deliver = |rate: f64, clients_on: u64| {
        let (http, addrs, tokens, got) = (
            http.clone(),
            addrs.clone(),
            poster_tokens.clone(),
            got.clone(),
        );
        let secs = args.duration;
        async move {
            let base = got.load(Ordering::Relaxed);
            let posts = post_at(&http, &addrs, &tokens, rate, secs).await;
            let expected = posts * clients_on;
            let until = Instant::now() + Duration::from_secs(5);
            while got.load(Ordering::Relaxed) - base < expected && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            (posts, got.load(Ordering::Relaxed) - base)
        }
    };
    let s0 = probe.snap().await?;
    let (posts, delivered) = deliver(args.rate, connected).await;
    let s1 = probe.snap().await?;
    let d = Delta::of(&s0, &s1, &idle, g);
    let deliver_cpu = (d.instance_cpu - posts as f64 * post_cpu).max(0.0) / delivered.max(1) as f64;
    println!(
        "deliveries: {posts} posts at {:.0}/s to {connected} clients: {delivered} of {} delivered; instances {:.2} s CPU, {:.2} µs per delivery after the posts' own cost",
        args.rate,
        posts * connected,
        d.instance_cpu,
        deliver_cpu * 1e6
    );
    // The check: half the clients leave, posts come twice as fast.
    let half = clients.len() / 2;
    for c in clients.drain(..half) {
        c.abort();
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let remaining = connected - half as u64;
    let s0 = probe.snap().await?;
    let (posts2, delivered2) = deliver(args.rate * 2.0, remaining).await;
    let s1 = probe.snap().await?;
    let d2 = Delta::of(&s0, &s1, &idle, g);
    let predicted = posts2 as f64 * post_cpu + delivered2 as f64 * deliver_cpu;
    let predicted_redis = posts2 as f64 * post_redis;
    println!(
        "check: {posts2} posts at {:.0}/s to {remaining} clients ({delivered2} deliveries): instances took {:.2} s CPU, the model says {:.2} s ({:+.0} %); Redis took {:.2} s, the model says {:.2} s ({:+.0} %)",
        args.rate * 2.0,
        d2.instance_cpu,
        predicted,
        (predicted / d2.instance_cpu.max(1e-9) - 1.0) * 100.0,
        d2.redis_total(),
        predicted_redis,
        (predicted_redis / d2.redis_total().max(1e-9) - 1.0) * 100.0
    );
    let _ = stop_tx.send(true);
    for c in clients {
        let _ = c.await;
    }

    // The projection.
    let (c, p, dp) = (
        args.project_clients,
        args.project_posts,
        args.project_deliveries,
    );
    let instance_cores = p * post_cpu + p * dp * deliver_cpu;
    let by_cpu = instance_cores / (args.instance_cores * 0.7);
    let by_mem = c * kib_per_client / (args.instance_gib * 1024.0 * 1024.0 * 0.8);
    let by_conns = c / 50_000.0;
    let redis_cores = p * post_redis;
    let g_cores = p * post_g;
    println!();
    println!(
        "projection: {c:.0} clients, {p:.0} posts/s each to {} homes, {dp:.0} deliveries per post",
        args.followers
    );
    println!(
        "  instances: {instance_cores:.1} cores of CPU → {:.0} by CPU ({} cores at 70 %), {:.0} by memory ({} GiB at 80 %), {:.0} by the default 50,000-connection limit → {:.0} instances",
        by_cpu.ceil(),
        args.instance_cores,
        by_mem.ceil(),
        args.instance_gib,
        by_conns.ceil(),
        by_cpu.max(by_mem).max(by_conns).ceil()
    );
    println!(
        "  Redis: {redis_cores:.1} cores in all → {:.0} shards at 70 % of a core; {:.0} commands/s, {:.0} MB/s; the {{g}} shard alone needs {g_cores:.2} cores{}",
        (redis_cores / 0.7).ceil(),
        p * post_calls,
        p * post_bytes / 1e6,
        if g_cores > 0.7 { " — over one core: the global slot caps the cluster below this post rate" } else { "" }
    );
    println!(
        "  posts/s one {{g}} shard carries at 70 % of a core: {:.0}",
        0.7 / post_g.max(1e-12)
    );
    Ok(())
}
