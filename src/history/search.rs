//! A rule over the history: the public statuses it matches, newest first,
//! judged as the reader may see them now, an edited status by its text now
//! (at its latest edit's event). The matching is the live search
//! stream's own (`Want::judge` with the rule as the subscription's one
//! rule), so a rule finds in the past what it would have delivered live;
//! blocks whose summary holds none of the rule's anchors are not read, and
//! in a block read, an event whose text holds none of them is not parsed
//! ([`Prefilter`]).

use super::History;
use crate::hides::Hides;
use crate::store::events::EventId;
use crate::store::{StoreError, StoreResult};
use crate::stream::frame::{self, Frame, Incoming};
use crate::stream::replay_sight::ReplaySight;
use crate::stream::rule_set::RuleSet;
use crate::stream::want::Want;
use aho_corasick::AhoCorasick;
use firehose_filters::rules::{anchors, Anchor, Expr};
use firehose_filters::{FilterSpec, Rule};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Searches judging events at once, over the process: the rest wait their
/// turn, so that searches take at most about one core from the streams.
static JUDGING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// Events judged between the turns a search gives other tasks (they come
/// parsed: judging one is the rule's match).
const JUDGE_TURN: usize = 4 * frame::PARSE_TURN;

/// One rule, ready to run over the history.
pub(crate) struct Search {
    want: Want,
    anchors: Option<Arc<Vec<Anchor>>>,
    prefilter: Prefilter,
    /// The reader's blocks, either way: what they hide is never found.
    hides: Arc<Hides>,
    sight: ReplaySight,
}

/// What one step of a search found.
pub(crate) struct Found {
    /// Matching statuses the reader may see now, newest first, with the
    /// ids of their events.
    pub statuses: Vec<(EventId, Arc<Frame>)>,
    /// Where the next step begins (events older than it).
    pub cursor: EventId,
    /// Nothing older is left to look at.
    pub done: bool,
    /// Stretches in the blocks read that were damaged: not looked at.
    pub damaged: Vec<super::Gap>,
}

impl Search {
    /// A search for `expr` (checked, logins resolved) by a reader whose
    /// sight judges what they may see now (public statuses only).
    pub(crate) fn new(expr: Expr, hides: Arc<Hides>, sight: ReplaySight) -> Search {
        let anchors = anchors(&expr).map(Arc::new);
        let set = RuleSet::new(vec![(expr, "0".to_string(), None)], None);
        Search {
            want: Want::rules(Rule::Filter(FilterSpec::default()), Arc::new(set)),
            prefilter: Prefilter::of(anchors.as_deref().map(Vec::as_slice)),
            anchors,
            hides,
            sight,
        }
    }

    /// Looks at the next stretch of the history older than `before` and
    /// newer than `floor`.
    pub(crate) async fn step(
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
                    damaged: Vec::new(),
                })
            }
            a => a.clone(),
        };
        // Events are parsed where their block is read, and only those the
        // prefilter lets by.
        let prefilter = self.prefilter.clone();
        let step = history
            .scan_step(before, floor, anchors, move |_, json| {
                if !prefilter.may_match(json) {
                    return None;
                }
                match frame::parse(json) {
                    Some(Incoming::Event(f)) if f.rule_status().is_some() => Some(f),
                    // An edit stands for the status as edited (its own id
                    // and time): a rule finds a status by its text now.
                    Some(Incoming::Event(f)) if f.is_update() => f
                        .update_views()
                        .map(|views| views.after.clone())
                        .filter(|after| after.rule_status().is_some()),
                    _ => None,
                }
            })
            .await
            .map_err(|e| StoreError::Internal(format!("history: {e}")))?;
        let mut matched = Vec::new();
        // One search judges at a time, giving way to other tasks every
        // [`JUDGE_TURN`] events: a step's few thousand events parsed and
        // judged in one go held an async thread for milliseconds, and ten
        // searches at once held both, which starved the live streams.
        let turn = JUDGING
            .acquire()
            .await
            .map_err(|e| StoreError::Internal(e.to_string()))?;
        for (i, f) in step.events.into_iter().enumerate() {
            if i % JUDGE_TURN == JUDGE_TURN - 1 {
                tokio::task::yield_now().await;
            }
            if self.hides.hides_any(f.actors(), crate::hides::BLOCK_EITHER) {
                continue;
            }
            if self.want.judge(&f).is_some() {
                matched.push(f);
            }
        }
        drop(turn);
        // A status edited since an event is found by its latest edit, the
        // one event that carries it as it reads now (the reader's sight
        // hands back any older one with the status as it is now, a later
        // `edited_at`): never twice, never by words it no longer holds.
        let judged: FxHashMap<EventId, Option<f64>> =
            matched.iter().map(|f| (f.id, edited_at(f))).collect();
        let kept = self.sight.keep(matched).await?;
        let current = kept
            .into_iter()
            .filter(|f| judged.get(&f.id).is_some_and(|at| *at == edited_at(f)));
        Ok(Found {
            statuses: current.map(|f| (f.id, f)).collect(),
            cursor: step.cursor,
            done: step.done,
            damaged: step.damaged,
        })
    }
}

