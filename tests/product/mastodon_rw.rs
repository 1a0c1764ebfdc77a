//! The Mastodon-compatible API's statuses, timelines, notifications and
//! streams, driven by two real client libraries that no one here wrote
//! (Mastodon.py from PyPI, masto.js from npm, unchanged), and by raw
//! requests for paging, resume, privacy and refusals.

use super::*;
use crate::common::{ids, StreamClient};

/// A Mastodon SSE stream at `path` of the listener at `base`.
async fn mastodon_stream(
    app: &TestApp,
    base: &str,
    path: &str,
    token: &str,
    headers: &[(&str, &str)],
) -> StreamClient {
    let s = app
        .stream_url(&format!("{base}{path}"), Some(token), headers)
        .await;
    assert_eq!(s.status, StatusCode::OK, "{path}: {}", s.body);
    s
}

#[tokio::test]
async fn mastodon_py_posts_reads_pages_and_streams() {
    let (app, base) = TestApp::with_mastodon().await;
    app.user("alice").await;
    app.user("bob").await;
    let python = common::python_venv("mastodon-py", "Mastodon.py");
    let script = r#"
import json, sys, time
from mastodon import Mastodon, StreamListener
base = sys.argv[1]
cid, sec = Mastodon.create_app("rw", api_base_url=base, scopes=["read", "write", "follow"])
def login(u):
    m = Mastodon(client_id=cid, client_secret=sec, api_base_url=base)
    m.log_in(u, "password123", scopes=["read", "write", "follow"], allow_http=True)
    return m
a, b = login("alice"), login("bob")
bob = a.account_lookup("bob")
out = {"follow": a.account_follow(bob["id"])["following"]}
seen = []
class Seen(StreamListener):
    def on_update(self, s): seen.append(["update", str(s["id"]), str(s["reblog"]["id"]) if s["reblog"] else None])
    def on_status_update(self, s): seen.append(["status.update", str(s["id"]), s["content"]])
    def on_notification(self, n): seen.append(["notification", n["type"], n["account"]["acct"]])
    def on_delete(self, i): seen.append(["delete", str(i)])
handle = a.stream_user(Seen(), run_async=True)
# The stream is live once a status posted now reaches it.
for _ in range(50):
    probe = b.status_post("probe")
    time.sleep(0.2)
    if any(e[0] == "update" and e[1] == str(probe["id"]) for e in seen):
        break
s = b.status_post("hello @alice #Rust <b>&")
out["posted"] = {"id": str(s["id"]), "content": s["content"], "acct": s["account"]["acct"],
                 "visibility": s["visibility"], "tags": [t["name"] for t in s["tags"]],
                 "mentions": [m["acct"] for m in s["mentions"]]}
r = b.status_reply(s, "a reply")
f = a.status_favourite(s["id"])
out["favourite"] = {"favourited": f["favourited"], "count": f["favourites_count"]}
rb = a.status_reblog(s["id"])
out["reblog"] = {"of": str(rb["reblog"]["id"]), "by": rb["account"]["acct"]}
bm = a.status_bookmark(s["id"])
out["bookmarked"] = bm["bookmarked"]
again = a.status(s["id"])
out["marks"] = [again["favourited"], again["reblogged"], again["bookmarked"]]
out["bookmarks"] = [str(x["id"]) for x in a.bookmarks()]
out["favourites"] = [str(x["id"]) for x in a.favourites()]
out["favourited_by"] = [x["acct"] for x in b.status_favourited_by(s["id"])]
out["reblogged_by"] = [x["acct"] for x in b.status_reblogged_by(s["id"])]
ctx = a.status_context(s["id"])
out["descendants"] = [str(x["id"]) for x in ctx["descendants"]]
e = b.status_update(s["id"], "hello again #Rust")
out["edited"] = {"edited_at": e["edited_at"] is not None, "history": len(b.status_history(s["id"]))}
# Every page of the home timeline by its Link headers, one status a page.
ids, page = [], a.timeline_home(limit=1)
while page:
    ids += [str(x["id"]) for x in page]
    page = a.fetch_next(page)
out["home_paged"] = ids
out["home"] = [str(x["id"]) for x in a.timeline_home(limit=40)]
out["tag"] = [str(x["id"]) for x in a.timeline_hashtag("rust")]
out["account_no_replies"] = [str(x["id"]) for x in a.account_statuses(bob["id"], exclude_replies=True)]
out["rel"] = a.account_relationships([bob["id"]])[0]["following"]
time.sleep(1)
out["notifications"] = sorted([n["type"], n["account"]["acct"]] for n in b.notifications())
out["grouped"] = sorted(g["type"] for g in b.grouped_notifications()["notification_groups"])
d = b.status_delete(r["id"])
out["deleted_text"] = d.get("text")
out["reply"] = str(r["id"])
for _ in range(50):
    if any(x[0] == "delete" for x in seen) and any(x[0] == "status.update" for x in seen):
        break
    time.sleep(0.1)
handle.close()
out["seen"] = seen
print(json.dumps(out))
"#;
    let dir = std::env::temp_dir();
    let seen =
        common::run_client(python.to_str().unwrap(), &dir, &["-u", "-c", script, &base]).await;
    let posted = &seen["posted"];
    let sid = posted["id"].as_str().unwrap();
    let reply = seen["reply"].as_str().unwrap();
    assert_eq!(seen["follow"], true);
    assert_eq!(posted["acct"], "bob");
    assert_eq!(posted["visibility"], "public");
    assert_eq!(posted["tags"], json!(["rust"]));
    assert_eq!(posted["mentions"], json!(["alice"]));
    let content = posted["content"].as_str().unwrap();
    assert!(
        content.starts_with("<p>hello <span class=\"h-card\""),
        "{content}"
    );
    assert!(
        content.contains("/tags/rust\" class=\"mention hashtag\""),
        "{content}"
    );
    assert!(content.ends_with("&lt;b&gt;&amp;</p>"), "{content}");
    assert_eq!(seen["favourite"], json!({"favourited": true, "count": 1}));
    assert_eq!(seen["reblog"]["of"], sid);
    assert_eq!(seen["reblog"]["by"], "alice");
    assert_eq!(seen["bookmarked"], true);
    assert_eq!(seen["marks"], json!([true, true, true]));
    assert_eq!(seen["bookmarks"], json!([sid]));
    assert_eq!(seen["favourites"], json!([sid]));
    assert_eq!(seen["favourited_by"], json!(["alice"]));
    assert_eq!(seen["reblogged_by"], json!(["alice"]));
    assert_eq!(seen["descendants"], json!([reply]));
    assert_eq!(seen["edited"], json!({"edited_at": true, "history": 2}));
    // Paged one by one, the home timeline is the whole of it, each once.
    let home = seen["home"].as_array().unwrap();
    assert!(home.len() >= 3, "{home:?}");
    assert_eq!(&seen["home_paged"], &seen["home"]);
    assert_eq!(seen["tag"], json!([sid]));
    assert!(!seen["account_no_replies"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x == reply));
    assert!(seen["account_no_replies"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x == sid));
    assert_eq!(seen["rel"], true);
    let notes = seen["notifications"].as_array().unwrap();
    for kind in ["favourite", "reblog", "follow"] {
        assert!(notes.contains(&json!([kind, "alice"])), "{kind}: {notes:?}");
    }
    let grouped = seen["grouped"].as_array().unwrap();
    assert!(grouped.contains(&json!("favourite")), "{grouped:?}");
    assert_eq!(seen["deleted_text"], "@bob @alice a reply");
    // The user stream, in Mastodon's events: the post, the mention of
    // alice (a notification), the reblog, the edit and the delete.
    let events = seen["seen"].as_array().unwrap();
    let has = |want: Value| events.contains(&want);
    assert!(has(json!(["update", sid, null])), "{events:?}");
    assert!(has(json!(["notification", "mention", "bob"])), "{events:?}");
    assert!(
        events.iter().any(|e| e[0] == "update" && e[2] == sid),
        "the reblog: {events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e[0] == "status.update" && e[1] == sid),
        "{events:?}"
    );
    assert!(has(json!(["delete", reply])), "{events:?}");
}

