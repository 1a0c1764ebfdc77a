//! The Mastodon API's lists, markers, search, trends, preferences and
//! notifications dismissed and cleared, driven by Mastodon.py (unchanged,
//! from PyPI).

use super::*;

#[tokio::test]
async fn mastodon_py_keeps_lists_markers_and_finds_things() {
    let (app, base) = TestApp::with_mastodon().await;
    app.user("alice").await;
    let (bob_id, _) = app.user("bob").await;
    app.user("carol").await;
    let python = common::python_venv("mastodon-py", "Mastodon.py");
    let script = r##"
import json, sys, time
from mastodon import Mastodon
base = sys.argv[1]
cid, sec = Mastodon.create_app("misc", api_base_url=base, scopes=["read", "write", "follow"])
def login(u):
    m = Mastodon(client_id=cid, client_secret=sec, api_base_url=base)
    m.log_in(u, "password123", scopes=["read", "write", "follow"], allow_http=True)
    return m
a, b, c = login("alice"), login("bob"), login("carol")
bob = a.account_lookup("bob")
out = {}
# Lists: made, renamed, members added, read, removed, deleted.
l = a.list_create("friends")
a.list_update(l["id"], "close friends")
a.list_accounts_add(l["id"], [bob["id"]])
out["lists"] = [x["title"] for x in a.lists()]
out["members"] = [str(x["id"]) for x in a.list_accounts(l["id"])]
s = b.status_post("in the list #trendy")
for _ in range(20):
    tl = [str(x["id"]) for x in a.timeline_list(l["id"])]
    if tl:
        break
    time.sleep(0.1)
out["list_timeline"] = tl
a.list_accounts_delete(l["id"], [bob["id"]])
out["members_after"] = [str(x["id"]) for x in a.list_accounts(l["id"])]
a.list_delete(l["id"])
out["lists_after"] = [x["title"] for x in a.lists()]
# Markers: home kept, notifications is the read marker.
a.markers_set(["home"], [s["id"]])
mk = a.markers_get(["home"])
out["home_marker"] = str(mk["home"]["last_read_id"])
# Search: an account by login, a hashtag, statuses by a phrase.
r = a.search_v2("bob")
out["search_accounts"] = [x["acct"] for x in r["accounts"]]
out["search_tags"] = [x["name"] for x in a.search_v2("#trendy")["hashtags"]]
out["search_statuses"] = [str(x["id"]) for x in a.search_v2("in the list", result_type="statuses")["statuses"]]
out["trends"] = [t["name"] for t in a.trending_tags()]
out["public"] = [str(x["id"]) for x in a.timeline_public()]
out["local"] = [str(x["id"]) for x in a.timeline_local()]
out["remote"] = [str(x["id"]) for x in a.timeline_public(remote=True)]
out["preferences"] = a.preferences()["posting:default:visibility"]
out["emojis"] = a.custom_emojis()
# Notifications: carol and alice follow bob; one dismissed, then all cleared.
a.account_follow(bob["id"])
c.account_follow(bob["id"])
for _ in range(30):
    ns = b.notifications()
    if len(ns) >= 2:
        break
    time.sleep(0.1)
out["before"] = len(ns)
b.notifications_dismiss(ns[0]["id"])
out["after_dismiss"] = len(b.notifications())
b.notifications_clear()
out["after_clear"] = len(b.notifications())
print(json.dumps(out))
"##;
    let here = std::env::temp_dir();
    let python = python.to_str().unwrap();
    let seen = common::run_client(python, &here, &["-u", "-c", script, &base]).await;
    assert_eq!(seen["lists"], json!(["close friends"]));
    assert_eq!(seen["members"], json!([bob_id]));
    assert_eq!(seen["list_timeline"].as_array().unwrap().len(), 1);
    assert_eq!(seen["members_after"], json!([]));
    assert_eq!(seen["lists_after"], json!([]));
    assert_eq!(seen["home_marker"], seen["list_timeline"][0]);
    assert_eq!(seen["search_accounts"], json!(["bob"]));
    assert_eq!(seen["search_tags"], json!(["trendy"]));
    assert_eq!(seen["search_statuses"], seen["list_timeline"]);
    assert_eq!(seen["trends"], json!(["trendy"]));
    // The public timeline: the one public status there is, here and local.
    assert_eq!(seen["public"], seen["list_timeline"]);
    assert_eq!(seen["local"], seen["list_timeline"]);
    assert_eq!(seen["remote"], json!([]));
    assert_eq!(seen["preferences"], "public");
    assert_eq!(seen["emojis"], json!([]));
    assert_eq!(seen["before"], 2);
    assert_eq!(seen["after_dismiss"], 1);
    assert_eq!(seen["after_clear"], 0);
}

