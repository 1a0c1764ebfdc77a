//! What the resources' handlers share: request extraction (`extract`:
//! bodies, ids, query parameters), paging, who may see what
//! (`visibility`), the route table with its OpenAPI operations (`routes`,
//! `openapi`) and CORS (`cors`).

pub mod cors;
pub mod extract;
pub mod openapi;
pub mod paging;
pub mod routes;
pub mod visibility;
