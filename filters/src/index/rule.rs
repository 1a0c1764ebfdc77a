//! What a subscription wants ([`Rule`]).

use crate::parse::FilterSpec;
use crate::sample;
use crate::view::Event;

/// What a subscription wants.
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    /// Every public event.
    Firehose,
    /// Public statuses (and their deletes) sampled at `rate` in (0, 1].
    Sample {
        /// Fraction of statuses wanted.
        rate: f64,
    },
    /// Public statuses matching the filter; deletes by followed users, and
    /// for a filter by `track` or `locations` every public delete (it
    /// cannot know which statuses it was sent, so it gets the deletes of
    /// all of them).
    Filter(FilterSpec),
    /// What the home timeline of `uid` gets (statuses by `uid` and by the
    /// users in `following`, private ones included), deletes of those, and
    /// follows of and by `uid`. `following` is kept current from the follow
    /// and unfollow events that pass through the index.
    User {
        /// The user whose stream this is.
        uid: u64,
        /// Whom the user follows when the subscription starts.
        following: Vec<u64>,
    },
}

impl Rule {
    /// Whether this rule alone wants `event`, as an [`Index`](super::Index) holding only
    /// it would route it: for one subscription's replay, where building an
    /// index would cost more than the check. A user rule follows the follow
    /// and unfollow events of its user, as the index does.
    pub fn matches(&mut self, event: &Event<'_>) -> bool {
        match self {
            Rule::Firehose => match *event {
                Event::Status(ref s) => !s.private,
                Event::Delete { private, .. } => !private,
                Event::Notice { public, .. } => public,
                Event::Follow { .. } | Event::Other => true,
            },
            Rule::Sample { rate } => {
                let t = sample::threshold(*rate);
                match *event {
                    Event::Status(ref s) => !s.private && sample::hit(s.id, t),
                    Event::Delete {
                        status_id, private, ..
                    } => !private && sample::hit(status_id, t),
                    _ => false,
                }
            }
            Rule::Filter(spec) => match *event {
                Event::Status(ref s) => spec.matches(s),
                Event::Delete { uid, private, .. } => {
                    !private && (spec.follow.contains(&uid) || spec.by_content())
                }
                _ => false,
            },
            Rule::User { uid, following } => {
                let home = |author: u64| author == *uid || following.contains(&author);
                match *event {
                    Event::Status(ref s) => {
                        !s.grouped && home(s.uid) && s.audience.is_none_or(home)
                    }
                    Event::Delete {
                        uid: author,
                        grouped,
                        ..
                    } => !grouped && home(author),
                    Event::Notice { uids, .. } => uids.contains(uid),
                    Event::Follow {
                        source,
                        target,
                        following: follows,
                    } => {
                        if source == *uid {
                            if follows {
                                if !following.contains(&target) {
                                    following.push(target);
                                }
                            } else if target != source {
                                following.retain(|f| *f != target);
                            }
                        }
                        source == *uid || target == *uid
                    }
                    Event::Other => false,
                }
            }
        }
    }
}
