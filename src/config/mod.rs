//! Command line and environment configuration.

mod parse;
pub(crate) use parse::check_history_store;
pub(crate) mod tail;

use clap::{Args, Parser, Subcommand, ValueEnum};
use parse::{parse_bytes, parse_duration, parse_history_store, parse_window};
use std::net::SocketAddr;
use std::path::PathBuf;

/// firehose: a Twitter-like social network on Redis with a streaming firehose.
#[derive(Debug, Parser)]
#[command(name = "firehose", version, about, long_about = None)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP server and the background workers.
    Serve(Config),
    /// Run only the background workers (fan-out queue and session clean-up).
    Worker(Config),
    /// Mint a token for an existing user (for operators: e.g. the firehose scope).
    Token(TokenArgs),
    /// Report Redis reachability, its version and configuration problems.
    Check(Config),
    /// Seed a demo world and keep posting, so a live firehose is there to watch.
    Demo(DemoArgs),
    /// Print a stream in the terminal, reconnecting and resuming by itself.
    Tail(tail::TailArgs),
}

/// Output format of the logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Human,
    /// One JSON object per line.
    Json,
}

/// A feature that is on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

impl Switch {
    /// Whether it is on.
    pub fn enabled(self) -> bool {
        self == Switch::On
    }
}

/// Settings shared by every subcommand that talks to Redis or serves.
#[derive(Debug, Clone, Args)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "FIREHOSE_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Redis URL. Without it the server uses redis://127.0.0.1:6379 when that
    /// answers, and otherwise starts a private redis-server under --data-dir.
    #[arg(long, env = "FIREHOSE_REDIS_URL")]
    pub redis_url: Option<String>,

    /// Run on a Redis Cluster: its seed nodes, comma-separated
    /// (`redis://h1:p1,redis://h2:p2,...`). Overrides --redis-url.
    #[arg(long, env = "FIREHOSE_REDIS_CLUSTER")]
    pub redis_cluster: Option<String>,

    /// Replicas that must hold a write before it is answered: after a
    /// write succeeds, `WAIT` on every master for this many of its
    /// replicas (fewer when fewer are attached and in sync: a master with
    /// none has nothing to fail over to). A replica that does not confirm
    /// within --redis-wait-timeout-ms turns the answer into a 503, which a
    /// retry with the same Idempotency-Key settles. 0: answer at once.
    #[arg(long, env = "FIREHOSE_REDIS_WAIT_REPLICAS", default_value_t = 0)]
    pub redis_wait_replicas: u32,

    /// How long a write waits for its replicas (--redis-wait-replicas).
    #[arg(long, env = "FIREHOSE_REDIS_WAIT_TIMEOUT_MS", default_value_t = 1000)]
    pub redis_wait_timeout_ms: u64,

    /// Where the private redis-server keeps its data (AOF on).
    #[arg(long, env = "FIREHOSE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// The redis-server binary used for the private server.
    #[arg(long, env = "FIREHOSE_REDIS_SERVER", default_value = "redis-server")]
    pub redis_server: String,

    /// Prefix of every Redis key and channel.
    #[arg(long, env = "FIREHOSE_KEY_PREFIX", default_value = "fh")]
    pub key_prefix: String,

    /// Secret for HS256 JWTs (at least 32 bytes). Without one, a random
    /// secret is generated at first start and kept in Redis, shared by every
    /// process on that Redis.
    #[arg(long, env = "FIREHOSE_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,

    /// Lifetime of a login token, in seconds.
    #[arg(long, env = "FIREHOSE_TOKEN_TTL", default_value_t = 30 * 24 * 3600)]
    pub token_ttl: u64,

    /// Sessions idle longer than this many seconds are dropped by the clean-up.
    #[arg(long, env = "FIREHOSE_SESSION_IDLE_TTL", default_value_t = 30 * 24 * 3600)]
    pub session_idle_ttl: u64,

    /// Most sessions kept; the clean-up drops the least recently seen beyond it.
    #[arg(long, env = "FIREHOSE_MAX_SESSIONS", default_value_t = 10_000_000)]
    pub max_sessions: u64,

    /// Seconds between two clean-up passes.
    #[arg(long, env = "FIREHOSE_CLEANUP_INTERVAL", default_value_t = 1.0)]
    pub cleanup_interval: f64,

    /// Capacity (MAXLEN, approximate) of the replay buffer of events.
    #[arg(long, env = "FIREHOSE_REPLAY_MAXLEN", default_value_t = 100_000)]
    pub replay_maxlen: u64,

    /// How many shards the event log is spread over (1 to 1024), fixed
    /// when a store is first used: each has its own buffer, marks and
    /// channel in a slot of its own, so up to this many masters share the
    /// log's work. A store written with another count is refused.
    #[arg(long, env = "FIREHOSE_LOG_SHARDS", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub log_shards: u64,

    /// How long events stay in the history on disk after they leave the
    /// replay buffer: seconds, or with a unit (`90s`, `30m`, `24h`, `7d`);
    /// `0` keeps no history.
    #[arg(long = "history", env = "FIREHOSE_HISTORY", default_value = "24h", value_parser = parse_duration)]
    pub history_secs: u64,

    /// Most bytes the history keeps on disk (the oldest leave first):
    /// bytes, or with a unit (`512MiB`, `4GiB`, `100M`).
    #[arg(long, env = "FIREHOSE_HISTORY_MAX_BYTES", default_value = "4GiB", value_parser = parse_bytes)]
    pub history_max_bytes: u64,

    /// An S3-compatible object store every process shares the history
    /// through (`s3://BUCKET/PREFIX`, with the `AWS_*` settings): each
    /// process then serves the whole history, and its directory is a cache.
    #[arg(long, env = "FIREHOSE_HISTORY_STORE", value_parser = parse_history_store)]
    pub history_store: Option<String>,

    /// The shared history's store endpoint (SeaweedFS, MinIO, ...).
    #[arg(long, env = "AWS_ENDPOINT_URL")]
    pub history_store_endpoint: Option<String>,

    /// The log's span per shared history object (the same on every process).
    #[arg(long, env = "FIREHOSE_HISTORY_WINDOW", default_value = "10s", value_parser = parse_window)]
    pub history_window_secs: u64,

    /// Where this process keeps its history (one directory per process;
    /// by default `history-<port>` in --data-dir).
    #[arg(long, env = "FIREHOSE_HISTORY_DIR")]
    pub history_dir: Option<PathBuf>,

    /// Followers reached inline before POST returns; the rest go to the queue.
    #[arg(long, env = "FIREHOSE_FANOUT_INLINE", default_value_t = 1000)]
    pub fanout_inline: usize,

    /// Followers per queued fan-out batch.
    #[arg(long, env = "FIREHOSE_FANOUT_BATCH", default_value_t = 1000)]
    pub fanout_batch: usize,

    /// Fan-out worker tasks in this process (0 for none).
    #[arg(long, env = "FIREHOSE_WORKERS", default_value_t = 2)]
    pub workers: usize,

    /// A batch claimed by a worker that has not finished it within this many
    /// milliseconds is reclaimed by another worker.
    #[arg(long, env = "FIREHOSE_RECLAIM_MS", default_value_t = 30_000)]
    pub reclaim_ms: u64,

    /// Seconds a request owns the outbox entry of its committed write (the
    /// fan-out or follow steps it still owes) before a worker takes the work
    /// over, as it does when the request's process died or its client hung up.
    #[arg(long, env = "FIREHOSE_OUTBOX_LEASE", default_value_t = 10.0)]
    pub outbox_lease: f64,

    /// Statuses kept in the in-process cache (0 disables it).
    #[arg(long, env = "FIREHOSE_STATUS_CACHE", default_value_t = 100_000)]
    pub status_cache: usize,

    /// Homes whose first page of ids is kept in process, kept true by
    /// Redis's client-side-caching invalidations (0 disables it; never used
    /// on a Redis Cluster).
    #[arg(long, env = "FIREHOSE_HOME_CACHE", default_value_t = 50_000)]
    pub home_cache: usize,

    /// Accounts and users' relations (blocks, mutes) kept in process, kept
    /// true as the home cache is (0 disables it; never used on a Redis
    /// Cluster).
    #[arg(long, env = "FIREHOSE_VIEW_CACHE", default_value_t = 20_000)]
    pub view_cache: usize,

    /// Seconds a session found alive is trusted without asking Redis again
    /// (ended sessions are revoked at once by their events either way; this
    /// bounds how late another process's change of `private` shows). 0 asks
    /// Redis on every request.
    #[arg(long, env = "FIREHOSE_SESSION_CACHE_TTL", default_value_t = 1.0)]
    pub session_cache_ttl: f64,

    /// Milliseconds added to this process's clock when it makes status ids
    /// (tests run processes whose clocks differ; hidden from --help).
    #[arg(
        long,
        env = "FIREHOSE_CLOCK_OFFSET_MS",
        default_value_t = 0,
        allow_negative_numbers = true,
        hide = true
    )]
    pub clock_offset_ms: i64,

    /// For fault tests only: a suspension stops this long after setting
    /// the user's flag (so a test can kill the process half way).
    #[arg(
        long,
        env = "FIREHOSE_TEST_PAUSE_SUSPEND_MS",
        default_value_t = 0,
        hide = true
    )]
    pub test_pause_suspend_ms: u64,

    /// For fault tests only: ending sessions stops this long after their
    /// authority is gone, before the index and the revocation.
    #[arg(
        long,
        env = "FIREHOSE_TEST_PAUSE_SESSION_END_MS",
        default_value_t = 0,
        hide = true
    )]
    pub test_pause_session_end_ms: u64,

    /// For fault tests only: a sign-up stops this long after claiming its
    /// login, before its email.
    #[arg(
        long,
        env = "FIREHOSE_TEST_PAUSE_SIGNUP_MS",
        default_value_t = 0,
        hide = true
    )]
    pub test_pause_signup_ms: u64,

    /// For fault tests only: a write recorded in an outbox partition
    /// (every write but a sign-up) stops this long after emitting its
    /// events, before its outbox entry is retired.
    #[arg(
        long,
        env = "FIREHOSE_TEST_PAUSE_RETIRE_MS",
        default_value_t = 0,
        hide = true
    )]
    pub test_pause_retire_ms: u64,

    /// Largest request body, in bytes.
    #[arg(long, env = "FIREHOSE_BODY_LIMIT", default_value_t = 256 * 1024)]
    pub body_limit: usize,

    /// Events queued per stream connection before it is disconnected as stalled.
    #[arg(long, env = "FIREHOSE_STREAM_QUEUE", default_value_t = 1000)]
    pub stream_queue: usize,

    /// Days a deleted account's login stays reserved (409 to a sign-up or
    /// a rename) so nobody takes a name others still know; 0 frees it at once.
    #[arg(long, env = "FIREHOSE_LOGIN_RESERVATION_DAYS", default_value_t = 30)]
    pub login_reservation_days: u64,

    /// Users one user may block (then 429 `block_limit`).
    #[arg(long, env = "FIREHOSE_MAX_BLOCKS", default_value_t = 10_000)]
    pub max_blocks: usize,

    /// Users one user may mute (then 429 `mute_limit`).
    #[arg(long, env = "FIREHOSE_MAX_MUTES", default_value_t = 10_000)]
    pub max_mutes: usize,

    /// Messages one conversation keeps (then sending answers 429
    /// `conversation_full`: nothing is dropped silently).
    #[arg(
        long,
        env = "FIREHOSE_MAX_CONVERSATION_MESSAGES",
        default_value_t = 50_000
    )]
    pub max_conversation_messages: usize,

    /// Conversations one user may be in (then starting one answers 429
    /// `conversation_limit`).
    #[arg(
        long,
        env = "FIREHOSE_MAX_CONVERSATIONS_PER_USER",
        default_value_t = 1_000
    )]
    pub max_conversations_per_user: usize,

    /// Origins whose pages may call the API and open the streams from a
    /// browser (CORS): `*` (the default: the API takes bearer tokens, never
    /// cookies, so no credentials mode), or a comma-separated list of
    /// origins (`https://a.example,https://b.example`), or empty for none.
    #[arg(long, env = "FIREHOSE_CORS_ORIGINS", default_value = "*")]
    pub cors_origins: String,

    /// `serve` only: also serve the Mastodon-compatible API, on a listener
    /// of its own at this address (`--demo` turns it on at 127.0.0.1:8081).
    #[arg(long, env = "FIREHOSE_MASTODON_LISTEN")]
    pub mastodon_listen: Option<SocketAddr>,

    /// `serve` only: seed a small demo world on first start and keep it
    /// posting in this process, and let the page show it without logging in
    /// (`GET /api/v1/demo` hands out a shared read-only token).
    #[arg(long, env = "FIREHOSE_DEMO", action = clap::ArgAction::SetTrue,
          value_parser = clap::builder::BoolishValueParser::new())]
    pub demo: bool,

    /// With --demo: users in the demo world.
    #[arg(long, env = "FIREHOSE_DEMO_USERS", default_value_t = 300)]
    pub demo_users: usize,

    /// With --demo: the world's writes per second (statuses, replies, likes
    /// and reposts).
    #[arg(long, env = "FIREHOSE_DEMO_RATE", default_value_t = 4.0)]
    pub demo_rate: f64,

    /// With --demo: streams the shared read-only viewer may hold at once,
    /// over every visitor (instead of --max-streams-per-user).
    #[arg(long, env = "FIREHOSE_DEMO_VIEWER_STREAMS", default_value_t = 1000)]
    pub demo_viewer_streams: usize,

    /// Members a group may have (then joining or adding answers 429
    /// `group_full`).
    #[arg(long, env = "FIREHOSE_MAX_GROUP_MEMBERS", default_value_t = 10_000)]
    pub max_group_members: usize,

    /// Groups a user may be in or ask to join (then 429 `group_limit`).
    #[arg(long, env = "FIREHOSE_MAX_GROUPS_PER_USER", default_value_t = 500)]
    pub max_groups_per_user: usize,

    /// Open reports kept waiting for an admin (then reporting answers 429
    /// `report_queue_full`).
    #[arg(long, env = "FIREHOSE_MAX_OPEN_REPORTS", default_value_t = 100_000)]
    pub max_open_reports: usize,

    /// Audit entries kept (the oldest go first).
    #[arg(long, env = "FIREHOSE_MAX_AUDIT_ENTRIES", default_value_t = 100_000)]
    pub max_audit_entries: usize,

    /// Filter rules the hub of one process holds, over every open search
    /// stream and filter stream with rules (then such a stream answers
    /// 503 `too_many_rules_here`).
    #[arg(long, env = "FIREHOSE_MAX_STREAM_RULES", default_value_t = 2_000_000)]
    pub max_stream_rules: usize,

    /// Concurrent streams one user may hold (then 429).
    #[arg(long, env = "FIREHOSE_MAX_STREAMS_PER_USER", default_value_t = 5)]
    pub max_streams_per_user: usize,

    /// Seconds a stream's slot in that limit is leased for in Redis; each
    /// server renews its own every third of it, so the slots of a server
    /// that died are free again after at most this long.
    #[arg(long, env = "FIREHOSE_STREAM_LEASE", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub stream_lease_secs: u64,

    /// Addresses of reverse proxies (comma-separated IPs) whose
    /// `X-Forwarded-For` names the client for the per-address limits; from
    /// any other peer the header is ignored.
    #[arg(long, env = "FIREHOSE_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<std::net::IpAddr>,

    /// Seconds between SSE keep-alive comments and WebSocket pings.
    #[arg(long, env = "FIREHOSE_KEEPALIVE", default_value_t = 15)]
    pub keepalive_secs: u64,

    /// Seconds between retrainings of the `compress=zstd` dictionary on the
    /// buffer's recent public events (one process at a time; 0: never).
    #[arg(long, env = "FIREHOSE_ZSTD_RETRAIN", default_value_t = 3600)]
    pub zstd_retrain_secs: u64,

    /// Plain streams (SSE, NDJSON) coded with zstd at once in this process,
    /// each holding about 150 KiB; past it, `Accept-Encoding: zstd`
    /// clients get gzip (if they take it) or no coding.
    #[arg(long, env = "FIREHOSE_MAX_ZSTD_STREAMS", default_value_t = 1_000)]
    pub max_zstd_streams: usize,

    /// Abuse limits (sign-ups and logins per client address, writes per
    /// user): `on` or `off` (load tests and test suites that register
    /// thousands of users from one address).
    #[arg(long, env = "FIREHOSE_RATE_LIMITS", value_enum, default_value_t = Switch::On)]
    pub rate_limits: Switch,

    /// Transparent huge pages for the allocator's memory (`serve` only). On:
    /// a very large filter index (100,000 filter sets, about 1 GB) is read
    /// without page walks (random reads of 1 GiB ~1.7x faster), but every
    /// idle connection holds 2-4 KiB more. Off (the default): `serve` re-runs
    /// itself once at start with `MIMALLOC_ALLOW_THP=0` and
    /// `MIMALLOC_PURGE_DELAY=0`, because mimalloc reads its options when the
    /// process loads; values already in the environment are kept.
    #[arg(long, env = "FIREHOSE_HUGE_PAGES", value_enum, default_value_t = Switch::Off)]
    pub huge_pages: Switch,

    /// Sign-ups a minute per client address (also the burst).
    #[arg(long, env = "FIREHOSE_SIGNUPS_PER_MINUTE", default_value_t = 10)]
    pub signups_per_minute: u32,

    /// Logins a minute per client address (also the burst).
    #[arg(long, env = "FIREHOSE_LOGINS_PER_MINUTE", default_value_t = 30)]
    pub logins_per_minute: u32,

    /// Writes (posts, deletes, follows, profile changes) a minute per user
    /// (also the burst).
    #[arg(long, env = "FIREHOSE_WRITES_PER_MINUTE", default_value_t = 300)]
    pub writes_per_minute: u32,

    /// New streams (any transport) a minute per client address (also the
    /// burst); loopback peers are not counted.
    #[arg(
        long,
        env = "FIREHOSE_STREAM_CONNECTS_PER_MINUTE",
        default_value_t = 120
    )]
    pub stream_connects_per_minute: u32,

    /// Most client connections open at once (streams, WebSockets and
    /// requests alike); beyond it a new connection is answered 503 with
    /// Retry-After and closed.
    #[arg(long, env = "FIREHOSE_MAX_CONNECTIONS", default_value_t = 50_000)]
    pub max_connections: usize,

    /// Seconds a request head or body may take to arrive (and an idle
    /// kept-alive connection may wait for its next request); past it, 408.
    #[arg(
        long = "request-timeout",
        env = "FIREHOSE_REQUEST_TIMEOUT",
        default_value_t = 10.0
    )]
    pub request_timeout_secs: f64,

    /// Seconds over which the clients of a stopping server are told to
    /// come back: each stream's `disconnect` `shutdown` carries a delay
    /// drawn between a tenth of it and all of it (SSE `retry:`, JSON
    /// `retry_after_ms`, WebSocket close 1012 naming it), so a deploy does
    /// not send every client to the next server in the same second. 0: no
    /// hint.
    #[arg(long, env = "FIREHOSE_RECONNECT_SPREAD", default_value_t = 10.0)]
    pub reconnect_spread: f64,

    /// Seconds a graceful shutdown waits for connections to finish before
    /// it returns anyway.
    #[arg(long, env = "FIREHOSE_SHUTDOWN_GRACE", default_value_t = 10)]
    pub shutdown_grace_secs: u64,

    /// Seconds a connection may take no byte of what is written to it
    /// before it is closed (a stream's client: `stall`).
    #[arg(long, env = "FIREHOSE_WRITE_TIMEOUT", default_value_t = 60)]
    pub write_timeout_secs: u64,

    /// Log format.
    #[arg(long, env = "FIREHOSE_LOG_FORMAT", value_enum, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,
}

