//! The follow chain: the follower's `following` (the authority), the
//! followee's `followers`, the follower's home, then the event.

use crate::model::Event;
use crate::store::events::body;
use crate::store::outbox::{Op, Owed};
use crate::store::plumbing::error::{StoreError, StoreResult};
use crate::store::plumbing::handle::Store;

impl Store {
    /// A follow change's steps: the follower's `following` (the authority),
    /// the followee's `followers`, the follower's home; then its event when
    /// it changed anything. Returns whether it did.
    pub(crate) async fn run_follow(&self, owed: &Owed) -> StoreResult<bool> {
        let Op::Follow {
            source,
            target,
            follow,
            at,
        } = owed.op
        else {
            return Err(StoreError::Internal("not a follow".into()));
        };
        let mut conn = self.conn();
        let (changed, applied, _count): (i64, i64, i64) = self
            .scripts
            .follow_source
            .key(self.keys.following(source))
            .key(self.keys.user(source))
            .key(self.keys.follow_applied(source))
            .key(self.keys.hide(source))
            .arg(target)
            .arg(if follow { "1" } else { "0" })
            .arg(at)
            .arg(owed.n)
            .invoke_async(&mut conn)
            .await?;
        if applied == -1 {
            self.finish_with(owed, Vec::new()).await?;
            return Err(StoreError::follow_blocked());
        }
        if applied == 1 {
            self.follow_steps(source, target, follow, owed.n as i64, at)
                .await?;
        }
        let events = if changed == 1 {
            let event = if follow {
                Event::Follow { at, source, target }
            } else {
                Event::Unfollow { at, source, target }
            };
            vec![body(&event)]
        } else {
            Vec::new()
        };
        self.finish_with(owed, events).await?;
        Ok(changed == 1)
    }
}
