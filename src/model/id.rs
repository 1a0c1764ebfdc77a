//! [`Id`]: the one id type of every public shape. A number in Rust, a JSON
//! string of digits on the wire (ids outgrow a double's 53 bits).

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// The id of a user, status, message, conversation, group, notification,
/// report or audit entry: `u64` inside, `"123"` in JSON and in Redis.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Id(pub u64);

impl Id {
    /// The number.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl From<u64> for Id {
    fn from(id: u64) -> Id {
        Id(id)
    }
}

impl From<Id> for u64 {
    fn from(id: Id) -> u64 {
        id.0
    }
}

impl PartialEq<u64> for Id {
    fn eq(&self, other: &u64) -> bool {
        self.0 == *other
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for Id {
    type Err = std::num::ParseIntError;

    fn from_str(s: &str) -> Result<Id, Self::Err> {
        s.parse().map(Id)
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Id {
    /// A string of digits, as written; a JSON number is read too.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Id, D::Error> {
        struct Digits;
        impl Visitor<'_> for Digits {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an id: a string of digits")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
                Ok(Id(v))
            }
        }
        d.deserialize_any(Digits)
    }
}

impl redis::ToRedisArgs for Id {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        self.0.write_redis_args(out)
    }
}

#[cfg(test)]
mod tests {
    use super::Id;

    #[test]
    fn an_id_is_a_string_of_digits_in_json_and_reads_a_number_too() {
        let big = Id(u64::MAX);
        assert_eq!(
            serde_json::to_string(&big).unwrap(),
            "\"18446744073709551615\""
        );
        assert_eq!(serde_json::from_str::<Id>("\"42\"").unwrap(), Id(42));
        assert_eq!(serde_json::from_str::<Id>("42").unwrap(), Id(42));
        for bad in ["\"\"", "\"x1\"", "\"-1\"", "-1", "1.5", "null"] {
            assert!(serde_json::from_str::<Id>(bad).is_err(), "{bad}");
        }
        assert_eq!("7".parse::<Id>().unwrap().to_string(), "7");
    }
}
