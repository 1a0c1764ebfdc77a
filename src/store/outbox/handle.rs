//! The outbox's view of the store handle ([`Outbox`]): what `mod.rs`
//! (beginning, claiming, measuring) and `finish.rs` (retiring) add to.

use crate::store::plumbing::handle::Store;

/// The outbox: each write that spans slots, recorded before its first
/// step and retired after its last (`Store::outbox`).
#[derive(Clone, Copy)]
pub struct Outbox<'a> {
    pub(super) store: &'a Store,
}

impl Store {
    /// The outbox.
    pub fn outbox(&self) -> Outbox<'_> {
        Outbox { store: self }
    }
}

impl Outbox<'_> {
    /// The outbox lease deadline for work starting now.
    pub(crate) fn lease_deadline(self) -> f64 {
        crate::model::now() + self.store.outbox_lease
    }
}
