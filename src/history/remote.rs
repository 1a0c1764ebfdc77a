//! The object store a shared history lives in (`--history-store
//! s3://BUCKET/PREFIX`): an S3-compatible bucket reached with the
//! `object_store` crate (its signing, retries and conditional PUT), with the
//! standard `AWS_*` settings (without `AWS_ACCESS_KEY_ID`, requests go
//! unsigned: a bucket open to anonymous access).
//!
//! Objects are the sealed windows of the log (`sealer`), one per window,
//! named by the window's first millisecond under
//! `PREFIX/<store id>/windows/`, so that names sort as the log does and two
//! stores never share a name. Each is written once, whole, with
//! `If-None-Match: *` (`PutMode::Create`): a second writer of a window is
//! refused, so a stretch of the log is never held twice with different
//! contents, and a single PUT is never seen half-written.
//!
//! Every call is bounded (a few quick retries inside [`TIMEOUT`]); the
//! callers retry later with their own back-off. Whether the last call
//! reached the store is kept for `/readyz` and the metrics.

use bytes::Bytes;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{
    BackoffConfig, ClientOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
    RetryConfig,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Longest a call to the store takes, its retries included.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Why a window could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The window is already in the store (written by another process).
    #[error("the window is already in the store")]
    Exists,
    /// No such window (retention removed it).
    #[error("the window is not in the store")]
    Missing,
    #[error("the history store: {0}")]
    Unreachable(String),
}

/// A shared history's bucket; cheap to clone.
#[derive(Clone)]
pub struct Remote {
    store: Arc<dyn ObjectStore>,
    /// `PREFIX/<store id>/windows`.
    dir: Path,
    /// Where it is, for logs (no secrets: the URL names only the bucket).
    url: Arc<str>,
    reachable: Arc<AtomicBool>,
    errors: Arc<AtomicU64>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").field("url", &self.url).finish()
    }
}

impl Remote {
    /// The bucket `url` names (`s3://BUCKET/PREFIX`), for the store
    /// `store_id`. Settings come from the environment (`AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`, ...);
    /// plain HTTP is allowed when the endpoint is an `http://` URL.
    pub fn open(url: &str, endpoint: Option<&str>, store_id: &str) -> anyhow::Result<Remote> {
        crate::config::check_history_store(url).map_err(anyhow::Error::msg)?;
        // One crypto provider for every TLS client of the process (ring's;
        // a second install is refused, harmlessly).
        // (`ring`'s provider is marked deprecated for lacking post-quantum
        // key exchange; it is the one this build already carries.)
        #[allow(deprecated)]
        let _ = rustls::crypto::CryptoProvider::install_default(
            rustls::crypto::ring::default_provider(),
        );
        let rest = &url["s3://".len()..];
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let endpoint = endpoint.map(str::to_owned).unwrap_or_else(|| {
            std::env::var("AWS_ENDPOINT_URL")
                .or_else(|_| std::env::var("AWS_ENDPOINT"))
                .unwrap_or_default()
        });
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
        if !endpoint.is_empty() {
            builder = builder.with_endpoint(&endpoint);
        }
        if std::env::var("AWS_ACCESS_KEY_ID").is_err() {
            // No keys: anonymous requests (a bucket open to this network),
            // never a wait on cloud instance metadata.
            builder = builder.with_skip_signature(true);
        }
        let mut builder = builder
            .with_retry(RetryConfig {
                backoff: BackoffConfig {
                    init_backoff: Duration::from_millis(50),
                    max_backoff: Duration::from_secs(1),
                    base: 2.0,
                },
                max_retries: 3,
                retry_timeout: TIMEOUT,
            })
            .with_client_options(
                ClientOptions::new()
                    .with_timeout(TIMEOUT)
                    .with_connect_timeout(Duration::from_secs(2)),
            );
        if endpoint.starts_with("http://") {
            builder = builder.with_allow_http(true);
        }
        if std::env::var("AWS_REGION").is_err() && std::env::var("AWS_DEFAULT_REGION").is_err() {
            builder = builder.with_region("us-east-1");
        }
        let store = builder.build()?;
        let prefix = prefix.trim_matches('/');
        let dir = if prefix.is_empty() {
            format!("{store_id}/windows")
        } else {
            format!("{prefix}/{store_id}/windows")
        };
        Ok(Remote {
            store: Arc::new(store),
            dir: Path::from(dir),
            url: Arc::from(url),
            reachable: Arc::new(AtomicBool::new(true)),
            errors: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Where it is.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether the last call reached the store, and how many failed.
    pub fn health(&self) -> (bool, u64) {
        (
            self.reachable.load(Ordering::Relaxed),
            self.errors.load(Ordering::Relaxed),
        )
    }

    fn path(&self, start: u64) -> Path {
        self.dir.clone().join(format!("{start:020}.seg"))
    }

    /// Notes how a call went; a refusal that is an answer (exists,
    /// missing) is the store reached.
    fn noted<T>(&self, result: object_store::Result<T>) -> Result<T, RemoteError> {
        match result {
            Ok(v) => {
                self.reachable.store(true, Ordering::Relaxed);
                Ok(v)
            }
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => {
                self.reachable.store(true, Ordering::Relaxed);
                Err(RemoteError::Exists)
            }
            Err(object_store::Error::NotFound { .. }) => {
                self.reachable.store(true, Ordering::Relaxed);
                Err(RemoteError::Missing)
            }
            Err(e) => {
                self.reachable.store(false, Ordering::Relaxed);
                self.errors.fetch_add(1, Ordering::Relaxed);
                Err(RemoteError::Unreachable(e.to_string()))
            }
        }
    }

    /// Asks the store for an object that is never there: whether it
    /// answers (for `/readyz` on every process, sealer or not).
    pub async fn probe(&self) {
        let probe = self.dir.clone().join("probe");
        let _ = self.noted(self.store.head(&probe).await);
    }

    /// Writes the window beginning at `start`, once: [`RemoteError::Exists`]
    /// when it is there already.
    pub async fn create(&self, start: u64, bytes: Vec<u8>) -> Result<(), RemoteError> {
        let opts = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        let put = self
            .store
            .put_opts(&self.path(start), PutPayload::from(bytes), opts)
            .await;
        self.noted(put.map(|_| ()))
    }

    /// Reads the window beginning at `start`, whole.
    pub async fn read(&self, start: u64) -> Result<Bytes, RemoteError> {
        let path = self.path(start);
        let got = async {
            let got = self.store.get(&path).await?;
            got.bytes().await
        }
        .await;
        self.noted(got)
    }

    /// Removes the window beginning at `start` (retention); gone already is
    /// no error.
    pub async fn remove(&self, start: u64) -> Result<(), RemoteError> {
        match self.noted(self.store.delete(&self.path(start)).await) {
            Err(RemoteError::Missing) => Ok(()),
            other => other,
        }
    }
}
