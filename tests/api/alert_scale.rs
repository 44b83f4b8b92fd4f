//! The job alerts' digests at a board's scale: 10 000 alerts over a corpus with known matches,
//! the upkeep run by three workers at once and again, over two days: each alert with new
//! matches gets exactly one digest per day, listing exactly what the contract's rules (written
//! plainly here) say, and no job twice across the two days; a sample is emailed and read back
//! from the SMTP server. And a worker process killed with SIGKILL while it writes the digests:
//! after a restart every due digest is written, once, as the rules say.

use crate::crash::command;
use crate::helpers::*;
use crate::worker::{Harness, wait_until};
use chrono::{DateTime, Duration, DurationRound, TimeDelta, Utc};
use jobboard::config::DatabaseUrl;
use jobboard::domain::alert::{DIGEST_JOBS, Frequency, describe};
use jobboard::domain::event::{EventKind, parse_event};
use jobboard::domain::search::{SearchFilters, document_terms, query_terms};
use jobboard::domain::values::Title;
use jobboard::domain::{EmploymentType, JobStatus};
use jobboard::store::{CompanyFields, JobFields, NewUser, Store};
use jobboard::unsubscribe::{self, Target};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::process::Stdio;
use std::sync::Arc;

macro_rules! on_both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use crate::worker::Harness;
            use crate::helpers::Backend;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(Harness::new(Backend::Sqlite, "lease").await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(Harness::new(Backend::Postgres, "lease").await).await
            }
        }
    )*};
}

on_both!(
    ten_thousand_alerts_by_three_workers_twice_over_two_days,
    a_worker_killed_while_writing_digests_leaves_each_written_once,
);

const ALERTS: usize = 10_000;
const JOBS: usize = 300;
const BASE: &str = "https://jobs.example";
/// The secret the test app signs with (`helpers.rs`).
const SECRET: &[u8] = b"test-secret-test-secret-test-secret";

const COMPANIES: [&str; 4] = ["Acme", "Globex", "Initech", "Umbrella Corp"];
const LEVELS: [&str; 4] = ["Senior", "Junior", "Lead", ""];
const FIELDS: [&str; 7] = [
    "Rust", "Python", "Java", "Data", "Cloud", "Frontend", "Nursing",
];
const ROLES: [&str; 5] = ["Engineer", "Developer", "Analyst", "Nurse", "Designers"];
const PLACES: [&str; 6] = [
    "Berlin, Germany",
    "Wien",
    "München",
    "Paris, France",
    "Remote (EU)",
    "Berlin",
];
/// What alerts search for: words as people type them (plurals, capitals), and a word no job has.
const QS: [&str; 12] = [
    "rust",
    "Engineers",
    "python developers",
    "nurse",
    "data analyst",
    "cloud engineer",
    "designer",
    "java",
    "senior rust engineer",
    "pilot",
    "frontend",
    "lead",
];
const NEEDLES: [&str; 5] = ["berlin", "WIEN", "münchen", "france", "remote"];

/// A job as the reference sees it.
struct RefJob {
    id: i64,
    company_id: i64,
    terms: HashSet<String>,
    location: String,
    remote: bool,
    salary_max: Option<i64>,
    employment_type: EmploymentType,
    open: bool,
    created_at: DateTime<Utc>,
    title: String,
    company: String,
}

/// An alert as the reference sees it.
#[derive(Clone)]
struct RefAlert {
    id: i64,
    user_email: String,
    filters: SearchFilters,
}

impl RefAlert {
    /// The contract's search rules, plainly.
    fn matches(&self, j: &RefJob) -> bool {
        let f = &self.filters;
        let words =
            f.q.as_deref()
                .map(|q| query_terms(q).unwrap())
                .unwrap_or_default();
        j.open
            && words.iter().all(|w| j.terms.contains(w))
            && f.location
                .as_deref()
                .is_none_or(|l| j.location.to_lowercase().contains(&l.to_lowercase()))
            && f.remote.is_none_or(|r| r == j.remote)
            && f.company_id.is_none_or(|c| c == j.company_id)
            && f.salary_min
                .is_none_or(|s| j.salary_max.is_none_or(|max| max >= s))
            && f.employment_type.is_none_or(|t| t == j.employment_type)
    }

