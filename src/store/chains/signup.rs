//! The sign-up chain: the user's keys, then the `user` event (the names
//! were claimed with the outbox record, in `claim_names.lua`).

use crate::model::{Event, User};
use crate::store::events::body;
use crate::store::outbox::{Op, Owed};
use crate::store::{Store, StoreError, StoreResult};

impl Store {
    /// A sign-up's remaining steps: the user's keys (fields set only if
    /// absent, so a late second run never resets counters), then the event.
    pub(crate) async fn run_user(&self, owed: &Owed) -> StoreResult<()> {
        let Op::User {
            uid,
            login,
            name,
            email,
            password,
            at,
        } = &owed.op
        else {
            return Err(StoreError::Internal("not a sign-up".into()));
        };
        let mut conn = self.conn();
        let user = self.keys.user(*uid);
        let secret = self.keys.secret(*uid);
        let mut pipe = redis::pipe();
        for (k, v) in [
            ("id", uid.to_string()),
            ("login", login.clone()),
            ("name", name.clone()),
            ("followers", "0".into()),
            ("following", "0".into()),
            ("posts", "0".into()),
            ("signup", at.to_string()),
        ] {
            pipe.hset_nx(&user, k, v).ignore();
        }
        pipe.hset_nx(&secret, "email", email).ignore();
        pipe.hset_nx(&secret, "password", password).ignore();
        let _: () = pipe.query_async(&mut conn).await?;
        let user = User {
            id: uid.to_string(),
            login: login.clone(),
            name: name.clone(),
            followers: 0,
            following: 0,
            posts: 0,
            signup: *at,
            private: false,
            email: None,
            dm_policy: None,
            suspended: None,
        };
        self.finish_with(owed, vec![body(&Event::User { at: *at, user })])
            .await?;
        Ok(())
    }
}