/// When the status a `status` event carries was last edited, as it carries
/// it.
fn edited_at(f: &Frame) -> Option<f64> {
    match &f.event {
        crate::model::Event::Status { status, .. } => status.edited_at,
        _ => None,
    }
}

/// What an event's raw JSON must hold for the rule to match it: one of
/// the rule's anchors, when every anchor is a word (`#tag`, `@login` with
/// their sigil) of ASCII letters, digits and `_`. A status the rule matches
/// holds one of its anchors among its message's words (what block
/// summaries rely on too), and a word of the message is in the JSON as
/// written, in any case: letters are never escaped. The one non-ASCII
/// character whose lowercase is an ASCII letter alone is the Kelvin sign
/// (`K` lowercases to `k`), so a JSON holding one (or any `\u212…`
/// escape) is always parsed. (`İ` lowercases to `i` and a combining dot,
/// which no ASCII word holds.) A rule with any other anchor (authors,
/// places, non-ASCII words) has no prefilter.
#[derive(Clone)]
struct Prefilter(Option<AhoCorasick>);

impl Prefilter {
    fn of(anchors: Option<&[Anchor]>) -> Prefilter {
        let words: Option<Vec<&str>> = anchors.and_then(|anchors| {
            anchors
                .iter()
                .map(|a| match a {
                    Anchor::Word(w) if !w.is_empty() && w.is_ascii() => Some(w.as_str()),
                    _ => None,
                })
                .collect()
        });
        let built = words.filter(|w| !w.is_empty()).and_then(|words| {
            AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(words)
                .ok()
        });
        Prefilter(built)
    }

    /// Whether the rule may match the event whose JSON this is.
    fn may_match(&self, json: &str) -> bool {
        match &self.0 {
            None => true,
            Some(words) => {
                words.is_match(json) || json.contains('\u{212A}') || json.contains("\\u212")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefilter(rule: &str) -> Prefilter {
        let expr = firehose_filters::rules::check_rule(rule).expect("a valid rule");
        Prefilter::of(anchors(&expr).as_deref())
    }

    #[test]
    fn an_event_without_any_anchor_in_its_text_is_not_parsed() {
        let json = r#"{"type":"status","status":{"message":"Learning RUST today #Lang"}}"#;
        assert!(prefilter("rust").may_match(json), "any case");
        assert!(prefilter("#lang").may_match(json));
        assert!(prefilter("go OR rust").may_match(json));
        assert!(prefilter("\"learning rust\" -is:reply").may_match(json));
        assert!(!prefilter("python").may_match(json));
        assert!(!prefilter("python OR #go").may_match(json));
    }

    #[test]
    fn a_kelvin_sign_or_a_rule_with_other_anchors_is_always_parsed() {
        let kelvin = "{\"type\":\"status\",\"status\":{\"message\":\"\u{212A}ing\"}}";
        assert!(prefilter("king").may_match(kelvin), "K lowercases to k");
        let json = r#"{"type":"status","status":{"message":"nothing here"}}"#;
        assert!(
            prefilter("café").may_match(json),
            "a non-ASCII word: no prefilter"
        );
        assert!(prefilter("bounding_box:[0 0 1 1]").may_match(json));
        assert!(prefilter("rust OR bounding_box:[0 0 1 1]").may_match(json));
    }
}