    /// The digest of the jobs created in `[from, to)` (after the alert's creation, `created`):
    /// the newest 20 matches, newest first, and the count of the others.
    fn digest(
        &self,
        jobs: &[RefJob],
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Option<(Vec<i64>, u64)> {
        let mut found: Vec<&RefJob> = jobs
            .iter()
            .filter(|j| j.created_at >= from && j.created_at < to && self.matches(j))
            .collect();
        if found.is_empty() {
            return None;
        }
        found.sort_by_key(|j| std::cmp::Reverse((j.created_at, j.id)));
        let listed = found.len().min(DIGEST_JOBS);
        Some((
            found[..listed].iter().map(|j| j.id).collect(),
            (found.len() - listed) as u64,
        ))
    }
}

/// A time as the store writes it, as an SQL literal (SQLite compares the text).
fn lit(t: DateTime<Utc>) -> String {
    format!(
        "'{}'",
        t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false)
    )
}

fn database_url(h: &Harness) -> DatabaseUrl {
    match h.app.backend {
        Backend::Sqlite => DatabaseUrl::Sqlite(h.app.database_url.clone()),
        Backend::Postgres => DatabaseUrl::Postgres(h.app.database_url.clone()),
    }
}

/// The corpus: [`JOBS`] jobs of four companies created between `start` and `start + span`
/// (ties included, a tenth closed), and [`ALERTS`] daily alerts of 500 candidates created at
/// `alerts_created`, with words, places and every other filter now and then.
async fn corpus(
    h: &Harness,
    seed: u64,
    start: DateTime<Utc>,
    span: TimeDelta,
    alerts_created: DateTime<Utc>,
) -> (Vec<RefJob>, Vec<RefAlert>) {
    let store = &h.app.state.store;
    let mut rng = StdRng::seed_from_u64(seed);
    let owner = store
        .create_user(NewUser {
            email: jobboard::domain::values::Email::parse(&format!(
                "{}@acme.example",
                unique("owner")
            ))
            .unwrap(),
            name: "Owner".into(),
            role: jobboard::domain::Role::Employer,
            password_hash: "x".into(),
        })
        .await
        .unwrap();
    let mut companies = Vec::new();
    for name in COMPANIES {
        let c = store
            .create_company(
                owner.id,
                CompanyFields {
                    name: name.into(),
                    website: None,
                    description: None,
                },
                None,
            )
            .await
            .unwrap();
        companies.push((c.id, name));
    }
    let mut jobs = Vec::new();
    let mut updates = String::new();
    let mut at = start;
    let step = span / JOBS as i32;
    for i in 0..JOBS {
        if i == 0 || !rng.gen_bool(0.1) {
            at = start + step * i as i32 + Duration::seconds(rng.gen_range(1..60));
        }
        let (company_id, company) = *companies.choose(&mut rng).unwrap();
        let title = [
            *LEVELS.choose(&mut rng).unwrap(),
            *FIELDS.choose(&mut rng).unwrap(),
            *ROLES.choose(&mut rng).unwrap(),
        ]
        .join(" ")
        .trim()
        .to_string();
        let location = PLACES.choose(&mut rng).unwrap().to_string();
        let remote = rng.gen_bool(0.3);
        let salary_max = (!rng.gen_bool(0.2)).then(|| rng.gen_range(4..=15) * 10_000);
        let employment_type = *EmploymentType::ALL.choose(&mut rng).unwrap();
        let open = !rng.gen_bool(0.1);
        let description = "Build things with us".to_string();
        let j = store
            .create_job(
                company_id,
                JobFields {
                    title: Title::parse(&title).unwrap(),
                    description: description.clone(),
                    locations: jobboard::domain::pay_place::places_of_text(&location),
                    workplace: jobboard::domain::pay_place::Workplace::of_remote(remote),
                    salary: jobboard::domain::pay_place::Salary::older(
                        salary_max.map(|m| m / 2),
                        salary_max,
                    ),
                    employment_type,
                    status: JobStatus::Open,
                    expires_at: Some(Utc::now() + Duration::days(30)),
                    resume_required: false,
                    questions: None,
                },
                None,
            )
            .await
            .unwrap();
        updates.push_str(&format!(
            "UPDATE jobs SET created_at = {}{} WHERE id = {};\n",
            lit(at),
            if open { "" } else { ", status = 'closed'" },
            j.id
        ));
        jobs.push(RefJob {
            id: j.id,
            company_id,
            terms: document_terms(&[&title, &description, company])
                .split(' ')
                .map(String::from)
                .collect(),
            location,
            remote,
            salary_max,
            employment_type,
            open,
            created_at: at,
            title,
            company: company.to_string(),
        });
    }
    h.app.exec(&updates).await;

    // 500 candidates of 20 alerts each, written by SQL (10 000 requests would be the test).
    let first_user = h
        .app
        .scalar_i64("SELECT COALESCE(MAX(id), 0) FROM users")
        .await
        + 1;
    let tag = unique("s");
    let mut users = Vec::new();
    for i in 0..ALERTS / 20 {
        users.push(format!(
            "('{tag}.{i}@mail.example', '{tag}.{i}@mail.example', 'Candidate {i}', 'candidate', 'x', {})",
            lit(alerts_created)
        ));
    }
    for chunk in users.chunks(250) {
        h.app
            .exec(&format!(
                "INSERT INTO users (email, email_key, name, role, password_hash, created_at) VALUES {}",
                chunk.join(", ")
            ))
            .await;
    }
    let first_alert = h
        .app
        .scalar_i64("SELECT COALESCE(MAX(id), 0) FROM alerts")
        .await
        + 1;
    let text = |v: &Option<String>| v.as_ref().map_or("NULL".to_string(), |s| format!("'{s}'"));
    let mut alerts = Vec::new();
    let mut rows = Vec::new();
    for i in 0..ALERTS {
        let mut f = SearchFilters::default();
        if !rng.gen_bool(0.15) {
            f.q = Some(QS.choose(&mut rng).unwrap().to_string());
        }
        if rng.gen_bool(0.3) {
            f.location = Some(NEEDLES.choose(&mut rng).unwrap().to_string());
        }
        if rng.gen_bool(0.15) || (f.q.is_none() && f.location.is_none()) {
            // Now and then a company that does not exist.
            f.company_id = Some(if rng.gen_bool(0.1) {
                999_999
            } else {
                companies.choose(&mut rng).unwrap().0
            });
        }
        if rng.gen_bool(0.2) {
            f.remote = Some(rng.gen_bool(0.5));
        }
        if rng.gen_bool(0.15) {
            f.salary_min = Some(rng.gen_range(5..=14) * 10_000);
        }
        if rng.gen_bool(0.15) {
            f.employment_type = Some(*EmploymentType::ALL.choose(&mut rng).unwrap());
        }
        let user_id = first_user + (i / 20) as i64;
        rows.push(format!(
            "({user_id}, {}, {}, {}, {}, {}, {}, 'daily', {})",
            text(&f.q),
            text(&f.location),
            f.remote
                .map_or("NULL".into(), |r| r.to_string().to_uppercase()),
            f.company_id.map_or("NULL".into(), |c| c.to_string()),
            f.salary_min.map_or("NULL".into(), |s| s.to_string()),
            text(&f.employment_type.map(|t| t.as_str().to_string())),
            lit(alerts_created)
        ));
        alerts.push(RefAlert {
            id: first_alert + i as i64,
            user_email: format!("{tag}.{}@mail.example", i / 20),
            filters: f,
        });
    }
    for chunk in rows.chunks(1000) {
        h.app
            .exec(&format!(
                "INSERT INTO alerts (user_id, q, location, remote, company_id, salary_min, \
                 employment_type, frequency, created_at) VALUES {}",
                chunk.join(", ")
            ))
            .await;
    }
    assert_eq!(
        h.app
            .scalar_i64(&format!(
                "SELECT COUNT(*) FROM alerts WHERE id >= {first_alert}"
            ))
            .await,
        ALERTS as i64
    );
    (jobs, alerts)
}