#[tokio::test]
async fn masto_js_signs_in_posts_and_streams_over_a_websocket() {
    let (app, base) = TestApp::with_mastodon().await;
    app.user("alice").await;
    app.user("bob").await;
    let dir = common::node_modules("masto-js", "masto@6.10.4");
    let script = r#"
import { createRestAPIClient, createStreamingAPIClient, createOAuthAPIClient } from "masto";
const base = process.argv[1];
const anon = createRestAPIClient({ url: base });
const app = await anon.v1.apps.create({ clientName: "masto test", redirectUris: "urn:ietf:wg:oauth:2.0:oob", scopes: "read write follow" });
const oauth = createOAuthAPIClient({ url: base });
const token = async (username) => (await oauth.token.create({ grantType: "password", clientId: app.clientId,
    clientSecret: app.clientSecret, redirectUri: "urn:ietf:wg:oauth:2.0:oob", username, password: "password123", scope: "read write follow" })).accessToken;
const [ta, tb] = [await token("alice"), await token("bob")];
const a = createRestAPIClient({ url: base, accessToken: ta });
const b = createRestAPIClient({ url: base, accessToken: tb });
const out = {};
const bob = await a.v1.accounts.lookup({ acct: "bob" });
out.follow = (await a.v1.accounts.$select(bob.id).follow()).following;
const instance = await a.v2.instance.fetch();
const streaming = createStreamingAPIClient({ streamingApiUrl: instance.configuration.urls.streaming, accessToken: ta });
const seen = [];
const watch = async (sub, name) => { for await (const e of sub) seen.push([name, e.event, e.event === "delete" ? e.payload : e.payload.id]); };
watch(streaming.hashtag.subscribe({ tag: "masto" }), "hashtag");
watch(streaming.user.subscribe(), "user");
// Both streams are live once a status posted now reaches both.
for (let i = 0; i < 50; i++) {
  const probe = await b.v1.statuses.create({ status: "probe #masto" });
  await new Promise((r) => setTimeout(r, 200));
  if (seen.filter((e) => e[2] === probe.id).length === 2) break;
}
const once = { requestInit: { headers: { "Idempotency-Key": "k1" } } };
const s = await b.v1.statuses.create({ status: "from masto #masto" }, once);
out.posted = { id: s.id, acct: s.account.acct, tags: s.tags.map((t) => t.name) };
out.retried = (await b.v1.statuses.create({ status: "from masto #masto" }, once)).id;
await a.v1.statuses.$select(s.id).favourite();
const pages = [];
for await (const page of a.v1.timelines.home.list({ limit: 2 })) { if (page.length === 0) break; pages.push(page.map((x) => x.id)); }
out.pages = pages;
out.home = (await a.v1.timelines.home.list({ limit: 40 })).map((x) => x.id);
await new Promise((r) => setTimeout(r, 500));
out.notifications = (await b.v1.notifications.list()).map((n) => [n.type, n.account.acct]);
await b.v1.statuses.$select(s.id).remove();
for (let i = 0; i < 50 && !seen.some((e) => e[1] === "delete"); i++) await new Promise((r) => setTimeout(r, 100));
out.seen = seen.filter((e) => e[2] === s.id);
streaming.close();
console.log(JSON.stringify(out));
process.exit(0);
"#;
    let seen =
        common::run_client("node", &dir, &["--input-type=module", "-e", script, &base]).await;
    let sid = seen["posted"]["id"].as_str().unwrap();
    assert_eq!(seen["follow"], true);
    assert_eq!(seen["posted"]["acct"], "bob");
    assert_eq!(seen["posted"]["tags"], json!(["masto"]));
    assert_eq!(
        seen["retried"], sid,
        "a retry with its Idempotency-Key posts once"
    );
    let pages = seen["pages"].as_array().unwrap();
    assert!(pages.len() >= 2 && pages.iter().all(|p| p.as_array().unwrap().len() <= 2));
    let paged: Vec<Value> = pages
        .iter()
        .flat_map(|p| p.as_array().unwrap().clone())
        .collect();
    assert_eq!(
        Value::Array(paged),
        seen["home"],
        "masto's paging walks the whole home once"
    );
    assert!(seen["notifications"]
        .as_array()
        .unwrap()
        .contains(&json!(["favourite", "alice"])));
    let events = seen["seen"].as_array().unwrap();
    for want in [
        json!(["hashtag", "update", sid]),
        json!(["user", "update", sid]),
        json!(["hashtag", "delete", sid]),
        json!(["user", "delete", sid]),
    ] {
        assert!(events.contains(&want), "{want}: {events:?}");
    }
}

