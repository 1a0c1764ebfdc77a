//! zstd for streams. A WebSocket opened with `compress=zstd` gets each
//! event as one binary message: a zstd frame compressed with the current
//! shared dictionary, once per event (the [`Frame`](super::frame::Frame)
//! keeps it) for every connection it goes to. Its header names the
//! dictionary (`Dictionary_ID`), which a client fetches from
//! `GET /api/v1/stream/zstd-dictionary`.
//!
//! The dictionary is trained on the buffer's recent public events with
//! every free-text value replaced (only the shapes, the numbers and the
//! ids are learnt: no status text, login or name of anyone ends up in a
//! file everyone may fetch), retrained by one process at a time every
//! `--zstd-retrain-secs`, published in Redis (the newest
//! [`KEPT`](crate::store::entities::zstd_dicts::KEPT) kept, so a client holding an older id can still
//! fetch it) and followed by every process within [`FOLLOW`].
//!
//! A plain stream (SSE, NDJSON) coded with zstd is `zstd_body`'s.

use crate::model::Id;
use crate::shutdown::Shutdown;
use crate::store::Store;
use bytes::Bytes;
use serde_json::Value;
use std::cell::RefCell;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use zstd::zstd_safe::{self, CCtx, CDict};

/// The level events are compressed at with the dictionary: paid once per
/// event, whoever receives it (on the demo world's traffic, 2026-11-28, 2
/// cores: level 6 0.42 of the JSON at 8 µs an event, 12 0.40 at 11 µs, 19
/// 0.39 at 50 µs).
const DICT_LEVEL: i32 = 12;
/// The largest dictionary trained (16 KiB did as well as 32 or 64 there).
const DICT_SIZE: usize = 16 * 1024;
/// Samples a training reads at most (the newest public events).
const MAX_SAMPLES: usize = 5_000;
/// Samples below which a training adds made-up events of every kind.
const MIN_SAMPLES: usize = 1_000;
/// How often a process looks for a new current dictionary.
pub(crate) const FOLLOW: Duration = Duration::from_secs(10);

/// A dictionary ready to compress with.
pub struct Dict {
    /// Its id, as zstd frames and the `Zstd-Dictionary-Id` header carry it.
    pub id: u32,
    /// Its bytes, as served.
    pub bytes: Bytes,
    cdict: CDict<'static>,
}

impl std::fmt::Debug for Dict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dict").field("id", &self.id).finish()
    }
}

thread_local! {
    /// One compression context per worker thread, reused for every event.
    static CCTX: RefCell<CCtx<'static>> = RefCell::new(CCtx::create());
}

impl Dict {
    /// A trained dictionary (one with a header and an id); `None` for
    /// bytes that are not one.
    pub fn new(bytes: Vec<u8>) -> Option<Dict> {
        let id = zstd_safe::get_dict_id_from_dict(&bytes)?.get();
        let cdict = CDict::try_create(&bytes, DICT_LEVEL)?;
        Some(Dict {
            id,
            bytes: Bytes::from(bytes),
            cdict,
        })
    }

    /// `data` as one zstd frame made with this dictionary (its id and the
    /// content size in the frame header).
    pub fn compress(&self, data: &[u8]) -> Bytes {
        let mut out: Vec<u8> = Vec::with_capacity(zstd_safe::compress_bound(data.len()));
        CCTX.with(|c| {
            let mut c = c.borrow_mut();
            // Compressing into a buffer of the bound cannot fail; an empty
            // frame would be the answer to an impossible case.
            if c.compress_using_cdict(&mut out, data, &self.cdict).is_err() {
                out.clear();
            }
        });
        Bytes::from(out)
    }
}

/// The dictionary new frames are compressed with, shared by the process's
/// connections: loaded (or, on a new store, trained and published) when
/// first needed, so a server no one asks for zstd pays nothing for it.
pub struct Dictionaries {
    /// Where they are kept (none: one given dictionary, for tests).
    store: Option<Store>,
    current: RwLock<Option<Arc<Dict>>>,
}

impl std::fmt::Debug for Dictionaries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dictionaries")
            .field("current", &self.current())
            .finish()
    }
}

impl Dictionaries {
    /// None loaded yet.
    pub fn new(store: Store) -> Dictionaries {
        Dictionaries {
            store: Some(store),
            current: RwLock::new(None),
        }
    }

