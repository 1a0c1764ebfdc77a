//! What a write costs Redis, black-box: `--users` users over HTTP, each
//! following `--follows` others (in batches, `POST /api/v1/follows`), then
//! `--posts` posts and `--likes` likes from `--concurrency` clients, an
//! edit of each post (its hashtag changed, so its indices move), reads of a
//! list timeline of `--list-members` members, then sign-ups and logins. Every node's commands and CPU are read from INFO
//! before and after each phase (less what the nodes do idle), and printed
//! per write: the total over the nodes, and the busiest node against the
//! mean (1.0 is a perfectly even spread).
//!
//! ```sh
//! cargo build --release -p firehose -p firehose-bench && bench/write_cost.sh
//! ```

// Examples are command-line programs: printing is their output.
#![allow(clippy::print_stdout)]

use clap::Parser;
use firehose_bench::redis_info::{self, Node};
use firehose_bench::run_all;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// The server.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    url: String,
    /// Every Redis master (comma-separated URLs): one for one Redis.
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    nodes: String,
    /// Users.
    #[arg(long, default_value_t = 300)]
    users: usize,
    /// Others each user follows.
    #[arg(long, default_value_t = 10)]
    follows: usize,
    /// Posts.
    #[arg(long, default_value_t = 2000)]
    posts: usize,
    /// Likes.
    #[arg(long, default_value_t = 2000)]
    likes: usize,
    /// Hashtags the posts share, in turn (1: every post carries `#cost`, a
    /// hot tag whose timeline and trending partition take every post).
    #[arg(long, default_value_t = 1)]
    hashtags: usize,
    /// Members of the list whose timeline is read (at most `--users`).
    #[arg(long, default_value_t = 100)]
    list_members: usize,
    /// Reads of that list timeline (30 statuses a page).
    #[arg(long, default_value_t = 1000)]
    list_reads: usize,
    /// Sign-ups and logins (argon2 makes these slow on purpose).
    #[arg(long, default_value_t = 50)]
    accounts: usize,
    /// Requests in flight.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Also print, per phase, the microseconds each command took per write
    /// (INFO commandstats; a script's time includes the commands it ran).
    #[arg(long)]
    breakdown: bool,
}

struct Probe {
    nodes: Vec<redis::aio::MultiplexedConnection>,
    /// Per node: (commands, CPU seconds) a second with nothing to do.
    idle: Vec<(f64, f64)>,
}

impl Probe {
    async fn snap(&mut self) -> anyhow::Result<(Instant, Vec<Node>)> {
        let mut out = Vec::new();
        for c in &mut self.nodes {
            out.push(redis_info::read(c).await?);
        }
        Ok((Instant::now(), out))
    }

    /// Per node: commands and CPU µs of what happened between `a` and `b`,
    /// less idle (and less the INFO call itself).
    fn delta(&self, a: &(Instant, Vec<Node>), b: &(Instant, Vec<Node>)) -> Vec<Cost> {
        let secs = b.0.duration_since(a.0).as_secs_f64();
        a.1.iter()
            .zip(&b.1)
            .zip(&self.idle)
            .map(|((x, y), (ic, icpu))| Cost {
                calls: (y.calls as f64 - x.calls as f64 - 1.0 - ic * secs).max(0.0),
                cpu: ((y.cpu - x.cpu - icpu * secs) * 1e6).max(0.0),
            })
            .collect()
    }
}

