//! What the log's buffers can tell about lost history.

use super::handle::Events;
use crate::store::log::id::EventId;
use crate::store::plumbing::error::StoreResult;

/// What the replay buffer can tell about lost history.
#[derive(Debug, Clone, Default)]
pub struct BufferInfo {
    /// The oldest id still held.
    pub first: Option<String>,
    /// Whether trimming ever dropped entries (more were added than are held).
    pub trimmed: bool,
    /// The highest id removed by XDEL, if any (`max-deleted-entry-id`).
    pub max_deleted: Option<String>,
}

impl BufferInfo {
    /// Whether this shard may have lost events after `after`: a deleted
    /// entry after it, or a trimmed shard whose oldest is after it.
    pub fn lost_after(&self, after: EventId) -> bool {
        let parse = |id: &Option<String>| id.as_deref().and_then(EventId::parse);
        // A deleted entry took every event it held, up to its last.
        let deleted = parse(&self.max_deleted).is_some_and(|d| d.last_of_entry() > after);
        deleted || (self.trimmed && parse(&self.first).is_some_and(|first| first > after))
    }
}

impl Events<'_> {
    /// The buffer's oldest id and whether anything was trimmed or deleted, so
    /// that a resume point older than the buffer can be told apart: over
    /// every shard, the newest first id of those trimmed and the newest id
    /// deleted (a resume point before either may have lost events of that
    /// shard).
    pub async fn buffer_info(self) -> StoreResult<BufferInfo> {
        let infos = self.shards_lost().await?;
        let newest = |ids: &mut dyn Iterator<Item = &String>| {
            ids.filter_map(|id| EventId::parse(id).map(|e| (e, id.clone())))
                .max_by_key(|(e, _)| *e)
                .map(|(_, id)| id)
        };
        Ok(BufferInfo {
            first: newest(
                &mut infos
                    .iter()
                    .filter(|i| i.trimmed)
                    .filter_map(|i| i.first.as_ref()),
            ),
            trimmed: infos.iter().any(|i| i.trimmed),
            max_deleted: newest(&mut infos.iter().filter_map(|i| i.max_deleted.as_ref())),
        })
    }
}
