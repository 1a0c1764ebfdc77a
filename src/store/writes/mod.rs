//! The machinery of writes beside the outbox (`outbox`, `fanout` and `chains`
//! stay beside this folder): snowflake ids (`ids`), the group commit of events
//! (`emitter`), the fan-out queues' hints (`fanout_hints`) and the one-script
//! post on one Redis (`post_whole`).

pub mod emitter;
pub mod fanout_hints;
pub mod ids;
pub(crate) mod post_whole;
