//! Password hashing with argon2id, off the async threads and bounded in
//! concurrency (each hash takes ~19 MiB, so a burst of sign-ups must not
//! allocate without bound).

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// A hash of a password no one has, verified when the login is unknown so
/// that unknown and known logins take the same time.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$1W0Av/lGUZ+8Tb2pQk+ab0dS1TCEhXQzBlFn0mG1h3A";

/// The password hasher.
#[derive(Clone)]
pub struct Passwords {
    permits: Arc<Semaphore>,
    /// Requests admitted to hash or verify and not yet done.
    admitted: Arc<AtomicUsize>,
}

/// Most password operations admitted at once (running or queued); beyond
/// it a sign-up or login is answered 503 with Retry-After instead of
/// queueing without bound behind the CPU-bound hashing.
pub(crate) const MAX_ADMITTED: usize = 256;

/// A place in the password-hashing queue, held while hashing or verifying.
pub struct Admission(Arc<AtomicUsize>);

impl Drop for Admission {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Default for Passwords {
    fn default() -> Self {
        let n = std::thread::available_parallelism().map_or(2, |n| n.get());
        Passwords {
            permits: Arc::new(Semaphore::new(n * 2)),
            admitted: Arc::new(AtomicUsize::new(0)),
        }
    }
}

impl Passwords {
    /// A place in the hashing queue, or 503 when it is full.
    pub fn admit(&self) -> Result<Admission, crate::error::ApiError> {
        if self.admitted.fetch_add(1, Ordering::Relaxed) >= MAX_ADMITTED {
            self.admitted.fetch_sub(1, Ordering::Relaxed);
            return Err(crate::error::ApiError::new(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                "Too many sign-ups and logins are in progress; try again shortly.",
            )
            .retry_after(1));
        }
        Ok(Admission(self.admitted.clone()))
    }

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

/// Longest accepted password, in characters (the argon2 input is bounded
/// server-side; the OpenAPI schemas say the same).
pub(crate) const MAX_CHARS: usize = 256;

/// The contract's rule for a new password (sign-up and change): 8 to 256
/// characters.
pub(crate) fn validate(password: &str) -> crate::error::ApiResult<()> {
    let n = password.chars().count();
    if n < 8 {
        return Err(crate::error::ApiError::invalid(
            "invalid_password",
            "password must be at least 8 characters.",
        ));
    }
    if n > MAX_CHARS {
        return Err(crate::error::ApiError::invalid(
            "invalid_password",
            "password must be at most 256 characters.",
        ));
    }
    Ok(())
}
