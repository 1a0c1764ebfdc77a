//! A Redis node whose wall clock runs ahead: a small `LD_PRELOAD` library,
//! built with the machine's C compiler on first use, that adds
//! `FIREHOSE_TEST_SKEW_US` microseconds to every reading of the real-time
//! clock (`TIME`, the times a script reads, the buffer's ids), the way a
//! master whose NTP drifted would. It asks the kernel directly (no `dlsym`,
//! no allocation), so it is safe inside redis-server's own start-up, where
//! libfaketime is not.

use super::*;
use std::path::PathBuf;
use std::sync::OnceLock;

const SHIM: &str = r#"
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long skew_us(void) {
    static long long skew = -1;
    if (skew == -1) {
        const char *s = getenv("FIREHOSE_TEST_SKEW_US");
        skew = s ? atoll(s) : 0;
    }
    return skew;
}

static void shift(struct timespec *ts) {
    long long ns = (long long)ts->tv_nsec + (skew_us() % 1000000) * 1000;
    long long s = (long long)ts->tv_sec + skew_us() / 1000000;
    while (ns >= 1000000000) { ns -= 1000000000; s += 1; }
    while (ns < 0) { ns += 1000000000; s -= 1; }
    ts->tv_sec = s;
    ts->tv_nsec = ns;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    int r = (int)syscall(SYS_clock_gettime, id, ts);
    if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) shift(ts);
    return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
    struct timespec ts;
    (void)tz;
    if (syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts) != 0) return -1;
    shift(&ts);
    if (tv) { tv->tv_sec = ts.tv_sec; tv->tv_usec = ts.tv_nsec / 1000; }
    return 0;
}

time_t time(time_t *t) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (t) *t = ts.tv_sec;
    return ts.tv_sec;
}
"#;

/// The shim's path, built once per test process.
pub(crate) fn clock_skew_library() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = std::env::temp_dir().join(format!("firehose-skew-{}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("shim dir");
            let source = dir.join("skew.c");
            let library = dir.join("libskew.so");
            std::fs::write(&source, SHIM).expect("shim source");
            let out = Command::new("cc")
                .args(["-shared", "-fPIC", "-O2", "-o"])
                .arg(&library)
                .arg(&source)
                .output()
                .expect("a C compiler (cc)");
            assert!(
                out.status.success(),
                "the clock shim does not build: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            library
        })
        .clone()
}
