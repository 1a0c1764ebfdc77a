//! Abuse limits: token buckets for sign-up and login per client address and
//! for writes per user, enforced in this process.
//!
//! Each bucket holds up to `burst` tokens and refills at `per_minute / 60`
//! tokens a second; a request takes one token or is answered 429 with the
//! seconds until a token is back. The map of buckets is bounded: past
//! [`MAX_KEYS`] keys, buckets that have refilled completely (nothing to
//! remember) are dropped, and if that is not enough the map starts afresh,
//! which errs towards letting clients through rather than growing.
//! `FIREHOSE_RATE_LIMITS=off` turns every limit off.

use crate::config::Config;
use crate::error::ApiError;
use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// Most keys (addresses or users) one limiter remembers.
pub const MAX_KEYS: usize = 100_000;

/// One token bucket per key.
pub struct RateLimiter<K> {
    what: &'static str,
    per_sec: f64,
    burst: f64,
    buckets: Mutex<HashMap<K, (f64, Instant)>>,
}

impl<K: Hash + Eq + Clone> RateLimiter<K> {
    /// A limiter of `per_minute` requests a minute with bursts of `burst`;
    /// `what` names it in the 429 message.
    pub fn new(what: &'static str, per_minute: u32, burst: u32) -> Self {
        RateLimiter {
            what,
            per_sec: f64::from(per_minute.max(1)) / 60.0,
            burst: f64::from(burst.max(1)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes a token for `key`, or says how many seconds until one is back.
    pub fn take(&self, key: &K) -> Result<(), u64> {
        let now = Instant::now();
        let Ok(mut buckets) = self.buckets.lock() else {
            return Ok(());
        };
        if buckets.len() >= MAX_KEYS && !buckets.contains_key(key) {
            let full_after = self.burst / self.per_sec;
            buckets.retain(|_, (tokens, at)| {
                *tokens + now.duration_since(*at).as_secs_f64() * self.per_sec < self.burst
                    && now.duration_since(*at).as_secs_f64() < full_after
            });
            if buckets.len() >= MAX_KEYS {
                buckets.clear();
            }
        }
        let (tokens, at) = buckets.entry(key.clone()).or_insert((self.burst, now));
        let refilled =
            (*tokens + now.duration_since(*at).as_secs_f64() * self.per_sec).min(self.burst);
        if refilled >= 1.0 {
            *tokens = refilled - 1.0;
            *at = now;
            Ok(())
        } else {
            Err(((1.0 - refilled) / self.per_sec).ceil().max(1.0) as u64)
        }
    }

    /// [`RateLimiter::take`] as a 429 with `Retry-After`.
    pub fn check(&self, key: &K) -> Result<(), ApiError> {
        self.take(key).map_err(|secs| {
            ApiError::too_many(format!("Too many {}; try again later.", self.what))
                .retry_after(secs)
        })
    }
}

/// Every abuse limit of the process.
pub struct Limits {
    enabled: bool,
    /// Sign-ups per client address.
    pub signups: RateLimiter<IpAddr>,
    /// Logins per client address.
    pub logins: RateLimiter<IpAddr>,
    /// Writes (posts, deletes, follows, profile changes) per user.
    pub writes: RateLimiter<u64>,
}

impl Limits {
    /// The limits configured in `cfg`.
    pub fn new(cfg: &Config) -> Self {
        Limits {
            enabled: cfg.rate_limits.enabled(),
            signups: RateLimiter::new(
                "sign-ups from this address",
                cfg.signups_per_minute,
                cfg.signups_per_minute,
            ),
            logins: RateLimiter::new(
                "logins from this address",
                cfg.logins_per_minute,
                cfg.logins_per_minute,
            ),
            writes: RateLimiter::new(
                "writes by this user",
                cfg.writes_per_minute,
                cfg.writes_per_minute,
            ),
        }
    }

    /// A sign-up from `addr`.
    pub fn signup(&self, addr: Option<IpAddr>) -> Result<(), ApiError> {
        match addr {
            Some(a) if self.enabled => self.signups.check(&a),
            _ => Ok(()),
        }
    }

    /// A login from `addr`.
    pub fn login(&self, addr: Option<IpAddr>) -> Result<(), ApiError> {
        match addr {
            Some(a) if self.enabled => self.logins.check(&a),
            _ => Ok(()),
        }
    }

    /// A write by `uid`.
    pub fn write(&self, uid: u64) -> Result<(), ApiError> {
        if self.enabled {
            self.writes.check(&uid)
        } else {
            Ok(())
        }
    }
}

/// One token bucket, for a limit kept by a single task (a socket's control
/// messages).
pub struct Bucket {
    per_sec: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// `per_sec` a second with bursts of `burst`.
    pub fn new(per_sec: f64, burst: f64) -> Self {
        Bucket {
            per_sec,
            burst,
            tokens: burst,
            at: Instant::now(),
        }
    }

    /// Takes a token if there is one.
    pub fn take(&mut self) -> bool {
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
pub struct ClientAddr(pub IpAddr);

impl ClientAddr {
    /// The client behind `peer`: `peer` itself, or, when `peer` is one of
    /// the `trusted` proxies, the nearest address in `X-Forwarded-For` that
    /// is not a trusted proxy (the header is read right to left, since a
    /// client can write anything at its left end).
    pub fn of(peer: IpAddr, trusted: &[IpAddr], forwarded: Option<&[u8]>) -> ClientAddr {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_refuses_with_a_wait() {
        let limiter = RateLimiter::new("tests", 60, 3);
        for _ in 0..3 {
            assert_eq!(limiter.take(&1u64), Ok(()));
        }
        assert_eq!(limiter.take(&1u64), Err(1));
        assert_eq!(limiter.take(&2u64), Ok(()), "keys are separate");
    }

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
