//! A subscription's filter rules (the contract's *Filter rules*): the
//! caller's persistent rules on a search stream, or the ad-hoc `rules=` of
//! a filter stream. Each rule is labelled `{id, tag}` for `matching_rules`;
//! the hub files the expressions in its rule index, a replay checks them
//! one by one (`want::Want::judge`).

use super::frame::Frame;
use crate::store::{Store, StoreResult};
use firehose_filters::rules::{check_rule, Expr, Prepared};
use firehose_filters::Rule;
use std::collections::HashMap;

/// Most ad-hoc rules one filter stream may carry.
pub(crate) const MAX_ADHOC_RULES: usize = 100;

/// Rules of one subscription, in order, each with its label.
#[derive(Debug, Default)]
pub struct RuleSet {
    exprs: Vec<Expr>,
    /// `{"id":…,"tag":…}` per rule.
    labels: Vec<String>,
    /// For a search stream: the owner's rules version this set was read
    /// at (the hub reloads it when a newer one is announced); `None` for
    /// ad-hoc rules, which never change.
    pub version: Option<u64>,
}

impl RuleSet {
    /// Rules given as (expression, id, tag).
    pub fn new(rules: Vec<(Expr, String, Option<String>)>, version: Option<u64>) -> RuleSet {
        let mut set = RuleSet {
            version,
            ..RuleSet::default()
        };
        for (expr, id, tag) in rules {
            set.labels
                .push(serde_json::json!({"id": id, "tag": tag}).to_string());
            set.exprs.push(expr);
        }
        set
    }

    /// The expressions, in order (their positions are what the hub's index
    /// files them under).
    pub fn exprs(&self) -> &[Expr] {
        &self.exprs
    }

    /// Whether it holds no rule.
    pub fn is_empty(&self) -> bool {
        self.exprs.is_empty()
    }

    /// The `matching_rules` array of the rules at these positions.
    pub fn matching_json(&self, positions: &[u32]) -> String {
        let mut out = String::from("[");
        for (i, p) in positions.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            if let Some(label) = self.labels.get(*p as usize) {
                out.push_str(label);
            }
        }
        out.push(']');
        out
    }

    /// The positions of the rules `frame` matches, checked one by one (a
    /// replay's path; the hub routes live events through its index).
    pub(crate) fn matching(&self, frame: &Frame) -> Vec<u32> {
        let Some(status) = frame.rule_status() else {
            return Vec::new();
        };
        let prepared = Prepared::new(&status);
        (0..self.exprs.len() as u32)
            .filter(|i| self.exprs[*i as usize].matches_prepared(&prepared))
            .collect()
    }
}

/// Whether a rule-carrying subscription's `Rule` holds a filter of its own
/// (follow, track, locations), which the main index routes.
pub(crate) fn filter_part(rule: &Rule) -> bool {
    matches!(rule, Rule::Filter(spec) if !spec.is_empty())
}

/// The caller's persistent rules, parsed, for a search stream: logins
/// resolved now (one that names no user any more matches nothing). A
/// stored value that no longer parses (none should) is skipped.
pub(crate) async fn load(store: &Store, uid: u64) -> StoreResult<RuleSet> {
    let (version, stored) = store.rules().versioned(uid).await?;
    let mut logins: HashMap<String, Option<u64>> = HashMap::new();
    let mut rules = Vec::with_capacity(stored.len());
    for rule in stored {
        let Ok(mut expr) = check_rule(&rule.value) else {
            continue;
        };
        for (login, _) in expr.logins() {
            if let std::collections::hash_map::Entry::Vacant(e) = logins.entry(login) {
                let id = store.users().lookup(e.key()).await?;
                e.insert(id);
            }
        }
        expr.resolve_known(&|l| logins.get(l).copied().flatten());
        rules.push((expr, rule.id.unwrap_or_default(), rule.tag));
    }
    Ok(RuleSet::new(rules, Some(version)))
}
