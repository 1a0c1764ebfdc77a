//! `run`: the whole server on a bound listener until a shutdown future fires.

use crate::auth::Jwt;
use crate::config::Config;
use crate::http;
use crate::password::Passwords;
use crate::shutdown::{self, Shutdown};
use crate::state::{AppState, Shared};
use crate::store::layout::{foreign_layout, foreign_layout_error};
use crate::store::{Store, StoreError};
use crate::stream::stream_limits::StreamLimits;
use crate::stream::Hub;
use crate::workers;
use anyhow::Context;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;

fn open_store(cfg: &Config) -> anyhow::Result<Store> {
    let url = cfg
        .redis_url
        .as_deref()
        .context("no Redis URL: resolve it (embedded::resolve) before run")?;
    Ok(Store::open(url, cfg)?)
}

/// What a process needs of Redis before it serves, retried until Redis
/// answers: the data's key layout checked ([`store::layout`](crate::store::layout): a foreign one
/// stops the process), and the JWT secret (the configured one, or the one
/// kept in Redis), since nothing can be signed or checked without it.
async fn prepare(cfg: &Config, store: &Store, shutdown: &mut Shutdown) -> anyhow::Result<String> {
    let mut backoff = std::time::Duration::from_millis(100);
    loop {
        let ready = async {
            let foreign = foreign_layout(store).await?;
            Ok::<_, StoreError>((
                foreign,
                store.sessions().jwt_secret(cfg.jwt_secret()).await?,
            ))
        };
        match ready.await {
            Ok((Some(found), _)) => anyhow::bail!(foreign_layout_error(&found)),
            Ok((None, secret)) => return Ok(secret),
            Err(e) => tracing::warn!(error = %e, "cannot prepare the data in Redis yet"),
        }
        tokio::select! {
            _ = shutdown.wait() => anyhow::bail!("shut down before Redis could be prepared"),
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(std::time::Duration::from_secs(2));
    }
}

/// The process's history (`--history-dir`, by default `history-<port>` in
/// `--data-dir`), none with `--history 0`.
async fn open_history(
    cfg: &Config,
    store: &Store,
    port: u16,
) -> anyhow::Result<Option<crate::history::History>> {
    if cfg.history_secs == 0 {
        return Ok(None);
    }
    let dir = cfg
        .history_dir
        .clone()
        .unwrap_or_else(|| cfg.data_dir.join(format!("history-{port}")));
    let name = store.events().stream_name().await?;
    let settings = crate::history::Settings {
        dir,
        retention_secs: cfg.history_secs,
        max_bytes: cfg.history_max_bytes,
        shared: cfg.history_store.is_some(),
    };
    let shared = match &cfg.history_store {
        Some(url) => Some((
            crate::history::remote::Remote::open(
                url,
                cfg.history_store_endpoint.as_deref(),
                &name,
            )?,
            store.clone(),
            cfg.history_window_secs * 1000,
        )),
        None => None,
    };
    let history =
        tokio::task::spawn_blocking(move || crate::history::History::open(settings, &name, shared))
            .await??;
    Ok(Some(history))
}

/// Serves HTTP on `listener` with the hub and the workers until `signal`
/// completes; returns once every connection, stream and worker has finished.
/// `cfg.redis_url` must be set.
pub async fn run(
    cfg: Config,
    listener: TcpListener,
    signal: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    run_listening(cfg, listener, None, signal).await
}

/// [`run`], with the Mastodon-compatible API on `mastodon` when given (a
/// listener bound by the caller, say on port 0) instead of
/// `--mastodon-listen`'s address.
pub async fn run_listening(
    cfg: Config,
    listener: TcpListener,
    mastodon: Option<TcpListener>,
    signal: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let store = open_store(&cfg)?;
    let (trigger, shutdown) = shutdown::channel();
    tokio::spawn(async move {
        signal.await;
        tracing::info!("shutting down");
        trigger.fire();
    });
    let secret = prepare(&cfg, &store, &mut shutdown.clone()).await?;
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let history = open_history(&cfg, &store, port).await?;
    let (hub, mut tasks) = Hub::start(store.clone(), shutdown.clone(), cfg.keepalive());
    if let Some(history) = &history {
        tasks.push(tokio::spawn(crate::history::archiver::run(
            history.clone(),
            store.clone(),
            hub.tap(),
            shutdown.clone(),
        )));
        if history.tier().is_some() {
            tasks.push(tokio::spawn(crate::history::sealer::run(
                history.clone(),
                store.clone(),
                cfg.history_window_secs * 1000,
                shutdown.clone(),
            )));
        }
    }
    tasks.extend(workers::spawn(&store, &cfg, &shutdown));
    tasks.push(tokio::spawn(crate::notifier::run(
        store.clone(),
        hub.tap(),
        shutdown.clone(),
    )));
    let limits = Arc::new(StreamLimits::new(
        store.clone(),
        std::time::Duration::from_secs(cfg.stream_lease_secs),
    ));
    tasks.push(tokio::spawn(limits.clone().renew(shutdown.clone())));
    let limits_store = store.clone();
    let zstd = Arc::new(crate::stream::zstd::Dictionaries::new(store.clone()));
    tasks.push(tokio::spawn(crate::stream::zstd::run(
        zstd.clone(),
        std::time::Duration::from_secs(cfg.zstd_retrain_secs),
        shutdown.clone(),
    )));
    let state = AppState::new(Shared {
        jwt: Arc::new(Jwt::new(&secret)),
        cfg: Arc::new(cfg.clone()),
        store,
        hub,
        passwords: Passwords::default(),
        limits: limits.clone(),
        rate: Arc::new(crate::rate_limits::Limits::new(&cfg, limits_store)),
        shutdown: shutdown.clone(),
        history,
        zstd,
        demo: cfg.demo.then(Default::default),
    });
    if let Some(viewer) = &state.demo {
        tasks.push(crate::demo::spawn(
            &state.store,
            &cfg,
            viewer.clone(),
            shutdown.clone(),
        ));
    }
    let mastodon = match mastodon {
        Some(listener) => Some(Ok(listener)),
        None => match cfg
            .mastodon_listen
            .or_else(|| cfg.demo.then(|| SocketAddr::from(([127, 0, 0, 1], 8081))))
        {
            Some(addr) => Some(TcpListener::bind(addr).await.map_err(|e| (addr, e))),
            None => None,
        },
    };
    if let Some(bound) = mastodon {
        // A listener that cannot be had (the demo's port taken) leaves the
        // server serving its own API, said so.
        match bound {
            Ok(listener) => {
                let addr = listener
                    .local_addr()
                    .map_or_else(|_| "?".to_string(), |a| a.to_string());
                tracing::info!(%addr, "serving the Mastodon-compatible API");
                let (state, shutdown) = (state.clone(), shutdown.clone());
                tasks.push(tokio::spawn(async move {
                    let (router, raw) = crate::mastodon::listener(state.clone());
                    if let Err(e) =
                        crate::serve::accept_loop(listener, state, router, shutdown, raw).await
                    {
                        tracing::warn!(error = %e, "the Mastodon-compatible API stopped");
                    }
                }));
            }
            Err((addr, e)) => {
                tracing::warn!(%addr, error = %e, "cannot listen for the Mastodon-compatible API")
            }
        }
    }
    let app = http::router(state.clone());
    tracing::info!(addr = %listener.local_addr().map_or_else(|_| "?".into(), |a| a.to_string()), "listening");
    let raw = crate::serve::RawStreams::Ours;
    crate::serve::accept_loop(listener, state.clone(), app, shutdown.clone(), raw).await?;
    // Every connection has finished: no post can take another id.
    if let Err(e) = state.store.mint().release_lease().await {
        tracing::warn!(error = %e, "could not give the status-id lease back");
    }
    for task in tasks {
        let _ = task.await;
    }
    Ok(())
}

/// Runs only the background workers until `signal` completes.
pub async fn run_workers(
    cfg: Config,
    signal: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let store = open_store(&cfg)?;
    let (trigger, shutdown) = shutdown::channel();
    let mut signal = Box::pin(signal);
    let mut waiting = shutdown.clone();
    tokio::select! {
        prepared = prepare(&cfg, &store, &mut waiting) => {
            prepared?;
        }
        _ = &mut signal => return Ok(()),
    }
    let tasks = workers::spawn(&store, &cfg, &shutdown);
    tracing::info!(workers = cfg.workers, "workers running");
    signal.await;
    trigger.fire();
    for task in tasks {
        let _ = task.await;
    }
    Ok(())
}