/// Prints the commands that took the most time per write between `a` and
/// `b`, summed over the nodes: where a phase's Redis CPU goes, less the
/// network and the AOF (the CPU figure's remainder).
fn breakdown(n: usize, a: &[Node], b: &[Node]) {
    let n = n.max(1) as f64;
    // The `most` largest per write of `of`, summed over these node pairs.
    let top = |pairs: &[(&Node, &Node)], of: fn(&Node) -> &HashMap<String, f64>, most: usize| {
        let mut sum: HashMap<&str, f64> = HashMap::new();
        for (x, y) in pairs {
            for (name, v) in of(y) {
                *sum.entry(name.as_str()).or_default() +=
                    v - of(x).get(name).copied().unwrap_or(0.0);
            }
        }
        let mut top: Vec<(&str, f64)> = sum.into_iter().filter(|(_, v)| *v > 0.0).collect();
        top.sort_by(|x, y| y.1.total_cmp(&x.1));
        let line: Vec<String> = top
            .iter()
            .take(most)
            .map(|(name, v)| format!("{name} {:.2}", v / n))
            .collect();
        line.join(", ")
    };
    let all: Vec<(&Node, &Node)> = a.iter().zip(b).collect();
    println!("    µs per write in: {}", top(&all, |node| &node.usec, 12));
    println!(
        "    commands per write: {}",
        top(&all, |node| &node.calls_of, 12)
    );
    if all.len() > 1 {
        for (i, &(x, y)) in all.iter().enumerate() {
            println!(
                "    node {i}, {:.1} µs Redis CPU and commands per write: {}",
                (y.cpu - x.cpu) * 1e6 / n,
                top(&[(x, y)], |node| &node.calls_of, 10)
            );
        }
    }
}

/// One node's share of a phase.
struct Cost {
    calls: f64,
    /// Redis process CPU (commands, network, AOF), µs.
    cpu: f64,
}

/// Prints one phase: per write, the sum over nodes and busiest/mean.
fn report(what: &str, n: usize, per_node: &[Cost], took: Duration) {
    let rate = n as f64 / took.as_secs_f64().max(1e-9);
    let n = n.max(1) as f64;
    let calls: f64 = per_node.iter().map(|p| p.calls).sum();
    let cpu: f64 = per_node.iter().map(|p| p.cpu).sum();
    let k = per_node.len() as f64;
    let skew = |f: fn(&Cost) -> f64, total: f64| {
        let max = per_node.iter().map(f).fold(0.0, f64::max);
        if total > 0.0 {
            max / (total / k)
        } else {
            0.0
        }
    };
    let spread = if per_node.len() > 1 {
        format!(
            "; busiest node / mean: {:.2} (commands), {:.2} (CPU)",
            skew(|p| p.calls, calls),
            skew(|p| p.cpu, cpu)
        )
    } else {
        String::new()
    };
    println!(
        "{what:<24} {:>6.1} commands {:>6.1} µs Redis CPU per write, {rate:>6.0} writes/s{spread}",
        calls / n,
        cpu / n
    );
}

async fn json_call(req: reqwest::RequestBuilder) -> anyhow::Result<(u16, Value)> {
    let r = req.send().await?;
    let status = r.status().as_u16();
    Ok((status, r.json().await.unwrap_or(Value::Null)))
}

/// Signs `login` up; whether it was created.
async fn sign_up(http: reqwest::Client, base: String, login: String) -> bool {
    let body = json!({"login": login, "name": login, "email": format!("{login}@example.test"), "password": PASSWORD});
    json_call(http.post(format!("{base}/api/v1/users")).json(&body))
        .await
        .is_ok_and(|(s, _)| s == 201)
}

