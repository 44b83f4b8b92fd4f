//! Applies that arrive together: on PostgreSQL they share statements (`store::combine`), and
//! each is still judged, written or declined on its own, with its one history row, event and
//! outbox row; a batch that fails as a whole leaves each apply to be written alone.

use crate::harness::*;
use jobboard::domain::event::{EventKind, parse_event};
use jobboard::domain::{Conflict, JobStatus, Role};
use jobboard::store::{
    ApplicationRow, NewApplication, NewResume, StoreError, StoreResult, TokenClaim,
};
use std::collections::{HashMap, HashSet};

crate::each_backend!(with_db: applies_at_once_are_each_judged_and_written_once, a_batch_that_fails_leaves_each_apply_alone);

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
    let mut closed = job_fields("Closed");
    closed.status = JobStatus::Closed;
    let closed = job(&store, company.id, closed).await;
    let mut asks = job_fields("Asks");
    asks.questions = Some(r#"[{"id":1,"text":"Rust?","kind":"yes_no","required":true}]"#.into());
    let asks = job(&store, company.id, asks).await;
    let mut wants = job_fields("Wants a résumé");
    wants.resume_required = true;
    let wants = job(&store, company.id, wants).await;
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
            .create_resume(
                c.id,
                NewResume {
                    filename: format!("cv{n}.pdf"),
                    content_type: "application/pdf".into(),
                    size: 10,
                    sha256: "0".repeat(64),
                    storage_key: format!("resumes/{}", unique("batch")),
                },
                10,
                None,
            )
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
    let titles: HashMap<i64, String> = plain
        .iter()
        .chain([&wants])
        .map(|j| (j.id, j.title.clone()))
        .collect();
    let mut applies: Vec<(i64, TokenClaim, NewApplication, Want)> = Vec::new();
    for (c, _) in candidates.iter().enumerate() {
        for j in &plain {
            applies.push((
                j.id,
                claim(c),
                letter(format!("{c} to {}", j.id)),
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
        applies.push((job, claim, letter("no".into()), Want::Declined));
    }
    // A revoked token on a job the candidate has not applied to yet.
    let spare = job(&store, company.id, job_fields("Spare")).await;
    applies.push((spare.id, revoked, letter("no".into()), Want::Declined));
    let with = |r: i64| NewApplication {
        resume_id: Some(r),
        ..Default::default()
    };
    applies.push((wants.id, claim(0), with(resumes[0]), Want::Written));
    applies.push((wants.id, claim(4), with(resumes[1]), Want::Declined));

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
                assert_eq!(
                    (a.job_id, a.candidate_id),
                    pair,
                    "the answer is this apply's"
                );
                assert_eq!(a.cover_letter, input.cover_letter);
                assert_eq!(a.resume_id, input.resume_id);
                assert_eq!(a.job_title, titles[job], "the job's title");
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
