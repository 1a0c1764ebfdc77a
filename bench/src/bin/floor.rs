//! The floor: the least a streaming server can do on this machine, to
//! measure the real server against. It accepts connections, answers any
//! request head with a stream's response head (SSE, or a WebSocket
//! handshake), and for every message on the events channel writes the
//! pre-encoded bytes to every socket: one write per event per socket, from
//! one task, with no queue, no matching, no auth and no keep-alive. A socket
//! that would block is dropped (the floor does not queue).
//!
//! ```sh
//! cargo build --release --workspace --bins
//! target/release/floor --transport sse &      # listens on 127.0.0.1:8090
//! target/release/loadgen --addr 127.0.0.1:8090 --server-pid $! \
//!     --clients 1000 --rate 100 --duration 20
//! ```

// Examples are command-line programs: printing is their output.
#![allow(clippy::print_stdout)]

use bytes::{BufMut, Bytes, BytesMut};
use clap::Parser;
use firehose::config::Config;
use firehose::store::Store;
use firehose_bench::Transport;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

#[derive(Parser, Debug)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8090")]
    listen: String,
    /// Redis URL whose event log's channels drive the writes.
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// A Redis Cluster's seed nodes (comma-separated), if the log is on one.
    #[arg(long)]
    redis_cluster: Option<String>,
    /// The key prefix of the log's channels.
    #[arg(long, default_value = "fh")]
    key_prefix: String,
    /// What the clients speak.
    #[arg(long, value_enum, default_value_t = Transport::Sse)]
    transport: Transport,
}

/// Reads a request head and answers it; the socket then only gets writes.
async fn handshake(mut tcp: TcpStream, transport: Transport) -> Option<TcpStream> {
    let mut head = Vec::with_capacity(1024);
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > 64 * 1024 || tcp.read_buf(&mut head).await.ok()? == 0 {
            return None;
        }
    }
    let answer = match transport {
        Transport::Sse => {
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n"
                .to_string()
        }
        Transport::Ws => {
            let text = String::from_utf8_lossy(&head);
            let key = text.lines().find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("sec-websocket-key")
                    .then(|| value.trim().to_string())
            })?;
            let accept =
                tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
            format!(
                "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: {accept}\r\n\r\n"
            )
        }
    };
    tcp.write_all(answer.as_bytes()).await.ok()?;
    Some(tcp)
}

/// One event's bytes, encoded once for every socket.
fn encode(json: &[u8], transport: Transport) -> Bytes {
    let mut buf = BytesMut::with_capacity(json.len() + 16);
    match transport {
        Transport::Sse => {
            buf.put_slice(b"data: ");
            buf.put_slice(json);
            buf.put_slice(b"\n\n");
        }
        Transport::Ws => {
            // An unmasked text frame, as a server sends it.
            buf.put_u8(0x81);
            match json.len() {
                n if n < 126 => buf.put_u8(n as u8),
                n if n < 65_536 => {
                    buf.put_u8(126);
                    buf.put_u16(n as u16);
                }
                n => {
                    buf.put_u8(127);
                    buf.put_u64(n as u64);
                }
            }
            buf.put_slice(json);
        }
    }
    buf.freeze()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut cfg = Config::defaults();
    cfg.redis_url = Some(args.redis_url.clone());
    cfg.redis_cluster = args.redis_cluster.clone();
    cfg.key_prefix = args.key_prefix.clone();
    let store = Store::open(&args.redis_url, &cfg)?;
    // The prober holds the subscription's connection: kept for the run.
    let subscription = store.events().subscribe().await?;
    let _connection = subscription.prober;
    let mut events = subscription.pushes;
    let listener = TcpListener::bind(&args.listen).await?;
    println!("floor ({:?}) on {}", args.transport, args.listen);
    let (ready_tx, mut ready) = mpsc::unbounded_channel::<TcpStream>();
    let transport = args.transport;
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let _ = tcp.set_nodelay(true);
            let ready_tx = ready_tx.clone();
            tokio::spawn(async move {
                if let Some(tcp) = handshake(tcp, transport).await {
                    let _ = ready_tx.send(tcp);
                }
            });
        }
    });
    let mut sockets: Vec<TcpStream> = Vec::new();
    loop {
        tokio::select! {
            Some(tcp) = ready.recv() => sockets.push(tcp),
            msg = events.next() => {
                let Some(msg) = msg else { break };
                let firehose::store::events::Heard::Message(_, payload) = msg else { continue };
                // The shard's floor line first (the server's merge reads it).
                let Some((_, payload)) = payload.split_once('\n') else { continue };
                let frame = encode(payload.as_bytes(), transport);
                // One write per socket; a socket that would block (or
                // wrote part of the frame) is dropped: the floor never queues.
                sockets.retain(|s| matches!(s.try_write(&frame), Ok(n) if n == frame.len()));
            }
        }
    }
    Ok(())
}
