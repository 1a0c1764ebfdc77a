//! Who may see what, now: the one judgement of a status's visibility that
//! the read paths ([`http::shared::visibility`](crate::http::shared::visibility)) and the stream replays
//! ([`stream::replay_sight`](crate::stream::replay_sight)) apply, with the reader's present relations.
//!
//! A status is visible to a reader when it still exists (not deleted, not
//! being deleted), its author's account exists and is not suspended, the
//! author does not block the reader, and the author is public, is the
//! reader, or (on a path that shows followers' private statuses) is
//! followed by the reader; a repost also needs the reposted author to pass
//! the same test; a reply to a private account's status (its `audience`)
//! needs that account to pass it, and a reply to an account made private
//! since needs the reader to be allowed its private statuses (its author
//! reads it on paths that show followers' statuses); a private group's
//! status needs the reader to be a member now. Live routing applies the same rules from what each
//! hub holds in memory (the `private` flag events carry, followed sets,
//! relations, the suspended set, group membership); a replay and a read
//! cannot use those copies, since the event or the timeline entry may be
//! older than the change, so they ask here.
//!
//! A [`Sight`] remembers each answer for its life (one request, or one
//! replay, which trims it between pages: [`Sight::trim`]), so a page of a thousand statuses by a few authors costs a few
//! reads, and [`Sight::prefetch`] reads what a page needs in one pipeline.

use crate::hides::{self, Hides};
use crate::model::GroupKind;
use crate::model::Id;
use crate::model::{Status, User};
use crate::store::entities::statuses::StatusNow;
use crate::store::{Store, StoreError, StoreResult};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// The answers of each kind a [`Sight`] remembers across a replay's pages
/// before [`Sight::trim`] forgets them: 65,536 accounts at ~40 bytes each
/// (with the map's overhead), about 3 MiB per replaying reader at most.
pub(crate) const SIGHT_CAP: usize = 65_536;

/// What a path shows of private accounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Public statuses only, even to a follower of a private account
    /// (firehose, sample, filter and search streams).
    Public,
    /// Also the private statuses of accounts the reader follows (read
    /// paths, the user stream).
    Followers,
}

/// One reader's judgement of visibility, with what it has read so far.
pub(crate) struct Sight {
    store: Store,
    viewer: Option<u64>,
    relations: Arc<Hides>,
    reach: Reach,
    /// Account -> whether it is private (`None`: deleted, being deleted or
    /// suspended).
    accounts: FxHashMap<u64, Option<bool>>,
    /// Private account -> whether the reader follows it.
    follows: FxHashMap<u64, bool>,
    /// Status -> whether it still exists (and when it was last edited).
    statuses: FxHashMap<u64, Option<StatusNow>>,
    /// Private group -> whether the reader is a member.
    groups: FxHashMap<u64, bool>,
    /// Group -> whether the reader may read it.
    readable_groups: FxHashMap<u64, bool>,
    /// Conversation -> whether the reader is a participant.
    conversations: FxHashMap<u64, bool>,
}

impl Sight {
    /// A judgement for `viewer` (none: an anonymous reader) whose relations
    /// are `relations`, on a path of `reach`.
    pub(crate) fn new(
        store: Store,
        viewer: Option<u64>,
        relations: Arc<Hides>,
        reach: Reach,
    ) -> Sight {
        Sight {
            store,
            viewer,
            relations,
            reach,
            accounts: FxHashMap::default(),
            follows: FxHashMap::default(),
            statuses: FxHashMap::default(),
            groups: FxHashMap::default(),
            readable_groups: FxHashMap::default(),
            conversations: FxHashMap::default(),
        }
    }

    /// [`Sight::new`] with the viewer's relations read now.
    pub(crate) async fn of(store: Store, viewer: Option<u64>, reach: Reach) -> StoreResult<Sight> {
        let relations = match viewer {
            Some(v) => Arc::new(store.relations().hides(v).await?),
            None => Arc::default(),
        };
        Ok(Sight::new(store, viewer, relations, reach))
    }

