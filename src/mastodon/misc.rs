//! The rest of what clients call: trending tags, search (`/api/v2/search`),
//! markers, preferences, notifications dismissed and cleared, and the
//! lists a client reads at start that this server keeps none of (custom
//! emojis, filters, announcements, followed and featured tags, domain
//! blocks, endorsements, suggestions): each an empty list, which is what
//! they hold here.

use super::entities::iso8601;
use super::form::fields;
use super::render::{many, viewer};
use super::reply::{entity, error, ok, unavailable, Refused, Reply};
use super::shared::{Ctx, Mastodon};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use serde_json::{json, Value};

/// The caller's id, or 401.
async fn me(m: &Mastodon, cx: &Ctx) -> Result<u64, Refused> {
    viewer(m, cx)
        .await
        .ok_or_else(|| error(StatusCode::UNAUTHORIZED, "The access token is invalid"))
}

/// A hashtag as Mastodon's `Tag`, with its uses today (`uses` of the day).
fn tag(base: &str, name: &str, uses: u64) -> Value {
    let name = name.to_lowercase();
    let day = (crate::model::now() / 86_400.0).floor() * 86_400.0;
    json!({
        "name": name,
        "url": format!("{base}/tags/{name}"),
        "history": [{ "day": format!("{}", day as u64), "uses": uses.to_string(), "accounts": uses.to_string() }],
        "following": false,
    })
}

