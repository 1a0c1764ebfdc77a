//! The hub's unit tests.

use super::keepalive::DUE_SLACK;
use super::*;
use crate::stream::frame::DisconnectCode;
use crate::stream::queue::Delivery;
use tokio::time::Instant;

fn dispatcher() -> Dispatcher {
    let mut cfg = crate::config::Config::defaults();
    cfg.redis_url = Some("redis://127.0.0.1:1".into());
    Dispatcher::new(
        Store::open("redis://127.0.0.1:1", &cfg).expect("a store (never reached)"),
        Duration::from_secs(15),
        mpsc::unbounded_channel().0,
        crate::store::events::Tap::default(),
        Default::default(),
        vec![Helper::start(mpsc::unbounded_channel().0)],
        Default::default(),
    )
}

fn conn(id: u64, expires_in: Duration) -> Arc<ClientConn> {
    ClientConn::new(id, 1, format!("s{id}"), 16, Instant::now() + expires_in)
}

/// Each open connection gets its keep-alive when due and its end when
/// its token expires; a closed one's entry is dropped.
#[tokio::test(start_paused = true)]
async fn keepalives_and_expiry_come_off_one_heap() {
    let mut d = dispatcher();
    let (long, short, gone) = (
        conn(1, Duration::from_secs(3600)),
        conn(2, Duration::from_secs(20)),
        conn(3, Duration::from_secs(3600)),
    );
    for c in [&long, &short, &gone] {
        d.command(Cmd::Open { conn: c.clone() });
    }
    d.remove_conn(3);
    d.keep_alive(Instant::now() + Duration::from_secs(14));
    assert!(long.try_take().is_none(), "nothing before the period");
    // The short token has less than a minute: warned at once, and the
    // warning stands for that turn's keep-alive.
    let Some((Delivery::Control(warning), 0)) = short.try_take() else {
        panic!("a token_expiring warning first");
    };
    assert_eq!(warning.kind, "warning");
    assert!(std::str::from_utf8(&warning.json)
        .unwrap()
        .contains("\"token_expiring\""));
    d.keep_alive(Instant::now() + Duration::from_secs(15));
    assert!(matches!(long.try_take(), Some((Delivery::Keepalive(_), 0))));
    assert!(short.try_take().is_none(), "its next turn is its expiry");
    assert!(gone.try_take().is_none());
    assert_eq!(d.timers.len(), 2, "the closed connection's entry is gone");
    // The short token's next due time is its expiry, not a keep-alive.
    d.keep_alive(Instant::now() + Duration::from_secs(20));
    assert!(short.is_killed());
    assert_eq!(short.kill_reason().0, DisconnectCode::Expired);
    assert!(!long.is_killed());
    assert_eq!(d.timers.len(), 1);
}

/// The task's own turn (a pong, a close frame: `Feed::interrupt` is
/// `hold` then `take_rest`) comes while the hub's last write into the
/// socket fell short: it gets the rest of that frame back first, and
/// from then on the hub queues instead of writing, so the task's bytes
/// land between whole frames.
#[tokio::test]
async fn the_tasks_own_turn_gets_the_rest_of_a_frame_first_and_stops_the_hub() {
    use crate::stream::direct::tests::{frame, pair};
    use crate::stream::direct::{Direct, SharedTcp};
    use crate::stream::wire::Transport;
    use crate::stream::ws_codec::{self, op};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (server, mut client) = pair().await;
    let conn = conn(1, Duration::from_secs(60));
    conn.install_direct(Direct::new(
        server.clone(),
        Transport::WebSocket,
        "firehose",
        None,
    ));
    // The task waits on its empty queue.
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(conn.poll_take(&mut cx).is_pending());
    assert_eq!(conn.take_rest(), None, "nothing begun");
    // The hub writes frames until one falls short.
    let big = "z".repeat(50_000);
    let mut sent = Vec::new();
    for id in 1..1000 {
        let f = frame(id, &big);
        ws_codec::frame(op::TEXT, &f.json, &mut sent);
        assert!(conn.offer(Delivery::Event(f, "firehose"), true));
        if !conn.queue.is_empty() {
            break;
        }
    }
    conn.hold();
    let rest = conn
        .take_rest()
        .expect("a 50 KB frame overflows an 8 KB send buffer");
    assert!(!rest.is_empty() && sent.ends_with(&rest));
    assert!(conn.queue.is_empty());
    // Held: the next event is queued, not written.
    assert!(conn.offer(Delivery::Event(frame(5000, "later"), "firehose"), true));
    assert!(matches!(conn.try_take(), Some((Delivery::Event(..), 0))));
    // The task writes the rest, then its pong: the client reads whole
    // frames, then the pong.
    let mut own = rest.clone();
    ws_codec::frame(op::PONG, b"p", &mut own);
    sent.truncate(sent.len() - rest.len());
    sent.extend_from_slice(&own);
    let mut got = vec![0u8; sent.len()];
    let mut writer = SharedTcp(server);
    let (wrote, read) = tokio::join!(writer.write_all(&own), client.read_exact(&mut got));
    wrote.unwrap();
    read.unwrap();
    assert!(got == sent, "whole frames, then the pong");
}

/// Connections that come and go faster than their keep-alive period
/// leave at most twice the open ones (plus the slack) in the heap.
#[tokio::test]
async fn churn_does_not_grow_the_keepalive_heap() {
    let mut d = dispatcher();
    let steady: Vec<_> = (0..100)
        .map(|id| conn(id, Duration::from_secs(3600)))
        .collect();
    for c in &steady {
        d.command(Cmd::Open { conn: c.clone() });
    }
    for id in 1000..20_000 {
        d.command(Cmd::Open {
            conn: conn(id, Duration::from_secs(3600)),
        });
        d.remove_conn(id);
        assert!(d.timers.len() <= 2 * d.open.len() + DUE_SLACK + 1);
    }
    assert_eq!(d.open.len(), 100);
}

/// A subscription registered while events it did not see written were
/// heard but not yet dispatched (the merge holding them for a floor) gets
/// none of them: only events after the newest heard when it registered.
#[tokio::test]
async fn a_subscription_starts_after_what_was_heard_before_it_registered() {
    use crate::store::events::EventId;
    use crate::stream::direct::tests::frame;
    use firehose_filters::Rule;
    let heard = Arc::new(subscriber::HeardMark::default());
    let mut d = dispatcher();
    d.heard = heard.clone();
    let c = conn(1, Duration::from_secs(3600));
    d.command(Cmd::Open { conn: c.clone() });
    d.dispatch(frame(10, "seen before"), false);
    // Events 11 and 12 were heard (12 the newest) but wait for a floor.
    heard.raise(EventId(12, 0, 0));
    let (ack, _) = oneshot::channel();
    d.command(Cmd::Register {
        conn: c.clone(),
        sub: 7,
        want: Want::rule(Rule::Firehose),
        stream: "firehose",
        hides: Default::default(),
        ack,
    });
    let mut batch = vec![frame(11, "written before"), frame(12, "also before")];
    d.dispatch_batch(&mut batch);
    d.dispatch(frame(13, "written after"), false);
    // The helper tasks hand the deliveries over.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut got = Vec::new();
    while let Some((delivery, _)) = c.try_take() {
        if let Delivery::Event(f, _) = delivery {
            got.push(f.id);
        }
    }
    assert_eq!(got, vec![EventId(13, 0, 0)], "only what followed its start");
    assert!(d.starts.is_empty(), "the start is forgotten once passed");
}
