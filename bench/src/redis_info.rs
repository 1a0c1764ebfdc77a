//! One Redis node's counters, read from `INFO all`: CPU, commands (the sum
//! of every `cmdstat_` line's calls, commands run inside scripts included),
//! network bytes, and the microseconds spent in each command.

use std::collections::HashMap;

/// One Redis node's counters at one moment.
#[derive(Clone, Default, Debug)]
pub struct Node {
    /// used_cpu_sys + used_cpu_user, seconds.
    pub cpu: f64,
    /// Commands run.
    pub calls: u64,
    /// Bytes in and out.
    pub bytes: u64,
    /// Command -> microseconds spent in it.
    pub usec: HashMap<String, f64>,
    /// Command -> times it ran.
    pub calls_of: HashMap<String, f64>,
}

/// A field of an INFO answer (0 when missing).
pub fn field(info: &str, name: &str) -> f64 {
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Reads one node's counters.
pub async fn read(conn: &mut redis::aio::MultiplexedConnection) -> anyhow::Result<Node> {
    let info: String = redis::cmd("INFO").arg("all").query_async(conn).await?;
    let stat = |l: &str, key: &str| -> Option<f64> {
        l.split(key).nth(1)?.split(',').next()?.parse().ok()
    };
    let mut node = Node {
        cpu: field(&info, "used_cpu_sys") + field(&info, "used_cpu_user"),
        bytes: (field(&info, "total_net_input_bytes") + field(&info, "total_net_output_bytes"))
            as u64,
        ..Node::default()
    };
    for l in info.lines() {
        let Some((name, rest)) = l.strip_prefix("cmdstat_").and_then(|r| r.split_once(':')) else {
            continue;
        };
        let calls = stat(rest, "calls=").unwrap_or(0.0);
        node.calls += calls as u64;
        node.calls_of.insert(name.to_string(), calls);
        node.usec
            .insert(name.to_string(), stat(rest, "usec=").unwrap_or(0.0));
    }
    Ok(node)
}
