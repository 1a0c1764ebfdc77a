//! Rule items as clients send them: `{value, tag?}` (or, in ad-hoc
//! `rules`, a bare string), each parsed and checked by
//! `firehose_filters::rules` (errors name the item and the column) with
//! the logins it names resolved. Shared by the rules endpoint and the
//! filter stream's ad-hoc rules.

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use firehose_filters::rules::{check_rule, Expr};
use serde_json::Value;
use std::collections::HashMap;

/// Longest tag, in characters.
pub(crate) const MAX_TAG_CHARS: usize = 128;

/// One item accepted.
pub(crate) struct CheckedRule {
    /// As sent.
    pub value: String,
    /// As sent, or `None`.
    pub tag: Option<String>,
    /// Parsed, logins resolved.
    pub expr: Expr,
}

/// An invalid rule, in the contract's shape: `field` names where it was
/// sent (`rule` for the rules endpoint's `add`, `rules` for ad-hoc ones).
pub(crate) fn invalid(field: &str, index: usize, column: Option<usize>, message: &str) -> ApiError {
    let place = if field == "rules" {
        format!("rules item {index}")
    } else {
        format!("rule {index}")
    };
    let text = match column {
        Some(c) => format!("{place}, column {c}: {message}"),
        None => format!("{place}: {message}"),
    };
    let mut e = ApiError::invalid("invalid_rule", text).with("rule", index);
    if let Some(c) = column {
        e = e.with("column", c);
    }
    e
}

/// Checks every item (all or nothing); `bare`: a string item is a value
/// without tag.
pub(crate) async fn check_items(
    state: &AppState,
    field: &str,
    items: &[Value],
    bare: bool,
) -> ApiResult<Vec<CheckedRule>> {
    let mut checked = Vec::with_capacity(items.len());
    let mut known: HashMap<String, Option<u64>> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let (value, tag) = match item {
            Value::String(v) if bare => (v.as_str(), None),
            Value::Object(o) => {
                let Some(value) = o.get("value").and_then(Value::as_str) else {
                    return Err(invalid(field, i, None, "each rule needs a value, a string"));
                };
                let tag = match o.get("tag") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(t)) if t.chars().count() <= MAX_TAG_CHARS => Some(t.clone()),
                    Some(_) => {
                        return Err(invalid(
                            field,
                            i,
                            None,
                            &format!("tag must be a string of at most {MAX_TAG_CHARS} characters"),
                        ))
                    }
                };
                (value, tag)
            }
            _ => {
                let shape = if bare {
                    "each rule is {\"value\", \"tag\"} or a string"
                } else {
                    "each rule is {\"value\", \"tag\"}"
                };
                return Err(invalid(field, i, None, shape));
            }
        };
        let mut expr =
            check_rule(value).map_err(|e| invalid(field, i, Some(e.column), &e.message))?;
        // Logins must name users (resolved once, now).
        for (login, _) in expr.logins() {
            if let std::collections::hash_map::Entry::Vacant(e) = known.entry(login) {
                let id = state.store.users().lookup(e.key()).await?;
                e.insert(id);
            }
        }
        expr.resolve(&|l| known.get(l).copied().flatten())
            .map_err(|e| invalid(field, i, Some(e.column), &e.message))?;
        checked.push(CheckedRule {
            value: value.to_string(),
            tag,
            expr,
        });
    }
    Ok(checked)
}