/// The one email of `event_id`.
fn mail_of(h: &Harness, event_id: &str) -> crate::smtp::Mail {
    let mut mails: Vec<crate::smtp::Mail> = h
        .smtp
        .mails()
        .into_iter()
        .filter(|m| m.event_id() == event_id)
        .collect();
    assert_eq!(mails.len(), 1, "one email for {event_id}");
    mails.remove(0)
}

/// Every `alert.digest` in the events table, by (alert, period), each once.
async fn digests(h: &Harness) -> BTreeMap<(i64, String), (Vec<i64>, u64)> {
    let sql = "SELECT body FROM events WHERE type = 'alert.digest'";
    let bodies: Vec<String> = match h.app.backend {
        Backend::Sqlite => {
            let mut c = <sqlx::SqliteConnection as sqlx::Connection>::connect(&h.app.database_url)
                .await
                .unwrap();
            sqlx::query_scalar(sql).fetch_all(&mut c).await.unwrap()
        }
        Backend::Postgres => {
            let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(&h.app.database_url)
                .await
                .unwrap();
            sqlx::query_scalar(sql).fetch_all(&mut c).await.unwrap()
        }
    };
    let mut out = BTreeMap::new();
    for body in bodies {
        let e = parse_event(&body).unwrap();
        let EventKind::AlertDigest {
            alert_id,
            period,
            jobs,
            more,
        } = e.kind
        else {
            panic!("{body}")
        };
        assert!(out.insert((alert_id, period), (jobs, more)).is_none());
    }
    out
}

