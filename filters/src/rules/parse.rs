//! The rule grammar: tokens with their columns, then OR of ANDs of
//! (negated) operands and parenthesised groups.

use super::expr::{Expr, RuleError, Term, UserRef, KM_PER_MILE, MAX_RADIUS_KM};
use crate::geo::BBox;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Open,
    Close,
    Or,
    /// `-`, and whether something is written right after it.
    Minus(bool),
    Term(Term),
}

/// Whether a character is part of a word (`track`'s words).
pub(crate) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The words of a text, lowercased, in order.
pub(crate) fn words_of(text: &str) -> Vec<String> {
    word_slices(text).map(str::to_lowercase).collect()
}

/// The runs of word characters of `text`, as written.
pub(crate) fn word_slices(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !is_word_char(c))
        .filter(|w| !w.is_empty())
}

/// Parses a rule value (no length or anchor check: see
/// [`super::check_rule`]).
pub fn parse_rule(value: &str) -> Result<Expr, RuleError> {
    let toks = tokens(value)?;
    if toks.is_empty() {
        return Err(RuleError::at(1, "the rule is empty"));
    }
    let mut p = Parser { toks, at: 0 };
    let expr = p.or()?;
    if let Some((_, col)) = p.toks.get(p.at) {
        return Err(RuleError::at(*col, "a ) with no ( before it"));
    }
    Ok(expr)
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&(Tok, usize)> {
        self.toks.get(self.at)
    }

    fn or(&mut self) -> Result<Expr, RuleError> {
        let mut alts = Vec::new();
        loop {
            match self.peek() {
                Some((Tok::Or, col)) => {
                    return Err(RuleError::at(*col, "OR needs an operand on each side"));
                }
                Some((Tok::Close, col)) => return Err(RuleError::at(*col, "( ) holds nothing")),
                None => {
                    let col = self.toks.last().map_or(1, |(_, c)| *c);
                    return Err(RuleError::at(col, "OR needs an operand on each side"));
                }
                _ => {}
            }
            alts.push(self.and()?);
            match self.peek() {
                Some((Tok::Or, col)) => {
                    let col = *col;
                    self.at += 1;
                    if matches!(self.peek(), None | Some((Tok::Or | Tok::Close, _))) {
                        return Err(RuleError::at(col, "OR needs an operand on each side"));
                    }
                }
                _ => break,
            }
        }
        Ok(if alts.len() == 1 {
            alts.pop().unwrap_or(Expr::And(Vec::new()))
        } else {
            Expr::Or(alts)
        })
    }

    fn and(&mut self) -> Result<Expr, RuleError> {
        let mut parts = Vec::new();
        while let Some((tok, _)) = self.peek() {
            if matches!(tok, Tok::Or | Tok::Close) {
                break;
            }
            parts.push(self.unary()?);
        }
        Ok(if parts.len() == 1 {
            parts.pop().unwrap_or(Expr::And(Vec::new()))
        } else {
            Expr::And(parts)
        })
    }

    fn unary(&mut self) -> Result<Expr, RuleError> {
        if let Some((Tok::Minus(attached), col)) = self.peek() {
            let (attached, col) = (*attached, *col);
            self.at += 1;
            return match self.peek() {
                Some((Tok::Open | Tok::Term(_), _)) if attached => {
                    Ok(Expr::Not(Box::new(self.primary()?)))
                }
                _ => Err(RuleError::at(
                    col,
                    "- must be written right before an operator, a phrase or a ( group",
                )),
            };
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, RuleError> {
        let Some((tok, col)) = self.toks.get(self.at).cloned() else {
            return Err(RuleError::at(1, "the rule ends too early"));
        };
        self.at += 1;
        match tok {
            Tok::Term(t) => Ok(Expr::Term(t, col)),
            Tok::Open => {
                if let Some((Tok::Close, _)) = self.peek() {
                    return Err(RuleError::at(col, "( ) holds nothing"));
                }
                let inner = self.or()?;
                match self.peek() {
                    Some((Tok::Close, _)) => {
                        self.at += 1;
                        Ok(inner)
                    }
                    _ => Err(RuleError::at(col, "this ( is never closed")),
                }
            }
            Tok::Close => Err(RuleError::at(col, "a ) with no ( before it")),
            Tok::Or => Err(RuleError::at(col, "OR needs an operand on each side")),
            Tok::Minus(_) => Err(RuleError::at(col, "- needs an operand")),
        }
    }
}

/// The tokens of a value, each with the column (from 1) it begins at.
fn tokens(value: &str) -> Result<Vec<(Tok, usize)>, RuleError> {
    let chars: Vec<char> = value.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let col = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        match c {
            '(' => {
                out.push((Tok::Open, col));
                i += 1;
            }
            ')' => {
                out.push((Tok::Close, col));
                i += 1;
            }
            '"' => {
                let Some(len) = chars[i + 1..].iter().position(|c| *c == '"') else {
                    return Err(RuleError::at(col, "this \" is never closed"));
                };
                let text: String = chars[i + 1..i + 1 + len].iter().collect();
                let words = words_of(&text);
                if words.is_empty() {
                    return Err(RuleError::at(col, "a phrase must hold a word"));
                }
                out.push((Tok::Term(Term::Phrase(words)), col));
                i += len + 2;
            }
            '-' => {
                // The parser refuses a `-` with nothing right after it, or
                // followed by something it cannot negate, at the `-`.
                let attached = chars
                    .get(i + 1)
                    .is_some_and(|n| !n.is_whitespace() && *n != ')');
                out.push((Tok::Minus(attached), col));
                i += 1;
            }
            _ => {
                let start = i;
                while i < chars.len() {
                    let c = chars[i];
                    if c.is_whitespace() || c == '(' || c == ')' || c == '"' {
                        break;
                    }
                    if c == '[' {
                        match chars[i..].iter().position(|c| *c == ']') {
                            Some(len) => i += len + 1,
                            None => return Err(RuleError::at(col, "this [ is never closed")),
                        }
                        continue;
                    }
                    i += 1;
                }
                let text: String = chars[start..i].iter().collect();
                if text == "OR" {
                    out.push((Tok::Or, col));
                } else {
                    out.push((Tok::Term(term(&text, col)?), col));
                }
            }
        }
    }
    Ok(out)
}

/// A login as the sign-up rules have it (1-30 of `[A-Za-z0-9_]`).
fn is_login(s: &str) -> bool {
    !s.is_empty() && s.len() <= 30 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// One bare token: a `#tag`, an `@login`, an operator, or words.
fn term(text: &str, col: usize) -> Result<Term, RuleError> {
    if let Some(tag) = text.strip_prefix('#') {
        if tag.is_empty() || !tag.chars().all(is_word_char) {
            return Err(RuleError::at(col, format!("{text} is not a hashtag")));
        }
        return Ok(Term::Hashtag(tag.to_lowercase()));
    }
    if let Some(login) = text.strip_prefix('@') {
        if !is_login(login) {
            return Err(RuleError::at(col, format!("{text} is not an @login")));
        }
        return Ok(Term::Mention(login.to_lowercase()));
    }
    if let Some((name, value)) = text.split_once(':') {
        if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphabetic() || c == '_') {
            return operator(&name.to_ascii_lowercase(), value, col);
        }
    }
    let words = words_of(text);
    match words.len() {
        0 => Err(RuleError::at(col, format!("{text} holds no word"))),
        1 => Ok(Term::Word(words.into_iter().next().unwrap_or_default())),
        _ => Ok(Term::Phrase(words)),
    }
}

fn user(value: &str, name: &str, col: usize) -> Result<UserRef, RuleError> {
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return value
            .parse()
            .map(UserRef::Id)
            .map_err(|_| RuleError::at(col, format!("{name}: takes a user id or a login")));
    }
    if is_login(value) {
        return Ok(UserRef::Login(value.to_lowercase()));
    }
    Err(RuleError::at(
        col,
        format!("{name}: takes a user id or a login"),
    ))
}

