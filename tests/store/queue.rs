//! The outbox as a queue: receive with a visibility timeout, acknowledge, delay, dead-letter,
//! enqueue, statistics, and the relay that publishes it elsewhere.

use crate::harness::*;
use futures::FutureExt;
use jobboard::store::{NewDeadLetter, Store};
use std::sync::{Arc, Mutex};

crate::each_backend!(
    receive_hides_messages_for_their_visibility,
    only_the_latest_receipt_acks_or_delays,
    ack_many_deletes_only_its_own_receive,
    dead_lettering_moves_a_message_once_per_event,
    enqueue_and_stats_count_what_waits,
    relay_deletes_only_what_was_accepted,
);

async fn enqueue(store: &Arc<dyn Store>, n: usize) -> Vec<i64> {
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(
            store
                .queue_enqueue(Some(&format!("ev-{i}")), None, &format!("body {i}"))
                .await
                .expect("enqueue"),
        );
    }
    ids
}

async fn receive_hides_messages_for_their_visibility(store: Arc<dyn Store>) {
    let ids = enqueue(&store, 3).await;
    let first = store.queue_receive(2, 60_000).await.expect("receive");
    assert_eq!(
        first.iter().map(|m| m.id).collect::<Vec<_>>(),
        ids[..2],
        "oldest first"
    );
    assert_eq!(first[0].body, "body 0");
    assert_eq!(first[0].event_id.as_deref(), Some("ev-0"));
    assert_eq!(first[0].receive_count, 1);
    assert_eq!(
        first[0].receipt, first[1].receipt,
        "one receipt per receive"
    );
    let second = store.queue_receive(10, 60_000).await.unwrap();
    assert_eq!(second.iter().map(|m| m.id).collect::<Vec<_>>(), [ids[2]]);
    assert_ne!(second[0].receipt, first[0].receipt);
    assert!(store.queue_receive(10, 60_000).await.unwrap().is_empty());
    assert_eq!(
        store.outbox_pending().await.unwrap(),
        3,
        "in flight, not gone"
    );

    // A visibility already over: the message is at once visible again, counted again.
    let ids = enqueue(&store, 1).await;
    let got = store.queue_receive(10, -1000).await.unwrap();
    assert_eq!(got.iter().map(|m| m.id).collect::<Vec<_>>(), ids);
    let again = store.queue_receive(10, 60_000).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].receive_count, 2);
}

async fn only_the_latest_receipt_acks_or_delays(store: Arc<dyn Store>) {
    let ids = enqueue(&store, 1).await;
    let id = ids[0];
    let old = store.queue_receive(1, -1000).await.unwrap().remove(0);
    let new = store.queue_receive(1, 60_000).await.unwrap().remove(0);
    assert_eq!(new.id, id);
    assert!(!store.queue_ack(id, &old.receipt).await.unwrap(), "stale");
    assert!(!store.queue_delay(id, &old.receipt, 0).await.unwrap());
    assert!(!store.queue_ack(id, "no such receipt").await.unwrap());
    assert!(store.queue_receive(1, 60_000).await.unwrap().is_empty());

    // Delayed by 0: visible now, and the receipt stays valid until the next receive.
    assert!(store.queue_delay(id, &new.receipt, 0).await.unwrap());
    let third = store.queue_receive(1, 60_000).await.unwrap().remove(0);
    assert_eq!((third.id, third.receive_count), (id, 3));
    assert!(!store.queue_ack(id, &new.receipt).await.unwrap());
    // Delayed into the future: hidden.
    assert!(store.queue_delay(id, &third.receipt, 60_000).await.unwrap());
    assert!(store.queue_receive(1, 60_000).await.unwrap().is_empty());
    // A negative delay is no earlier than now.
    assert!(
        store
            .queue_delay(id, &third.receipt, -60_000)
            .await
            .unwrap()
    );
    let fourth = store.queue_receive(1, 60_000).await.unwrap().remove(0);
    assert!(store.queue_ack(id, &fourth.receipt).await.unwrap());
    assert!(!store.queue_ack(id, &fourth.receipt).await.unwrap(), "gone");
    assert_eq!(store.outbox_pending().await.unwrap(), 0);
    assert!(!store.queue_delay(id, &fourth.receipt, 0).await.unwrap());
}

