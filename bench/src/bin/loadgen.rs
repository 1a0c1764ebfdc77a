//! Load generator: N stream clients against a running server, events driven
//! by raw XADD+PUBLISH (the same atomic emit the server uses) or by POSTs.
//!
//! Reports delivered events/s, loss, p50/p99 latency from publish to receipt,
//! server RSS per connection and server CPU time per delivered event (read
//! from /proc, so the load generator sharing the cores does not blur it).
//!
//! ```sh
//! ulimit -n 65536                      # in both shells
//! cargo run --release -- serve --max-streams-per-user 100000
//! cargo run --release -p firehose-bench --bin loadgen -- --clients 1000 --rate 1000 --duration 20
//! cargo run --release -p firehose-bench --bin loadgen -- --clients 10000 --rate 0 --duration 5   # idle RSS
//! cargo run --release -p firehose-bench --bin loadgen -- --clients 200 --transport ws --rate 500
//! ```

// Examples are command-line programs: printing is their output.
#![allow(clippy::print_stdout)]

use clap::{Parser, ValueEnum};
use firehose_bench::procfs::{find_server, own_cpu};
use firehose_bench::Transport;

/// (CPU seconds, RSS KiB) of a process.
fn procfs_pair(pid: u32) -> Option<(f64, u64)> {
    firehose_bench::procfs::stats(pid).map(|s| (s.cpu, s.rss_kib))
}
use firehose::config::Config;
use firehose::store::Store;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

#[derive(Clone, Copy, PartialEq, ValueEnum, Debug)]
enum Mode {
    /// XADD+PUBLISH straight into Redis (measures the streaming path only).
    Publish,
    /// POST /api/v1/statuses (measures the whole write path too).
    Post,
}

#[derive(Parser, Debug)]
struct Args {
    /// Server address.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: String,
    /// Redis URL of the server.
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// The server's Redis Cluster seed nodes (comma-separated), if it runs on one.
    #[arg(long, env = "FIREHOSE_REDIS_CLUSTER")]
    redis_cluster: Option<String>,
    /// The server's JWT secret (default: the one the server generated and keeps in Redis).
    #[arg(long, env = "FIREHOSE_JWT_SECRET")]
    jwt_secret: Option<String>,
    /// The server's key prefix.
    #[arg(long, default_value = "fh")]
    key_prefix: String,
    /// Concurrent stream clients (firehose stream).
    #[arg(long, default_value_t = 1000)]
    clients: usize,
    /// The SSE clients' stream path, with its query (default: the
    /// firehose); e.g. `/api/v1/stream/sample?rate=1`.
    #[arg(long)]
    path: Option<String>,
    /// The SSE clients' server address, when it is not `--addr` (the
    /// Mastodon-compatible listener, whose `/api/v1/streaming/public`
    /// messages carry `created_at` for the latency).
    #[arg(long)]
    stream_addr: Option<String>,
    /// SSE or WebSocket.
    #[arg(long, value_enum, default_value_t = Transport::Sse)]
    transport: Transport,
    /// Events per second (0: idle clients only, to measure memory).
    #[arg(long, default_value_t = 1000.0)]
    rate: f64,
    /// How events are produced.
    #[arg(long, value_enum, default_value_t = Mode::Publish)]
    mode: Mode,
    /// Seconds of load.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// The server's pid (default: found in /proc by its command line).
    #[arg(long)]
    server_pid: Option<u32>,
    /// Redis's pid, for the CPU split (server, generator, Redis).
    #[arg(long)]
    redis_pid: Option<u32>,
    /// Ask for compressed streams: SSE with `Accept-Encoding: gzip`,
    /// WebSocket offering permessage-deflate (a raw client that inflates).
    #[arg(long)]
    compress: bool,
    /// WebSocket with `compress=zstd`: each event a zstd frame of the
    /// shared dictionary (fetched once), decoded by the client.
    #[arg(long)]
    zstd: bool,
    /// Seconds to keep the clients connected after the run (another
    /// generator may load them meanwhile: one process per transport).
    #[arg(long, default_value_t = 0.0)]
    hold: f64,
    /// Seconds to measure the server's CPU with every client idle, once
    /// connected (0: skip).
    #[arg(long, default_value_t = 0.0)]
    idle_secs: f64,
    /// The WebSocket client: `raw` reads frames off the socket as the SSE
    /// client reads lines (the generator's least CPU per message, so that
    /// on shared cores latency is the server's, not the generator's);
    /// `tungstenite` is tokio-tungstenite's client (the figures before
    /// 2026-11-24 were taken with it).
    #[arg(long, value_enum, default_value_t = WsClient::Raw)]
    ws_client: WsClient,
    /// Relations each load user holds before its streams open: this many
    /// blocks of users who post nothing, written straight into its `hide`
    /// HASH (one Redis only), so every delivery pays the hub's check of
    /// the viewer's relations against a map of this size.
    #[arg(long, default_value_t = 0)]
    blocks_per_viewer: u64,
    /// WebSocket (raw client): every this many seconds (staggered over the
    /// clients) each client logs in again (a new session) and sends
    /// `{"type":"refresh","token"}` on its socket. 0: never.
    #[arg(long, default_value_t = 0.0)]
    refresh_secs: f64,
    /// With --refresh-secs: the tokens' lifetime, seconds (short, so that a
    /// refresh that did not take would end the stream with `expired`).
    #[arg(long, default_value_t = 90)]
    token_ttl: u64,
    /// Split the firehose: client i reads partition i mod N + 1 of N, so
    /// every N clients together get each event once (use a multiple of N
    /// clients; the expected deliveries are divided by N).
    #[arg(long, default_value_t = 1)]
    partitions: usize,
}

