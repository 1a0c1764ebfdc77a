//! The multiplexed socket's control messages: `subscribe`, `unsubscribe`
//! and `refresh` (a new token on a live socket), each answered with a
//! control event or an `error` naming what was wrong.

use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::http::shared::extract::JsonId;
use crate::http::stream::open::{still_reads, Ask, Kind};
use crate::state::AppState;
use crate::stream::frame::Control;
use crate::stream::frame::DisconnectCode;
use crate::stream::want::{group_stream, is_group_stream, is_list_stream, list_stream};

/// A keyed stream's subscription name of an id, and its test of a name.
type KeyedStream = (fn(u64) -> &'static str, fn(&str) -> bool);
use super::who::Who;
use crate::stream::Feed;
use firehose_filters::box_shape_error;
use serde::Deserialize;

/// A control message of the multiplexed WebSocket. Its stream parameters
/// are the query string's, as JSON: arrays instead of comma lists.
#[derive(Debug, Deserialize)]
struct ControlMsg {
    #[serde(rename = "type")]
    kind: String,
    stream: Option<String>,
    #[serde(default)]
    follow: Vec<JsonId>,
    #[serde(default)]
    track: Vec<String>,
    #[serde(default)]
    locations: Vec<Loc>,
    rate: Option<Scalar>,
    last_event_id: Option<String>,
    count: Option<Scalar>,
    since: Option<Scalar>,
    rules: Option<serde_json::Value>,
    group: Option<Scalar>,
    list: Option<Scalar>,
    /// A `refresh` message's new token (any JSON: what is not a string is
    /// answered as a missing token).
    token: Option<serde_json::Value>,
    partition: Option<Scalar>,
    partitions: Option<Scalar>,
}

/// A box (`[sw_lon, sw_lat, ne_lon, ne_lat]`) or one number of a flat list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Loc {
    Box(Vec<f64>),
    Coord(f64),
}

/// A number, or a string holding one: read as the query string's text.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Scalar {
    Number(serde_json::Number),
    Text(String),
}

impl Scalar {
    fn text(&self) -> String {
        match self {
            Scalar::Number(n) => n.to_string(),
            Scalar::Text(s) => s.clone(),
        }
    }
}

impl ControlMsg {
    /// The stream parameters, read as [`Ask::from_query`] reads a URL's.
    fn ask(&self) -> Ask {
        let mut coords = Vec::new();
        let mut shaped = true;
        for loc in &self.locations {
            match loc {
                Loc::Box(b) => {
                    shaped &= b.len() == 4;
                    coords.extend_from_slice(b);
                }
                Loc::Coord(c) => coords.push(*c),
            }
        }
        Ask {
            follow: self.follow.iter().map(JsonId::raw).collect(),
            track: self.track.clone(),
            locations: if shaped {
                Ok(coords)
            } else {
                Err(box_shape_error())
            },
            rate: self.rate.as_ref().map(Scalar::text),
            last_event_id: self.last_event_id.clone(),
            count: self.count.as_ref().map(Scalar::text),
            since: self.since.as_ref().map(Scalar::text),
            rules: self.rules.clone().map(Ok),
            group: self.group.as_ref().map(Scalar::text),
            list: self.list.as_ref().map(Scalar::text),
            partition: (
                self.partition.as_ref().map(Scalar::text),
                self.partitions.as_ref().map(Scalar::text),
            ),
        }
    }
}

/// A `refresh`: the socket lives on under the new token's session, which
/// must be the same user's (else an `error`, and the old token still runs
/// the socket until it expires).
async fn refresh(
    feed: &mut Feed,
    state: &AppState,
    who: &Who,
    token: Option<&str>,
) -> Option<AuthUser> {
    let uid = who.uid();
    let Some(token) = token.map(str::trim).filter(|t| !t.is_empty()) else {
        feed.push_control(ws_error(
            "invalid_token",
            "A refresh carries the new token: {\"type\":\"refresh\",\"token\":\"<JWT>\"}.".into(),
            None,
        ));
        return None;
    };
    let fresh = match AuthUser::from_token(state, token).await {
        Ok(fresh) if fresh.uid == uid => fresh,
        Ok(_) => {
            feed.push_control(ws_error(
                "invalid_token",
                "The new token must be the same user's.".into(),
                None,
            ));
            return None;
        }
        Err(e) => {
            feed.push_control(ws_error(
                if e.status == axum::http::StatusCode::UNAUTHORIZED {
                    "invalid_token"
                } else {
                    e.code
                },
                e.message,
                None,
            ));
            return None;
        }
    };
    // The new token's scopes hold from now on: a stream path it could
    // not open ends; the subscriptions it could not make end, each with
    // an `error`, and the socket lives on for the rest.
    if let Who::Reader(_, kind) = who {
        if let Some(scope) = kind.scope().filter(|s| !fresh.has_scope(s)) {
            feed.kill(
                DisconnectCode::Forbidden,
                format!("The new token lacks the {scope:?} scope this stream needs."),
            );
            return None;
        }
    }
    if !feed.refresh(fresh.sid.clone(), fresh.expires).await {
        feed.push_control(ws_error(
            "invalid_token",
            "The session has ended; log in again.".into(),
            None,
        ));
        return None;
    }
    feed.push_control(Control::Refreshed {
        expires_at: fresh.expires,
    });
    if matches!(who, Who::Subscriber(..)) {
        for kind in Kind::ALL {
            let Some(scope) = kind.scope().filter(|s| !fresh.has_scope(s)) else {
                continue;
            };
            if feed.unsubscribe(kind.name()) {
                feed.push_control(ws_error(
                    "forbidden",
                    format!("The new token lacks the {scope:?} scope: the subscription has ended."),
                    Some(kind.name()),
                ));
            }
        }
    }
    Some(fresh)
}

