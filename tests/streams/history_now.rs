//! The history's answers kept honest: an edit found by its text now
//! whichever block it landed in, and a process that does not hold the
//! whole window saying which stretches it lacks (`complete`, `gaps`,
//! a `resume_gap` that names times, not internal positions).

use super::*;
use reqwest::Method;

/// The JSON answer to a GET of `url` (any process's) as `token`.
async fn get_json(app: &TestApp, url: &str, token: &str) -> Value {
    app.http
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn search(app: &TestApp, base: Option<&str>, token: &str, query: &str) -> Value {
    let path = format!("/api/v1/history/search?query={query}");
    let url = match base {
        Some(base) => format!("{base}{path}"),
        None => app.url(&path),
    };
    get_json(app, &url, token).await
}

fn found_ids(page: &Value) -> Vec<String> {
    page["statuses"]
        .as_array()
        .unwrap_or_else(|| panic!("{page}"))
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn an_edit_in_a_later_block_is_found_once_by_its_text_now() {
    let app = TestApp::start().await;
    let (_, ada) = app.user("ada").await;
    let sid = app.say(&ada, "numbat sighting").await;
    let other = app.say(&ada, "numbat elsewhere").await;
    // The posts in a block, then the edit in a later one (written before
    // the search: what is still pending is searched without summaries).
    let bytes = || async {
        let (_, h) = app.get("/api/v1/history", Some(&ada)).await;
        h["bytes"].as_u64().unwrap_or(0)
    };
    app.eventually("the posts are in a block", || async { bytes().await > 0 })
        .await;
    let first_block = bytes().await;
    let (status, body) = app
        .call(
            Method::PATCH,
            &format!("/api/v1/statuses/{sid}"),
            Some(&ada),
            Some(json!({"message": "echidna sighting"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    app.eventually("the edit is in a later block", || async {
        bytes().await > first_block
    })
    .await;
    let (_, reader) = app.user("reader").await;
    // Found by its new words, once, as it reads now.
    let page = search(&app, None, &reader, "echidna").await;
    assert_eq!(found_ids(&page), vec![sid.clone()], "{page}");
    assert_eq!(page["statuses"][0]["message"], "echidna sighting");
    assert_eq!(page["complete"], true, "{page}");
    assert_eq!(page["gaps"], json!([]), "{page}");
    // Not by the words it no longer holds; the unedited one still is.
    let page = search(&app, None, &reader, "numbat").await;
    assert_eq!(found_ids(&page), vec![other.clone()], "{page}");
    // By its author, once, among the author's.
    let page = search(&app, None, &reader, "from:ada").await;
    assert_eq!(found_ids(&page), vec![sid.clone(), other], "{page}");
    let (_, counts) = app
        .get(
            "/api/v1/history/counts?query=echidna&bucket=minute",
            Some(&reader),
        )
        .await;
    assert_eq!(counts["total"], 1, "{counts}");
    assert_eq!(counts["complete"], true, "{counts}");
}

#[tokio::test]
async fn a_process_that_lacks_a_stretch_says_so_in_search_and_counts() {
    // A buffer of about 20 entries: a process started after 60 posts
    // cannot read the first of them.
    let app = TestApp::start_with(|c| {
        c.replay_maxlen = 20;
        c.log_shards = 1;
    })
    .await;
    let (_, ada) = app.user("ada").await;
    let mut posted = Vec::new();
    for i in 0..60 {
        posted.push(app.say(&ada, &format!("emu {i}")).await);
    }
    app.eventually("the first process holds every post", || async {
        let (_, h) = app.get("/api/v1/history", Some(&ada)).await;
        h["events"].as_u64().unwrap_or(0) >= 61
    })
    .await;
    let late = app
        .beside(|c| {
            c.replay_maxlen = 20;
            c.log_shards = 1;
        })
        .await;
    let last = app.say(&ada, "emu late").await;
    let base = late.url("");
    app.eventually("the new process holds the newest post", || async {
        let page = search(&app, Some(&base), &ada, "emu%20late").await;
        found_ids(&page) == vec![last.clone()]
    })
    .await;

    // The first process holds the whole window: complete, no gaps.
    let whole = search(&app, None, &ada, "emu").await;
    assert_eq!(whole["complete"], true, "{whole}");
    assert_eq!(whole["gaps"], json!([]));
    assert_eq!(found_ids(&whole).len(), 61);
    // The new one says which stretch it lacks, and is not complete.
    let partial = search(&app, Some(&base), &ada, "emu").await;
    assert_eq!(partial["complete"], false, "{partial}");
    let gaps = partial["gaps"].as_array().unwrap();
    assert_eq!(gaps.len(), 1, "{partial}");
    let held = found_ids(&partial).len();
    assert!(held < 61, "{held} found");
    let oldest = partial["oldest"].as_f64().unwrap();
    assert!(
        gaps[0]["to"].as_f64().unwrap() <= oldest + 0.001,
        "the stretch ends where the history begins: {partial}"
    );
    let counts = get_json(
        &app,
        &format!("{base}/api/v1/history/counts?query=emu&bucket=minute"),
        &ada,
    )
    .await;
    assert_eq!(counts["complete"], false, "{counts}");
    assert_eq!(counts["gaps"], partial["gaps"], "{counts}");
    assert_eq!(counts["total"], held, "{counts}");
    // A window after the stretch is whole on the new process too.
    let after = oldest + 0.001;
    let page = get_json(
        &app,
        &format!("{base}/api/v1/history/search?query=emu&since={after}"),
        &ada,
    )
    .await;
    assert_eq!(page["complete"], true, "{page}");

    // A resume on the new process from the start is told of the stretch
    // in times, with no internal position in its sentence.
    let (_, fh) = app.user("reader").await;
    let mut s = app
        .stream_url(
            &late.url("/api/v1/stream/filter?track=emu&since=0"),
            Some(&fh),
            &[],
        )
        .await;
    let m = s.next("a resume_gap").await;
    assert_eq!(m.data["code"], "resume_gap", "{:?}", m.data);
    let message = m.data["message"].as_str().unwrap();
    assert!(
        !message.contains("18446744073709551615") && !message.contains("after 0-0"),
        "{message}"
    );
}