#[tokio::test]
async fn mastodon_py_sends_direct_statuses_and_streams_conversations() {
    let (app, base) = TestApp::with_mastodon().await;
    let (alice_id, _) = app.user("alice").await;
    app.user("bob").await;
    let (_, carol) = app.user("carol").await;
    let python = common::python_venv("mastodon-py", "Mastodon.py");
    let script = r##"
import json, sys, time
from mastodon import Mastodon, StreamListener
base = sys.argv[1]
cid, sec = Mastodon.create_app("dm", api_base_url=base, scopes=["read", "write"])
def login(u):
    m = Mastodon(client_id=cid, client_secret=sec, api_base_url=base)
    m.log_in(u, "password123", scopes=["read", "write"], allow_http=True)
    return m
a, b = login("alice"), login("bob")
out = {}
seen = []
class Seen(StreamListener):
    def on_conversation(self, c): seen.append([str(c["id"]), [x["acct"] for x in c["accounts"]], c["last_status"]["content"]])
handle = b.stream_direct(Seen(), run_async=True)
time.sleep(1)
s = a.status_post("@bob a secret", visibility="direct")
out["posted"] = {"id": str(s["id"]), "visibility": s["visibility"], "mentions": [m["acct"] for m in s["mentions"]]}
cs = b.conversations()
out["conversations"] = [[[x["acct"] for x in c["accounts"]], c["unread"], c["last_status"]["visibility"]] for c in cs]
out["read"] = b.conversations_read(cs[0]["id"])["unread"]
for i in range(30):
    a.status_post("@bob again %d" % i, visibility="direct")
    time.sleep(0.3)
    if seen:
        break
handle.close()
out["seen"] = seen[:1]
out["conversation_id"] = str(cs[0]["id"])
# Replies answer their conversation: a group's, the pair's; a stranger's
# reply to a message not theirs is refused.
c = login("carol")
g = a.status_post("@bob @carol a group", visibility="direct")
r = b.status_post("@alice @carol an answer", visibility="direct", in_reply_to_id=g["id"])
p = b.status_post("@alice back to you", visibility="direct", in_reply_to_id=s["id"])
out["replies"] = [r["visibility"], p["visibility"]]
out["carol"] = [[sorted(x["acct"] for x in k["accounts"]), k["last_status"]["content"]] for k in c.conversations()]
out["alice"] = sorted(len(k["accounts"]) for k in a.conversations())
# A message reads as a direct status, with its conversation as context,
# for its conversation's members only.
out["read_message"] = b.status(s["id"])["visibility"]
ctx = b.status_context(p["id"])
out["context"] = [str(ctx["ancestors"][0]["id"]) == str(s["id"]), str(ctx["ancestors"][-1]["id"]) != str(p["id"]), len(ctx["descendants"])]
out["context_of_first"] = [len(b.status_context(s["id"])["ancestors"]), str(b.status_context(s["id"])["descendants"][-1]["id"]) == str(p["id"])]
try:
    c.status(s["id"])
    out["stranger_read"] = "read"
except Exception as e:
    out["stranger_read"] = e.args[1] if len(e.args) > 1 else str(e)
try:
    c.status_post("@alice sneaking in", visibility="direct", in_reply_to_id=s["id"])
    out["stranger"] = "posted"
except Exception as e:
    out["stranger"] = e.args[1] if len(e.args) > 1 else str(e)
print(json.dumps(out))
"##;
    let here = std::env::temp_dir();
    let python = python.to_str().unwrap();
    let seen = common::run_client(python, &here, &["-u", "-c", script, &base]).await;
    assert_eq!(seen["posted"]["visibility"], "direct");
    assert_eq!(seen["posted"]["mentions"], json!(["bob"]));
    assert_eq!(seen["conversations"], json!([[["alice"], true, "direct"]]));
    assert_eq!(seen["read"], false);
    let conv = seen["conversation_id"].as_str().unwrap();
    let got = &seen["seen"][0];
    assert_eq!(got[0], conv, "the direct stream's conversation: {seen}");
    assert_eq!(got[1], json!(["alice"]));
    let text = got[2].as_str().unwrap();
    assert!(text.contains("a secret") || text.contains("again"), "{got}");
    // A message is no status, and no one outside the conversation sees it.
    let msg = seen["posted"]["id"].as_str().unwrap();
    let http = reqwest::Client::new();
    let r = http
        .get(format!("{base}/api/v1/statuses/{msg}"))
        .bearer_auth(&carol)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let theirs: Value = http
        .get(format!("{base}/api/v1/conversations"))
        .bearer_auth(&carol)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let theirs: Vec<&str> = theirs
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert!(
        !theirs.contains(&conv),
        "carol is not in the pair's: {theirs:?}"
    );
    assert_eq!(theirs.len(), 1, "only the group's: {theirs:?}");
    assert_eq!(seen["replies"], json!(["direct", "direct"]));
    let carols = seen["carol"].as_array().unwrap();
    assert_eq!(carols.len(), 1, "the group's one conversation: {seen}");
    assert_eq!(carols[0][0], json!(["alice", "bob"]));
    assert!(
        carols[0][1].as_str().unwrap().contains("an answer"),
        "{seen}"
    );
    assert_eq!(seen["alice"], json!([1, 2]), "the pair's and the group's");
    assert_eq!(seen["stranger"], 422);
    assert_eq!(seen["read_message"], "direct");
    assert_eq!(seen["context"], json!([true, true, 0]), "{seen}");
    assert_eq!(seen["context_of_first"], json!([0, true]), "{seen}");
    assert_eq!(seen["stranger_read"], 404);
    let _ = alice_id;
}

