//! How `firehose tail` prints an event: its JSON, or a line for people.

use serde_json::Value;
use std::io::Write;

/// Prints one event; `warning` and `disconnect` go to stderr.
pub(super) fn print_event(format: &str, kind: Option<&str>, data: &str) -> anyhow::Result<()> {
    let v: Value = serde_json::from_str(data).unwrap_or(Value::Null);
    let kind = kind.or_else(|| v["type"].as_str()).unwrap_or("message");
    if matches!(kind, "warning" | "disconnect") {
        eprintln!("firehose tail: {kind}: {data}");
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    if format == "json" {
        writeln!(out, "{data}")?;
    } else {
        writeln!(out, "{}", pretty(kind, &v))?;
    }
    out.flush()?;
    Ok(())
}

/// One line for people.
fn pretty(kind: &str, v: &Value) -> String {
    let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
    match kind {
        "status" | "mention" | "repost" => {
            let st = &v["status"];
            let text = if st["repost_of"].is_string() {
                format!("reposted {}", st["repost_of"].as_str().unwrap_or(""))
            } else {
                st["message"].as_str().unwrap_or("").to_string()
            };
            let place = match (st["lat"].as_f64(), st["lon"].as_f64()) {
                (Some(lat), Some(lon)) => format!(" [{lat:.2},{lon:.2}]"),
                _ => String::new(),
            };
            format!(
                "{kind:>8} @{}: {text}{place}",
                st["login"].as_str().unwrap_or("?")
            )
        }
        "delete" => format!("{kind:>8} status {} by {}", s("status_id"), s("uid")),
        "follow" | "unfollow" | "follow_request" => {
            format!("{kind:>8} {} -> {}", s("source"), s("target"))
        }
        "like" => format!("{kind:>8} {} likes {}", s("source"), s("status_id")),
        "direct_message" => format!(
            "{:>8} @{}: {}",
            "message",
            v["message"]["login"].as_str().unwrap_or("?"),
            v["message"]["text"].as_str().unwrap_or("")
        ),
        _ => format!("{kind:>8} {v}"),
    }
}
