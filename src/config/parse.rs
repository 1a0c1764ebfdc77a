//! The flags' values: durations, sizes, the shared history's store URL.

/// A duration in whole seconds: a number of seconds, or a number with
/// `s`, `m`, `h` or `d`.
pub(super) fn parse_duration(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, unit) = split_unit(s);
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" | "s" => 1,
        "m" | "min" => 60,
        "h" => 3600,
        "d" => 86_400,
        other => return Err(format!("unknown unit {other:?}: use s, m, h or d")),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("{s:?} is not a duration such as 3600, 90m or 24h"))
}

/// `--history-window`: a duration from a second to an hour.
pub(super) fn parse_window(s: &str) -> Result<u64, String> {
    match parse_duration(s)? {
        secs @ 1..=3600 => Ok(secs),
        _ => Err(format!("--history-window {s:?}: from 1s to 1h")),
    }
}

/// `--history-store`: an `s3://BUCKET[/PREFIX]` URL.
pub(super) fn parse_history_store(s: &str) -> Result<String, String> {
    check_history_store(s)?;
    Ok(s.to_owned())
}

/// Whether `url` names a store this build can reach (`s3://BUCKET[/PREFIX]`).
pub(crate) fn check_history_store(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("s3://")
        .ok_or_else(|| format!("--history-store {url:?}: expected s3://BUCKET/PREFIX"))?;
    if rest.split('/').next().is_none_or(str::is_empty) {
        return Err(format!("--history-store {url:?}: the bucket is missing"));
    }
    Ok(())
}

/// A size in bytes: a number, or a number with `K`, `M`, `G`, `T` (powers
/// of 1000) or `KiB`, `MiB`, `GiB`, `TiB` (powers of 1024).
pub(super) fn parse_bytes(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, unit) = split_unit(s);
    let scale: u64 = match unit.to_ascii_lowercase().trim_end_matches('b') {
        "" => 1,
        "k" => 1_000,
        "m" => 1_000_000,
        "g" => 1_000_000_000,
        "t" => 1_000_000_000_000,
        "ki" => 1 << 10,
        "mi" => 1 << 20,
        "gi" => 1 << 30,
        "ti" => 1 << 40,
        _ => {
            return Err(format!(
                "unknown unit in {s:?}: use K, M, G, KiB, MiB or GiB"
            ))
        }
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("{s:?} is not a size such as 4GiB or 500000000"))
}

/// A number and the unit after it.
fn split_unit(s: &str) -> (&str, &str) {
    let at = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    (&s[..at], s[at..].trim())
}