const PASSWORD: &str = "password123";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let http = reqwest::Client::new();
    let base = args.url.trim_end_matches('/').to_string();
    let mut nodes = Vec::new();
    for url in args.nodes.split(',') {
        nodes.push(
            redis::Client::open(url)?
                .get_multiplexed_async_connection()
                .await?,
        );
    }
    let mut probe = Probe {
        idle: vec![(0.0, 0.0); nodes.len()],
        nodes,
    };
    let tag = std::process::id();

    // Users (sign-ups over HTTP), then their tokens.
    let logins: Vec<String> = (0..args.users).map(|i| format!("wc{tag}_{i}")).collect();
    let signed = run_all(args.users, args.concurrency, |i| {
        sign_up(http.clone(), base.clone(), logins[i].clone())
    })
    .await;
    anyhow::ensure!(signed == args.users, "only {signed} users signed up");
    let mut tokens = Vec::new();
    let mut ids = Vec::new();
    for login in &logins {
        let body = json!({"identifier": login, "password": PASSWORD});
        let (_, v) = json_call(http.post(format!("{base}/api/v1/sessions")).json(&body)).await?;
        tokens.push(v["token"].as_str().unwrap_or_default().to_string());
        ids.push(v["user"]["id"].as_str().unwrap_or_default().to_string());
    }

    // Idle: what the nodes do with nothing asked (keep-alives, sweepers).
    let a = probe.snap().await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let b = probe.snap().await?;
    let secs = b.0.duration_since(a.0).as_secs_f64();
    probe.idle =
        a.1.iter()
            .zip(&b.1)
            .map(|(x, y)| ((y.calls - x.calls) as f64 / secs, (y.cpu - x.cpu) / secs))
            .collect();
    println!(
        "{} users, each following {}; {} node(s); idle {:.0} commands/s",
        args.users,
        args.follows,
        probe.nodes.len(),
        probe.idle.iter().map(|p| p.0).sum::<f64>()
    );

    // Follows: user i follows the next `follows` users, one batch each.
    let a = probe.snap().await?;
    let followed = run_all(args.users, args.concurrency, |i| {
        let (http, base, token) = (http.clone(), base.clone(), tokens[i].clone());
        let batch: Vec<String> = (1..=args.follows)
            .map(|k| ids[(i + k) % ids.len()].clone())
            .collect();
        async move {
            json_call(
                http.post(format!("{base}/api/v1/follows"))
                    .bearer_auth(token)
                    .json(&json!({"ids": batch})),
            )
            .await
            .is_ok_and(|(s, _)| s == 200)
        }
    })
    .await;
    let took = a.0.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let b = probe.snap().await?;
    report(
        &format!("follow (batches of {})", args.follows),
        followed * args.follows,
        &probe.delta(&a, &b),
        took,
    );
    if args.breakdown {
        breakdown(followed * args.follows, &a.1, &b.1);
    }

    // Posts, each fanned out to `follows` followers.
    let mut rng = rand::rngs::StdRng::seed_from_u64(tag as u64);
    let authors: Vec<usize> = (0..args.posts)
        .map(|_| rng.random_range(0..args.users))
        .collect();
    let posted = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let a = probe.snap().await?;
    let hashtags = args.hashtags.max(1);
    let n_posted = run_all(args.posts, args.concurrency, |i| {
        let (http, base, token) = (http.clone(), base.clone(), tokens[authors[i]].clone());
        let posted = posted.clone();
        async move {
            let tag = match hashtags {
                1 => "cost".to_string(),
                n => format!("cost{}", i % n),
            };
            let body = json!({"message": format!("post {i} #{tag}")});
            match json_call(
                http.post(format!("{base}/api/v1/statuses"))
                    .bearer_auth(token)
                    .json(&body),
            )
            .await
            {
                Ok((201, v)) => {
                    if let (Ok(mut p), Some(id)) = (posted.lock(), v["id"].as_str()) {
                        p.push((i, id.to_string()));
                    }
                    true
                }
                _ => false,
            }
        }
    })
    .await;
    let took = a.0.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let b = probe.snap().await?;
    report(
        &format!("post ({} followers)", args.follows),
        n_posted,
        &probe.delta(&a, &b),
        took,
    );
    if args.breakdown {
        breakdown(n_posted, &a.1, &b.1);
    }

    // Likes: distinct (liker, status) pairs.
    let written: Vec<(usize, String)> = posted.lock().map(|p| p.clone()).unwrap_or_default();
    let statuses: Vec<String> = written.iter().map(|(_, id)| id.clone()).collect();
    anyhow::ensure!(!statuses.is_empty(), "nothing was posted");
    let pairs: Vec<(usize, String)> = (0..args.likes)
        .map(|i| {
            (
                i % args.users,
                statuses[(i * 7919) % statuses.len()].clone(),
            )
        })
        .collect();
    let a = probe.snap().await?;
    let liked = run_all(args.likes, args.concurrency, |i| {
        let (http, base) = (http.clone(), base.clone());
        let (who, sid) = pairs[i].clone();
        let token = tokens[who].clone();
        async move {
            json_call(
                http.post(format!("{base}/api/v1/statuses/{sid}/like"))
                    .bearer_auth(token),
            )
            .await
            .is_ok_and(|(s, _)| s == 200 || s == 201)
        }
    })
    .await;
    let took = a.0.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let b = probe.snap().await?;
    report("like", liked, &probe.delta(&a, &b), took);
    if args.breakdown {
        breakdown(liked, &a.1, &b.1);
    }

    // Edits: each post once, by its author, its hashtag changed.
    let a = probe.snap().await?;
    let edited = run_all(written.len(), args.concurrency, |k| {
        let (http, base) = (http.clone(), base.clone());
        let (i, sid) = written[k].clone();
        let token = tokens[authors[i]].clone();
        async move {
            let body = json!({"message": format!("post {i} edited #costedit{}", i % 64)});
            json_call(
                http.patch(format!("{base}/api/v1/statuses/{sid}"))
                    .bearer_auth(token)
                    .json(&body),
            )
            .await
            .is_ok_and(|(s, _)| s == 200)
        }
    })
    .await;
    let took = a.0.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let b = probe.snap().await?;
    report("edit (hashtag changed)", edited, &probe.delta(&a, &b), took);
    if args.breakdown {
        breakdown(edited, &a.1, &b.1);
    }

    // A list of the first `list_members` users, its timeline read.
    let members: Vec<String> = ids.iter().take(args.list_members).cloned().collect();
    let (_, list) = json_call(
        http.post(format!("{base}/api/v1/lists"))
            .bearer_auth(&tokens[0])
            .json(&json!({"title": "cost"})),
    )
    .await?;
    let lid = list["id"].as_str().unwrap_or_default().to_string();
    for chunk in members.chunks(100) {
        json_call(
            http.post(format!("{base}/api/v1/lists/{lid}/members"))
                .bearer_auth(&tokens[0])
                .json(&json!({ "ids": chunk })),
        )
        .await?;
    }
    let a = probe.snap().await?;
    let read = run_all(args.list_reads, args.concurrency, |_| {
        let (http, base, token, lid) = (http.clone(), base.clone(), tokens[0].clone(), lid.clone());
        async move {
            json_call(
                http.get(format!("{base}/api/v1/timelines/list/{lid}?count=30"))
                    .bearer_auth(token),
            )
            .await
            .is_ok_and(|(s, v)| s == 200 && v.as_array().is_some_and(|a| !a.is_empty()))
        }
    })
    .await;
    let took = a.0.elapsed();
    let b = probe.snap().await?;
    report(
        &format!("list timeline read ({} members, 30 a page)", members.len()),
        read,
        &probe.delta(&a, &b),
        took,
    );
    if args.breakdown {
        breakdown(read, &a.1, &b.1);
    }

    // Sign-ups and logins.
    let a = probe.snap().await?;
    let extra: Vec<String> = (0..args.accounts)
        .map(|i| format!("wcx{tag}_{i}"))
        .collect();
    let made = run_all(args.accounts, 4, |i| {
        sign_up(http.clone(), base.clone(), extra[i].clone())
    })
    .await;
    let took = a.0.elapsed();
    let b = probe.snap().await?;
    report("sign-up", made, &probe.delta(&a, &b), took);
    if args.breakdown {
        breakdown(made, &a.1, &b.1);
    }
    let a = probe.snap().await?;
    let logged = run_all(args.accounts, 4, |i| {
        let (http, base, login) = (http.clone(), base.clone(), extra[i].clone());
        async move {
            let body = json!({"identifier": login, "password": PASSWORD});
            json_call(http.post(format!("{base}/api/v1/sessions")).json(&body))
                .await
                .is_ok_and(|(s, _)| s == 201)
        }
    })
    .await;
    let took = a.0.elapsed();
    let b = probe.snap().await?;
    report("login", logged, &probe.delta(&a, &b), took);
    if args.breakdown {
        breakdown(logged, &a.1, &b.1);
    }
    Ok(())
}