#[tokio::test]
async fn the_public_timeline_pages_by_status_ids_as_mastodon_does() {
    let (app, base) = TestApp::with_mastodon().await;
    let (_, token) = app.user("pager").await;
    let mut ids = Vec::new();
    for i in 0..12 {
        ids.push(app.say(&token, &format!("public {i}")).await);
    }
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    let http = reqwest::Client::new();
    let get = |query: String| {
        let http = http.clone();
        let (base, token) = (base.clone(), token.clone());
        async move {
            let r = http
                .get(format!("{base}/api/v1/timelines/public?{query}"))
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::OK, "{query}");
            let link = r
                .headers()
                .get("link")
                .map(|l| l.to_str().unwrap().to_string())
                .unwrap_or_default();
            let page: Value = r.json().await.unwrap();
            let got: Vec<String> = page
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["id"].as_str().unwrap().to_string())
                .collect();
            (got, link)
        }
    };
    let (first, link) = get("limit=5".into()).await;
    assert_eq!(first, newest_first[..5]);
    assert!(
        link.contains(&format!("max_id={}", newest_first[4])),
        "{link}"
    );
    let (second, _) = get(format!("limit=5&max_id={}", newest_first[4])).await;
    assert_eq!(second, newest_first[5..10], "max_id is exclusive");
    // min_id: the statuses just above it; since_id: the newest above it.
    let (just_above, _) = get(format!("limit=3&min_id={}", ids[1])).await;
    assert_eq!(just_above, [ids[4].clone(), ids[3].clone(), ids[2].clone()]);
    let (newest_above, _) = get(format!("limit=3&since_id={}", ids[1])).await;
    assert_eq!(newest_above, newest_first[..3]);
    let (between, _) = get(format!("max_id={}&since_id={}", ids[9], ids[6])).await;
    assert_eq!(between, [ids[8].clone(), ids[7].clone()]);
    // Paging back up by the `prev` link's min_id reaches the newest.
    let (back, _) = get(format!("limit=5&min_id={}", newest_first[5])).await;
    assert_eq!(back, newest_first[..5]);
}

#[tokio::test]
async fn reblogged_by_lists_the_newest_repost_first_and_pages_by_link() {
    let (app, base) = TestApp::with_mastodon().await;
    let (_, author) = app.user("reposted").await;
    let sid = app.say(&author, "repost me").await;
    let mut fans = Vec::new();
    for i in 0..5 {
        let (_, token) = app.user(&format!("fan{i}")).await;
        app.repost(&token, &sid).await;
        fans.push(format!("fan{i}"));
    }
    let newest_first: Vec<String> = fans.iter().rev().cloned().collect();
    let http = reqwest::Client::new();
    let get = |query: &str| {
        http.get(format!("{base}/api/v1/statuses/{sid}/reblogged_by?{query}"))
            .bearer_auth(&author)
            .send()
    };
    let accts = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|a| a["acct"].as_str().unwrap().to_string())
            .collect()
    };
    let r = get("").await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(accts(&r.json().await.unwrap()), newest_first);
    // Two at a time, following the `next` link to the end.
    let mut seen = Vec::new();
    let mut url = format!("{base}/api/v1/statuses/{sid}/reblogged_by?limit=2");
    for _ in 0..5 {
        let r = http.get(&url).bearer_auth(&author).send().await.unwrap();
        let link = r
            .headers()
            .get("link")
            .map(|l| l.to_str().unwrap().to_string());
        let page: Value = r.json().await.unwrap();
        if page == json!([]) {
            break;
        }
        seen.extend(accts(&page));
        let link = link.expect("a Link on a page with accounts");
        url = link
            .split(", ")
            .find(|l| l.ends_with("rel=\"next\""))
            .and_then(|l| l.split(['<', '>']).nth(1))
            .unwrap()
            .to_string();
    }
    assert_eq!(seen, newest_first);
    let r = get("max_id=abc").await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
}