    /// Already holding `dict`, with no store to follow (tests, tools).
    pub fn loaded(dict: Dict) -> Dictionaries {
        Dictionaries {
            store: None,
            current: RwLock::new(Some(Arc::new(dict))),
        }
    }

    /// The current dictionary, if one is loaded ([`Dictionaries::ready`]).
    pub fn current(&self) -> Option<Arc<Dict>> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set(&self, dict: Dict) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(dict));
    }

    /// The current dictionary, loaded from Redis the first time (or, the
    /// first process of a new store, trained and published).
    pub async fn ready(&self) -> anyhow::Result<Arc<Dict>> {
        if let Some(d) = self.current() {
            return Ok(d);
        }
        let store = self
            .store
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("no zstd dictionary"))?;
        let dict = match load_current(store).await? {
            Some(dict) => dict,
            None => {
                let dict = train_from(store).await?;
                let id = store
                    .events()
                    .zstd_dicts()
                    .put(&dict.id.to_string(), &dict.bytes, true)
                    .await?;
                match id == dict.id.to_string() {
                    true => dict,
                    // Another process published first: use its.
                    false => load_current(store)
                        .await?
                        .ok_or_else(|| anyhow::anyhow!("the zstd dictionary vanished"))?,
                }
            }
        };
        if self.current().is_none() {
            self.set(dict);
        }
        self.current()
            .ok_or_else(|| anyhow::anyhow!("no zstd dictionary"))
    }
}

async fn load_current(store: &Store) -> anyhow::Result<Option<Dict>> {
    Ok(store
        .events()
        .zstd_dicts()
        .current()
        .await?
        .and_then(|(_, bytes)| Dict::new(bytes)))
}

/// Follows the current dictionary (every [`FOLLOW`], once this process has
/// loaded one) and, every `retrain` (when this process takes the trainer's
/// lease and the store has a dictionary: someone uses zstd), trains a new
/// one from the buffer and publishes it. Runs until shutdown.
pub(crate) async fn run(dicts: Arc<Dictionaries>, retrain: Duration, mut shutdown: Shutdown) {
    let Some(store) = dicts.store.clone() else {
        return;
    };
    let holder = format!("{}-{}", std::process::id(), rand::random::<u64>());
    let mut since_training = Duration::ZERO;
    // A retraining period shorter than FOLLOW (tests) shortens the tick.
    let tick = match retrain.is_zero() {
        true => FOLLOW,
        false => FOLLOW.min(retrain),
    };
    loop {
        tokio::select! {
            _ = shutdown.wait() => return,
            _ = tokio::time::sleep(tick) => {}
        }
        since_training += tick;
        if !retrain.is_zero() && since_training >= retrain {
            since_training = Duration::ZERO;
            let used = matches!(store.events().zstd_dicts().current_id().await, Ok(Some(_)));
            if used
                && store
                    .events()
                    .zstd_dicts()
                    .take_trainer(&holder, retrain.as_secs())
                    .await
                    .unwrap_or(false)
            {
                retrain_now(&store).await;
            }
        }
        if dicts.current().is_some() {
            follow(&store, &dicts).await;
        }
    }
}

/// Trains a dictionary from the buffer and makes it the current one.
pub(crate) async fn retrain_now(store: &Store) {
    match train_from(store).await {
        Ok(dict) => match store
            .events()
            .zstd_dicts()
            .put(&dict.id.to_string(), &dict.bytes, false)
            .await
        {
            Ok(_) => tracing::info!(
                id = dict.id,
                bytes = dict.bytes.len(),
                "zstd dictionary retrained"
            ),
            Err(e) => tracing::warn!(error = %e, "cannot publish the zstd dictionary"),
        },
        Err(e) => tracing::warn!(error = %e, "cannot train the zstd dictionary"),
    }
}

/// Switches to the current dictionary if it changed.
async fn follow(store: &Store, dicts: &Dictionaries) {
    let Ok(Some(id)) = store.events().zstd_dicts().current_id().await else {
        return;
    };
    if dicts.current().is_some_and(|d| d.id.to_string() == id) {
        return;
    }
    if let Ok(Some(bytes)) = store.events().zstd_dicts().get(&id).await {
        if let Some(dict) = Dict::new(bytes) {
            dicts.set(dict);
        }
    }
}

