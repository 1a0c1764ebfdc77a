//! JSON Web Tokens: HS256 pinned, minted for a session and verified (a
//! process remembers tokens whose signature it checked, by their exact
//! bytes; the expiry is checked on every use).
//!
//! The algorithm is pinned: a token whose header names any other algorithm
//! (`none` included) is refused before its signature is even considered.

use crate::error::ApiError;
use crate::model::now;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Scope for ordinary reads.
pub const SCOPE_READ: &str = "read";
/// Scope for writes.
pub const SCOPE_WRITE: &str = "write";
/// Scope for the firehose stream.
pub const SCOPE_FIREHOSE: &str = "firehose";
/// Scope of moderators: every `/api/v1/admin/` path. Minted only by the
/// operator (`firehose token --user ID --scope admin`).
pub const SCOPE_ADMIN: &str = "admin";

/// The claims of a firehose JWT.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    /// User id.
    pub sub: String,
    /// Session id, checked against Redis on every request.
    pub sid: String,
    /// Granted scopes.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Expiry, seconds since the epoch.
    pub exp: u64,
    /// Issue time.
    #[serde(default)]
    pub iat: u64,
}

/// Signing and checking keys.
pub struct Jwt {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    verified: Verified,
    /// The keys of OAuth applications' client secrets (the Mastodon API):
    /// from the secret and a label, so no such secret is ever a session's
    /// token, nor the reverse.
    apps: (EncodingKey, DecodingKey),
}

/// An OAuth application's client secret's claims: its client id.
#[derive(Debug, Serialize, Deserialize)]
struct AppClaims {
    sub: String,
    exp: u64,
}

/// Leeway on `exp`, in seconds, for clocks a little apart.
const LEEWAY: u64 = 5;

/// How many verified tokens a process remembers (a few hundred bytes each).
const VERIFIED_CAP: usize = 16_384;
const VERIFIED_SHARDS: usize = 16;

/// Tokens whose signature this process checked, with their claims, so that
/// the next request bearing one skips the HMAC and two JSON parses (about a
/// tenth of a cached home read's CPU). Only a token's exact bytes hit, and
/// the expiry is checked on every hit as [`Jwt::verify`] would: a hit is
/// what a fresh check would say. Nothing here stands for the session,
/// which is checked on its own. Bound: [`VERIFIED_CAP`] entries; a full
/// shard is emptied (its tokens are checked afresh when next seen).
struct Verified {
    shards: Vec<std::sync::Mutex<HashMap<Box<str>, Claims>>>,
}

impl Verified {
    fn new() -> Self {
        Verified {
            shards: (0..VERIFIED_SHARDS).map(|_| Default::default()).collect(),
        }
    }

    /// A token's shard, by its last character (as the session cache picks
    /// by a session id's): a signature's, evenly spread, and no second hash
    /// of the whole token before the map's own.
    fn shard(&self, token: &str) -> Option<std::sync::MutexGuard<'_, HashMap<Box<str>, Claims>>> {
        let i = token.bytes().last().map_or(0, usize::from) % VERIFIED_SHARDS;
        self.shards[i].lock().ok()
    }

    /// The claims of `token` if it was verified and has not expired at `now`.
    fn get(&self, token: &str, now: u64) -> Option<Claims> {
        let mut shard = self.shard(token)?;
        let claims = shard.get(token)?;
        if claims.exp.saturating_add(LEEWAY) < now {
            shard.remove(token);
            return None;
        }
        Some(claims.clone())
    }

    fn put(&self, token: &str, claims: &Claims) {
        let Some(mut shard) = self.shard(token) else {
            return;
        };
        if shard.len() >= VERIFIED_CAP / VERIFIED_SHARDS {
            shard.clear();
        }
        shard.insert(token.into(), claims.clone());
    }
}