async fn ack_many_deletes_only_its_own_receive(store: Arc<dyn Store>) {
    let ids = enqueue(&store, 4).await;
    let a = store.queue_receive(2, 60_000).await.unwrap();
    let b = store.queue_receive(2, 60_000).await.unwrap();
    assert_eq!(store.queue_ack_many(&a[0].receipt, &[]).await.unwrap(), 0);
    // b's ids under a's receipt are not a's to delete.
    assert_eq!(
        store
            .queue_ack_many(&a[0].receipt, &[ids[0], ids[2], ids[3]])
            .await
            .unwrap(),
        1
    );
    assert_eq!(store.outbox_pending().await.unwrap(), 3);
    assert_eq!(
        store
            .queue_ack_many(&b[0].receipt, &[ids[2], ids[3]])
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store
            .queue_ack_many(&a[0].receipt, &[ids[0], ids[1]])
            .await
            .unwrap(),
        1
    );
    assert_eq!(store.outbox_pending().await.unwrap(), 0);
}

fn dead(event_id: Option<&str>, reason: &str, invalid: bool) -> NewDeadLetter {
    NewDeadLetter {
        event_id: event_id.map(str::to_string),
        reason: reason.to_string(),
        attempts: 5,
        body: format!("body of {event_id:?}"),
        first_failed_at: Some(1_000),
        invalid,
    }
}

async fn dead_lettering_moves_a_message_once_per_event(store: Arc<dyn Store>) {
    let before = store.now_ms().await.unwrap();
    for _ in 0..3 {
        store.queue_enqueue(Some("ev"), None, "b").await.unwrap();
    }
    let got = store.queue_receive(3, 60_000).await.unwrap();
    store
        .queue_dead_letter(
            got[0].id,
            &got[0].receipt,
            dead(Some("ev"), "broken", false),
        )
        .await
        .expect("dead letter");
    assert_eq!(
        store.outbox_pending().await.unwrap(),
        2,
        "moved, not copied"
    );
    let letters = store.dead_letters().await.unwrap();
    assert_eq!(letters.len(), 1);
    let d = &letters[0];
    assert_eq!(d.event_id.as_deref(), Some("ev"));
    assert_eq!((d.reason.as_str(), d.attempts), ("broken", 5));
    assert_eq!(d.body, "body of Some(\"ev\")");
    assert_eq!(d.first_failed_at, 1_000);
    assert!(d.last_failed_at >= before, "now, on the database clock");

    // A later copy of the same event leaves the queue but adds no second dead letter...
    store
        .queue_dead_letter(got[1].id, &got[1].receipt, dead(Some("ev"), "again", false))
        .await
        .unwrap();
    assert_eq!(store.outbox_pending().await.unwrap(), 1);
    assert_eq!(store.dead_letters().await.unwrap().len(), 1);
    // ...unless it is a message that could not be read as an event: each of those keeps its own.
    let mut letter = dead(Some("ev"), "third", true);
    letter.first_failed_at = None;
    store
        .queue_dead_letter(got[2].id, &got[2].receipt, letter)
        .await
        .unwrap();
    assert_eq!(store.outbox_pending().await.unwrap(), 0);
    let letters = store.dead_letters().await.unwrap();
    assert_eq!(
        letters
            .iter()
            .map(|d| d.reason.as_str())
            .collect::<Vec<_>>(),
        ["broken", "third"]
    );
    assert!(letters[1].first_failed_at >= before, "none given: now");
}

