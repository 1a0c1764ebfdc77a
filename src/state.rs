//! `AppState`: what every handler, extractor and the accept loop can reach.
//! Its own module so that `http` and `serve` depend on it, not on `app`,
//! which builds it and depends on them.

use crate::config::Config;
use crate::jwt::Jwt;
use crate::password::Passwords;
use crate::shutdown::Shutdown;
use crate::store::Store;
use crate::stream::stream_limits::StreamLimits;
use crate::stream::Hub;
use std::sync::Arc;

/// What every handler can reach: one pointer, so that the extractors and
/// handlers that take it by value pay one count, not one per part.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    /// Shares `parts` with every handler.
    pub fn new(parts: Shared) -> Self {
        Self(Arc::new(parts))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The parts of [`AppState`].
pub struct Shared {
    /// The configuration.
    pub cfg: Arc<Config>,
    /// Redis.
    pub store: Store,
    /// JWT keys.
    pub jwt: Arc<Jwt>,
    /// The stream hub.
    pub hub: Hub,
    /// Password hashing.
    pub passwords: Passwords,
    /// Concurrent streams per user.
    pub limits: Arc<StreamLimits>,
    /// Rate limits on sign-up, login and writes.
    pub rate: Arc<crate::rate_limits::Limits>,
    /// The shutdown signal.
    pub shutdown: Shutdown,
    /// This process's history on disk (none with `--history 0`).
    pub history: Option<crate::history::History>,
    /// The `compress=zstd` dictionaries.
    pub zstd: Arc<crate::stream::zstd::Dictionaries>,
    /// The demo's read-only viewer (`serve --demo` only).
    pub demo: Option<Arc<crate::demo::viewer::Viewer>>,
}

impl Shared {
    /// Streams `uid` may hold at once: `--max-streams-per-user`, or for the
    /// demo's shared viewer `--demo-viewer-streams` over every visitor.
    pub fn max_streams(&self, uid: u64) -> usize {
        if self.is_demo_viewer(uid) {
            return self.cfg.demo_viewer_streams;
        }
        self.cfg.max_streams_per_user
    }

    /// Whether `uid` is the demo's shared read-only viewer (`serve --demo`),
    /// whose one session every visitor uses: it cannot be ended by one.
    pub fn is_demo_viewer(&self, uid: u64) -> bool {
        self.demo.as_ref().is_some_and(|v| v.uid() == Some(uid))
    }
}
