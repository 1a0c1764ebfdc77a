//! Where `firehose tail` gets its tokens: the one it was given, and a
//! fresh one from `--token-command` or `--login` before each expires.

use crate::config::tail::TailArgs;
use anyhow::{bail, Context};
use serde_json::Value;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How a fresh token is had.
enum Source {
    /// A shell command printing one.
    Command(String),
    /// A login with these credentials.
    Login {
        identifier: String,
        password: String,
    },
}

/// The token in use and how to replace it.
pub(super) struct Tokens {
    current: String,
    source: Option<Source>,
}

impl Tokens {
    /// The tokens `args` give, fetching the first when no --token is given.
    pub(super) async fn start(args: &TailArgs, server: (&str, u16)) -> anyhow::Result<Self> {
        let source = match (&args.token_command, &args.login, &args.password) {
            (Some(_), Some(_), _) => bail!("give --token-command or --login, not both"),
            (Some(cmd), None, _) => Some(Source::Command(cmd.clone())),
            (None, Some(identifier), Some(password)) => Some(Source::Login {
                identifier: identifier.clone(),
                password: password.clone(),
            }),
            (None, Some(_), None) => bail!("--login needs the password in FIREHOSE_PASSWORD"),
            (None, None, _) => None,
        };
        let mut tokens = Self {
            current: args.token.clone().unwrap_or_default(),
            source,
        };
        if tokens.current.is_empty() {
            if tokens.source.is_none() {
                bail!("give a token: --token (FIREHOSE_TOKEN), --token-command or --login");
            }
            tokens.renew(server).await?;
        }
        Ok(tokens)
    }

    /// The token to use now.
    pub(super) fn current(&self) -> &str {
        &self.current
    }

    /// Whether a fresh token can be had.
    pub(super) fn renewable(&self) -> bool {
        self.source.is_some()
    }

    /// Replaces the token with a fresh one.
    pub(super) async fn renew(&mut self, server: (&str, u16)) -> anyhow::Result<()> {
        self.current = match &self.source {
            None => bail!("the token expired and there is no --token-command or --login"),
            Some(Source::Command(cmd)) => from_command(cmd).await?,
            Some(Source::Login {
                identifier,
                password,
            }) => super::http::login(server, identifier, password).await?,
        };
        Ok(())
    }
}

/// Runs `cmd` with `sh -c`: the token it prints, bare or as JSON's `token`.
async fn from_command(cmd: &str) -> anyhow::Result<String> {
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::process::Command::new("sh")
            .args(["-c", cmd])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .output(),
    )
    .await
    .context("--token-command did not finish within 30 s")?
    .context("--token-command did not start")?;
    if !out.status.success() {
        bail!("--token-command failed ({})", out.status);
    }
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let token = if text.starts_with('{') {
        let v: Value = serde_json::from_str(&text).context("--token-command printed bad JSON")?;
        v["token"]
            .as_str()
            .context("--token-command's JSON has no token")?
            .to_string()
    } else {
        text
    };
    if token.is_empty() || token.contains(char::is_whitespace) {
        bail!("--token-command printed no token");
    }
    Ok(token)
}

/// When to fetch the next token, given a `token_expiring` warning's
/// `expires_at`: half way to it, and at most 30 s before it.
pub(super) fn renew_at(expires_at: u64) -> Instant {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    let left = (expires_at as f64 - now).max(0.0);
    let wait = left - (left / 2.0).min(30.0);
    Instant::now() + Duration::from_secs_f64(wait)
}
