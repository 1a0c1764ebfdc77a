//! Upgrades: the key layout a process checks before it serves or works.

use crate::common::TestApp;
use redis::Commands;
use std::time::Duration;

/// A process stamps the data with its key layout, and one that finds data
/// in another layout, a server or a worker, refuses to run (it exits with
/// the reason) instead of reading or changing keys where it does not look.
#[tokio::test]
async fn a_process_refuses_data_in_a_foreign_key_layout() {
    let app = TestApp::start().await;
    let layout = format!("{}:{{g}}:layout", app.cfg.key_prefix);
    let stamped: String = app.redis.conn().get(&layout).unwrap();
    assert_eq!(stamped, firehose::store::layout::LAYOUT.to_string());
    let (_, tok) = app.user("stays").await;
    let sid = app.say(&tok, "written in layout one").await;

    let _: () = app.redis.conn().set(&layout, "99").unwrap();
    for command in [&["serve", "--listen", "127.0.0.1:0"][..], &["worker"]] {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_firehose"))
            .args(command)
            .args(app.redis.args())
            .arg("--data-dir")
            .arg(app.redis.data_dir())
            .env("FIREHOSE_JWT_SECRET", "test-secret-test-secret-test-secret")
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(30), out)
            .await
            .unwrap_or_else(|_| panic!("{command:?} exits instead of running"))
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{command:?}: {stderr}");
        assert!(stderr.contains("key layout 99"), "{command:?}: {stderr}");
    }
    let kept: String = app.redis.conn().get(&layout).unwrap();
    assert_eq!(kept, "99", "the stamp is left as found");
    let (status, _) = app
        .get(&format!("/api/v1/statuses/{sid}"), Some(&tok))
        .await;
    assert_eq!(status, 200, "nothing was changed");
}
