//! The machinery of writes beside the outbox (`outbox`, `fanout` and `chains`
//! stay beside this folder): snowflake ids (`ids`, issued by `next_ids`), the
//! group commit of events (`emitter`), the fan-out queues' hints
//! (`fanout_hints`), what a post takes and gives (`posting`) and the
//! one-script post on one Redis (`post_whole`).

pub mod emitter;
pub mod fanout_hints;
pub mod ids;
pub mod next_ids;
pub(crate) mod post_whole;
pub mod posting;
