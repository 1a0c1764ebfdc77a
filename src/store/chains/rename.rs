//! The rename chain: the unique index takes the new login or email and
//! frees the old (`rename_claim.lua`, `{g}`), then the user's own keys show
//! it (the user HASH's `login`, or the secret HASH's `email`). Recorded in
//! the outbox first, so a process that dies between the two steps leaves
//! the second to a worker, and never a name the index gave away still shown
//! by its old owner.

use crate::store::outbox::{Op, Owed};
use crate::store::{Store, StoreError, StoreResult};
use redis::AsyncCommands;

impl Store {
    /// Runs a rename's steps; `Conflict` when the new value is taken.
    pub(crate) async fn run_rename(&self, owed: &Owed) -> StoreResult<()> {
        let Op::Rename {
            uid,
            field,
            old,
            new,
        } = &owed.op
        else {
            return Err(StoreError::Internal("not a rename".into()));
        };
        let mut conn = self.conn();
        let claimed: String = self
            .scripts
            .rename_claim
            .key(self.keys.unique())
            .arg(old.to_lowercase())
            .arg(new.to_lowercase())
            .arg(uid)
            .invoke_async(&mut conn)
            .await?;
        if claimed != "ok" {
            self.finish_with(owed, Vec::new()).await?;
            let (code, what) = if field == "login" {
                ("login_taken", "That login")
            } else {
                ("email_taken", "That email")
            };
            return Err(StoreError::Conflict(
                code,
                format!("{what} is taken (logins and emails are unique ignoring case)."),
            ));
        }
        let _: () = if field == "login" {
            conn.hset(self.keys.user(*uid), "login", new).await?
        } else {
            conn.hset(self.keys.secret(*uid), "email", new).await?
        };
        // Requests of this process carry the new login at once (others
        // within the session cache's second).
        self.session_cache.forget_user(*uid);
        self.finish_with(owed, Vec::new()).await
    }
}
