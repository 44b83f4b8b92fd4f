//! The OpenAPI document against the API it describes, so that a client generated from it can
//! read every answer:
//! - the walk: every route the router serves (its paths read from the `.route(…)` calls in
//!   `src/http/`, its methods found by asking) is documented, and every operation is exercised
//!   through the statuses it can answer (one table row per operation, plus the variants the
//!   document itself implies: no token, a bad token, an unknown id, a malformed body or
//!   `Idempotency-Key`, a bad query parameter, a replay). Each status, its media type and its
//!   `Retry-After` / `Idempotent-Replayed` / `X-Cache` headers must be documented for that
//!   operation, and each documented status must be seen (but for the few in `UNPROVOKED`);
//! - the rules a generator relies on: unique operationIds, `security` on every operation, a
//!   server, a license, every field of a response required (optional ones are present as
//!   `null`), enumerated inputs typed by their enum (`enum_inputs()`), ranges on integer query
//!   parameters.
//!
//! A new route needs a row in `table()`; a new enumerated input a row in `enum_inputs()` (a new
//! string query parameter is refused until it is in `enum_inputs()` or `FREE_TEXT_QUERY`); a new
//! integer query parameter its range in its annotation. Both tests say what is missing.

use crate::helpers::*;
use jobboard::domain::pay_place::{CURRENCIES, Workplace};
use jobboard::domain::{ApplicationStatus, EmploymentType, JobStatus, Role};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use utoipa::OpenApi;

/// Who sends a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Anonymous,
    /// A token that is not one.
    BadToken,
    /// The employer of company `{c}` (with job `{j}` and application `{a}`) and of `{c2}`.
    Member,
    /// The candidate who made application `{a}`.
    Candidate,
    /// A candidate with no application.
    OtherCandidate,
    /// An employer of `{c3}`, and a second member of `{c2}`; not of `{c}`.
    OtherMember,
    /// A candidate with operator rights (`jobboard admin grant`), on the operators' rows.
    Operator,
}

/// The token of the unsubscribe link of `user`'s application digest, as the test app signs it.
fn digest_token(user: &User) -> String {
    jobboard::unsubscribe::token(
        b"test-secret-test-secret-test-secret",
        jobboard::unsubscribe::Target::Digest { user_id: user.id },
    )
}

/// One request of a row: who sends it, the concrete path (placeholders below), the body, and
/// the status it must get. Placeholders: `{c}` `{c2}` `{c3}` companies, `{j}` job, `{a}`
/// application, `{m}` / `{m2}` the member's / other member's user id, `{u}` the token of the
/// member's digest unsubscribe link, `{member_email}`,
/// `{candidate_email}`, `{other_candidate_email}`, `{other_member_email}`, `{new_email}`
/// (a fresh address each time), `{al}` the candidate's alert, `{jc}` a closed job of `{c}`,
/// `{jd}` a deleted one, and
/// on the operators' rows `{e}` (the application's status-change event), `{d}` (a dead letter
/// of a message no worker could read) and `{jp}` (a job of `{c}` waiting for review).
#[derive(Clone)]
struct Case {
    who: Who,
    path: &'static str,
    body: Option<Value>,
    want: u16,
    /// Sent this many times; the last answer must be `want`, every answer is recorded.
    times: usize,
    /// The request the document's variants are derived from (one 2xx per row).
    base: bool,
    /// What the base case's replay (same `Idempotency-Key`) gets when it is not the stored
    /// answer: 401 once the base case revoked its own token.
    replay: Option<u16>,
    /// `application/json`, or [`MULTIPART`] for an upload (`body` is then the raw text).
    content_type: &'static str,
}

const JSON: &str = "application/json";
const BOUNDARY: &str = "walk-boundary-x4Tq";
const MULTIPART: &str = "multipart/form-data; boundary=walk-boundary-x4Tq";

/// A `multipart/form-data` body (as [`MULTIPART`] names its boundary) with one part `name`.
fn multipart_text(name: &str, filename: &str, content: &str) -> String {
    format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n{content}\r\n--{BOUNDARY}--\r\n"
    )
}

/// An upload of a plain-text résumé.
fn upload(who: Who, content: &str, want: u16) -> Case {
    Case {
        body: Some(Value::String(multipart_text("file", "cv.txt", content))),
        content_type: MULTIPART,
        ..case(who, "/api/me/resumes", None, want)
    }
}

fn case(who: Who, path: &'static str, body: Option<Value>, want: u16) -> Case {
    Case {
        who,
        path,
        body,
        want,
        times: 1,
        base: false,
        replay: None,
        content_type: JSON,
    }
}

fn base(who: Who, path: &'static str, body: Option<Value>, want: u16) -> Case {
    Case {
        base: true,
        ..case(who, path, body, want)
    }
}

impl Case {
    fn times(mut self, n: usize) -> Case {
        self.times = n;
        self
    }

    fn replay(mut self, status: u16) -> Case {
        self.replay = Some(status);
        self
    }
}

