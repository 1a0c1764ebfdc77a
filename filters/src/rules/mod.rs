//! Filter rules: X API v2's filtered-stream language plus v1.1's location
//! boxes (the contract's *Filter rules*): parsed into an [`Expr`] with the
//! column of every token, checked for an anchor, and evaluated against a
//! [`RuleStatus`] directly ([`Expr::matches`], the reference the compiled
//! index is checked against).

mod eval;
mod expr;
mod index;
mod parse;
#[cfg(test)]
mod tests;

pub use eval::{distance_km, Prepared, RuleStatus};
pub use expr::{Expr, RuleError, Term, UserRef, KM_PER_MILE, MAX_RADIUS_KM, MAX_RULE_CHARS};
pub use index::{anchors, Anchor, RuleIndex};
pub use parse::parse_rule;

/// Parses and checks one rule value: the expression, or the error the
/// contract describes (column 1 for a rule without anchor, 1,025 for one
/// too long).
pub fn check_rule(value: &str) -> Result<Expr, RuleError> {
    let n = value.chars().count();
    if n > MAX_RULE_CHARS {
        return Err(RuleError::at(
            MAX_RULE_CHARS + 1,
            format!("a rule is at most {MAX_RULE_CHARS} characters"),
        ));
    }
    let expr = parse_rule(value)?;
    if !expr.has_anchor() {
        return Err(RuleError::at(
            1,
            "the rule needs an anchor: a word, phrase, #tag, @login, from:, to:, repost_of:, bounding_box: or point_radius: that is not negated (in every alternative of an OR)",
        ));
    }
    Ok(expr)
}
