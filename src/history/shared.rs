//! How a shared history (`--history-store`) reads: this process's disk
//! first, the store's windows ([`Tier`]) where the disk lacks events.

use super::segment::BlockMeta;
use super::tier::Tier;
use super::{gap_before, History, Located};
use crate::store::events::EventId;
use std::fs::File;
use std::sync::Arc;

impl History {
    /// The store's tier, when the history is shared.
    pub fn tier(&self) -> Option<&Tier> {
        self.0.tier.as_ref()
    }

    /// Where a read after `after` goes: this disk's block (or pending
    /// events), unless this disk lacks the events right after `after` and
    /// the store holds some of them: then the store's block.
    pub(super) async fn locate_shared(&self, after: EventId) -> Located {
        let located = self.locate(after);
        let Some(tier) = self.tier() else {
            return located;
        };
        let own_first = match &located {
            Located::End => None,
            Located::Pending(page) if page.gap.is_none() => return located,
            Located::Pending(page) => page.events.first().map(|(id, _)| *id),
            Located::Block(_, block) if gap_before(after, &block.header).is_none() => {
                return located
            }
            Located::Block(_, block) => Some(block.header.first),
        };
        let fills = |found: &Option<(Arc<File>, BlockMeta)>| {
            found
                .as_ref()
                .is_some_and(|(_, b)| own_first.is_none_or(|f| b.header.first <= f))
        };
        let mut found = tier.block_after(after).await;
        if let (false, Some(own_first)) = (fills(&found), own_first) {
            let reachable = tier.remote().health().0;
            if reachable && tier.sealed().is_none_or(|s| s <= own_first.0) {
                tier.await_sealed(own_first).await;
                found = tier.block_after(after).await;
            }
        }
        match found {
            Some((file, block)) if fills(&Some((file.clone(), block))) => {
                Located::Block(file, block)
            }
            _ => located,
        }
    }
}
