//! A process's CPU time and memory, read from /proc, so that a tool sharing
//! the cores with the server measures the server alone.

/// CPU seconds (user + system) and resident memory (KiB) of a process.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    /// utime + stime, in seconds.
    pub cpu: f64,
    /// VmRSS, in KiB.
    pub rss_kib: u64,
}

/// The CPU time and RSS of `pid`, if it exists.
pub fn stats(pid: u32) -> Option<Stats> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces: fields count from after its `)`.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches(" kB")
        .parse()
        .ok()?;
    Some(Stats {
        cpu: ticks / 100.0,
        rss_kib,
    })
}

/// CPU seconds of `pid`.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    stats(pid).map(|s| s.cpu)
}

/// CPU seconds this process has used.
pub fn own_cpu() -> Option<f64> {
    cpu_seconds(std::process::id())
}

/// The pid of a running `firehose serve` (not one run through cargo).
pub fn find_server() -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        (cmd.contains("firehose") && cmd.contains(" serve") && !cmd.contains("cargo"))
            .then_some(pid)
    })
}
