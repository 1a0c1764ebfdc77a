//! Scanning the history newest first, for the history search and counts:
//! blocks whose summary shows that no status of theirs can match the
//! rule's anchors are passed over without being read.

use super::segment::{self, BlockMeta};
use super::{block, Gap, History};
use crate::store::events::EventId;
use firehose_filters::rules::Anchor;
use firehose_filters::summary::Summary;
use std::fs::File;
use std::sync::Arc;

/// Blocks looked at (summary read) per step at most.
const STEP_BLOCKS: usize = 256;
/// Blocks read whole per step at most: the step's memory is bounded by
/// this many blocks' events.
const STEP_READS: usize = 4;

/// What one step of a scan gave.
#[derive(Debug)]
pub struct Step<T> {
    /// What was made of the events of the blocks read (and of what is
    /// pending), newest first, all older than the position the step began
    /// at.
    pub events: Vec<T>,
    /// Every event newer than this and older than where the step began was
    /// looked at (in `events` or in a block passed over).
    pub cursor: EventId,
    /// Nothing older is held (or the scan reached `floor`).
    pub done: bool,
    /// Blocks read and found damaged: stretches the scan could not look at.
    pub damaged: Vec<Gap>,
    /// Blocks passed over by their summary, and read.
    pub skipped: usize,
    pub read: usize,
}