impl Jwt {
    /// Keys for one HS256 secret.
    pub fn new(secret: &str) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.algorithms = vec![Algorithm::HS256];
        validation.leeway = LEEWAY;
        validation.set_required_spec_claims(&["exp", "sub"]);
        let apps = format!("{secret}\noauth-applications");
        Jwt {
            encoding: EncodingKey::from_secret(secret.as_bytes()),
            decoding: DecodingKey::from_secret(secret.as_bytes()),
            validation,
            verified: Verified::new(),
            apps: (
                EncodingKey::from_secret(apps.as_bytes()),
                DecodingKey::from_secret(apps.as_bytes()),
            ),
        }
    }

    /// The client secret of the OAuth application `client_id`: nothing is
    /// stored, the secret names its id and is signed (HS256) with a key of
    /// its own; it lasts as long as the server's secret.
    pub fn app_secret(&self, client_id: &str) -> String {
        let claims = AppClaims {
            sub: client_id.to_string(),
            exp: u64::MAX / 2,
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.apps.0)
            .unwrap_or_default()
    }

    /// Whether `secret` is the client secret of `client_id`.
    pub fn is_app_secret(&self, client_id: &str, secret: &str) -> bool {
        jsonwebtoken::decode::<AppClaims>(secret, &self.apps.1, &self.validation)
            .is_ok_and(|d| !client_id.is_empty() && d.claims.sub == client_id)
    }

    /// An OAuth application's own access token (the client-credentials
    /// grant: no user), signed as its secret is; never a client secret
    /// (its subject holds a space, which no client id does).
    pub fn app_token(&self, client_id: &str) -> String {
        self.app_secret(&format!("token {client_id}"))
    }

    /// The client id an application's own access token names.
    pub fn app_of_token(&self, token: &str) -> Option<String> {
        let d = jsonwebtoken::decode::<AppClaims>(token, &self.apps.1, &self.validation).ok()?;
        d.claims.sub.strip_prefix("token ").map(str::to_string)
    }

    /// Signs a token for a session; returns it with its expiry.
    pub fn mint(&self, uid: u64, sid: &str, scopes: &[&str], ttl_secs: u64) -> (String, u64) {
        let iat = now() as u64;
        let exp = iat + ttl_secs;
        let claims = Claims {
            sub: uid.to_string(),
            sid: sid.to_string(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            exp,
            iat,
        };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .unwrap_or_default();
        (token, exp)
    }

    /// Checks the signature, the algorithm and the expiry (a token verified
    /// before by this process: only the expiry).
    pub fn verify(&self, token: &str) -> Result<Claims, ApiError> {
        if let Some(claims) = self.verified.get(token, now() as u64) {
            return Ok(claims);
        }
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map(|d| {
                self.verified.put(token, &d.claims);
                d.claims
            })
            .map_err(|e| {
                use jsonwebtoken::errors::ErrorKind;
                let why = match e.kind() {
                    ErrorKind::ExpiredSignature => "The token has expired.",
                    ErrorKind::InvalidAlgorithm => "The token's algorithm is not accepted.",
                    ErrorKind::InvalidSignature => "The token's signature is invalid.",
                    _ => "The token is malformed.",
                };
                ApiError::unauthorized(why)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_applications_secret_is_its_own_and_never_a_sessions_token() {
        let jwt = Jwt::new("a secret of some length");
        let secret = jwt.app_secret("client-a");
        assert!(jwt.is_app_secret("client-a", &secret));
        assert!(!jwt.is_app_secret("client-b", &secret), "another app's id");
        assert!(!jwt.is_app_secret("", &jwt.app_secret("")));
        assert!(jwt.verify(&secret).is_err(), "not a session's token");
        let (token, _) = jwt.mint(7, "s1", &[SCOPE_READ], 3600);
        assert!(
            !jwt.is_app_secret("7", &token),
            "a session's token is no secret"
        );
        let other = Jwt::new("another server's secret");
        assert!(!other.is_app_secret("client-a", &secret));
    }

    #[test]
    fn a_remembered_token_still_expires_and_only_its_own_bytes_hit() {
        let jwt = Jwt::new("a secret of some length");
        let (token, exp) = jwt.mint(7, "s1", &[SCOPE_READ], 3600);
        let first = jwt.verify(&token).unwrap();
        assert_eq!(
            jwt.verified.get(&token, exp).map(|c| c.sid),
            Some("s1".into())
        );
        let again = jwt.verify(&token).unwrap();
        assert_eq!(
            (again.sub, again.sid, again.exp),
            (first.sub, first.sid, first.exp)
        );
        // Within the leeway it holds; past it the memo forgets the token.
        assert!(jwt.verified.get(&token, exp + LEEWAY).is_some());
        assert!(jwt.verified.get(&token, exp + LEEWAY + 1).is_none());
        assert!(jwt.verified.get(&token, exp).is_none());
        // A token one byte off is checked, not looked up, and refused.
        let mut forged = token.clone().into_bytes();
        let mid = forged.len() - 10;
        forged[mid] = if forged[mid] == b'A' { b'B' } else { b'A' };
        let forged = String::from_utf8(forged).unwrap();
        assert!(jwt.verify(&token).is_ok());
        assert!(jwt.verify(&forged).is_err());
        // Another process's key does not see this one's memo.
        assert!(Jwt::new("another secret").verify(&token).is_err());
    }

    #[test]
    fn the_memo_is_bounded() {
        let jwt = Jwt::new("a secret of some length");
        for i in 0..(VERIFIED_CAP as u64 * 2) {
            let (token, _) = jwt.mint(i, "s", &[], 3600);
            jwt.verify(&token).unwrap();
        }
        let held: usize = jwt
            .verified
            .shards
            .iter()
            .map(|s| s.lock().unwrap().len())
            .sum();
        assert!(held <= VERIFIED_CAP, "{held} remembered");
        assert!(held > 0);
    }
}
