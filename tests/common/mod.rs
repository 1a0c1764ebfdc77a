//! Shared test harness: a real redis-server per test on a free port (killed
//! on drop, installed with apt-get when missing) and the real server on a
//! port-0 listener, talked to over real sockets.
//!
//! - `install`: apt-get and pip installs of what the tests run.
//! - `redis_server`: one Redis or a 3-master cluster on free ports.
//! - `app`: the app under test (`TestApp`) and store-level set-up helpers.
//! - `streams`: SSE and NDJSON clients; `ws`: WebSocket clients.
//! - `process`: the firehose binary as a child process.
//! - `object_store`: a real S3 server (SeaweedFS) for the shared history.
//! - `proxy`: a gated TCP proxy in front of Redis.
//! - `clock_skew`: a Redis node whose wall clock runs ahead.
//! - `browser`: headless Chromium over WebDriver.

#![allow(dead_code, unused_imports)]

mod app;
pub(crate) mod browser;
mod clock_skew;
mod install;
mod object_store;
mod process;
mod proxy;
mod redis_server;
mod streams;
mod ws;

pub(crate) use app::*;
pub(crate) use clock_skew::*;
pub(crate) use install::*;
pub(crate) use object_store::*;
pub(crate) use process::*;
pub(crate) use proxy::*;
pub(crate) use redis_server::*;
pub(crate) use streams::*;
pub(crate) use ws::*;

use firehose::config::Config;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
