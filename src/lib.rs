//! firehose: a Twitter-like social network on Redis whose heart is a
//! streaming firehose.
//!
//! Write endpoints change Redis through atomic Lua scripts and emit one event
//! per write (XADD to a capped replay buffer + PUBLISH, atomically). Each
//! process holds one Redis subscription feeding an in-process hub that routes
//! every event, through filters compiled into shared indices, to the bounded
//! queues of the SSE, NDJSON and WebSocket connections that want it.
//!
//! - [`config`]: flags and environment.
//! - [`app`]: `run` (server + hub + workers).
//! - [`state`]: [`state::AppState`], what handlers and the accept loop share.
//! - [`serve`]: the accept loop; plain SSE/NDJSON streams on the raw socket,
//!   everything else through hyper and the axum router.
//! - [`http`]: one module per resource, handlers named by verb.
//! - [`auth`]: the session extractors; [`jwt`]: minting and verifying tokens.
//! - [`store`]: the only code that talks to Redis.
//! - [`stream`]: the hub and the per-connection feeds.
//! - [`workers`]: the fan-out queue worker and the session clean-up.
//! - [`history`]: the events of the last day on this process's disk.
//! - [`embedded`]: the private redis-server started when none answers.
//! - [`rate_limits`]: rate limits on sign-up, login and writes.
//! - [`nofile`]: the open-file limit and the connection cap it allows.
//! - [`model`], [`text`], [`password`], [`metrics`], [`error`], [`shutdown`].
//!
//! The pure matcher lives in the `firehose-filters` crate (`filters/`).

// What the crate publishes is what the binary, the tests and the benches
// use; everything else is `pub(crate)`, and `unreachable_pub` keeps it so.
#![warn(unreachable_pub)]
// These docs are written for the house's readers: a public module's doc
// names the crate-private parts it is made of. Such links resolve in
// `cargo doc --document-private-items`, which CI runs with `-D warnings`
// so that every item's links are checked.
#![allow(rustdoc::private_intra_doc_links)]

pub mod app;
pub mod auth;
pub mod config;
pub mod demo;
pub mod embedded;
pub(crate) mod error;
pub(crate) mod hides;
pub mod history;
pub mod http;
pub(crate) mod jwt;
pub(crate) mod mastodon;
pub(crate) mod metrics;
pub mod model;
pub mod nofile;
pub(crate) mod notifier;
pub(crate) mod password;
pub(crate) mod rate_limits;
pub(crate) mod serve;
pub mod shutdown;
pub(crate) mod state;
pub mod store;
pub mod stream;
pub mod tail;
pub(crate) mod text;
pub(crate) mod visibility;
pub mod workers;

pub use app::{run, run_listening, run_workers};
pub use config::Config;
pub use state::AppState;
