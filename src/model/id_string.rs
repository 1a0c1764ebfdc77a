//! A `u64` field that is an [`Id`] on the wire:
//! `#[serde(with = "crate::model::id_string")]`. [`Event`](super::Event)
//! keeps its ids as plain numbers this way (they are matched and compared
//! far more than read); `Id`'s own serde is the one definition of an id in
//! JSON.

use super::id::Id;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub(crate) fn serialize<S: Serializer>(id: &u64, s: S) -> Result<S::Ok, S::Error> {
    Id(*id).serialize(s)
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Id::deserialize(d).map(Id::get)
}
