//! A TCP proxy in front of Redis with a gate on its RESP3 connections.

use super::*;

/// A gate in a TCP proxy in front of Redis: while closed, everything Redis
/// sends on RESP3 connections (those opened with `HELLO 3`) is held back,
/// and on opening it goes out in one write, in order; other connections
/// pass straight through.
#[derive(Clone)]
pub(crate) struct Gate(std::sync::Arc<tokio::sync::watch::Sender<bool>>);

impl Gate {
    pub(crate) fn close(&self) {
        self.0.send_replace(false);
    }

    pub(crate) fn open(&self) {
        self.0.send_replace(true);
    }
}

/// Starts a proxy to the Redis at `upstream` with a [`Gate`] (open) on its
/// RESP3 connections; returns the proxy's port and the gate. It runs until
/// the test's runtime ends.
pub(crate) async fn resp3_gate_proxy(upstream: u16) -> (u16, Gate) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let gate = Gate(std::sync::Arc::new(tokio::sync::watch::channel(true).0));
    let shared = gate.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let gate = shared.clone();
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await
                else {
                    return;
                };
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                let mut first = vec![0u8; 4096];
                let Ok(n) = client_read.read(&mut first).await else {
                    return;
                };
                let gated = first[..n]
                    .windows(5)
                    .any(|w| w.eq_ignore_ascii_case(b"HELLO"));
                if server_write.write_all(&first[..n]).await.is_err() {
                    return;
                }
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
                });
                if !gated {
                    let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                    return;
                }
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
                tokio::spawn(async move {
                    let mut open = gate.0.subscribe();
                    while let Some(mut bytes) = rx.recv().await {
                        if open.wait_for(|&o| o).await.is_err() {
                            return;
                        }
                        while let Ok(more) = rx.try_recv() {
                            bytes.extend_from_slice(&more);
                        }
                        if client_write.write_all(&bytes).await.is_err() {
                            return;
                        }
                    }
                });
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    match server_read.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if tx.send(buf[..n].to_vec()).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    (port, gate)
}

/// A server on its own Redis reached through [`resp3_gate_proxy`], so a
/// test can hold back what Redis sends its tracking connections; `tweak`
/// as [`TestApp::start_on`] takes it (to turn the other cache off, whose
/// connection would be held back too).
pub(crate) async fn gated_app(tweak: impl FnOnce(&mut Config)) -> (TestApp, Gate) {
    let redis = RedisServer::start_single();
    let (proxy, gate) = resp3_gate_proxy(redis.port).await;
    let app = TestApp::start_on(redis, |cfg| {
        cfg.redis_url = Some(format!("redis://127.0.0.1:{proxy}"));
        tweak(cfg);
    })
    .await;
    (app, gate)
}
