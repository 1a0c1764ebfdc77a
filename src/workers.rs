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

/// How long an idle fan-out worker waits for a hint before it looks again
/// (a hint normally wakes it at once).
const IDLE_WAIT: Duration = Duration::from_secs(1);

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

/// Works the fan-out queues until shutdown: takes a queue hinted at
/// ([`store::writes::fanout_hints`](crate::store::plumbing::fanout_hints)), claims a task there, works it, and hints the
/// queue again (it may hold more). Uses a connection of the worker's own so
/// its steps never queue behind request traffic.
pub async fn fanout_worker(
    store: Store,
    consumer: String,
    reclaim_ms: u64,
    mut shutdown: Shutdown,
) {
    let mut conn = match store.blocking_connection(IDLE_WAIT) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "fan-out worker cannot start");
            return;
        }
    };
    let hints = store.fanout().hints();
    let mut ready = std::collections::HashSet::new();
    while !shutdown.is_set() {
        let queue = tokio::select! {
            _ = shutdown.wait() => break,
            q = hints.take(IDLE_WAIT) => q,
        };
        let Some(queue) = queue else { continue };
        let step = async {
            if !ready.contains(&queue) {
                store.fanout().ensure_group(&mut conn, queue).await?;
                ready.insert(queue);
            }
            match store
                .fanout()
                .claim(&mut conn, queue, &consumer, reclaim_ms)
                .await?
            {
                None => Ok(Step::Idle),
                Some((id, task)) => {
                    // The queue may hold more: another worker takes the next
                    // task meanwhile, and this one looks again after (its
                    // own range's rest may be queued by then).
                    hints.hint(queue);
                    let done = store
                        .fanout()
                        .work(&mut conn, queue, &id, task.as_ref())
                        .await;
                    hints.hint(queue);
                    done
                }
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
                // The group may be gone (a Redis restart): made again next time.
                ready.remove(&queue);
                hints.hint(queue);
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
            let claimed = store.outbox().claim(16).await?;
            let mut n = 0;
            for claim in claimed {
                match &claim.owed {
                    // One op that fails (Redis refusing it, a bug) is left
                    // for its lease to run out again; the others claimed
                    // with it still run.
                    Some(owed) => match store.outbox().complete(owed).await {
                        Ok(()) => n += 1,
                        Err(e) => tracing::warn!(
                            op = owed.entry.n,
                            error = %e,
                            "an unfinished write failed again"
                        ),
                    },
                    None => {
                        // Only the number: an op may hold a password hash.
                        tracing::warn!(
                            op = crate::store::outbox::Entry::number(&claim.raw),
                            "dropping an outbox entry that cannot be parsed"
                        );
                        store.outbox().forget(&claim).await?;
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
        match store.sessions().cleanup(max, now() - idle_ttl as f64).await {
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
