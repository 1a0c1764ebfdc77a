//! The event log in shards, read by two server processes on one store (one
//! Redis, or the cluster with `FIREHOSE_TEST_CLUSTER=1`): one order on
//! both, ids either resumes, and writes delivered after what caused them.

use super::*;

/// The statuses and follows a stream gives until it has been quiet a while
/// after `want` statuses: `(id, type)`, in the order given.
async fn log_until_quiet(s: &mut StreamClient, want: usize) -> Vec<(String, String)> {
    let (mut seen, mut statuses) = (Vec::new(), 0);
    loop {
        let m = if statuses < want {
            s.next_event("the writers' events").await
        } else {
            match s.next_within(Duration::from_secs(1)).await {
                Some(m) => m,
                None => return seen,
            }
        };
        assert_ne!(m.event, "resume_gap", "nothing was trimmed");
        let kind = m.data["type"].as_str().unwrap_or_default().to_string();
        if kind == "status" {
            statuses += 1;
        }
        if kind == "status" || kind == "follow" {
            seen.push((m.id.clone().expect("an event's id"), kind));
        }
    }
}

/// Posts `message` as `token` through process `b`: the status.
async fn post_on(app: &TestApp, b: &common::Beside, token: &str, message: &str) -> Value {
    let r = app
        .http
        .post(b.url("/api/v1/statuses"))
        .bearer_auth(token)
        .json(&json!({ "message": message }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    r.json().await.unwrap()
}

// Each prints what it saw: the figures of a run.
#[allow(clippy::print_stdout)]
#[tokio::test]
async fn two_processes_merge_the_shards_into_one_order_and_resume_each_others_ids() {
    let app = TestApp::start().await;
    let b = app.beside(|_| {}).await;
    let mut writers = Vec::new();
    for i in 0..6 {
        writers.push(app.user(&format!("writer{i}")).await);
    }
    let fh = app
        .operator_token(&writers[0].0, &["read", "firehose"])
        .await;
    let path = "/api/v1/stream/firehose";
    let mut on_a = app.stream(path, Some(&fh), &[]).await;
    let mut on_b = app.stream_url(&b.url(path), Some(&fh), &[]).await;
    // Six writers at once, each alternating between the two processes:
    // statuses fall in the shards of their ids, follows in their sources'.
    let posts = 5;
    let runs = writers.iter().enumerate().map(|(i, (_, token))| {
        let (app, b, next) = (&app, &b, writers[(i + 1) % writers.len()].0.clone());
        async move {
            for n in 0..posts {
                let url = if (i + n) % 2 == 0 {
                    app.url("/api/v1/statuses")
                } else {
                    b.url("/api/v1/statuses")
                };
                let r = app
                    .http
                    .post(url)
                    .bearer_auth(token)
                    .json(&json!({"message": format!("writer {i} post {n}")}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), StatusCode::CREATED);
            }
            let r = app
                .http
                .post(b.url(&format!("/api/v1/users/{next}/follow")))
                .bearer_auth(token)
                .json(&json!({}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::OK, "follow {next}");
        }
    });
    futures::future::join_all(runs).await;
    let total = writers.len() * posts;
    let seen_a = log_until_quiet(&mut on_a, total).await;
    let seen_b = log_until_quiet(&mut on_b, total).await;
    let count = |seen: &[(String, String)], kind: &str| seen.iter().filter(|e| e.1 == kind).count();
    assert_eq!(count(&seen_a, "status"), total, "every status once on A");
    assert_eq!(
        count(&seen_a, "follow"),
        writers.len(),
        "every follow once on A"
    );
    assert_eq!(
        seen_a, seen_b,
        "both processes give the same ids in the same order"
    );
    // A client of A moves to B half way: B replays exactly what A gave after.
    let half = seen_a.len() / 2;
    let mut resumed = app
        .stream_url(
            &b.url(path),
            Some(&fh),
            &[("Last-Event-ID", &seen_a[half].0)],
        )
        .await;
    let rest = log_until_quiet(&mut resumed, count(&seen_a[half + 1..], "status")).await;
    assert_eq!(
        rest,
        seen_a[half + 1..],
        "B resumes A's id with nothing lost or twice"
    );
    println!(
        "two processes, {} events of {} writers at once: one order on both; a resume on B \
         from A's id {} replayed the {} after it",
        seen_a.len(),
        writers.len(),
        seen_a[half].0,
        rest.len()
    );
}

#[allow(clippy::print_stdout)]
#[tokio::test]
async fn a_post_sent_after_a_follow_on_another_process_reaches_the_follower() {
    let app = TestApp::start().await;
    let b = app.beside(|_| {}).await;
    let pairs = 8;
    let mut delivered = 0;
    for i in 0..pairs {
        let (_, fan) = app.user(&format!("fan{i}")).await;
        let (star_id, star) = app.user(&format!("star{i}")).await;
        // The follower's stream on either process, in turn.
        let path = "/api/v1/stream/user";
        let mut s = if i % 2 == 0 {
            app.stream(path, Some(&fan), &[]).await
        } else {
            app.stream_url(&b.url(path), Some(&fan), &[]).await
        };
        // The follow is acknowledged by A before the post begins on B; the
        // follow's event and the post's are in different shards (the
        // follower's, the status's).
        app.follow(&fan, &star_id).await;
        let posted = post_on(&app, &b, &star, &format!("right after the follow {i}")).await;
        let follow = s.next_event("the follow").await;
        assert_eq!(follow.data["type"], "follow", "the follow comes first");
        let status = s.next_event("the post after the follow").await;
        assert_eq!(status.data["status"]["id"], posted["id"], "then the post");
        let at = |m: &Msg| firehose::stream::EventId::parse(m.id.as_deref().unwrap());
        assert!(
            at(&follow) < at(&status),
            "the ids order as delivered: {:?} then {:?}",
            follow.id,
            status.id
        );
        delivered += 1;
    }
    println!(
        "{delivered} of {pairs} posts sent on B right after a follow on A reached the follower"
    );
}

/// The event's id's millisecond.
fn id_ms(m: &Msg) -> u64 {
    firehose::stream::EventId::parse(m.id.as_deref().unwrap_or_default()).map_or(0, |e| e.0)
}

// Prints how many follows were written on the master that runs ahead.
#[allow(clippy::print_stdout)]
#[tokio::test]
async fn a_post_after_a_follow_reaches_the_follower_though_a_masters_clock_runs_ahead() {
    // Master 0's wall clock runs 60 ms ahead of the others': its events'
    // ids are 60 ms ahead of what the other masters write at the same time.
    let ahead: u64 = 60;
    let app = TestApp::start_on(
        common::RedisServer::start_cluster_with_clock_ahead(ahead as i64),
        |_| {},
    )
    .await;
    let b = app.beside(|_| {}).await;
    let (star_id, star) = app.user("star").await;
    let (mut pairs, mut follows_ahead) = (0, 0);
    // Until three follows were written on the master ahead (a follow's
    // shard is its follower's: a third of the followers' are there).
    while follows_ahead < 3 {
        assert!(pairs < 40, "no follow of {pairs} went to the master ahead");
        let (_, fan) = app.user(&format!("fan{pairs}")).await;
        let path = "/api/v1/stream/user";
        let mut s = app.stream_url(&b.url(path), Some(&fan), &[]).await;
        // The follow, acknowledged by A; then at once the post, on B.
        let sent = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        app.follow(&fan, &star_id).await;
        let posted = post_on(&app, &b, &star, &format!("right after follow {pairs}")).await;
        let follow = s.next_event("the follow").await;
        assert_eq!(follow.data["type"], "follow", "the follow comes first");
        if id_ms(&follow) > sent + ahead / 2 {
            follows_ahead += 1;
        }
        let status = s.next_event("the post after the follow").await;
        assert_eq!(
            status.data["status"]["id"], posted["id"],
            "then the post (follow {:?}, {follows_ahead} written ahead so far)",
            follow.id
        );
        assert!(
            id_ms(&status) >= id_ms(&follow),
            "the post's id follows the follow's: {:?} then {:?}",
            follow.id,
            status.id
        );
        pairs += 1;
    }
    let waits = app.metric("firehose_commit_waits_total").await;
    println!(
        "{pairs} follows then posts through two processes, {follows_ahead} follows written on \
         a master {ahead} ms ahead: every post reached its follower; {waits} writes waited"
    );
    assert!(waits >= f64::from(follows_ahead), "the writes ahead waited");
}

// Prints the run's counts.
#[allow(clippy::print_stdout)]
#[tokio::test]
async fn a_busy_shard_is_not_held_back_by_quiet_ones_and_a_quiet_one_keeps_its_place() {
    let app = TestApp::start().await;
    let (busy_id, busy) = app.user("busy").await;
    let (target_id, _) = app.user("followed").await;
    let (_, quiet) = app.user("quiet").await;
    let fh = app.operator_token(&busy_id, &["read", "firehose"]).await;
    let mut s = app.stream("/api/v1/stream/firehose", Some(&fh), &[]).await;
    // One user's follows and unfollows: every event in one shard (the
    // follower's), the other shards quiet but for one post half way.
    let (ops, half) = (30, 15);
    let mut posted = None;
    for i in 0..ops {
        let path = format!("/api/v1/users/{target_id}/follow");
        let (status, body) = if i % 2 == 0 {
            app.post(&path, Some(&busy), json!({})).await
        } else {
            app.delete(&path, Some(&busy)).await
        };
        assert!(status.is_success(), "{i}: {status} {body}");
        if i + 1 == half {
            posted = Some(app.say(&quiet, "a quiet shard's one event").await);
        }
    }
    let posted = posted.unwrap();
    let mut seen = Vec::new();
    while seen.len() < ops + 1 {
        let m = s
            .next_event("the busy shard's events and the quiet one's")
            .await;
        let kind = m.data["type"].as_str().unwrap_or_default().to_string();
        match kind.as_str() {
            "follow" | "unfollow" if m.data["source"] == busy_id.as_str() => seen.push(kind),
            "status" if m.data["status"]["id"] == posted.as_str() => seen.push(kind),
            _ => {}
        }
    }
    let expected: Vec<&str> = (0..ops)
        .flat_map(|i| {
            let op = if i % 2 == 0 { "follow" } else { "unfollow" };
            if i + 1 == half {
                vec![op, "status"]
            } else {
                vec![op]
            }
        })
        .collect();
    assert_eq!(
        seen, expected,
        "every event of the busy shard in order, the quiet one's in its place"
    );
    println!(
        "{ops} follows and unfollows in one shard and a post in another half way: all live, \
         in the order written"
    );
}
