//! The text of every email of docs/guarantee.md, in one place: plain text, rendered at send time
//! from the current data the store loaded (the job's title and company as they are now, the
//! person's name) and from what the event fixed (statuses, `expires_at`, the decision, a
//! digest's list). Subjects are exactly the contract's. An employer's email never names a
//! candidate: a digest gives job titles and counts only.
//!
//! Also here, since they are what an event reads as in words: the log's description of each
//! event (ids only, never an address) and which emails carry an unsubscribe link.

use crate::domain::ApplicationStatus;
use crate::domain::alert::Frequency;
use crate::domain::event::{Decision, Event, EventKind};
use crate::domain::mail::{About, AlertJob, DigestJob, EmailData, Recipient};
use crate::domain::validate;
use crate::unsubscribe::Target;
use chrono::{DateTime, Utc};

/// An email's subject and plain-text body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub subject: String,
    pub body: String,
}

const SIGNATURE: &str = "\n-- jobboard\n";

/// The email for `event`, from the data loaded for it. `base_url` is `PUBLIC_BASE_URL`, under
/// which an alert digest links its jobs; `list_unsubscribe` is the link that stops this kind of
/// email (digests carry one, docs/guarantee.md); its body names it too.
pub fn render(
    event: &Event,
    data: &EmailData,
    base_url: &str,
    list_unsubscribe: Option<&str>,
) -> anyhow::Result<Rendered> {
    let data = &one_line(data);
    let name = &data.to.name;
    let rendered = match (&event.kind, &data.about) {
        (
            EventKind::StatusChanged {
                old_status,
                new_status,
                ..
            },
            About::Application {
                job_title, company, ..
            },
        ) => status_changed(name, job_title, company, *old_status, *new_status),
        (
            EventKind::Submitted { .. },
            About::Application {
                job_title,
                company,
                resume,
            },
        ) => {
            let with = match resume {
                Some(file) => format!(" with your résumé {file}"),
                None => String::new(),
            };
            Rendered {
                subject: format!("We received your application for {job_title} at {company}"),
                body: format!(
                    "Hello {name},\n\nWe received your application for {job_title} at \
                     {company}{with}. Its status is submitted; you will get an email each time \
                     it changes.\n{SIGNATURE}"
                ),
            }
        }
        (
            EventKind::JobExpiring {
                job_id, expires_at, ..
            },
            About::Job {
                job_title, company, ..
            },
        ) => Rendered {
            subject: format!("{job_title} expires on {}", date(expires_at)),
            body: format!(
                "Hello {name},\n\nYour job {job_title} at {company} expires on {} at {} UTC. \
                 After that it is no longer in searches and cannot be applied to.\n\nA member \
                 of {company} can renew it for another posting period: POST \
                 /api/jobs/{job_id}/renew.\n{SIGNATURE}",
                date(expires_at),
                time(expires_at)
            ),
        },
        (
            EventKind::JobExpired {
                job_id, expires_at, ..
            },
            About::Job {
                job_title, company, ..
            },
        ) => Rendered {
            subject: format!("{job_title} has expired"),
            body: format!(
                "Hello {name},\n\nYour job {job_title} at {company} expired on {} at {} UTC: \
                 it is no longer in searches and cannot be applied to.\n\nA member of {company} \
                 can renew it for another posting period: POST /api/jobs/{job_id}/renew.\n{SIGNATURE}",
                date(expires_at),
                time(expires_at)
            ),
        },
        (
            EventKind::JobReviewed {
                job_id, decision, ..
            },
            About::Job {
                job_title,
                company,
                rejection_reason,
            },
        ) => job_reviewed(
            name,
            *job_id,
            job_title,
            company,
            *decision,
            rejection_reason.as_deref(),
        ),
        (
            EventKind::ApplicationsDigest { hour, further, .. },
            About::ApplicationsDigest { jobs },
        ) => applications_digest(name, hour, jobs, *further, list_unsubscribe),
        (
            EventKind::AlertDigest { period, more, .. },
            About::AlertDigest {
                search,
                frequency,
                jobs,
            },
        ) => alert_digest(
            name,
            AlertEmail {
                search,
                frequency: *frequency,
                period,
                jobs,
                more: *more,
            },
            base_url,
            list_unsubscribe,
        ),
        (
            EventKind::WebhookDisabled {
                endpoint_id,
                reason,
                ..
            },
            About::Webhook {
                host,
                company_id,
                company,
            },
        ) => Rendered {
            subject: format!("Webhook to {host} was turned off"),
            body: format!(
                "Hello {name},\n\nThe webhook endpoint {endpoint_id} of {company}, which \
                 delivered to {host}, was turned off: {}. Nothing more is sent to it, and its \
                 deliveries wait.\n\nWhen the receiver is ready again, a member of {company} can \
                 turn it back on (PATCH /api/companies/{company_id}/webhooks/{endpoint_id} with \
                 {{\"paused\": false}}); its attempts are listed at \
                 /api/companies/{company_id}/webhooks/{endpoint_id}/attempts.\n{SIGNATURE}",
                validate::fold_one_line(reason)
            ),
        },
        (kind, about) => anyhow::bail!(
            "the data loaded for a {} event does not fit it: {about:?}",
            kind.type_name()
        ),
    };
    Ok(rendered)
}

