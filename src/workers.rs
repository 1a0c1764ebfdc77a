//! Background workers: the fan-out queue, the outbox sweeper and the session
//! clean-up. Each obeys the shutdown signal and keeps going through Redis
//! outages.

use crate::config::Config;
use crate::metrics::{global as metrics, inc};
use crate::model::now;
use crate::shutdown::Shutdown;
use crate::store::fanout::Step;
use crate::store::Store;
use std::time::Duration;
use tokio::task::JoinHandle;

/// How long one blocking read of the fan-out queue waits.
const BLOCK_MS: u64 = 1000;

/// Starts `cfg.workers` fan-out workers, with them one outbox sweeper, and
/// one session cleaner.
pub fn spawn(store: &Store, cfg: &Config, shutdown: &Shutdown) -> Vec<JoinHandle<()>> {
    let mut tasks = Vec::new();
    let base = format!("{}-{}", std::process::id(), rand::random::<u32>());
    for n in 0..cfg.workers {
        tasks.push(tokio::spawn(fanout_worker(
            store.clone(),
            format!("{base}-{n}"),
            cfg.reclaim_ms,
            shutdown.clone(),
        )));
    }
    if cfg.workers > 0 {
        tasks.push(tokio::spawn(outbox_sweeper(
            store.clone(),
            Duration::from_secs_f64((cfg.outbox_lease / 4.0).clamp(0.05, 1.0)),
            shutdown.clone(),
        )));
    }
    tasks.push(tokio::spawn(session_cleaner(
        store.clone(),
        cfg.max_sessions,
        cfg.session_idle_ttl,
        Duration::from_secs_f64(cfg.cleanup_interval.max(0.01)),
        shutdown.clone(),
    )));
    tasks
}

/// Works the fan-out queue until shutdown. Blocking reads use a connection
/// of the worker's own so they never hold up request traffic.
pub async fn fanout_worker(
    store: Store,
    consumer: String,
    reclaim_ms: u64,
    mut shutdown: Shutdown,
) {
    let mut conn = match store.blocking_connection(Duration::from_millis(BLOCK_MS)) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "fan-out worker cannot start");
            return;
        }
    };
    let mut group_ready = false;
    while !shutdown.is_set() {
        let step = async {
            if !group_ready {
                store.ensure_fanout_group(&mut conn).await?;
                group_ready = true;
            }
            match store
                .claim_fanout(&mut conn, &consumer, reclaim_ms, BLOCK_MS)
                .await?
            {
                None => Ok(Step::Idle),
                Some((id, task)) => store.work_fanout(&mut conn, &id, task.as_ref()).await,
            }
        };
        let result = tokio::select! {
            _ = shutdown.wait() => break,
            r = step => r,
        };
        match result {
            Ok(Step::Idle) => {}
            Ok(Step::Done(n)) => {
                inc(&metrics().fanout_batches, 1);
                tracing::debug!(followers = n, "fan-out batch done");
            }
            Err(e) => {
                group_ready = false;
                tracing::warn!(error = %e, "fan-out worker step failed; retrying");
                tokio::select! {
                    _ = shutdown.wait() => break,
                    _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                }
            }
        }
    }
}

/// Completes the work of committed writes whose request did not finish it
/// (the process died, or the client hung up and the task was dropped): the
/// outbox entries whose lease ran out.
pub async fn outbox_sweeper(store: Store, every: Duration, mut shutdown: Shutdown) {
    while !shutdown.is_set() {
        let swept = async {
            let claimed = store.claim_ops(16).await?;
            let n = claimed.len();
            for claim in claimed {
                match &claim.owed {
                    Some(owed) => store.complete_op(owed).await?,
                    None => {
                        // Only the number: an op may hold a password hash.
                        tracing::warn!(
                            op = crate::store::outbox::Owed::number(&claim.raw),
                            "dropping an outbox entry that cannot be parsed"
                        );
                        store.drop_op(&claim).await?;
                    }
                }
            }
            Ok::<usize, crate::store::StoreError>(n)
        };
        let result = tokio::select! {
            _ = shutdown.wait() => break,
            r = swept => r,
        };
        match result {
            Ok(n) if n > 0 => {
                inc(&metrics().outbox_completed, n as u64);
                tracing::info!(ops = n, "completed writes left unfinished by their request");
                continue;
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "outbox sweep failed"),
        }
        tokio::select! {
            _ = shutdown.wait() => break,
            _ = tokio::time::sleep(every) => {}
        }
    }
}

/// Drops sessions beyond `max` and those idle longer than `idle_ttl` seconds.
pub async fn session_cleaner(
    store: Store,
    max: u64,
    idle_ttl: u64,
    every: Duration,
    mut shutdown: Shutdown,
) {
    while !shutdown.is_set() {
        match store.cleanup_sessions(max, now() - idle_ttl as f64).await {
            Ok(n) if n > 0 => {
                inc(&metrics().sessions_cleaned, n as u64);
                tracing::info!(sessions = n, "session clean-up");
                continue;
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "session clean-up failed"),
        }
        tokio::select! {
            _ = shutdown.wait() => break,
            _ = tokio::time::sleep(every) => {}
        }
    }
}
