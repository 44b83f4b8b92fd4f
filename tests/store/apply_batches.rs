//! Applies that arrive together: on PostgreSQL they share statements (`store::combine`), and
//! each is still judged, written or declined on its own, with its one history row, event and
//! outbox row; a batch that fails as a whole leaves each apply to be written alone.

use crate::harness::*;
use jobboard::domain::event::{EventKind, parse_event};
use jobboard::domain::{Conflict, Role};
use jobboard::store::{ApplicationRow, NewApplication, StoreError, StoreResult, TokenClaim};
use std::collections::{HashMap, HashSet};

crate::each_backend!(with_db: applies_at_once_are_each_judged_and_written_once, a_batch_that_fails_leaves_each_apply_alone, a_job_locked_by_a_writer_holds_up_only_its_own_apply);

/// Text a candidate may send, carried through the batch's JSON and SQL: quotes and backslashes
/// of both, the array's and object's closing brackets, a line break, markup and a character
/// outside the Basic Multilingual Plane.
const HOSTILE: &str = "'); DROP TABLE applications; -- \"},{\"job_id\":1}] \\u0000 \\\" \n<script>alert(1)</script> 😀";

/// What an apply was, and what it should come to.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Want {
    /// Written (unless it is one of a pair applied to more than once).
    Written,
    /// Declined: written by nobody.
    Declined,
}

