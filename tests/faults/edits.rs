//! An edit's chain cut by kill -9 (some for certain between their steps,
//! some wherever the kill finds them): the next process finishes each from
//! the outbox, and every status ends with one consistent version (text,
//! history, hashtag timelines and trending agree).

use super::*;

#[tokio::test]
async fn a_server_killed_mid_edits_leaves_each_status_one_consistent_version() {
    // The in-process app only sets up and reads: no workers of its own.
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (_, token) = app.user("kedit").await;
    let n = 40;
    let mut sids = Vec::new();
    for i in 0..n {
        sids.push(app.say(&token, &format!("draft {i} #kold{i}")).await);
    }
    let env = [("FIREHOSE_OUTBOX_LEASE", "1")];
    let first = ServerProcess::serve(&app.redis, &env).await;
    let http = reqwest::Client::new();
    // The first few edits are stopped for certain between their steps: the
    // new tag's timeline key holds a string, so the step that enters it
    // fails after the version was written.
    let stuck = 4;
    let mut conn = app.redis.conn();
    for (i, sid) in sids.iter().enumerate().take(stuck) {
        let _: () = redis::cmd("SET")
            .arg(format!("fh:tag:{{#knew{i}}}"))
            .arg("in the way")
            .query(&mut conn)
            .unwrap();
        let r = http
            .patch(first.url(&format!("/api/v1/statuses/{sid}")))
            .bearer_auth(&token)
            .json(&json!({"message": format!("final {i} #knew{i}")}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 503, "edit {i} went through");
        let message: String = redis::cmd("HGET")
            .arg(format!("fh:status:{{s{sid}}}"))
            .arg("message")
            .query(&mut conn)
            .unwrap();
        assert_eq!(
            message,
            format!("final {i} #knew{i}"),
            "edit {i} stopped half way"
        );
    }
    let edits = futures::stream::iter(sids.iter().enumerate().skip(stuck))
        .map(|(i, sid)| {
            let req = http
                .patch(first.url(&format!("/api/v1/statuses/{sid}")))
                .bearer_auth(&token)
                .json(&json!({"message": format!("final {i} #knew{i}")}));
            async move {
                let code = req.send().await.map(|r| r.status().as_u16()).unwrap_or(0);
                (i, code)
            }
        })
        .buffer_unordered(8);
    // After a few edits are answered, Redis holds every write (so the
    // edits under way stop between steps) and the process is killed.
    let answered: Vec<(usize, u16)> = edits.take(3).collect().await;
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(5000)
        .arg("WRITE")
        .query(&mut conn)
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    first.kill9().await;
    let _: () = redis::cmd("CLIENT")
        .arg("UNPAUSE")
        .query(&mut conn)
        .unwrap();
    for i in 0..stuck {
        let _: () = redis::cmd("DEL")
            .arg(format!("fh:tag:{{#knew{i}}}"))
            .query(&mut conn)
            .unwrap();
    }
    assert!(answered.iter().all(|(_, c)| *c == 200), "{answered:?}");
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let owed = store.outbox().depth().await.unwrap();
    // A new process (with workers) finishes what the dead one owed.
    let second = ServerProcess::serve(&app.redis, &env).await;
    drained(&app).await;
    let (mut edited, mut untouched) = (0, 0);
    let trending: Vec<String> = {
        let (_, body) = app
            .get("/api/v1/trends/tags?window=3600&limit=100", None)
            .await;
        body.as_array()
            .unwrap()
            .iter()
            .map(|t| t["tag"].as_str().unwrap().to_string())
            .collect()
    };
    for (i, sid) in sids.iter().enumerate() {
        let (_, status) = app.get(&format!("/api/v1/statuses/{sid}"), None).await;
        let (_, history) = app
            .get(&format!("/api/v1/statuses/{sid}/history"), None)
            .await;
        let versions = history["versions"].as_array().unwrap().len();
        let old_tag = app
            .timeline_ids(&format!("/api/v1/timelines/tag/kold{i}"), None)
            .await
            .contains(sid);
        let new_tag = app
            .timeline_ids(&format!("/api/v1/timelines/tag/knew{i}"), None)
            .await
            .contains(sid);
        let (old_trend, new_trend) = (
            trending.contains(&format!("kold{i}")),
            trending.contains(&format!("knew{i}")),
        );
        if status["message"] == format!("final {i} #knew{i}").as_str() {
            edited += 1;
            assert_eq!(
                (versions, old_tag, new_tag, old_trend, new_trend),
                (2, false, true, false, true),
                "edited status {i} is half moved"
            );
        } else {
            untouched += 1;
            assert_eq!(status["message"], format!("draft {i} #kold{i}").as_str());
            assert_eq!(
                (versions, old_tag, new_tag, old_trend, new_trend),
                (1, true, false, true, false),
                "unedited status {i} is half moved"
            );
            assert!(
                !answered.iter().any(|(j, _)| *j == i),
                "edit {i} was answered 200 but is not there"
            );
        }
    }
    println!(
        "kill -9 mid-edits: {stuck} stopped between steps, {} answered 200, {owed} ops owed \
         at the kill, {edited} statuses edited and {untouched} untouched after restart, none half-way",
        answered.len()
    );
    assert!(edited >= answered.len() + stuck);
    second.kill9().await;
}
