//! The `firehose` binary: parses the configuration, sets up logging, and runs
//! the chosen subcommand.

use anyhow::{bail, Context};
use clap::Parser;
use firehose::config::{Cli, Command, Config, LogFormat, TokenArgs};
use firehose::store::layout::foreign_layout;
use firehose::{app, embedded};
use std::io::Write;

/// mimalloc rather than the system allocator: fast on the hot paths, and when
/// asked (`--huge-pages on`) it backs its arenas with transparent huge pages,
/// which a filter index of a gigabyte needs to keep its random reads off page
/// walks (docs/benchmarks.md, *Filter matching*).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Human => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}

/// The allocator options `serve` runs with unless `--huge-pages on`: no
/// transparent huge pages, and freed pages returned at once. Together they take
/// an idle WebSocket from ~9-12 KiB to ~7.5 KiB and an idle server from ~21 MB
/// to ~11 MB (docs/benchmarks.md, *Streams*).
const LEAN_ALLOCATOR: [(&str, &str); 2] =
    [("MIMALLOC_ALLOW_THP", "0"), ("MIMALLOC_PURGE_DELAY", "0")];

/// Re-runs this binary with [`LEAN_ALLOCATOR`] added to its environment
/// when any of it is missing (values already there are kept). mimalloc reads
/// its options once, as the process loads, and setting them from inside needs
/// unsafe code, which this workspace forbids; `exec` keeps the process id, the
/// arguments and every open descriptor, and no thread has started yet. Returns
/// only when there is nothing to do, or with the reason the exec failed (the
/// server then runs with the allocator's defaults).
fn lean_allocator() -> Option<String> {
    use std::os::unix::process::CommandExt;
    let missing: Vec<(&str, &str)> = LEAN_ALLOCATOR
        .into_iter()
        .filter(|(name, _)| std::env::var_os(name).is_none())
        .collect();
    if missing.is_empty() {
        return None;
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return Some(format!("cannot find this executable: {e}")),
    };
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_else(|| exe.clone().into_os_string());
    let err = std::process::Command::new(&exe)
        .arg0(arg0)
        .args(args)
        .envs(missing)
        .exec();
    Some(format!("cannot re-run {}: {err}", exe.display()))
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let allocator_problem = match &cli.command {
        Command::Serve(c) if !c.huge_pages.enabled() => lean_allocator(),
        _ => None,
    };
    let format = match &cli.command {
        Command::Serve(c) | Command::Worker(c) | Command::Check(c) => c.log_format,
        Command::Token(t) => t.config.log_format,
        Command::Demo(d) => d.config.log_format,
        Command::Tail(_) => firehose::config::LogFormat::Human,
    };
    init_tracing(format);
    if matches!(cli.command, Command::Serve(_) | Command::Worker(_)) {
        firehose::nofile::raise_and_log();
    }
    if let Some(problem) = allocator_problem {
        tracing::warn!("allocator options not applied, idle connections cost more: {problem}");
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?
        .block_on(run(cli))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(cfg) => serve(cfg).await,
        Command::Worker(cfg) => {
            let (cfg, redis) = with_redis(cfg).await?;
            let result = app::run_workers(cfg, firehose::shutdown::signal()).await;
            if let Some(r) = redis {
                r.stop().await;
            }
            result
        }
        Command::Token(args) => token(args).await,
        Command::Check(cfg) => check(cfg).await,
        Command::Demo(args) => firehose::demo::run(args).await,
        Command::Tail(args) => firehose::tail::run(args).await,
    }
}

async fn with_redis(mut cfg: Config) -> anyhow::Result<(Config, Option<embedded::EmbeddedRedis>)> {
    let (url, redis) = embedded::resolve(&cfg).await?;
    cfg.redis_url = Some(url);
    Ok((cfg, redis))
}

