//! The dispatcher's catch-up: after its subscription to the channel was
//! (re)made, the events published while it was down are read from the
//! replay buffer and dispatched as if heard live, so no connection sees a
//! gap; when the buffer no longer holds them, every connection is told.

use super::dispatcher::Dispatcher;
use crate::metrics::{global as metrics, inc};
use crate::shutdown::Shutdown;
use crate::stream::frame::WarningCode;
use crate::stream::frame::{self, Control};
use std::time::Duration;

/// How long catch-up keeps retrying a failing buffer read before it gives
/// up and tells every connection `resume_gap`.
pub(super) const CATCH_UP_PATIENCE: Duration = Duration::from_secs(30);

impl Dispatcher {
    /// After (re)subscribing: replays what the buffer holds past the last
    /// dispatched event, warning every connection if part of it was trimmed.
    pub(super) async fn catch_up(&mut self, shutdown: &mut Shutdown) {
        match self.store.moderation().suspended_ids().await {
            Ok(ids) => self.store.moderation().suspended().replace(ids),
            Err(e) => tracing::warn!(error = %e, "could not read the suspended users"),
        }
        let Some(last) = self.last else {
            // First subscription: nothing was dispatched yet, so start live.
            match self.store.events().newest_id().await {
                Ok(newest) => self.last = newest,
                Err(e) => tracing::warn!(error = %e, "could not read the replay buffer position"),
            }
            return;
        };
        match self.store.events().buffer_info().await {
            Ok(info) if frame::is_gap(last, &info) => self.tell_lost_while_away(),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not check the replay buffer for gaps"),
        }
        let mut cursor = last;
        let mut failing_since: Option<std::time::Instant> = None;
        let mut backoff = Duration::from_millis(50);
        loop {
            if shutdown.is_set() {
                return;
            }
            let page = match self.store.events().after(cursor, 1000).await {
                Ok(page) => {
                    failing_since = None;
                    backoff = Duration::from_millis(50);
                    page
                }
                Err(e) => {
                    // Retry: giving up silently would be a gap no client
                    // hears of. Past the patience, say so to everyone.
                    let since = *failing_since.get_or_insert_with(std::time::Instant::now);
                    if since.elapsed() > CATCH_UP_PATIENCE {
                        tracing::error!(error = %e, "catch-up from the replay buffer failed; telling every stream resume_gap");
                        let msg = Control::warning(
                            WarningCode::ResumeGap,
                            "Events may have been lost while the server could not read the replay buffer.",
                        )
                        .encode();
                        for conn in self.open.values() {
                            conn.offer_control(msg.clone());
                        }
                        self.last = None;
                        self.tapped = None;
                        return;
                    }
                    tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "catch-up from the replay buffer failed; retrying");
                    tokio::select! {
                        _ = shutdown.wait() => return,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                    continue;
                }
            };
            if page.lost {
                // A shard let events go before this read reached them.
                self.tell_lost_while_away();
            }
            if let Some((id, _)) = page.events.last() {
                cursor = *id;
            }
            inc(&metrics().events_replayed, page.events.len() as u64);
            for (_, json) in &page.events {
                let incoming = self.tap_json(json);
                self.incoming(incoming);
            }
            if !page.more {
                return;
            }
        }
    }

    /// Tells every subscription `resume_gap`: events published while the
    /// subscription was down are gone from the buffer.
    fn tell_lost_while_away(&self) {
        let msg = Control::warning(
            WarningCode::ResumeGap,
            "Events were lost while the server was disconnected from Redis.",
        )
        .encode();
        for entry in self.routes.entries() {
            entry.conn.offer_control(msg.clone());
        }
    }
}
