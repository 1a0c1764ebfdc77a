//! The demo world, two ways: `firehose demo` seeds one into a running
//! server's Redis and keeps it posting from a separate process, and
//! `firehose serve --demo` does the same inside the server (seeded on first
//! start only) and lets the page show it to visitors who have not logged in
//! ([`viewer`]).

pub(crate) mod viewer;
pub(crate) mod world;

pub use world::DEMO_PASSWORD;

use crate::config::{Config, DemoArgs};
use crate::embedded;
use crate::password::Passwords;
use crate::shutdown::Shutdown;
use crate::store::Store;
use anyhow::Context;
use indicatif::ProgressBar;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use viewer::Viewer;
use world::{Shape, World};

/// Celebrities of the world `serve --demo` makes.
const SERVE_CELEBRITIES: usize = 3;

/// Seeds the demo world and keeps it posting until Ctrl-C or SIGTERM,
/// which stop it within a moment in every state (creating users, following,
/// posting, or waiting on a Redis that has gone with its server): the work
/// is dropped where it stands, and what it had written stays.
pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    tokio::select! {
        done = populate(args) => done,
        _ = crate::shutdown::signal() => {
            let _ = writeln!(std::io::stderr(), "\nstopped");
            Ok(())
        }
    }
}

async fn populate(args: DemoArgs) -> anyhow::Result<()> {
    let cfg = args.config.clone();
    let url = cfg
        .redis_url
        .clone()
        .unwrap_or_else(|| embedded::DEFAULT_URL.to_string());
    let store = Store::open(&url, &cfg)?;
    store.server().ping().await.with_context(|| {
        format!("Redis is unreachable at {url}: start `firehose serve` first or pass --redis-url")
    })?;
    let shape = Shape {
        users: args.users,
        celebrities: args.celebrities,
        progress: true,
    };
    let mut world = World::seed(&store, shape).await?;
    let (celeb, first) = world.first().unwrap_or((1, "-"));
    let _ = writeln!(
        std::io::stdout(),
        "\nDemo world ready: {} users; log in as {first} / {DEMO_PASSWORD}.\n\
         Watch it live: open http://{}/ or mint a firehose token with\n  firehose token --user {celeb} --scope read --scope firehose\n\
         and run: curl -N -H \"Authorization: Bearer $TOKEN\" http://{}/api/v1/stream/firehose\n",
        world.users(),
        cfg.listen,
        cfg.listen,
    );
    if args.rate <= 0.0 {
        return Ok(());
    }
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / args.rate));
    let spinner = ProgressBar::new_spinner();
    spinner.set_message("posting");
    let mut n: u64 = 0;
    loop {
        tick.tick().await;
        if let Err(e) = world.act().await {
            spinner.println(format!("write failed: {e}"));
        }
        n += 1;
        spinner.set_message(format!("{n} writes"));
        spinner.tick();
    }
}

/// `serve --demo`: seeds the world on first start (a restart finds the one
/// it made), then makes `cfg.demo_rate` writes a second until shutdown.
/// Failures (Redis restarting, say) are logged at most every 10 s and the
/// world goes on.
pub fn spawn(
    store: &Store,
    cfg: &Config,
    viewer: Arc<Viewer>,
    mut shutdown: Shutdown,
) -> JoinHandle<()> {
    let store = store.clone();
    let (users, rate) = (cfg.demo_users.max(2), cfg.demo_rate);
    tokio::spawn(async move {
        let made = tokio::select! {
            made = open_world(&store, users) => made,
            () = shutdown.wait() => return,
        };
        let mut world = match made {
            Ok(world) => world,
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "the demo world could not be made");
                return;
            }
        };
        if let Err(e) = viewer.account(&store, &Passwords::default()).await {
            tracing::warn!(error = %e, "the demo viewer's account could not be made yet");
        }
        tracing::info!(users = world.users(), rate, "demo world live");
        if rate <= 0.0 {
            return;
        }
        let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut warned: Option<Instant> = None;
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = shutdown.wait() => return,
            }
            let acted = tokio::select! {
                acted = world.act() => acted,
                () = shutdown.wait() => return,
            };
            if let Err(e) = acted {
                if warned.is_none_or(|at| at.elapsed() > Duration::from_secs(10)) {
                    tracing::warn!(error = %e, "a demo write failed");
                    warned = Some(Instant::now());
                }
            }
        }
    })
}

async fn open_world(store: &Store, users: usize) -> anyhow::Result<World> {
    if let Some(seeded) = store.demo().world().await? {
        return World::find(store, seeded, SERVE_CELEBRITIES).await;
    }
    tracing::info!(users, "seeding the demo world");
    let shape = Shape {
        users,
        celebrities: SERVE_CELEBRITIES,
        progress: false,
    };
    let world = World::seed(store, shape).await?;
    store.demo().set_world(world.users()).await?;
    Ok(world)
}
