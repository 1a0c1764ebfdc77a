//! The trending answers of the last second ([`TrendMemo`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a process serves a trending answer it read (the window's sum
/// in each partition is kept as long, so an answer is at most twice this
/// old).
pub(crate) const MEMO_FOR: Duration = Duration::from_secs(1);

/// Answers kept: one per (window, limit) asked in the last second, at most
/// this many (a few KB each).
pub(crate) const MEMO_MOST: usize = 256;

/// One trending answer.
pub(crate) type Top = Vec<(String, u64)>;

/// The trending answers of the last second, by (window, limit).
#[derive(Default)]
pub(crate) struct TrendMemo {
    pub(crate) answers: Mutex<HashMap<(u64, usize), (Instant, Top)>>,
}

impl TrendMemo {
    pub(crate) fn get(&self, key: (u64, usize)) -> Option<Top> {
        let answers = self.answers.lock().ok()?;
        let (at, top) = answers.get(&key)?;
        (at.elapsed() < MEMO_FOR).then(|| top.clone())
    }

    pub(crate) fn put(&self, key: (u64, usize), top: &Top) {
        let Ok(mut answers) = self.answers.lock() else {
            return;
        };
        if answers.len() >= MEMO_MOST {
            answers.retain(|_, (at, _)| at.elapsed() < MEMO_FOR);
            if answers.len() >= MEMO_MOST {
                answers.clear();
            }
        }
        answers.insert(key, (Instant::now(), top.clone()));
    }
}
