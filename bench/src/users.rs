//! Load users, made straight in the store.

use firehose::store::Store;
use futures::StreamExt;

/// `n` users `<prefix><i>` (created directly in the store when missing,
/// with a placeholder password hash): their ids.
pub async fn users(store: &Store, prefix: &str, n: usize) -> anyhow::Result<Vec<u64>> {
    let ids: Vec<anyhow::Result<u64>> = futures::stream::iter(0..n)
        .map(|i| async move {
            let login = format!("{prefix}{i}");
            if let Some(id) = store.lookup(&login).await? {
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
                .create_user(&new, firehose::model::now())
                .await?
                .id
                .parse()?)
        })
        .buffered(64)
        .collect()
        .await;
    ids.into_iter().collect()
}
