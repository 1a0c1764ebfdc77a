//! `firehose demo`: seeds a demo world (users, a follow graph with a few
//! accounts of 10,000+ followers, statuses with hashtags, mentions and
//! coordinates) and then keeps posting at a chosen rate.
//!
//! It writes through the same store code as the HTTP API, so every status is
//! fanned out and every event reaches the streams of a running server.

use crate::config::DemoArgs;
use crate::embedded;
use crate::model::{now, Status};
use crate::password::Passwords;
use crate::store::users::NewUser;
use crate::store::{Store, StoreError};
use crate::text;
use anyhow::Context;
use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::io::Write;
use std::time::Duration;

/// The password of every demo user.
pub const DEMO_PASSWORD: &str = "demo-password";
const CONCURRENCY: usize = 64;

const FIRST: &[&str] = &[
    "ada", "alan", "grace", "linus", "margaret", "ken", "dennis", "barbara", "edsger", "frances",
    "john", "radia", "tim", "vint", "yukihiro", "guido", "bjarne", "anita", "donald", "hedy",
];
const TAGS: &[&str] = &[
    "rust",
    "redis",
    "streaming",
    "coffee",
    "music",
    "football",
    "weather",
    "news",
    "travel",
    "photography",
    "books",
    "cats",
];
const WORDS: &[&str] = &[
    "just",
    "shipped",
    "a",
    "new",
    "release",
    "of",
    "the",
    "firehose",
    "today",
    "feeling",
    "great",
    "about",
    "this",
    "morning",
    "run",
    "lunch",
    "was",
    "amazing",
    "who",
    "else",
    "is",
    "watching",
    "the",
    "game",
    "tonight",
    "reading",
    "about",
    "distributed",
    "systems",
    "again",
];
/// (lat, lon) of a few cities; statuses with coordinates scatter around them.
const CITIES: &[(f64, f64)] = &[
    (37.77, -122.42),
    (40.71, -74.0),
    (51.51, -0.13),
    (48.86, 2.35),
    (35.68, 139.69),
    (-33.87, 151.21),
    (52.52, 13.4),
    (-23.55, -46.63),
    (19.43, -99.13),
    (1.35, 103.82),
];

fn bar(len: u64, what: &str) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} ({per_sec}, eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    pb
}

fn message(rng: &mut StdRng, logins: &[String]) -> String {
    let n = rng.random_range(4..12);
    let mut words: Vec<String> = (0..n)
        .map(|_| WORDS[rng.random_range(0..WORDS.len())].to_string())
        .collect();
    for _ in 0..rng.random_range(0..3) {
        words.push(format!("#{}", TAGS[rng.random_range(0..TAGS.len())]));
    }
    if rng.random_bool(0.3) && !logins.is_empty() {
        words.push(format!("@{}", logins[rng.random_range(0..logins.len())]));
    }
    words.join(" ")
}

async fn post(
    store: &Store,
    rng: &mut StdRng,
    uid: u64,
    login: &str,
    logins: &[String],
) -> Result<(), StoreError> {
    let msg = message(rng, logins);
    let coords = rng.random_bool(0.4).then(|| {
        let (lat, lon) = CITIES[rng.random_range(0..CITIES.len())];
        (
            lat + rng.random_range(-0.2..0.2),
            lon + rng.random_range(-0.2..0.2),
        )
    });
    let (sid, posted) = store.next_status_id().await?;
    let status = Status {
        id: sid.to_string(),
        uid: uid.to_string(),
        login: login.to_string(),
        hashtags: text::hashtags(&msg),
        mentions: text::mentions(&msg),
        repost_of: None,
        repost_of_uid: None,
        audience: None,
        group_id: None,
        group_private: false,
        counts: Default::default(),
        message: msg,
        posted,
        lat: coords.map(|c| c.0),
        lon: coords.map(|c| c.1),
        reply_to: None,
        reply_to_uid: None,
    };
    store
        .post_status(&status, &Default::default())
        .await
        .map(|_| ())
}

