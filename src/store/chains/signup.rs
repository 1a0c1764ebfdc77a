//! The sign-up chain (recorded in the user's outbox partition under the
//! id `Users::create` took): the login claimed, then the email (each in its own
//! slot; a taken one releases the other and ends the sign-up), the user's
//! keys, then the `user` event.

use crate::model::Id;
use crate::model::{Event, User};
use crate::store::chains::entry::Entry;
use crate::store::events::body;
use crate::store::handle::Store;
use crate::store::plumbing::error::{StoreError, StoreResult};
use crate::store::plumbing::settings::Pauses;
use serde::{Deserialize, Serialize};

/// A sign-up (`uid` first: versions before 2026-11-27 filled it in
/// in the `{g}` outbox's entry).
/// (`Op::User`'s payload, as recorded in the outbox.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserOp {
    /// The new user's id.
    pub uid: u64,
    /// Login as typed.
    pub login: String,
    /// Display name.
    pub name: String,
    /// Email as typed.
    pub email: String,
    /// The argon2id PHC string (kept in Redis only, never logged).
    pub password: String,
    /// Sign-up time.
    pub at: f64,
}

impl UserOp {
    /// A sign-up's steps: its names, the user's keys (fields set only if
    /// absent, so a late second run never resets counters), then the event.
    /// `Conflict` (and the entry retired, nothing kept) when a name is taken.
    pub(crate) async fn run(&self, store: &Store, entry: &Entry) -> StoreResult<()> {
        let UserOp {
            uid,
            login,
            name,
            email,
            password,
            at,
        } = self;
        // Logins hold no '@' and emails do, so the two claims of two
        // sign-ups never wait on each other crosswise: one of them wins.
        let login_free = store.users().claim_name(login, *uid).await?;
        if login_free {
            Pauses::hold(store.pauses.signup).await;
        }
        let taken = if !login_free {
            Some(("login_taken", "That login is already taken."))
        } else if !store.users().claim_name(email, *uid).await? {
            store.users().release_name(login, *uid, None).await?;
            Some(("email_taken", "That email is already registered."))
        } else {
            None
        };
        if let Some((code, message)) = taken {
            store.outbox().finish_with(entry, Vec::new()).await?;
            return Err(StoreError::Conflict(code, message.into()));
        }
        let mut conn = store.conn();
        let user = store.keys.user(*uid);
        let secret = store.keys.secret(*uid);
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
            id: Id(*uid),
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
        store
            .outbox()
            .finish_with(entry, vec![body(&Event::User { at: *at, user })])
            .await?;
        Ok(())
    }
}