/// A Mastodon call's status, `Link` header and JSON.
async fn mastodon_call(req: reqwest::RequestBuilder) -> (StatusCode, String, Value) {
    let r = req.send().await.expect("answered");
    let status = r.status();
    let link = r
        .headers()
        .get("link")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, link, r.json().await.unwrap_or(Value::Null))
}

/// The URL a `Link` header names for `rel`.
fn link_of(link: &str, rel: &str) -> Option<String> {
    link.split(", ").find_map(|part| {
        let (url, r) = part.split_once("; ")?;
        (r == format!("rel=\"{rel}\"")).then(|| url.trim_matches(['<', '>']).to_string())
    })
}

#[tokio::test]
async fn mastodon_pages_both_ways_and_resumes_its_streams_with_no_gap() {
    let (app, base) = TestApp::with_mastodon().await;
    let (_, token) = app.user("alice").await;
    let http = reqwest::Client::new();
    let mut posted = Vec::new();
    for i in 0..7 {
        posted.push(app.say(&token, &format!("status {i} #paged")).await);
    }
    let newest_first: Vec<String> = posted.iter().rev().cloned().collect();
    // Down the timeline by `next`, three at a time.
    let mut url = format!("{base}/api/v1/timelines/home?limit=3");
    let mut down = Vec::new();
    loop {
        let (status, link, page) = mastodon_call(http.get(&url).bearer_auth(&token)).await;
        assert_eq!(status, StatusCode::OK);
        let ids = ids(&page);
        if ids.is_empty() {
            break;
        }
        assert!(ids.len() <= 3);
        down.extend(ids);
        url = link_of(&link, "next").expect("a next link while there are statuses");
    }
    assert_eq!(down, newest_first);
    // Up from the oldest by `prev` (min_id): the next newer three each time.
    let oldest = &posted[0];
    let mut url = format!("{base}/api/v1/timelines/tag/paged?limit=3&min_id={oldest}");
    let mut up = Vec::new();
    for _ in 0..5 {
        let (_, link, page) = mastodon_call(http.get(&url).bearer_auth(&token)).await;
        let ids = ids(&page);
        if ids.is_empty() {
            break;
        }
        up.extend(ids.into_iter().rev());
        url = link_of(&link, "prev").expect("a prev link");
    }
    assert_eq!(up, posted[1..].to_vec(), "min_id pages climb in order");
    // since_id: the newest above it, max_id: below it (exclusive).
    let (_, _, page) = mastodon_call(
        http.get(format!(
            "{base}/api/v1/timelines/home?since_id={}&limit=2",
            posted[3]
        ))
        .bearer_auth(&token),
    )
    .await;
    assert_eq!(ids(&page), vec![posted[6].clone(), posted[5].clone()]);
    let (_, _, page) = mastodon_call(
        http.get(format!(
            "{base}/api/v1/timelines/home?max_id={}&limit=2",
            posted[3]
        ))
        .bearer_auth(&token),
    )
    .await;
    assert_eq!(ids(&page), vec![posted[2].clone(), posted[1].clone()]);
    let (status, _, body) = mastodon_call(
        http.get(format!("{base}/api/v1/timelines/home?max_id=x"))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].is_string());

    // A hashtag stream over SSE: each message with our id; a reconnect with
    // Last-Event-ID gets what it missed, each once, in order.
    let mut s = mastodon_stream(
        &app,
        &base,
        "/api/v1/streaming/hashtag?tag=resume",
        &token,
        &[],
    )
    .await;
    let first = loop {
        let sid = app.say(&token, "first #resume").await;
        if let Some(m) = s.next_within(Duration::from_millis(500)).await {
            assert_eq!(m.event, "update");
            assert_eq!(m.data["id"], sid.as_str());
            break m;
        }
    };
    let at = first.id.clone().expect("an id on every message");
    drop(s);
    let mut missed = Vec::new();
    for i in 0..5 {
        missed.push(app.say(&token, &format!("missed {i} #resume")).await);
    }
    let mut s = mastodon_stream(
        &app,
        &base,
        "/api/v1/streaming/hashtag?tag=resume",
        &token,
        &[("Last-Event-ID", &at)],
    )
    .await;
    let mut got = Vec::new();
    while got.len() < missed.len() {
        let m = s.next("a missed status").await;
        assert_eq!(m.event, "update");
        assert!(m.id.is_some());
        got.push(m.data["id"].as_str().unwrap().to_string());
    }
    assert_eq!(got, missed);
    let live = app.say(&token, "live #resume").await;
    assert_eq!(s.next("live").await.data["id"], live.as_str());
}