pub(super) fn ws_error(code: &'static str, message: String, stream: Option<&str>) -> Control {
    Control::Error {
        code,
        message,
        stream: stream.map(str::to_string),
        detail: Default::default(),
    }
}

pub(super) async fn handle_control(feed: &mut Feed, state: &AppState, who: &mut Who, text: &str) {
    let multiplexed = matches!(who, Who::Subscriber(..));
    let msg: ControlMsg = match serde_json::from_str(text) {
        Ok(m) => m,
        // A stream path's socket ignores what it does not take.
        Err(_) if !multiplexed => return,
        Err(e) => {
            feed.push_control(ws_error(
                "invalid_message",
                format!("The control message is not valid JSON: {e}."),
                None,
            ));
            return;
        }
    };
    if msg.kind == "refresh" {
        let token = msg.token.as_ref().and_then(serde_json::Value::as_str);
        if let Some(fresh) = refresh(feed, state, who, token).await {
            if let Who::Subscriber(auth, _) = who {
                *auth = fresh;
            }
        }
        return;
    }
    // A stream path's socket takes no other message.
    let Who::Subscriber(auth, resume) = who else {
        return;
    };
    let auth = &*auth;
    let Some(kind) = msg.stream.as_deref().and_then(Kind::named) else {
        feed.push_control(ws_error(
            "invalid_stream",
            "stream must be one of filter, user, sample, firehose, search, group, list.".into(),
            msg.stream.as_deref(),
        ));
        return;
    };
    let name = kind.name();
    // A group's or list's stream: its messages name it.
    let (field, keyed): (&str, Option<KeyedStream>) = match kind {
        Kind::Group => ("group", Some((group_stream, is_group_stream))),
        Kind::List => ("list", Some((list_stream, is_list_stream))),
        _ => ("", None),
    };
    let key = match kind {
        Kind::Group => msg.group.as_ref().map(Scalar::text),
        Kind::List => msg.list.as_ref().map(Scalar::text),
        _ => None,
    };
    let refuse = |feed: &mut Feed, e: ApiError| {
        let mut detail = e.detail;
        if let Some(k) = &key {
            detail.insert(field.into(), k.clone().into());
        }
        feed.push_control(Control::Error {
            code: e.code,
            message: e.message,
            stream: Some(name.to_string()),
            detail,
        });
    };
    match msg.kind.as_str() {
        "subscribe" => {
            let mut ask = msg.ask();
            if ask.last_event_id.is_none() && ask.since.is_none() && ask.count.is_none() {
                if let Some(resume) = resume.as_mut() {
                    (ask.last_event_id, ask.since, ask.count) = resume.take(name);
                }
            }
            let asked = match ask.resolve(state, auth, kind).await {
                Ok(asked) => asked,
                Err(e) => return refuse(feed, e),
            };
            let gid = asked.want.group.map(|g| g.to_string());
            let lid = asked.want.list.as_ref().map(|l| l.id.to_string());
            let want = asked.want.clone();
            // Confirm first, so the replayed events follow the confirmation.
            feed.push_control(Control::Subscribed {
                stream: name,
                group: gid,
                list: lid,
            });
            let subscribed = feed.subscribe(asked.name, asked.want, asked.replay).await;
            match still_reads(state, auth, &want).await {
                Ok(true) if subscribed.is_ok() => {}
                Ok(true) | Err(_) => {
                    feed.unsubscribe(asked.name);
                    refuse(feed, ApiError::unavailable());
                }
                Ok(false) => {
                    feed.unsubscribe(asked.name);
                    refuse(feed, ApiError::not_found(format!("No such {field}.")));
                }
            }
        }
        "unsubscribe" if keyed.is_some() => {
            let Some((named, is)) = keyed else { return };
            let gone = match key.as_deref().map(|g| g.trim().parse::<u64>()) {
                None => feed.unsubscribe_all(is),
                Some(Ok(id)) if feed.unsubscribe(named(id)) => 1,
                Some(_) => 0,
            };
            if gone > 0 {
                let (group, list) = match kind {
                    Kind::List => (None, key.clone()),
                    _ => (key.clone(), None),
                };
                feed.push_control(Control::Unsubscribed {
                    stream: name,
                    group,
                    list,
                });
            } else {
                refuse(
                    feed,
                    ApiError::invalid(
                        "not_subscribed",
                        format!("There is no such {field} subscription."),
                    ),
                );
            }
        }
        "unsubscribe" => {
            if feed.unsubscribe(name) {
                feed.push_control(Control::Unsubscribed {
                    stream: name,
                    group: None,
                    list: None,
                });
            } else {
                feed.push_control(ws_error(
                    "not_subscribed",
                    format!("There is no {name} subscription."),
                    Some(name),
                ));
            }
        }
        other => feed.push_control(ws_error(
            "invalid_message",
            format!("Unknown control message type {other:?}."),
            None,
        )),
    }
}
