//! The Redis plumbing under every entity: the handle (`handle::Store`), its
//! errors (`error`) and Lua scripts (`scripts`), connections to one server or
//! a cluster (`conn`), every key name (`keys`), waiting for replicas
//! (`replicas`), the limits and fault-test pauses (`settings`) and the
//! layout check made before serving (`layout`).

pub mod conn;
pub(crate) mod error;
pub(crate) mod fanout_hints;
pub mod ids;
pub mod keys;
pub(crate) mod replicas;
pub(crate) mod scripts;
pub(crate) mod settings;
