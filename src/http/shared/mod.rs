//! What the resources' handlers share: request extraction (`extract`:
//! bodies, ids, query parameters), paging, the batch calls' answer, who may see what
//! (`visibility`), the route table with its OpenAPI operations (`routes`,
//! `openapi`) and CORS (`cors`).

pub(crate) mod batch;
pub(crate) mod cors;
pub(crate) mod extract;
pub(crate) mod openapi;
pub(crate) mod paging;
pub(crate) mod routes;
pub(crate) mod rule_items;
pub(crate) mod status_text;
pub(crate) mod visibility;