/// `GET /api/v1/trends/tags` (`limit` 1–20, 10): our most used hashtags of
/// public statuses over the last day.
pub(super) async fn trends(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    let limit = cx
        .param("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(10)
        .clamp(1, 20);
    let ours = ok(m
        .inner
        .call(
            Method::GET,
            &format!("/api/v1/trends/tags?window=86400&limit={limit}"),
            &cx.caller,
            None,
        )
        .await)?;
    let tags: Vec<Value> = ours
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            tag(
                &cx.base,
                t["tag"].as_str().unwrap_or_default(),
                t["count"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    Ok(entity(StatusCode::OK, Value::Array(tags)))
}

/// `GET /api/v2/search?q=`: the account whose login is `q` (exactly), the
/// hashtag `q` if it is one, and the public statuses of the history that
/// hold `q` as a phrase (newest first, `limit` 1–40), each as the caller
/// may see it; `type=` narrows to one of them.
pub(super) async fn search(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    let q = cx.param("q").unwrap_or_default().trim().to_string();
    let kind = cx.param("type").unwrap_or_default();
    if q.is_empty() || q.chars().count() > 200 {
        return Ok(entity(
            StatusCode::OK,
            json!({ "accounts": [], "statuses": [], "hashtags": [] }),
        ));
    }
    let limit = cx
        .param("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(20)
        .clamp(1, 40);
    let wants = |k: &str| kind.is_empty() || kind == k;
    let accounts: Vec<Value> = if wants("accounts") {
        super::render::search_accounts(&m, &cx, &q, limit, cx.flag("following")).await?
    } else {
        Vec::new()
    };
    let word = q.trim_start_matches('#');
    let is_tag = !word.is_empty()
        && word.chars().count() <= 100
        && word.chars().all(|c| c.is_alphanumeric() || c == '_');
    let hashtags = if wants("hashtags") && is_tag {
        vec![tag(&cx.base, word, 0)]
    } else {
        Vec::new()
    };
    let statuses = if wants("statuses") && cx.caller.token.is_some() {
        let phrase = format!("\"{}\"", q.replace('"', " "));
        let query = serde_urlencoded::to_string([("query", phrase.as_str())]).unwrap_or_default();
        let answer = m
            .inner
            .call(
                Method::GET,
                &format!("/api/v1/history/search?count={limit}&{query}"),
                &cx.caller,
                None,
            )
            .await;
        match answer.status {
            // A phrase our rules cannot hold (only signs, say): nothing.
            StatusCode::BAD_REQUEST => Vec::new(),
            _ => {
                let found = ok(answer)?;
                let list = found["statuses"].as_array().cloned().unwrap_or_default();
                many(&m, &cx, list).await?
            }
        }
    } else {
        Vec::new()
    };
    Ok(entity(
        StatusCode::OK,
        json!({ "accounts": accounts, "statuses": statuses, "hashtags": hashtags }),
    ))
}

/// `GET /api/v1/markers?timeline[]=home&timeline[]=notifications`.
pub(super) async fn markers(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    let uid = me(&m, &cx).await?;
    let asked = cx.params("timeline");
    let wants = |t: &str| asked.is_empty() || asked.contains(&t);
    let store = m.app.store.notifications();
    let mut out = serde_json::Map::new();
    if wants("home") {
        if let Some((id, at, version)) =
            store.home_marker(uid).await.map_err(|e| unavailable(&e))?
        {
            out.insert(
                "home".into(),
                json!({ "last_read_id": id, "version": version, "updated_at": iso8601(at) }),
            );
        }
    }
    if wants("notifications") {
        let read = store.marker(uid).await.map_err(|e| unavailable(&e))?;
        if read > 0 {
            out.insert(
                "notifications".into(),
                json!({ "last_read_id": read.to_string(), "version": 1, "updated_at": iso8601(crate::model::now()) }),
            );
        }
    }
    Ok(entity(StatusCode::OK, Value::Object(out)))
}

/// `POST /api/v1/markers` (`home[last_read_id]`, `notifications[last_read_id]`):
/// the notifications marker is our read marker (it only moves forward).
pub(super) async fn set_markers(
    cx: Ctx,
    headers: HeaderMap,
    State(m): State<Mastodon>,
    body: Bytes,
) -> Reply {
    let uid = me(&m, &cx).await?;
    let f = fields(&headers, &body, None);
    // A form's `home[last_read_id]`, or JSON's `{"home": {"last_read_id": ..}}`.
    let id_of = |k: &str| {
        let nested = f
            .get(k)
            .and_then(|v| serde_json::from_str::<Value>(v).ok())
            .map(|v| match &v["last_read_id"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        f.get(&format!("{k}[last_read_id]"))
            .cloned()
            .or(nested)
            .filter(|v| !v.is_empty() && v.len() <= 20 && v.bytes().all(|b| b.is_ascii_digit()))
    };
    let (home, notes) = (id_of("home"), id_of("notifications"));
    if home.is_none() && notes.is_none() {
        return Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "home[last_read_id] or notifications[last_read_id] must be a status or notification id",
        ));
    }
    let store = m.app.store.notifications();
    let mut out = serde_json::Map::new();
    if let Some(id) = home {
        let (at, version) = store
            .set_home_marker(uid, &id)
            .await
            .map_err(|e| unavailable(&e))?;
        out.insert(
            "home".into(),
            json!({ "last_read_id": id, "version": version, "updated_at": iso8601(at) }),
        );
    }
    // Marking up to 0 marks nothing; an id past every one, up to the newest.
    let notes = notes.map(|id| id.parse::<u64>().unwrap_or(u64::MAX));
    if let Some(id) = notes.filter(|id| *id > 0) {
        ok(m.inner
            .call(
                Method::POST,
                "/api/v1/notifications/read",
                &cx.caller,
                Some(&json!({ "up_to": id.to_string() })),
            )
            .await)?;
    }
    if notes.is_some() {
        let read = store.marker(uid).await.map_err(|e| unavailable(&e))?;
        out.insert(
            "notifications".into(),
            json!({ "last_read_id": read.to_string(), "version": 1, "updated_at": iso8601(crate::model::now()) }),
        );
    }
    Ok(entity(StatusCode::OK, Value::Object(out)))
}

/// `GET /api/v1/preferences`: statuses take their account's visibility.
pub(super) async fn preferences(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    let me = ok(m
        .inner
        .call(Method::GET, "/api/v1/me", &cx.caller, None)
        .await)?;
    let visibility = if me["private"].as_bool().unwrap_or(false) {
        "private"
    } else {
        "public"
    };
    Ok(entity(
        StatusCode::OK,
        json!({
            "posting:default:visibility": visibility,
            "posting:default:sensitive": false,
            "posting:default:language": null,
            "reading:expand:media": "default",
            "reading:expand:spoilers": false,
        }),
    ))
}

/// `POST /api/v1/notifications/{id}/dismiss`.
pub(super) async fn dismiss(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let uid = me(&m, &cx).await?;
    if id.is_empty() || id.len() > 20 || !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(error(StatusCode::NOT_FOUND, "Record not found"));
    }
    let gone = m
        .app
        .store
        .notifications()
        .dismiss(uid, &id)
        .await
        .map_err(|e| unavailable(&e))?;
    if !gone {
        return Err(error(StatusCode::NOT_FOUND, "Record not found"));
    }
    Ok(entity(StatusCode::OK, json!({})))
}

/// `POST /api/v1/notifications/clear`.
pub(super) async fn clear(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    let uid = me(&m, &cx).await?;
    m.app
        .store
        .notifications()
        .clear(uid)
        .await
        .map_err(|e| unavailable(&e))?;
    Ok(entity(StatusCode::OK, json!({})))
}

/// A list this server keeps none of: empty, for any caller.
pub(super) async fn none() -> Reply {
    Ok(entity(StatusCode::OK, json!([])))
}

/// `GET /openapi.json`: this API's document (made once, with the router).
pub(super) async fn openapi(State(m): State<Mastodon>) -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        m.openapi.as_str().to_string(),
    )
        .into_response()
}

/// `POST /api/v1/media` and `/api/v2/media`: no media here.
pub(super) async fn no_media() -> Reply {
    Err(error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "Media uploads are not supported on this server",
    ))
}
