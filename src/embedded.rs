//! The embedded default: when nothing answers at the default Redis URL, a
//! private `redis-server` child is started with its data under the data
//! directory (AOF on) and shut down when the process exits.

use crate::config::Config;
use anyhow::{bail, Context};
use std::time::Duration;
use tokio::process::{Child, Command};

/// Where Redis is looked for when no URL is configured.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// A redis-server child process.
pub struct EmbeddedRedis {
    child: Child,
    url: String,
}

/// Whether a Redis server answers PING at `url` within a short time.
pub async fn answers(url: &str) -> bool {
    let Ok(client) = redis::Client::open(url) else {
        return false;
    };
    let ping = async {
        let mut conn = client.get_multiplexed_async_connection().await?;
        redis::cmd("PING").query_async::<String>(&mut conn).await
    };
    matches!(
        tokio::time::timeout(Duration::from_millis(800), ping).await,
        Ok(Ok(_))
    )
}

/// The Redis URL to use, starting a private server when needed.
pub async fn resolve(cfg: &Config) -> anyhow::Result<(String, Option<EmbeddedRedis>)> {
    if let Some(url) = &cfg.redis_url {
        return Ok((url.clone(), None));
    }
    if let Some(first) = cfg
        .redis_cluster
        .as_deref()
        .and_then(|l| crate::store::cluster_nodes(l).into_iter().next())
    {
        // On a cluster the store connects by the seed list; this URL only
        // names a node in messages.
        return Ok((first, None));
    }
    if answers(DEFAULT_URL).await {
        tracing::info!(
            url = DEFAULT_URL,
            "using the Redis server that answers at the default URL"
        );
        return Ok((DEFAULT_URL.to_string(), None));
    }
    let embedded = EmbeddedRedis::start(cfg).await?;
    Ok((embedded.url.clone(), Some(embedded)))
}

fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

impl EmbeddedRedis {
    /// Starts redis-server on 127.0.0.1 (port 6379 if free, else any free
    /// port) with AOF on under `cfg.data_dir`.
    pub async fn start(cfg: &Config) -> anyhow::Result<EmbeddedRedis> {
        std::fs::create_dir_all(&cfg.data_dir)
            .with_context(|| format!("creating the data directory {}", cfg.data_dir.display()))?;
        let dir = std::fs::canonicalize(&cfg.data_dir)?;
        let port = if std::net::TcpListener::bind("127.0.0.1:6379").is_ok() {
            6379
        } else {
            free_port()?
        };
        let child = Command::new(&cfg.redis_server)
            .arg("--port")
            .arg(port.to_string())
            .arg("--bind")
            .arg("127.0.0.1")
            .arg("--dir")
            .arg(&dir)
            .arg("--appendonly")
            .arg("yes")
            .arg("--save")
            .arg("")
            .arg("--daemonize")
            .arg("no")
            .arg("--logfile")
            .arg(dir.join("redis.log"))
            .kill_on_drop(true)
            .spawn()
            .with_context(|| {
                format!(
                    "starting {:?}: install it (apt-get install -y redis-server) or pass --redis-url",
                    cfg.redis_server
                )
            })?;
        let url = format!("redis://127.0.0.1:{port}");
        let mut me = EmbeddedRedis { child, url };
        for _ in 0..100 {
            if answers(&me.url).await {
                tracing::info!(url = %me.url, dir = %dir.display(), "started a private redis-server");
                return Ok(me);
            }
            if let Ok(Some(status)) = me.child.try_wait() {
                bail!(
                    "redis-server exited at start ({status}); see {}",
                    dir.join("redis.log").display()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = me.child.kill().await;
        bail!("redis-server did not answer within 10 s")
    }

    /// Its URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Asks the server to shut down cleanly (flushing the AOF), then waits.
    pub async fn stop(mut self) {
        if let Ok(client) = redis::Client::open(self.url.as_str()) {
            if let Ok(mut conn) = client.get_multiplexed_async_connection().await {
                let _ = redis::cmd("SHUTDOWN").query_async::<()>(&mut conn).await;
            }
        }
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
        tracing::info!("private redis-server stopped");
    }
}
