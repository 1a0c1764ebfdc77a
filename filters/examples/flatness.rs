//! How routing time per event changes from 100 to 100,000 filter sets, with
//! the sizes measured in alternation so that a noisy neighbour slows them
//! alike: the ratio of each round is taken between blocks a few hundred
//! milliseconds apart, not between runs minutes apart as with criterion.
//!
//! The world is the bench's `route_status_constant_matches` one (matches per
//! event stay the same at every size). Run:
//! `cargo run --release -p firehose-filters --example flatness [-- ROUNDS [SIZES...]]`.
#![allow(clippy::print_stdout)]

use firehose_filters::Index;
use std::hint::black_box;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../benches/common/world.rs"]
#[allow(dead_code)]
mod world;
use world::{build, constant, messages, status, Lcg, Msg, Tables};

/// Time each size gets per round.
const BLOCK: Duration = Duration::from_millis(300);

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(15);
    let mut sizes: Vec<usize> = args.filter_map(|a| a.parse().ok()).collect();
    if sizes.is_empty() {
        sizes = vec![100, 100_000];
    }
    let mut worlds: Vec<(usize, Index, Vec<Msg>)> = sizes
        .iter()
        .map(|&n| {
            let mut rng = Lcg(42);
            let tables = Tables::of(constant(n));
            let index = build(n, constant(n), &tables, &mut rng);
            let msgs = messages(constant(n), &tables, &mut rng);
            (n, index, msgs)
        })
        .collect();
    for (_, index, msgs) in &mut worlds {
        block(index, msgs, BLOCK);
    }
    // ns per event, per size, per round.
    let mut times = vec![Vec::new(); worlds.len()];
    for round in 0..rounds {
        // Alternate the order so that neither size always runs first.
        let order: Vec<usize> = if round % 2 == 0 {
            (0..worlds.len()).collect()
        } else {
            (0..worlds.len()).rev().collect()
        };
        for w in order {
            let (_, index, msgs) = &mut worlds[w];
            times[w].push(block(index, msgs, BLOCK));
        }
    }
    println!("{rounds} rounds of {} ms per size", BLOCK.as_millis());
    for (w, (n, _, _)) in worlds.iter().enumerate() {
        let ratios: Vec<f64> = times[w].iter().zip(&times[0]).map(|(t, b)| t / b).collect();
        let within = ratios.iter().filter(|r| **r <= 2.0).count();
        println!(
            "{n:>7} sets: median {:7.1} ns per event (min {:7.1}, max {:7.1}); \
             ratio to {} sets: median {:.2} (min {:.2}, max {:.2}), \
             within 2x in {within} of {rounds} rounds",
            median(&times[w]),
            min(&times[w]),
            max(&times[w]),
            worlds[0].0,
            median(&ratios),
            min(&ratios),
            max(&ratios),
        );
    }
}

/// Routes events for `d`; the time per event in nanoseconds.
fn block(index: &mut Index, msgs: &[Msg], d: Duration) -> f64 {
    let mut out = Vec::new();
    let start = Instant::now();
    let mut n = 0usize;
    while start.elapsed() < d {
        for m in msgs {
            index.route(&status(m), &mut out);
            black_box(out.len());
        }
        n += msgs.len();
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}
