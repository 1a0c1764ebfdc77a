//! The firehose binary as a child process, for tests that kill it or run
//! several processes on one Redis.

use super::*;

/// The firehose binary as a child process (`serve` or `worker`), for tests
/// that kill it with SIGKILL or run several processes on one Redis.
pub(crate) struct ServerProcess {
    pub child: tokio::process::Child,
    pub port: u16,
}

impl ServerProcess {
    /// Starts `firehose serve` on a free port against `redis_url` and waits
    /// until it answers /readyz.
    pub(crate) async fn serve(redis: &RedisServer, env: &[(&str, &str)]) -> ServerProcess {
        Self::start(redis, env, None, None).await
    }

    /// [`ServerProcess::serve`] on a given port (a server restarted where
    /// its clients expect it).
    pub(crate) async fn serve_on(
        redis: &RedisServer,
        port: u16,
        env: &[(&str, &str)],
    ) -> ServerProcess {
        Self::start(redis, env, None, Some(port)).await
    }

    /// [`ServerProcess::serve`] from a shell whose soft open-file limit is
    /// `soft` (`ulimit -Sn`), as a login shell's often is.
    pub(crate) async fn serve_with_soft_nofile(
        redis: &RedisServer,
        env: &[(&str, &str)],
        soft: u64,
    ) -> ServerProcess {
        Self::start(redis, env, Some(soft), None).await
    }

    async fn start(
        redis: &RedisServer,
        env: &[(&str, &str)],
        soft: Option<u64>,
        port: Option<u16>,
    ) -> ServerProcess {
        let port = port.unwrap_or_else(free_port);
        let bin = env!("CARGO_BIN_EXE_firehose");
        let mut cmd = match soft {
            None => tokio::process::Command::new(bin),
            Some(soft) => {
                let mut sh = tokio::process::Command::new("sh");
                sh.args([
                    "-c",
                    &format!("ulimit -Sn {soft} && exec \"$0\" \"$@\""),
                    bin,
                ]);
                sh
            }
        };
        cmd.args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(redis.args())
            .arg("--data-dir")
            .arg(redis.data_dir())
            .env("FIREHOSE_JWT_SECRET", "test-secret-test-secret-test-secret")
            .env("FIREHOSE_RATE_LIMITS", "off")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("the firehose binary starts");
        let server = ServerProcess { child, port };
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(r) = http.get(server.url("/readyz")).send().await {
                if r.status() == StatusCode::OK {
                    break;
                }
            }
            assert!(
                Instant::now() < deadline,
                "the server process never became ready"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        server
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.port, path)
    }

    /// SIGTERM, and waits for the process to finish its shutdown.
    pub(crate) async fn terminate(mut self) {
        if let Some(pid) = self.child.id() {
            let _ = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
        let _ = self.child.wait().await;
    }

    /// SIGKILL: no shutdown, no clean-up, whatever it was doing.
    pub(crate) async fn kill9(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}
