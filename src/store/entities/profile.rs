//! A user changing their own account (`PATCH /api/v1/me`): login, email,
//! display name, the private flag and who may message them, with the
//! rules that hold across those changes. Each new name is taken and the
//! old freed in one atomic step (a conflict when another user holds it,
//! ignoring case); a change of both login and email is all or nothing;
//! an account made public lets its pending follow requests in.

use crate::model::{now, User};
use crate::store::entities::users::Users;
use crate::store::plumbing::error::{StoreError, StoreResult};

/// What a user changes of their account (each `None`: unchanged). The
/// values are checked by the caller (the sign-up rules).
#[derive(Debug, Clone, Default)]
pub struct ProfileChange<'a> {
    /// A new login.
    pub login: Option<&'a str>,
    /// A new email.
    pub email: Option<&'a str>,
    /// A new display name.
    pub name: Option<&'a str>,
    /// Private (statuses reach followers only) or public.
    pub private: Option<bool>,
    /// `everyone` or `following`.
    pub dm_policy: Option<&'a str>,
}

impl Users<'_> {
    /// Applies `change` to `uid`'s account and answers it as its owner
    /// reads it (email and `dm_policy` included).
    pub async fn change(self, uid: u64, change: &ProfileChange<'_>) -> StoreResult<User> {
        self.take_names(uid, change.login, change.email).await?;
        let users = self;
        let mut user = users
            .update_profile(uid, change.name, change.private)
            .await?;
        if change.private == Some(false) {
            self.let_requests_in(uid).await?;
        }
        if let Some(policy) = change.dm_policy {
            users.set_dm_policy(uid, policy).await?;
        }
        user.email = users.email(uid).await?;
        user.dm_policy = Some(users.dm_policy(uid).await?);
        Ok(user)
    }

    /// Takes a new login and email. When both change, the new email is
    /// held for the user first, so that a login change that succeeds is
    /// never followed by an email refused, and given back if the login is
    /// refused.
    async fn take_names(
        self,
        uid: u64,
        login: Option<&str>,
        email: Option<&str>,
    ) -> StoreResult<()> {
        let users = self;
        let current_login = users.get(uid).await?.login;
        let current_email = users.email(uid).await?.unwrap_or_default();
        let new_login = login.filter(|l| *l != current_login);
        let new_email = email.filter(|e| *e != current_email);
        let held = match (new_login, new_email) {
            (Some(_), Some(email)) if email.to_lowercase() != current_email.to_lowercase() => {
                if !users.claim_name(email, uid).await? {
                    return Err(StoreError::Conflict(
                        "email_taken",
                        "That email is taken (logins and emails are unique ignoring case).".into(),
                    ));
                }
                Some(email)
            }
            _ => None,
        };
        if let Some(login) = new_login {
            if let Err(e) = users.rename(uid, "login", &current_login, login).await {
                if let Some(email) = held {
                    users.release_name(email, uid, None).await?;
                }
                return Err(e);
            }
        }
        if let Some(email) = new_email {
            users.rename(uid, "email", &current_email, email).await?;
        }
        Ok(())
    }

    /// A public account has no one to approve: its pending follow
    /// requests become follows.
    async fn let_requests_in(self, uid: u64) -> StoreResult<()> {
        for requester in self.store.follows().requests().all(uid).await? {
            self.store
                .follows()
                .set(requester, uid, true, now())
                .await?;
            self.store
                .follows()
                .requests()
                .withdraw(requester, uid)
                .await?;
        }
        Ok(())
    }
}
