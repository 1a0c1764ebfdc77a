//! Events routed per second against many live filter sets.
//!
//! Each filter set has 100 follow ids, 10 track phrases and 2 boxes, as the
//! streams issue specifies. Run: `cargo bench -p firehose-filters`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use firehose_filters::{BBox, Event, FilterSpec, Index, Phrase, Rule, StatusView};

/// The allocator the server runs with (see `src/main.rs`): the index's
/// tables then sit on transparent huge pages.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A small deterministic generator so runs are repeatable.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const USERS: u64 = 1_000_000;
/// Words in the language. With a million distinct words (names, hashtags,
/// ordinary words) an event matches a handful of subscriptions even at
/// 100,000 filter sets; `route_status_dense` uses 50,000 words, where matches
/// per event grow with the number of filter sets and so does the cost.
const VOCAB: u64 = 1_000_000;
const DENSE_VOCAB: u64 = 50_000;

/// Words all have the same length whatever the vocabulary size, so that the
/// groups differ only in the index, not in how much text each event carries.
fn word(n: u64) -> String {
    format!("w{n:08}")
}

/// What a group varies with the number of filter sets.
#[derive(Clone, Copy)]
struct World {
    /// Distinct words.
    vocab: u64,
    /// Distinct user ids.
    users: u64,
    /// Box corners and points lie on a grid of `1/geo` degrees, and boxes are
    /// `0.5/geo` degrees wide: a larger `geo` packs more boxes into the world
    /// without more of them containing a given point.
    geo: u64,
}

fn build(n_sets: usize, w: World, rng: &mut Lcg) -> Index {
    let (vocab, users) = (w.vocab, w.users);
    let mut index = Index::new();
    for sub in 0..n_sets as u64 {
        let follow = (0..100).map(|_| 1 + rng.below(users)).collect();
        let track = (0..10)
            .map(|_| {
                let text = if rng.below(3) == 0 {
                    format!("{} {}", word(rng.below(vocab)), word(rng.below(vocab)))
                } else {
                    word(rng.below(vocab))
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

struct Msg {
    id: u64,
    uid: u64,
    text: String,
    coords: Option<(f64, f64)>,
}

fn messages(w: World, rng: &mut Lcg) -> Vec<Msg> {
    let (vocab, users, g) = (w.vocab, w.users, w.geo as f64);
    (0..4096)
        .map(|i| Msg {
            id: i,
            uid: 1 + rng.below(users),
            text: (0..15)
                .map(|_| word(rng.below(vocab)))
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

fn route(c: &mut Criterion) {
    let fixed = |vocab| {
        move |_| World {
            vocab,
            users: USERS,
            geo: 1,
        }
    };
    bench_group(c, "route_status", fixed(VOCAB), 1);
    bench_group(c, "route_status_dense", fixed(DENSE_VOCAB), 1);
    // Words, users and box positions grow with the number of filter sets,
    // so an event matches about the same number of subscriptions at every
    // size: what remains is the cost of the index's size alone.
    let constant = |n: usize| World {
        vocab: n as u64 * 300,
        users: n as u64 * 5_000,
        geo: ((n as f64 / 100.0).sqrt().round() as u64).max(1),
    };
    bench_group(c, "route_status_constant_matches", constant, 1);
    // The same, routed 16 at a time with `route_batch`, as the hub's
    // dispatcher does with what it has queued: time is per event.
    bench_group(c, "route_batch16_constant_matches", constant, 16);
    bench_group(c, "route_batch16", fixed(VOCAB), 16);
}

fn bench_group(c: &mut Criterion, name: &str, sizes: impl Fn(usize) -> World, batch: usize) {
    let mut group = c.benchmark_group(name);
    for n_sets in [100usize, 1_000, 10_000, 100_000] {
        let world = sizes(n_sets);
        // Built on the first call, so that a filtered run (`cargo bench --
        // route_status/10000`) builds only the index it measures.
        let mut state: Option<(Index, Vec<Msg>)> = None;
        let mut out = Vec::new();
        let mut outs = Vec::new();
        let mut i = 0usize;
        group.throughput(Throughput::Elements(batch as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n_sets), &n_sets, |b, _| {
            let (index, msgs) = state.get_or_insert_with(|| {
                let mut rng = Lcg(42);
                let mut index = build(n_sets, world, &mut rng);
                let msgs = messages(world, &mut rng);
                let mut matched = 0usize;
                let mut probe = Vec::new();
                for m in &msgs {
                    index.route(&status(m), &mut probe);
                    matched += probe.len();
                }
                eprintln!(
                    "{name}/{n_sets}: {:.2} matching subscriptions per event",
                    matched as f64 / msgs.len() as f64
                );
                (index, msgs)
            });
            if batch == 1 {
                b.iter(|| {
                    let m = &msgs[i % msgs.len()];
                    i += 1;
                    index.route(&status(m), &mut out);
                    out.len()
                })
            } else {
                let mut events = Vec::with_capacity(batch);
                b.iter(|| {
                    events.clear();
                    for _ in 0..batch {
                        events.push(status(&msgs[i % msgs.len()]));
                        i += 1;
                    }
                    index.route_batch(&events, &mut outs);
                    outs.len()
                })
            }
        });
    }
    group.finish();
}

fn status(m: &Msg) -> Event<'_> {
    Event::Status(StatusView {
        id: m.id,
        uid: m.uid,
        message: &m.text,
        coords: m.coords,
        ..StatusView::default()
    })
}

criterion_group!(benches, route);
criterion_main!(benches);
