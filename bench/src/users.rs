//! Load users, made straight in the store.

use firehose::store::Store;
use futures::StreamExt;

/// The server's store on one Redis (`redis_url`, keys under `key_prefix`)
/// and its token signer (the secret the server keeps in Redis).
pub async fn open_store(
    redis_url: &str,
    key_prefix: &str,
) -> anyhow::Result<(Store, firehose::auth::Jwt)> {
    let mut cfg = firehose::config::Config::defaults();
    cfg.redis_url = Some(redis_url.to_string());
    cfg.key_prefix = key_prefix.to_string();
    let store = Store::open(redis_url, &cfg)?;
    let jwt = firehose::auth::Jwt::new(&store.sessions().jwt_secret(cfg.jwt_secret()).await?);
    Ok((store, jwt))
}

/// `n` users `<prefix><i>` (created directly in the store when missing,
/// with a placeholder password hash): their ids.
pub async fn users(store: &Store, prefix: &str, n: usize) -> anyhow::Result<Vec<u64>> {
    let ids: Vec<anyhow::Result<u64>> = futures::stream::iter(0..n)
        .map(|i| async move {
            let login = format!("{prefix}{i}");
            if let Some(id) = store.users().lookup(&login).await? {
                return Ok(id);
            }
            let email = format!("{login}@example.test");
            let new = firehose::store::users::NewUser {
                login: &login,
                name: "bench",
                email: &email,
                password_hash: "x",
            };
            Ok(store
                .users()
                .create(&new, firehose::model::now())
                .await?
                .id
                .get())
        })
        .buffered(64)
        .collect()
        .await;
    ids.into_iter().collect()
}

/// `n` users `<prefix><i>` ([`users`]), each with a new session and a
/// token for it (scopes read, write and firehose, an hour).
pub async fn tokens(
    store: &Store,
    jwt: &firehose::auth::Jwt,
    prefix: &str,
    n: usize,
) -> anyhow::Result<Vec<(u64, String)>> {
    let mut out = Vec::with_capacity(n);
    for uid in users(store, prefix, n).await? {
        let sid = store.sessions().create(uid, firehose::model::now()).await?;
        out.push((
            uid,
            jwt.mint(uid, &sid, &["read", "write", "firehose"], 3600).0,
        ));
    }
    Ok(out)
}

/// Signs `login` up through the API (password "password123"; an existing
/// login is fine) and logs in: (user id, token).
pub async fn session(
    http: &reqwest::Client,
    base: &str,
    login: &str,
) -> anyhow::Result<(u64, String)> {
    let _ = http
        .post(format!("{base}/api/v1/users"))
        .json(&serde_json::json!({"login": login, "name": login, "email": format!("{login}@example.test"), "password": "password123"}))
        .send()
        .await?;
    let r: serde_json::Value = http
        .post(format!("{base}/api/v1/sessions"))
        .json(&serde_json::json!({"identifier": login, "password": "password123"}))
        .send()
        .await?
        .json()
        .await?;
    let uid = r["user"]["id"].as_str().unwrap_or("0").parse()?;
    Ok((uid, r["token"].as_str().unwrap_or("").to_string()))
}