#[tokio::test]
async fn mastodon_paths_and_streams_show_only_what_the_reader_may_see() {
    let (app, base) = TestApp::with_mastodon().await;
    let (carol_id, carol) = app.user("carol").await;
    let (dave_id, dave) = app.user("dave").await;
    let (erin_id, erin) = app.user("erin").await;
    let http = reqwest::Client::new();
    let (status, _) = app
        .call(
            reqwest::Method::PATCH,
            "/api/v1/me",
            Some(&carol),
            Some(json!({"private": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    // Dave's hashtag stream is live once erin's public status reaches it.
    let mut s = mastodon_stream(
        &app,
        &base,
        "/api/v1/streaming/hashtag?tag=secret",
        &dave,
        &[],
    )
    .await;
    let opened_at = loop {
        let sid = app.say(&erin, "open #secret").await;
        if let Some(m) = s.next_within(Duration::from_millis(500)).await {
            assert_eq!(m.data["id"], sid.as_str());
            break m.id.unwrap();
        }
    };
    let private = app.say(&carol, "private #secret").await;
    let public = app.say(&erin, "public #secret").await;
    let m = s.next("erin's status").await;
    assert_eq!(
        m.data["id"],
        public.as_str(),
        "carol's private status never came"
    );
    // A stranger reads none of it by any path.
    let get = |path: String, token: &str| {
        http.get(format!("{base}{path}"))
            .bearer_auth(token.to_string())
    };
    let (status, _, body) = mastodon_call(get(format!("/api/v1/statuses/{private}"), &dave)).await;
    assert_eq!(
        (status, &body["error"]),
        (StatusCode::NOT_FOUND, &json!("Record not found"))
    );
    let (_, _, tag) = mastodon_call(get("/api/v1/timelines/tag/secret".into(), &dave)).await;
    assert!(!ids(&tag).contains(&private));
    let (_, _, public_tl) = mastodon_call(get("/api/v1/timelines/public".into(), &dave)).await;
    assert!(ids(&public_tl).contains(&public) && !ids(&public_tl).contains(&private));
    let (status, _, page) =
        mastodon_call(get(format!("/api/v1/accounts/{carol_id}/statuses"), &dave)).await;
    assert_eq!(
        (status, page),
        (StatusCode::OK, json!([])),
        "a locked account's, to a stranger"
    );
    let (status, _, _) = mastodon_call(
        http.post(format!("{base}/api/v1/statuses/{private}/favourite"))
            .bearer_auth(&dave),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = mastodon_call(
        http.post(format!("{base}/api/v1/statuses/{private}/reblog"))
            .bearer_auth(&carol),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "a private status cannot be reblogged"
    );
    // Erin blocks dave: her statuses leave dave's reads, and the block
    // shows in the relationship from both sides.
    let (status, _, rel) = mastodon_call(
        http.post(format!("{base}/api/v1/accounts/{dave_id}/block"))
            .bearer_auth(&erin),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(rel["blocking"], true);
    let (_, _, rels) = mastodon_call(get(
        format!("/api/v1/accounts/relationships?id[]={erin_id}"),
        &dave,
    ))
    .await;
    assert_eq!(rels[0]["blocked_by"], true);
    let (status, _, _) = mastodon_call(get(format!("/api/v1/statuses/{public}"), &dave)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let after = app.say(&erin, "after the block #secret").await;
    s.assert_quiet(Duration::from_millis(700)).await;
    let (_, _, tag) = mastodon_call(get("/api/v1/timelines/tag/secret".into(), &dave)).await;
    assert!(!ids(&tag).contains(&after) && !ids(&tag).contains(&public));
    let (_, _, public_tl) = mastodon_call(get("/api/v1/timelines/public".into(), &dave)).await;
    assert!(!ids(&public_tl).contains(&after) && !ids(&public_tl).contains(&public));
    // A replay judges as the reader stands now: nothing of erin's (her
    // statuses after `opened_at` were public when posted), nor carol's.
    let mut replay = mastodon_stream(
        &app,
        &base,
        &format!("/api/v1/streaming/hashtag?tag=secret&last_event_id={opened_at}"),
        &dave,
        &[],
    )
    .await;
    let mine = app.say(&dave, "mine #secret").await;
    let m = replay.next("dave's own status, live").await;
    assert_eq!(m.data["id"], mine.as_str(), "nothing replayed before it");
}

#[tokio::test]
async fn mastodon_refuses_what_this_server_lacks_clearly() {
    let (app, base) = TestApp::with_mastodon().await;
    let (_, token) = app.user("alice").await;
    let http = reqwest::Client::new();
    let post = |form: &'static [(&'static str, &'static str)]| {
        http.post(format!("{base}/api/v1/statuses"))
            .bearer_auth(&token)
            .form(form)
    };
    for (form, words) in [
        (&[("status", "x"), ("media_ids[]", "1")][..], "Media"),
        (
            &[
                ("status", "x"),
                ("poll[options][]", "a"),
                ("poll[expires_in]", "60"),
            ][..],
            "Polls",
        ),
        // A direct status is a message to the users it mentions: none here.
        (&[("status", "x"), ("visibility", "direct")][..], "mention"),
        (
            &[("status", "x"), ("visibility", "unlisted")][..],
            "visibility",
        ),
        // A public account's status cannot be followers-only here.
        (
            &[("status", "x"), ("visibility", "private")][..],
            "Visibility",
        ),
        (
            &[("status", "x"), ("spoiler_text", "cw")][..],
            "spoiler_text",
        ),
        (&[("status", "")][..], ""),
    ] {
        let (status, _, body) = mastodon_call(post(form)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{form:?}: {body}");
        assert!(body["error"].as_str().unwrap().contains(words), "{body}");
    }
    // Nothing was posted by any of them.
    assert!(app
        .timeline_ids("/api/v1/timelines/home", Some(&token))
        .await
        .is_empty());
    let (status, _, _) = mastodon_call(post(&[("status", "ok"), ("visibility", "public")])).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, body) = mastodon_call(
        http.get(format!("{base}/api/v1/streaming/public/remote"))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, _, _) = mastodon_call(http.get(format!("{base}/api/v1/streaming/user"))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, _) = mastodon_call(
        http.get(format!("{base}/api/v1/streaming/hashtag"))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "a hashtag stream needs its tag"
    );
    let health = http
        .get(format!("{base}/api/v1/streaming/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.text().await.unwrap(), "OK");
}