impl Config {
    /// How long a request head or body may take to arrive (at least 10 ms).
    pub fn request_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.request_timeout_secs.clamp(0.01, 3600.0))
    }

    /// The keep-alive period (and WebSocket ping period).
    pub fn keepalive(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.keepalive_secs.max(1))
    }

    /// A configuration with every default, for tests and tools.
    pub fn defaults() -> Config {
        Cli::parse_from(["firehose", "serve"]).into_config()
    }

    /// The configured JWT secret, if one is (else the store generates one
    /// at first start and keeps it in Redis: `Sessions::jwt_secret`).
    pub fn jwt_secret(&self) -> Option<&str> {
        self.jwt_secret.as_deref().filter(|s| !s.is_empty())
    }
}

impl Cli {
    /// The `Config` of whichever subcommand was given.
    pub fn into_config(self) -> Config {
        match self.command {
            Command::Serve(c) | Command::Worker(c) | Command::Check(c) => c,
            Command::Token(t) => t.config,
            Command::Demo(d) => d.config,
            Command::Tail(_) => Config::defaults(),
        }
    }
}

/// `firehose token`.
#[derive(Debug, Clone, Args)]
pub struct TokenArgs {
    /// The user the token is for.
    #[arg(long)]
    pub user: u64,
    /// Scopes to grant (repeatable): read, write, firehose.
    #[arg(long = "scope", default_values_t = vec!["read".to_string(), "write".to_string()])]
    pub scopes: Vec<String>,
    /// Also mark the user so that their own logins get the firehose scope.
    #[arg(long)]
    pub grant_firehose: bool,
    /// Shared settings.
    #[command(flatten)]
    pub config: Config,
}

/// `firehose demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Users to create (celebrities get ~90 % of them as followers).
    #[arg(long, default_value_t = 12_000)]
    pub users: usize,
    /// Accounts with many followers (each followed by most users).
    #[arg(long, default_value_t = 3)]
    pub celebrities: usize,
    /// Statuses posted per second once the world is seeded (0 to stop after seeding).
    #[arg(long, default_value_t = 5.0)]
    pub rate: f64,
    /// Shared settings.
    #[command(flatten)]
    pub config: Config,
}
