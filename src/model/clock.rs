//! The clock every stored time is read from.

/// Seconds since the epoch, with microseconds.
pub fn now() -> f64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_micros() as f64) / 1e6
}
