//! Users: registration (unique login and email), lookup by any unique field,
//! profiles.

use crate::model::Id;
use crate::model::{now, User};
use crate::store::caches::view_cache::Kind;
use crate::store::chains::account::close_account;
use crate::store::chains::payloads::DeleteAccountOp;
use crate::store::chains::rename::RenameOp;
use crate::store::chains::signup::UserOp;
use crate::store::handle::Store;
use crate::store::outbox::{Op, Owed};
use crate::store::plumbing::error::{parse_id, StoreError, StoreResult};
use redis::AsyncCommands;
use std::collections::HashMap;

/// What a new user is made of; validated by the caller.
#[derive(Debug, Clone)]
pub struct NewUser<'a> {
    /// Login as typed.
    pub login: &'a str,
    /// Display name.
    pub name: &'a str,
    /// Email as typed.
    pub email: &'a str,
    /// The argon2id PHC string.
    pub password_hash: &'a str,
}

/// Users: accounts, their names and settings (`Store::users`).
#[derive(Clone, Copy)]
pub struct Users<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Users<'_> {
    /// Deletes `uid`'s account: closes it at once (the user is 404, every
    /// session ends, the email is free, the login reserved) and returns the
    /// op whose [`Outbox::complete`](crate::store::outbox::Outbox::complete) undoes the rest.
    pub async fn delete(self, uid: u64) -> StoreResult<Owed> {
        let user = self.get(uid).await?;
        let email = self.email(uid).await?.unwrap_or_default();
        let op = DeleteAccountOp {
            uid,
            login: user.login,
            email,
            at: now(),
        };
        let owed = self
            .store
            .outbox()
            .start(Op::DeleteAccount(op.clone()))
            .await?;
        close_account(self.store, &owed.entry, &op).await?;
        Ok(owed)
    }

    /// Whether a login or email (any case) is already taken.
    pub async fn is_taken(self, value: &str) -> StoreResult<bool> {
        let mut conn = self.store.conn();
        let holder: Option<String> = conn
            .get(self.store.keys.name(&value.to_lowercase()))
            .await?;
        Ok(match holder {
            None => false,
            // A deleted account's login, reserved until a time.
            Some(h) => reserved_until(&h).is_none_or(|until| until > crate::model::now()),
        })
    }

    /// Claims `value` (any case) for `uid`: true when it is theirs now,
    /// false when someone else holds it (`name_claim.lua`).
    pub(crate) async fn claim_name(self, value: &str, uid: u64) -> StoreResult<bool> {
        let mut conn = self.store.conn();
        let got: i64 = self
            .store
            .scripts
            .name_claim
            .key(self.store.keys.name(&value.to_lowercase()))
            .arg(uid)
            .invoke_async(&mut conn)
            .await?;
        Ok(got == 1)
    }

    /// Gives `value` (any case) up if `uid` still holds it: freed, or kept
    /// reserved until `until` (Unix seconds) when given (`name_release.lua`).
    pub(crate) async fn release_name(
        self,
        value: &str,
        uid: u64,
        until: Option<u64>,
    ) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let _: i64 = self
            .store
            .scripts
            .name_release
            .key(self.store.keys.name(&value.to_lowercase()))
            .arg(uid)
            .arg(until.map_or(String::new(), |t| format!("r:{uid}:{t}")))
            .arg(until.unwrap_or(0))
            .invoke_async(&mut conn)
            .await?;
        Ok(())
    }

    /// Creates a user; `Conflict` when the login or the email is taken.
    /// The user's id is a snowflake ([`Mint::user_id`](crate::store::writes::next_ids::Mint::user_id)); the sign-up
    /// is recorded in the user's outbox partition, then its names are
    /// claimed, each in its own slot, the user's keys written and the
    /// sign-up announced (`chains/signup.rs`).
    pub async fn create(self, new: &NewUser<'_>, signup: f64) -> StoreResult<User> {
        let uid = self.store.mint().user_id().await?;
        let op = UserOp {
            uid,
            login: new.login.to_string(),
            name: new.name.to_string(),
            email: new.email.to_string(),
            password: new.password_hash.to_string(),
            at: signup,
        };
        let owed = self.store.outbox().start(Op::User(op.clone())).await?;
        op.run(self.store, &owed.entry).await?;
        Ok(User {
            id: Id(uid),
            login: new.login.to_string(),
            name: new.name.to_string(),
            followers: 0,
            following: 0,
            posts: 0,
            signup,
            private: false,
            email: None,
            dm_policy: None,
            suspended: None,
        })
    }

    /// The user with this id.
    pub async fn get(self, uid: u64) -> StoreResult<User> {
        let key = self.store.keys.user(uid);
        if let Some(views) = self.store.caches.views.get(&[(&key, Kind::User)]).await? {
            return views[0].user(false).ok_or(StoreError::NotFound("user"));
        }
        let mut conn = self.store.conn();
        let h: HashMap<String, String> = conn.hgetall(key).await?;
        User::from_hash(&h).ok_or(StoreError::NotFound("user"))
    }

    /// A user, suspended or not, with `suspended` (admin paths, the
    /// operator's tools).
    pub async fn get_any(self, uid: u64) -> StoreResult<User> {
        let key = self.store.keys.user(uid);
        if let Some(views) = self.store.caches.views.get(&[(&key, Kind::User)]).await? {
            return views[0].user(true).ok_or(StoreError::NotFound("user"));
        }
        let mut conn = self.store.conn();
        let h: HashMap<String, String> = conn.hgetall(key).await?;
        User::from_hash_admin(&h).ok_or(StoreError::NotFound("user"))
    }

    /// The users with these ids, in order, skipping unknown ones.
    pub async fn many(self, uids: &[u64]) -> StoreResult<Vec<User>> {
        if uids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for &uid in uids {
            pipe.hgetall(self.store.keys.user(uid));
        }
        let mut conn = self.store.conn();
        let hashes: Vec<HashMap<String, String>> = pipe.query_async(&mut conn).await?;
        Ok(hashes.iter().filter_map(User::from_hash).collect())
    }

    /// Whether the user exists (and is not being deleted, nor suspended).
    pub async fn exists(self, uid: u64) -> StoreResult<bool> {
        let mut conn = self.store.conn();
        let (id, deleted, suspended): (Option<String>, Option<String>, Option<String>) =
            redis::cmd("HMGET")
                .arg(self.store.keys.user(uid))
                .arg("id")
                .arg("deleted")
                .arg("suspended")
                .query_async(&mut conn)
                .await?;
        Ok(id.is_some() && deleted.is_none() && suspended.as_deref() != Some("1"))
    }

    /// [`Users::exists`] for each of `uids`, in one pipeline.
    pub async fn exist(self, uids: &[u64]) -> StoreResult<Vec<bool>> {
        if uids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for &uid in uids {
            pipe.cmd("HMGET")
                .arg(self.store.keys.user(uid))
                .arg("id")
                .arg("deleted")
                .arg("suspended");
        }
        let mut conn = self.store.conn();
        let found: Vec<(Option<String>, Option<String>, Option<String>)> =
            pipe.query_async(&mut conn).await?;
        Ok(found
            .into_iter()
            .map(|(id, deleted, suspended)| {
                id.is_some() && deleted.is_none() && suspended.as_deref() != Some("1")
            })
            .collect())
    }

    /// The user id a login or email (any case) belongs to (none for a
    /// deleted account's reserved login).
    pub async fn lookup(self, value: &str) -> StoreResult<Option<u64>> {
        let mut conn = self.store.conn();
        let id: Option<String> = conn
            .get(self.store.keys.name(&value.to_lowercase()))
            .await?;
        match id {
            Some(id) if reserved_until(&id).is_some() => Ok(None),
            id => id.as_deref().map(parse_id).transpose(),
        }
    }

    /// The user's email.
    pub async fn email(self, uid: u64) -> StoreResult<Option<String>> {
        let mut conn = self.store.conn();
        Ok(conn.hget(self.store.keys.secret(uid), "email").await?)
    }

    /// The user's argon2id PHC string.
    pub async fn password_hash(self, uid: u64) -> StoreResult<Option<String>> {
        let mut conn = self.store.conn();
        Ok(conn.hget(self.store.keys.secret(uid), "password").await?)
    }

    /// Changes the user's `login` or `email` (`field`) from `old` to `new`
    /// (both as typed): `Conflict` when another user holds `new` (ignoring
    /// case, among every login and email). The old value is free at once.
    pub async fn rename(self, uid: u64, field: &str, old: &str, new: &str) -> StoreResult<()> {
        let op = RenameOp {
            uid,
            field: field.to_string(),
            old: old.to_string(),
            new: new.to_string(),
        };
        let owed = self.store.outbox().start(Op::Rename(op.clone())).await?;
        op.run(self.store, &owed.entry).await
    }

    /// The user's `dm_policy` (`everyone` when never set).
    pub async fn dm_policy(self, uid: u64) -> StoreResult<String> {
        let mut conn = self.store.conn();
        let policy: Option<String> = conn.hget(self.store.keys.user(uid), "dm_policy").await?;
        Ok(policy.unwrap_or_else(|| "everyone".to_string()))
    }

    /// Sets the user's `dm_policy` (one key: the user HASH).
    pub async fn set_dm_policy(self, uid: u64, policy: &str) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let _: () = conn
            .hset(self.store.keys.user(uid), "dm_policy", policy)
            .await?;
        Ok(())
    }

    /// Replaces the user's password hash (one key: the user's secret HASH).
    pub async fn set_password_hash(self, uid: u64, hash: &str) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let _: () = conn
            .hset(self.store.keys.secret(uid), "password", hash)
            .await?;
        Ok(())
    }

    /// Changes the display name and/or the private flag.
    pub async fn update_profile(
        self,
        uid: u64,
        name: Option<&str>,
        private: Option<bool>,
    ) -> StoreResult<User> {
        let mut pipe = redis::pipe();
        let key = self.store.keys.user(uid);
        if let Some(name) = name {
            pipe.hset(&key, "name", name).ignore();
        }
        if let Some(private) = private {
            pipe.hset(&key, "private", if private { "1" } else { "0" })
                .ignore();
        }
        let mut conn = self.store.conn();
        if name.is_some() || private.is_some() {
            let _: () = pipe.query_async(&mut conn).await?;
        }
        if private.is_some() {
            // Requests of this process see the new flag at once.
            self.store.caches.sessions.forget_user(uid);
        }
        self.get(uid).await
    }

    /// Marks (or unmarks) the user as allowed to receive the firehose scope at login.
    pub async fn set_firehose_allowed(self, uid: u64, allowed: bool) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let _: () = conn
            .hset(
                self.store.keys.user(uid),
                "firehose",
                if allowed { "1" } else { "0" },
            )
            .await?;
        Ok(())
    }

    /// What a login needs of its user, in one read: the account (`None`
    /// when suspended or being deleted), whether it is suspended, and
    /// whether its logins get the firehose scope.
    pub async fn login_account(self, uid: u64) -> StoreResult<LoginAccount> {
        let mut conn = self.store.conn();
        let h: HashMap<String, String> = conn.hgetall(self.store.keys.user(uid)).await?;
        let flag = |k: &str| h.get(k).is_some_and(|v| v == "1");
        Ok(LoginAccount {
            user: User::from_hash(&h),
            suspended: flag("suspended"),
            firehose: flag("firehose"),
        })
    }
}

/// A user as a login sees it ([`Users::login_account`]).
#[derive(Debug)]
pub struct LoginAccount {
    /// The public account; `None` when suspended or being deleted.
    pub user: Option<User>,
    /// Whether an admin suspended it.
    pub suspended: bool,
    /// Whether its logins get the firehose scope.
    pub firehose: bool,
}

/// When a deleted account's reserved login (`r:<uid>:<until>` in its
/// name key, `name_release.lua`) is free again; `None` for a live
/// user's value.
fn reserved_until(holder: &str) -> Option<f64> {
    holder.strip_prefix("r:")?.split_once(':')?.1.parse().ok()
}
