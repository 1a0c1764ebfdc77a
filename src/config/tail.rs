//! `firehose tail`'s command line (here, beside every other flag).

use clap::Args;

/// `firehose tail`.
#[derive(Debug, Clone, Args)]
pub struct TailArgs {
    /// The stream: firehose, sample, filter, user, search, group or list.
    #[arg(default_value = "sample", value_parser = ["firehose", "sample", "filter", "user", "search", "group", "list"])]
    pub stream: String,
    /// group or list: which one (its id).
    #[arg(long)]
    pub id: Option<String>,
    /// firehose, sample or search: this consumer's share, `k/N` (1 ≤ k ≤ N ≤ 32):
    /// N consumers with k = 1..N get every event once between them.
    #[arg(long, value_parser = parse_partition)]
    pub partition: Option<(u8, u8)>,
    /// filter: ad-hoc filter rules, a JSON array (`["#rust lang:en", {"value": "..", "tag": ".."}]`).
    #[arg(long)]
    pub rules: Option<String>,
    /// Start at the first event the server holds at or after this time (unix
    /// seconds; its history included) when there is no id to resume after.
    #[arg(long)]
    pub since: Option<String>,
    /// The server.
    #[arg(long, env = "FIREHOSE_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// A token (`firehose token`, or a login's); never printed. Without
    /// --token-command or --login, the stream ends when it expires.
    #[arg(long, env = "FIREHOSE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// A shell command that prints a fresh token (the token, or JSON with a
    /// `token` field, as `firehose token` prints): run at start when there is
    /// no --token, and again before the token expires or when it is refused.
    #[arg(long, env = "FIREHOSE_TOKEN_COMMAND")]
    pub token_command: Option<String>,
    /// Log in as this login or email (the password from FIREHOSE_PASSWORD)
    /// for a token at start and again before each one expires.
    #[arg(long, env = "FIREHOSE_LOGIN")]
    pub login: Option<String>,
    /// The password for --login; give it through the environment.
    #[arg(long, env = "FIREHOSE_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// `zstd`: ask for the stream compressed (`Accept-Encoding: zstd`) and
    /// decode it; the server falls back to plain when it has no room.
    #[arg(long, value_parser = ["zstd", "none"], default_value = "none")]
    pub compress: String,
    /// filter: comma-separated phrases.
    #[arg(long)]
    pub track: Option<String>,
    /// filter: comma-separated user ids.
    #[arg(long)]
    pub follow: Option<String>,
    /// filter: boxes, `sw_lon,sw_lat,ne_lon,ne_lat` groups.
    #[arg(long)]
    pub locations: Option<String>,
    /// sample: the rate (0.01 is 1 %).
    #[arg(long)]
    pub rate: Option<String>,
    /// `json` (each event's JSON, a line) or `pretty` (a line for people).
    #[arg(long, default_value = "pretty", value_parser = ["json", "pretty"])]
    pub format: String,
    /// Start after this event id (else live).
    #[arg(long)]
    pub last_event_id: Option<String>,
}

/// `k/N` for `firehose tail --partition`.
fn parse_partition(raw: &str) -> Result<(u8, u8), String> {
    let bad = || format!("{raw:?}: give k/N with 1 <= k <= N <= 32, such as 2/4");
    let (k, n) = raw.split_once('/').ok_or_else(bad)?;
    let (k, n): (u8, u8) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if k == 0 || k > n || n > 32 {
        return Err(bad());
    }
    Ok((k, n))
}
