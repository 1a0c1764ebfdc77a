//! The query grammar of the filter, sample and subscribe parameters.
//!
//! Limits follow Twitter's statuses/filter: at most [`MAX_FOLLOW`] user ids,
//! [`MAX_TRACK`] phrases of at most [`MAX_PHRASE_BYTES`] bytes each and
//! [`MAX_BOXES`] bounding boxes. Every error names the parameter at fault.

use crate::geo::BBox;
use crate::track::{Phrase, Words};
use crate::view::StatusView;
use std::fmt;

/// Most user ids one `follow` parameter may list.
pub const MAX_FOLLOW: usize = 5000;
/// Most phrases one `track` parameter may list.
pub const MAX_TRACK: usize = 400;
/// Longest phrase, in UTF-8 bytes.
pub const MAX_PHRASE_BYTES: usize = 60;
/// Most bounding boxes one `locations` parameter may list.
pub const MAX_BOXES: usize = 25;

/// A filter parameter that could not be accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The query parameter at fault (`follow`, `track`, `locations`, `rate`).
    pub param: &'static str,
    /// A human sentence saying what is wrong.
    pub message: String,
}

impl ParseError {
    fn new(param: &'static str, message: impl Into<String>) -> Self {
        ParseError {
            param,
            message: message.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.param, self.message)
    }
}

impl std::error::Error for ParseError {}

/// One validated filter: a status matching any of the three parts is wanted.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FilterSpec {
    /// User ids: their statuses, their reposts and replies to them.
    pub follow: Vec<u64>,
    /// Phrases: every term of one phrase must occur in the message.
    pub track: Vec<Phrase>,
    /// Boxes: statuses whose coordinates fall inside one of them.
    pub locations: Vec<BBox>,
}

impl FilterSpec {
    /// Whether it matches statuses by their content (`track` or
    /// `locations`): then it gets every public delete.
    pub fn by_content(&self) -> bool {
        !self.track.is_empty() || !self.locations.is_empty()
    }

    /// True when the filter can match nothing at all.
    pub fn is_empty(&self) -> bool {
        self.follow.is_empty() && self.track.is_empty() && self.locations.is_empty()
    }

    /// Whether this filter alone wants `status`: a public status by, replying
    /// to or reposting a followed user, inside one of the boxes, or whose
    /// message holds every term of one tracked phrase. The same answer as an
    /// [`crate::Index`] holding only this filter, computed directly (for one
    /// subscription's replay and as the reference the index is tested against).
    pub fn matches(&self, status: &StatusView<'_>) -> bool {
        if status.private {
            return false;
        }
        let authors = [Some(status.uid), status.reply_to_uid, status.repost_of_uid];
        if authors
            .into_iter()
            .flatten()
            .any(|uid| self.follow.contains(&uid))
        {
            return true;
        }
        if let Some((lat, lon)) = status.coords {
            if self.locations.iter().any(|b| b.contains(lat, lon)) {
                return true;
            }
        }
        if self.track.is_empty() {
            return false;
        }
        let mut words = Words::default();
        words.fill(status.message);
        self.track.iter().any(|p| p.matches(&words))
    }

    /// Builds a filter from already split parts (the WebSocket `subscribe`
    /// message carries arrays); the same rules as [`parse_filter`] apply.
    pub fn from_parts<'a>(
        follow: impl IntoIterator<Item = &'a str>,
        track: impl IntoIterator<Item = &'a str>,
        locations: &[f64],
    ) -> Result<FilterSpec, ParseError> {
        let spec = FilterSpec {
            follow: follow_ids(follow)?,
            track: phrases(track)?,
            locations: boxes(locations)?,
        };
        if spec.is_empty() {
            return Err(ParseError::new(
                "follow",
                "give at least one of follow, track or locations",
            ));
        }
        Ok(spec)
    }
}