async fn serve(cfg: Config) -> anyhow::Result<()> {
    let (cfg, redis) = with_redis(cfg).await?;
    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .with_context(|| format!("binding {}", cfg.listen))?;
    let result = app::run(cfg, listener, firehose::shutdown::signal()).await;
    if let Some(r) = redis {
        r.stop().await;
    }
    result
}

async fn token(args: TokenArgs) -> anyhow::Result<()> {
    let cfg = &args.config;
    let url = cfg
        .redis_url
        .clone()
        .unwrap_or_else(|| embedded::DEFAULT_URL.to_string());
    let store = firehose::store::Store::open(&url, cfg)?;
    let user = store
        .users()
        .get_any(args.user)
        .await
        .context("no such user (or Redis is unreachable)")?;
    for scope in &args.scopes {
        if !["read", "write", "firehose", "admin"].contains(&scope.as_str()) {
            bail!("unknown scope {scope:?}: use read, write, firehose or admin");
        }
    }
    if args.grant_firehose {
        store.users().set_firehose_allowed(args.user, true).await?;
    }
    if let Some(found) = foreign_layout(&store).await? {
        bail!(firehose::store::layout::foreign_layout_error(&found));
    }
    let sid = store
        .sessions()
        .create(args.user, firehose::model::now())
        .await?;
    let secret = store.sessions().jwt_secret(cfg.jwt_secret()).await?;
    let jwt = firehose::auth::Jwt::new(&secret);
    let scopes: Vec<&str> = args.scopes.iter().map(String::as_str).collect();
    let (token, expires_at) = jwt.mint(args.user, &sid, &scopes, cfg.token_ttl);
    let out = serde_json::json!({"token": token, "expires_at": expires_at, "user": user, "scopes": scopes});
    writeln!(std::io::stdout(), "{out}")?;
    Ok(())
}

async fn check(cfg: Config) -> anyhow::Result<()> {
    let mut problems: Vec<String> = Vec::new();
    let say = |line: String| {
        let _ = writeln!(std::io::stdout(), "{line}");
    };
    let url = cfg
        .redis_url
        .clone()
        .unwrap_or_else(|| embedded::DEFAULT_URL.to_string());
    match cfg.jwt_secret() {
        None => say("JWT secret: generated at first start and kept in Redis".into()),
        Some(s) if s.len() < 32 => problems.push("the JWT secret is shorter than 32 bytes".into()),
        Some(_) => {}
    }
    if cfg.fanout_inline == 0 || cfg.fanout_batch == 0 {
        problems.push("fan-out inline and batch sizes must be at least 1".into());
    }
    if cfg.workers == 0 {
        problems.push("--workers 0: some other process must run `firehose worker`".into());
    }
    if cfg.stream_queue < 10 {
        problems.push("--stream-queue below 10 disconnects clients at the slightest delay".into());
    }
    let store = firehose::store::Store::open(&url, &cfg)?;
    match store.server().ping().await {
        Ok(()) => {
            let version = store.server().version().await.unwrap_or_default();
            say(format!("redis: reachable at {url}, version {version}"));
            let major: u32 = version
                .split('.')
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            if major < 7 {
                problems.push(format!("Redis {version} is too old: 7.0 or newer is needed (XAUTOCLAIM, max-deleted-entry-id)"));
            }
            if let Ok(Some(p)) = store.server().config_get("maxmemory-policy").await {
                say(format!("redis: maxmemory-policy {p}"));
                if p != "noeviction" {
                    problems.push(format!("maxmemory-policy is {p}: Redis may evict users and timelines; use noeviction"));
                }
            }
            if let Ok(Some(a)) = store.server().config_get("appendonly").await {
                say(format!("redis: appendonly {a}"));
                if a != "yes" {
                    problems.push("appendonly is off: a Redis crash loses recent writes".into());
                }
            }
        }
        Err(e) => problems.push(format!("redis at {url} is unreachable: {e}")),
    }
    say(format!(
        "listen: {}; key prefix: {}; replay buffer: {} events",
        cfg.listen, cfg.key_prefix, cfg.replay_maxlen
    ));
    for warning in file_limits(&cfg, &say) {
        say(format!("warning: {warning}"));
    }
    history_disk(&cfg, &say, &mut problems);
    if problems.is_empty() {
        say("ok: no problems found".into());
        Ok(())
    } else {
        for p in &problems {
            say(format!("problem: {p}"));
        }
        bail!("{} problem(s) found", problems.len())
    }
}

