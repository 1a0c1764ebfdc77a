//! Filter rules against v1.1 filter sets, in one run: events routed per
//! second through 10,000 users' rule sets (5 rules each, a realistic mix)
//! and through 10,000 v1.1 filter sets (100 follows, 10 phrases, 2 boxes),
//! the same statuses (Zipf-distributed words and followed users) for both;
//! and the memory the rules take, per rule. Run:
//! `cargo bench -p firehose-filters --bench rules`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use firehose_filters::rules::{check_rule, RuleIndex, RuleStatus};
use firehose_filters::Index;

#[path = "common/world.rs"]
#[allow(dead_code)]
mod world;
use world::{build, messages, status, word, Draw, Lcg, Msg, Tables, World, USERS, VOCAB};

/// The allocator the server runs with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// This process's resident memory, bytes (Linux).
fn resident() -> isize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<isize>().ok())
        .map_or(0, |pages| pages * 4096)
}

const SETS: usize = 10_000;
const RULES_PER_USER: usize = 5;

/// One user's five rules: two topical words or phrases, an author (a
/// follow-like `from:` OR `to:`), a negation or an `OR` group, and a
/// place (a box or a radius), drawn like the v1.1 sets' parts.
fn rule_values(w: World, t: &Tables, rng: &mut Lcg) -> Vec<String> {
    let topical = |rng: &mut Lcg| word(100 + rng.below(w.vocab - 100));
    let user = |rng: &mut Lcg| t.followed_user(w, rng);
    let mut rules = vec![
        topical(rng),
        format!("\"{} {}\"", topical(rng), topical(rng)),
    ];
    let u = user(rng);
    rules.push(format!("from:{u} OR to:{u}"));
    rules.push(match rng.below(3) {
        0 => format!("{} -{}", topical(rng), topical(rng)),
        1 => format!("({} OR {}) has:geo", topical(rng), topical(rng)),
        _ => format!("{} -is:reply sample:50", topical(rng)),
    });
    let lon = rng.below(350) as f64 - 175.0;
    let lat = rng.below(170) as f64 - 85.0;
    rules.push(if rng.below(2) == 0 {
        format!("bounding_box:[{lon} {lat} {} {}]", lon + 0.5, lat + 0.5)
    } else {
        format!("point_radius:[{lon} {lat} 25km]")
    });
    rules
}

fn rule_status(m: &Msg) -> RuleStatus {
    RuleStatus {
        id: m.id,
        uid: m.uid,
        message: m.text.clone(),
        coords: m.coords,
        ..RuleStatus::default()
    }
}

fn compare(c: &mut Criterion) {
    let w = World {
        vocab: VOCAB,
        users: USERS,
        geo: 1,
        draw: Draw::Zipf,
    };
    let tables = Tables::of(w);
    let mut rng = Lcg(42);
    let msgs = messages(w, &tables, &mut rng);
    let statuses: Vec<RuleStatus> = msgs.iter().map(rule_status).collect();

    let before = resident();
    let mut rules: RuleIndex<(u64, u32)> = RuleIndex::default();
    for user in 0..SETS as u64 {
        for (i, value) in rule_values(w, &tables, &mut rng).iter().enumerate() {
            let expr = check_rule(value).unwrap_or_else(|e| panic!("{value}: {e:?}"));
            assert!(rules.insert((user, i as u32), expr));
        }
    }
    let held = resident() - before;
    let n_rules = SETS * RULES_PER_USER;
    eprintln!(
        "rules: {n_rules} rules of {SETS} users hold {:.1} MB, {:.0} bytes a rule",
        held as f64 / 1e6,
        held as f64 / n_rules as f64
    );
    let before = resident();
    let mut index: Index = build(SETS, w, &tables, &mut rng);
    let held_v11 = resident() - before;
    eprintln!(
        "v1.1: {SETS} filter sets hold {:.1} MB",
        held_v11 as f64 / 1e6
    );
    let (mut hits, mut out) = (Vec::new(), Vec::new());
    let (mut rule_matches, mut v11_matches) = (0usize, 0usize);
    for (m, s) in msgs.iter().zip(&statuses) {
        rules.route(s, &mut hits);
        rule_matches += hits.len();
        hits.clear();
        index.route(&status(m), &mut out);
        v11_matches += out.len();
    }
    eprintln!(
        "matches per event: rules {:.2}, v1.1 {:.2}",
        rule_matches as f64 / msgs.len() as f64,
        v11_matches as f64 / msgs.len() as f64
    );

    let mut group = c.benchmark_group("rules_vs_v11_10000");
    group.throughput(Throughput::Elements(1));
    let mut i = 0usize;
    group.bench_function("rules", |b| {
        b.iter(|| {
            let s = &statuses[i % statuses.len()];
            i += 1;
            hits.clear();
            rules.route(s, &mut hits);
            hits.len()
        })
    });
    let mut i = 0usize;
    group.bench_function("v1.1", |b| {
        b.iter(|| {
            let m = &msgs[i % msgs.len()];
            i += 1;
            index.route(&status(m), &mut out);
            out.len()
        })
    });
    group.finish();
}

criterion_group!(benches, compare);
criterion_main!(benches);
