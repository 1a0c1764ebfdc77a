//! The Mastodon API's lists, markers, search, trends, preferences and
//! notifications dismissed and cleared, driven by Mastodon.py (unchanged,
//! from PyPI).

use super::*;

#[tokio::test]
async fn mastodon_py_keeps_lists_markers_and_finds_things() {
    let port = common::free_port();
    let app = TestApp::start_with(|c| {
        c.mastodon_listen = Some(format!("127.0.0.1:{port}").parse().unwrap());
    })
    .await;
    let base = format!("http://127.0.0.1:{port}");
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
    let out = tokio::process::Command::new(&python)
        .args(["-u", "-c", script, &base])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(stdout.trim().lines().last().unwrap()).unwrap();
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