    /// The reader's relations.
    pub(crate) fn relations(&self) -> &Hides {
        &self.relations
    }

    /// The store it reads.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// Reads in one pipeline each what judging these statuses and authors
    /// will ask (the statuses' existence, the accounts) and is not known
    /// yet.
    pub(crate) async fn prefetch(&mut self, statuses: &[u64], authors: &[u64]) -> StoreResult<()> {
        let mut sids: Vec<u64> = statuses
            .iter()
            .copied()
            .filter(|s| !self.statuses.contains_key(s))
            .collect();
        sids.sort_unstable();
        sids.dedup();
        if !sids.is_empty() {
            let now = self.store.statuses().current(&sids).await?;
            self.statuses.extend(sids.into_iter().zip(now));
        }
        let mut uids: Vec<u64> = authors
            .iter()
            .copied()
            .filter(|u| *u != 0 && !self.accounts.contains_key(u))
            .collect();
        uids.sort_unstable();
        uids.dedup();
        if !uids.is_empty() {
            for uid in &uids {
                self.accounts.insert(*uid, None);
            }
            for user in self.store.users().many(&uids).await? {
                self.accounts.insert(user.id.get(), Some(user.private));
            }
        }
        Ok(())
    }

    /// Remembers an account already read (a path that read the author
    /// anyway).
    pub(crate) fn know(&mut self, user: &User) {
        self.accounts.insert(user.id.get(), Some(user.private));
    }

    /// Whether status `sid` still exists.
    pub(crate) async fn alive(&mut self, sid: u64) -> StoreResult<bool> {
        if let Some(now) = self.statuses.get(&sid) {
            return Ok(now.is_some());
        }
        self.prefetch(&[sid], &[]).await?;
        Ok(self.statuses.get(&sid).is_some_and(Option::is_some))
    }

    /// What was read of status `sid` (by [`Sight::prefetch`] or
    /// [`Sight::alive`]): `None` if nothing yet, `Some(None)` if it no
    /// longer exists.
    pub(crate) fn status_now(&self, sid: u64) -> Option<Option<StatusNow>> {
        self.statuses.get(&sid).copied()
    }

    /// Forgets the statuses read so far, and the accounts, follows, groups
    /// and conversations too once any of them holds [`SIGHT_CAP`] answers:
    /// a replay calls it between pages, so that what it remembers is
    /// bounded however long it runs (a status is seldom asked of twice
    /// across pages; an author often is).
    pub(crate) fn trim(&mut self) {
        self.statuses.clear();
        let held = [
            self.accounts.len(),
            self.follows.len(),
            self.groups.len(),
            self.readable_groups.len(),
            self.conversations.len(),
        ];
        if held.into_iter().any(|n| n >= SIGHT_CAP) {
            self.accounts.clear();
            self.follows.clear();
            self.groups.clear();
            self.readable_groups.clear();
            self.conversations.clear();
        }
    }

    /// Whether the reader may see what `author` posts: the account exists
    /// and is not suspended, does not block the reader, and is public, the
    /// reader, or a private account the reader follows (on a path of
    /// [`Reach::Followers`]).
    pub(crate) async fn author(&mut self, author: u64) -> StoreResult<bool> {
        if self.store.moderation().suspended().contains(author) {
            return Ok(false);
        }
        if self.viewer == Some(author) {
            return Ok(self.account(author).await?.is_some());
        }
        if self.relations.bits(author) & hides::UNSEEABLE != 0 {
            return Ok(false);
        }
        match self.account(author).await? {
            None => Ok(false),
            Some(false) => Ok(true),
            Some(true) => Ok(self.reach == Reach::Followers && self.follows(author).await?),
        }
    }