/// One row per operation: method, the document's path, and its cases in the order they run
/// (the document's variants run just before the base case, replays right after it).
type Row = (Method, &'static str, Vec<Case>);

fn table() -> Vec<Row> {
    use Method as M;
    use Who::*;
    let register = |email: &str| {
        Some(
            json!({"email": email, "password": "a long enough passphrase", "name": "N", "role": "candidate"}),
        )
    };
    let job = |company: &str| {
        Some(
            json!({"company_id": company, "title": "Another", "description": "d",
            "workplace": "onsite", "locations": [{"city": "l", "country": "DE"}],
            "employment_type": "full_time"}),
        )
    };
    let alert =
        || Some(json!({"search": {"q": "rust", "location": "Berlin"}, "frequency": "weekly"}));
    let hook = || Some(json!({"url": "https://93.184.215.14/hook", "events": ["job.expired"]}));
    vec![
        (M::POST, "/api/auth/register", vec![
            base(Anonymous, "/api/auth/register", register("{new_email}"), 201),
            case(Anonymous, "/api/auth/register", register("{member_email}"), 409),
            case(Anonymous, "/api/auth/register", Some(json!({"email": "x"})), 422),
            case(Anonymous, "/api/auth/register", register("{other_member_email}"), 429).times(11),
        ]),
        (M::POST, "/api/auth/token", vec![
            base(Anonymous, "/api/auth/token",
                Some(json!({"email": "{member_email}", "password": "a long enough passphrase"})), 200),
            case(Anonymous, "/api/auth/token",
                Some(json!({"email": "{member_email}", "password": "wrong"})), 401),
            case(Anonymous, "/api/auth/token", Some(json!({"email": "{member_email}"})), 422),
            case(Anonymous, "/api/auth/token",
                Some(json!({"email": "{other_candidate_email}", "password": "wrong"})), 429).times(11),
        ]),
        (M::GET, "/api/me", vec![base(Member, "/api/me", None, 200)]),
        (M::GET, "/api/me/export", vec![
            case(Anonymous, "/api/me/export", None, 401),
            base(Candidate, "/api/me/export", None, 200),
        ]),
        (M::POST, "/api/me/password", vec![
            case(Member, "/api/me/password",
                Some(json!({"current_password": "wrong", "new_password": "another long passphrase"})), 422),
            case(OtherCandidate, "/api/me/password",
                Some(json!({"current_password": "wrong", "new_password": "another long passphrase"})), 429).times(11),
            base(Member, "/api/me/password",
                Some(json!({"current_password": "a long enough passphrase", "new_password": "another long passphrase"})), 204)
                .replay(401),
        ]),
        (M::DELETE, "/api/me", vec![base(Candidate, "/api/me", None, 204).replay(401)]),
        (M::GET, "/api/me/notifications", vec![base(Member, "/api/me/notifications", None, 200)]),
        (M::PATCH, "/api/me/notifications", vec![
            case(Member, "/api/me/notifications", Some(json!({"application_digest": "no"})), 422),
            base(Member, "/api/me/notifications", Some(json!({"application_digest": false})), 200),
        ]),
        (M::GET, "/api/unsubscribe/{token}", vec![base(Anonymous, "/api/unsubscribe/{u}", None, 200)]),
        (M::POST, "/api/unsubscribe/{token}", vec![base(Anonymous, "/api/unsubscribe/{u}", None, 200)]),
        (M::GET, "/api/companies", vec![base(Anonymous, "/api/companies", None, 200)]),
        (M::POST, "/api/companies", vec![
            case(Candidate, "/api/companies", Some(json!({"name": "New"})), 403),
            case(Member, "/api/companies", Some(json!({"name": ""})), 422),
            base(Member, "/api/companies", Some(json!({"name": "New"})), 201),
        ]),
        (M::GET, "/api/companies/{id}", vec![base(Anonymous, "/api/companies/{c}", None, 200)]),
        (M::PATCH, "/api/companies/{id}", vec![
            case(Candidate, "/api/companies/{c}", Some(json!({"name": "Renamed"})), 403),
            case(OtherMember, "/api/companies/{c}", Some(json!({"name": "Renamed"})), 404),
            case(Member, "/api/companies/{c}", Some(json!({"name": ""})), 422),
            base(Member, "/api/companies/{c}", Some(json!({"name": "Renamed"})), 200),
        ]),
        (M::DELETE, "/api/companies/{id}", vec![
            case(Candidate, "/api/companies/{c2}", None, 403),
            case(OtherMember, "/api/companies/{c}", None, 404),
            case(Member, "/api/companies/{c}", None, 409),
            base(Member, "/api/companies/{c2}", None, 204),
        ]),
        (M::GET, "/api/companies/{id}/members", vec![
            case(Candidate, "/api/companies/{c}/members", None, 403),
            case(OtherMember, "/api/companies/{c}/members", None, 404),
            base(Member, "/api/companies/{c}/members", None, 200),
        ]),
        (M::POST, "/api/companies/{id}/members", vec![
            case(Candidate, "/api/companies/{c}/members", Some(json!({"email": "{other_member_email}"})), 403),
            case(OtherMember, "/api/companies/{c}/members", Some(json!({"email": "{other_member_email}"})), 404),
            case(Member, "/api/companies/{c}/members", Some(json!({"email": "{candidate_email}"})), 422),
            base(Member, "/api/companies/{c}/members", Some(json!({"email": "{other_member_email}"})), 204),
        ]),
        (M::DELETE, "/api/companies/{id}/members/{user_id}", vec![
            case(Candidate, "/api/companies/{c2}/members/{m2}", None, 403),
            case(OtherMember, "/api/companies/{c}/members/{m}", None, 404),
            case(Member, "/api/companies/{c}/members/{m}", None, 409),
            base(Member, "/api/companies/{c2}/members/{m2}", None, 204),
        ]),
        (M::POST, "/api/jobs", vec![
            case(Candidate, "/api/jobs", job("{c}"), 403),
            case(Member, "/api/jobs", job("{c3}"), 404),
            case(Member, "/api/jobs", Some(json!({"company_id": "{c}", "title": ""})), 422),
            base(Member, "/api/jobs", job("{c}"), 201),
        ]),
        (M::GET, "/api/jobs", vec![base(Anonymous, "/api/jobs", None, 200)]),
        (M::GET, "/api/jobs/{id}", vec![base(Anonymous, "/api/jobs/{j}", None, 200)]),
        (M::PATCH, "/api/jobs/{id}", vec![
            case(Candidate, "/api/jobs/{j}", Some(json!({"title": "Renamed"})), 403),
            case(OtherMember, "/api/jobs/{j}", Some(json!({"title": "Renamed"})), 404),
            case(Member, "/api/jobs/{j}", Some(json!({"company_id": 1})), 422),
            case(Member, "/api/jobs/{j}", Some(json!({"status": "expired"})), 409),
            base(Member, "/api/jobs/{j}", Some(json!({"title": "Renamed"})), 200),
        ]),
        (M::POST, "/api/jobs/{id}/renew", vec![
            case(Candidate, "/api/jobs/{j}/renew", None, 403),
            case(OtherMember, "/api/jobs/{j}/renew", None, 404),
            case(Member, "/api/jobs/{jc}/renew", None, 409),
            base(Member, "/api/jobs/{j}/renew", Some(json!({})), 200),
        ]),
        (M::DELETE, "/api/jobs/{id}", vec![
            case(Candidate, "/api/jobs/{j}", None, 403),
            case(OtherMember, "/api/jobs/{j}", None, 404),
            base(Member, "/api/jobs/{j}", None, 204),
        ]),
        (M::POST, "/api/jobs/{id}/applications", vec![
            case(Member, "/api/jobs/{j}/applications", Some(json!({})), 403),
            case(Candidate, "/api/jobs/{j}/applications", Some(json!({})), 409),
            case(OtherCandidate, "/api/jobs/{j}/applications", Some(json!({"cover_letter": 5})), 422),
            base(OtherCandidate, "/api/jobs/{j}/applications", Some(json!({})), 201),
        ]),
        (M::GET, "/api/applications", vec![base(Candidate, "/api/applications", None, 200)]),
        (M::GET, "/api/applications/{id}", vec![
            case(OtherCandidate, "/api/applications/{a}", None, 404),
            base(Candidate, "/api/applications/{a}", None, 200),
        ]),
        (M::PATCH, "/api/applications/{id}", vec![
            case(Candidate, "/api/applications/{a}", Some(json!({"status": "reviewing"})), 403),
            case(OtherMember, "/api/applications/{a}", Some(json!({"status": "reviewing"})), 404),
            case(Member, "/api/applications/{a}", Some(json!({"status": "nope"})), 422),
            case(Member, "/api/applications/{a}", Some(json!({"status": "hired"})), 409),
            base(Member, "/api/applications/{a}", Some(json!({"status": "reviewing"})), 200),
        ]),
        (M::POST, "/api/applications/{id}/withdraw", vec![
            case(Member, "/api/applications/{a}/withdraw", None, 403),
            case(OtherCandidate, "/api/applications/{a}/withdraw", None, 404),
            base(Candidate, "/api/applications/{a}/withdraw", None, 200),
            case(Candidate, "/api/applications/{a}/withdraw", None, 409),
        ]),
        (M::DELETE, "/api/applications/{id}", vec![
            case(Member, "/api/applications/{a}", None, 403),
            case(OtherCandidate, "/api/applications/{a}", None, 404),
            base(Candidate, "/api/applications/{a}", None, 204),
        ]),
        (M::GET, "/api/applications/{id}/history", vec![
            case(OtherCandidate, "/api/applications/{a}/history", None, 404),
            base(Candidate, "/api/applications/{a}/history", None, 200),
        ]),
        (M::POST, "/api/me/resumes", vec![
            upload(Member, "Jane Doe", 403),
            upload(Candidate, "<html><body>Jane</body></html>", 415),
            upload(OtherCandidate, "Jane Doe", 201).times(10),
            upload(OtherCandidate, "Jane Doe", 409),
            Case { base: true, ..upload(Candidate, "Jane Doe\nRust engineer\n", 201) },
        ]),
        (M::GET, "/api/me/resumes", vec![
            base(Candidate, "/api/me/resumes", None, 200),
        ]),
        (M::GET, "/api/me/resumes/{id}/file", vec![
            case(OtherCandidate, "/api/me/resumes/{r}/file", None, 404),
            base(Candidate, "/api/me/resumes/{r}/file", None, 200),
        ]),
        (M::GET, "/api/applications/{id}/resume", vec![
            case(OtherCandidate, "/api/applications/{a}/resume", None, 404),
            base(Candidate, "/api/applications/{a}/resume", None, 200),
        ]),
        (M::DELETE, "/api/me/resumes/{id}", vec![
            case(OtherCandidate, "/api/me/resumes/{r}", None, 404),
            base(Candidate, "/api/me/resumes/{r}", None, 204),
        ]),
        (M::GET, "/api/alerts", vec![
            case(Candidate, "/api/alerts?page_size=0", None, 422),
            base(Candidate, "/api/alerts", None, 200),
        ]),
        (M::POST, "/api/alerts", vec![
            case(Member, "/api/alerts", alert(), 403),
            case(Candidate, "/api/alerts", Some(json!({"search": {}, "frequency": "daily"})), 422),
            case(OtherCandidate, "/api/alerts", alert(), 409).times(21),
            base(Candidate, "/api/alerts", alert(), 201),
        ]),
        (M::PATCH, "/api/alerts/{id}", vec![
            case(OtherCandidate, "/api/alerts/{al}", Some(json!({"paused": true})), 404),
            case(Candidate, "/api/alerts/{al}", Some(json!({"paused": null})), 422),
            base(Candidate, "/api/alerts/{al}", Some(json!({"paused": true})), 200),
        ]),
        (M::DELETE, "/api/alerts/{id}", vec![
            case(OtherCandidate, "/api/alerts/{al}", None, 404),
            base(Candidate, "/api/alerts/{al}", None, 204),
        ]),
        (M::GET, "/api/companies/{id}/webhooks", vec![
            case(Candidate, "/api/companies/{c}/webhooks", None, 403),
            case(OtherMember, "/api/companies/{c}/webhooks", None, 404),
            case(Member, "/api/companies/{c}/webhooks?page_size=0", None, 422),
            base(Member, "/api/companies/{c}/webhooks", None, 200),
        ]),
        (M::POST, "/api/companies/{id}/webhooks", vec![
            case(Candidate, "/api/companies/{c}/webhooks", hook(), 403),
            case(OtherMember, "/api/companies/{c}/webhooks", hook(), 404),
            case(Member, "/api/companies/{c}/webhooks",
                Some(json!({"url": "https://127.0.0.1/", "events": ["job.expired"]})), 422),
            case(OtherMember, "/api/companies/{c3}/webhooks", hook(), 409).times(11),
            base(Member, "/api/companies/{c}/webhooks", hook(), 201),
        ]),
        (M::GET, "/api/companies/{id}/webhooks/{wid}", vec![
            case(Candidate, "/api/companies/{c}/webhooks/{wh}", None, 403),
            case(OtherMember, "/api/companies/{c}/webhooks/{wh}", None, 404),
            base(Member, "/api/companies/{c}/webhooks/{wh}", None, 200),
        ]),
        (M::PATCH, "/api/companies/{id}/webhooks/{wid}", vec![
            case(Candidate, "/api/companies/{c}/webhooks/{wh}", Some(json!({"paused": true})), 403),
            case(OtherMember, "/api/companies/{c}/webhooks/{wh}", Some(json!({"paused": true})), 404),
            case(Member, "/api/companies/{c}/webhooks/{wh}", Some(json!({"paused": null})), 422),
            base(Member, "/api/companies/{c}/webhooks/{wh}", Some(json!({"paused": true})), 200),
        ]),
        (M::POST, "/api/companies/{id}/webhooks/{wid}/rotate-secret", vec![
            case(Candidate, "/api/companies/{c}/webhooks/{wh}/rotate-secret", None, 403),
            case(OtherMember, "/api/companies/{c}/webhooks/{wh}/rotate-secret", None, 404),
            base(Member, "/api/companies/{c}/webhooks/{wh}/rotate-secret", None, 200),
        ]),
        (M::POST, "/api/companies/{id}/webhooks/{wid}/test", vec![
            case(Candidate, "/api/companies/{c}/webhooks/{wh}/test", None, 403),
            case(OtherMember, "/api/companies/{c}/webhooks/{wh}/test", None, 404),
            base(Member, "/api/companies/{c}/webhooks/{wh}/test", None, 202),
        ]),
        (M::GET, "/api/companies/{id}/webhooks/{wid}/attempts", vec![
            case(Candidate, "/api/companies/{c}/webhooks/{wh}/attempts", None, 403),
            case(OtherMember, "/api/companies/{c}/webhooks/{wh}/attempts", None, 404),
            case(Member, "/api/companies/{c}/webhooks/{wh}/attempts?page=0", None, 422),
            base(Member, "/api/companies/{c}/webhooks/{wh}/attempts", None, 200),
        ]),
        (M::POST, "/api/companies/{id}/webhooks/{wid}/redeliver", vec![
            case(Candidate, "/api/companies/{c}/webhooks/{wh}/redeliver", Some(json!({"event_id": "e"})), 403),
            case(OtherMember, "/api/companies/{c}/webhooks/{wh}/redeliver", Some(json!({"event_id": "e"})), 404),
            case(Member, "/api/companies/{c}/webhooks/{wh}/redeliver", Some(json!({"event_id": "not valid"})), 422),
            case(Member, "/api/companies/{c}/webhooks/{wh}/redeliver", Some(json!({"event_id": "no-such-event"})), 404),
            base(Member, "/api/companies/{c}/webhooks/{wh}/redeliver", Some(json!({"event_id": "{wev}"})), 202),
        ]),
        (M::DELETE, "/api/companies/{id}/webhooks/{wid}", vec![
            case(Candidate, "/api/companies/{c}/webhooks/{wh2}", None, 403),
            case(OtherMember, "/api/companies/{c}/webhooks/{wh2}", None, 404),
            base(Member, "/api/companies/{c}/webhooks/{wh2}", None, 204),
        ]),
        (M::GET, "/healthz", vec![base(Anonymous, "/healthz", None, 200)]),
        (M::GET, "/readyz", vec![base(Anonymous, "/readyz", None, 200)]),
        (M::GET, "/metrics", vec![base(Anonymous, "/metrics", None, 200)]),
        (M::GET, "/api/openapi.json", vec![base(Anonymous, "/api/openapi.json", None, 200)]),
        (M::GET, "/docs", vec![base(Anonymous, "/docs", None, 200)]),
        (M::GET, "/docs/docs.css", vec![base(Anonymous, "/docs/docs.css", None, 200)]),
        (M::GET, "/docs/docs.js", vec![base(Anonymous, "/docs/docs.js", None, 200)]),
        (M::GET, "/jobs/{id}", vec![
            case(Anonymous, "/jobs/{jc}", None, 200),
            case(Anonymous, "/jobs/{jd}", None, 410),
            base(Anonymous, "/jobs/{j}", None, 200),
        ]),
        (M::GET, "/pages/pages.css", vec![base(Anonymous, "/pages/pages.css", None, 200)]),
        (M::GET, "/jobs.atom", vec![
            case(Anonymous, "/jobs.atom?page=2", None, 422),
            base(Anonymous, "/jobs.atom?q=engineer", None, 200),
        ]),
        (M::GET, "/sitemap.xml", vec![base(Anonymous, "/sitemap.xml", None, 200)]),
        (M::GET, "/sitemaps/{file}", vec![
            case(Anonymous, "/sitemaps/jobs-999.xml", None, 404),
            base(Anonymous, "/sitemaps/jobs-1.xml", None, 200),
        ]),
        (M::GET, "/robots.txt", vec![base(Anonymous, "/robots.txt", None, 200)]),
        (M::GET, "/console", vec![base(Anonymous, "/console", None, 200)]),
        (M::GET, "/console/console.css", vec![base(Anonymous, "/console/console.css", None, 200)]),
        (M::GET, "/console/console.js", vec![base(Anonymous, "/console/console.js", None, 200)]),
        (M::GET, "/favicon.ico", vec![base(Anonymous, "/favicon.ico", None, 200)]),
        (M::GET, "/api/admin/queue", vec![
            case(Candidate, "/api/admin/queue", None, 404),
            base(Operator, "/api/admin/queue", None, 200),
        ]),
        (M::GET, "/api/admin/dead-letters", vec![
            case(Member, "/api/admin/dead-letters", None, 404),
            case(Operator, "/api/admin/dead-letters?page=0", None, 422),
            base(Operator, "/api/admin/dead-letters", None, 200),
        ]),
        (M::GET, "/api/admin/events/{event_id}", vec![
            case(Candidate, "/api/admin/events/{e}", None, 404),
            base(Operator, "/api/admin/events/{e}", None, 200),
        ]),
        (M::GET, "/api/admin/webhooks/failing", vec![
            case(Member, "/api/admin/webhooks/failing", None, 404),
            base(Operator, "/api/admin/webhooks/failing", None, 200),
        ]),
        (M::POST, "/api/admin/dead-letters/redrive", vec![
            case(Member, "/api/admin/dead-letters/redrive", Some(json!({"ids": ["{d}"]})), 404),
            case(Operator, "/api/admin/dead-letters/redrive", Some(json!({"ids": []})), 422),
            base(Operator, "/api/admin/dead-letters/redrive", Some(json!({"ids": ["{d}"]})), 200),
        ]),
        (M::DELETE, "/api/admin/dead-letters/{id}", vec![
            case(Candidate, "/api/admin/dead-letters/{d}", None, 404),
            base(Operator, "/api/admin/dead-letters/{d}", None, 204),
        ]),
        (M::GET, "/api/admin/jobs", vec![
            case(Member, "/api/admin/jobs", None, 404),
            case(Operator, "/api/admin/jobs?status=archived", None, 422),
            base(Operator, "/api/admin/jobs", None, 200),
        ]),
        (M::POST, "/api/admin/jobs/{id}/approve", vec![
            case(Member, "/api/admin/jobs/{jp}/approve", None, 404),
            case(Operator, "/api/admin/jobs/{j}/approve", None, 409),
            base(Operator, "/api/admin/jobs/{jp}/approve", None, 200),
        ]),
        (M::POST, "/api/admin/jobs/{id}/reject", vec![
            case(Member, "/api/admin/jobs/{jp}/reject", Some(json!({"reason": "Spam"})), 404),
            case(Operator, "/api/admin/jobs/{jp}/reject", Some(json!({"reason": " "})), 422),
            case(Operator, "/api/admin/jobs/{j}/reject", Some(json!({"reason": "Spam"})), 409),
            base(Operator, "/api/admin/jobs/{jp}/reject", Some(json!({"reason": "Spam"})), 200),
        ]),
    ]
}

/// Documented statuses the walk does not provoke, with the reason; nothing else may be.
const UNPROVOKED: &[(&str, &str, &str)] = &[
    (
        "GET",
        "/readyz",
        "503: needs a failing database or a shutdown (tests/api/ops.rs)",
    ),
    (
        "*",
        "*",
        "409: idempotency-in-flight needs two requests at once (tests/api/idempotency.rs)",
    ),
    (
        "GET",
        "/api/jobs",
        "503: needs a search index that cannot follow the job-change log (tests/api/index.rs)",
    ),
    (
        "GET",
        "/jobs/{id}",
        "301: the walk's client follows redirects to the canonical page (tests/api/pages.rs)",
    ),
    (
        "GET",
        "/jobs.atom",
        "503: needs a search index that cannot follow the job-change log (tests/api/index.rs)",
    ),
];

/// The pages and their assets answer 304 to an `If-None-Match` naming their ETag, a header the
/// walk does not send (tests/api/console.rs revalidates the console's and the docs', pages.rs
/// the job pages', feeds.rs the sitemap's and the feeds').
const REVALIDATED: &[&str] = &[
    "/docs",
    "/docs/docs.css",
    "/docs/docs.js",
    "/console",
    "/console/console.css",
    "/console/console.js",
    "/jobs/{id}",
    "/pages/pages.css",
    "/jobs.atom",
    "/sitemap.xml",
    "/sitemaps/{file}",
];

fn unprovoked(method: &str, path: &str, status: u16) -> bool {
    if status == 304 && method == "GET" && REVALIDATED.contains(&path) {
        return true;
    }
    UNPROVOKED.iter().any(|(m, p, why)| {
        (*m == "*" || *m == method)
            && (*p == "*" || *p == path)
            && why.starts_with(&format!("{status}:"))
    })
}

/// Enumerated inputs: (method, path, `query` or `body`, name, the values the API accepts). The
/// document must type each by an enum schema with exactly these values, and the walk sends a
/// value outside them (422) and, for query parameters, each of them.
fn enum_inputs() -> Vec<(
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Vec<&'static str>,
)> {
    let roles = vec![Role::Candidate.as_str(), Role::Employer.as_str()];
    let kinds: Vec<&str> = EmploymentType::ALL.iter().map(|t| t.as_str()).collect();
    let job_statuses: Vec<&str> = JobStatus::ALL.iter().map(|s| s.as_str()).collect();
    let statuses: Vec<&str> = ApplicationStatus::ALL.iter().map(|s| s.as_str()).collect();
    let workplaces: Vec<&str> = Workplace::ALL.iter().map(|w| w.as_str()).collect();
    vec![
        ("post", "/api/jobs", "body", "workplace", workplaces.clone()),
        (
            "patch",
            "/api/jobs/{id}",
            "body",
            "workplace",
            workplaces.clone(),
        ),
        ("get", "/api/jobs", "query", "workplace", workplaces.clone()),
        ("get", "/jobs.atom", "query", "workplace", workplaces),
        (
            "get",
            "/api/jobs",
            "query",
            "salary_currency",
            CURRENCIES.to_vec(),
        ),
        (
            "get",
            "/jobs.atom",
            "query",
            "salary_currency",
            CURRENCIES.to_vec(),
        ),
        ("post", "/api/auth/register", "body", "role", roles),
        (
            "post",
            "/api/jobs",
            "body",
            "employment_type",
            kinds.clone(),
        ),
        (
            "patch",
            "/api/jobs/{id}",
            "body",
            "employment_type",
            kinds.clone(),
        ),
        (
            "patch",
            "/api/jobs/{id}",
            "body",
            "status",
            job_statuses.clone(),
        ),
        ("get", "/api/admin/jobs", "query", "status", job_statuses),
        (
            "get",
            "/api/jobs",
            "query",
            "employment_type",
            kinds.clone(),
        ),
        ("get", "/jobs.atom", "query", "employment_type", kinds),
        (
            "get",
            "/api/jobs",
            "query",
            "sort",
            vec!["newest", "relevance"],
        ),
        (
            "patch",
            "/api/applications/{id}",
            "body",
            "status",
            statuses.clone(),
        ),
        ("get", "/api/applications", "query", "status", statuses),
        (
            "post",
            "/api/alerts",
            "body",
            "frequency",
            vec!["daily", "weekly"],
        ),
        (
            "patch",
            "/api/alerts/{id}",
            "body",
            "frequency",
            vec!["daily", "weekly"],
        ),
    ]
}

/// The query parameters that take free text; any other string query parameter must be an
/// enumerated input (a row of `enum_inputs()`), so a new one cannot slip in as a plain string.
/// `facets` is a comma-separated list of names (a list, not one enumerated value); its
/// unknown names are 422 (tests/api/index.rs). `ids` is a comma-separated list of job ids; a
/// list that is not is 422 (tests/api/search.rs).
const FREE_TEXT_QUERY: &[(&str, &str, &str)] = &[
    ("get", "/api/jobs", "q"),
    ("get", "/api/jobs", "location"),
    ("get", "/api/jobs", "facets"),
    ("get", "/api/jobs", "ids"),
    // An opaque cursor, the `next` of the page before.
    ("get", "/api/jobs", "after"),
    ("get", "/jobs.atom", "q"),
    ("get", "/jobs.atom", "location"),
    // An ISO 3166-1 alpha-2 code in any case (a pattern, not an enum of upper-case codes); a
    // code no country has is 422 (tests/api/pay_place.rs).
    ("get", "/api/jobs", "country"),
    ("get", "/jobs.atom", "country"),
];

/// Fields sent only when the request asks for them (`schema`, `field`).
const SENT_WHEN_ASKED: &[(&str, &str)] = &[
    ("JobList", "facets"),
    ("SearchFacets", "employment_type"),
    ("SearchFacets", "remote"),
    ("SearchFacets", "workplace"),
    ("SearchFacets", "company"),
];

/// The headers a client reads whose presence must be documented where they are sent.
const NOTABLE_HEADERS: &[&str] = &["retry-after", "idempotent-replayed", "x-cache"];

fn document() -> Value {
    serde_json::to_value(jobboard::http::openapi::ApiDoc::openapi()).expect("document as JSON")
}

/// `value`, or what its `$ref` points to in `doc`.
fn resolve<'a>(doc: &'a Value, value: &'a Value) -> &'a Value {
    match value.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let pointer = r.trim_start_matches('#');
            resolve(doc, doc.pointer(pointer).unwrap_or(&Value::Null))
        }
        None => value,
    }
}

fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            if ["get", "put", "post", "patch", "delete"].contains(&method.as_str()) {
                out.push((method.clone(), path.clone(), op));
            }
        }
    }
    out
}

/// The paths of every `.route("…", …)` in `src/http/` and its folders.
fn routed_paths() -> BTreeSet<String> {
    fn walk(dir: &std::path::Path, paths: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let file = entry.unwrap().path();
            if file.is_dir() {
                walk(&file, paths);
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for (i, _) in text.match_indices(".route(") {
                let rest = text[i + ".route(".len()..].trim_start();
                if let Some(rest) = rest.strip_prefix('"') {
                    paths.insert(rest[..rest.find('"').unwrap()].to_string());
                }
            }
        }
    }
    let mut paths = BTreeSet::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http"),
        &mut paths,
    );
    paths
}

fn param<'a>(doc: &'a Value, op: &'a Value, location: &str, name: &str) -> Option<&'a Value> {
    op["parameters"]
        .as_array()?
        .iter()
        .map(|p| resolve(doc, p))
        .find(|p| {
            p["in"] == location
                && p["name"]
                    .as_str()
                    .is_some_and(|n| n.eq_ignore_ascii_case(name))
        })
}

fn accepts_idempotency_key(doc: &Value, op: &Value) -> bool {
    param(doc, op, "header", "Idempotency-Key").is_some()
}

