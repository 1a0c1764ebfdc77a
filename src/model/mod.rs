//! The public JSON shapes of the contract: `user`, `status`, and the events
//! the streams carry ([`Event`]).
//!
//! One file a concern: [`timeline`] (caps and scores), [`clock`], [`user`],
//! [`status`], [`social`] (notifications, messages, groups, reports),
//! [`event`], and [`Id`], the one id type of them all.

mod clock;
mod event;
pub(crate) mod id;
mod social;
mod status;
mod timeline;
mod user;

pub use clock::now;
pub use event::{spread, Event};
pub use id::Id;
pub use social::{
    AuditAction, Conversation, Group, GroupChange, GroupKind, GroupRole, Membership, Message,
    Notification, Report,
};
pub use status::{Counts, Status, Version};
pub use timeline::{timeline_score, trims_homes, HOME_CAP, HOME_TRIM_EVERY};
pub use user::User;
