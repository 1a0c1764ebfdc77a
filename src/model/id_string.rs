//! Ids are JSON strings in every public shape (they outgrow a double's 53
//! bits), numbers in Rust: `#[serde(with = "crate::model::id_string")]`.

use serde::{de::Error, Deserialize, Deserializer, Serializer};

pub(crate) fn serialize<S: Serializer>(id: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(id)
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let text = std::borrow::Cow::<'de, str>::deserialize(d)?;
    text.parse().map_err(D::Error::custom)
}