/// What the reference says each alert's digest of the day `[from, to)` is.
fn expected(
    alerts: &[RefAlert],
    jobs: &[RefJob],
    label: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> BTreeMap<(i64, String), (Vec<i64>, u64)> {
    alerts
        .iter()
        .filter_map(|a| {
            a.digest(jobs, from, to)
                .map(|d| ((a.id, label.to_string()), d))
        })
        .collect()
}

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

async fn ten_thousand_alerts_by_three_workers_twice_over_two_days(h: Harness) {
    // Jobs from noon on 2020-03-03 to the evening of 2020-03-05; the alerts made at 18:00:00.5
    // on 2020-03-03 (no job at that instant: job times are whole seconds).
    let alerts_created = t("2020-03-03T18:00:00.5Z");
    let (jobs, alerts) = corpus(
        &h,
        31,
        t("2020-03-03T12:00:00Z"),
        TimeDelta::hours(58),
        alerts_created,
    )
    .await;
    let url = database_url(&h);
    let stores: Vec<Arc<dyn Store>> = futures::future::join_all(
        (0..3).map(|_| jobboard::store::connect_with_pool(&url, Some(4))),
    )
    .await
    .into_iter()
    .map(|s| s.expect("a worker's store"))
    .collect();
    let days = [
        ("2020-03-04", alerts_created, t("2020-03-05T00:00:00Z")),
        (
            "2020-03-05",
            t("2020-03-05T00:00:00Z"),
            t("2020-03-06T00:00:00Z"),
        ),
    ];
    let mut want = BTreeMap::new();
    for (label, from, to) in days {
        let now = to + Duration::minutes(3);
        let mut written = 0;
        for _ in 0..2 {
            let runs = futures::future::join_all(
                stores
                    .iter()
                    .map(|s| jobboard::worker::write_alert_digests(&**s, now)),
            )
            .await;
            for r in runs {
                written += r.expect("a worker's run");
            }
        }
        let of_day = expected(&alerts, &jobs, label, from, to);
        assert!(
            of_day.len() > ALERTS / 4 && of_day.len() < ALERTS,
            "the corpus gives {label} digests to many alerts but not all: {}",
            of_day.len()
        );
        assert!(
            of_day.values().any(|(_, more)| *more > 0),
            "some count more"
        );
        assert_eq!(written, of_day.len() as u64, "each written by one run");
        want.extend(of_day);
        let got = digests(&h).await;
        if got != want {
            let wrong: Vec<_> = want
                .iter()
                .filter(|(k, v)| got.get(*k) != Some(*v))
                .take(5)
                .map(|(k, v)| format!("{k:?}: want {v:?}, got {:?}", got.get(k)))
                .collect();
            let extra: Vec<_> = got
                .keys()
                .filter(|k| !want.contains_key(*k))
                .take(5)
                .collect();
            panic!(
                "{label}: {} digests, {} expected; first differences: {wrong:#?}; unexpected: {extra:?}",
                got.len(),
                want.len()
            );
        }
    }
    // No job listed twice by one alert across the two days.
    let mut seen: HashMap<i64, HashSet<i64>> = HashMap::new();
    for ((alert, _), (listed, _)) in &want {
        for j in listed {
            assert!(
                seen.entry(*alert).or_default().insert(*j),
                "alert {alert} listed job {j} twice"
            );
        }
    }

    // A sample, emailed: forty digests of both days; the other messages are set aside.
    let sample: Vec<(i64, String)> = want.keys().step_by(want.len() / 40).cloned().collect();
    let ids: Vec<String> = sample
        .iter()
        .map(|(a, p)| format!("'alert-{a}-{p}'"))
        .collect();
    h.app
        .exec(&format!(
            "DELETE FROM outbox WHERE event_id NOT IN ({})",
            ids.join(", ")
        ))
        .await;
    let worker = h.worker_with(&[("PUBLIC_BASE_URL", BASE)]).await;
    let outcomes = worker.run_until_empty().await.unwrap();
    assert_eq!(outcomes.len(), sample.len());
    let by_id: HashMap<i64, &RefAlert> = alerts.iter().map(|a| (a.id, a)).collect();
    let job_by_id: HashMap<i64, &RefJob> = jobs.iter().map(|j| (j.id, j)).collect();
    for key in &sample {
        let (listed, more) = &want[key];
        let alert = by_id[&key.0];
        let m = mail_of(&h, &format!("alert-{}-{}", key.0, key.1));
        assert!(
            m.recipients[0].contains(&alert.user_email),
            "{:?}",
            m.recipients
        );
        let n = listed.len() as u64 + more;
        let company = alert
            .filters
            .company_id
            .and_then(|c| jobs.iter().find(|j| j.company_id == c))
            .map(|j| j.company.as_str());
        let subject = format!(
            "{n} new {} for {}",
            if n == 1 { "job" } else { "jobs" },
            describe(&alert.filters, company)
        );
        let got_subject = m.header("Subject").unwrap_or_default();
        // Non-ASCII subjects travel encoded (RFC 2047); the plain ones are compared whole.
        if subject.is_ascii() {
            assert_eq!(got_subject, subject, "{}", m.raw);
        }
        let text = quoted_printable(&m.text()).replace("\r\n", "\n");
        let mut lines = String::new();
        for id in listed {
            let j = job_by_id[id];
            lines.push_str(&format!(
                "\n{}\n  {}, {}\n  {BASE}/api/jobs/{id}\n",
                j.title, j.company, j.location
            ));
        }
        assert!(text.contains(&lines), "{text}\nshould list\n{lines}");
        assert_eq!(text.contains("more match"), *more > 0, "{text}");
        let token = unsubscribe::token(SECRET, Target::Alert { alert_id: key.0 });
        assert_eq!(
            m.header("List-Unsubscribe"),
            Some(format!("<{BASE}/api/unsubscribe/{token}>"))
        );
        assert_eq!(
            m.header("List-Unsubscribe-Post").as_deref(),
            Some("List-Unsubscribe=One-Click")
        );
    }
}

/// The digests of the day before the database's today: every alert made two days before, the
/// jobs made during that day. A worker process runs the upkeep (its first run is at start) and
/// is killed with SIGKILL once some digests are written and before all are; a second one
/// finishes; each digest is then written once, as the rules say, and the day marked.
async fn a_worker_killed_while_writing_digests_leaves_each_written_once(h: Harness) {
    let now_ms = h
        .app
        .scalar_i64(&format!(
            "SELECT {}",
            crate::worker::now_ms_sql(h.app.backend)
        ))
        .await;
    let now = DateTime::from_timestamp_millis(now_ms).unwrap();
    let end = (now - jobboard::worker::DIGEST_GRACE)
        .duration_trunc(TimeDelta::days(1))
        .unwrap();
    let day = Frequency::Daily.last_ended(now - jobboard::worker::DIGEST_GRACE);
    assert_eq!(day.end, end);
    let start = end - TimeDelta::days(1);
    let alerts_created = start - TimeDelta::hours(30) + Duration::milliseconds(500);
    let (jobs, alerts) = corpus(
        &h,
        77,
        start + TimeDelta::minutes(1),
        TimeDelta::hours(23),
        alerts_created,
    )
    .await;
    let want = expected(&alerts, &jobs, &day.label, alerts_created, end);
    assert!(want.len() > ALERTS / 4, "{}", want.len());
    let written = || async {
        h.app
            .scalar_i64("SELECT COUNT(*) FROM events WHERE type = 'alert.digest'")
            .await
    };

    let dir = tempfile::tempdir().unwrap();
    let spawn = |name: &str| {
        let file = std::fs::File::create(dir.path().join(name)).unwrap();
        command(&h, &["worker"], &[("PUBLIC_BASE_URL", BASE)])
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("spawn worker")
    };
    let mut first = spawn("first.log");
    wait_until("some digests written", || async { written().await > 0 }).await;
    first.kill().await.expect("SIGKILL");
    let before = written().await;
    eprintln!("killed with {before} of {} digests written", want.len());
    assert!(
        (before as usize) < want.len(),
        "killed while writing ({before} of {} written)",
        want.len()
    );
    assert_eq!(
        h.app
            .scalar_i64("SELECT COUNT(*) FROM alert_digest_periods")
            .await,
        0,
        "the day is not marked before its digests are written"
    );

    let mut second = spawn("second.log");
    wait_until("the day marked written", || async {
        h.app
            .scalar_i64(&format!(
                "SELECT COUNT(*) FROM alert_digest_periods WHERE period = '{}'",
                day.label
            ))
            .await
            == 1
    })
    .await;
    second.kill().await.expect("stop");
    assert_eq!(digests(&h).await, want);
    // Every due alert moved to the day's end, each with its event or with no match.
    assert_eq!(
        h.app
            .scalar_i64(&format!(
                "SELECT COUNT(*) FROM alerts WHERE watermark_created_at IS NULL \
                 OR watermark_created_at <> {}",
                lit(end)
            ))
            .await,
        0
    );
}