/// `data` with every one-line value folded onto one line ([`validate::fold_one_line`]): the
/// person's name, titles, company names, locations and the alert's words. Text stored before
/// the rule of docs/api.md may hold line breaks or bidirectional controls; folded, none of
/// it can make a line of its own in a subject or a body. An operator's rejection reason keeps
/// its lines: it is shown as a paragraph of its own.
fn one_line(data: &EmailData) -> EmailData {
    let fold = |s: &String| validate::fold_one_line(s);
    let about = match &data.about {
        About::Application {
            job_title,
            company,
            resume,
        } => About::Application {
            job_title: fold(job_title),
            company: fold(company),
            resume: resume.as_ref().map(fold),
        },
        About::Job {
            job_title,
            company,
            rejection_reason,
        } => About::Job {
            job_title: fold(job_title),
            company: fold(company),
            rejection_reason: rejection_reason.clone(),
        },
        About::ApplicationsDigest { jobs } => About::ApplicationsDigest {
            jobs: jobs
                .iter()
                .map(|j| DigestJob {
                    job_title: fold(&j.job_title),
                    company: fold(&j.company),
                    ..j.clone()
                })
                .collect(),
        },
        About::AlertDigest {
            search,
            frequency,
            jobs,
        } => About::AlertDigest {
            search: fold(search),
            frequency: *frequency,
            jobs: jobs
                .iter()
                .map(|j| AlertJob {
                    job_id: j.job_id,
                    title: fold(&j.title),
                    company: fold(&j.company),
                    location: fold(&j.location),
                })
                .collect(),
        },
        About::Webhook {
            host,
            company_id,
            company,
        } => About::Webhook {
            host: fold(host),
            company_id: *company_id,
            company: fold(company),
        },
    };
    EmailData {
        to: Recipient {
            name: fold(&data.to.name),
            ..data.to.clone()
        },
        about,
    }
}

fn status_changed(
    name: &str,
    job_title: &str,
    company: &str,
    old: ApplicationStatus,
    new: ApplicationStatus,
) -> Rendered {
    let body = if new == ApplicationStatus::Withdrawn {
        format!(
            "Hello {name},\n\nThis confirms that you withdrew your application for {job_title} \
             at {company} (it was {old}; it is now {new}).\n{SIGNATURE}"
        )
    } else {
        format!(
            "Hello {name},\n\nYour application for {job_title} at {company} has moved from \
             {old} to {new}.\n{SIGNATURE}"
        )
    };
    Rendered {
        subject: format!("Update on your application for {job_title} at {company}"),
        body,
    }
}

