//! `firehose tail`: a terminal client for the streams. It reads a stream
//! as Server-Sent Events (zstd-coded with `--compress zstd`), prints each
//! event (its JSON, or a line for people), reconnects with backoff when the
//! connection or the server goes, and resumes with `Last-Event-ID` (the
//! last id it saw, keep-alives' positions included), so nothing is missed
//! or repeated across a restart. Given `--token-command` or `--login`, it
//! fetches a fresh token before the one in use expires (the stream's
//! `token_expiring` warning says when) and moves to it the same way.
//! `warning` and `disconnect` events go to stderr. Ctrl-C ends it with 0.

mod body;
mod http;
mod print;
mod token;

use crate::config::tail::TailArgs;

use anyhow::bail;
use body::Body;
use http::{Opened, Refused};
use serde_json::Value;
use std::time::{Duration, Instant};
use token::Tokens;
use tokio::io::AsyncReadExt;

/// Longest wait between reconnections.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Runs until Ctrl-C or SIGTERM (exit 0), or a refusal that retrying
/// cannot mend (a bad token or filter: an error).
pub async fn run(args: TailArgs) -> anyhow::Result<()> {
    tokio::select! {
        done = follow(&args) => done,
        _ = crate::shutdown::signal() => Ok(()),
    }
}

/// How one connection ended.
enum Ended {
    /// The server closed it or it broke: reconnect.
    Lost(String),
    /// Its token is about to expire, or did: reconnect with a fresh one.
    Renew,
}

async fn follow(args: &TailArgs) -> anyhow::Result<()> {
    let (host, port) = http::host_port(&args.url)?;
    let server = (host.as_str(), port);
    let path = http::stream_path(args);
    let zstd = args.compress == "zstd";
    let mut tokens = Tokens::start(args, server).await?;
    let mut last_id = args.last_event_id.clone();
    let mut backoff = Duration::from_millis(250);
    // Whether the token in use is fresh since the last refusal (a second
    // 401 with a fresh token is final).
    let mut fresh = false;
    loop {
        let opened = http::open(server, &path, tokens.current(), zstd, last_id.as_deref()).await;
        let renew = match opened {
            Ok(opened) => {
                backoff = Duration::from_millis(250);
                fresh = false;
                let coding = if opened.zstd { " (zstd)" } else { "" };
                eprintln!("firehose tail: connected{coding}");
                match read_events(opened, args, tokens.renewable(), &mut last_id).await? {
                    Ended::Lost(why) => {
                        eprintln!("firehose tail: connection lost ({why}); reconnecting");
                        false
                    }
                    Ended::Renew => true,
                }
            }
            Err(e) => match e.downcast_ref::<Refused>() {
                Some(r) if r.status == 401 && tokens.renewable() && !fresh => true,
                Some(r) => bail!("{r}"),
                None => {
                    eprintln!(
                        "firehose tail: {e:#}; retrying in {} ms",
                        backoff.as_millis()
                    );
                    false
                }
            },
        };
        if renew {
            match tokens.renew(server).await {
                Ok(()) => {
                    fresh = true;
                    eprintln!("firehose tail: token renewed; resuming");
                    continue;
                }
                Err(e) => match e.downcast_ref::<Refused>() {
                    Some(r) => bail!("cannot renew the token: {r}"),
                    None => eprintln!("firehose tail: cannot renew the token yet: {e:#}"),
                },
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Reads events until the connection ends (or, when `renewable`, until its
/// token is near its end); prints them and keeps the last id seen.
async fn read_events(
    opened: Opened,
    args: &TailArgs,
    renewable: bool,
    last_id: &mut Option<String>,
) -> anyhow::Result<Ended> {
    let Opened {
        mut sock,
        chunked,
        zstd,
        first,
    } = opened;
    let mut body = Body::new(chunked, zstd, first)?;
    let mut event = SseEvent::default();
    let mut chunk = vec![0u8; 16 * 1024];
    let mut renew_at: Option<Instant> = None;
    loop {
        while let Some(line) = body.line() {
            if line.is_empty() {
                if let Some(id) = event.id.take() {
                    *last_id = Some(id);
                }
                if let Some(data) = event.data.take() {
                    let kind = event.kind.take();
                    if renewable {
                        match expiry(kind.as_deref(), &data) {
                            Some(Expiry::Soon(at)) => renew_at = Some(token::renew_at(at)),
                            Some(Expiry::Now) => return Ok(Ended::Renew),
                            None => {}
                        }
                    }
                    print::print_event(&args.format, kind.as_deref(), &data)?;
                }
                event = SseEvent::default();
            } else if let Some(v) = line.strip_prefix("id:") {
                event.id = Some(v.trim_start().to_string());
            } else if let Some(v) = line.strip_prefix("event:") {
                event.kind = Some(v.trim_start().to_string());
            } else if let Some(v) = line.strip_prefix("data:") {
                let v = v.strip_prefix(' ').unwrap_or(v);
                match &mut event.data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(v);
                    }
                    None => event.data = Some(v.to_string()),
                }
            }
        }
        // No keep-alive in 45 s means the connection is gone.
        let mut wait = Duration::from_secs(45);
        if let Some(at) = renew_at {
            wait = wait.min(at.saturating_duration_since(Instant::now()));
        }
        let n = match tokio::time::timeout(wait, sock.read(&mut chunk)).await {
            Err(_) if renew_at.is_some_and(|at| at <= Instant::now()) => return Ok(Ended::Renew),
            Err(_) => return Ok(Ended::Lost("no keep-alive in 45 s".into())),
            Ok(Err(e)) => return Ok(Ended::Lost(e.to_string())),
            Ok(Ok(0)) => return Ok(Ended::Lost("closed by the server".into())),
            Ok(Ok(n)) => n,
        };
        body.push(&chunk[..n])?;
    }
}

/// What an event says of the stream's token.
enum Expiry {
    /// `token_expiring`: it ends at this unix second.
    Soon(u64),
    /// `disconnect` `expired` or `revoked`: it has ended.
    Now,
}

fn expiry(kind: Option<&str>, data: &str) -> Option<Expiry> {
    // Only a warning or a disconnect says so: other events are not parsed.
    if kind.is_some_and(|k| !matches!(k, "warning" | "disconnect")) {
        return None;
    }
    let v: Value = serde_json::from_str(data).ok()?;
    let kind = kind.or_else(|| v["type"].as_str())?;
    match (kind, v["code"].as_str()?) {
        ("warning", "token_expiring") => Some(Expiry::Soon(v["expires_at"].as_u64()?)),
        ("disconnect", "expired" | "revoked") => Some(Expiry::Now),
        _ => None,
    }
}

#[derive(Default)]
struct SseEvent {
    id: Option<String>,
    kind: Option<String>,
    data: Option<String>,
}