async fn enqueue_and_stats_count_what_waits(store: Arc<dyn Store>) {
    let stats = store.queue_stats().await.unwrap();
    assert_eq!((stats.pending, stats.dead_letters), (0, 0));
    assert_eq!(stats.oldest_age_ms, None);
    assert_eq!(store.outbox_pending().await.unwrap(), 0);

    let s = scenario(&store).await;
    // The submission's own event is not what this case is about.
    let submitted = store.queue_receive(1, 60_000).await.unwrap().remove(0);
    assert!(
        store
            .queue_ack(submitted.id, &submitted.receipt)
            .await
            .unwrap()
    );
    let id = store
        .queue_enqueue(None, Some(s.application.id), "hand-made")
        .await
        .unwrap();
    let other = store.queue_enqueue(Some("e"), None, "x").await.unwrap();
    assert!(other > id);
    let got = store.queue_receive(1, 60_000).await.unwrap();
    assert_eq!(
        (got[0].id, got[0].event_id.as_deref(), got[0].body.as_str()),
        (id, None, "hand-made")
    );
    let stats = store.queue_stats().await.unwrap();
    assert_eq!(stats.pending, 2, "visible and in flight alike");
    let age = stats.oldest_age_ms.expect("an oldest message");
    assert!((0..60_000).contains(&age), "{age}");
    store
        .queue_dead_letter(got[0].id, &got[0].receipt, dead(None, "bad", true))
        .await
        .unwrap();
    let stats = store.queue_stats().await.unwrap();
    assert_eq!((stats.pending, stats.dead_letters), (1, 1));
    assert_eq!(store.outbox_pending().await.unwrap(), 1);
}

async fn relay_deletes_only_what_was_accepted(store: Arc<dyn Store>) {
    // Nothing to publish: the queue is not called.
    let called = Arc::new(Mutex::new(false));
    let flag = called.clone();
    let n = store
        .relay_outbox(
            10,
            LEASE_MS,
            Box::new(move |_| {
                *flag.lock().unwrap() = true;
                async { Ok(vec![].into()) }.boxed()
            }),
        )
        .await
        .unwrap();
    assert_eq!(n, 0);
    assert!(!*called.lock().unwrap());

    enqueue(&store, 3).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let published = seen.clone();
    let n = store
        .relay_outbox(
            10,
            LEASE_MS,
            Box::new(move |bodies| {
                *published.lock().unwrap() = bodies;
                // The queue took the first and the last.
                async { Ok(vec![0, 2].into()) }.boxed()
            }),
        )
        .await
        .expect("relay");
    assert_eq!(*seen.lock().unwrap(), ["body 0", "body 1", "body 2"]);
    assert_eq!(n, 2, "what the queue accepted");
    assert_eq!(store.outbox_pending().await.unwrap(), 1);

    // A failed publish deletes nothing.
    let err = store
        .relay_outbox(
            10,
            LEASE_MS,
            Box::new(|_| async { Err(anyhow::anyhow!("queue down")) }.boxed()),
        )
        .await;
    assert!(err.is_err());
    assert_eq!(store.outbox_pending().await.unwrap(), 1);

    // The row left is the one not accepted; `limit` bounds a batch.
    enqueue(&store, 2).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let published = seen.clone();
    let n = store
        .relay_outbox(
            2,
            LEASE_MS,
            Box::new(move |bodies| {
                let all = (0..bodies.len()).collect();
                *published.lock().unwrap() = bodies;
                async move { Ok(all) }.boxed()
            }),
        )
        .await
        .unwrap();
    assert_eq!(n, 2);
    assert_eq!(*seen.lock().unwrap(), ["body 1", "body 0"]);
    assert_eq!(store.outbox_pending().await.unwrap(), 1);

    // Rows being published are another relay's to skip, and no transaction waits on the
    // publish: the second relay, run from inside the first's publish, finds nothing to take.
    let other = store.clone();
    let n = store
        .relay_outbox(
            10,
            LEASE_MS,
            Box::new(move |bodies| {
                async move {
                    let inner = other
                        .relay_outbox(
                            10,
                            LEASE_MS,
                            Box::new(|_| async { Ok(vec![].into()) }.boxed()),
                        )
                        .await
                        .expect("a second relay meanwhile");
                    assert_eq!(inner, 0, "the second relay took the first's rows");
                    Ok((0..bodies.len()).collect())
                }
                .boxed()
            }),
        )
        .await
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(store.outbox_pending().await.unwrap(), 0);

    // Indexes the queue never had do not count.
    enqueue(&store, 1).await;
    let n = store
        .relay_outbox(
            10,
            LEASE_MS,
            Box::new(|_| async { Ok(vec![0, 5, 9].into()) }.boxed()),
        )
        .await
        .unwrap();
    assert_eq!(n, 1);
}

const LEASE_MS: i64 = 30_000;
