//! Abuse limits: token buckets for sign-up, login and new stream
//! connections per client address, and for writes per user, counted in
//! Redis ([`store::rate`](crate::store::entities::rate): one key per address or user, in a slot of its
//! own, one script per request), so N processes admit what one does.
//!
//! Each bucket holds up to `burst` tokens and refills at `per_minute / 60`
//! tokens a second; a request takes one token or is answered 429 with the
//! seconds until a token is back. A bucket's key lives until it would be
//! full again, so the keys are bounded by the clients active in the last
//! minute. When Redis cannot answer, the request goes through (it needs
//! Redis anyway, and fails on its own). `FIREHOSE_RATE_LIMITS=off` turns
//! every limit off.

use crate::config::Config;
use crate::error::ApiError;
use crate::store::entities::rate;
use crate::store::Store;
use std::net::IpAddr;
use std::time::Instant;

/// One kind of limit.
struct Rate {
    what: &'static str,
    said: &'static str,
    per_sec: f64,
    burst: f64,
}

impl Rate {
    fn new(what: &'static str, said: &'static str, per_minute: u32, burst: u32) -> Rate {
        Rate {
            what,
            said,
            per_sec: f64::from(per_minute.max(1)) / 60.0,
            burst: f64::from(burst.max(1)),
        }
    }
}

/// Every abuse limit.
pub struct Limits {
    enabled: bool,
    store: Store,
    signups: Rate,
    logins: Rate,
    writes: Rate,
    streams: Rate,
    lookups: Rate,
    guesses: Rate,
}

/// Failed logins to one account, from any address, before it answers 429.
pub(crate) const GUESSES: u32 = 10;
/// The window those failures are counted over (a failure is forgotten
/// after it: the bucket refills `GUESSES` tokens in this time).
pub(crate) const GUESS_WINDOW_SECS: u32 = 15 * 60;
/// Lookups by email (or by any field) one user may make a minute.
pub(crate) const LOOKUPS_PER_MINUTE: u32 = 30;

impl Limits {
    /// The limits configured in `cfg`, counted in `store`.
    pub fn new(cfg: &Config, store: Store) -> Self {
        Limits {
            enabled: cfg.rate_limits.enabled(),
            store,
            signups: Rate::new(
                "signup",
                "sign-ups from this address",
                cfg.signups_per_minute,
                cfg.signups_per_minute,
            ),
            logins: Rate::new(
                "login",
                "logins from this address",
                cfg.logins_per_minute,
                cfg.logins_per_minute,
            ),
            writes: Rate::new(
                "write",
                "writes by this user",
                cfg.writes_per_minute,
                cfg.writes_per_minute,
            ),
            streams: Rate::new(
                "stream",
                "new streams from this address",
                cfg.stream_connects_per_minute,
                cfg.stream_connects_per_minute,
            ),
            lookups: Rate::new(
                "lookup",
                "lookups by email by this user",
                LOOKUPS_PER_MINUTE,
                LOOKUPS_PER_MINUTE,
            ),
            guesses: Rate {
                what: "guess",
                said: "failed logins to this account",
                per_sec: f64::from(GUESSES) / f64::from(GUESS_WINDOW_SECS),
                burst: f64::from(GUESSES),
            },
        }
    }

    /// A sign-up from `addr`.
    pub async fn signup(&self, addr: Option<IpAddr>) -> Result<(), ApiError> {
        match addr {
            Some(a) => self.take(&self.signups, &a.to_string()).await,
            None => Ok(()),
        }
    }

    /// A login from `addr`.
    pub async fn login(&self, addr: Option<IpAddr>) -> Result<(), ApiError> {
        match addr {
            Some(a) => self.take(&self.logins, &a.to_string()).await,
            None => Ok(()),
        }
    }

    /// A write by `uid`.
    pub async fn write(&self, uid: u64) -> Result<(), ApiError> {
        self.take(&self.writes, &uid.to_string()).await
    }

    /// A new stream (any transport) from `addr`. Loopback peers are not
    /// counted: they are this machine (a load test, or a proxy that is not
    /// listed in `--trusted-proxies`, whose clients all share its address).
    pub async fn stream_connect(&self, addr: Option<IpAddr>) -> Result<(), ApiError> {
        match addr {
            Some(a) if !a.is_loopback() => self.take(&self.streams, &a.to_string()).await,
            _ => Ok(()),
        }
    }

    /// A lookup by email or by any field by `uid`: limited whatever
    /// `FIREHOSE_RATE_LIMITS` says, since the limit keeps the email index
    /// from being read as an oracle.
    pub async fn lookup(&self, uid: u64) -> Result<(), ApiError> {
        self.count(&self.lookups, &uid.to_string(), true).await
    }

