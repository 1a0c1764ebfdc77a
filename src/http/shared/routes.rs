//! Routes together with their documentation: a resource registers a
//! handler with its OpenAPI [`Op`], whose method and path are the route's,
//! so the router and `/openapi.json` are made from one list and cannot
//! drift apart.

use super::openapi::Op;
use crate::state::AppState;
use axum::handler::Handler;
use axum::routing::{on, MethodFilter};
use axum::Router;

/// A router and the operations it serves.
pub struct Routes {
    router: Router<AppState>,
    ops: Vec<Op>,
    schemas: serde_json::Map<String, serde_json::Value>,
}

impl Default for Routes {
    fn default() -> Self {
        Self::new()
    }
}

impl Routes {
    /// No routes yet.
    pub fn new() -> Routes {
        Routes {
            router: Router::new(),
            ops: Vec::new(),
            schemas: serde_json::Map::new(),
        }
    }

    /// Serves `handler` at `op.path` for `op.method`, documented by `op`.
    ///
    /// # Panics
    /// On a method the document does not know (a programming error, met
    /// when the router is built).
    pub fn route<H, T>(mut self, op: Op, handler: H) -> Routes
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        let filter = match op.method {
            "get" => MethodFilter::GET,
            "post" => MethodFilter::POST,
            "patch" => MethodFilter::PATCH,
            "put" => MethodFilter::PUT,
            "delete" => MethodFilter::DELETE,
            other => panic!("unknown method {other:?} for {}", op.path),
        };
        self.router = self.router.route(op.path, on(filter, handler));
        self.ops.push(op);
        self
    }

    /// Adds a request body's schema (the operations name it with `body`).
    pub fn schema(mut self, name: &str, schema: serde_json::Value) -> Routes {
        self.schemas.insert(name.to_string(), schema);
        self
    }

    /// These routes and `other`'s.
    pub fn merge(mut self, other: Routes) -> Routes {
        self.router = self.router.merge(other.router);
        self.ops.extend(other.ops);
        self.schemas.extend(other.schemas);
        self
    }

    /// The schemas registered so far.
    pub fn schemas(&self) -> &serde_json::Map<String, serde_json::Value> {
        &self.schemas
    }

    /// The operations registered so far.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The router.
    pub fn into_router(self) -> Router<AppState> {
        self.router
    }
}