/// A dictionary trained on the buffer's newest public events (made-up
/// ones added when there are few).
async fn train_from(store: &Store) -> anyhow::Result<Dict> {
    let mut samples = Vec::new();
    let mut before = None;
    // Pages of the newest entries until enough samples (or the buffer's
    // start, or 20 pages).
    for _ in 0..20 {
        let page = store.events().before(before, 1_000).await?;
        let Some((oldest, _)) = page.events.last() else {
            break;
        };
        before = Some(*oldest);
        samples.extend(page.events.iter().filter_map(|(_, json)| sample_of(json)));
        if samples.len() >= MAX_SAMPLES || !page.more {
            break;
        }
    }
    samples.truncate(MAX_SAMPLES);
    tokio::task::spawn_blocking(move || train(samples))
        .await?
        .ok_or_else(|| anyhow::anyhow!("zstd could not train a dictionary"))
}

/// Trains a dictionary on `samples`, with made-up events added when there
/// are fewer than [`MIN_SAMPLES`].
pub(crate) fn train(mut samples: Vec<Vec<u8>>) -> Option<Dict> {
    if samples.len() < MIN_SAMPLES {
        samples.extend(made_up(MIN_SAMPLES * 2 - samples.len()));
    }
    let bytes = zstd::dict::from_samples(&samples, DICT_SIZE).ok()?;
    Dict::new(bytes)
}

/// What a dictionary may learn of an event: a public status, delete,
/// update, like, repost or follow, with every string that is not an id, a
/// number or a type replaced by filler of its length.
pub(crate) fn sample_of(json: &str) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_str(json).ok()?;
    let kind = v.get("type")?.as_str()?;
    if !matches!(
        kind,
        "status" | "delete" | "update" | "like" | "repost" | "mention" | "follow" | "unfollow"
    ) {
        return None;
    }
    let status = v.get("status");
    let private = v.get("private").and_then(Value::as_bool) == Some(true)
        || v.get("audience").is_some_and(|a| !a.is_null())
        || status
            .and_then(|s| s.get("group_private"))
            .and_then(Value::as_bool)
            == Some(true);
    if private {
        return None;
    }
    redact(&mut v, "");
    serde_json::to_vec(&v).ok()
}