    /// Before a password is checked for account `uid`: 429 while the
    /// account has had [`GUESSES`] failures in the last
    /// [`GUESS_WINDOW_SECS`] (from any address; on whatever
    /// `FIREHOSE_RATE_LIMITS` says). The owner waits at most that window.
    pub async fn guesses_left(&self, uid: u64) -> Result<(), ApiError> {
        self.count(&self.guesses, &uid.to_string(), false).await
    }

    /// A failed login to account `uid`.
    pub async fn guess_failed(&self, uid: u64) {
        let _ = self.count(&self.guesses, &uid.to_string(), true).await;
    }

    async fn take(&self, rate: &Rate, who: &str) -> Result<(), ApiError> {
        if !self.enabled {
            return Ok(());
        }
        self.count(rate, who, true).await
    }

    /// Takes a token from `who`'s bucket of `rate` (`take`), or looks
    /// whether one is there; 429 when none is.
    async fn count(&self, rate: &Rate, who: &str, take: bool) -> Result<(), ApiError> {
        match rate::take(&self.store, rate.what, who, rate.per_sec, rate.burst, take).await {
            Ok(None) => Ok(()),
            Ok(Some(secs)) => Err(ApiError::too_many(format!(
                "Too many {}; try again later.",
                rate.said
            ))
            .retry_after(secs)),
            Err(e) => {
                tracing::debug!(error = %e, "rate limit not counted");
                Ok(())
            }
        }
    }
}

/// One token bucket, for a limit kept by a single task (a socket's control
/// messages).
pub(crate) struct Bucket {
    per_sec: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// `per_sec` a second with bursts of `burst`.
    pub(crate) fn new(per_sec: f64, burst: f64) -> Self {
        Bucket {
            per_sec,
            burst,
            tokens: burst,
            at: Instant::now(),
        }
    }

    /// Takes a token if there is one.
    pub(crate) fn take(&mut self) -> bool {
        let now = Instant::now();
        self.tokens = (self.tokens + now.duration_since(self.at).as_secs_f64() * self.per_sec)
            .min(self.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The client's address, put on each request by the accept loop.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientAddr(pub IpAddr);

impl ClientAddr {
    /// The client behind `peer`: `peer` itself, or, when `peer` is one of
    /// the `trusted` proxies, the nearest address in `X-Forwarded-For` that
    /// is not a trusted proxy (the header is read right to left, since a
    /// client can write anything at its left end).
    pub(crate) fn of(peer: IpAddr, trusted: &[IpAddr], forwarded: Option<&[u8]>) -> ClientAddr {
        if !trusted.contains(&peer) {
            return ClientAddr(peer);
        }
        let nearest = forwarded
            .and_then(|h| std::str::from_utf8(h).ok())
            .into_iter()
            .flat_map(|h| h.rsplit(','))
            .map_while(|a| a.trim().parse::<IpAddr>().ok())
            .find(|a| !trusted.contains(a));
        ClientAddr(nearest.unwrap_or(peer))
    }
}

impl ClientAddr {
    /// [`ClientAddr::of`] for a request's headers (the router's requests and
    /// the raw stream path both ask this way).
    pub(crate) fn from_headers(
        peer: IpAddr,
        trusted: &[IpAddr],
        headers: &axum::http::HeaderMap,
    ) -> ClientAddr {
        let forwarded = headers.get("x-forwarded-for").map(|v| v.as_bytes());
        ClientAddr::of(peer, trusted, forwarded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_for_counts_only_from_a_trusted_proxy() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let proxy = [ip("10.0.0.1"), ip("10.0.0.2")];
        let of =
            |peer: &str, h: Option<&str>| ClientAddr::of(ip(peer), &proxy, h.map(str::as_bytes)).0;
        // A direct client cannot choose its address.
        assert_eq!(of("203.0.113.9", Some("1.2.3.4")), ip("203.0.113.9"));
        // Behind the proxy: the nearest untrusted hop, not what the client wrote.
        assert_eq!(
            of("10.0.0.1", Some("6.6.6.6, 198.51.100.7")),
            ip("198.51.100.7")
        );
        assert_eq!(
            of("10.0.0.1", Some("198.51.100.7, 10.0.0.2")),
            ip("198.51.100.7")
        );
        assert_eq!(of("10.0.0.1", Some("2001:db8::1")), ip("2001:db8::1"));
        // Missing or garbled: the proxy itself.
        assert_eq!(of("10.0.0.1", None), ip("10.0.0.1"));
        assert_eq!(of("10.0.0.1", Some("garbage")), ip("10.0.0.1"));
    }
}