/// Reports where `serve` keeps its history, what is there, its bounds and
/// the room left on that disk (a problem when the directory cannot be
/// written, a warning when the disk has less room than the bound).
fn history_disk(cfg: &Config, say: &impl Fn(String), problems: &mut Vec<String>) {
    if cfg.history_secs == 0 {
        say("history: off (--history 0): resumes reach only the replay buffer".into());
        return;
    }
    let dir = cfg
        .history_dir
        .clone()
        .unwrap_or_else(|| cfg.data_dir.join(format!("history-{}", cfg.listen.port())));
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|_| {
        let probe = dir.join(".check");
        std::fs::write(&probe, b"ok")?;
        std::fs::remove_file(&probe)
    }) {
        problems.push(format!(
            "the history directory {} cannot be written: {e}",
            dir.display()
        ));
        return;
    }
    let (segments, bytes) = firehose::history::on_disk(&dir).unwrap_or((0, 0));
    say(format!(
        "history: {} holds {segments} segment(s), {bytes} bytes; bounds {} s and {} bytes",
        dir.display(),
        cfg.history_secs,
        cfg.history_max_bytes
    ));
    let free = std::process::Command::new("df")
        .args(["-Pk"])
        .arg(&dir)
        .output()
        .ok()
        .and_then(|out| {
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            let line = text.lines().nth(1)?.to_string();
            line.split_whitespace().nth(3)?.parse::<u64>().ok()
        })
        .map(|kib| kib * 1024);
    match free {
        Some(free) => {
            say(format!("history: {free} bytes free on its disk"));
            if free + bytes < cfg.history_max_bytes {
                say(format!(
                    "warning: the history's disk has room for {} bytes, less than --history-max-bytes {}: it stops growing when the disk fills (the streams go on)",
                    free + bytes,
                    cfg.history_max_bytes
                ));
            }
        }
        None => say("history: the disk's free space could not be read (df)".into()),
    }
}

/// Reports the open-file limit `serve` would run with (it raises the soft
/// limit to the hard one), `somaxconn` and the connection cap they allow;
/// returns warnings (a cap below `--max-connections`, a short accept queue).
fn file_limits(cfg: &Config, say: &impl Fn(String)) -> Vec<String> {
    use firehose::nofile;
    let mut warnings = Vec::new();
    let now = nofile::current();
    let raised = nofile::raise().ok().map(|(_, after)| after).or(now);
    match (now, raised) {
        (Some(now), Some(raised)) => say(format!(
            "open files: soft limit {} (serve raises it to {}), hard limit {}",
            now.soft, raised.soft, raised.hard
        )),
        _ => say("open files: no limit reported".into()),
    }
    let cap = nofile::connection_cap(cfg.max_connections, raised);
    say(format!(
        "connections: cap {cap} (--max-connections {}; {} descriptors reserved, {} spare for health checks)",
        cfg.max_connections,
        nofile::RESERVED_FDS,
        nofile::SPARE_SLOTS
    ));
    if cap < cfg.max_connections {
        warnings.push(format!(
            "the open-file limit allows {cap} connections, fewer than --max-connections {}: raise the hard limit (LimitNOFILE= in a systemd unit, ulimit -Hn, /etc/security/limits.conf)",
            cfg.max_connections
        ));
    }
    match nofile::somaxconn() {
        Some(n) => {
            say(format!("net.core.somaxconn: {n}"));
            if n < 1024 {
                warnings.push(format!("net.core.somaxconn is {n}: bursts of new connections may be dropped; set it to 4096 or more"));
            }
        }
        None => say("net.core.somaxconn: unknown".into()),
    }
    warnings
}
