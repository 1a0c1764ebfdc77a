//! The threads that read the history for replays and searches: a block's
//! positioned read, its decompression and (for a replay) the parse of its
//! events into frames run here, not on the async threads the live streams
//! run on, and at a lower priority ([`NICE`]) than those: when the CPU is
//! short, the kernel gives it to the live deliveries first, and a catch-up
//! or a search takes what is left (docs/benchmarks.md, *The history*).
//!
//! [`Readers`] is a fixed set of `MAX_READERS` threads, one for each read
//! the history lets run at once (so a read waiting on the disk holds up no
//! other), started once per process when a history is first opened
//! ([`Readers::shared`]) and fed through one queue; a job's answer comes
//! back on a oneshot channel.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

/// Block reads in flight at once over every replay and search (one
/// thread each); the rest wait their turn.
pub const MAX_READERS: usize = 8;

/// The nice value of the reader threads (0 is the process's; 19 the
/// lowest priority): at 10, a busy reader thread gets about a tenth of
/// the CPU a busy live thread gets.
pub(crate) const NICE: i32 = 10;

type Job = Box<dyn FnOnce() + Send>;

/// The reader threads; cheap to clone.
#[derive(Clone)]
pub(crate) struct Readers {
    jobs: mpsc::Sender<Job>,
}

impl std::fmt::Debug for Readers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Readers")
    }
}

impl Readers {
    /// The process's reader threads, started on the first call.
    pub(crate) fn shared() -> std::io::Result<Readers> {
        static SHARED: std::sync::OnceLock<Readers> = std::sync::OnceLock::new();
        if let Some(readers) = SHARED.get() {
            return Ok(readers.clone());
        }
        // Two first calls at once: one set wins, the other's threads end
        // as its queue closes.
        let started = Readers::start()?;
        Ok(SHARED.get_or_init(|| started).clone())
    }

    /// Starts a set of threads. They end when the last `Readers` of the
    /// set is dropped.
    fn start() -> std::io::Result<Readers> {
        let threads = MAX_READERS;
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for i in 0..threads {
            let queue = queue.clone();
            std::thread::Builder::new()
                .name(format!("history-reader-{i}"))
                .spawn(move || run(&queue))?;
        }
        Ok(Readers { jobs })
    }

    /// Runs `job` on a reader thread and waits for its answer.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> std::io::Result<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.jobs
            .send(Box::new(move || {
                let _ = tx.send(job());
            }))
            .map_err(|_| std::io::Error::other("the history's reader threads have ended"))?;
        rx.await
            .map_err(|_| std::io::Error::other("a history read was abandoned by its thread"))
    }
}

/// A reader thread: lowers its own priority, then runs jobs until the
/// queue closes.
fn run(queue: &Mutex<mpsc::Receiver<Job>>) {
    // On Linux a thread's id names it alone to `setpriority`.
    if let Err(e) = rustix::process::setpriority_process(Some(rustix::thread::gettid()), NICE) {
        tracing::warn!(error = %e, "a history reader thread keeps the process's priority");
    }
    loop {
        let job = {
            let queue = queue.lock().unwrap_or_else(|e| e.into_inner());
            queue.recv()
        };
        let Ok(job) = job else { return };
        // A job that panics takes only its own answer with it (its caller
        // hears the channel close); the thread goes on.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_run_at_a_lower_priority_and_answer() {
        let readers = Readers::start().unwrap();
        let before = rustix::process::getpriority_process(None).unwrap();
        let nice = readers
            .run(|| rustix::process::getpriority_process(Some(rustix::thread::gettid())))
            .await
            .unwrap()
            .unwrap();
        assert!(nice >= NICE, "reader thread nice {nice}");
        let after = rustix::process::getpriority_process(None).unwrap();
        assert_eq!(before, after, "the caller's priority is untouched");
        let panicked = readers.run(|| panic!("a bad job")).await;
        assert!(panicked.is_err());
        assert_eq!(readers.run(|| 2 + 2).await.unwrap(), 4);
    }
}
