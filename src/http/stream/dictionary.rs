//! `GET /api/v1/stream/zstd-dictionary`: the dictionary `compress=zstd`
//! sockets' frames are made with ([`crate::stream::zstd`]).

use crate::error::{ApiError, ApiResult};
use crate::http::shared::openapi::{Auth, Op, Reply};
use crate::state::AppState;
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;

/// The response header naming a dictionary.
pub(crate) const ID_HEADER: &str = "zstd-dictionary-id";

pub(super) const DICTIONARY_OP: Op = Op::get("/api/v1/stream/zstd-dictionary", "streams", "The zstd dictionary of compress=zstd WebSocket streams (the current one, or ?id= one of the last four); its id in Zstd-Dictionary-Id").auth(Auth::None).query(&[(
        "id",
        "A dictionary's id, as a frame's header names it (default: the current one).",
    )]).reply(Reply::Text("application/octet-stream")).errors(&[400, 404, 503]);

/// `GET /api/v1/stream/zstd-dictionary`.
pub(crate) async fn dictionary(
    State(state): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    crate::http::shared::extract::known_params(&q, &["id"])?;
    let (id, bytes, cache) = match q.get("id") {
        Some(raw) => {
            let id: u32 =
                raw.parse().ok().filter(|&i| i > 0).ok_or_else(|| {
                    ApiError::invalid("invalid_id", "id must be a dictionary id.")
                })?;
            let bytes = match state.zstd.current().filter(|d| d.id == id) {
                Some(d) => d.bytes.to_vec(),
                None => state
                    .store
                    .events()
                    .zstd_dicts()
                    .get(&id.to_string())
                    .await?
                    .ok_or_else(|| {
                        ApiError::not_found("No such dictionary (or no longer kept).")
                    })?,
            };
            // A dictionary's bytes never change under its id.
            (id, bytes, "public, max-age=86400, immutable")
        }
        None => {
            let dict = state.zstd.ready().await.map_err(|e| {
                tracing::warn!(error = %e, "no zstd dictionary");
                ApiError::unavailable()
            })?;
            (dict.id, dict.bytes.to_vec(), "no-cache")
        }
    };
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (header::CACHE_CONTROL, cache.to_string()),
            (header::HeaderName::from_static(ID_HEADER), id.to_string()),
        ],
        bytes,
    )
        .into_response())
}
