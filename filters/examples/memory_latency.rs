//! Nanoseconds per dependent memory read at several working-set sizes: the
//! machine fact behind the filter benchmark's large-index numbers (docs/benchmarks.md).
//!
//! It allocates with mimalloc, as the server does, so its arenas get
//! transparent huge pages unless `MIMALLOC_ALLOW_THP=0` is set: run it both
//! ways to see what huge pages are worth to a large filter index.
//!
//! Run: `cargo run --release -p firehose-filters --example memory_latency`.
#![allow(clippy::print_stdout)]

use std::time::Instant;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    for mib in [1usize, 8, 24, 64, 256, 1024] {
        let n = mib * 1024 * 1024 / 8;
        // Sattolo's shuffle makes one cycle through every slot, so each read
        // depends on the one before and the prefetchers cannot guess it.
        let mut next: Vec<u64> = (0..n as u64).collect();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in (1..n).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            next.swap(i, (x % i as u64) as usize);
        }
        let reads = 3_000_000;
        let mut p = 0usize;
        let start = Instant::now();
        for _ in 0..reads {
            p = next[p] as usize;
        }
        let ns = start.elapsed().as_nanos() as f64 / reads as f64;
        println!("{mib:>4} MiB: {ns:6.1} ns per dependent read (end {p})");
    }
}
