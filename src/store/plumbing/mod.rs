//! The Redis plumbing under every entity: connections to one server or a
//! cluster (`conn`), every key name (`keys`), waiting for replicas (`replicas`)
//! and the data moves made before serving (`migrate`).

pub mod conn;
pub mod keys;
pub mod migrate;
pub(crate) mod replicas;
