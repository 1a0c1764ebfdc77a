//! Password hashing with argon2id, off the async threads and bounded in
//! concurrency (each hash takes ~19 MiB, so a burst of sign-ups must not
//! allocate without bound).

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// A hash of a password no one has, verified when the login is unknown so
/// that unknown and known logins take the same time.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$1W0Av/lGUZ+8Tb2pQk+ab0dS1TCEhXQzBlFn0mG1h3A";

/// The password hasher.
#[derive(Clone)]
pub struct Passwords {
    permits: Arc<Semaphore>,
}

impl Default for Passwords {
    fn default() -> Self {
        let n = std::thread::available_parallelism().map_or(2, |n| n.get());
        Passwords {
            permits: Arc::new(Semaphore::new(n * 2)),
        }
    }
}

impl Passwords {
    /// The argon2id PHC string of `password`.
    pub async fn hash(&self, password: String) -> Option<String> {
        let _permit = self.permits.acquire().await.ok()?;
        tokio::task::spawn_blocking(move || {
            let salt = SaltString::generate(&mut OsRng);
            Argon2::default()
                .hash_password(password.as_bytes(), &salt)
                .ok()
                .map(|h| h.to_string())
        })
        .await
        .ok()
        .flatten()
    }

    /// Whether `password` matches `hash` (or, without a hash, spends the same
    /// time and answers false).
    pub async fn verify(&self, password: String, hash: Option<String>) -> bool {
        let Ok(_permit) = self.permits.acquire().await else {
            return false;
        };
        tokio::task::spawn_blocking(move || {
            let known = hash.is_some();
            let phc = hash.unwrap_or_else(|| DUMMY_HASH.to_string());
            let Ok(parsed) = PasswordHash::new(&phc) else {
                return false;
            };
            Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
                && known
        })
        .await
        .unwrap_or(false)
    }
}
