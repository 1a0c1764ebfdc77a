//! The product surface: OpenAPI, metrics, health, the CLI, every example run
//! against a live server, and the browser page in a real headless Chromium.

mod api;
mod cli;
#[path = "../common/mod.rs"]
mod common;
mod dashboard;
mod examples;
mod mastodon;
mod mastodon_misc;
mod mastodon_oauth;
mod mastodon_rw;
mod mastodon_streams;
mod page;

use common::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

fn firehose_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_firehose"))
}

fn example_bin(name: &str) -> PathBuf {
    // Examples are built next to the test binaries' parent directory by `cargo test`.
    let deps = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let bin = deps.parent().unwrap().join("examples").join(name);
    assert!(
        bin.exists(),
        "example {name} was not built at {}",
        bin.display()
    );
    bin
}

/// A measurement tool of the `firehose-bench` package, built on demand
/// (`cargo test` builds only this package's binaries; the cargo running the
/// tests holds no lock while they run). `--workspace --tests` resolves
/// features as `cargo test --workspace` does, so the test build's artifacts
/// are reused rather than built a second time (a second copy of every crate
/// once overflowed CI's disk).
fn bench_bin(name: &str) -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args(["build", "-q", "--workspace", "--tests", "--bin", name])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building {name}");
    let deps = std::env::current_exe().unwrap();
    deps.parent().unwrap().parent().unwrap().join(name)
}

/// A child's standard output read line by line: readiness is a line the
/// child prints, not a guess at how long it takes.
struct Output {
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    seen: String,
}

impl Output {
    fn of(child: &mut tokio::process::Child) -> Output {
        use tokio::io::AsyncBufReadExt;
        let stdout = child.stdout.take().expect("stdout piped");
        Output {
            lines: tokio::io::BufReader::new(stdout).lines(),
            seen: String::new(),
        }
    }

    /// Reads until a line contains `needle` (within 20 s).
    async fn until(&mut self, needle: &str) {
        let found = tokio::time::timeout(Duration::from_secs(20), async {
            while let Ok(Some(line)) = self.lines.next_line().await {
                self.seen.push_str(&line);
                self.seen.push('\n');
                if line.contains(needle) {
                    return true;
                }
            }
            false
        })
        .await;
        assert!(
            found == Ok(true),
            "no line with {needle:?} in: {}",
            self.seen
        );
    }

    /// Everything, to the end of the output (within 20 s).
    async fn rest(mut self) -> String {
        let _ = tokio::time::timeout(Duration::from_secs(20), async {
            while let Ok(Some(line)) = self.lines.next_line().await {
                self.seen.push_str(&line);
                self.seen.push('\n');
            }
        })
        .await;
        self.seen
    }
}

/// A web server on another local origin answering every request with
/// `body` (an HTML page).
fn serving(body: String) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 4096];
            let _ = std::io::Read::read(&mut stream, &mut buf);
            let _ = std::io::Write::write_all(
                &mut stream,
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    format!("http://{addr}")
}

/// A token of bob's, who signed up through the page.
async fn bob_token(app: &TestApp) -> String {
    app.login("bob").await
}
