//! The read floor: the least a server built from this project's parts (tokio,
//! axum, the `redis` crate) can do for a home read, to measure the real read
//! against. `GET /page` answers a page of JSON that it fetches whole with one
//! Redis `GET` on a multiplexed connection: no auth, no session, no ids to
//! resolve, no rendering. With `--memory` it skips Redis and answers the
//! bytes from memory (what axum itself costs for such a body).
//!
//! The page is the real server's: fetch one with curl and pass the file, so
//! that both answer the same bytes.
//!
//! ```sh
//! curl -s -H "authorization: Bearer $TOKEN" 127.0.0.1:8080/api/v1/timelines/home > page.json
//! target/release/read_floor --page page.json --redis-url redis://127.0.0.1:6390 &
//! wrk -t2 -c64 -d8s http://127.0.0.1:8091/page
//! ```

// Examples are command-line programs: printing is their output.
#![allow(clippy::print_stdout)]

use anyhow::Context;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use clap::Parser;
use redis::aio::MultiplexedConnection;

/// The real server's allocator, so that the two differ only in what they do.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8091")]
    listen: String,
    /// Redis to fetch the page from (it is stored there at start).
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// A file holding the page to answer (a home page fetched from the
    /// real server).
    #[arg(long)]
    page: std::path::PathBuf,
    /// Answer the page from memory instead of Redis.
    #[arg(long)]
    memory: bool,
}

/// The key the page is stored under.
const KEY: &str = "read_floor:page";

#[derive(Clone)]
struct Floor {
    redis: MultiplexedConnection,
    page: Option<Bytes>,
}

async fn page(State(floor): State<Floor>) -> Response {
    let body = match floor.page {
        Some(page) => page,
        None => {
            let mut conn = floor.redis;
            match redis::cmd("GET")
                .arg(KEY)
                .query_async::<Vec<u8>>(&mut conn)
                .await
            {
                Ok(bytes) => Bytes::from(bytes),
                Err(e) => {
                    return (axum::http::StatusCode::SERVICE_UNAVAILABLE, e.to_string())
                        .into_response()
                }
            }
        }
    };
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let bytes = std::fs::read(&args.page).with_context(|| format!("reading {:?}", args.page))?;
    let client = redis::Client::open(args.redis_url.as_str())?;
    let mut redis = client
        .get_multiplexed_async_connection()
        .await
        .context("connecting to Redis")?;
    let _: () = redis::cmd("SET")
        .arg(KEY)
        .arg(&bytes)
        .query_async(&mut redis)
        .await?;
    let floor = Floor {
        redis,
        page: args.memory.then(|| Bytes::from(bytes.clone())),
    };
    let app = Router::new().route("/page", get(page)).with_state(floor);
    let listener = tokio::net::TcpListener::bind(&args.listen).await?;
    println!(
        "read floor on {} answering {} bytes from {}",
        args.listen,
        bytes.len(),
        if args.memory { "memory" } else { "Redis" }
    );
    axum::serve(listener, app).await?;
    Ok(())
}
