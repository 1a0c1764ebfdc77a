//! The store's surface on one page: every view of the handle, each a
//! `Copy` value holding `&Store` (`store.users().get(uid)`) whose methods
//! live in its own part's files. Views reached through another are named
//! beside it. `tests/layout.rs` keeps `impl Store` to this file and
//! [`handle`](crate::store::handle), under 30 methods.

use crate::store::chains::finish::Outbox;
use crate::store::entities::bookmarks::Bookmarks;
use crate::store::entities::conversations::Conversations;
use crate::store::entities::demo::Demo;
use crate::store::entities::follows::Follows;
use crate::store::entities::groups::Groups;
use crate::store::entities::likes::{Likes, Reposts};
use crate::store::entities::lists::Lists;
use crate::store::entities::moderation::Moderation;
use crate::store::entities::notifications::Notifications;
use crate::store::entities::relations::Relations;
use crate::store::entities::rules::Rules;
use crate::store::entities::sessions::Sessions;
use crate::store::entities::statuses::Statuses;
use crate::store::entities::users::Users;
use crate::store::events::Events;
use crate::store::fanout::Fanout;
use crate::store::handle::Store;
use crate::store::server::Server;
use crate::store::writes::next_ids::Mint;

impl Store {
    /// Users: accounts, names and settings, a user's own profile
    /// (`change`), their lists for the export.
    pub fn users(&self) -> Users<'_> {
        Users { store: self }
    }

    /// Sessions and their tokens, OAuth codes, the JWT secret; the
    /// stream slots they hold (`stream_leases()`).
    pub fn sessions(&self) -> Sessions<'_> {
        Sessions { store: self }
    }

    /// Statuses: posting, reading, deleting, editing (`edit`, `versions`),
    /// replies below one (`descendants`), ranked pages, trending hashtags.
    pub fn statuses(&self) -> Statuses<'_> {
        Statuses { store: self }
    }

    /// Who follows whom; follow requests to private accounts (`requests()`).
    pub fn follows(&self) -> Follows<'_> {
        Follows { store: self }
    }

    /// Blocks and mutes.
    pub fn relations(&self) -> Relations<'_> {
        Relations { store: self }
    }

    /// Likes of statuses.
    pub fn likes(&self) -> Likes<'_> {
        Likes { store: self }
    }

    /// Reposts of statuses.
    pub fn reposts(&self) -> Reposts<'_> {
        Reposts { store: self }
    }

    /// A user's bookmarks.
    pub fn bookmarks(&self) -> Bookmarks<'_> {
        Bookmarks { store: self }
    }

    /// Lists of accounts and their timelines.
    pub fn lists(&self) -> Lists<'_> {
        Lists { store: self }
    }

    /// Notifications and their read markers.
    pub fn notifications(&self) -> Notifications<'_> {
        Notifications { store: self }
    }

    /// Conversations, their messages, and who may write to whom
    /// (`opening`, `open`, `may_send`).
    pub fn conversations(&self) -> Conversations<'_> {
        Conversations { store: self }
    }

    /// Groups, their members and statuses.
    pub fn groups(&self) -> Groups<'_> {
        Groups { store: self }
    }

    /// Reports, suspensions, the audit log; the suspended users this
    /// process knows of (`suspended()`).
    pub fn moderation(&self) -> Moderation<'_> {
        Moderation { store: self }
    }

    /// Users' stream filter rules.
    pub fn rules(&self) -> Rules<'_> {
        Rules { store: self }
    }

    /// The demo world's record (`serve --demo`).
    pub fn demo(&self) -> Demo<'_> {
        Demo { store: self }
    }

    /// The event log: emitting outside the outbox, its reads and live
    /// subscription, the nodes' clocks (`clocks()`), the zstd dictionaries
    /// trained on its frames (`zstd_dicts()`).
    pub fn events(&self) -> Events<'_> {
        Events { store: self }
    }

    /// The op log of multi-step writes: recording an op, finishing and
    /// claiming its entry.
    pub fn outbox(&self) -> Outbox<'_> {
        Outbox { store: self }
    }

    /// The durable fan-out queues and their workers' hints (`hints()`).
    pub fn fanout(&self) -> Fanout<'_> {
        Fanout { store: self }
    }

    /// The Redis server's own commands (PING, CONFIG GET, INFO) and the
    /// replicas' confirmation of writes.
    pub fn server(&self) -> Server<'_> {
        Server { store: self }
    }

    /// Fresh ids: statuses, conversations, lists, reports, sessions.
    pub fn mint(&self) -> Mint<'_> {
        Mint { store: self }
    }
}