    /// Whether the reader may see `status` as far as its people and group
    /// go (its existence aside: a status read from Redis just now exists).
    pub(crate) async fn status(&mut self, status: &Status) -> StoreResult<bool> {
        let author: u64 = status.uid.get();
        if !self.author(author).await? {
            return Ok(false);
        }
        if let Some(original) = status.repost_of_uid.map(Id::get) {
            if !self.author(original).await? {
                return Ok(false);
            }
        }
        // Its author reads their own reply wherever followers' statuses
        // show, whoever its audience is.
        let own = self.viewer == Some(author) && self.reach == Reach::Followers;
        if let Some(parent) = status.audience.map(Id::get).filter(|_| !own) {
            if !self.author(parent).await? {
                return Ok(false);
            }
        }
        // A reply is for whom its parent's author is for now: one to an
        // account made private since is hidden as if posted after.
        if let Some(parent) = status.reply_to_uid.map(Id::get).filter(|_| !own) {
            if parent != author && !self.private_allows(parent).await? {
                return Ok(false);
            }
        }
        if status.group_private {
            let gid = status.group_id.map(Id::get).unwrap_or(0);
            if self.reach == Reach::Public || !self.member(gid).await? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether the reader may see what a private `account` is for: true
    /// for a public (or gone) account, the reader themself, and on a path
    /// of [`Reach::Followers`] an approved follower.
    async fn private_allows(&mut self, account: u64) -> StoreResult<bool> {
        if self.viewer == Some(account) {
            return Ok(true);
        }
        match self.account(account).await? {
            Some(true) => Ok(self.reach == Reach::Followers && self.follows(account).await?),
            _ => Ok(true),
        }
    }

    /// Whether the reader is (still) a member of private group `gid`.
    pub(crate) async fn member(&mut self, gid: u64) -> StoreResult<bool> {
        let Some(viewer) = self.viewer else {
            return Ok(false);
        };
        if let Some(member) = self.groups.get(&gid) {
            return Ok(*member);
        }
        let member = self
            .store
            .groups()
            .standing(gid, viewer)
            .await?
            .is_some_and(|s| s.role.is_some());
        self.groups.insert(gid, member);
        Ok(member)
    }

    /// Whether the reader may read group `gid`'s statuses now: any public
    /// or announcement group's, a private one's while a member.
    pub(crate) async fn reads_group(&mut self, gid: u64) -> StoreResult<bool> {
        if let Some(reads) = self.readable_groups.get(&gid) {
            return Ok(*reads);
        }
        let reads = match self.store.groups().get(gid, self.viewer).await {
            Ok(g) => {
                g.kind != GroupKind::Private || (self.reach == Reach::Followers && g.role.is_some())
            }
            Err(StoreError::NotFound(_)) => false,
            Err(e) => return Err(e),
        };
        self.readable_groups.insert(gid, reads);
        Ok(reads)
    }

    /// Whether the reader is (still) a participant of conversation `cid`.
    pub(crate) async fn participant(&mut self, cid: u64) -> StoreResult<bool> {
        let Some(viewer) = self.viewer else {
            return Ok(false);
        };
        if let Some(member) = self.conversations.get(&cid) {
            return Ok(*member);
        }
        let member = self
            .store
            .conversations()
            .members(cid)
            .await?
            .is_some_and(|members| members.contains(&viewer));
        self.conversations.insert(cid, member);
        Ok(member)
    }

    /// Whether the account exists (not deleted, being deleted or
    /// suspended), and if so whether it is private.
    async fn account(&mut self, uid: u64) -> StoreResult<Option<bool>> {
        if let Some(private) = self.accounts.get(&uid) {
            return Ok(*private);
        }
        let private = match self.store.users().get(uid).await {
            Ok(user) => Some(user.private),
            Err(StoreError::NotFound(_)) => None,
            Err(e) => return Err(e),
        };
        self.accounts.insert(uid, private);
        Ok(private)
    }

    /// Whether the reader follows `author` now.
    async fn follows(&mut self, author: u64) -> StoreResult<bool> {
        let Some(viewer) = self.viewer else {
            return Ok(false);
        };
        if let Some(follows) = self.follows.get(&author) {
            return Ok(*follows);
        }
        let follows = self.store.follows().is_following(viewer, author).await?;
        self.follows.insert(author, follows);
        Ok(follows)
    }
}
