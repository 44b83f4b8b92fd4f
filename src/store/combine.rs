//! Writes that arrive together, written together: a [`Combiner`] gathers the items submitted
//! while its statements run and hands each batch to one statement, so that concurrent requests
//! share a statement (and its commit) instead of each paying for its own.
//!
//! No item waits for a batch to fill: a submitter whose item finds a runner free starts one at
//! once, and the item goes alone; items queue only while every runner is busy, and the next
//! batch takes all of them (up to `max_batch`). At low load nothing changes; under load the
//! batches grow with it.
//!
//! A runner is a task of its own: a submitter that goes away (a client hung up) does not cut
//! short the statement of the others in its batch.

use futures::FutureExt;
use std::collections::VecDeque;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

/// Gathers items of type `I`, each answered with an `O`.
pub struct Combiner<I, O> {
    inner: Arc<Inner<I, O>>,
}

struct Inner<I, O> {
    queue: Mutex<VecDeque<(I, oneshot::Sender<O>)>>,
    runners: Arc<Semaphore>,
    max_batch: usize,
}

impl<I: Send + 'static, O: Send + 'static> Combiner<I, O> {
    /// At most `runners` batches at once (at least one), each of at most `max_batch` items (at
    /// least one).
    pub fn new(runners: usize, max_batch: usize) -> Self {
        Combiner {
            inner: Arc::new(Inner {
                queue: Mutex::new(VecDeque::new()),
                runners: Arc::new(Semaphore::new(runners.max(1))),
                max_batch: max_batch.max(1),
            }),
        }
    }

    /// Submits `item` and waits for its answer. `run` writes a batch and answers each of its
    /// items, in their order; the runner this submission starts, if any, uses it for every batch
    /// it takes. `None` if the batch ended without an answer for this item (`run` panicked, or
    /// answered fewer items than it was given). An item whose submitter goes away before its
    /// batch is taken is dropped unwritten.
    pub async fn submit<F, Fut>(&self, item: I, run: F) -> Option<O>
    where
        F: Fn(Vec<I>) -> Fut + Send + 'static,
        Fut: Future<Output = Vec<O>> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        self.lock().push_back((item, tx));
        if let Ok(permit) = self.inner.runners.clone().try_acquire_owned() {
            tokio::spawn(Self::runner(self.inner.clone(), permit, run));
        }
        rx.await.ok()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(I, oneshot::Sender<O>)>> {
        lock(&self.inner)
    }

    /// Takes batches until the queue is empty. An item queued while the permit is being given
    /// back is taken by this runner again, or by the one its submitter starts: the queue is
    /// looked at once more after the permit is released.
    async fn runner<F, Fut>(inner: Arc<Inner<I, O>>, permit: OwnedSemaphorePermit, run: F)
    where
        F: Fn(Vec<I>) -> Fut + Send + 'static,
        Fut: Future<Output = Vec<O>> + Send + 'static,
    {
        let mut permit = Some(permit);
        loop {
            let batch: Vec<_> = {
                let mut queue = lock(&inner);
                let n = queue.len().min(inner.max_batch);
                // An item whose submitter has gone (its request timed out, its client hung up)
                // while it waited is dropped unwritten: it was never sent.
                queue
                    .drain(..n)
                    .filter(|(_, answer)| !answer.is_closed())
                    .collect()
            };
            if batch.is_empty() {
                drop(permit.take());
                if lock(&inner).is_empty() {
                    return;
                }
                match inner.runners.clone().try_acquire_owned() {
                    Ok(p) => permit = Some(p),
                    // Another runner holds a permit and will look at the queue again.
                    Err(_) => return,
                }
                continue;
            }
            let (items, answers): (Vec<I>, Vec<_>) = batch.into_iter().unzip();
            // A panic in `run` answers this batch with nothing (`None`) and leaves the runner
            // going, so that the items queued behind it are still taken.
            let outcomes = AssertUnwindSafe(run(items))
                .catch_unwind()
                .await
                .unwrap_or_default();
            for (answer, outcome) in answers.into_iter().zip(outcomes) {
                // A submitter that went away has nobody to tell.
                let _ = answer.send(outcome);
            }
        }
    }
}

