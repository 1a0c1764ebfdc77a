//! One shutdown signal obeyed by every task: the HTTP server, every stream
//! loop and every worker.

use tokio::sync::watch;

/// Sets the signal.
#[derive(Debug)]
pub struct Trigger(watch::Sender<bool>);

/// Listens for the signal; cheap to clone.
#[derive(Debug, Clone)]
pub struct Shutdown(watch::Receiver<bool>);

/// A new, unset signal.
pub fn channel() -> (Trigger, Shutdown) {
    let (tx, rx) = watch::channel(false);
    (Trigger(tx), Shutdown(rx))
}

impl Trigger {
    /// Sets the signal for every listener.
    pub fn fire(&self) {
        let _ = self.0.send(true);
    }
}

impl Shutdown {
    /// Whether the signal is set.
    pub fn is_set(&self) -> bool {
        *self.0.borrow()
    }

    /// Waits until the signal is set (at once if it already is).
    pub async fn wait(&mut self) {
        let _ = self.0.wait_for(|set| *set).await;
    }
}

/// Completes on SIGINT or SIGTERM.
pub async fn signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
