//! The Mastodon API's OAuth sign-in as apps do it: the authorization
//! code from the sign-in page (with PKCE), driven through Mastodon.py
//! (unchanged, from PyPI) and raw; and an application's own token.

use super::*;

/// A client that follows no redirect (the code is in the `Location`).
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The hidden fields of the sign-in form in `html`, and `username` and
/// `password` added, as a browser would submit it.
fn submitted(html: &str, username: &str, password: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for input in html.split("<input type=\"hidden\" ").skip(1) {
        let attr = |name: &str| {
            let start = input.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
            let end = start + input[start..].find('"').unwrap();
            input[start..end]
                .replace("&amp;", "&")
                .replace("&quot;", "\"")
        };
        out.push((attr("name"), attr("value")));
    }
    out.push(("username".into(), username.into()));
    out.push(("password".into(), password.into()));
    out
}

/// A registered application: its client id and secret.
async fn register(base: &str, redirect: &str) -> (String, String) {
    let app: Value = reqwest::Client::new()
        .post(format!("{base}/api/v1/apps"))
        .form(&[
            ("client_name", "Code <App>"),
            ("redirect_uris", redirect),
            ("scopes", "read write"),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    (
        app["client_id"].as_str().unwrap().to_string(),
        app["client_secret"].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn mastodon_py_signs_in_by_the_authorization_page() {
    let (app, base) = TestApp::with_mastodon().await;
    let (alice_id, _) = app.user("alice").await;
    let python = common::python_venv("mastodon-py", "Mastodon.py");
    let (cid, secret) = register(&base, "urn:ietf:wg:oauth:2.0:oob").await;
    // Mastodon.py makes the sign-in URL; the page is read and its form sent
    // as a person at a browser would; the code shown goes back to it.
    let url_script = r#"
import sys
from mastodon import Mastodon
m = Mastodon(client_id=sys.argv[1], client_secret=sys.argv[2], api_base_url=sys.argv[3])
print(m.auth_request_url(redirect_uris="urn:ietf:wg:oauth:2.0:oob", scopes=["read", "write"], state="s1", allow_http=True))
"#;
    let out = tokio::process::Command::new(&python)
        .args(["-c", url_script, &cid, &secret, &base])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(
        url.starts_with(&format!("{base}/oauth/authorize?")),
        "{url}"
    );
    let http = no_redirects();
    let form = http.get(&url).send().await.unwrap();
    assert_eq!(form.status(), StatusCode::OK);
    let html = form.text().await.unwrap();
    assert!(
        html.contains("<b>Code &lt;App&gt;</b>"),
        "the name, escaped: {html}"
    );
    let wrong = http
        .post(format!("{base}/oauth/authorize"))
        .form(&submitted(&html, "alice", "not it"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let shown = http
        .post(format!("{base}/oauth/authorize"))
        .form(&submitted(&html, "alice", "password123"))
        .send()
        .await
        .unwrap();
    assert_eq!(shown.status(), StatusCode::OK);
    let shown = shown.text().await.unwrap();
    let code = shown
        .split("<code id=\"code\">")
        .nth(1)
        .and_then(|r| r.split("</code>").next())
        .expect("the code on the page")
        .to_string();
    let login_script = r#"
import sys, json
from mastodon import Mastodon
m = Mastodon(client_id=sys.argv[1], client_secret=sys.argv[2], api_base_url=sys.argv[3])
m.log_in(code=sys.argv[4], redirect_uri="urn:ietf:wg:oauth:2.0:oob", scopes=["read", "write"], allow_http=True)
me = m.account_verify_credentials()
out = {"id": str(me["id"])}
try:
    Mastodon(client_id=sys.argv[1], client_secret=sys.argv[2], api_base_url=sys.argv[3]).log_in(
        code=sys.argv[4], redirect_uri="urn:ietf:wg:oauth:2.0:oob", scopes=["read", "write"], allow_http=True)
    out["again"] = "accepted"
except Exception as e:
    out["again"] = type(e).__name__
print(json.dumps(out))
"#;
    let out = tokio::process::Command::new(&python)
        .args(["-c", login_script, &cid, &secret, &base, &code])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(seen["id"], alice_id.as_str());
    assert_ne!(seen["again"], "accepted", "a code is redeemed once");
}

#[tokio::test]
async fn an_authorization_code_goes_only_where_registered_and_needs_its_verifier() {
    let (app, base) = TestApp::with_mastodon().await;
    app.user("alice").await;
    let http = no_redirects();
    let redirect = "https://client.example/callback";
    let (cid, secret) = register(&base, redirect).await;
    let verifier = "a-long-enough-verifier-of-at-least-forty-three-characters-0123";
    let challenge = {
        use base64::Engine as _;
        let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref())
    };
    let ask = |uri: &str| {
        let q = serde_urlencoded::to_string([
            ("response_type", "code"),
            ("client_id", cid.as_str()),
            ("redirect_uri", uri),
            ("scope", "read write"),
            ("state", "xyz"),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
        ])
        .unwrap();
        format!("{base}/oauth/authorize?{q}")
    };
    // A URI the application did not register gets no code, only a page.
    let elsewhere = http
        .get(ask("https://evil.example/cb"))
        .send()
        .await
        .unwrap();
    assert_eq!(elsewhere.status(), StatusCode::BAD_REQUEST);
    assert!(elsewhere.headers().get("location").is_none());
    let unknown = http
        .get(format!(
            "{base}/oauth/authorize?response_type=code&client_id=nope&redirect_uri={redirect}"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::BAD_REQUEST);
    // Signed in: the code goes to the registered URI with the state.
    let code_for = |html: String| {
        let http = http.clone();
        let base = base.clone();
        async move {
            let sent = http
                .post(format!("{base}/oauth/authorize"))
                .form(&submitted(&html, "alice", "password123"))
                .send()
                .await
                .unwrap();
            assert_eq!(sent.status(), StatusCode::FOUND);
            let to = sent.headers()["location"].to_str().unwrap().to_string();
            let (at, query) = to.split_once('?').unwrap();
            assert_eq!(at, "https://client.example/callback");
            let q: std::collections::HashMap<String, String> =
                serde_urlencoded::from_str(query).unwrap();
            assert_eq!(q["state"], "xyz");
            q["code"].clone()
        }
    };
    let page = || async {
        http.get(ask(redirect))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    let redeem = |code: String, verifier: &'static str| {
        http.post(format!("{base}/oauth/token")).form(&[
            ("grant_type", "authorization_code".to_string()),
            ("code", code),
            ("client_id", cid.clone()),
            ("client_secret", secret.clone()),
            ("redirect_uri", redirect.to_string()),
            ("code_verifier", verifier.to_string()),
        ])
    };
    // The wrong verifier: refused, and the code is spent.
    let code = code_for(page().await).await;
    let r = redeem(
        code.clone(),
        "a-wrong-verifier-of-at-least-forty-three-characters-000000",
    )
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(r.json::<Value>().await.unwrap()["error"], "invalid_grant");
    let r = redeem(code, verifier).send().await.unwrap();
    assert_eq!(
        r.status(),
        StatusCode::BAD_REQUEST,
        "spent by the wrong try"
    );
    // The right one: a token that is a session of alice's.
    let code = code_for(page().await).await;
    let r = redeem(code.clone(), verifier).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let token = r.json::<Value>().await.unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let me = http
        .get(format!("{base}/api/v1/accounts/verify_credentials"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), StatusCode::OK);
    let r = redeem(code, verifier).send().await.unwrap();
    assert_eq!(
        r.status(),
        StatusCode::BAD_REQUEST,
        "a code is redeemed once"
    );
}

#[tokio::test]
async fn an_applications_own_token_reads_as_no_user() {
    let (app, base) = TestApp::with_mastodon().await;
    let (_, alice) = app.user("alice").await;
    let sid = app.say(&alice, "public words").await;
    let (cid, secret) = register(&base, "urn:ietf:wg:oauth:2.0:oob").await;
    let http = reqwest::Client::new();
    let granted: Value = http
        .post(format!("{base}/oauth/token"))
        .basic_auth(&cid, Some(&secret))
        .form(&[("grant_type", "client_credentials"), ("scope", "read")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = granted["access_token"].as_str().expect("an app token");
    let get = |path: &str| http.get(format!("{base}{path}")).bearer_auth(token).send();
    let me = get("/api/v1/apps/verify_credentials").await.unwrap();
    assert_eq!(me.status(), StatusCode::OK);
    assert_eq!(me.json::<Value>().await.unwrap()["name"], "Code <App>");
    assert_eq!(
        get("/api/v1/accounts/verify_credentials")
            .await
            .unwrap()
            .status(),
        StatusCode::UNAUTHORIZED
    );
    let status = get(&format!("/api/v1/statuses/{sid}")).await.unwrap();
    assert_eq!(
        status.status(),
        StatusCode::OK,
        "a public status reads with no user"
    );
    // A client secret is no token, and an app token is no client secret.
    let as_token = http
        .get(format!("{base}/api/v1/apps/verify_credentials"))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(as_token.status(), StatusCode::UNAUTHORIZED);
    let as_secret = http
        .post(format!("{base}/oauth/token"))
        .form(&[
            ("grant_type", "client_credentials"),
            ("client_id", &cid),
            ("client_secret", token),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(as_secret.status(), StatusCode::UNAUTHORIZED);
}
