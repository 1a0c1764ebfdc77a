//! A rule's syntax tree ([`Expr`]) and the bounds and error of the language.

use crate::geo::BBox;

/// Longest rule value, in characters.
pub const MAX_RULE_CHARS: usize = 1024;
/// Largest `point_radius`, in km (25 mi).
pub const MAX_RADIUS_KM: f64 = 40.2336;
/// Kilometres in a mile.
pub const KM_PER_MILE: f64 = 1.609344;

/// Why a rule value was refused: the column (from 1, in characters) where
/// the token at fault begins, and a sentence.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleError {
    /// From 1.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl RuleError {
    pub(crate) fn at(column: usize, message: impl Into<String>) -> RuleError {
        RuleError {
            column,
            message: message.into(),
        }
    }
}

/// A user named by a rule: a login (any case) or an id (all digits).
#[derive(Debug, Clone, PartialEq)]
pub enum UserRef {
    /// All digits: the id itself (it need not exist).
    Id(u64),
    /// A login, lowercased; resolved to an id when the rule is accepted.
    Login(String),
}

/// One operand of a rule.
#[derive(Debug, Clone, PartialEq)]
pub enum Term {
    /// A word (a `track` term): the word, `#word` or `@word` in the message.
    Word(String),
    /// Words that must occur consecutively and in order: an `"exact
    /// phrase"`, or a token with other characters (`e-mail`).
    Phrase(Vec<String>),
    /// `#tag`: among the status's hashtags (lowercased).
    Hashtag(String),
    /// `@login`: among the status's mentions (lowercased).
    Mention(String),
    /// `from:u`.
    From(UserRef),
    /// `to:u`: replies to a status of u.
    To(UserRef),
    /// `repost_of:u`.
    RepostOf(UserRef),
    /// `is:reply`.
    IsReply,
    /// `is:repost`.
    IsRepost,
    /// `has:geo`.
    HasGeo,
    /// `has:hashtags`.
    HasHashtags,
    /// `has:mentions`.
    HasMentions,
    /// `bounding_box:[w s e n]`.
    BoundingBox(BBox),
    /// `point_radius:[lon lat r]`, r in km.
    PointRadius {
        /// Longitude of the centre.
        lon: f64,
        /// Latitude of the centre.
        lat: f64,
        /// Radius, km.
        km: f64,
    },
    /// `sample:N`, N in 1..=100.
    Sample(u8),
}

impl Term {
    /// Whether the term can anchor a rule (it names something a status must
    /// hold that an index can look up).
    pub fn is_anchor(&self) -> bool {
        matches!(
            self,
            Term::Word(_)
                | Term::Phrase(_)
                | Term::Hashtag(_)
                | Term::Mention(_)
                | Term::From(_)
                | Term::To(_)
                | Term::RepostOf(_)
                | Term::BoundingBox(_)
                | Term::PointRadius { .. }
        )
    }
}

/// A parsed rule.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// Every part holds.
    And(Vec<Expr>),
    /// Some alternative holds.
    Or(Vec<Expr>),
    /// The operand does not hold.
    Not(Box<Expr>),
    /// An operand, with the column its token begins at.
    Term(Term, usize),
}

impl Expr {
    /// Whether the rule has an anchor: a term not under `-` that is one; a
    /// conjunction when one of its parts has; an `OR` when each
    /// alternative has.
    pub fn has_anchor(&self) -> bool {
        match self {
            Expr::Term(t, _) => t.is_anchor(),
            Expr::Not(_) => false,
            Expr::And(parts) => parts.iter().any(Expr::has_anchor),
            Expr::Or(alts) => alts.iter().all(Expr::has_anchor),
        }
    }

    /// Every user the rule names by login (lowercased), with the column of
    /// its token: to be resolved with [`Expr::resolve`].
    pub fn logins(&self) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        self.visit(&mut |t, col| match t {
            Term::From(UserRef::Login(l))
            | Term::To(UserRef::Login(l))
            | Term::RepostOf(UserRef::Login(l))
            | Term::Mention(l) => out.push((l.clone(), col)),
            _ => {}
        });
        out
    }

    /// Replaces logins of `from:`, `to:` and `repost_of:` with ids by
    /// `find`; an error at the first login that names no user (`@login`
    /// must name one too, and keeps matching by login).
    pub fn resolve(&mut self, find: &impl Fn(&str) -> Option<u64>) -> Result<(), RuleError> {
        match self {
            Expr::And(parts) | Expr::Or(parts) => {
                for p in parts {
                    p.resolve(find)?;
                }
                Ok(())
            }
            Expr::Not(inner) => inner.resolve(find),
            Expr::Term(term, col) => {
                let unknown = |l: &str| RuleError::at(*col, format!("no user has the login {l}"));
                match term {
                    Term::From(u) | Term::To(u) | Term::RepostOf(u) => {
                        if let UserRef::Login(l) = u {
                            *u = UserRef::Id(find(l).ok_or_else(|| unknown(l))?);
                        }
                        Ok(())
                    }
                    Term::Mention(l) => find(l).map(|_| ()).ok_or_else(|| unknown(l)),
                    _ => Ok(()),
                }
            }
        }
    }

    /// Replaces the logins of `from:`, `to:` and `repost_of:` that `find`
    /// knows with ids, leaving the others (which then match nothing): for
    /// rules accepted earlier whose users may since have gone.
    pub fn resolve_known(&mut self, find: &impl Fn(&str) -> Option<u64>) {
        match self {
            Expr::And(parts) | Expr::Or(parts) => {
                for p in parts {
                    p.resolve_known(find);
                }
            }
            Expr::Not(inner) => inner.resolve_known(find),
            Expr::Term(Term::From(u) | Term::To(u) | Term::RepostOf(u), _) => {
                if let UserRef::Login(l) = u {
                    if let Some(id) = find(l) {
                        *u = UserRef::Id(id);
                    }
                }
            }
            Expr::Term(..) => {}
        }
    }

    fn visit(&self, f: &mut impl FnMut(&Term, usize)) {
        match self {
            Expr::And(parts) | Expr::Or(parts) => parts.iter().for_each(|p| p.visit(f)),
            Expr::Not(inner) => inner.visit(f),
            Expr::Term(t, col) => f(t, *col),
        }
    }
}
