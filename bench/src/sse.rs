//! Opening a raw SSE stream: the request written on a plain socket, so a
//! tool reads the events as the server writes them, without a client
//! library's buffering.

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Connects to `addr` and asks for the stream at `path` with a bearer
/// token (and any `extra` header lines, each ending in `\r\n`); the socket
/// once the request is sent, or `None`.
pub async fn open(addr: &str, path: &str, token: &str, extra: &str) -> Option<TcpStream> {
    let mut sock = TcpStream::connect(addr).await.ok()?;
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n{extra}\r\n"
    );
    sock.write_all(req.as_bytes()).await.ok()?;
    Some(sock)
}