/// The enum values of a schema: its own `enum`, or the one of a `$ref` it is, or one of its
/// `oneOf` / `anyOf` / `allOf` members (nullable schemas).
fn enum_values(doc: &Value, schema: &Value) -> Option<BTreeSet<String>> {
    let schema = resolve(doc, schema);
    if let Some(values) = schema["enum"].as_array() {
        return Some(
            values
                .iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect(),
        );
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        for member in schema[key].as_array().into_iter().flatten() {
            if let Some(values) = enum_values(doc, member) {
                return Some(values);
            }
        }
    }
    None
}

#[test]
fn the_document_keeps_the_rules_generators_rely_on() {
    let doc = document();
    let mut wrong = Vec::new();

    let mut ids = BTreeMap::new();
    for (method, path, op) in operations(&doc) {
        let at = format!("{} {path}", method.to_uppercase());
        match op["operationId"].as_str() {
            Some(id) => {
                if let Some(other) = ids.insert(id.to_string(), at.clone()) {
                    wrong.push(format!("{at}: operationId `{id}` is also {other}'s"));
                }
            }
            None => wrong.push(format!("{at}: no operationId")),
        }
        if !op["security"].is_array() {
            wrong.push(format!("{at}: no `security` (`[]` for a public operation)"));
        }
        let write = ["post", "patch", "delete"].contains(&method.as_str());
        if write && path.starts_with("/api/") && !path.starts_with("/api/auth/") {
            if !accepts_idempotency_key(&doc, op) {
                wrong.push(format!("{at}: no Idempotency-Key header parameter"));
            }
            if op["responses"]["400"].is_null() {
                wrong.push(format!(
                    "{at}: a malformed Idempotency-Key is 400, undocumented"
                ));
            }
        }
        for (code, response) in op["responses"].as_object().into_iter().flatten() {
            let response = resolve(&doc, response);
            if code == "429" && response["headers"]["Retry-After"].is_null() {
                wrong.push(format!("{at}: 429 without its Retry-After header"));
            }
            for (media, content) in response["content"].as_object().into_iter().flatten() {
                if media.contains("json") {
                    all_fields_required(
                        &doc,
                        &content["schema"],
                        &format!("{at} {code}"),
                        &mut wrong,
                    );
                }
            }
        }
        for p in op["parameters"].as_array().into_iter().flatten() {
            let p = resolve(&doc, p);
            let name = p["name"].as_str().unwrap_or("");
            let schema = resolve(&doc, &p["schema"]);
            if p["in"] == "query"
                && schema["type"] == "integer"
                && !name.ends_with("_id")
                && (schema["minimum"].is_null() || schema["maximum"].is_null())
            {
                wrong.push(format!(
                    "{at}: query parameter `{name}` has no documented range"
                ));
            }
        }
    }
    for (method, path, op) in operations(&doc) {
        if path == "/api/companies" || path == "/api/jobs" || path == "/api/applications" {
            if method != "get" {
                continue;
            }
            let size =
                param(&doc, op, "query", "page_size").map(|p| resolve(&doc, &p["schema"]).clone());
            let size = size.unwrap_or(Value::Null);
            if size["minimum"] != json!(1) || size["maximum"] != json!(100) {
                wrong.push(format!(
                    "GET {path}: page_size is not documented as 1-100: {size}"
                ));
            }
        }
    }

    let enums = enum_inputs();
    for (method, path, op) in operations(&doc) {
        for p in op["parameters"].as_array().into_iter().flatten() {
            let p = resolve(&doc, p);
            let name = p["name"].as_str().unwrap_or("");
            let schema = resolve(&doc, &p["schema"]);
            let is_string = schema["type"] == "string"
                || schema["type"]
                    .as_array()
                    .is_some_and(|t| t.contains(&json!("string")));
            let listed = |(m, pp, loc, n): (&str, &str, &str, &str)| {
                m == method && pp == path && loc == "query" && n == name
            };
            if p["in"] == "query"
                && is_string
                && !FREE_TEXT_QUERY
                    .iter()
                    .any(|(m, pp, n)| listed((m, pp, "query", n)))
                && !enums
                    .iter()
                    .any(|(m, pp, loc, n, _)| listed((m, pp, loc, n)))
            {
                wrong.push(format!(
                    "{} {path}: query parameter `{name}` is a plain string; an enumerated one \
                     needs its enum schema and a row in enum_inputs(), free text a row in \
                     FREE_TEXT_QUERY",
                    method.to_uppercase()
                ));
            }
        }
    }

    for (method, path, location, name, values) in enums {
        let op = &doc["paths"][path][method];
        let schema = if location == "query" {
            param(&doc, op, "query", name).map(|p| p["schema"].clone())
        } else {
            let body = op["requestBody"]["content"]
                .as_object()
                .and_then(|c| c.values().next())
                .map(|c| resolve(&doc, &c["schema"]).clone());
            body.map(|b| b["properties"][name].clone())
        };
        let want: BTreeSet<String> = values.iter().map(|v| v.to_string()).collect();
        match schema.as_ref().and_then(|s| enum_values(&doc, s)) {
            Some(got) if got == want => {}
            got => wrong.push(format!(
                "{} {path}: {location} `{name}` is not the enum {want:?}: {got:?} in {schema:?}",
                method.to_uppercase()
            )),
        }
    }

    if doc["servers"].as_array().is_none_or(|s| s.is_empty()) {
        wrong.push("no `servers`".to_string());
    }
    if doc["info"]["license"]["name"]
        .as_str()
        .is_none_or(str::is_empty)
    {
        wrong.push("`info.license` has no name".to_string());
    }
    let x_cache = &doc["paths"]["/api/jobs"]["get"]["responses"]["200"]["headers"]["X-Cache"];
    if enum_values(&doc, &x_cache["schema"])
        != Some(["HIT", "MISS"].iter().map(|s| s.to_string()).collect())
    {
        wrong.push(format!(
            "GET /api/jobs 200: X-Cache is not documented as HIT or MISS: {x_cache}"
        ));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every property of every object in `schema` is required: the API always sends every field,
/// optional ones as `null` (docs/api.md). A problem's `errors` is sent on 422 only.
fn all_fields_required(doc: &Value, schema: &Value, at: &str, wrong: &mut Vec<String>) {
    let name = schema["$ref"]
        .as_str()
        .unwrap_or("")
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_string();
    let schema = resolve(doc, schema);
    for key in ["oneOf", "anyOf", "allOf"] {
        for member in schema[key].as_array().into_iter().flatten() {
            all_fields_required(doc, member, at, wrong);
        }
    }
    all_fields_required_in(doc, &schema["items"], at, wrong);
    let Some(props) = schema["properties"].as_object() else {
        return;
    };
    let required: BTreeSet<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for (field, sub) in props {
        let sometimes = (name == "Problem" && field == "errors")
            || SENT_WHEN_ASKED.contains(&(name.as_str(), field.as_str()));
        let sent_always = !sometimes;
        if sent_always && !required.contains(field.as_str()) {
            let message = format!("{at}: `{name}.{field}` is always sent but not required");
            if !wrong.contains(&message) {
                wrong.push(message);
            }
        }
        all_fields_required(doc, sub, at, wrong);
    }
}

fn all_fields_required_in(doc: &Value, schema: &Value, at: &str, wrong: &mut Vec<String>) {
    if !schema.is_null() {
        all_fields_required(doc, schema, at, wrong);
    }
}

/// The fixtures a row's cases refer to.
struct World {
    member: User,
    candidate: User,
    other_candidate: User,
    other_member: User,
    c: i64,
    c2: i64,
    c3: i64,
    j: i64,
    a: i64,
    /// An alert of the candidate's.
    al: i64,
    /// A résumé of the candidate's, attached to `a`.
    r: i64,
    /// Webhook endpoints of `c`; the second is deleted by the walk.
    wh: i64,
    wh2: i64,
    /// The event of a delivery to `wh`.
    wev: String,
    /// A closed job of `c`.
    jc: i64,
    /// A deleted job of `c`.
    jd: i64,
    /// On the operators' rows: the operator, an event id, a dead letter's id and a job waiting
    /// for review.
    operator: Option<User>,
    e: String,
    d: String,
    jp: i64,
}

impl World {
    async fn new(app: &TestApp, operators: bool) -> World {
        let s = app.scenario().await;
        let other_candidate = app.user("candidate").await;
        let other_member = app.user("employer").await;
        let c2 = app.company(&s.employer, "Empty").await;
        app.post(
            &format!("/api/companies/{c2}/members"),
            Some(&s.employer.token),
            json!({"email": other_member.email}),
        )
        .await
        .expect(204);
        let c3 = app.company(&other_member, "Elsewhere").await;
        let al = app
            .post(
                "/api/alerts",
                Some(&s.candidate.token),
                json!({"search": {"q": "engineer"}, "frequency": "daily"}),
            )
            .await
            .expect(201)["id"]
            .as_i64()
            .expect("the alert's id");
        let r = TestApp::read(
            app.client
                .post(app.url("/api/me/resumes"))
                .bearer_auth(&s.candidate.token)
                .header("content-type", MULTIPART)
                .body(multipart_text("file", "cv.txt", "Jane Doe"))
                .send()
                .await
                .expect("upload"),
        )
        .await
        .expect(201)["id"]
            .as_i64()
            .expect("the résumé's id");
        app.exec(&format!(
            "UPDATE applications SET resume_id = {r} WHERE id = {}",
            s.application_id
        ))
        .await;
        let mut hooks = Vec::new();
        for _ in 0..2 {
            hooks.push(
                app.post(
                    &format!("/api/companies/{}/webhooks", s.company_id),
                    Some(&s.employer.token),
                    json!({"url": "https://93.184.215.14/walk", "events": ["job.expired"]}),
                )
                .await
                .expect(201)["id"]
                    .as_i64()
                    .expect("the endpoint's id"),
            );
        }
        let (wh, wh2) = (hooks[0], hooks[1]);
        // A delivery to `wh` to redeliver (a ping's, queued by its route).
        app.post(
            &format!("/api/companies/{}/webhooks/{wh}/test", s.company_id),
            Some(&s.employer.token),
            json!({}),
        )
        .await
        .expect(202);
        let wev = app
            .scalar_text(&format!(
                "SELECT event_id FROM webhook_deliveries WHERE endpoint_id = {wh}"
            ))
            .await
            .expect("the ping's delivery");
        let closed = app
            .job(&s.employer, s.company_id, json!({"title": "Closed"}))
            .await;
        let jc = closed["id"].as_i64().expect("job id");
        app.patch(
            &format!("/api/jobs/{jc}"),
            Some(&s.employer.token),
            json!({"status": "closed"}),
        )
        .await
        .expect(200);
        let deleted = app
            .job(&s.employer, s.company_id, json!({"title": "Deleted"}))
            .await;
        let jd = deleted["id"].as_i64().expect("job id");
        app.delete(&format!("/api/jobs/{jd}"), Some(&s.employer.token))
            .await
            .expect(204);
        let (mut operator, mut e, mut d, mut jp) = (None, String::new(), String::new(), 0);
        if operators {
            operator = Some(app.operator().await);
            // Waiting for review, as a job made under JOB_MODERATION would be.
            let waiting = app
                .job(&s.employer, s.company_id, json!({"title": "Waiting"}))
                .await;
            jp = waiting["id"].as_i64().expect("job id");
            app.exec(&format!(
                "UPDATE jobs SET status = 'pending_review' WHERE id = {jp}"
            ))
            .await;
            app.patch(
                &format!("/api/applications/{}", s.application_id),
                Some(&s.employer.token),
                json!({"status": "reviewing"}),
            )
            .await
            .expect(200);
            e = app
                .scalar_text(&format!(
                    "SELECT event_id FROM application_history WHERE application_id = {} \
                     AND new_status = 'reviewing'",
                    s.application_id
                ))
                .await
                .expect("the change's event");
            let store = &app.state.store;
            store
                .queue_enqueue(None, None, "not an event")
                .await
                .unwrap();
            // The applications' and the status change's messages are on the queue too; the
            // poison is the newest.
            let m = store
                .queue_receive(100, 60_000)
                .await
                .unwrap()
                .into_iter()
                .find(|m| m.body == "not an event")
                .expect("the poison message");
            store
                .queue_dead_letter(
                    m.id,
                    &m.receipt,
                    jobboard::store::NewDeadLetter {
                        event_id: None,
                        reason: "invalid message: not JSON".into(),
                        attempts: 0,
                        body: m.body,
                        first_failed_at: None,
                        invalid: true,
                    },
                )
                .await
                .unwrap();
            d = store.dead_letters().await.unwrap()[0].id.to_string();
        }
        World {
            operator,
            e,
            d,
            jc,
            jd,
            jp,
            c: s.company_id,
            j: s.job_id,
            a: s.application_id,
            al,
            r,
            wh,
            wh2,
            wev,
            member: s.employer,
            candidate: s.candidate,
            other_candidate,
            other_member,
            c2,
            c3,
        }
    }

    fn fill(&self, template: &str) -> String {
        let mut out = template
            .replace("{e}", &self.e)
            .replace("{d}", &self.d)
            .replace("{c}", &self.c.to_string())
            .replace("{c2}", &self.c2.to_string())
            .replace("{c3}", &self.c3.to_string())
            .replace("{jc}", &self.jc.to_string())
            .replace("{jd}", &self.jd.to_string())
            .replace("{jp}", &self.jp.to_string())
            .replace("{j}", &self.j.to_string())
            .replace("{al}", &self.al.to_string())
            .replace("{r}", &self.r.to_string())
            .replace("{wh2}", &self.wh2.to_string())
            .replace("{wev}", &self.wev)
            .replace("{wh}", &self.wh.to_string())
            .replace("{a}", &self.a.to_string())
            .replace("{m}", &self.member.id.to_string())
            .replace("{m2}", &self.other_member.id.to_string())
            .replace("{u}", &digest_token(&self.member))
            .replace("{member_email}", &self.member.email)
            .replace("{candidate_email}", &self.candidate.email)
            .replace("{other_candidate_email}", &self.other_candidate.email)
            .replace("{other_member_email}", &self.other_member.email);
        while out.contains("{new_email}") {
            out = out.replacen("{new_email}", &format!("{}@example.com", unique("walk")), 1);
        }
        out
    }

    /// The body as sent: placeholders filled, and `"{c}"`-like ids as numbers; an upload's
    /// multipart text as it is.
    fn body(&self, body: &Option<Value>) -> Option<String> {
        let body = body.as_ref()?;
        if let Value::String(raw) = body {
            return Some(raw.clone());
        }
        let mut text = self.fill(&body.to_string());
        for id in [self.c, self.c2, self.c3] {
            text = text.replace(&format!("\"{id}\""), &id.to_string());
        }
        Some(text)
    }

    fn token(&self, who: Who) -> Option<String> {
        match who {
            Who::Anonymous => None,
            Who::BadToken => Some("not-a-token".to_string()),
            Who::Member => Some(self.member.token.clone()),
            Who::Candidate => Some(self.candidate.token.clone()),
            Who::OtherCandidate => Some(self.other_candidate.token.clone()),
            Who::OtherMember => Some(self.other_member.token.clone()),
            Who::Operator => Some(
                self.operator
                    .as_ref()
                    .expect("an operators' row")
                    .token
                    .clone(),
            ),
        }
    }
}

/// One request as the walk sends it.
struct Request {
    what: String,
    who: Who,
    path: String,
    body: Option<String>,
    content_type: &'static str,
    key: Option<String>,
    want: Option<u16>,
    /// The answer must carry `Idempotent-Replayed: true`.
    replayed: bool,
}

/// The media types and the notable headers of one operation's answers with one status.
type Answers = (BTreeSet<String>, BTreeSet<String>);

/// What the walk saw: per operation, each status with the media types and notable headers.
#[derive(Default)]
struct Seen {
    statuses: BTreeMap<(String, String), BTreeMap<u16, Answers>>,
    wrong: Vec<String>,
}

async fn send(
    app: &TestApp,
    world: &World,
    method: &Method,
    doc_path: &str,
    r: Request,
    seen: &mut Seen,
) {
    let mut req = app.client.request(method.clone(), app.url(&r.path));
    if let Some(t) = world.token(r.who) {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    if let Some(k) = &r.key {
        req = req.header("idempotency-key", k.as_str());
    }
    if let Some(b) = r.body {
        req = req.header("content-type", r.content_type).body(b);
    }
    let res = TestApp::read(req.send().await.expect("request")).await;
    let status = res.status.as_u16();
    let at = format!("{method} {doc_path}: {} ({:?} {})", r.what, r.who, r.path);
    if let Some(want) = r.want
        && status != want
    {
        seen.wrong.push(format!(
            "{at}: {status}, expected {want}: {}",
            truncate(&res.text)
        ));
    }
    if r.replayed && res.header("idempotent-replayed") != Some("true") {
        seen.wrong
            .push(format!("{at}: no Idempotent-Replayed: true"));
    }
    let entry = seen
        .statuses
        .entry((method.as_str().to_lowercase(), doc_path.to_string()))
        .or_default()
        .entry(status)
        .or_default();
    if !res.text.is_empty()
        && let Some(ct) = res.header("content-type")
    {
        entry
            .0
            .insert(ct.split(';').next().unwrap_or("").trim().to_string());
    }
    for h in NOTABLE_HEADERS {
        if res.headers.contains_key(*h) {
            entry.1.insert(h.to_string());
        }
    }
}

fn truncate(text: &str) -> &str {
    &text[..text.len().min(300)]
}

/// The document's variants of a row's base case.
fn variants(
    doc: &Value,
    method: &Method,
    doc_path: &str,
    op: &Value,
    base: &Case,
    world: &World,
) -> Vec<Request> {
    let path = world.fill(base.path);
    let body = world.body(&base.body);
    let template = || Request {
        what: String::new(),
        who: base.who,
        path: path.clone(),
        body: body.clone(),
        content_type: base.content_type,
        key: None,
        want: None,
        replayed: false,
    };
    let mut out = Vec::new();
    let secured = op["security"].as_array().is_some_and(|s| {
        !s.is_empty()
            && s.iter()
                .all(|r| r.as_object().is_some_and(|r| !r.is_empty()))
    });
    // docs/api.md, Operators: to anyone but an operator, signed in or not, 404.
    let operators = doc_path.starts_with("/api/admin/");
    let refused = if operators { 404 } else { 401 };
    if secured {
        out.push(Request {
            what: "no token".into(),
            who: Who::Anonymous,
            want: Some(refused),
            ..template()
        });
    }
    // docs/api.md: a bad token is 401 on every /api endpoint, the public ones included.
    let api = doc_path.starts_with("/api/") && doc_path != "/api/openapi.json";
    out.push(Request {
        what: "a bad token".into(),
        who: Who::BadToken,
        want: api.then_some(refused),
        ..template()
    });
    // Each id of the path, unknown, then not an integer.
    let mut rest = base.path;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').unwrap() + open;
        let placeholder = &rest[open..=close];
        for (what, id) in [("an unknown id", "999999999"), ("a non-integer id", "x1")] {
            out.push(Request {
                what: format!("{what} for {placeholder}"),
                path: world.fill(&base.path.replacen(placeholder, id, 1)),
                want: Some(404),
                ..template()
            });
        }
        rest = &rest[close + 1..];
    }
    let upload = op["requestBody"]["content"]["multipart/form-data"].is_object();
    if upload {
        out.push(Request {
            what: "a JSON body".into(),
            body: Some("{}".into()),
            content_type: JSON,
            want: Some(415),
            ..template()
        });
        out.push(Request {
            what: "a multipart body cut short".into(),
            body: Some(format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"cv.txt\"\r\n\r\nJane")),
            want: Some(400),
            ..template()
        });
        out.push(Request {
            what: "no file part".into(),
            body: Some(multipart_text("cv", "cv.txt", "Jane Doe")),
            want: Some(422),
            ..template()
        });
        out.push(Request {
            what: "a file over RESUME_MAX_BYTES".into(),
            body: Some(multipart_text(
                "file",
                "cv.txt",
                &"Jane Doe\n".repeat(600_000),
            )),
            want: Some(413),
            ..template()
        });
    } else if !op["requestBody"].is_null() {
        out.push(Request {
            what: "malformed JSON".into(),
            body: Some("{".into()),
            want: Some(400),
            ..template()
        });
        out.push(Request {
            what: "a text/plain body".into(),
            content_type: "text/plain",
            want: Some(415),
            ..template()
        });
        out.push(Request {
            what: "a body over 64 KiB".into(),
            body: Some(json!({"name": "x".repeat(70 * 1024)}).to_string()),
            want: Some(413),
            ..template()
        });
        out.push(Request {
            what: "an unknown field".into(),
            body: Some(json!({"no_such_field": 1}).to_string()),
            want: Some(422),
            ..template()
        });
    }
    if accepts_idempotency_key(doc, op) {
        out.push(Request {
            what: "a malformed Idempotency-Key".into(),
            key: Some("not valid".into()),
            want: Some(400),
            ..template()
        });
    }
    let enums = enum_inputs();
    let method_name = method.as_str().to_lowercase();
    // An enumerated body field outside its values is 422.
    let base_body = body
        .as_deref()
        .and_then(|b| serde_json::from_str::<Value>(b).ok());
    for (.., name, _) in enums
        .iter()
        .filter(|(m, p, loc, ..)| *m == method_name && *p == doc_path && *loc == "body")
    {
        if let Some(Value::Object(mut fields)) = base_body.clone() {
            fields.insert(name.to_string(), json!("no_such_value"));
            out.push(Request {
                what: format!("body {name}=no_such_value"),
                body: Some(Value::Object(fields).to_string()),
                want: Some(422),
                ..template()
            });
        }
    }
    for p in op["parameters"].as_array().into_iter().flatten() {
        let p = resolve(doc, p);
        if p["in"] != "query" {
            continue;
        }
        let name = p["name"].as_str().unwrap_or("");
        let schema = resolve(doc, &p["schema"]);
        let with = |value: &str| {
            let sep = if path.contains('?') { '&' } else { '?' };
            format!("{path}{sep}{name}={value}")
        };
        let mut values: Vec<(String, Option<u16>)> = Vec::new();
        let listed = enums.iter().find(|(m, pp, loc, n, _)| {
            *m == method.as_str().to_lowercase() && *pp == doc_path && *loc == "query" && *n == name
        });
        if let Some((.., accepted)) = listed {
            values.extend(accepted.iter().map(|v| (v.to_string(), Some(base.want))));
            values.push(("no_such_value".into(), Some(422)));
        } else if schema["type"] == "integer" {
            values.push(("x".into(), Some(422)));
            if let Some(min) = schema["minimum"].as_i64() {
                values.push(((min - 1).to_string(), Some(422)));
                values.push((min.to_string(), None));
            }
            if let Some(max) = schema["maximum"].as_i64() {
                values.push(((max + 1).to_string(), Some(422)));
                values.push((max.to_string(), None));
            }
        } else if schema["type"] == "boolean" {
            values.push(("maybe".into(), Some(422)));
            values.push(("true".into(), Some(base.want)));
        }
        for (value, want) in values {
            out.push(Request {
                what: format!("query {name}={value}"),
                path: with(&value),
                want,
                ..template()
            });
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_and_every_status_it_answers_is_documented() {
    let app = TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await;
    let doc = app.get("/api/openapi.json", None).await.expect(200).clone();
    let mut seen = Seen::default();

    // The routes: every path of a `.route(…)` is documented, and on each documented path the
    // documented methods are served and the others are 405 (asked as an operator under
    // /api/admin/, where anyone else gets 404 whatever the method).
    let operator = app.operator().await;
    let documented: BTreeSet<String> = operations(&doc).iter().map(|(_, p, _)| p.clone()).collect();
    for path in routed_paths() {
        if !documented.contains(&path) {
            seen.wrong
                .push(format!("{path} is routed but not documented"));
        }
    }
    for path in &documented {
        let concrete = path.replace("{id}", "1").replace("{user_id}", "1");
        for method in [
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ] {
            let is_documented = !doc["paths"][path][method.as_str().to_lowercase()].is_null();
            let token = path
                .starts_with("/api/admin/")
                .then_some(operator.token.as_str());
            let r = app.send(method.clone(), &concrete, token, None).await;
            let served = r.status.as_u16() != 405;
            if served != is_documented {
                seen.wrong.push(format!(
                    "{method} {path}: served {served}, documented {is_documented} ({})",
                    r.status
                ));
            }
        }
    }

    // The table covers exactly the documented operations.
    let rows = table();
    let in_table: BTreeSet<(String, String)> = rows
        .iter()
        .map(|(m, p, _)| (m.as_str().to_lowercase(), p.to_string()))
        .collect();
    let in_doc: BTreeSet<(String, String)> = operations(&doc)
        .iter()
        .map(|(m, p, _)| (m.clone(), p.clone()))
        .collect();
    for missing in in_doc.difference(&in_table) {
        seen.wrong.push(format!(
            "{missing:?} is documented but has no row in the walk's table"
        ));
    }
    for extra in in_table.difference(&in_doc) {
        seen.wrong.push(format!(
            "{extra:?} has a row in the walk's table but is not documented"
        ));
    }

    for (method, doc_path, cases) in rows {
        let Some(op) = doc["paths"][doc_path].get(method.as_str().to_lowercase()) else {
            continue;
        };
        let world = World::new(&app, doc_path.starts_with("/api/admin/")).await;
        for c in cases {
            if c.base {
                for v in variants(&doc, &method, doc_path, op, &c, &world) {
                    send(&app, &world, &method, doc_path, v, &mut seen).await;
                }
            }
            let key = (c.base && accepts_idempotency_key(&doc, op)).then(|| unique("walk-key"));
            let path = world.fill(c.path);
            let body = world.body(&c.body);
            for i in 0..c.times {
                let last = i + 1 == c.times;
                let r = Request {
                    what: if c.base {
                        "the base case".into()
                    } else {
                        format!("case {}", c.want)
                    },
                    who: c.who,
                    path: path.clone(),
                    body: body.clone(),
                    content_type: c.content_type,
                    key: key.clone(),
                    want: last.then_some(c.want),
                    replayed: false,
                };
                send(&app, &world, &method, doc_path, r, &mut seen).await;
            }
            if let Some(key) = key {
                // The same request again is the stored answer; another body with the key, 422.
                let again = |what: &str, body: Option<String>, want: u16, replayed: bool| Request {
                    what: what.into(),
                    who: c.who,
                    path: path.clone(),
                    body,
                    content_type: c.content_type,
                    key: Some(key.clone()),
                    want: Some(want),
                    replayed,
                };
                let replay = c.replay.unwrap_or(c.want);
                let r = again("a replay", body.clone(), replay, c.replay.is_none());
                send(&app, &world, &method, doc_path, r, &mut seen).await;
                if let Some(b) = &body {
                    let want = if c.replay.is_none() { 422 } else { replay };
                    let r = again(
                        "the key with another body",
                        Some(format!("{b} ")),
                        want,
                        false,
                    );
                    send(&app, &world, &method, doc_path, r, &mut seen).await;
                }
            }
        }
    }

    // Every answer seen is documented, with its media type and notable headers; every
    // documented answer was seen.
    let mut wrong = std::mem::take(&mut seen.wrong);
    for ((method, path), statuses) in &seen.statuses {
        let at = format!("{} {path}", method.to_uppercase());
        let responses = &doc["paths"][path][method]["responses"];
        for (status, (media, headers)) in statuses {
            let documented = &responses[status.to_string()];
            if documented.is_null() {
                wrong.push(format!("{at} answers {status}, undocumented"));
                continue;
            }
            let documented = resolve(&doc, documented);
            for m in media {
                if documented["content"][m].is_null() {
                    wrong.push(format!("{at} {status} is sent as {m}, undocumented"));
                }
            }
            let named: BTreeSet<String> = documented["headers"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k.to_ascii_lowercase())
                .collect();
            for h in headers {
                if !named.contains(h) {
                    wrong.push(format!("{at} {status} sends {h}, undocumented"));
                }
            }
        }
        for code in responses.as_object().into_iter().flatten().map(|(k, _)| k) {
            let code: u16 = code.parse().unwrap_or(0);
            if !statuses.contains_key(&code) && !unprovoked(&method.to_uppercase(), path, code) {
                wrong.push(format!("{at} documents {code}, never seen in the walk"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} problems:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
