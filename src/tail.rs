//! `firehose tail`: a terminal client for the streams. It reads a stream
//! as Server-Sent Events, prints each event (its JSON, or a line for
//! people), reconnects with backoff when the connection or the server goes,
//! and resumes with `Last-Event-ID` (the last id it saw, keep-alives'
//! positions included), so nothing is missed or repeated across a restart.
//! `warning` and `disconnect` events go to stderr. Ctrl-C ends it with 0.

use crate::config::TailArgs;
use anyhow::{bail, Context};
use serde_json::Value;
use std::io::Write;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest wait between reconnections.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Runs until Ctrl-C or SIGTERM (exit 0), or a refusal that retrying
/// cannot mend (a bad token or filter: an error).
pub async fn run(args: TailArgs) -> anyhow::Result<()> {
    tokio::select! {
        done = follow(&args) => done,
        _ = crate::app::shutdown_signal() => Ok(()),
    }
}

/// How one connection ended.
enum Ended {
    /// The server closed it or it broke: reconnect.
    Lost(String),
}

async fn follow(args: &TailArgs) -> anyhow::Result<()> {
    let (host, port) = host_port(&args.url)?;
    let path = stream_path(args);
    let mut last_id = args.last_event_id.clone();
    let mut backoff = Duration::from_millis(250);
    loop {
        match connect(&host, port, &path, args, last_id.as_deref()).await {
            Ok(sock) => {
                backoff = Duration::from_millis(250);
                let Ended::Lost(why) = read_events(sock, args, &mut last_id).await?;
                eprintln!("firehose tail: connection lost ({why}); reconnecting");
            }
            Err(e) => {
                if let Some(fatal) = e.downcast_ref::<Refused>() {
                    bail!("{}", fatal.0);
                }
                eprintln!(
                    "firehose tail: {e:#}; retrying in {} ms",
                    backoff.as_millis()
                );
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// A refusal retrying cannot mend (401, 400, 403, 404).
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

fn host_port(url: &str) -> anyhow::Result<(String, u16)> {
    let rest = url
        .strip_prefix("http://")
        .context("--url must start with http:// (put TLS in front with a proxy)")?;
    let authority = rest.split('/').next().unwrap_or(rest);
    match authority.rsplit_once(':') {
        Some((h, p)) => Ok((h.to_string(), p.parse().context("the port in --url")?)),
        None => Ok((authority.to_string(), 80)),
    }
}

/// Percent-encodes a query value.
fn encode(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b',' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn stream_path(args: &TailArgs) -> String {
    let mut q = Vec::new();
    let partition = args.partition.map(|(k, n)| (k.to_string(), n.to_string()));
    for (k, v) in [
        ("track", args.track.as_ref()),
        ("follow", args.follow.as_ref()),
        ("locations", args.locations.as_ref()),
        ("rate", args.rate.as_ref()),
        ("rules", args.rules.as_ref()),
        ("id", args.id.as_ref()),
        // A resume's Last-Event-ID wins over it (the server's rule).
        ("since", args.since.as_ref()),
        ("partition", partition.as_ref().map(|p| &p.0)),
        ("partitions", partition.as_ref().map(|p| &p.1)),
    ] {
        if let Some(v) = v {
            q.push(format!("{k}={}", encode(v)));
        }
    }
    let query = if q.is_empty() {
        String::new()
    } else {
        format!("?{}", q.join("&"))
    };
    format!("/api/v1/stream/{}{query}", args.stream)
}

/// Opens the stream: the response head read and checked; the socket and
/// whether the body is chunked.
async fn connect(
    host: &str,
    port: u16,
    path: &str,
    args: &TailArgs,
    last_id: Option<&str>,
) -> anyhow::Result<(TcpStream, bool, Vec<u8>)> {
    let mut sock = TcpStream::connect((host, port))
        .await
        .with_context(|| format!("cannot connect to {host}:{port}"))?;
    let mut req = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\nAuthorization: Bearer {}\r\n",
        args.token
    );
    if let Some(id) = last_id {
        req.push_str(&format!("Last-Event-ID: {id}\r\n"));
    }
    req.push_str("\r\n");
    sock.write_all(req.as_bytes()).await?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(15), sock.read(&mut chunk))
            .await
            .context("no answer within 15 s")??;
        if n == 0 {
            bail!("the server closed the connection before answering");
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut headers);
        if let httparse::Status::Complete(len) = resp.parse(&buf)? {
            let status = resp.code.unwrap_or(0);
            let chunked = resp.headers.iter().any(|h| {
                h.name.eq_ignore_ascii_case("transfer-encoding")
                    && String::from_utf8_lossy(h.value).contains("chunked")
            });
            let rest = buf[len..].to_vec();
            if status == 200 {
                return Ok((sock, chunked, rest));
            }
            let body = String::from_utf8_lossy(&rest).to_string();
            let why = format!("the server answered {status}: {}", body.trim());
            if matches!(status, 400 | 401 | 403 | 404) {
                return Err(Refused(why).into());
            }
            bail!(why);
        }
    }
}

/// Reads events until the connection ends; prints them and keeps the last
/// id seen.
async fn read_events(
    (mut sock, chunked, first): (TcpStream, bool, Vec<u8>),
    args: &TailArgs,
    last_id: &mut Option<String>,
) -> anyhow::Result<Ended> {
    let mut raw = first;
    let mut body: Vec<u8> = Vec::new();
    let mut event = SseEvent::default();
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        // Undo the chunked framing of what has arrived.
        if chunked {
            dechunk(&mut raw, &mut body);
        } else {
            body.append(&mut raw);
        }
        while let Some(nl) = body.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = body.drain(..=nl).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if let Some(id) = event.id.take() {
                    *last_id = Some(id);
                }
                if let Some(data) = event.data.take() {
                    print_event(args, event.kind.take().as_deref(), &data)?;
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
        let n = match tokio::time::timeout(Duration::from_secs(45), sock.read(&mut chunk)).await {
            Err(_) => return Ok(Ended::Lost("no keep-alive in 45 s".into())),
            Ok(Err(e)) => return Ok(Ended::Lost(e.to_string())),
            Ok(Ok(0)) => return Ok(Ended::Lost("closed by the server".into())),
            Ok(Ok(n)) => n,
        };
        raw.extend_from_slice(&chunk[..n]);
    }
}

#[derive(Default)]
struct SseEvent {
    id: Option<String>,
    kind: Option<String>,
    data: Option<String>,
}

/// Moves the payload of every complete chunk from `raw` into `body`.
fn dechunk(raw: &mut Vec<u8>, body: &mut Vec<u8>) {
    loop {
        let Some(nl) = raw.windows(2).position(|w| w == b"\r\n") else {
            return;
        };
        let size_text = String::from_utf8_lossy(&raw[..nl]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size_text, 16) else {
            raw.clear();
            return;
        };
        if raw.len() < nl + 2 + size + 2 {
            return;
        }
        body.extend_from_slice(&raw[nl + 2..nl + 2 + size]);
        raw.drain(..nl + 2 + size + 2);
    }
}

fn print_event(args: &TailArgs, kind: Option<&str>, data: &str) -> anyhow::Result<()> {
    let v: Value = serde_json::from_str(data).unwrap_or(Value::Null);
    let kind = kind.or_else(|| v["type"].as_str()).unwrap_or("message");
    if matches!(kind, "warning" | "disconnect") {
        eprintln!("firehose tail: {kind}: {data}");
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    if args.format == "json" {
        writeln!(out, "{data}")?;
    } else {
        writeln!(out, "{}", pretty(kind, &v))?;
    }
    out.flush()?;
    Ok(())
}

/// One line for people.
fn pretty(kind: &str, v: &Value) -> String {
    let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
    match kind {
        "status" | "mention" | "repost" => {
            let st = &v["status"];
            let text = if st["repost_of"].is_string() {
                format!("reposted {}", st["repost_of"].as_str().unwrap_or(""))
            } else {
                st["message"].as_str().unwrap_or("").to_string()
            };
            let place = match (st["lat"].as_f64(), st["lon"].as_f64()) {
                (Some(lat), Some(lon)) => format!(" [{lat:.2},{lon:.2}]"),
                _ => String::new(),
            };
            format!(
                "{kind:>8} @{}: {text}{place}",
                st["login"].as_str().unwrap_or("?")
            )
        }
        "delete" => format!("{kind:>8} status {} by {}", s("status_id"), s("uid")),
        "follow" | "unfollow" | "follow_request" => {
            format!("{kind:>8} {} -> {}", s("source"), s("target"))
        }
        "like" => format!("{kind:>8} {} likes {}", s("source"), s("status_id")),
        "direct_message" => format!(
            "{:>8} @{}: {}",
            "message",
            v["message"]["login"].as_str().unwrap_or("?"),
            v["message"]["text"].as_str().unwrap_or("")
        ),
        _ => format!("{kind:>8} {v}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_undone_across_reads() {
        let mut raw = b"5\r\nhello\r\n3\r\n wo".to_vec();
        let mut body = Vec::new();
        dechunk(&mut raw, &mut body);
        assert_eq!(body, b"hello");
        raw.extend_from_slice(b"\r\n1\r\nr\r\n");
        dechunk(&mut raw, &mut body);
        assert_eq!(body, b"hello wor");
        assert!(raw.is_empty());
    }
}
