//! The Mastodon-compatible API, driven by a real Mastodon client library
//! that no one here wrote (Mastodon.py, from PyPI, unchanged), and by raw
//! requests for the shapes it does not check.

use super::*;

/// Sends `req`: its status and its JSON (`Null` when it is none).
async fn answer(req: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let r = req.send().await.expect("the request is answered");
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

// Prints what the client saw.
#[allow(clippy::print_stdout)]
#[tokio::test]
async fn mastodon_py_signs_in_reads_accounts_and_revokes_its_token() {
    let (app, base) = TestApp::with_mastodon().await;
    let (alice_id, _) = app.user("alice").await;
    let (bob_id, _) = app.user("bob").await;
    let python = common::python_venv("mastodon-py", "Mastodon.py");
    let script = r#"
import json, sys
from mastodon import Mastodon, MastodonUnauthorizedError
base, password = sys.argv[1], sys.argv[2]
client_id, client_secret = Mastodon.create_app("firehose test", api_base_url=base, scopes=["read", "write"])
m = Mastodon(client_id=client_id, client_secret=client_secret, api_base_url=base)
# The listener speaks plain HTTP here: Mastodon.py takes OAuth over http only
# when told (behind a TLS proxy that sets X-Forwarded-Proto, the server's
# OAuth metadata says https).
token = m.log_in("alice", password, scopes=["read", "write"], allow_http=True)
me = m.account_verify_credentials()
bob = m.account_lookup("bob")
again = m.account(bob["id"])
instance = m.instance()
out = {
    "me": {"id": str(me["id"]), "username": me["username"], "acct": me["acct"], "privacy": me["source"]["privacy"]},
    "bob": {"id": str(bob["id"]), "acct": bob["acct"], "same": str(again["id"]) == str(bob["id"])},
    "version": instance["version"],
}
try:
    Mastodon(client_id=client_id, client_secret=client_secret, api_base_url=base).log_in("alice", "wrong password", scopes=["read"], allow_http=True)
    out["wrong_password"] = "accepted"
except Exception as e:
    out["wrong_password"] = type(e).__name__
m.revoke_access_token(allow_http=True)
try:
    Mastodon(access_token=token, api_base_url=base).account_verify_credentials()
    out["after_revoke"] = "still works"
except MastodonUnauthorizedError:
    out["after_revoke"] = "unauthorized"
print(json.dumps(out))
"#;
    let out = tokio::process::Command::new(&python)
        .arg("-c")
        .arg(script)
        .arg(&base)
        .arg("password123")
        .output()
        .await
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "Mastodon.py failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(stdout.trim()).expect("the script's JSON");
    println!("Mastodon.py saw: {seen}");
    assert_eq!(seen["me"]["id"], alice_id.as_str());
    assert_eq!(seen["me"]["username"], "alice");
    assert_eq!(seen["me"]["acct"], "alice");
    assert_eq!(seen["me"]["privacy"], "public");
    assert_eq!(seen["bob"]["id"], bob_id.as_str());
    assert_eq!(seen["bob"]["same"], true);
    assert!(seen["version"].as_str().unwrap().starts_with("4.3.0"));
    assert_ne!(seen["wrong_password"], "accepted");
    assert_eq!(seen["after_revoke"], "unauthorized");
}

#[tokio::test]
async fn mastodon_shapes_and_errors_are_mastodons() {
    let (app, base) = TestApp::with_mastodon().await;
    let (alice_id, _) = app.user("alice").await;
    let http = reqwest::Client::new();
    // An application, then a token by password (a form, as most clients send).
    let created: Value = answer(http.post(format!("{base}/api/v1/apps")).form(&[
        ("client_name", "raw"),
        ("redirect_uris", "urn:ietf:wg:oauth:2.0:oob"),
        ("scopes", "read write"),
    ]))
    .await
    .1;
    let (cid, secret) = (
        created["client_id"].as_str().unwrap().to_string(),
        created["client_secret"].as_str().unwrap().to_string(),
    );
    assert_eq!(created["scopes"], json!(["read", "write"]));
    // A secret is not a session's token, nor another app's secret.
    let (status, body) = answer(
        http.get(format!("{base}/api/v1/accounts/verify_credentials"))
            .bearer_auth(&secret),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body["error"].is_string(), "{body}");
    let token = |client_id: String, client_secret: String, password: &'static str| {
        http.post(format!("{base}/oauth/token")).json(&json!({
            "grant_type": "password", "client_id": client_id, "client_secret": client_secret,
            "username": "alice", "password": password, "scope": "read write",
        }))
    };
    let (status, body) = answer(token("0".repeat(32), secret.clone(), "password123")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"], "invalid_client");
    let (status, body) = answer(token(cid.clone(), secret.clone(), "not the password")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"], "invalid_grant");
    let granted: Value = answer(token(cid, secret, "password123")).await.1;
    assert_eq!(granted["token_type"], "Bearer");
    let access = granted["access_token"].as_str().unwrap();
    // The account in Mastodon's shape.
    let me: Value = answer(
        http.get(format!("{base}/api/v1/accounts/{alice_id}"))
            .bearer_auth(access),
    )
    .await
    .1;
    assert_eq!(me["id"], alice_id.as_str());
    assert_eq!(me["acct"], "alice");
    let created_at = me["created_at"].as_str().unwrap();
    assert!(
        created_at.ends_with("T00:00:00.000Z") && created_at.len() == 24,
        "{created_at}"
    );
    for field in ["followers_count", "following_count", "statuses_count"] {
        assert!(me[field].is_u64(), "{field}: {me}");
    }
    assert_eq!(me["emojis"], json!([]));
    // What is not here answers as Mastodon does, never 5xx.
    let (status, body) = answer(
        http.get(format!("{base}/api/v1/accounts/99999999999"))
            .bearer_auth(access),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"], "Record not found");
    let (status, _) = answer(
        http.post(format!("{base}/api/v1/media"))
            .bearer_auth(access),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) = answer(http.get(format!("{base}/api/v1/nothing/here"))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = answer(
        http.post(format!("{base}/oauth/token"))
            .body("grant_type=password&client_id=%ZZ")
            .header("content-type", "application/x-www-form-urlencoded"),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "a garbled form: no client"
    );
    let v2: Value = answer(http.get(format!("{base}/api/v2/instance"))).await.1;
    assert_eq!(v2["configuration"]["statuses"]["max_characters"], 280);
    assert!(v2["configuration"]["urls"]["streaming"].is_string());
}

#[tokio::test]
async fn schemathesis_finds_nothing_against_the_mastodon_document() {
    let st = common::schemathesis();
    let workdir = std::env::temp_dir().join(format!(
        "firehose-schemathesis-mastodon-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&workdir).unwrap();
    // Refusals no schema can express: the target being the caller (block,
    // mute yourself), what this server lacks asked for by a schema-valid
    // request (media; a visibility other than the account's), a cap reached
    // (100 lists), an OAuth client or grant that is not one (400 as OAuth
    // answers), a member the caller may not add (404 after the list was
    // made). Every other check stays on for them.
    std::fs::write(
        workdir.join("schemathesis.toml"),
        r#"
checks.enabled = true

[[operations]]
include-operation-id = ["post__api_v1_accounts__id__block", "post__api_v1_accounts__id__mute", "post__api_v1_accounts__id__unblock", "post__api_v1_accounts__id__unmute", "post__api_v1_media", "post__api_v2_media", "post__api_v1_statuses", "put__api_v1_statuses__id_", "post__api_v1_lists"]
checks.positive_data_acceptance.expected-statuses = ["2xx", 401, 403, 404, 409, 422, 429]

[[operations]]
include-operation-id = ["get__oauth_authorize", "post__oauth_authorize", "post__oauth_token"]
checks.positive_data_acceptance.expected-statuses = ["2xx", 302, 400, 401, 403, 404, 409, 429]

[[operations]]
include-operation-id = ["post__api_v1_lists__id__accounts"]
checks.ensure_resource_availability.enabled = false
"#,
    )
    .unwrap();
    let (app, base) = TestApp::with_mastodon().await;
    let (_, token) = app.user("fuzzer").await;
    app.say(&token, "something to read #fuzz").await;
    // Streams are excluded (they never end).
    let out = tokio::process::Command::new(st)
        .args([
            "run",
            &format!("{base}/openapi.json"),
            "--exclude-path-regex",
            "/api/v1/streaming",
            "--max-examples",
            "20",
            "--seed",
            "20261206",
            "-H",
            &format!("Authorization: Bearer {token}"),
        ])
        .env("NO_COLOR", "1")
        .current_dir(&workdir)
        .output()
        .await
        .expect("schemathesis runs");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && !report.contains("- ST") && !report.contains("Network Error"),
        "schemathesis found something:\n{report}"
    );
}

#[tokio::test]
async fn account_search_finds_people_the_caller_knows_by_prefix() {
    let (app, base) = TestApp::with_mastodon().await;
    let (ann_id, ann) = app.user("ann_s").await;
    let (bob_id, bob) = app.user("bob_s").await;
    let (bo_id, _) = app.user("boris_s").await;
    let (_, cat) = app.user("cat_s").await;
    let (zed_id, _) = app.user("zed_s").await;
    app.follow(&ann, &bob_id).await;
    app.follow(&ann, &bo_id).await;
    app.follow(&cat, &ann_id).await;
    let (status, _) = app
        .call(
            reqwest::Method::PATCH,
            "/api/v1/me",
            Some(&bob),
            Some(json!({"name": "Robert"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let http = reqwest::Client::new();
    let search = |q: &str, extra: &str| {
        http.get(format!("{base}/api/v1/accounts/search?q={q}{extra}"))
            .bearer_auth(&ann)
    };
    let accts = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|a| a["acct"].as_str().unwrap().to_string())
            .collect()
    };
    // Follows by login, then by display name, a follower, any case.
    let (status, found) = answer(search("Bo", "")).await;
    assert_eq!(status, StatusCode::OK);
    let mut got = accts(&found);
    got.sort();
    assert_eq!(got, ["bob_s", "boris_s"]);
    assert_eq!(accts(&answer(search("rob", "")).await.1), ["bob_s"]);
    assert_eq!(accts(&answer(search("ca", "")).await.1), ["cat_s"]);
    assert_eq!(
        accts(&answer(search("ca", "&following=true")).await.1),
        Vec::<String>::new(),
        "cat follows ann; ann does not follow cat"
    );
    // A stranger only by their whole login.
    assert_eq!(
        accts(&answer(search("ze", "")).await.1),
        Vec::<String>::new()
    );
    let (_, exact) = answer(search("zed_s", "")).await;
    assert_eq!(accts(&exact), ["zed_s"]);
    assert_eq!(exact[0]["id"], zed_id.as_str());
    // Paged by limit and offset.
    let (_, first) = answer(search("bo", "&limit=1")).await;
    let (_, second) = answer(search("bo", "&limit=1&offset=1")).await;
    assert_eq!(first.as_array().unwrap().len(), 1);
    assert_eq!(second.as_array().unwrap().len(), 1);
    assert_ne!(first[0]["id"], second[0]["id"]);
    let (_, past) = answer(search("bo", "&offset=2")).await;
    assert_eq!(past, json!([]));
    // v2 search's accounts are the same.
    let (_, v2) = answer(
        http.get(format!("{base}/api/v2/search?q=rob&type=accounts"))
            .bearer_auth(&ann),
    )
    .await;
    assert_eq!(accts(&v2["accounts"]), ["bob_s"]);
}
