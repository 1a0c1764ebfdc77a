//! Reading and parsing a connection's first request head, and writing an
//! error response in the contract's shape on the raw socket.

use crate::error::{ApiError, MAX_HEADER_FIELDS};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest request head read before handing over to hyper (long filter URLs
/// with 5000 follow ids fit).
pub(super) const MAX_HEAD: usize = 128 * 1024;

/// The header fields hyper parses on a kept-alive connection, so that the
/// router's layer answers past `MAX_HEADER_FIELDS` with a body (past this
/// many hyper answers 431 itself, with none).
pub(super) const HYPER_MAX_HEADERS: usize = 1024;

/// The longest request target hyper parses (the `http` crate's limit).
const MAX_URI: usize = 65_534;

/// The answer, in the contract's shape, to a head hyper would refuse with
/// an empty body: a request target longer than it parses (414), or a head
/// longer than [`MAX_HEAD`] (431). `complete`: whether the head ended.
pub(super) fn oversized(buf: &[u8], complete: bool) -> Option<ApiError> {
    use axum::http::StatusCode;
    let line_end = buf.iter().position(|b| *b == b'\n').unwrap_or(buf.len());
    let mut parts = buf[..line_end].split(|b| *b == b' ');
    let target = parts.nth(1).map_or(0, <[u8]>::len);
    if target > MAX_URI || (line_end == buf.len() && line_end > MAX_URI) {
        return Some(ApiError::new(
            StatusCode::URI_TOO_LONG,
            "uri_too_long",
            format!("The request target is longer than {MAX_URI} bytes."),
        ));
    }
    if !complete && buf.len() >= MAX_HEAD {
        return Some(ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers_too_large",
            format!("The request head is longer than {MAX_HEAD} bytes."),
        ));
    }
    // The request line and the blank line aside, a line a field.
    let head_end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(buf.len());
    let fields = buf[..head_end].iter().filter(|b| **b == b'\n').count();
    (complete && fields > MAX_HEADER_FIELDS).then(ApiError::too_many_fields)
}

/// Writes an error response in the contract's shape and closes.
pub(super) async fn write_error(
    tcp: &mut TcpStream,
    err: ApiError,
    extra: &[(&str, &str)],
    timeout: Duration,
) {
    let status = err.status;
    let json = err.body().to_string();
    let mut head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        json.len()
    );
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head.push_str(&json);
    write_all(tcp, head.as_bytes(), timeout).await;
    let _ = tcp.shutdown().await;
}

pub(super) async fn write_all(tcp: &mut TcpStream, bytes: &[u8], timeout: Duration) -> bool {
    matches!(
        tokio::time::timeout(timeout, tcp.write_all(bytes)).await,
        Ok(Ok(()))
    )
}

/// What reading the first request head gave.
pub(super) enum Head {
    /// A complete head ending at this offset of the buffer.
    Complete(usize),
    /// EOF, an error, or an oversized head: hyper answers or closes.
    Incomplete,
    /// Not complete within the request timeout.
    TimedOut,
}

/// Reads bytes until a full request head is buffered.
/// Reads bytes until a full request head is buffered, for at most `timeout`
/// (`--request-timeout`).
pub(super) async fn read_head(tcp: &mut TcpStream, buf: &mut Vec<u8>, timeout: Duration) -> Head {
    let read = async {
        // Where the search resumes: the terminator may straddle two reads.
        let mut from = 0;
        loop {
            if let Some(end) = buf[from..].windows(4).position(|w| w == b"\r\n\r\n") {
                return Some(from + end + 4);
            }
            from = buf.len().saturating_sub(3);
            if buf.len() >= MAX_HEAD {
                return None;
            }
            // Straight into the buffer: a chunk array held across the await
            // would be part of every connection task's size.
            buf.reserve(2048);
            match tcp.read_buf(buf).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(Some(end)) => Head::Complete(end),
        Ok(None) => Head::Incomplete,
        Err(_) => Head::TimedOut,
    }
}

/// The request head as `http` parts, if it parses.
pub(super) fn parse_head(head: &[u8]) -> Option<axum::http::request::Parts> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    if !matches!(req.parse(head), Ok(httparse::Status::Complete(_))) {
        return None;
    }
    let version = match req.version? {
        0 => axum::http::Version::HTTP_10,
        _ => axum::http::Version::HTTP_11,
    };
    let mut builder = axum::http::Request::builder()
        .method(req.method?)
        .uri(req.path?)
        .version(version);
    for h in req.headers.iter() {
        builder = builder.header(h.name, h.value);
    }
    builder.body(()).ok().map(|r| r.into_parts().0)
}
