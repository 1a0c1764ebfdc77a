//! A status's text: how long it may be, who it mentions and which of them
//! may see it. Shared by posting (`http::statuses`), editing
//! (`http::edits`) and the Mastodon API's instance document.

use crate::auth::AuthUser;
use crate::error::ApiResult;
use crate::state::AppState;
use crate::text;

/// Longest message, in Unicode scalar values.
pub(crate) const MAX_MESSAGE_CHARS: usize = 280;

/// The logins `message` mentions that belong to users, in order, and the
/// users among them who may see a status of `author`'s with this text
/// (whose mentions timelines it enters): of a private account, its
/// followers; of a reply to a private account (`audience`), that account
/// and its followers; of a private group (`private_group`), its members.
pub(crate) async fn resolve_mentions(
    state: &AppState,
    author: &AuthUser,
    message: &str,
    audience: Option<u64>,
    private_group: Option<u64>,
) -> ApiResult<(Vec<String>, Vec<u64>)> {
    let mut mentions = Vec::new();
    let mut mentioned = Vec::new();
    for login in text::mentions(message) {
        let Some(uid) = state.store.users().lookup(&login).await? else {
            continue;
        };
        mentions.push(login);
        let mut sees = !author.private
            || uid == author.uid
            || state.store.follows().is_following(uid, author.uid).await?;
        if let Some(p) = audience {
            sees = sees && (uid == p || state.store.follows().is_following(uid, p).await?);
        }
        if let Some(gid) = private_group {
            sees = sees
                && state
                    .store
                    .groups()
                    .standing(gid, uid)
                    .await?
                    .is_some_and(|s| s.role.is_some());
        }
        if sees && !mentioned.contains(&uid) {
            mentioned.push(uid);
        }
    }
    Ok((mentions, mentioned))
}
