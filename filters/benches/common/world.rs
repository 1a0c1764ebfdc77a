//! The synthetic world the filter benchmarks route in: filter sets as the
//! streams issue specifies them (100 follow ids, 10 track phrases, 2 boxes
//! each) and statuses drawn from the same vocabulary, users and map. Shared
//! by the criterion bench and `examples/flatness.rs`.

use firehose_filters::{BBox, Event, FilterSpec, Index, Phrase, Rule, StatusView};

/// A small deterministic generator so runs are repeatable.
pub(crate) struct Lcg(pub u64);
impl Lcg {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

pub(crate) const USERS: u64 = 1_000_000;
/// Words in the language. With a million distinct words (names, hashtags,
/// ordinary words) an event matches a handful of subscriptions even at
/// 100,000 filter sets; `route_status_dense` uses 50,000 words, where matches
/// per event grow with the number of filter sets and so does the cost.
pub(crate) const VOCAB: u64 = 1_000_000;
pub(crate) const DENSE_VOCAB: u64 = 50_000;

/// Words all have the same length whatever the vocabulary size, so that the
/// groups differ only in the index, not in how much text each event carries.
pub(crate) fn word(n: u64) -> String {
    format!("w{n:08}")
}

/// Draws ranks `0..n` with probability proportional to `1 / (rank + 1)^s`
/// (Zipf's law): by inverting its cumulative distribution, a table of `n`
/// entries.
pub(crate) struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    pub(crate) fn new(n: u64, s: f64) -> Zipf {
        let mut total = 0.0;
        let mut cdf: Vec<f64> = (0..n)
            .map(|r| {
                total += 1.0 / ((r + 1) as f64).powf(s);
                total
            })
            .collect();
        for c in &mut cdf {
            *c /= total;
        }
        Zipf { cdf }
    }

    /// A rank: 0 is the most frequent.
    pub(crate) fn sample(&self, rng: &mut Lcg) -> u64 {
        // 62 random bits make a uniform draw fine enough for a million ranks.
        let u = ((rng.next() << 31) | rng.next()) as f64 / (1u64 << 62) as f64;
        self.cdf.partition_point(|c| *c < u).min(self.cdf.len() - 1) as u64
    }
}

/// How the words of statuses and the followed users are drawn.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Draw {
    /// Every word and user equally likely.
    Uniform,
    /// As real text and a real follow graph: status words follow Zipf's law
    /// (s = 1: the most common word is about 7 % of all words in a
    /// million-word vocabulary), and so does how often a user is followed,
    /// so a few accounts are in most filter sets and most in none. Tracked
    /// phrases are topical: drawn uniformly from the words below the 100
    /// most common (a filter tracking "the" is not what streams serve).
    /// Authors of statuses are drawn uniformly from all users.
    Zipf,
}

/// What a group varies with the number of filter sets.
#[derive(Clone, Copy)]
pub(crate) struct World {
    /// Distinct words.
    pub vocab: u64,
    /// Distinct user ids.
    pub users: u64,
    /// Box corners and points lie on a grid of `1/geo` degrees, and boxes are
    /// `0.5/geo` degrees wide: a larger `geo` packs more boxes into the world
    /// without more of them containing a given point.
    pub geo: u64,
    /// How words and followed users are drawn.
    pub draw: Draw,
}

/// The Zipf tables of a world's words and users (none for a uniform one).
pub(crate) struct Tables {
    words: Option<Zipf>,
    users: Option<Zipf>,
}

impl Tables {
    pub(crate) fn of(w: World) -> Tables {
        let zipf = w.draw == Draw::Zipf;
        Tables {
            words: zipf.then(|| Zipf::new(w.vocab, 1.0)),
            users: zipf.then(|| Zipf::new(w.users, 1.0)),
        }
    }

    /// A word of a status's text.
    fn text_word(&self, w: World, rng: &mut Lcg) -> u64 {
        match &self.words {
            Some(z) => z.sample(rng),
            None => rng.below(w.vocab),
        }
    }

    /// A word of a tracked phrase.
    fn tracked_word(&self, w: World, rng: &mut Lcg) -> u64 {
        match &self.words {
            Some(_) => 100 + rng.below(w.vocab - 100),
            None => rng.below(w.vocab),
        }
    }

    /// A user a filter set follows (also what a rule's `from:` names).
    #[allow(dead_code)]
    pub(crate) fn followed_user(&self, w: World, rng: &mut Lcg) -> u64 {
        self.followed(w, rng)
    }

    /// A user a filter set follows.
    fn followed(&self, w: World, rng: &mut Lcg) -> u64 {
        1 + match &self.users {
            Some(z) => z.sample(rng),
            None => rng.below(w.users),
        }
    }
}

pub(crate) fn build(n_sets: usize, w: World, t: &Tables, rng: &mut Lcg) -> Index {
    let mut index = Index::new();
    for sub in 0..n_sets as u64 {
        let mut follow: Vec<u64> = (0..100).map(|_| t.followed(w, rng)).collect();
        follow.sort_unstable();
        follow.dedup();
        let track = (0..10)
            .map(|_| {
                let text = if rng.below(3) == 0 {
                    format!(
                        "{} {}",
                        word(t.tracked_word(w, rng)),
                        word(t.tracked_word(w, rng))
                    )
                } else {
                    word(t.tracked_word(w, rng))
                };
                Phrase::new(&text).expect("phrase")
            })
            .collect();
        let g = w.geo as f64;
        let locations = (0..2)
            .map(|_| {
                let lon = rng.below(350 * w.geo) as f64 / g - 175.0;
                let lat = rng.below(170 * w.geo) as f64 / g - 85.0;
                BBox::new(lon, lat, lon + 0.5 / g, lat + 0.5 / g).expect("box")
            })
            .collect();
        index.insert(
            sub,
            Rule::Filter(FilterSpec {
                follow,
                track,
                locations,
            }),
        );
    }
    index
}

pub(crate) struct Msg {
    pub id: u64,
    pub uid: u64,
    pub text: String,
    pub coords: Option<(f64, f64)>,
}

pub(crate) fn messages(w: World, t: &Tables, rng: &mut Lcg) -> Vec<Msg> {
    let (users, g) = (w.users, w.geo as f64);
    (0..4096)
        .map(|i| Msg {
            id: i,
            uid: 1 + rng.below(users),
            text: (0..15)
                .map(|_| word(t.text_word(w, rng)))
                .collect::<Vec<_>>()
                .join(" "),
            coords: (rng.below(2) == 0).then(|| {
                (
                    (rng.below(170 * w.geo) as f64 + 0.25) / g - 85.0,
                    (rng.below(350 * w.geo) as f64 + 0.25) / g - 175.0,
                )
            }),
        })
        .collect()
}

pub(crate) fn status(m: &Msg) -> Event<'_> {
    Event::Status(StatusView {
        id: m.id,
        uid: m.uid,
        message: &m.text,
        coords: m.coords,
        ..StatusView::default()
    })
}

/// Words, users and box positions grow with the number of filter sets, so
/// an event matches about the same number of subscriptions at every size:
/// what remains is the cost of the index's size alone.
pub(crate) fn constant(n: usize) -> World {
    World {
        vocab: n as u64 * 300,
        users: n as u64 * 5_000,
        geo: ((n as f64 / 100.0).sqrt().round() as u64).max(1),
        draw: Draw::Uniform,
    }
}