async fn applies_at_once_are_each_judged_and_written_once(db: &TestDb) {
    let store = db.store.clone();
    let employer = user(&store, Role::Employer).await;
    let company = company(&store, employer.id, "Together").await;
    let mut plain = Vec::new();
    for n in 0..6 {
        plain.push(job(&store, company.id, job_fields(&format!("Plain {n}"))).await);
    }
    let Declining {
        asks,
        wants,
        closed,
    } = declining(&store, company.id).await;
    let mut candidates = Vec::new();
    for _ in 0..6 {
        candidates.push(user(&store, Role::Candidate).await);
    }
    let claim = |c: usize| TokenClaim {
        candidate_id: candidates[c].id,
        generation: candidates[c].token_generation,
    };
    let mut resumes = Vec::new();
    for (n, c) in candidates.iter().enumerate().take(2) {
        let r = store
            .create_resume(c.id, new_resume(&format!("cv{n}.pdf")), 10, None)
            .await
            .unwrap();
        resumes.push(r.id);
    }
    let letter = |text: String| NewApplication {
        cover_letter: Some(text),
        ..Default::default()
    };
    // Every candidate to every plain job; the first pair four times over; declines of every
    // kind; a résumé a job requires, given, and another's résumé, refused.
    let mut applies: Vec<(i64, TokenClaim, NewApplication, Want)> = Vec::new();
    for (c, _) in candidates.iter().enumerate() {
        for j in &plain {
            applies.push((
                j.id,
                claim(c),
                letter(format!("{c} to {}: {HOSTILE}", j.id)),
                Want::Written,
            ));
        }
    }
    for _ in 0..3 {
        applies.push((plain[0].id, claim(0), letter("again".into()), Want::Written));
    }
    let revoked = TokenClaim {
        generation: candidates[3].token_generation + 1,
        ..claim(3)
    };
    let as_employer = TokenClaim {
        candidate_id: employer.id,
        generation: employer.token_generation,
    };
    for (job, claim) in [
        (closed.id, claim(1)),
        (closed.id + 1000, claim(1)),
        (asks.id, claim(2)),
        (wants.id, claim(3)),
        (plain[1].id, as_employer),
    ] {
        for _ in 0..3 {
            applies.push((job, claim, letter("no".into()), Want::Declined));
        }
    }
    // A revoked token on a job the candidate has not applied to yet.
    let spare = job(&store, company.id, job_fields("Spare")).await;
    let titles: HashMap<i64, String> = plain
        .iter()
        .chain([&wants, &spare])
        .map(|j| (j.id, j.title.clone()))
        .collect();
    let emails: HashMap<i64, String> = candidates.iter().map(|c| (c.id, c.email.clone())).collect();
    applies.push((spare.id, revoked, letter("no".into()), Want::Declined));
    let with = |r: i64| NewApplication {
        resume_id: Some(r),
        ..Default::default()
    };
    // One résumé to two jobs at once, and another's résumé, refused (more than once, so that
    // some land in a batch).
    applies.push((wants.id, claim(0), with(resumes[0]), Want::Written));
    applies.push((spare.id, claim(0), with(resumes[0]), Want::Written));
    for _ in 0..3 {
        applies.push((wants.id, claim(4), with(resumes[1]), Want::Declined));
    }

    let tasks: Vec<_> = applies
        .iter()
        .cloned()
        .map(|(job, claim, input, _)| {
            let store = store.clone();
            tokio::spawn(async move { store.apply_unread(job, claim, &input).await })
        })
        .collect();
    let mut answers: Vec<StoreResult<Option<ApplicationRow>>> = Vec::new();
    for t in tasks {
        answers.push(t.await.expect("no panic"));
    }

    if store.backend() != "postgres" {
        assert!(
            answers.iter().all(|a| matches!(a, Ok(None))),
            "SQLite reads the account and the job first: {answers:?}"
        );
        assert_eq!(store.outbox_pending().await.unwrap(), 0);
        return;
    }
    let mut written = HashMap::new();
    for ((job, claim, input, want), answer) in applies.iter().zip(&answers) {
        let pair = (*job, claim.candidate_id);
        match (want, answer) {
            (Want::Written, Ok(Some(a))) => {
                // What the database holds under the answer's id is this apply, and what the
                // statement read back for it is its job's and its candidate's.
                let stored = format!(
                    "SELECT COUNT(*) FROM applications WHERE id = {} AND job_id = {} \
                     AND candidate_id = {} AND cover_letter IS NOT DISTINCT FROM {}",
                    a.id,
                    job,
                    claim.candidate_id,
                    input
                        .cover_letter
                        .as_ref()
                        .map_or("NULL".to_string(), |l| format!(
                            "'{}'",
                            l.replace('\'', "''")
                        ))
                );
                assert_eq!(
                    count(db, &stored).await,
                    1,
                    "application {} is {pair:?}'s",
                    a.id
                );
                assert_eq!(
                    (a.job_id, a.candidate_id),
                    pair,
                    "the answer is this apply's"
                );
                assert_eq!(a.cover_letter, input.cover_letter);
                assert_eq!(a.resume_id, input.resume_id);
                assert_eq!(a.job_title, titles[job], "the job's title");
                assert_eq!(
                    a.candidate_email, emails[&claim.candidate_id],
                    "the candidate's"
                );
                let filename = input
                    .resume_id
                    .map(|r| format!("cv{}.pdf", resumes.iter().position(|&x| x == r).unwrap()));
                assert_eq!(a.resume_filename, filename, "the résumé's name");
                assert!(
                    written.insert(pair, a.clone()).is_none(),
                    "two applications written for {pair:?}"
                );
            }
            // A second apply of one pair: declined in its batch, or refused alone.
            (Want::Written, Ok(None) | Err(StoreError::Conflict(Conflict::AlreadyApplied)))
                if pair == (plain[0].id, candidates[0].id) => {}
            (Want::Declined, Ok(None)) => {}
            (want, answer) => panic!("{pair:?} wanted {want:?}, answered {answer:?}"),
        }
    }
    let pairs: HashSet<_> = applies
        .iter()
        .filter(|a| a.3 == Want::Written)
        .map(|a| (a.0, a.1.candidate_id))
        .collect();
    assert_eq!(
        written.keys().copied().collect::<HashSet<_>>(),
        pairs,
        "every pair written once"
    );
    let attached = &written[&(wants.id, candidates[0].id)];
    assert_eq!(attached.resume_filename.as_deref(), Some("cv0.pdf"));

    // In the database: each application with one history row, one event and one outbox row,
    // all naming it.
    let n = written.len() as i64;
    assert_eq!(count(db, "SELECT COUNT(*) FROM applications").await, n);
    assert_eq!(
        count(db, "SELECT COUNT(*) FROM application_history").await,
        n
    );
    assert_eq!(count(db, "SELECT COUNT(*) FROM events").await, n);
    let messages = store.queue_receive(1000, 60_000).await.unwrap();
    assert_eq!(
        messages.len(),
        written.len(),
        "one outbox row per application"
    );
    let by_id: HashMap<i64, &ApplicationRow> = written.values().map(|a| (a.id, a)).collect();
    let mut seen = HashSet::new();
    for m in &messages {
        let event = parse_event(&m.body).expect("an event");
        assert_eq!(m.body, event.to_json(), "the body as the process writes it");
        let EventKind::Submitted { application_id } = event.kind else {
            panic!("not a submission: {}", m.body);
        };
        let a = by_id[&application_id];
        assert_eq!(event.occurred_at, a.created_at);
        assert!(
            seen.insert(application_id),
            "two events for {application_id}"
        );
        let history = store.history(application_id).await.unwrap();
        assert_eq!(history.len(), 1);
        assert_eq!(
            history[0].event_id.as_deref(),
            Some(event.event_id.as_str())
        );
        assert_eq!(m.event_id.as_deref(), Some(event.event_id.as_str()));
    }
    // They went in together: fewer transactions than applications.
    let transactions = count(db, "SELECT COUNT(DISTINCT xmin::text) FROM applications").await;
    assert!(
        transactions < n,
        "{n} applications in {transactions} transactions: none shared a statement"
    );
}

