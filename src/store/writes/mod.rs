//! The machinery of writes beside the outbox (`outbox`, `fanout` and `chains`
//! stay beside this folder): snowflake ids (`ids`, issued by `next_ids`), the
//! group commit of events (`emitter`), the fan-out queues' hints
//! (`fanout_hints`), what a post takes and gives (`posting`) and the
//! writes an account's deletion starts on its owner's behalf (`undo`).

pub(crate) mod next_ids;
pub(crate) mod posting;