/// Seeds the world, then posts at `args.rate` per second until Ctrl-C.
/// Seeds the demo world and keeps it posting until Ctrl-C or SIGTERM,
/// which stop it within a moment in every state (creating users, following,
/// posting, or waiting on a Redis that has gone with its server): the work
/// is dropped where it stands, and what it had written stays.
pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    tokio::select! {
        done = populate(args) => done,
        _ = crate::app::shutdown_signal() => {
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
    store.ping().await.with_context(|| {
        format!("Redis is unreachable at {url}: start `firehose serve` first or pass --redis-url")
    })?;
    let mut rng = StdRng::seed_from_u64(7);
    let hash = Passwords::default()
        .hash(DEMO_PASSWORD.to_string())
        .await
        .context("hashing the demo password")?;
    let logins: Vec<String> = (0..args.users)
        .map(|i| format!("{}_{i}", FIRST[i % FIRST.len()]))
        .collect();

    let pb = bar(logins.len() as u64, "users");
    let uids: Vec<u64> = futures::stream::iter(logins.iter().enumerate())
        .map(|(i, login)| {
            let (store, hash, pb) = (store.clone(), hash.clone(), pb.clone());
            async move {
                let name = format!("{} {}", FIRST[i % FIRST.len()], i);
                let email = format!("{login}@demo.example");
                let new = NewUser {
                    login,
                    name: &name,
                    email: &email,
                    password_hash: &hash,
                };
                let id = match store.create_user(&new, now()).await {
                    Ok(u) => u.id.parse().ok(),
                    Err(StoreError::Conflict(..)) => store.lookup(login).await.ok().flatten(),
                    Err(e) => return Err(e),
                };
                pb.inc(1);
                Ok(id.unwrap_or(0))
            }
        })
        .buffered(CONCURRENCY)
        .collect::<Vec<Result<u64, StoreError>>>()
        .await
        .into_iter()
        .collect::<Result<_, _>>()?;
    pb.finish();

    // Celebrities are followed by 90 % of everyone; everyone follows a few others.
    let n_celebs = args.celebrities.min(uids.len());
    let mut pairs: Vec<(u64, u64)> = Vec::new();
    for (i, &uid) in uids.iter().enumerate() {
        for &celeb in &uids[..n_celebs] {
            if celeb != uid && rng.random_bool(0.9) {
                pairs.push((uid, celeb));
            }
        }
        for _ in 0..5 {
            let other = uids[rng.random_range(0..uids.len())];
            if other != uid && i >= n_celebs {
                pairs.push((uid, other));
            }
        }
    }
    let pb = bar(pairs.len() as u64, "follows");
    let at = now();
    let results: Vec<Result<bool, StoreError>> = futures::stream::iter(pairs)
        .map(|(a, b)| {
            let (store, pb) = (store.clone(), pb.clone());
            async move {
                let r = store.set_follow(a, b, true, at).await;
                pb.inc(1);
                r
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    pb.finish();
    for r in results {
        r?;
    }

    let n_seed = uids.len().min(2000);
    let pb = bar(n_seed as u64, "statuses");
    for i in 0..n_seed {
        let idx = if i < n_celebs {
            i
        } else {
            rng.random_range(0..uids.len())
        };
        post(&store, &mut rng, uids[idx], &logins[idx], &logins).await?;
        pb.inc(1);
    }
    pb.finish();

    let celeb = uids.first().copied().unwrap_or(1);
    let _ = writeln!(
        std::io::stdout(),
        "\nDemo world ready: {} users; log in as {} / {DEMO_PASSWORD}.\n\
         Watch it live: open http://{}/ or mint a firehose token with\n  firehose token --user {celeb} --scope read --scope firehose\n\
         and run: curl -N -H \"Authorization: Bearer $TOKEN\" http://{}/api/v1/stream/firehose\n",
        uids.len(),
        logins.first().map(String::as_str).unwrap_or("-"),
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
        let idx = if rng.random_bool(0.1) {
            rng.random_range(0..n_celebs.max(1))
        } else {
            rng.random_range(0..uids.len())
        };
        if let Err(e) = post(&store, &mut rng, uids[idx], &logins[idx], &logins).await {
            spinner.println(format!("post failed: {e}"));
        }
        n += 1;
        spinner.set_message(format!("posted {n} statuses"));
        spinner.tick();
    }
}