/// What a client needs to log in again and refresh its socket's token.
struct Refresher {
    store: Store,
    jwt: firehose::auth::Jwt,
    ttl: u64,
    every: Duration,
}

impl Refresher {
    /// A new session of `uid` and its token.
    async fn token(&self, uid: u64) -> Option<String> {
        let sid = self
            .store
            .sessions()
            .create(uid, firehose::model::now())
            .await
            .ok()?;
        Some(
            self.jwt
                .mint(uid, &sid, &["read", "write", "firehose"], self.ttl)
                .0,
        )
    }
}

/// What a raw WebSocket client asks of its stream.
struct WsAsks {
    /// Offer permessage-deflate.
    deflate: bool,
    /// `compress=zstd`, decoded with this dictionary.
    dict: Option<Arc<Vec<u8>>>,
    /// Refresh the token: how, as which user, and when first.
    refresh: Option<(Arc<Refresher>, u64, Duration)>,
    /// The partition's query (`partition=k&partitions=N`), or empty.
    part: String,
}

/// A client's text frame (masked with a zero mask, so the payload goes as is).
fn client_text_frame(payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x81];
    match payload.len() {
        n if n < 126 => f.push(0x80 | n as u8),
        n => {
            f.push(0x80 | 126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
    }
    f.extend_from_slice(&[0, 0, 0, 0]);
    f.extend_from_slice(payload);
    f
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum WsClient {
    Raw,
    Tungstenite,
}

/// Seconds since the epoch of an ISO 8601 UTC time with milliseconds
/// (`2026-12-06T14:10:08.123Z`), as Mastodon's `created_at`.
fn iso_secs(t: &str) -> Option<f64> {
    let n = |r: std::ops::Range<usize>| t.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (hh, mm, ss, ms) = (n(11..13)?, n(14..16)?, n(17..19)?, n(20..23)?);
    // Howard Hinnant's days_from_civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + hh * 3600 + mm * 60 + ss) as f64 + ms as f64 / 1000.0)
}

/// Latency of one `data:` line in µs, from its "at" field (publish time),
/// or a Mastodon status's `created_at` (its posting, to the millisecond).
fn latency_us(line: &str, now: f64) -> Option<u32> {
    if !line.contains("\"at\":") {
        // The status's own, after its account's (keys in order: the
        // account's object comes first).
        let rest = &line[line.rfind("\"created_at\":\"")? + 14..];
        let at = iso_secs(rest.get(..24)?)?;
        return Some(((now - at).max(0.0) * 1e6) as u32);
    }
    let rest = &line[line.find("\"at\":")? + 5..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-'))
        .unwrap_or(rest.len());
    let at: f64 = rest[..end].parse().ok()?;
    Some(((now - at).max(0.0) * 1e6) as u32)
}

struct Counters {
    received: AtomicU64,
    connected: AtomicU64,
    /// Bytes read off the sockets (compressed, when compressed).
    wire_bytes: AtomicU64,
    /// Refresh messages sent, and `refreshed` answers.
    refreshes: AtomicU64,
    refreshed: AtomicU64,
    /// Sockets that ended (or were refused) before the run stopped them,
    /// and `disconnect` messages seen: each would be a reconnect.
    ended_early: AtomicU64,
    disconnects: AtomicU64,
}

/// Counts one received event and keeps its latency (up to a cap per client).
fn record(text: &str, now: f64, counters: &Counters, lat: &mut Vec<u32>) {
    if let Some(l) = latency_us(text, now) {
        counters.received.fetch_add(1, Ordering::Relaxed);
        if lat.len() < 50_000 {
            lat.push(l);
        }
    }
}

/// Reads what the socket has (counting its bytes); `None` at the end, on
/// an error or when the run stops.
async fn read_some(
    sock: &mut tokio::net::TcpStream,
    buf: &mut [u8],
    stop: &mut watch::Receiver<bool>,
    counters: &Counters,
) -> Option<usize> {
    let n = tokio::select! {
        _ = stop.changed() => return None,
        r = sock.read(buf) => match r {
            Ok(n) if n > 0 => n,
            _ => return None,
        },
    };
    counters.wire_bytes.fetch_add(n as u64, Ordering::Relaxed);
    Some(n)
}

async fn sse_client(
    addr: String,
    token: String,
    counters: Arc<Counters>,
    mut stop: watch::Receiver<bool>,
    compress: bool,
    part: String,
    path: Option<String>,
) -> Vec<u32> {
    use std::io::Write;
    let mut lat = Vec::new();
    let gzip = if compress {
        "Accept-Encoding: gzip\r\n"
    } else {
        ""
    };
    let path = match (path, part.as_str()) {
        (Some(path), _) => path,
        (None, "") => "/api/v1/stream/firehose".to_string(),
        (None, q) => format!("/api/v1/stream/firehose?{q}"),
    };
    let Some(mut sock) = firehose_bench::sse::open(&addr, &path, &token, gzip).await else {
        return lat;
    };
    counters.connected.fetch_add(1, Ordering::Relaxed);
    let mut buf = vec![0u8; 64 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    // Compressed: the body after the head goes through a gzip decoder.
    let mut head_done = false;
    let mut gz = flate2::write::GzDecoder::new(Vec::new());
    // An HTTP/1.1 answer's body is chunked: undone before the decoder.
    let mut chunked = false;
    let (mut raw, mut plain) = (Vec::new(), Vec::new());
    loop {
        let Some(n) = read_some(&mut sock, &mut buf, &mut stop, &counters).await else {
            break;
        };
        if !compress {
            pending.extend_from_slice(&buf[..n]);
        } else {
            let body: std::borrow::Cow<'_, [u8]> = if head_done {
                buf[..n].into()
            } else {
                pending.extend_from_slice(&buf[..n]);
                let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") else {
                    continue;
                };
                let body = pending.split_off(end + 4);
                let head = String::from_utf8_lossy(&pending).to_ascii_lowercase();
                chunked = head.contains("transfer-encoding: chunked");
                pending.clear();
                head_done = true;
                body.into()
            };
            plain.clear();
            if chunked {
                raw.extend_from_slice(&body);
                firehose::stream::wire::chunked::dechunk(&mut raw, &mut plain);
            } else {
                plain.extend_from_slice(&body);
            }
            if gz.write_all(&plain).and_then(|_| gz.flush()).is_err() {
                break;
            }
            pending.append(gz.get_mut());
        }
        let now = firehose::model::now();
        let mut start = 0;
        while let Some(pos) = pending[start..].iter().position(|b| *b == b'\n') {
            let line = &pending[start..start + pos];
            if line.starts_with(b"data: {\"id\"") || line.starts_with(b"data: {\"account\"") {
                if let Ok(text) = std::str::from_utf8(line) {
                    record(text, now, &counters, &mut lat);
                }
            }
            start += pos + 1;
        }
        pending.drain(..start);
    }
    lat
}

async fn ws_client(
    addr: String,
    token: String,
    counters: Arc<Counters>,
    mut stop: watch::Receiver<bool>,
) -> Vec<u32> {
    use futures::StreamExt;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut lat = Vec::new();
    let Ok(mut req) = format!("ws://{addr}/api/v1/stream/firehose").into_client_request() else {
        return lat;
    };
    req.headers_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("header"),
    );
    let Ok((mut ws, _)) = tokio_tungstenite::connect_async(req).await else {
        return lat;
    };
    counters.connected.fetch_add(1, Ordering::Relaxed);
    loop {
        let msg = tokio::select! {
            _ = stop.changed() => break,
            m = ws.next() => match m {
                Some(Ok(m)) => m,
                _ => break,
            },
        };
        if let tokio_tungstenite::tungstenite::Message::Text(t) = msg {
            if t.as_str().starts_with("{\"id\"") {
                record(t.as_str(), firehose::model::now(), &counters, &mut lat);
            }
        }
    }
    lat
}

/// A WebSocket client on a raw socket: reads server frames (offering
/// permessage-deflate when `deflate`, and inflating compressed frames with a
/// fresh window: the server negotiates no context takeover), answers pings.
async fn ws_raw_client(
    addr: String,
    token: String,
    counters: Arc<Counters>,
    mut stop: watch::Receiver<bool>,
    asks: WsAsks,
) -> Vec<u32> {
    let WsAsks {
        deflate,
        dict,
        refresh,
        part,
    } = asks;
    let mut next_refresh = refresh
        .as_ref()
        .map(|(r, _, first)| tokio::time::Instant::now() + *first.min(&r.every));
    let mut unzstd = dict
        .as_ref()
        .and_then(|d| zstd::bulk::Decompressor::with_dictionary(d).ok());
    let mut lat = Vec::new();
    let Ok(mut sock) = tokio::net::TcpStream::connect(&addr).await else {
        return lat;
    };
    let offer = if deflate {
        "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"
    } else {
        ""
    };
    let asks: Vec<&str> = [
        unzstd.is_some().then_some("compress=zstd"),
        Some(part.as_str()),
    ]
    .into_iter()
    .flatten()
    .filter(|q| !q.is_empty())
    .collect();
    let query = match asks.is_empty() {
        true => String::new(),
        false => format!("?{}", asks.join("&")),
    };
    let req = format!("GET /api/v1/stream/firehose{query} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{offer}\r\n");
    if sock.write_all(req.as_bytes()).await.is_err() {
        return lat;
    }
    let mut buf = vec![0u8; 64 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    let mut head_done = false;
    let mut inflated = Vec::new();
    loop {
        let due = next_refresh
            .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86_400));
        let read = tokio::select! {
            n = read_some(&mut sock, &mut buf, &mut stop, &counters) => n,
            _ = tokio::time::sleep_until(due), if next_refresh.is_some() => {
                if let Some((r, uid, _)) = &refresh {
                    next_refresh = Some(due + r.every);
                    if let Some(token) = r.token(*uid).await {
                        let msg = serde_json::json!({"type": "refresh", "token": token}).to_string();
                        if sock.write_all(&client_text_frame(msg.as_bytes())).await.is_ok() {
                            counters.refreshes.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                continue;
            }
        };
        let Some(n) = read else {
            if !*stop.borrow() {
                counters.ended_early.fetch_add(1, Ordering::Relaxed);
            }
            break;
        };
        pending.extend_from_slice(&buf[..n]);
        if !head_done {
            let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            let head = String::from_utf8_lossy(&pending[..end]);
            if !head.starts_with("HTTP/1.1 101") {
                eprintln!("the server refused the upgrade: {head}");
                return lat;
            }
            if deflate && !head.contains("permessage-deflate") {
                eprintln!("the server did not take permessage-deflate");
                return lat;
            }
            pending.drain(..end + 4);
            head_done = true;
            counters.connected.fetch_add(1, Ordering::Relaxed);
        }
        let now = firehose::model::now();
        loop {
            if pending.len() < 2 {
                break;
            }
            let (len, at) = match pending[1] & 0x7f {
                126 if pending.len() >= 4 => {
                    (u16::from_be_bytes([pending[2], pending[3]]) as usize, 4)
                }
                127 if pending.len() >= 10 => (
                    u64::from_be_bytes(pending[2..10].try_into().expect("8 bytes")) as usize,
                    10,
                ),
                126 | 127 => break,
                n => (n as usize, 2),
            };
            if pending.len() < at + len {
                break;
            }
            let (opcode, rsv1) = (pending[0] & 0x0f, pending[0] & 0x40 != 0);
            let payload = &pending[at..at + len];
            match opcode {
                0x1 if rsv1 => {
                    let mut data = payload.to_vec();
                    data.extend_from_slice(&[0, 0, 0xff, 0xff]);
                    let mut d = flate2::Decompress::new(false);
                    inflated.clear();
                    inflated.reserve(len * 8 + 256);
                    if d.decompress_vec(&data, &mut inflated, flate2::FlushDecompress::Sync)
                        .is_ok()
                    {
                        if let Ok(text) = std::str::from_utf8(&inflated) {
                            if text.starts_with("{\"id\"") {
                                record(text, now, &counters, &mut lat);
                            }
                        }
                    }
                }
                0x2 => {
                    if let Some(z) = unzstd.as_mut() {
                        if let Ok(json) = z.decompress(payload, 1 << 20) {
                            if let Ok(text) = std::str::from_utf8(&json) {
                                if text.starts_with("{\"id\"") {
                                    record(text, now, &counters, &mut lat);
                                }
                            }
                        }
                    }
                }
                0x1 => {
                    if let Ok(text) = std::str::from_utf8(payload) {
                        if text.starts_with("{\"id\"") {
                            record(text, now, &counters, &mut lat);
                        } else if text.starts_with("{\"type\":\"refreshed\"") {
                            counters.refreshed.fetch_add(1, Ordering::Relaxed);
                        } else if text.starts_with("{\"type\":\"disconnect\"") {
                            counters.disconnects.fetch_add(1, Ordering::Relaxed);
                            eprintln!("disconnect: {text}");
                        } else if text.contains("\"error\"") {
                            eprintln!("{text}");
                        }
                    }
                }
                0x9 => {
                    // A pong, masked with a zero mask.
                    let mut pong = vec![0x8A, 0x80 | len as u8, 0, 0, 0, 0];
                    pong.extend_from_slice(payload);
                    let _ = sock.write_all(&pong).await;
                }
                0x8 => return lat,
                _ => {}
            }
            pending.drain(..at + len);
        }
    }
    lat
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut cfg = Config::defaults();
    cfg.redis_url = Some(args.redis_url.clone());
    cfg.redis_cluster = args.redis_cluster.clone();
    cfg.key_prefix = args.key_prefix.clone();
    cfg.jwt_secret = args.jwt_secret.clone();
    let store = Store::open(&args.redis_url, &cfg)?;
    let secret = store.sessions().jwt_secret(cfg.jwt_secret()).await?;
    let jwt = firehose::auth::Jwt::new(&secret);
    let pid = args.server_pid.or_else(find_server);

    // One load user per 5 clients (the default per-user stream limit).
    let n_users = args.clients.div_ceil(5).max(1);
    let tokens = firehose_bench::users::tokens(&store, &jwt, "loadgen_", n_users).await?;
    if args.blocks_per_viewer > 0 {
        let client = redis::Client::open(args.redis_url.as_str())?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        for (uid, _) in &tokens {
            let key = store.keys().hide(*uid);
            let mut cmd = redis::cmd("HSET");
            cmd.arg(&key).arg("seq").arg(args.blocks_per_viewer);
            for k in 1..=args.blocks_per_viewer {
                cmd.arg(1_000_000_000 + k).arg(format!("1:{k}"));
            }
            let _: () = cmd.query_async(&mut conn).await?;
        }
        println!(
            "{} load users hold {} blocks each",
            tokens.len(),
            args.blocks_per_viewer
        );
    }
    let before = pid.and_then(procfs_pair);
    let counters = Arc::new(Counters {
        received: AtomicU64::new(0),
        connected: AtomicU64::new(0),
        wire_bytes: AtomicU64::new(0),
        refreshes: AtomicU64::new(0),
        refreshed: AtomicU64::new(0),
        ended_early: AtomicU64::new(0),
        disconnects: AtomicU64::new(0),
    });
    let refresher = (args.refresh_secs > 0.0).then(|| {
        Arc::new(Refresher {
            store: store.clone(),
            jwt: firehose::auth::Jwt::new(&secret),
            ttl: args.token_ttl,
            every: Duration::from_secs_f64(args.refresh_secs),
        })
    });
    let dict = match args.zstd {
        true => Some(Arc::new(
            reqwest::get(format!(
                "http://{}/api/v1/stream/zstd-dictionary",
                args.addr
            ))
            .await?
            .error_for_status()?
            .bytes()
            .await?
            .to_vec(),
        )),
        false => None,
    };
    let connect_start = Instant::now();
    let connect_by = connect_start + Duration::from_secs(60);
    let (stop_tx, stop) = watch::channel(false);
    let mut clients = Vec::new();
    for i in 0..args.clients {
        let (uid, mut token) = tokens[i / 5 % tokens.len()].clone();
        // Refreshing clients each start on a session of their own, whose
        // token lives --token-ttl; their first refresh is staggered.
        let refresh = match &refresher {
            Some(r) => {
                token = r.token(uid).await.unwrap_or(token);
                let first = r.every.mul_f64((i as f64 + 0.5) / args.clients as f64);
                Some((r.clone(), uid, first))
            }
            None => None,
        };
        let addr = args
            .stream_addr
            .clone()
            .unwrap_or_else(|| args.addr.clone());
        let c = counters.clone();
        let part = match args.partitions {
            0 | 1 => String::new(),
            n => format!("partition={}&partitions={n}", i % n + 1),
        };
        clients.push(match args.transport {
            Transport::Sse => tokio::spawn(sse_client(
                addr,
                token,
                c,
                stop.clone(),
                args.compress,
                part,
                args.path.clone(),
            )),
            Transport::Ws
                if args.ws_client == WsClient::Tungstenite
                    && !args.compress
                    && !args.zstd
                    && args.partitions <= 1 =>
            {
                tokio::spawn(ws_client(addr, token, c, stop.clone()))
            }
            Transport::Ws => {
                let dict = dict.clone();
                tokio::spawn(ws_raw_client(
                    addr,
                    token,
                    c,
                    stop.clone(),
                    WsAsks {
                        deflate: args.compress,
                        dict,
                        refresh,
                        part,
                    },
                ))
            }
        });
        if i % 500 == 499 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    while (counters.connected.load(Ordering::Relaxed) as usize) < args.clients
        && Instant::now() < connect_by
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let connecting = connect_start.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = pid.and_then(procfs_pair);
    let connected = counters.connected.load(Ordering::Relaxed);
    println!(
        "clients connected: {connected}/{} ({:?}) in {connecting:.1}s ({:.0} new connections/s, paced 500 per 20 ms)",
        args.clients,
        args.transport,
        connected as f64 / connecting.max(0.001)
    );
    // Server CPU while every client idles (keep-alives only).
    if let Some((c0, _)) = pid.and_then(procfs_pair).filter(|_| args.idle_secs > 0.0) {
        tokio::time::sleep(Duration::from_secs_f64(args.idle_secs)).await;
        if let Some((c1, _)) = pid.and_then(procfs_pair) {
            println!(
                "server CPU while idle: {:.1} ms/s over {:.0}s",
                (c1 - c0) * 1000.0 / args.idle_secs,
                args.idle_secs
            );
        }
    }
    if let (Some((_, r0)), Some((_, r1))) = (before, idle) {
        println!(
            "server RSS: {r0} KiB before, {r1} KiB with clients idle: {:.2} KiB per connection",
            (r1 as f64 - r0 as f64) / connected.max(1) as f64
        );
    }
    let mut published = 0u64;
    if args.rate > 0.0 {
        let start = Instant::now();
        let base = counters.received.load(Ordering::Relaxed);
        let cpu0 = pid.and_then(procfs_pair).map(|s| s.0);
        let bytes0 = counters.wire_bytes.load(Ordering::Relaxed);
        let (own0, redis0) = (own_cpu(), args.redis_pid.and_then(procfs_pair).map(|s| s.0));
        let tick = Duration::from_millis(10);
        let per_tick = args.rate / 100.0;
        let mut owed = 0.0;
        let mut interval = tokio::time::interval(tick);
        let http = reqwest::Client::new();
        let poster = tokens[0].1.clone();
        while start.elapsed().as_secs_f64() < args.duration {
            interval.tick().await;
            owed += per_tick;
            let mut batch = Vec::new();
            while owed >= 1.0 {
                owed -= 1.0;
                published += 1;
                let (store, http, poster, addr) = (
                    store.clone(),
                    http.clone(),
                    poster.clone(),
                    args.addr.clone(),
                );
                let n = published;
                batch.push(tokio::spawn(async move {
                    let now = firehose::model::now();
                    match args.mode {
                        Mode::Publish => {
                            let body = serde_json::json!({"type": "status", "at": now, "status": {"id": n.to_string(), "uid": "1", "login": "load", "message": format!("load event {n}"), "posted": now, "hashtags": [], "mentions": []}});
                            let _ = store.events().emit(&firehose::store::events::Body::from_json(body.to_string())).await;
                        }
                        Mode::Post => {
                            let _ = http.post(format!("http://{addr}/api/v1/statuses")).bearer_auth(poster).json(&serde_json::json!({"message": format!("load event {n}")})).send().await;
                        }
                    }
                }));
            }
            for b in batch {
                let _ = b.await;
            }
        }
        // Let the last events arrive.
        let expected = published * connected / args.partitions.max(1) as u64;
        let drain_until = Instant::now() + Duration::from_secs(5);
        while counters.received.load(Ordering::Relaxed) - base < expected
            && Instant::now() < drain_until
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let elapsed = start.elapsed().as_secs_f64();
        let received = counters.received.load(Ordering::Relaxed) - base;
        let cpu1 = pid.and_then(procfs_pair).map(|s| s.0);
        let bytes = counters.wire_bytes.load(Ordering::Relaxed) - bytes0;
        let (own1, redis1) = (own_cpu(), args.redis_pid.and_then(procfs_pair).map(|s| s.0));
        println!(
            "published {published} events at {:.0}/s for {:.1}s ({:?} mode)",
            args.rate, args.duration, args.mode
        );
        println!(
            "delivered {received} of {expected} ({:.0} events/s); lost {} ({:.4}%)",
            received as f64 / elapsed,
            expected.saturating_sub(received),
            100.0 * expected.saturating_sub(received) as f64 / expected.max(1) as f64
        );
        if let (Some(c0), Some(c1)) = (cpu0, cpu1) {
            println!(
                "server CPU: {:.2}s, {:.2} µs per delivered event",
                c1 - c0,
                (c1 - c0) * 1e6 / received.max(1) as f64
            );
        }
        println!(
            "wire bytes: {bytes} ({:.1} per delivered event{})",
            bytes as f64 / received.max(1) as f64,
            if args.zstd {
                ", zstd"
            } else if args.compress {
                ", compressed"
            } else {
                ""
            }
        );
        let span = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| format!("{:.2}s", b - a));
        println!(
            "CPU split over {elapsed:.1}s: server {}, generator {}, redis {}",
            span(cpu0, cpu1).unwrap_or_else(|| "?".into()),
            span(own0, own1).unwrap_or_else(|| "?".into()),
            span(redis0, redis1).unwrap_or_else(|| "? (--redis-pid)".into()),
        );
    }
    if args.hold > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(args.hold)).await;
    }
    let _ = stop_tx.send(true);
    let mut lat: Vec<u32> = Vec::new();
    for c in clients {
        lat.extend(c.await.unwrap_or_default());
    }
    if refresher.is_some() {
        println!(
            "refreshes sent {}, answered refreshed {}; sockets ended early {}, disconnects {}",
            counters.refreshes.load(Ordering::Relaxed),
            counters.refreshed.load(Ordering::Relaxed),
            counters.ended_early.load(Ordering::Relaxed),
            counters.disconnects.load(Ordering::Relaxed)
        );
    }
    if !lat.is_empty() {
        lat.sort_unstable();
        let q = |p: f64| lat[((lat.len() - 1) as f64 * p) as usize] as f64 / 1000.0;
        println!(
            "latency publish->receipt: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} samples)",
            q(0.5),
            q(0.99),
            q(1.0),
            lat.len()
        );
    }
    Ok(())
}
