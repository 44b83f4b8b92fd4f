//! The job upkeep from its writing to the mail server: three workers' upkeeps at once, each run
//! twice, over 1 000 jobs that cross their notice and expiry times, then the worker sends what
//! they wrote. Each member gets exactly one `job.expiring` and one `job.expired` email per job,
//! whichever upkeep wrote it (docs/guarantee.md: derived ids, the outbox refuses a second event).

use crate::worker::Harness;
use chrono::{DateTime, Duration, Utc};
use jobboard::domain::values::Title;
use jobboard::domain::{EmploymentType, JobStatus, Role};
use jobboard::store::job_upkeep::{JobUpkeepSettings, run_job_upkeep};
use jobboard::store::{CompanyFields, JobFields, NewUser, Store};
use jobboard::worker::Outcome;
use std::collections::HashMap;
use std::sync::Arc;

mod each_backend {
    use crate::helpers::Backend;
    use crate::worker::Harness;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::three_upkeeps_twice_email_each_notice_once(
            Harness::new(Backend::Sqlite, "lease").await,
        )
        .await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        super::three_upkeeps_twice_email_each_notice_once(
            Harness::new(Backend::Postgres, "lease").await,
        )
        .await
    }
}

const JOBS: i64 = 1000;
const COMPANIES: i64 = 10;

async fn employer(store: &Arc<dyn Store>, i: i64) -> (i64, String) {
    let email = format!(
        "{}@example.com",
        crate::helpers::unique(&format!("member{i}-"))
    );
    let u = store
        .create_user(NewUser {
            email: jobboard::domain::values::Email::parse(&email).unwrap(),
            name: format!("Member {i}"),
            role: Role::Employer,
            password_hash: "not-a-hash".into(),
        })
        .await
        .unwrap();
    (u.id, email)
}

fn job(title: String, expires_at: DateTime<Utc>) -> JobFields {
    JobFields {
        title: Title::parse(&title).unwrap(),
        description: "Build things with us".to_string(),
        locations: jobboard::domain::pay_place::places_of_text("Berlin, Germany"),
        workplace: jobboard::domain::pay_place::Workplace::of_remote(false),
        salary: jobboard::domain::pay_place::Salary::older(Some(50_000), Some(70_000)),
        employment_type: EmploymentType::FullTime,
        status: JobStatus::Open,
        expires_at: Some(expires_at),
        resume_required: false,
        questions: None,
    }
}

async fn three_upkeeps_twice_email_each_notice_once(h: Harness) {
    let store = h.app.state.store.clone();
    // 10 companies of two members; 1 000 jobs whose dates fall 1 to 3 days after `base`.
    let base = jobboard::timefmt::now() + Duration::days(1);
    let mut members: HashMap<i64, [(i64, String); 2]> = HashMap::new();
    for c in 0..COMPANIES {
        let owner = employer(&store, 2 * c).await;
        let second = employer(&store, 2 * c + 1).await;
        let company = store
            .create_company(
                owner.0,
                CompanyFields {
                    name: format!("Company {c}"),
                    website: None,
                    description: None,
                },
                None,
            )
            .await
            .unwrap();
        store
            .add_member(
                company.id,
                &jobboard::domain::values::Email::parse(&second.1).unwrap(),
                None,
            )
            .await
            .unwrap();
        members.insert(company.id, [owner, second]);
    }
    let companies: Vec<i64> = {
        let mut ids: Vec<i64> = members.keys().copied().collect();
        ids.sort();
        ids
    };
    let mut jobs: HashMap<i64, i64> = HashMap::new();
    for i in 0..JOBS {
        let when = base + Duration::days(1) + Duration::seconds(i * 173);
        let company = companies[(i % COMPANIES) as usize];
        let row = store
            .create_job(company, job(format!("Job {i}"), when), None)
            .await
            .unwrap();
        jobs.insert(row.id, company);
    }

    // Three workers' stores, as three processes have: their own pools.
    let config = h.app.config(&[]);
    let mut upkeeps = Vec::new();
    for _ in 0..3 {
        upkeeps.push(jobboard::run::open_store(&config, false).await.unwrap());
    }
    let settings = JobUpkeepSettings {
        batch: 50,
        ..JobUpkeepSettings::new(30, 5)
    };
    // At `base` every job is within its notice window; at +2 days about half have expired; at
    // +4 days all of them. Each instant: the three at once, twice.
    for when in [base, base + Duration::days(2), base + Duration::days(4)] {
        for _ in 0..2 {
            let runs = futures::future::join_all(
                upkeeps
                    .iter()
                    .map(|s| run_job_upkeep(&**s, &settings, when)),
            )
            .await;
            for r in runs {
                r.expect("an upkeep run");
            }
        }
    }

    h.publish().await;
    let outcomes = h.worker().await.run_until_empty().await.unwrap();
    let sent = outcomes.iter().filter(|o| **o == Outcome::Sent).count();
    assert_eq!(
        sent,
        4 * JOBS as usize,
        "{:?}",
        &outcomes[..outcomes.len().min(5)]
    );

    // Each email, by what it is about: (job, member, type) exactly once.
    let mut seen: HashMap<(i64, i64, &'static str), usize> = HashMap::new();
    let by_address: HashMap<&str, i64> = members
        .values()
        .flat_map(|m| m.iter().map(|(id, email)| (email.as_str(), *id)))
        .collect();
    for mail in h.smtp.mails() {
        let event_id = mail.event_id();
        let (kind, rest) = if let Some(rest) = event_id.strip_prefix("job-expiring-") {
            ("job.expiring", rest)
        } else if let Some(rest) = event_id.strip_prefix("job-expired-") {
            ("job.expired", rest)
        } else {
            panic!("an email for another event: {event_id}");
        };
        // `{job_id}-{expires_at}-{user_id}`.
        let parts: Vec<i64> = rest.split('-').map(|p| p.parse().unwrap()).collect();
        let (job_id, user_id) = (parts[0], parts[2]);
        let to = by_address
            .iter()
            .find(|(email, _)| mail.recipients[0].contains(*email))
            .map(|(_, id)| *id)
            .unwrap_or_else(|| panic!("{event_id} went to {:?}", mail.recipients));
        assert_eq!(to, user_id, "{event_id} to its member");
        let company = jobs[&job_id];
        assert!(
            members[&company].iter().any(|(id, _)| *id == user_id),
            "{event_id}: a member of the job's company"
        );
        *seen.entry((job_id, user_id, kind)).or_default() += 1;
    }
    assert_eq!(seen.len(), 4 * JOBS as usize, "every job, member and type");
    let repeated: Vec<_> = seen.iter().filter(|(_, n)| **n != 1).collect();
    assert!(repeated.is_empty(), "emailed more than once: {repeated:?}");
    assert_eq!(h.queued().await, 0);
}
