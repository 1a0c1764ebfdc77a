//! Events routed per second against many live filter sets.
//!
//! Each filter set has 100 follow ids, 10 track phrases and 2 boxes, as the
//! streams issue specifies. Run: `cargo bench -p firehose-filters`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use firehose_filters::{BBox, Event, FilterSpec, Index, Phrase, Rule, StatusView};

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
const VOCAB: u64 = 50_000;

fn word(n: u64) -> String {
    format!("w{n}")
}

fn build(n_sets: usize, rng: &mut Lcg) -> Index {
    let mut index = Index::new();
    for sub in 0..n_sets as u64 {
        let follow = (0..100).map(|_| 1 + rng.below(USERS)).collect();
        let track = (0..10)
            .map(|_| {
                let text = if rng.below(3) == 0 {
                    format!("{} {}", word(rng.below(VOCAB)), word(rng.below(VOCAB)))
                } else {
                    word(rng.below(VOCAB))
                };
                Phrase::new(&text).expect("phrase")
            })
            .collect();
        let locations = (0..2)
            .map(|_| {
                let lon = rng.below(350) as f64 - 175.0;
                let lat = rng.below(170) as f64 - 85.0;
                BBox::new(lon, lat, lon + 0.5, lat + 0.5).expect("box")
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

fn messages(rng: &mut Lcg) -> Vec<Msg> {
    (0..4096)
        .map(|i| Msg {
            id: i,
            uid: 1 + rng.below(USERS),
            text: (0..15)
                .map(|_| word(rng.below(VOCAB)))
                .collect::<Vec<_>>()
                .join(" "),
            coords: (rng.below(2) == 0).then(|| {
                (
                    rng.below(170) as f64 - 85.0 + 0.25,
                    rng.below(350) as f64 - 175.0 + 0.25,
                )
            }),
        })
        .collect()
}

fn route(c: &mut Criterion) {
    let mut group = c.benchmark_group("route_status");
    for n_sets in [100usize, 1_000, 10_000, 100_000] {
        let mut rng = Lcg(42);
        let mut index = build(n_sets, &mut rng);
        let msgs = messages(&mut rng);
        let mut out = Vec::new();
        let mut i = 0usize;
        group.throughput(Throughput::Elements(1));
        group.bench_with_input(BenchmarkId::from_parameter(n_sets), &n_sets, |b, _| {
            b.iter(|| {
                let m = &msgs[i % msgs.len()];
                i += 1;
                let ev = Event::Status(StatusView {
                    id: m.id,
                    uid: m.uid,
                    message: &m.text,
                    coords: m.coords,
                    ..StatusView::default()
                });
                index.route(&ev, &mut out);
                out.len()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, route);
criterion_main!(benches);