fn job_reviewed(
    name: &str,
    job_id: i64,
    job_title: &str,
    company: &str,
    decision: Decision,
    rejection_reason: Option<&str>,
) -> Rendered {
    match decision {
        Decision::Approved => Rendered {
            subject: format!("{job_title} was approved"),
            body: format!(
                "Hello {name},\n\nAn operator approved your job {job_title} at {company}: it is \
                 open, in searches, and candidates can apply.\n{SIGNATURE}"
            ),
        },
        Decision::Rejected => {
            let reason = match rejection_reason {
                Some(reason) => format!("The reason given:\n\n{reason}"),
                None => format!("The reason is shown with the job: GET /api/jobs/{job_id}."),
            };
            Rendered {
                subject: format!("{job_title} was not approved"),
                body: format!(
                    "Hello {name},\n\nAn operator did not approve your job {job_title} at \
                     {company}. {reason}\n\nA member of {company} can edit the job (PATCH \
                     /api/jobs/{job_id}), which puts it back in review.\n{SIGNATURE}"
                ),
            }
        }
    }
}

/// Job titles and counts of the listed applications, by company, and how many more the hour
/// had; never a candidate's name or address.
fn applications_digest(
    name: &str,
    hour: &DateTime<Utc>,
    jobs: &[DigestJob],
    further: u64,
    list_unsubscribe: Option<&str>,
) -> Rendered {
    let further = i64::try_from(further).unwrap_or(i64::MAX);
    let n: i64 = jobs
        .iter()
        .map(|j| j.applications)
        .sum::<i64>()
        .saturating_add(further);
    let mut lines = String::new();
    let mut company: Option<&str> = None;
    for job in jobs {
        if company != Some(job.company.as_str()) {
            lines.push_str(&format!("\n{}\n", job.company));
            company = Some(&job.company);
        }
        lines.push_str(&format!("  {}: {}\n", job.job_title, job.applications));
    }
    match further {
        0 => {}
        1 => lines.push_str("\nand 1 more application.\n"),
        m => lines.push_str(&format!("\nand {m} more applications.\n")),
    }
    let end = *hour + chrono::Duration::hours(1);
    let stop = match list_unsubscribe {
        Some(link) => format!("\nTo stop these hourly emails: {link}\n"),
        None => String::new(),
    };
    Rendered {
        subject: format!("{n} new applications"),
        body: format!(
            "Hello {name},\n\nBetween {} and {} UTC on {}, your companies' jobs received {n} \
             new applications:\n{lines}\nSee them with GET /api/applications.\n{stop}{SIGNATURE}",
            time(hour),
            time(&end),
            date(hour)
        ),
    }
}

/// What an alert digest's email is made of.
struct AlertEmail<'a> {
    search: &'a str,
    frequency: Frequency,
    period: &'a str,
    jobs: &'a [AlertJob],
    more: u64,
}

/// `{n} new jobs for {search}`: the listed jobs still there, newest first, each with its
/// company, location and link, then the count of the further matches.
fn alert_digest(
    name: &str,
    a: AlertEmail<'_>,
    base_url: &str,
    list_unsubscribe: Option<&str>,
) -> Rendered {
    let n = a.jobs.len() as u64 + a.more;
    let (jobs_word, verb) = if n == 1 {
        ("job", "matches")
    } else {
        ("jobs", "match")
    };
    let when = match a.frequency {
        Frequency::Daily => format!("on {} (UTC)", a.period),
        Frequency::Weekly => format!("in the week {}", a.period),
    };
    let mut lines = String::new();
    for job in a.jobs {
        lines.push_str(&format!(
            "\n{}\n  {}, {}\n  {base_url}/api/jobs/{}\n",
            job.title, job.company, job.location, job.job_id
        ));
    }
    let more = match a.more {
        0 => String::new(),
        1 => "\nand 1 more match.\n".to_string(),
        m => format!("\nand {m} more matches.\n"),
    };
    let stop = match list_unsubscribe {
        Some(link) => format!("\nTo stop this {} alert: {link}\n", a.frequency),
        None => String::new(),
    };
    Rendered {
        subject: format!("{n} new {jobs_word} for {}", a.search),
        body: format!(
            "Hello {name},\n\n{n} new {jobs_word} {when} {verb} your {} alert for {}:\n\
             {lines}{more}{stop}{SIGNATURE}",
            a.frequency, a.search
        ),
    }
}

