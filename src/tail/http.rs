//! The HTTP that `firehose tail` speaks: the stream's request and the head
//! of its response, and the login that fetches a token.

use crate::config::tail::TailArgs;
use anyhow::{bail, Context};
use serde_json::Value;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A refusal retrying with the same token cannot mend (401, 400, 403, 404).
#[derive(Debug)]
pub(super) struct Refused {
    pub(super) status: u16,
    pub(super) why: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

impl std::error::Error for Refused {}

/// An open stream: its socket, whether the body is chunked and zstd-coded,
/// and the body's first bytes (read with the head).
pub(super) struct Opened {
    pub(super) sock: TcpStream,
    pub(super) chunked: bool,
    pub(super) zstd: bool,
    pub(super) first: Vec<u8>,
}

/// `--url`'s host and port.
pub(super) fn host_port(url: &str) -> anyhow::Result<(String, u16)> {
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

/// The stream's path and query.
pub(super) fn stream_path(args: &TailArgs) -> String {
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

/// A parsed response head.
struct Head {
    status: u16,
    chunked: bool,
    zstd: bool,
    rest: Vec<u8>,
}

/// Sends `req` and reads the response head.
async fn exchange(host: &str, port: u16, req: &[u8]) -> anyhow::Result<(TcpStream, Head)> {
    let mut sock = TcpStream::connect((host, port))
        .await
        .with_context(|| format!("cannot connect to {host}:{port}"))?;
    sock.write_all(req).await?;
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
            let has = |name: &str, value: &str| {
                resp.headers.iter().any(|h| {
                    h.name.eq_ignore_ascii_case(name)
                        && String::from_utf8_lossy(h.value)
                            .to_ascii_lowercase()
                            .contains(value)
                })
            };
            let head = Head {
                status: resp.code.unwrap_or(0),
                chunked: has("transfer-encoding", "chunked"),
                zstd: has("content-encoding", "zstd"),
                rest: buf[len..].to_vec(),
            };
            return Ok((sock, head));
        }
    }
}

/// A refusal (a `Refused` for the statuses retrying cannot mend).
fn refusal(status: u16, body: &[u8]) -> anyhow::Error {
    let why = format!(
        "the server answered {status}: {}",
        String::from_utf8_lossy(body).trim()
    );
    if matches!(status, 400 | 401 | 403 | 404) {
        Refused { status, why }.into()
    } else {
        anyhow::anyhow!(why)
    }
}

/// Opens the stream with `token`, resuming after `last_id`.
pub(super) async fn open(
    (host, port): (&str, u16),
    path: &str,
    token: &str,
    zstd: bool,
    last_id: Option<&str>,
) -> anyhow::Result<Opened> {
    let mut req = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\nAuthorization: Bearer {token}\r\n"
    );
    if zstd {
        req.push_str("Accept-Encoding: zstd\r\n");
    }
    if let Some(id) = last_id {
        req.push_str(&format!("Last-Event-ID: {id}\r\n"));
    }
    req.push_str("\r\n");
    let (sock, head) = exchange(host, port, req.as_bytes()).await?;
    if head.status != 200 {
        return Err(refusal(head.status, &head.rest));
    }
    Ok(Opened {
        sock,
        chunked: head.chunked,
        zstd: head.zstd,
        first: head.rest,
    })
}

/// Logs in (`POST /api/v1/sessions`): the new session's token.
pub(super) async fn login(
    (host, port): (&str, u16),
    identifier: &str,
    password: &str,
) -> anyhow::Result<String> {
    let body = serde_json::json!({ "identifier": identifier, "password": password }).to_string();
    let req = format!(
        "POST /api/v1/sessions HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let (mut sock, head) = exchange(host, port, req.as_bytes()).await?;
    let mut rest = head.rest;
    tokio::time::timeout(Duration::from_secs(15), sock.read_to_end(&mut rest))
        .await
        .context("the login's answer did not end within 15 s")??;
    if head.chunked {
        rest = super::body::Body::new(true, false, rest)?.take();
    }
    if head.status != 201 {
        return Err(refusal(head.status, &rest));
    }
    let v: Value = serde_json::from_slice(&rest).context("the login's answer is not JSON")?;
    v["token"]
        .as_str()
        .map(str::to_string)
        .context("the login's answer holds no token")
}
