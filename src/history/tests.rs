//! The history's unit tests: reads across segments and gaps.

use super::*;
use std::path::Path;

fn events(from: u64, n: u64) -> Vec<(EventId, String)> {
    (from..from + n)
        .map(|ms| {
            (
                EventId(ms, 0, 0),
                format!("{{\"id\":\"{ms}-0\",\"type\":\"x\"}}"),
            )
        })
        .collect()
}

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("firehose-history-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(STORE_FILE), "s").unwrap();
    dir
}

fn open(dir: &Path) -> History {
    History::open(
        Settings {
            dir: dir.to_path_buf(),
            retention_secs: 86_400,
            max_bytes: 1 << 30,
            shared: false,
        },
        "s",
        None,
    )
    .unwrap()
}

#[tokio::test]
async fn an_empty_last_segment_hides_nothing_before_it() {
    let dir = dir("empty-last");
    let mut seg = Segment::create(&dir, EventId(10, 0, 0)).unwrap();
    for (prev, from) in [(EventId::ZERO, 10), (EventId(19, 0, 0), 20)] {
        let built = block::build(prev, false, &events(from, 10), &[]).unwrap();
        seg.append(built.header, &built.bytes).unwrap();
    }
    // Created, and its first block never written.
    Segment::create(&dir, EventId(30, 0, 0)).unwrap();
    let history = open(&dir);
    let mut at = EventId(14, 0, 0);
    let mut read = Vec::new();
    loop {
        let page = history.read_after(at).await.unwrap();
        assert!(page.gap.is_none());
        if page.end {
            break;
        }
        read.extend(page.events.iter().map(|(id, _)| id.0));
        at = page.cursor;
    }
    assert_eq!(read, (15..30).collect::<Vec<_>>());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_reader_older_than_the_first_block_hears_of_the_gap() {
    let dir = dir("older");
    let mut seg = Segment::create(&dir, EventId(10, 0, 0)).unwrap();
    let built = block::build(EventId(5, 0, 0), false, &events(10, 5), &[]).unwrap();
    seg.append(built.header, &built.bytes).unwrap();
    let history = open(&dir);
    let page = history.read_after(EventId(3, 0, 0)).await.unwrap();
    assert_eq!(
        page.gap,
        Some(Gap {
            after: EventId(3, 0, 0),
            before: EventId(10, 0, 0)
        })
    );
    assert_eq!(page.events.len(), 5);
    let page = history.read_after(EventId(5, 0, 0)).await.unwrap();
    assert!(page.gap.is_none(), "from prev itself nothing is missing");
    let _ = std::fs::remove_dir_all(&dir);
}
