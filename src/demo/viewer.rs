//! The demo's read-only viewer (`serve --demo` only): one account of its
//! own, made with the world and recorded in the world's record, whose one
//! session and token (scopes `read` and `firehose`, never `write`) every
//! visitor of the page shares. So a visitor watches public traffic without
//! logging in, and can post nothing; the account cannot be logged in to
//! (its password is random and forgotten) and a user who registers a
//! look-alike login gets nothing, since only the recorded id is used.

use crate::jwt::Jwt;
use crate::model::now;
use crate::password::Passwords;
use crate::store::entities::users::NewUser;
use crate::store::{Store, StoreError, StoreResult};
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Mutex;

/// The viewer's scopes.
pub(crate) const SCOPES: &[&str] = &["read", "firehose"];
/// A pass lives a day and is replaced when less than an hour is left.
const TTL: u64 = 24 * 3600;
const RENEW_BEFORE: u64 = 3600;

/// A token for the viewer.
#[derive(Debug, Clone)]
pub struct Pass {
    /// The bearer token.
    pub token: String,
    /// The viewer's user id.
    pub uid: u64,
    /// Its login.
    pub login: String,
    /// When the token expires (Unix seconds).
    pub expires_at: u64,
    sid: String,
}

/// The shared viewer of one process.
#[derive(Default)]
pub struct Viewer {
    /// The viewer's id once known (0 before): its streams are counted
    /// against `--demo-viewer-streams` rather than the per-user limit.
    uid: AtomicU64,
    pass: Mutex<Option<Pass>>,
    /// Held while the account is looked up or made, so that the world's
    /// task and a first visitor do not make two.
    making: Mutex<()>,
}

impl Viewer {
    /// The viewer's user id, once a pass was handed out.
    pub fn uid(&self) -> Option<u64> {
        Some(self.uid.load(Ordering::Relaxed)).filter(|&u| u != 0)
    }

    /// The current pass, made or renewed when there is none, it is close to
    /// expiring, or its session has ended (cleaned up, say).
    pub async fn pass(&self, store: &Store, jwt: &Jwt, passwords: &Passwords) -> StoreResult<Pass> {
        let mut held = self.pass.lock().await;
        let at = now();
        if let Some(pass) = held.as_ref() {
            let fresh = pass.expires_at > at as u64 + RENEW_BEFORE;
            if fresh
                && store
                    .sessions()
                    .user(&pass.sid, pass.uid, at)
                    .await?
                    .is_some()
            {
                return Ok(pass.clone());
            }
        }
        let (uid, login) = self.account(store, passwords).await?;
        let sid = store.sessions().create(uid, at).await?;
        let (token, expires_at) = jwt.mint(uid, &sid, SCOPES, TTL);
        let pass = Pass {
            token,
            uid,
            login,
            expires_at,
            sid,
        };
        *held = Some(pass.clone());
        Ok(pass)
    }

    /// The viewer's account (the recorded one, or a new one recorded now),
    /// remembered so that its streams are counted as the viewer's.
    pub async fn account(
        &self,
        store: &Store,
        passwords: &Passwords,
    ) -> StoreResult<(u64, String)> {
        let _one = self.making.lock().await;
        let (uid, login) = account(store, passwords).await?;
        self.uid.store(uid, Ordering::Relaxed);
        Ok((uid, login))
    }
}

async fn account(store: &Store, passwords: &Passwords) -> StoreResult<(u64, String)> {
    if let Some(uid) = store.demo().viewer().await? {
        if let Ok(user) = store.users().get(uid).await {
            return Ok((uid, user.login));
        }
    }
    let password = format!("{:032x}", rand::random::<u128>());
    let hash = passwords
        .hash(password)
        .await
        .ok_or_else(|| StoreError::Internal("hashing the viewer's password".into()))?;
    let login = format!("demo_viewer_{:06x}", rand::random::<u32>() & 0xff_ffff);
    let new = NewUser {
        login: &login,
        name: "Demo viewer",
        email: &format!("{login}@demo.example"),
        password_hash: &hash,
    };
    let user = store.users().create(&new, now()).await?;
    let uid: u64 = user.id.get();
    // Another process may have made one meanwhile: the first recorded
    // wins, unless it is the gone account this one replaces.
    if let Some(first) = store.demo().set_viewer(uid, false).await? {
        if let Ok(user) = store.users().get(first).await {
            return Ok((first, user.login));
        }
        store.demo().set_viewer(uid, true).await?;
    }
    Ok((uid, login))
}