async fn a_batch_that_fails_leaves_each_apply_alone(db: &TestDb) {
    let store = db.store.clone();
    let employer = user(&store, Role::Employer).await;
    let company = company(&store, employer.id, "Alone").await;
    let job_id = job(&store, company.id, job_fields("Plain")).await.id;
    let mut applies = Vec::new();
    for n in 0..24 {
        let c = user(&store, Role::Candidate).await;
        // One letter PostgreSQL cannot store (a NUL character): its batch fails as a whole.
        let text = if n == 7 {
            "bad \0 letter".to_string()
        } else {
            format!("letter {n}")
        };
        applies.push((
            TokenClaim {
                candidate_id: c.id,
                generation: c.token_generation,
            },
            NewApplication {
                cover_letter: Some(text),
                ..Default::default()
            },
        ));
    }
    let tasks: Vec<_> = applies
        .iter()
        .cloned()
        .map(|(claim, input)| {
            let store = store.clone();
            tokio::spawn(async move { store.apply_unread(job_id, claim, &input).await })
        })
        .collect();
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.expect("no panic"));
    }
    if store.backend() != "postgres" {
        assert!(answers.iter().all(|a| matches!(a, Ok(None))));
        return;
    }
    for (n, ((claim, _), answer)) in applies.iter().zip(&answers).enumerate() {
        match answer {
            Ok(Some(a)) if n != 7 => assert_eq!(a.candidate_id, claim.candidate_id),
            Err(_) if n == 7 => {}
            other => panic!("apply {n}: {other:?}"),
        }
    }
    assert_eq!(count(db, "SELECT COUNT(*) FROM applications").await, 23);
    assert_eq!(store.outbox_pending().await.unwrap(), 23);
}

/// A job another transaction has locked to write it (an edit, a renewal, the upkeep's expiry)
/// holds up the applies to that job, and no other: a batch does not wait for it.
async fn a_job_locked_by_a_writer_holds_up_only_its_own_apply(db: &TestDb) {
    let store = db.store.clone();
    let jobboard::config::DatabaseUrl::Postgres(url) = &db.url else {
        return; // SQLite writes one transaction at a time, batches or not.
    };
    let employer = user(&store, Role::Employer).await;
    let company = company(&store, employer.id, "Locked").await;
    let locked = job(&store, company.id, job_fields("Being edited")).await.id;
    let mut others = Vec::new();
    for n in 0..4 {
        others.push(
            job(&store, company.id, job_fields(&format!("Free {n}")))
                .await
                .id,
        );
    }
    let mut candidates = Vec::new();
    for _ in 0..8 {
        let c = user(&store, Role::Candidate).await;
        candidates.push(TokenClaim {
            candidate_id: c.id,
            generation: c.token_generation,
        });
    }
    use sqlx::Connection;
    let mut writer = sqlx::PgConnection::connect(url).await.expect("connect");
    sqlx::raw_sql(&format!(
        "BEGIN; SELECT id FROM jobs WHERE id = {locked} FOR UPDATE"
    ))
    .execute(&mut writer)
    .await
    .expect("lock the job");
    let apply = |job: i64, claim: TokenClaim| {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .apply_unread(job, claim, &NewApplication::default())
                .await
        })
    };
    // The locked job's applies first, so that the others come in behind them.
    let waiting: Vec<_> = candidates.iter().map(|&c| apply(locked, c)).collect();
    let free: Vec<_> = others
        .iter()
        .flat_map(|&j| candidates.iter().map(move |&c| (j, c)))
        .map(|(j, c)| apply(j, c))
        .collect();
    let done = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        let mut n = 0;
        for t in free {
            let written = t.await.expect("no panic").expect("written");
            assert!(written.is_some(), "an apply to a free job was declined");
            n += 1;
        }
        n
    })
    .await
    .expect("the applies to free jobs waited for the lock on another job");
    assert_eq!(done, others.len() * candidates.len());
    sqlx::raw_sql("COMMIT")
        .execute(&mut writer)
        .await
        .expect("release");
    // Written once the lock is gone, or declined without waiting (the caller then reads the
    // job and writes in a transaction of its own, which waits for the lock).
    for t in waiting {
        let answer = t.await.expect("no panic");
        assert!(answer.is_ok(), "the locked job's apply: {answer:?}");
    }
}
