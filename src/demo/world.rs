//! The demo world: its people, who follows whom, and what they do next
//! (statuses with hashtags, mentions and coordinates, replies, likes and
//! reposts). It writes through the same store code as the HTTP API, so
//! every write is fanned out and reaches the streams of every server.

use crate::model::Id;
use crate::model::{now, Status};
use crate::password::Passwords;
use crate::store::entities::users::NewUser;
use crate::store::writes::posting::PostOptions;
use crate::store::{Store, StoreError};
use crate::text;
use anyhow::Context;
use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;

/// The password of every demo user.
pub const DEMO_PASSWORD: &str = "demo-password";
const CONCURRENCY: usize = 64;
/// Statuses a reply, like or repost may pick from: the newest ones.
const RECENT: usize = 200;
/// Statuses (and reposts) a demo user keeps: past it their oldest is
/// deleted, so a world left running for weeks holds a bounded amount
/// (users × 40, plus what the separate seeder's first pass made).
const KEEP_PER_USER: u64 = 40;

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
const ANSWERS: &[&str] = &[
    "so true",
    "could not agree more",
    "wait, really?",
    "this made my day",
    "same here",
    "tell me more",
    "citation needed",
];
/// (lat, lon) of cities on every continent; geotagged statuses scatter
/// around them.
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
    (-1.29, 36.82),
    (30.04, 31.24),
    (28.61, 77.21),
    (55.76, 37.62),
    (-34.6, -58.38),
    (6.52, 3.38),
    (43.65, -79.38),
    (-36.85, 174.76),
    (64.15, -21.94),
    (31.23, 121.47),
];

/// How big a world to make.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    /// Users.
    pub users: usize,
    /// Accounts followed by ~90 % of everyone.
    pub celebrities: usize,
    /// Show progress bars on the terminal (else only log lines).
    pub progress: bool,
}

/// What [`World::act`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Act {
    /// Posted a status.
    Status,
    /// Replied to a recent status.
    Reply,
    /// Liked a recent status.
    Like,
    /// Reposted a recent status.
    Repost,
    /// Deleted the author's oldest status (past [`KEEP_PER_USER`]).
    Delete,
}

/// A seeded world, ready to act.
pub(crate) struct World {
    store: Store,
    rng: StdRng,
    uids: Vec<u64>,
    logins: Vec<String>,
    celebrities: usize,
    /// The newest originals: (status id, author's index).
    recent: VecDeque<(u64, usize)>,
}

/// The login of demo user `i`.
pub(crate) fn login(i: usize) -> String {
    format!("{}_{i}", FIRST[i % FIRST.len()])
}

fn bar(len: u64, what: &str, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} ({per_sec}, eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    pb
}