/// Parses the comma-separated `follow`, `track` and `locations` parameters.
/// At least one must be present and non-empty.
pub fn parse_filter(
    follow: Option<&str>,
    track: Option<&str>,
    locations: Option<&str>,
) -> Result<FilterSpec, ParseError> {
    let coords = parse_coords(locations)?;
    FilterSpec::from_parts(split(follow), split(track), &coords)
}

fn split(s: Option<&str>) -> Vec<&str> {
    match s.map(str::trim) {
        None | Some("") => Vec::new(),
        Some(s) => s.split(',').collect(),
    }
}

/// Parses the comma-separated numbers of a `locations` parameter (their
/// grouping into boxes is checked by [`FilterSpec::from_parts`]).
pub fn parse_coords(locations: Option<&str>) -> Result<Vec<f64>, ParseError> {
    split(locations)
        .into_iter()
        .map(|c| {
            c.trim().parse::<f64>().map_err(|_| {
                ParseError::new("locations", format!("{:?} is not a number", c.trim()))
            })
        })
        .collect()
}

/// A `locations` whose numbers do not group into boxes of four.
pub fn box_shape_error() -> ParseError {
    ParseError::new(
        "locations",
        "give boxes as groups of four numbers: sw_lon,sw_lat,ne_lon,ne_lat",
    )
}

/// Parses a sample `rate`: a number in (0, 1]; absent means 0.01.
pub fn parse_rate(rate: Option<&str>) -> Result<f64, ParseError> {
    let Some(raw) = rate else {
        return Ok(0.01);
    };
    match raw.trim().parse::<f64>() {
        Ok(r) if r > 0.0 && r <= 1.0 => Ok(r),
        _ => Err(ParseError::new(
            "rate",
            format!("{raw:?} must be a number greater than 0 and at most 1"),
        )),
    }
}

fn follow_ids<'a>(raw: impl IntoIterator<Item = &'a str>) -> Result<Vec<u64>, ParseError> {
    let mut ids = Vec::new();
    for item in raw {
        let item = item.trim();
        let id = match item.parse::<u64>() {
            Ok(id) if id > 0 && !item.starts_with('+') => id,
            _ => {
                return Err(ParseError::new(
                    "follow",
                    format!("{item:?} is not a user id"),
                ))
            }
        };
        ids.push(id);
        if ids.len() > MAX_FOLLOW {
            return Err(ParseError::new(
                "follow",
                format!("at most {MAX_FOLLOW} user ids are allowed"),
            ));
        }
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

fn phrases<'a>(raw: impl IntoIterator<Item = &'a str>) -> Result<Vec<Phrase>, ParseError> {
    let mut out: Vec<Phrase> = Vec::new();
    for (n, item) in raw.into_iter().enumerate() {
        if n >= MAX_TRACK {
            return Err(ParseError::new(
                "track",
                format!("at most {MAX_TRACK} phrases are allowed"),
            ));
        }
        let item = item.trim();
        if item.len() > MAX_PHRASE_BYTES {
            return Err(ParseError::new(
                "track",
                format!("phrase {item:?} is longer than {MAX_PHRASE_BYTES} bytes"),
            ));
        }
        let Some(phrase) = Phrase::new(item) else {
            return Err(ParseError::new(
                "track",
                format!("phrase {item:?} has no word to match"),
            ));
        };
        if !out.contains(&phrase) {
            out.push(phrase);
        }
    }
    Ok(out)
}

fn boxes(coords: &[f64]) -> Result<Vec<BBox>, ParseError> {
    if !coords.len().is_multiple_of(4) {
        return Err(box_shape_error());
    }
    if coords.len() / 4 > MAX_BOXES {
        return Err(ParseError::new(
            "locations",
            format!("at most {MAX_BOXES} boxes are allowed"),
        ));
    }
    coords
        .chunks(4)
        .map(|c| BBox::new(c[0], c[1], c[2], c[3]).map_err(|m| ParseError::new("locations", m)))
        .collect()
}