impl History {
    /// One step of a scan towards the oldest: events older than `before`
    /// and newer than `floor`, from blocks whose summary may match
    /// `anchors` (every block when `anchors` is `None`), each made into a
    /// `T` by `make` (`None`: left out) on the thread that read its block,
    /// without a copy of its JSON.
    ///
    /// With a shared history, a stretch this process lacks is scanned in the
    /// store's windows: the step that reaches such a stretch ends at its top
    /// (`cursor`), and the next steps read the store down to its bottom.
    pub async fn scan_step<T: Send + 'static>(
        &self,
        before: EventId,
        floor: EventId,
        anchors: Option<Arc<Vec<Anchor>>>,
        make: impl Fn(EventId, &str) -> Option<T> + Send + 'static,
    ) -> std::io::Result<Step<T>> {
        let Some(hole) = self.tier().and_then(|_| self.own_gaps(floor, before).pop()) else {
            let (blocks, pending, more) = self.blocks_before(before, floor);
            return self
                .scan_blocks(blocks, pending, more, before, (floor, false), anchors, make)
                .await;
        };
        if hole.before < before {
            // This process holds what lies above the stretch: down to it.
            let (blocks, pending, more) = self.blocks_before(before, hole.after);
            let mut step = self
                .scan_blocks(
                    blocks,
                    pending,
                    more,
                    before,
                    (hole.after, false),
                    anchors,
                    make,
                )
                .await?;
            if step.done {
                // On into the stretch, from the store.
                (step.cursor, step.done) = (hole.before, false);
            }
            return Ok(step);
        }
        // Inside the stretch: the store's windows, down to the last event
        // this process holds below it (which the store holds too, and the
        // next step, reading below it, does not look at).
        let low = (hole.after, hole.after > floor);
        let tier = self.tier().cloned();
        let found = match tier {
            Some(tier) => {
                tier.refresh(false).await;
                tier.blocks_before(before, hole.after, STEP_BLOCKS).await
            }
            None => None,
        };
        let Some((blocks, more)) = found else {
            // The store cannot be read now: the stretch is not looked at.
            return Ok(Step {
                events: Vec::new(),
                cursor: hole.after,
                done: hole.after <= floor,
                damaged: vec![hole],
                skipped: 0,
                read: 0,
            });
        };
        let mut step = self
            .scan_blocks(blocks, Vec::new(), more, before, low, anchors, make)
            .await?;
        if step.done {
            (step.cursor, step.done) = (hole.after, hole.after <= floor);
        }
        Ok(step)
    }

    /// The stretches between `floor` and `before` this process's own disk
    /// lacks (all of it when it holds nothing), for a scan that fills them
    /// from the store.
    fn own_gaps(&self, floor: EventId, before: EventId) -> Vec<Gap> {
        let empty = {
            let index = self.index();
            index.pending.is_empty() && index.segments.iter().all(|s| s.blocks.is_empty())
        };
        if empty {
            return vec![Gap {
                after: floor,
                before,
            }];
        }
        self.own_holes(floor, before, &[], true)
    }

    /// Reads `blocks` (newest first, from this disk or the store's cache)
    /// and `pending` for a step: events older than `before` and newer than
    /// `low.0` (or as old, with `low.1`).
    #[allow(clippy::too_many_arguments)]
    async fn scan_blocks<T: Send + 'static>(
        &self,
        blocks: Vec<(Arc<File>, BlockMeta)>,
        pending: Vec<(EventId, String)>,
        more: bool,
        before: EventId,
        low: (EventId, bool),
        anchors: Option<Arc<Vec<Anchor>>>,
        make: impl Fn(EventId, &str) -> Option<T> + Send + 'static,
    ) -> std::io::Result<Step<T>> {
        let (floor_id, inclusive) = low;
        let above = move |id: EventId| id > floor_id || (inclusive && id == floor_id);
        self.on_reader(move || {
            let mut step = Step {
                events: pending
                    .iter()
                    .filter_map(|(id, json)| make(*id, json))
                    .collect(),
                cursor: floor_id,
                done: true,
                damaged: Vec::new(),
                skipped: 0,
                read: 0,
            };
            for (i, (file, meta)) in blocks.iter().enumerate() {
                if step.read == STEP_READS {
                    step.done = false;
                    step.cursor = blocks[i - 1].1.header.first.max(floor_id);
                    return Ok(step);
                }
                if let Some(anchors) = &anchors {
                    let summary = segment::read_summary(file, meta)?;
                    if Summary::decode(&summary).is_some_and(|s| !s.may_match(anchors)) {
                        step.skipped += 1;
                        continue;
                    }
                }
                step.read += 1;
                let body = segment::read_body(file, meta)?;
                // A damaged block holds nothing a search can serve.
                let mut made = Vec::new();
                let whole = block::visit(&meta.header, &body, |id, json| {
                    if id < before && above(id) {
                        made.extend(make(id, json));
                    }
                });
                if whole.is_some() {
                    made.reverse();
                    step.events.extend(made);
                } else {
                    step.damaged.push(Gap {
                        after: meta.header.prev,
                        before: meta.header.last.last_of_entry(),
                    });
                }
            }
            if let (true, Some((_, oldest))) = (more, blocks.last()) {
                step.done = false;
                step.cursor = oldest.header.first.max(floor_id);
            }
            Ok(step)
        })
        .await?
    }

    /// The stretches between `after` and `before` that this history does
    /// not hold, oldest first, each clipped to that range: before its first
    /// block when that block's gap flag says events before it were missed
    /// (the process started after the buffer had moved on), or, with
    /// `edge`, whenever that block does not begin the log (retention took
    /// what was before it); between two blocks (or the blocks and what is
    /// pending) where the later one's `prev` or gap flag says events are
    /// missing; and the blocks found damaged when read (`damaged`). Read
    /// from the index alone: no block is read.
    /// With a shared history, only what neither this disk nor the store
    /// holds.
    pub fn holes(&self, after: EventId, before: EventId, damaged: &[Gap], edge: bool) -> Vec<Gap> {
        match self.tier() {
            Some(tier) => {
                super::tier::both_missing(&self.own_gaps(after, before), &tier.holes(after, before))
                    .into_iter()
                    .chain(damaged.iter().copied())
                    .collect()
            }
            None => self.own_holes(after, before, damaged, edge),
        }
    }

    /// [`History::holes`] of this process's own disk.
    fn own_holes(&self, after: EventId, before: EventId, damaged: &[Gap], edge: bool) -> Vec<Gap> {
        let index = self.index();
        let mut found: Vec<Gap> = Vec::new();
        let mut last: Option<EventId> = None;
        let starts = index
            .segments
            .iter()
            .flat_map(|seg| seg.blocks.iter())
            .map(|b| {
                (
                    b.header.prev,
                    b.header.gap_before(),
                    b.header.first,
                    b.header.last,
                )
            })
            .chain(index.pending.first().zip(index.pending.last()).map(
                |((first, _), (last, _))| (index.pending_prev, index.pending_gap, *first, *last),
            ));
        for (prev, gap, first, end) in starts {
            match last {
                None if gap || (edge && prev != EventId::ZERO) => found.push(Gap {
                    after: EventId::ZERO,
                    before: first,
                }),
                Some(held) if gap || prev > held => found.push(Gap {
                    after: held,
                    before: first,
                }),
                _ => {}
            }
            last = Some(end);
        }
        found.extend_from_slice(damaged);
        found.sort_by_key(|g| g.after);
        found
            .into_iter()
            .filter(|g| g.after < before && g.before > after)
            .map(|g| Gap {
                after: g.after.max(after),
                before: g.before.min(before),
            })
            .collect()
    }

    /// The blocks with events older than `before` and newer than `floor`,
    /// newest first (at most a step's worth), the pending events in that
    /// range, newest first, and whether more blocks lie beyond those.
    #[allow(clippy::type_complexity)]
    fn blocks_before(
        &self,
        before: EventId,
        floor: EventId,
    ) -> (Vec<(Arc<File>, BlockMeta)>, Vec<(EventId, String)>, bool) {
        let index = self.index();
        let pending: Vec<_> = index
            .pending
            .iter()
            .rev()
            .filter(|(id, _)| *id < before && *id > floor)
            .cloned()
            .collect();
        let mut blocks = Vec::new();
        for seg in index.segments.iter().rev() {
            if seg.first().is_none_or(|f| f >= before) {
                continue;
            }
            let end = seg.blocks.partition_point(|b| b.header.first < before);
            for meta in seg.blocks[..end].iter().rev() {
                if meta.header.last <= floor {
                    return (blocks, pending, false);
                }
                if blocks.len() == STEP_BLOCKS {
                    return (blocks, pending, true);
                }
                blocks.push((seg.file.clone(), *meta));
            }
        }
        (blocks, pending, false)
    }
}