/// Replaces, in place, every string value but ids, numbers and the few
/// fixed words of the shapes (`type`, ...).
fn redact(v: &mut Value, key: &str) {
    match v {
        Value::String(s) => {
            let keep = key == "type"
                || s.bytes()
                    .all(|b| b.is_ascii_digit() || b == b'-' || b == b'.');
            if !keep {
                *s = filler(s.chars().count());
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| redact(i, key)),
        Value::Object(map) => map.iter_mut().for_each(|(k, i)| redact(i, k)),
        _ => {}
    }
}

/// Text of `n` characters made of common words.
fn filler(n: usize) -> String {
    const WORDS: [&str; 118] = [
        "the", "be", "to", "of", "and", "a", "in", "that", "have", "i", "it", "for", "not", "on",
        "with", "he", "as", "you", "do", "at", "this", "but", "his", "by", "from", "they", "we",
        "say", "her", "she", "or", "an", "will", "my", "one", "all", "would", "there", "their",
        "what", "so", "up", "out", "if", "about", "who", "get", "which", "go", "me", "when",
        "make", "can", "like", "time", "no", "just", "him", "know", "take", "people", "into",
        "year", "your", "good", "some", "could", "them", "see", "other", "than", "then", "now",
        "look", "only", "come", "its", "over", "think", "also", "back", "after", "use", "two",
        "how", "our", "work", "first", "well", "way", "even", "new", "want", "because", "any",
        "these", "give", "day", "most", "us", "is", "are", "was", "were", "has", "had", "been",
        "more", "very", "really", "today", "love", "thanks", "great", "here", "still", "need",
        "going",
    ];
    let mut out = String::with_capacity(n + 8);
    let mut i = n;
    while out.len() < n {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(WORDS[i % WORDS.len()]);
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    out.truncate(n);
    out
}

/// `n` made-up events of the public kinds, shaped as the buffer holds
/// them (for a store with little traffic yet).
fn made_up(n: usize) -> Vec<Vec<u8>> {
    use crate::model::{Counts, Event, Status};
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let now = crate::model::now();
    (0..n)
        .filter_map(|i| {
            let r = next();
            let at = now - (n - i) as f64 * 0.01;
            let sid = (((at * 1000.0) as u64) << 22) | (r & 0x3f_ffff);
            let uid = 1 + r % 100_000;
            let status = || Status {
                id: Id(sid),
                uid: Id(uid),
                login: filler(5 + (r % 10) as usize),
                message: filler(20 + (r % 200) as usize),
                posted: at,
                lat: None,
                lon: None,
                reply_to: (r % 5 == 0).then(|| Id(sid - 1000)),
                reply_to_uid: (r % 5 == 0).then(|| Id(uid + 1)),
                hashtags: if r % 3 == 0 {
                    vec![filler(6)]
                } else {
                    Vec::new()
                },
                mentions: Vec::new(),
                repost_of: None,
                repost_of_uid: None,
                audience: None,
                group_id: None,
                group_private: false,
                edited_at: None,
                counts: Counts {
                    likes: r % 7,
                    reposts: r % 3,
                    replies: r % 2,
                },
            };
            let event = match r % 10 {
                0..=5 => Event::Status {
                    at,
                    status: status(),
                    private: false,
                    audience: None,
                },
                6 | 7 => Event::Like {
                    at,
                    status_id: Id(sid),
                    source: Id(uid + 7),
                    target: Id(uid),
                    private: false,
                },
                8 => Event::Delete {
                    at,
                    status_id: Id(sid),
                    uid: Id(uid),
                    private: false,
                    group_id: None,
                },
                _ => Event::Follow {
                    at,
                    source: Id(uid),
                    target: Id(uid + 13),
                },
            };
            let eid = format!("{}-{}", (at * 1000.0) as u64, r % 4);
            let json = crate::store::events::body(&event).json;
            let with_id = format!("{{\"id\":\"{eid}\",{}", json.strip_prefix('{')?);
            sample_of(&with_id)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_json(i: u32, private: bool) -> String {
        format!(
            r#"{{"id":"1700000000{i:03}-0","type":"status","at":1700000000.5,"status":{{"id":"{}","uid":"{}","login":"secret_login","message":"my very private words number {i}","posted":1.0,"hashtags":["secrettag"],"mentions":[],"counts":{{"likes":0,"reposts":0,"replies":0}}}}{}}}"#,
            7_000_000_000u64 + u64::from(i),
            100 + i,
            if private { r#","private":true"# } else { "" }
        )
    }

    #[test]
    fn a_dictionary_learns_no_text_and_no_private_event() {
        assert!(sample_of(&status_json(1, true)).is_none());
        assert!(sample_of(r#"{"id":"1-0","type":"notification","at":1}"#).is_none());
        let sample = String::from_utf8(sample_of(&status_json(1, false)).unwrap()).unwrap();
        for secret in ["secret_login", "private words", "secrettag"] {
            assert!(!sample.contains(secret), "{sample}");
        }
        assert!(sample.contains("\"type\":\"status\"") && sample.contains("7000000001"));
        let samples: Vec<Vec<u8>> = (0..300)
            .filter_map(|i| sample_of(&status_json(i, false)))
            .collect();
        let dict = train(samples).expect("a dictionary");
        let text = String::from_utf8_lossy(&dict.bytes);
        assert!(!text.contains("secret"), "no text of an event is in it");
    }

    #[test]
    fn a_frame_names_its_dictionary_and_decodes_with_it() {
        let dict = train(Vec::new()).expect("made-up events train one");
        let json = status_json(5, false);
        let frame = dict.compress(json.as_bytes());
        assert_eq!(
            zstd_safe::get_dict_id_from_frame(&frame).map(|d| d.get()),
            Some(dict.id)
        );
        let mut d = zstd::bulk::Decompressor::with_dictionary(&dict.bytes).unwrap();
        assert_eq!(d.decompress(&frame, 1 << 20).unwrap(), json.as_bytes());
        assert!(
            frame.len() * 10 < json.len() * 6,
            "{} of {}",
            frame.len(),
            json.len()
        );
    }
}
