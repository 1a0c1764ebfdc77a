//! Bytes on the wire per event with `compress=zstd` against plain JSON, on
//! whatever traffic the server carries (`serve --demo`'s world) or on the
//! bench template (`--post N`: N statuses "load event n" posted here):
//! two firehose WebSockets side by side, one plain and one zstd, the same
//! events on each; every zstd frame decoded and checked against the plain
//! message.
//!
//!   firehose serve --demo ... & zstd_ratio --addr 127.0.0.1:8080 --events 2000
//!   zstd_ratio --addr 127.0.0.1:8080 --post 2000

// A measurement tool: its figures go to stdout.
#![allow(clippy::print_stdout)]

use clap::Parser;
use futures::StreamExt;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

#[derive(Parser, Debug)]
struct Args {
    /// Server address.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: String,
    /// Redis URL of the server.
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// The server's key prefix.
    #[arg(long, default_value = "fh")]
    key_prefix: String,
    /// Events to measure (status events only: the demo's likes and
    /// follows are counted apart).
    #[arg(long, default_value_t = 2000)]
    events: usize,
    /// Post this many template statuses (the bench template) instead of
    /// reading the server's own traffic.
    #[arg(long, default_value_t = 0)]
    post: usize,
}

/// A socket quiet this long has given what it has.
const IDLE: std::time::Duration = std::time::Duration::from_secs(5);

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn open(addr: &str, query: &str, token: &str) -> anyhow::Result<Ws> {
    let mut req = format!("ws://{addr}/api/v1/stream/firehose{query}").into_client_request()?;
    req.headers_mut()
        .insert("authorization", format!("Bearer {token}").parse()?);
    Ok(tokio_tungstenite::connect_async(req).await?.0)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let (store, jwt) = firehose_bench::users::open_store(&args.redis_url, &args.key_prefix).await?;
    let token = firehose_bench::users::tokens(&store, &jwt, "zratio_", 1)
        .await?
        .remove(0)
        .1;
    // Reading the server's traffic: both replay the same newest events
    // (`count`), then go live.
    let backfill = match args.post {
        0 => format!("count={}", args.events.min(1000)),
        _ => String::new(),
    };
    let (mut plain, mut zstd) = (
        open(&args.addr, &format!("?{backfill}"), &token).await?,
        open(&args.addr, &format!("?compress=zstd&{backfill}"), &token).await?,
    );
    let base = format!("http://{}", args.addr);
    let http = reqwest::Client::new();
    let mut dicts: std::collections::HashMap<u32, Vec<u8>> = Default::default();
    if args.post > 0 {
        let (http, base, token, n) = (http.clone(), base.clone(), token.clone(), args.post);
        tokio::spawn(async move {
            for i in 0..n {
                let _ = http
                    .post(format!("{base}/api/v1/statuses"))
                    .bearer_auth(&token)
                    .json(&serde_json::json!({"message": format!("load event {i}")}))
                    .send()
                    .await;
            }
        });
    }
    let want = if args.post > 0 {
        args.post
    } else {
        args.events
    };
    // Each socket read in its own task (both see the same events, the
    // plain one perhaps from a little earlier): matched by event id.
    let plain = tokio::spawn(async move {
        let mut got = Vec::new();
        while got.len() < want {
            let next = tokio::time::timeout(IDLE, plain.next()).await;
            let Ok(next) = next else { break };
            match next {
                Some(Ok(Message::Text(t))) if t.as_str().starts_with("{\"id\"") => {
                    got.push(t.as_bytes().to_vec())
                }
                Some(Ok(_)) => {}
                _ => break,
            }
        }
        got
    });
    let zstd_task = tokio::spawn(async move {
        let mut got = Vec::new();
        while got.len() < want {
            let next = tokio::time::timeout(IDLE, zstd.next()).await;
            let Ok(next) = next else { break };
            match next {
                Some(Ok(Message::Binary(b))) => got.push(b.to_vec()),
                Some(Ok(_)) => {}
                _ => break,
            }
        }
        got
    });
    let id_of = |json: &[u8]| -> Option<String> {
        let v: serde_json::Value = serde_json::from_slice(json).ok()?;
        Some(v["id"].as_str()?.to_string())
    };
    let plain: std::collections::HashMap<String, Vec<u8>> = plain
        .await?
        .into_iter()
        .filter_map(|p| Some((id_of(&p)?, p)))
        .collect();
    let (mut json_bytes, mut zstd_bytes, mut n, mut other) = (0usize, 0usize, 0usize, 0usize);
    let (mut all_json, mut all_zstd) = (0usize, 0usize);
    for z in zstd_task.await? {
        let id = zstd::zstd_safe::get_dict_id_from_frame(&z).map_or(0, |i| i.get());
        if let std::collections::hash_map::Entry::Vacant(e) = dicts.entry(id) {
            let bytes = http
                .get(format!("{base}/api/v1/stream/zstd-dictionary?id={id}"))
                .send()
                .await?
                .error_for_status()?
                .bytes()
                .await?;
            e.insert(bytes.to_vec());
        }
        let decoded =
            zstd::bulk::Decompressor::with_dictionary(&dicts[&id])?.decompress(&z, 1 << 20)?;
        let Some(p) = id_of(&decoded).and_then(|id| plain.get(&id)) else {
            continue;
        };
        all_json += p.len();
        all_zstd += z.len();
        anyhow::ensure!(
            &decoded == p,
            "a frame decodes to the plain message:\n{}\n{}",
            String::from_utf8_lossy(&decoded),
            String::from_utf8_lossy(p)
        );
        if String::from_utf8_lossy(p).contains("\"type\":\"status\"") {
            json_bytes += p.len();
            zstd_bytes += z.len();
            n += 1;
        } else {
            other += 1;
        }
    }
    if n + other == 0 {
        println!("no events yet (the dictionary is loaded)");
        return Ok(());
    }
    println!(
        "{} events: JSON {:.1} bytes per event, zstd {:.1} ({:.3} of the JSON); of them {n} statuses ({other} others): JSON {:.1}, zstd {:.1} ({:.3}); dictionaries {:?}",
        n + other,
        all_json as f64 / (n + other) as f64,
        all_zstd as f64 / (n + other) as f64,
        all_zstd as f64 / all_json as f64,
        json_bytes as f64 / n as f64,
        zstd_bytes as f64 / n as f64,
        zstd_bytes as f64 / json_bytes as f64,
        dicts.keys().collect::<Vec<_>>()
    );
    Ok(())
}