impl World {
    /// Makes `shape.users` users (an existing login is taken as the demo
    /// user it names), a follow graph (celebrities followed by ~90 % of
    /// everyone, everyone following five others) and a first status for up
    /// to 2,000 of them. Running it again makes nothing twice.
    pub(crate) async fn seed(store: &Store, shape: Shape) -> anyhow::Result<World> {
        let hash = Passwords::default()
            .hash(DEMO_PASSWORD.to_string())
            .await
            .context("hashing the demo password")?;
        let logins: Vec<String> = (0..shape.users).map(login).collect();
        let pb = bar(logins.len() as u64, "users", shape.progress);
        let uids: Vec<u64> = futures::stream::iter(logins.clone().into_iter().enumerate())
            .map(|(i, login)| {
                let (store, hash, pb) = (store.clone(), hash.clone(), pb.clone());
                async move {
                    let login = login.as_str();
                    let name = format!("{} {}", FIRST[i % FIRST.len()], i);
                    let email = format!("{login}@demo.example");
                    let new = NewUser {
                        login,
                        name: &name,
                        email: &email,
                        password_hash: &hash,
                    };
                    let id = match store.users().create(&new, now()).await {
                        Ok(u) => Some(u.id.get()),
                        Err(StoreError::Conflict(..)) => {
                            store.users().lookup(login).await.ok().flatten()
                        }
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
        let mut world = World::new(store, uids, logins, shape.celebrities);
        world.follow_graph(shape.progress).await?;
        let n_seed = world.uids.len().min(2000);
        let pb = bar(n_seed as u64, "statuses", shape.progress);
        for i in 0..n_seed {
            let author = if i < world.celebrities {
                i
            } else {
                world.rng.random_range(0..world.uids.len())
            };
            world.status(author).await?;
            pb.inc(1);
        }
        pb.finish();
        Ok(world)
    }

    /// The world seeded before with `users` users, found by their logins.
    pub(crate) async fn find(
        store: &Store,
        users: usize,
        celebrities: usize,
    ) -> anyhow::Result<World> {
        let logins: Vec<String> = (0..users).map(login).collect();
        let mut uids = Vec::with_capacity(users);
        for login in &logins {
            let uid = store
                .users()
                .lookup(login)
                .await?
                .with_context(|| format!("demo user {login} is gone"))?;
            uids.push(uid);
        }
        Ok(World::new(store, uids, logins, celebrities))
    }

    fn new(store: &Store, uids: Vec<u64>, logins: Vec<String>, celebrities: usize) -> World {
        World {
            store: store.clone(),
            rng: StdRng::seed_from_u64(7),
            celebrities: celebrities.min(uids.len()),
            uids,
            logins,
            recent: VecDeque::with_capacity(RECENT),
        }
    }

    /// How many users the world has.
    pub(crate) fn users(&self) -> usize {
        self.uids.len()
    }

    /// The first (most followed) user's id and login.
    pub(crate) fn first(&self) -> Option<(u64, &str)> {
        Some((*self.uids.first()?, self.logins.first()?.as_str()))
    }

    async fn follow_graph(&mut self, progress: bool) -> Result<(), StoreError> {
        let mut pairs: Vec<(u64, u64)> = Vec::new();
        for (i, &uid) in self.uids.iter().enumerate() {
            for &celeb in &self.uids[..self.celebrities] {
                if celeb != uid && self.rng.random_bool(0.9) {
                    pairs.push((uid, celeb));
                }
            }
            for _ in 0..5 {
                let other = self.uids[self.rng.random_range(0..self.uids.len())];
                if other != uid && i >= self.celebrities {
                    pairs.push((uid, other));
                }
            }
        }
        let pb = bar(pairs.len() as u64, "follows", progress);
        let at = now();
        let results: Vec<Result<bool, StoreError>> = futures::stream::iter(pairs)
            .map(|(a, b)| {
                let (store, pb) = (self.store.clone(), pb.clone());
                async move {
                    let r = store.follows().set(a, b, true, at).await;
                    pb.inc(1);
                    r
                }
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        pb.finish();
        results.into_iter().try_for_each(|r| r.map(|_| ()))
    }

    /// One write, as people do: half statuses (two in five geotagged, some
    /// with hashtags and mentions), the rest replies, likes and reposts of
    /// recent statuses; celebrities write a tenth of the statuses. A user past
    /// [`KEEP_PER_USER`] statuses deletes their oldest instead.
    pub(crate) async fn act(&mut self) -> Result<Act, StoreError> {
        let roll = self.rng.random_range(0..100);
        let author = if self.rng.random_bool(0.1) {
            self.rng.random_range(0..self.celebrities.max(1))
        } else {
            self.rng.random_range(0..self.uids.len())
        };
        if self.trim(author).await? {
            return Ok(Act::Delete);
        }
        let target = self.pick_recent(author);
        match (roll, target) {
            (50..65, Some(t)) => self.reply(author, t).await.map(|_| Act::Reply),
            (65..90, Some((sid, to))) => {
                let (liker, to) = (self.uids[author], self.uids[to]);
                self.store.likes().set(liker, sid, to, false, true).await?;
                Ok(Act::Like)
            }
            (90.., Some(t)) => self.repost(author, t).await.map(|_| Act::Repost),
            _ => self.status(author).await.map(|_| Act::Status),
        }
    }

    /// Deletes `author`'s oldest status if they hold more than
    /// [`KEEP_PER_USER`]; whether one went.
    async fn trim(&mut self, author: usize) -> Result<bool, StoreError> {
        let uid = self.uids[author];
        let (n, oldest) = self.store.demo().oldest(uid).await?;
        let Some(sid) = oldest.filter(|_| n > KEEP_PER_USER) else {
            return Ok(false);
        };
        self.recent.retain(|&(s, _)| s != sid);
        match self.store.statuses().delete(sid, uid, false, now()).await {
            Ok(()) | Err(StoreError::NotFound(_)) => Ok(true),
            Err(e) => Err(e),
        }
    }

    /// A recent original by someone other than `author`.
    fn pick_recent(&mut self, author: usize) -> Option<(u64, usize)> {
        if self.recent.is_empty() {
            return None;
        }
        let t = self.recent[self.rng.random_range(0..self.recent.len())];
        (t.1 != author).then_some(t)
    }

    fn message(&mut self) -> (String, Vec<u64>) {
        let n = self.rng.random_range(4..12);
        let mut words: Vec<String> = (0..n)
            .map(|_| WORDS[self.rng.random_range(0..WORDS.len())].to_string())
            .collect();
        for _ in 0..self.rng.random_range(0..3) {
            words.push(format!("#{}", TAGS[self.rng.random_range(0..TAGS.len())]));
        }
        let mut mentioned = Vec::new();
        if self.rng.random_bool(0.3) {
            let other = self.rng.random_range(0..self.uids.len());
            words.push(format!("@{}", self.logins[other]));
            mentioned.push(self.uids[other]);
        }
        (words.join(" "), mentioned)
    }

    fn draft(&mut self, author: usize, message: String) -> Status {
        let coords = self.rng.random_bool(0.4).then(|| {
            let (lat, lon) = CITIES[self.rng.random_range(0..CITIES.len())];
            (
                lat + self.rng.random_range(-0.3..0.3),
                lon + self.rng.random_range(-0.3..0.3),
            )
        });
        Status {
            id: Id(0),
            uid: Id(self.uids[author]),
            login: self.logins[author].clone(),
            hashtags: text::hashtags(&message),
            mentions: text::mentions(&message),
            repost_of: None,
            repost_of_uid: None,
            audience: None,
            group_id: None,
            group_private: false,
            edited_at: None,
            counts: Default::default(),
            message,
            posted: 0.0,
            lat: coords.map(|c| c.0),
            lon: coords.map(|c| c.1),
            reply_to: None,
            reply_to_uid: None,
        }
    }

    async fn publish(
        &mut self,
        mut status: Status,
        opts: PostOptions<'_>,
    ) -> Result<u64, StoreError> {
        let (sid, posted) = self.store.mint().snowflake().await?;
        status.id = Id(sid);
        status.posted = posted;
        self.store.statuses().post(&status, &opts).await?;
        Ok(sid)
    }

    async fn status(&mut self, author: usize) -> Result<(), StoreError> {
        let (message, mentioned) = self.message();
        let status = self.draft(author, message);
        let opts = PostOptions {
            mentioned: &mentioned,
            ..Default::default()
        };
        let sid = self.publish(status, opts).await?;
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back((sid, author));
        Ok(())
    }

    async fn reply(&mut self, author: usize, (sid, to): (u64, usize)) -> Result<(), StoreError> {
        let answer = ANSWERS[self.rng.random_range(0..ANSWERS.len())];
        let message = format!("@{} {answer}", self.logins[to]);
        let mut status = self.draft(author, message);
        status.reply_to = Some(Id(sid));
        status.reply_to_uid = Some(Id(self.uids[to]));
        let mentioned = [self.uids[to]];
        let opts = PostOptions {
            mentioned: &mentioned,
            ..Default::default()
        };
        self.publish(status, opts).await.map(|_| ())
    }

    async fn repost(&mut self, author: usize, (sid, to): (u64, usize)) -> Result<(), StoreError> {
        let reposter = self.uids[author];
        if self
            .store
            .statuses()
            .repost_by(sid, reposter)
            .await?
            .is_some()
        {
            return Ok(());
        }
        let mut status = self.draft(author, String::new());
        (status.lat, status.lon) = (None, None);
        status.repost_of = Some(Id(sid));
        status.repost_of_uid = Some(Id(self.uids[to]));
        let opts = PostOptions {
            notify_original: true,
            ..Default::default()
        };
        self.publish(status, opts).await.map(|_| ())
    }
}
