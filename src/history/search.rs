//! A rule over the history: the public statuses it matches, newest first,
//! judged as the reader may see them now. The matching is the live search
//! stream's own (`Want::judge` with the rule as the subscription's one
//! rule), so a rule finds in the past what it would have delivered live;
//! blocks whose summary holds none of the rule's anchors are not read.

use super::History;
use crate::hides::Hides;
use crate::store::events::EventId;
use crate::store::{StoreError, StoreResult};
use crate::stream::frame::{self, Frame, Incoming};
use crate::stream::replay_sight::ReplaySight;
use crate::stream::rule_set::RuleSet;
use crate::stream::want::Want;
use firehose_filters::rules::{anchors, Anchor, Expr};
use firehose_filters::{FilterSpec, Rule};
use std::sync::Arc;

/// Searches judging events at once, over the process: the rest wait their
/// turn, so that searches take at most about one core from the streams.
static JUDGING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// One rule, ready to run over the history.
pub struct Search {
    want: Want,
    anchors: Option<Arc<Vec<Anchor>>>,
    /// The reader's blocks, either way: what they hide is never found.
    hides: Arc<Hides>,
    sight: ReplaySight,
}

/// What one step of a search found.
pub struct Found {
    /// Matching statuses the reader may see now, newest first, with the
    /// ids of their events.
    pub statuses: Vec<(EventId, Arc<Frame>)>,
    /// Where the next step begins (events older than it).
    pub cursor: EventId,
    /// Nothing older is left to look at.
    pub done: bool,
}

impl Search {
    /// A search for `expr` (checked, logins resolved) by a reader whose
    /// sight judges what they may see now (public statuses only).
    pub fn new(expr: Expr, hides: Arc<Hides>, sight: ReplaySight) -> Search {
        let anchors = anchors(&expr).map(Arc::new);
        let set = RuleSet::new(vec![(expr, "0".to_string(), None)], None);
        Search {
            want: Want::rules(Rule::Filter(FilterSpec::default()), Arc::new(set)),
            anchors,
            hides,
            sight,
        }
    }

    /// Looks at the next stretch of the history older than `before` and
    /// newer than `floor`.
    pub async fn step(
        &mut self,
        history: &History,
        before: EventId,
        floor: EventId,
    ) -> StoreResult<Found> {
        // A rule with no anchor matches nothing (an unknown login).
        let anchors = match &self.anchors {
            Some(a) if a.is_empty() => {
                return Ok(Found {
                    statuses: Vec::new(),
                    cursor: floor,
                    done: true,
                })
            }
            a => a.clone(),
        };
        let step = history
            .scan_step(before, floor, anchors)
            .await
            .map_err(|e| StoreError::Internal(format!("history: {e}")))?;
        let mut matched = Vec::new();
        // One search judges at a time, giving way to other tasks every
        // [`frame::PARSE_TURN`] events: a step's few thousand events judged in one
        // go held an async thread for milliseconds, and ten searches at once
        // held both, which starved the live streams.
        let turn = JUDGING
            .acquire()
            .await
            .map_err(|e| StoreError::Internal(e.to_string()))?;
        for (i, (_, json)) in step.events.iter().enumerate() {
            if i % frame::PARSE_TURN == frame::PARSE_TURN - 1 {
                tokio::task::yield_now().await;
            }
            let Some(Incoming::Event(f)) = frame::parse(json) else {
                continue;
            };
            if f.rule_status().is_none() {
                continue;
            }
            if self.hides.hides_any(f.actors(), crate::hides::BLOCK_EITHER) {
                continue;
            }
            if self.want.judge(&f).is_some() {
                matched.push(f);
            }
        }
        drop(turn);
        let kept = self.sight.keep(matched).await?;
        Ok(Found {
            statuses: kept.into_iter().map(|f| (f.id, f)).collect(),
            cursor: step.cursor,
            done: step.done,
        })
    }
}
