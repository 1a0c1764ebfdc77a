//! A WebSocket client of the multiplexed stream that changes what it tracks
//! while connected: it subscribes to a filter, and after `--switch-after`
//! seconds (or events) replaces it with another and adds its user stream.
//!
//! ```sh
//! TOKEN=$(curl -s -X POST localhost:8080/api/v1/sessions -d '{"identifier":"ada","password":"..."}' | sed 's/.*"token":"\([^"]*\)".*/\1/')
//! cargo run --example ws_client -- --token "$TOKEN" --track rust --then-track redis,tokio
//! ```

// Examples are command-line programs: printing is their output.
#![allow(clippy::print_stdout)]

use clap::Parser;
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::{client::IntoClientRequest, Message};

#[derive(Parser)]
struct Args {
    /// Server address.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: String,
    /// Bearer token.
    #[arg(long, env = "TOKEN")]
    token: String,
    /// Phrases tracked first (comma-separated).
    #[arg(long, default_value = "rust")]
    track: String,
    /// Phrases tracked after the switch (comma-separated).
    #[arg(long, default_value = "redis")]
    then_track: String,
    /// Switch after this many seconds...
    #[arg(long, default_value_t = 30.0)]
    switch_after: f64,
    /// ...or after this many events, whichever comes first.
    #[arg(long, default_value_t = 10)]
    switch_events: usize,
    /// Exit after this many events in all (0: run forever).
    #[arg(long, default_value_t = 0)]
    max_events: usize,
}

fn phrases(s: &str) -> Vec<&str> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut req = format!("ws://{}/api/v1/stream", args.addr).into_client_request()?;
    req.headers_mut()
        .insert("authorization", format!("Bearer {}", args.token).parse()?);
    let (mut ws, _) = tokio_tungstenite::connect_async(req).await?;
    let subscribe = |track: &str| {
        json!({"type": "subscribe", "stream": "filter", "track": phrases(track)}).to_string()
    };
    ws.send(Message::Text(subscribe(&args.track).into()))
        .await?;
    let started = Instant::now();
    let (mut switched, mut n) = (false, 0usize);
    loop {
        if !switched
            && (n >= args.switch_events || started.elapsed().as_secs_f64() >= args.switch_after)
        {
            // Resubscribe live: the filter is replaced in place, no reconnect.
            ws.send(Message::Text(subscribe(&args.then_track).into()))
                .await?;
            ws.send(Message::Text(
                json!({"type": "subscribe", "stream": "user"})
                    .to_string()
                    .into(),
            ))
            .await?;
            switched = true;
            println!(
                "-- now tracking {:?} and the user stream",
                phrases(&args.then_track)
            );
        }
        let wait = if switched {
            Duration::from_secs(3600)
        } else {
            Duration::from_secs_f64((args.switch_after - started.elapsed().as_secs_f64()).max(0.01))
        };
        let msg = tokio::time::timeout(wait, ws.next()).await;
        let Ok(msg) = msg else { continue };
        let Some(msg) = msg else { break };
        let Message::Text(text) = msg? else { continue };
        let v: Value = serde_json::from_str(text.as_str())?;
        match v["type"].as_str().unwrap_or("") {
            "status" => {
                n += 1;
                println!(
                    "[{}] @{}: {}",
                    v["stream"].as_str().unwrap_or("?"),
                    v["status"]["login"].as_str().unwrap_or("?"),
                    v["status"]["message"].as_str().unwrap_or("")
                );
            }
            "subscribed" | "unsubscribed" => {
                println!("-- {} {}", v["type"].as_str().unwrap_or(""), v["stream"])
            }
            "error" => println!("-- error: {}", v["message"]),
            "disconnect" => {
                println!("-- disconnected: {}", v["code"]);
                break;
            }
            other => println!("-- {other}: {v}"),
        }
        if args.max_events > 0 && n >= args.max_events {
            break;
        }
    }
    Ok(())
}