fn lock<I, O>(inner: &Inner<I, O>) -> std::sync::MutexGuard<'_, VecDeque<(I, oneshot::Sender<O>)>> {
    // The lock is held only to push or drain, which cannot panic half-way.
    inner.queue.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Each batch doubles its items after a pause, and records its size.
    fn doubler(
        sizes: Arc<Mutex<Vec<usize>>>,
    ) -> impl Fn(Vec<u64>) -> futures::future::BoxFuture<'static, Vec<u64>> + Send + 'static {
        move |items: Vec<u64>| {
            let sizes = sizes.clone();
            Box::pin(async move {
                sizes.lock().unwrap().push(items.len());
                tokio::time::sleep(Duration::from_millis(20)).await;
                items.into_iter().map(|i| i * 2).collect()
            })
        }
    }

    /// Each batch takes 50 ms, then records its items as written and answers each with itself.
    fn recording(
        written: Arc<Mutex<Vec<u64>>>,
    ) -> impl Fn(Vec<u64>) -> futures::future::BoxFuture<'static, Vec<u64>> + Clone + Send + 'static
    {
        move |items: Vec<u64>| {
            let written = written.clone();
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                written.lock().unwrap().extend(items.iter().copied());
                items
            })
        }
    }

    #[tokio::test]
    async fn an_item_alone_is_written_at_once_by_itself() {
        let c = Combiner::new(2, 8);
        let sizes = Arc::new(Mutex::new(Vec::new()));
        assert_eq!(c.submit(21, doubler(sizes.clone())).await, Some(42));
        assert_eq!(c.submit(5, doubler(sizes.clone())).await, Some(10));
        assert_eq!(*sizes.lock().unwrap(), vec![1, 1]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn items_that_arrive_together_share_batches_and_each_gets_its_own_answer() {
        let c = Arc::new(Combiner::new(2, 16));
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..200u64 {
            let (c, sizes) = (c.clone(), sizes.clone());
            tasks.push(tokio::spawn(async move {
                (i, c.submit(i, doubler(sizes)).await)
            }));
        }
        for t in tasks {
            let (i, answer) = t.await.unwrap();
            assert_eq!(answer, Some(i * 2), "item {i}");
        }
        let sizes = sizes.lock().unwrap();
        assert_eq!(sizes.iter().sum::<usize>(), 200, "every item written once");
        assert!(
            sizes.iter().all(|&n| n <= 16),
            "no batch over its limit: {sizes:?}"
        );
        assert!(
            sizes.len() < 50,
            "200 items at once took {} batches: they were not gathered",
            sizes.len()
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_more_batches_run_at_once_than_runners_and_none_is_left_behind() {
        let c = Arc::new(Combiner::new(3, 4));
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let run = {
            let (running, most) = (running.clone(), most.clone());
            move |items: Vec<u64>| {
                let (running, most) = (running.clone(), most.clone());
                async move {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    running.fetch_sub(1, Ordering::SeqCst);
                    items
                }
            }
        };
        // Waves of submissions, some landing while runners give back their permits.
        for wave in 0..50u64 {
            let mut tasks = Vec::new();
            for i in 0..(wave % 7 + 1) {
                let (c, run) = (c.clone(), run.clone());
                tasks.push(tokio::spawn(
                    async move { c.submit(wave * 100 + i, run).await },
                ));
            }
            for (i, t) in tasks.into_iter().enumerate() {
                let answer = tokio::time::timeout(Duration::from_secs(10), t)
                    .await
                    .expect("an item was left in the queue with no runner")
                    .unwrap();
                assert_eq!(answer, Some(wave * 100 + i as u64));
            }
        }
        assert!(
            most.load(Ordering::SeqCst) <= 3,
            "more batches at once than runners"
        );
    }

    #[tokio::test]
    async fn a_submitter_that_goes_away_does_not_cut_short_the_others_batch() {
        let c = Arc::new(Combiner::new(1, 8));
        let written = Arc::new(Mutex::new(Vec::new()));
        let run = recording(written.clone());
        // The first submitter starts the runner, then is dropped mid-batch.
        let first = {
            let (c, run) = (c.clone(), run.clone());
            tokio::spawn(async move { c.submit(1, run).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        let second = {
            let (c, run) = (c.clone(), run.clone());
            tokio::spawn(async move { c.submit(2, run).await })
        };
        first.abort();
        assert_eq!(second.await.unwrap(), Some(2));
        assert_eq!(
            *written.lock().unwrap(),
            vec![1, 2],
            "the first item was still written"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_that_panics_answers_none_and_the_items_behind_it_are_still_taken() {
        let c = Arc::new(Combiner::new(1, 1));
        let run = |items: Vec<u64>| async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(items != [13], "thirteen");
            items
        };
        let unlucky = {
            let c = c.clone();
            tokio::spawn(async move { c.submit(13, run).await })
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        // Queued behind the panicking batch, with the one runner busy: no runner of its own.
        let behind = {
            let c = c.clone();
            tokio::spawn(async move { c.submit(14, run).await })
        };
        assert_eq!(unlucky.await.unwrap(), None);
        let behind = tokio::time::timeout(Duration::from_secs(5), behind)
            .await
            .expect("the item behind the panic was left in the queue");
        assert_eq!(behind.unwrap(), Some(14));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_item_whose_submitter_went_away_while_it_waited_is_not_written() {
        let c = Arc::new(Combiner::new(1, 8));
        let written = Arc::new(Mutex::new(Vec::new()));
        let run = recording(written.clone());
        let first = {
            let (c, run) = (c.clone(), run.clone());
            tokio::spawn(async move { c.submit(1, run).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        // Queued while the first batch runs, then given up on (a request's timeout).
        let gone = {
            let (c, run) = (c.clone(), run.clone());
            tokio::spawn(async move { c.submit(2, run).await })
        };
        let kept = {
            let (c, run) = (c.clone(), run.clone());
            tokio::spawn(async move { c.submit(3, run).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        gone.abort();
        assert_eq!(first.await.unwrap(), Some(1));
        assert_eq!(kept.await.unwrap(), Some(3));
        assert_eq!(
            *written.lock().unwrap(),
            vec![1, 3],
            "the abandoned item was not written"
        );
    }

    #[tokio::test]
    async fn an_answer_missing_from_the_batch_is_none_not_a_hang() {
        let c = Combiner::new(1, 8);
        let answer = c
            .submit(7u64, |_items: Vec<u64>| async { Vec::<u64>::new() })
            .await;
        assert_eq!(answer, None);
    }
}