fn date(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%d").to_string()
}

fn time(t: &DateTime<Utc>) -> String {
    t.format("%H:%M").to_string()
}

/// A time in a log line, as RFC 3339 UTC.
fn stamp(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// What the event is about, for the log line of a sent email: ids and the event's own fields,
/// never an address. A status change reads as docs/guarantee.md's line: `application {id}: {old}
/// -> {new}`.
pub fn about(kind: &EventKind) -> String {
    match kind {
        EventKind::StatusChanged {
            application_id,
            old_status,
            new_status,
        } => format!("application {application_id}: {old_status} -> {new_status}"),
        EventKind::Submitted { application_id } => {
            format!("application {application_id}: submitted")
        }
        EventKind::JobExpiring {
            job_id, expires_at, ..
        } => format!("job {job_id}: expires at {}", stamp(expires_at)),
        EventKind::JobExpired {
            job_id, expires_at, ..
        } => format!("job {job_id}: expired at {}", stamp(expires_at)),
        EventKind::JobReviewed {
            job_id, decision, ..
        } => format!(
            "job {job_id}: {}",
            match decision {
                Decision::Approved => "approved",
                Decision::Rejected => "not approved",
            }
        ),
        EventKind::ApplicationsDigest {
            hour,
            applications,
            further,
            ..
        } => format!(
            "the applications of the hour from {} ({} listed, {further} more)",
            stamp(hour),
            applications.len()
        ),
        EventKind::AlertDigest {
            alert_id,
            period,
            jobs,
            more,
        } => format!(
            "alert {alert_id}: {period} ({} jobs listed, {more} more)",
            jobs.len()
        ),
        EventKind::WebhookDisabled { endpoint_id, .. } => {
            format!("webhook endpoint {endpoint_id}: disabled")
        }
    }
}

/// What must still exist for the event to be sent, for the log line of one that is `missing`.
pub fn reported(kind: &EventKind) -> String {
    match kind {
        EventKind::StatusChanged { application_id, .. } => {
            format!("application {application_id} or its history row")
        }
        EventKind::Submitted { application_id } => {
            format!("application {application_id} or the event's record")
        }
        EventKind::JobExpiring {
            job_id, user_id, ..
        }
        | EventKind::JobExpired {
            job_id, user_id, ..
        }
        | EventKind::JobReviewed {
            job_id, user_id, ..
        } => format!(
            "job {job_id}, user {user_id}'s membership of its company, or the event's record"
        ),
        EventKind::ApplicationsDigest { user_id, .. } => format!(
            "user {user_id}, every listed application to their companies, or the event's record"
        ),
        EventKind::AlertDigest { alert_id, .. } => {
            format!("alert {alert_id}, its owner, every listed job, or the event's record")
        }
        EventKind::WebhookDisabled {
            endpoint_id,
            user_id,
            ..
        } => format!(
            "webhook endpoint {endpoint_id}, user {user_id}'s membership of its company, or the \
             event's record"
        ),
    }
}

/// What the unsubscribe link of an event's email stops (docs/api.md), if it carries one:
/// digests do (§5), an application digest its user's, an alert digest its alert.
pub fn unsubscribe(kind: &EventKind) -> Option<Target> {
    match kind {
        EventKind::ApplicationsDigest { user_id, .. } => Some(Target::Digest { user_id: *user_id }),
        EventKind::AlertDigest { alert_id, .. } => Some(Target::Alert {
            alert_id: *alert_id,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn event(kind: EventKind) -> Event {
        Event::new(kind, t("2026-12-04T11:00:00Z"))
    }

    fn to() -> Recipient {
        Recipient {
            user_id: 7,
            email: "cody@mail.example".into(),
            name: "Cody".into(),
        }
    }

    fn application() -> EmailData {
        EmailData {
            to: to(),
            about: About::Application {
                job_title: "Rust Engineer".into(),
                company: "Acme".into(),
                resume: None,
            },
        }
    }

    fn job(reason: Option<&str>) -> EmailData {
        EmailData {
            to: to(),
            about: About::Job {
                job_title: "Rust Engineer".into(),
                company: "Acme".into(),
                rejection_reason: reason.map(str::to_string),
            },
        }
    }

    const BASE: &str = "https://jobs.example";

    fn rendered(kind: EventKind, data: &EmailData) -> Rendered {
        render(&event(kind), data, BASE, None).unwrap()
    }

    #[test]
    fn a_status_change_names_the_old_and_new_status() {
        let r = rendered(
            EventKind::StatusChanged {
                application_id: 3,
                old_status: ApplicationStatus::Reviewing,
                new_status: ApplicationStatus::Interview,
            },
            &application(),
        );
        assert_eq!(
            r.subject,
            "Update on your application for Rust Engineer at Acme"
        );
        assert!(r.body.starts_with("Hello Cody,"), "{}", r.body);
        assert!(r.body.contains("from reviewing to interview"), "{}", r.body);
        let withdrawn = rendered(
            EventKind::StatusChanged {
                application_id: 3,
                old_status: ApplicationStatus::Interview,
                new_status: ApplicationStatus::Withdrawn,
            },
            &application(),
        );
        assert!(
            withdrawn
                .body
                .contains("you withdrew your application for Rust Engineer at Acme"),
            "{}",
            withdrawn.body
        );
        assert!(
            withdrawn
                .body
                .contains("it was interview; it is now withdrawn")
        );
    }

    #[test]
    fn a_submission_is_confirmed() {
        let r = rendered(EventKind::Submitted { application_id: 3 }, &application());
        assert_eq!(
            r.subject,
            "We received your application for Rust Engineer at Acme"
        );
        assert!(r.body.contains("Its status is submitted"), "{}", r.body);
        assert!(!r.body.contains("résumé"), "{}", r.body);
        let mut with = application();
        if let About::Application { resume, .. } = &mut with.about {
            *resume = Some("Jane Doe CV.pdf".into());
        }
        let r = rendered(EventKind::Submitted { application_id: 3 }, &with);
        assert!(
            r.body
                .contains("Rust Engineer at Acme with your résumé Jane Doe CV.pdf."),
            "{}",
            r.body
        );
    }

    #[test]
    fn job_notices_give_the_date_from_the_event() {
        let at = t("2026-12-09T10:30:00Z");
        let expiring = rendered(
            EventKind::JobExpiring {
                job_id: 5,
                user_id: 7,
                expires_at: at,
            },
            &job(None),
        );
        assert_eq!(expiring.subject, "Rust Engineer expires on 2026-12-09");
        assert!(
            expiring.body.contains("expires on 2026-12-09 at 10:30 UTC"),
            "{}",
            expiring.body
        );
        assert!(expiring.body.contains("POST /api/jobs/5/renew"));
        let expired = rendered(
            EventKind::JobExpired {
                job_id: 5,
                user_id: 7,
                expires_at: at,
            },
            &job(None),
        );
        assert_eq!(expired.subject, "Rust Engineer has expired");
        assert!(
            expired.body.contains("expired on 2026-12-09 at 10:30 UTC"),
            "{}",
            expired.body
        );
    }

    #[test]
    fn a_review_names_the_decision_and_the_reason() {
        let reviewed = |decision, reason| {
            rendered(
                EventKind::JobReviewed {
                    job_id: 5,
                    user_id: 7,
                    decision,
                },
                &job(reason),
            )
        };
        let approved = reviewed(Decision::Approved, None);
        assert_eq!(approved.subject, "Rust Engineer was approved");
        assert!(
            approved
                .body
                .contains("approved your job Rust Engineer at Acme")
        );
        let rejected = reviewed(Decision::Rejected, Some("The salary is missing."));
        assert_eq!(rejected.subject, "Rust Engineer was not approved");
        assert!(
            rejected
                .body
                .contains("The reason given:\n\nThe salary is missing."),
            "{}",
            rejected.body
        );
        // Until the jobs table stores the reason, the email points to where it is shown.
        let unknown = reviewed(Decision::Rejected, None);
        assert!(unknown.body.contains("GET /api/jobs/5"), "{}", unknown.body);
    }

    /// What an employer (or a person naming themselves) stored before the text rule: a title that
    /// would forge lines of the body.
    const FORGED: &str = "Rust Engineer\r\nBcc: x@example.com\r\n\r\nIMPORTANT: verify now\u{2028}\
                          IMPORTANT\u{202e}\u{0085}IMPORTANT";

    /// No line of `r` (body or subject) starts with a forged header or paragraph.
    #[track_caller]
    fn no_forged_line(r: &Rendered) {
        assert!(
            !r.subject
                .contains(['\r', '\n', '\u{2028}', '\u{202e}', '\u{0085}']),
            "{:?}",
            r.subject
        );
        for line in r
            .body
            .split(['\n', '\r', '\u{2028}', '\u{2029}', '\u{0085}'])
        {
            let line = line.trim_start();
            assert!(
                !line.starts_with("Bcc:") && !line.starts_with("IMPORTANT"),
                "a forged line {line:?} in {:?}",
                r.body
            );
        }
        assert!(
            !r.body.contains(['\u{202e}', '\u{0085}', '\u{2028}']),
            "{:?}",
            r.body
        );
        assert!(
            r.body.contains(
                "Rust Engineer Bcc: x@example.com IMPORTANT: verify now IMPORTANT IMPORTANT"
            ),
            "{:?}",
            r.body
        );
    }

    /// Every one-line value of every email is folded: a title, a company, a location, a name or
    /// an alert's words stored with line breaks makes no line of its own.
    #[test]
    fn stored_text_cannot_forge_a_line() {
        let forged = || FORGED.to_string();
        let to = Recipient {
            name: forged(),
            ..to()
        };
        let application = EmailData {
            to: to.clone(),
            about: About::Application {
                job_title: forged(),
                company: forged(),
                resume: None,
            },
        };
        for kind in [
            EventKind::Submitted { application_id: 3 },
            EventKind::StatusChanged {
                application_id: 3,
                old_status: ApplicationStatus::Submitted,
                new_status: ApplicationStatus::Reviewing,
            },
        ] {
            no_forged_line(&rendered(kind, &application));
        }
        let job = EmailData {
            to: to.clone(),
            about: About::Job {
                job_title: forged(),
                company: forged(),
                rejection_reason: None,
            },
        };
        let at = t("2026-12-10T09:00:00Z");
        for kind in [
            EventKind::JobExpiring {
                job_id: 4,
                user_id: 7,
                expires_at: at,
            },
            EventKind::JobExpired {
                job_id: 4,
                user_id: 7,
                expires_at: at,
            },
            EventKind::JobReviewed {
                job_id: 4,
                user_id: 7,
                decision: Decision::Approved,
            },
            EventKind::JobReviewed {
                job_id: 4,
                user_id: 7,
                decision: Decision::Rejected,
            },
        ] {
            no_forged_line(&rendered(kind, &job));
        }
        let digest = EmailData {
            to: to.clone(),
            about: About::ApplicationsDigest {
                jobs: vec![DigestJob {
                    job_id: 1,
                    job_title: forged(),
                    company: forged(),
                    applications: 2,
                }],
            },
        };
        let kind = EventKind::ApplicationsDigest {
            user_id: 7,
            hour: t("2026-12-04T10:00:00Z"),
            applications: vec![1, 2],
            further: 0,
        };
        no_forged_line(&rendered(kind, &digest));
        let webhook = EmailData {
            to: to.clone(),
            about: About::Webhook {
                host: forged(),
                company_id: 2,
                company: forged(),
            },
        };
        let kind = EventKind::WebhookDisabled {
            endpoint_id: 5,
            user_id: 7,
            reason: forged(),
        };
        no_forged_line(&rendered(kind, &webhook));
        let alert = EmailData {
            to,
            about: About::AlertDigest {
                search: forged(),
                frequency: Frequency::Daily,
                jobs: vec![AlertJob {
                    job_id: 12,
                    title: forged(),
                    company: forged(),
                    location: forged(),
                }],
            },
        };
        let kind = EventKind::AlertDigest {
            alert_id: 9,
            period: "2026-12-03".into(),
            jobs: vec![12],
            more: 0,
        };
        no_forged_line(&rendered(kind, &alert));
    }

    #[test]
    fn a_disabled_webhook_names_its_host_and_how_to_turn_it_back_on() {
        let data = EmailData {
            to: to(),
            about: About::Webhook {
                host: "ats.example.com".into(),
                company_id: 2,
                company: "Acme".into(),
            },
        };
        let r = rendered(
            EventKind::WebhookDisabled {
                endpoint_id: 5,
                user_id: 7,
                reason: "the receiver answered 410 Gone".into(),
            },
            &data,
        );
        assert_eq!(r.subject, "Webhook to ats.example.com was turned off");
        assert!(
            r.body
                .contains("was turned off: the receiver answered 410 Gone."),
            "{}",
            r.body
        );
        assert!(
            r.body
                .contains("PATCH /api/companies/2/webhooks/5 with {\"paused\": false}"),
            "{}",
            r.body
        );
    }

    #[test]
    fn a_digest_lists_titles_and_counts_by_company() {
        let line = |job_id, title: &str, company: &str, applications| DigestJob {
            job_id,
            job_title: title.into(),
            company: company.into(),
            applications,
        };
        let data = EmailData {
            to: to(),
            about: About::ApplicationsDigest {
                jobs: vec![
                    line(1, "Backend Engineer", "Acme", 3),
                    line(2, "Designer", "Acme", 1),
                    line(3, "Backend Engineer", "Globex", 2),
                ],
            },
        };
        let e = event(EventKind::ApplicationsDigest {
            user_id: 7,
            hour: t("2026-12-04T10:00:00Z"),
            applications: vec![11, 12, 13, 14, 15, 16],
            further: 0,
        });
        let r = render(
            &e,
            &data,
            BASE,
            Some("https://jobs.example/api/unsubscribe/tok"),
        )
        .unwrap();
        assert_eq!(r.subject, "6 new applications");
        assert!(
            r.body.contains(
                "Between 10:00 and 11:00 UTC on 2026-12-04, your companies' jobs received 6 new applications:\n\nAcme\n  Backend Engineer: 3\n  Designer: 1\n\nGlobex\n  Backend Engineer: 2\n"
            ),
            "{}",
            r.body
        );
        assert!(
            r.body
                .contains("To stop these hourly emails: https://jobs.example/api/unsubscribe/tok"),
            "{}",
            r.body
        );
        let without = render(&e, &data, BASE, None).unwrap();
        assert!(!without.body.contains("To stop"), "{}", without.body);
    }

    #[test]
    fn a_digest_counts_the_applications_it_does_not_list() {
        let data = EmailData {
            to: to(),
            about: About::ApplicationsDigest {
                jobs: vec![DigestJob {
                    job_id: 1,
                    job_title: "Backend Engineer".into(),
                    company: "Acme".into(),
                    applications: 20,
                }],
            },
        };
        for (further, total, line) in [
            (0, 20, None),
            (1, 21, Some("\nand 1 more application.\n")),
            (9_980, 10_000, Some("\nand 9980 more applications.\n")),
        ] {
            let e = event(EventKind::ApplicationsDigest {
                user_id: 7,
                hour: t("2026-12-04T10:00:00Z"),
                applications: (1..=20).collect(),
                further,
            });
            let r = render(&e, &data, BASE, None).unwrap();
            assert_eq!(r.subject, format!("{total} new applications"));
            assert!(
                r.body
                    .contains(&format!("received {total} new applications:")),
                "{}",
                r.body
            );
            match line {
                Some(line) => assert!(r.body.contains(line), "{}", r.body),
                None => assert!(!r.body.contains(" more application"), "{}", r.body),
            }
        }
    }

    fn alert_data(frequency: Frequency, jobs: &[(i64, &str)]) -> EmailData {
        EmailData {
            to: to(),
            about: About::AlertDigest {
                search: "\"rust\" in Berlin, remote".into(),
                frequency,
                jobs: jobs
                    .iter()
                    .map(|(id, title)| AlertJob {
                        job_id: *id,
                        title: title.to_string(),
                        company: "Acme".into(),
                        location: "Berlin, Germany".into(),
                    })
                    .collect(),
            },
        }
    }

    #[test]
    fn an_alert_digest_lists_its_jobs_with_links_and_counts_the_rest() {
        let e = event(EventKind::AlertDigest {
            alert_id: 9,
            period: "2026-12-03".into(),
            jobs: vec![12, 11, 10],
            more: 5,
        });
        // Job 11 was deleted since: it is not shown, and not counted.
        let data = alert_data(
            Frequency::Daily,
            &[(12, "Senior Rust Engineer"), (10, "Rust Developer")],
        );
        let r = render(
            &e,
            &data,
            BASE,
            Some("https://jobs.example/api/unsubscribe/tok"),
        )
        .unwrap();
        assert_eq!(r.subject, "7 new jobs for \"rust\" in Berlin, remote");
        assert_eq!(
            r.body,
            "Hello Cody,\n\n7 new jobs on 2026-12-03 (UTC) match your daily alert for \"rust\" \
             in Berlin, remote:\n\nSenior Rust Engineer\n  Acme, Berlin, Germany\n  \
             https://jobs.example/api/jobs/12\n\nRust Developer\n  Acme, Berlin, Germany\n  \
             https://jobs.example/api/jobs/10\n\nand 5 more matches.\n\nTo stop this daily \
             alert: https://jobs.example/api/unsubscribe/tok\n\n-- jobboard\n"
        );
        let one = event(EventKind::AlertDigest {
            alert_id: 9,
            period: "2026-W49".into(),
            jobs: vec![12],
            more: 0,
        });
        let r = render(
            &one,
            &alert_data(Frequency::Weekly, &[(12, "Welder")]),
            BASE,
            None,
        )
        .unwrap();
        assert_eq!(r.subject, "1 new job for \"rust\" in Berlin, remote");
        assert!(
            r.body
                .contains("1 new job in the week 2026-W49 matches your weekly alert"),
            "{}",
            r.body
        );
        assert!(!r.body.contains("more match"), "{}", r.body);
        assert!(!r.body.contains("To stop"), "{}", r.body);
        // The data of another type does not fit.
        assert!(render(&one, &application(), BASE, None).is_err());
        assert_eq!(unsubscribe(&one.kind), Some(Target::Alert { alert_id: 9 }));
    }

    #[test]
    fn data_that_does_not_fit_the_event_is_refused() {
        let e = event(EventKind::Submitted { application_id: 3 });
        let error = render(&e, &job(None), BASE, None).unwrap_err();
        assert!(
            error.to_string().contains("application.submitted"),
            "{error}"
        );
    }

    #[test]
    fn logs_name_ids_and_never_addresses() {
        let kinds = [
            EventKind::StatusChanged {
                application_id: 3,
                old_status: ApplicationStatus::Submitted,
                new_status: ApplicationStatus::Reviewing,
            },
            EventKind::JobReviewed {
                job_id: 5,
                user_id: 7,
                decision: Decision::Approved,
            },
        ];
        assert_eq!(about(&kinds[0]), "application 3: submitted -> reviewing");
        assert_eq!(about(&kinds[1]), "job 5: approved");
        assert_eq!(
            reported(&kinds[1]),
            "job 5, user 7's membership of its company, or the event's record"
        );
        assert_eq!(unsubscribe(&kinds[0]), None);
        assert_eq!(
            unsubscribe(&EventKind::ApplicationsDigest {
                user_id: 7,
                hour: t("2026-12-04T10:00:00Z"),
                applications: vec![1],
                further: 0,
            }),
            Some(Target::Digest { user_id: 7 })
        );
    }
}
