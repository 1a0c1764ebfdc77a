//! The shapes of the social surfaces beside statuses: notifications,
//! messages and conversations, groups, reports and the audit log.

use super::id::Id;
use serde::{Deserialize, Serialize};

use super::status::Status;
use super::user::User;

/// A notification, as its user reads it (`GET /api/v1/notifications`, the
/// `notification` event).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Notification {
    /// Notification id (time-ordered, as status ids are).
    #[schema(value_type = String)]
    pub id: Id,
    /// `follow`, `follow_request`, `like`, `repost`, `mention`, `reply`,
    /// `group_request` or `report_resolved`.
    #[serde(rename = "type")]
    pub kind: String,
    /// When it happened, seconds since the epoch.
    pub at: f64,
    /// Who did it.
    pub account: User,
    /// The status it is about (liked, reposted, mentioning or replying).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// For a `group_request`: the group asked to join.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub group_id: Option<Id>,
    /// For a `report_resolved`: the report (its `account` the admin who
    /// resolved it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub report_id: Option<Id>,
}

/// A message of a conversation (`direct_message` events carry it).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Message {
    /// Message id (time-ordered, as status ids are).
    #[schema(value_type = String)]
    pub id: Id,
    /// The conversation.
    #[schema(value_type = String)]
    pub conversation_id: Id,
    /// The sender.
    #[schema(value_type = String)]
    pub uid: Id,
    /// The sender's login when it was sent.
    pub login: String,
    /// 1-1000 characters.
    pub text: String,
    /// When it was sent, seconds since the epoch.
    pub sent: f64,
}

/// What kind of group it is: who may read it and who may post in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum GroupKind {
    /// Anyone reads it; members post.
    Public,
    /// Members read it and post; joining is asked and granted.
    Private,
    /// Anyone reads it; owners and moderators post.
    Announcement,
}

/// A member's role in a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum GroupRole {
    /// Runs the group: roles, removals, the group itself.
    Owner,
    /// Admits, refuses and removes members; posts in announcements.
    Moderator,
    /// A member.
    Member,
}