/// The numbers inside `[...]`.
fn bracket<'a>(value: &'a str, name: &str, col: usize) -> Result<Vec<&'a str>, RuleError> {
    let inner = value
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .ok_or_else(|| RuleError::at(col, format!("{name}: takes its values in [ ]")))?;
    Ok(inner.split_whitespace().collect())
}

fn number(s: &str, name: &str, col: usize) -> Result<f64, RuleError> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| RuleError::at(col, format!("{name}: {s} is not a number")))
}

fn operator(name: &str, value: &str, col: usize) -> Result<Term, RuleError> {
    let bad = |what: &str| RuleError::at(col, format!("{name}: {what}"));
    match name {
        "from" => Ok(Term::From(user(value, name, col)?)),
        "to" => Ok(Term::To(user(value, name, col)?)),
        "repost_of" => Ok(Term::RepostOf(user(value, name, col)?)),
        "is" => match value.to_ascii_lowercase().as_str() {
            "reply" => Ok(Term::IsReply),
            "repost" => Ok(Term::IsRepost),
            _ => Err(bad("takes reply or repost")),
        },
        "has" => match value.to_ascii_lowercase().as_str() {
            "geo" => Ok(Term::HasGeo),
            "hashtags" => Ok(Term::HasHashtags),
            "mentions" => Ok(Term::HasMentions),
            _ => Err(bad("takes geo, hashtags or mentions")),
        },
        "sample" => match value.parse::<u8>() {
            Ok(n @ 1..=100) => Ok(Term::Sample(n)),
            _ => Err(bad("takes a whole number from 1 to 100")),
        },
        "bounding_box" => {
            let parts = bracket(value, name, col)?;
            let [w, s, e, n] = parts.as_slice() else {
                return Err(bad("takes four numbers: [west south east north]"));
            };
            let [w, s, e, n] = [w, s, e, n].map(|v| number(v, name, col));
            BBox::new(w?, s?, e?, n?)
                .map(Term::BoundingBox)
                .map_err(|e| bad(&e))
        }
        "point_radius" => {
            let parts = bracket(value, name, col)?;
            let [lon, lat, r] = parts.as_slice() else {
                return Err(bad("takes [longitude latitude radius]"));
            };
            let (lon, lat) = (number(lon, name, col)?, number(lat, name, col)?);
            if !(-180.0..=180.0).contains(&lon) || !(-90.0..=90.0).contains(&lat) {
                return Err(bad("the centre must be a longitude and a latitude"));
            }
            let km = if let Some(v) = r.strip_suffix("km") {
                number(v, name, col)?
            } else if let Some(v) = r.strip_suffix("mi") {
                number(v, name, col)? * KM_PER_MILE
            } else {
                return Err(bad("the radius needs km or mi"));
            };
            if km <= 0.0 || km > MAX_RADIUS_KM + 1e-9 {
                return Err(bad(
                    "the radius is more than 0 and at most 25mi (40.2336km)",
                ));
            }
            Ok(Term::PointRadius { lon, lat, km })
        }
        _ => Err(RuleError::at(col, format!("{name}: is not an operator"))),
    }
}
