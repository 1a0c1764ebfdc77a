//! The store's limits and its fault-test pauses, each set from the
//! configuration once.

use crate::config::Config;
use std::time::Duration;

/// What one user may hold, enforced in the scripts that add to it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Most users one user may block.
    pub(crate) max_blocks: usize,
    /// Most users one user may mute.
    pub(crate) max_mutes: usize,
    /// Most messages a conversation keeps.
    pub(crate) max_conversation_messages: usize,
    /// Most conversations a user is in.
    pub(crate) max_conversations: usize,
    /// Seconds a deleted account's login stays reserved.
    pub(crate) login_reservation: u64,
}

impl Limits {
    pub(crate) fn new(cfg: &Config) -> Limits {
        Limits {
            max_blocks: cfg.max_blocks,
            max_mutes: cfg.max_mutes,
            max_conversation_messages: cfg.max_conversation_messages,
            max_conversations: cfg.max_conversations_per_user,
            login_reservation: cfg.login_reservation_days.saturating_mul(86_400),
        }
    }
}

/// Fault tests only (`--test-pause-*-ms`; all zero in service): where a
/// write waits so that a test can kill its process or race it there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pauses {
    /// In the middle of a suspension.
    pub(crate) suspend: Duration,
    /// Between a session's end and its revocation.
    pub(crate) session_end: Duration,
    /// Between a sign-up's two name claims.
    pub(crate) signup: Duration,
    /// Between an op's events and its retirement.
    pub(crate) retire: Duration,
}

impl Pauses {
    pub(crate) fn new(cfg: &Config) -> Pauses {
        Pauses {
            suspend: Duration::from_millis(cfg.test_pause_suspend_ms),
            session_end: Duration::from_millis(cfg.test_pause_session_end_ms),
            signup: Duration::from_millis(cfg.test_pause_signup_ms),
            retire: Duration::from_millis(cfg.test_pause_retire_ms),
        }
    }

    /// Waits `pause` (nothing when it is zero, as in service).
    pub(crate) async fn hold(pause: Duration) {
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
}