impl GroupKind {
    /// Every kind's name, as the API spells it.
    pub const NAMES: [&'static str; 3] = ["public", "private", "announcement"];

    /// The kind `name` spells.
    pub fn parse(name: &str) -> Option<GroupKind> {
        match name {
            "public" => Some(GroupKind::Public),
            "private" => Some(GroupKind::Private),
            "announcement" => Some(GroupKind::Announcement),
            _ => None,
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

impl GroupRole {
    /// Every role's name, as the API spells it.
    pub const NAMES: [&'static str; 3] = ["owner", "moderator", "member"];

    /// The role `name` spells.
    pub fn parse(name: &str) -> Option<GroupRole> {
        match name {
            "owner" => Some(GroupRole::Owner),
            "moderator" => Some(GroupRole::Moderator),
            "member" => Some(GroupRole::Member),
            _ => None,
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Whether it runs the group (owner or moderator).
    pub fn is_staff(self) -> bool {
        matches!(self, GroupRole::Owner | GroupRole::Moderator)
    }
}

/// A group as one user sees it.
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct Group {
    /// Group id.
    #[schema(value_type = String)]
    pub id: Id,
    /// 1-50 characters.
    pub name: String,
    /// At most 500 characters.
    pub description: String,
    /// `public`, `private` or `announcement`.
    #[schema(inline)]
    pub kind: GroupKind,
    /// How many members it has.
    pub members: u64,
    /// An owner's id (the creator while an owner).
    #[schema(value_type = Option<String>)]
    pub owner: Option<Id>,
    /// When it was created.
    pub created: f64,
    /// The caller's role (`owner`, `moderator`, `member`), or null.
    #[schema(inline)]
    pub role: Option<GroupRole>,
    /// Whether the caller's join request is pending.
    pub requested: bool,
}

/// A user's membership of a group.
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct Membership {
    /// The group.
    #[schema(value_type = String)]
    pub group_id: Id,
    /// The user.
    #[schema(value_type = String)]
    pub user_id: Id,
    /// Whether they are a member.
    pub member: bool,
    /// Their role, or null.
    #[schema(inline)]
    pub role: Option<GroupRole>,
    /// Whether their join request is pending.
    pub requested: bool,
}

/// A report of abuse or spam.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Report {
    /// Report id.
    #[schema(value_type = String)]
    pub id: Id,
    /// Who reported.
    #[schema(value_type = String)]
    pub reporter: Id,
    /// The user reported (for a status, its author).
    #[schema(value_type = String)]
    pub user_id: Id,
    /// The status reported; null for a user report.
    #[schema(value_type = Option<String>)]
    pub status_id: Option<Id>,
    /// `spam`, `abuse`, `illegal` or `other`.
    pub reason: String,
    /// The reporter's words, or null.
    pub comment: Option<String>,
    /// `open` or `resolved`.
    pub state: String,
    /// When it was filed.
    pub created: f64,
    /// The resolution's action (`none`, `remove_status`, `suspend_user`);
    /// null while open.
    pub action: Option<String>,
    /// The admin who resolved it; null while open.
    #[schema(value_type = Option<String>)]
    pub resolved_by: Option<Id>,
    /// When; null while open.
    pub resolved_at: Option<f64>,
    /// The admin's note, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One audit entry: a change an admin made.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct AuditAction {
    /// Entry id.
    #[schema(value_type = String)]
    pub id: Id,
    /// When.
    pub at: f64,
    /// The admin's user id.
    #[schema(value_type = String)]
    pub admin: Id,
    /// `dismiss_report`, `remove_status`, `suspend_user` or `unsuspend_user`.
    pub action: String,
    /// The status or user acted on.
    #[schema(value_type = String)]
    pub target: Id,
    /// The report it resolved, else null.
    #[schema(value_type = Option<String>)]
    pub report: Option<Id>,
}

/// A conversation as one participant sees it.
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct Conversation {
    /// Conversation id.
    #[schema(value_type = String)]
    pub id: Id,
    /// `direct` (a pair of users) or `group`.
    pub kind: String,
    /// A group's title; null for a direct conversation.
    pub title: Option<String>,
    /// Everyone in it now, the caller included.
    pub participants: Vec<User>,
    /// When it was started.
    pub created: f64,
    /// When its newest message was sent.
    pub updated: f64,
    /// Its newest message.
    pub last_message: Option<Message>,
    /// Messages by others after the caller's last read.
    pub unread: u64,
}

/// A change of membership, as `group_member.lua` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupChange {
    /// The actor joins (or asks to, for a private group).
    Join,
    /// The actor leaves (or cancels a request).
    Leave,
    /// The actor (owner, moderator) adds the target.
    Add,
    /// The actor (owner, moderator) accepts the target's request.
    Authorize,
    /// The actor (owner, moderator) refuses the target's request.
    Reject,
    /// The actor (owner) gives the target a role.
    Role(GroupRole),
    /// The actor removes the target (owners anyone, moderators members).
    Remove,
    /// The actor's account is deleted: out of the group whatever their
    /// role (the longest-standing other member becomes an owner when the
    /// last owner goes).
    Purge,
}

impl GroupChange {
    pub(crate) fn name(self) -> &'static str {
        match self {
            GroupChange::Join => "join",
            GroupChange::Leave => "leave",
            GroupChange::Add => "add",
            GroupChange::Authorize => "authorize",
            GroupChange::Reject => "reject",
            GroupChange::Role(_) => "role",
            GroupChange::Remove => "remove",
            GroupChange::Purge => "purge",
        }
    }

    /// Whether it can make the target a member.
    pub(crate) fn admits(self) -> bool {
        matches!(
            self,
            GroupChange::Join | GroupChange::Add | GroupChange::Authorize
        )
    }
}
