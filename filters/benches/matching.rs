//! Events routed per second against many live filter sets.
//!
//! Each filter set has 100 follow ids, 10 track phrases and 2 boxes, as the
//! streams issue specifies. Run: `cargo bench -p firehose-filters`; the
//! realistic workload alone: `cargo bench -p firehose-filters -- zipf`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use firehose_filters::Index;

#[path = "common/world.rs"]
mod world;
use world::{
    build, constant, messages, status, Draw, Lcg, Msg, Tables, World, DENSE_VOCAB, USERS, VOCAB,
};

/// The allocator the server runs with (see `src/main.rs`): the index's
/// tables then sit on transparent huge pages.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn route(c: &mut Criterion) {
    let fixed = |vocab, draw| {
        move |_| World {
            vocab,
            users: USERS,
            geo: 1,
            draw,
        }
    };
    let all = [100, 1_000, 10_000, 100_000];
    bench_group(c, "route_status", fixed(VOCAB, Draw::Uniform), &all, 1);
    bench_group(
        c,
        "route_status_dense",
        fixed(DENSE_VOCAB, Draw::Uniform),
        &all,
        1,
    );
    bench_group(c, "route_status_constant_matches", constant, &all, 1);
    // The same, routed 16 at a time with `route_batch`, as the hub's
    // dispatcher does with what it has queued: time is per event.
    bench_group(c, "route_batch16_constant_matches", constant, &all, 16);
    bench_group(c, "route_batch16", fixed(VOCAB, Draw::Uniform), &all, 16);
    // Words and follows as real text and a real follow graph have them.
    let realistic = [1_000, 10_000, 100_000];
    bench_group(
        c,
        "route_status_zipf",
        fixed(VOCAB, Draw::Zipf),
        &realistic,
        1,
    );
    bench_group(
        c,
        "route_batch16_zipf",
        fixed(VOCAB, Draw::Zipf),
        &realistic,
        16,
    );
}

fn bench_group(
    c: &mut Criterion,
    name: &str,
    sizes: impl Fn(usize) -> World,
    n_sets_list: &[usize],
    batch: usize,
) {
    let mut group = c.benchmark_group(name);
    for &n_sets in n_sets_list {
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
                let tables = Tables::of(world);
                let mut index = build(n_sets, world, &tables, &mut rng);
                let msgs = messages(world, &tables, &mut rng);
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

criterion_group!(benches, route);
criterion_main!(benches);
