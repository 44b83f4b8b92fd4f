//! Every fixed statement, once. Those that differ by backend are put together from the
//! [`Dialect`](crate::store::dialect::Dialect) constants at compile time, so each statement's
//! text is the same on every call and is prepared once per connection.

use super::D;
use crate::store::dialect::Dialect;
use const_format::concatcp;

const NOW: &str = <D as Dialect>::NOW_MS;
const FOR_UPDATE: &str = <D as Dialect>::FOR_UPDATE;

// Users and sign-in

pub const USER_SELECT: &str =
    "SELECT id, email, name, role, password_hash, token_generation, created_at FROM users";
pub const USER_BY_ID: &str = concatcp!(USER_SELECT, " WHERE id = $1");
pub const USER_BY_EMAIL_KEY: &str = concatcp!(USER_SELECT, " WHERE email_key = $1");
pub const USER_INSERT: &str = "INSERT INTO users (email, email_key, name, role, password_hash, \
     created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id";
pub const USER_SET_PASSWORD: &str = "UPDATE users SET password_hash = $1, \
     token_generation = token_generation + 1 WHERE id = $2";
/// A user's résumés, deleted before the user (whose deletion would cascade to them) so that
/// their files' keys are known.
pub const USER_RESUMES_DELETE: &str =
    "DELETE FROM resumes WHERE user_id = $1 RETURNING storage_key";
pub const USER_DELETE: &str = "DELETE FROM users WHERE id = $1";
pub const USER_NOTIFICATIONS: &str = "SELECT application_digest FROM users WHERE id = $1";
/// `$1` the new `application_digest`, or NULL to keep it.
pub const USER_NOTIFICATIONS_UPDATE: &str = "UPDATE users SET \
     application_digest = COALESCE($1, application_digest) WHERE id = $2 \
     RETURNING application_digest";
/// What `AUTH_FAILURES_*` return per counter: its kind, the failures of its current window and
/// the ms until that window ends. `$1` the email counter's key, `$2` the address's, `$3` the
/// window in ms.
const AUTH_COUNTER: &str = concatcp!(
    "kind, failures, window_start + $3 - ",
    NOW,
    " AS remaining_ms"
);
pub const AUTH_FAILURES_READ: &str = concatcp!(
    "SELECT ",
    AUTH_COUNTER,
    " FROM auth_failures WHERE ((kind = 'email' AND key = $1) OR (kind = 'addr' AND key = $2)) \
     AND window_start > ",
    NOW,
    " - $3"
);
/// Counts one failure against both counters in one statement (one write lock on SQLite); a
/// counter whose window has ended starts a new one. Concurrent failures each see their own count.
pub const AUTH_FAILURES_COUNT: &str = concatcp!(
    "INSERT INTO auth_failures (kind, key, window_start, failures) VALUES ('email', $1, ",
    NOW,
    ", 1), ('addr', $2, ",
    NOW,
    ", 1) ON CONFLICT (kind, key) DO UPDATE SET \
     failures = CASE WHEN auth_failures.window_start <= ",
    NOW,
    " - $3 THEN 1 ELSE auth_failures.failures + 1 END, \
     window_start = CASE WHEN auth_failures.window_start <= ",
    NOW,
    " - $3 THEN ",
    NOW,
    " ELSE auth_failures.window_start END RETURNING ",
    AUTH_COUNTER
);
/// A right password: its email's counter goes, and its own failure leaves the address's.
pub const AUTH_FAILURES_FORGIVE_EMAIL: &str =
    "DELETE FROM auth_failures WHERE kind = 'email' AND key = $1";
pub const AUTH_FAILURES_FORGIVE_ADDR: &str = "UPDATE auth_failures SET failures = failures - 1 \
     WHERE kind = 'addr' AND key = $1 AND failures > 0";
pub const AUTH_FAILURES_EXPIRED_DELETE: &str = concatcp!(
    "DELETE FROM auth_failures WHERE (kind, key) IN (SELECT kind, key FROM auth_failures \
     WHERE window_start <= ",
    NOW,
    " - $1 LIMIT $2)"
);

// Companies

const COMPANY_COLUMNS: &str = "id, name, website, description, created_at";
pub const COMPANY_SELECT: &str = concatcp!("SELECT ", COMPANY_COLUMNS, " FROM companies");
pub const COMPANY_BY_ID: &str = concatcp!(COMPANY_SELECT, " WHERE id = $1");
pub const COMPANY_INSERT: &str = concatcp!(
    "INSERT INTO companies (name, website, description, created_at) VALUES ($1, $2, $3, $4) \
     RETURNING ",
    COMPANY_COLUMNS
);
pub const COMPANY_UPDATE: &str = concatcp!(
    "UPDATE companies SET name = $1, website = $2, description = $3 WHERE id = $4 RETURNING ",
    COMPANY_COLUMNS
);
/// Locks the company for the rest of the transaction.
pub const COMPANY_NAME_LOCKED: &str =
    concatcp!("SELECT name FROM companies WHERE id = $1", FOR_UPDATE);
pub const COMPANY_DELETE: &str = "DELETE FROM companies WHERE id = $1";
pub const COMPANY_JOB_COUNT: &str = "SELECT COUNT(*) FROM jobs WHERE company_id = $1";
pub const COMPANY_JOB_TEXTS: &str = "SELECT id, title, description FROM jobs WHERE company_id = $1";
pub const MEMBER_INSERT: &str =
    "INSERT INTO company_members (company_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING";
pub const MEMBER_IS: &str =
    "SELECT company_id FROM company_members WHERE company_id = $1 AND user_id = $2";
pub const MEMBER_IDS: &str = "SELECT user_id FROM company_members WHERE company_id = $1";
pub const MEMBER_DELETE: &str =
    "DELETE FROM company_members WHERE company_id = $1 AND user_id = $2";
pub const MEMBERS: &str = "SELECT u.id, u.name, u.email FROM company_members m \
     JOIN users u ON u.id = m.user_id WHERE m.company_id = $1 ORDER BY u.id";
pub const EMPLOYER_BY_EMAIL_KEY: &str =
    "SELECT id FROM users WHERE email_key = $1 AND role = 'employer'";

// Jobs

pub const JOB_SELECT: &str = "SELECT j.id, j.company_id, c.name AS company_name, j.title, \
     j.description, j.location, j.remote, j.salary_min, j.salary_max, j.workplace, j.locations, \
     j.salary_currency, j.salary_period, j.employment_type, j.status, j.expires_at, j.rejection_reason, j.resume_required, j.questions, j.created_at, \
     j.updated_at FROM jobs j JOIN companies c ON c.id = j.company_id";
pub const JOB_BY_ID: &str = concatcp!(JOB_SELECT, " WHERE j.id = $1");
pub const JOB_INSERT: &str = "INSERT INTO jobs (company_id, title, description, location, \
     location_key, remote, salary_min, salary_max, employment_type, status, search_terms, \
     title_terms, expires_at, resume_required, questions, workplace, locations, \
     salary_currency, salary_period, created_at, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, \
     $19, $20, $20) RETURNING id";
/// The creation time of the job with the highest id: a new job is never created before it.
pub const JOB_LATEST_CREATED: &str = "SELECT created_at FROM jobs ORDER BY id DESC LIMIT 1";
/// Updates the job only if it still has the version (`updated_at`) its merge started from.
/// The rejection's reason goes once the job is no longer rejected.
pub const JOB_UPDATE: &str = "UPDATE jobs SET title = $1, description = $2, location = $3, \
     location_key = $4, remote = $5, salary_min = $6, salary_max = $7, employment_type = $8, \
     status = $9, search_terms = $10, title_terms = $11, expires_at = $12, \
     resume_required = $13, questions = $14, workplace = $15, locations = $16, \
     salary_currency = $17, salary_period = $18, \
     rejection_reason = CASE WHEN $9 = 'rejected' THEN rejection_reason END, updated_at = $19 \
     WHERE id = $20 AND updated_at = $21";
/// Rows whose title terms are not filled yet (written before the column existed).
/// The next jobs after an id whose titles have no terms: each batch starts where the last one
/// ended, so a backfill reads the table once, not its filled part again for every batch.
pub const JOB_TITLES_UNINDEXED: &str =
    "SELECT id, title FROM jobs WHERE id > $1 AND title_terms IS NULL ORDER BY id LIMIT 500";
pub const JOB_SET_TITLE_TERMS: &str = "UPDATE jobs SET title_terms = $1 WHERE id = $2";
pub const JOB_COMPANY_NAME: &str =
    "SELECT c.name FROM jobs j JOIN companies c ON c.id = j.company_id WHERE j.id = $1";
pub const JOB_SET_TERMS: &str = "UPDATE jobs SET search_terms = $1 WHERE id = $2";
/// Locked so that a concurrent close or delete waits for the application being made.
pub const JOB_STATUS_SHARED: &str = concatcp!(
    "SELECT status, expires_at FROM jobs WHERE id = $1",
    <D as Dialect>::FOR_SHARE
);
/// A job's status and version, locked for the rest of the transaction (renew, review).
pub const JOB_STATE_LOCKED: &str = concatcp!(
    "SELECT status, expires_at, updated_at FROM jobs WHERE id = $1",
    FOR_UPDATE
);
pub const JOB_RENEW: &str = "UPDATE jobs SET status = 'open', expires_at = $1, updated_at = $2 \
     WHERE id = $3";
/// An approval: open from now (`created_at` is the approval, docs/api.md), until `$2`.
pub const JOB_APPROVE: &str = "UPDATE jobs SET status = 'open', expires_at = $2, \
     rejection_reason = NULL, created_at = $1, updated_at = $1 WHERE id = $3";
pub const JOB_REJECT: &str = "UPDATE jobs SET status = 'rejected', rejection_reason = $2, \
     updated_at = $1 WHERE id = $3";
/// The upkeep's agenda (migration 0015): an open job's `expires_at` to watch.
pub const EXPIRY_SCHEDULE: &str = "INSERT INTO job_expiries (job_id, expires_at) VALUES ($1, $2) \
     ON CONFLICT DO NOTHING";
pub const EXPIRY_FORGET_JOB: &str = "DELETE FROM job_expiries WHERE job_id = $1";
/// Every member of a company, by id: who a job's events go to.
pub const MEMBER_IDS_ORDERED: &str =
    "SELECT user_id FROM company_members WHERE company_id = $1 ORDER BY user_id";
pub const JOB_DELETE: &str = "DELETE FROM jobs WHERE id = $1";

// Applications

pub const APPLICATION_SELECT: &str = "SELECT a.id, a.job_id, j.title AS job_title, \
     j.company_id, c.name AS company_name, a.candidate_id, u.name AS candidate_name, \
     u.email AS candidate_email, a.status, a.cover_letter, a.resume_id, \
     r.filename AS resume_filename, r.content_type AS resume_content_type, \
     r.size AS resume_size, a.answers, a.created_at, a.updated_at \
     FROM applications a JOIN jobs j ON j.id = a.job_id JOIN companies c ON c.id = j.company_id \
     JOIN users u ON u.id = a.candidate_id LEFT JOIN resumes r ON r.id = a.resume_id";
pub const APPLICATION_BY_ID: &str = concatcp!(APPLICATION_SELECT, " WHERE a.id = $1");
pub const APPLICATION_INSERT: &str = "INSERT INTO applications (job_id, candidate_id, status, \
     cover_letter, resume_id, answers, created_at, updated_at) \
     VALUES ($1, $2, 'submitted', $3, $5, $6, $4, $4) RETURNING id";
/// Attaches résumé `$1` to an application of user `$2` at `$3`: marks it used and reads what
/// the application shows of it; no row when it is not theirs.
pub const RESUME_ATTACH: &str = "UPDATE resumes SET used_at = $3 WHERE id = $1 AND user_id = $2 \
     RETURNING filename, content_type, size";
/// [`RESUME_ATTACH`] on PostgreSQL, at the database's clock.
pub const RESUME_ATTACH_PG: &str = "UPDATE resumes SET used_at = clock_timestamp() \
     WHERE id = $1 AND user_id = $2 RETURNING filename, content_type, size";
/// An apply's first statement on PostgreSQL: the job locked `FOR SHARE` and judged open by the
/// database's clock (as `domain::job::status_at` judges it), the application inserted, and what
/// the answer, the event and its webhook deliveries need read back: its id and time, the job's
/// title and company, the candidate, and the company's enabled endpoints (`id events` pairs
/// joined by `|`, as `ENABLED_OF_COMPANY` reads them). No row: the job is missing, closed or
/// expired, which the caller then tells apart.
pub const APPLY_PG: &str = "WITH j AS (SELECT id, status, expires_at, title, company_id \
     FROM jobs WHERE id = $1 FOR SHARE), c AS (SELECT clock_timestamp() AS t), \
     a AS (INSERT INTO applications (job_id, candidate_id, status, cover_letter, resume_id, \
         answers, created_at, updated_at) SELECT j.id, $2, 'submitted', $3, $4, $5, c.t, c.t \
         FROM j, c \
         WHERE j.status = 'open' AND (j.expires_at IS NULL OR j.expires_at > c.t) \
         RETURNING id, created_at) \
     SELECT a.id, a.created_at, j.title AS job_title, j.company_id, co.name AS company_name, \
     u.name AS candidate_name, u.email AS candidate_email, \
     (SELECT string_agg(w.id || ' ' || w.events, '|' ORDER BY w.id) FROM webhook_endpoints w \
         WHERE w.company_id = j.company_id AND NOT w.paused AND w.disabled_reason IS NULL) \
         AS endpoints \
     FROM a CROSS JOIN j JOIN companies co ON co.id = j.company_id JOIN users u ON u.id = $2";
/// An apply's second statement on PostgreSQL: the first history row (`$1` application, `$2`
/// candidate, `$3` event id, `$4` time), the `application.submitted` record (`$5` type, `$6`
/// body) and its outbox row.
pub const APPLIED_WRITES_PG: &str = concatcp!(
    "WITH h AS (INSERT INTO application_history (application_id, old_status, new_status, \
     changed_by, event_id, at) VALUES ($1, NULL, 'submitted', $2, $3, $4)), \
     e AS (INSERT INTO events (event_id, type, body, created_at) VALUES ($3, $5, $6, $4)) \
     INSERT INTO outbox (event_id, application_id, body, created_at, visible_at) \
     VALUES ($3, $1, $6, $4, ",
    NOW,
    ")"
);
/// An apply on PostgreSQL without an `Idempotency-Key`, as one statement outside any
/// transaction: [`APPLY_PG`]'s job, judged the same way, [`RESUME_ATTACH_PG`]'s résumé, and
/// [`APPLIED_WRITES_PG`]'s writes, the event's body written by the statement as
/// `Event::to_json` writes it (`$1` job, `$2` candidate, `$3` cover letter, `$4` answers, `$5`
/// event id, `$6` résumé or NULL, `$7` NULL when the caller has read the candidate's account and
/// the job and checked the application against the job's questions and `resume_required`, else
/// the generation of the caller's token). It writes nothing, and answers no row, when the job
/// takes no application, another transaction holds it locked to write it (the statement does
/// not wait: the caller's transaction does), its company has an enabled webhook endpoint, or
/// the résumé is not the candidate's; and, when the caller has read neither, when the account is not a candidate's
/// whose token generation is `$7` or the job asks questions or a résumé that is not given: the
/// caller then reads them, or takes the two-statement path, which says why or writes the
/// deliveries.
pub const APPLY_ONE_PG: &str = concatcp!(
    "WITH j AS (SELECT id, status, expires_at, title, company_id, questions, resume_required \
     FROM jobs WHERE id = $1 FOR SHARE SKIP LOCKED), \
     c AS (SELECT clock_timestamp() AS t), \
     ok AS (SELECT j.id, c.t FROM j, c \
         WHERE j.status = 'open' AND (j.expires_at IS NULL OR j.expires_at > c.t) \
         AND ($7::bigint IS NULL OR (j.questions IS NULL \
             AND (NOT j.resume_required OR $6::bigint IS NOT NULL) \
             AND EXISTS (SELECT 1 FROM users WHERE id = $2 AND role = 'candidate' \
                 AND token_generation = $7))) \
         AND NOT EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.company_id = j.company_id \
             AND NOT w.paused AND w.disabled_reason IS NULL)), \
     r AS (UPDATE resumes SET used_at = ok.t FROM ok WHERE resumes.id = $6 \
         AND resumes.user_id = $2 RETURNING resumes.filename, resumes.content_type, resumes.size), \
     a AS (INSERT INTO applications (job_id, candidate_id, status, cover_letter, resume_id, \
         answers, created_at, updated_at) SELECT ok.id, $2, 'submitted', $3, $6, $4, ok.t, ok.t \
         FROM ok WHERE $6::bigint IS NULL OR EXISTS (SELECT 1 FROM r) \
         RETURNING id, created_at), \
     b AS (SELECT id, created_at, '{\"event_id\":\"' || $5 || '\",\"occurred_at\":\"' \
         || to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') \
         || '\",\"type\":\"application.submitted\",\"application_id\":' || id || '}' AS body \
         FROM a), \
     h AS (INSERT INTO application_history (application_id, old_status, new_status, \
         changed_by, event_id, at) SELECT id, NULL, 'submitted', $2, $5, created_at FROM b), \
     e AS (INSERT INTO events (event_id, type, body, created_at) \
         SELECT $5, 'application.submitted', body, created_at FROM b), \
     o AS (INSERT INTO outbox (event_id, application_id, body, created_at, visible_at) \
         SELECT $5, id, body, created_at, ",
    NOW,
    " FROM b) \
     SELECT b.id, b.created_at, j.title AS job_title, j.company_id, co.name AS company_name, \
     u.name AS candidate_name, u.email AS candidate_email, r.filename AS resume_filename, \
     r.content_type AS resume_content_type, r.size AS resume_size \
     FROM b CROSS JOIN j JOIN companies co ON co.id = j.company_id JOIN users u ON u.id = $2 \
     LEFT JOIN r ON TRUE"
);
/// [`APPLY_ONE_PG`] for a batch of applies that arrived together (`store::combine`), as one
/// statement outside any transaction: each apply is judged, and written or declined, as that
/// statement judges it, on its own. The batch comes as one JSON array (`$1`), an object per
/// apply, in order: `job_id`, `candidate_id`, `cover_letter`, `answers`, `event_id`, `resume_id`
/// (or null) and `generation` (null, or the token's generation: [`APPLY_ONE_PG`]'s `$7`). It
/// answers one row per apply written, `n` its place in the array (from 1); an apply it declines
/// has none, and neither has an apply to a job its candidate has already applied to, nor the
/// second of two applies of the batch by one candidate to one job: the caller then takes the
/// path that reads the account and the job, which says why. A job another transaction holds
/// locked to write it is declined, not waited for, so that it holds up no other apply of the
/// batch; a résumé is attached only by its own candidate.
pub const APPLY_BATCH_PG: &str = concatcp!(
    "WITH i AS (SELECT * FROM ROWS FROM (json_to_recordset($1::json) AS (job_id bigint, \
         candidate_id bigint, cover_letter text, answers text, event_id text, resume_id bigint, \
         generation bigint)) WITH ORDINALITY AS i(job_id, candidate_id, cover_letter, answers, \
         event_id, resume_id, generation, n)), \
     j AS (SELECT id, status, expires_at, title, company_id, questions, resume_required \
         FROM jobs WHERE id = ANY (ARRAY(SELECT job_id FROM i)) ORDER BY id \
         FOR SHARE SKIP LOCKED), \
     c AS (SELECT clock_timestamp() AS t), \
     ok AS (SELECT DISTINCT ON (i.job_id, i.candidate_id) i.*, c.t FROM i JOIN j ON j.id = i.job_id, c \
         WHERE j.status = 'open' AND (j.expires_at IS NULL OR j.expires_at > c.t) \
         AND (i.generation IS NULL OR (j.questions IS NULL \
             AND (NOT j.resume_required OR i.resume_id IS NOT NULL) \
             AND (SELECT token_generation FROM users WHERE id = i.candidate_id \
                 AND role = 'candidate') = i.generation)) \
         AND NOT EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.company_id = j.company_id \
             AND NOT w.paused AND w.disabled_reason IS NULL) \
         ORDER BY i.job_id, i.candidate_id, i.n), \
     r AS (UPDATE resumes SET used_at = c.t FROM c \
         WHERE resumes.id = ANY (ARRAY(SELECT resume_id FROM ok WHERE resume_id IS NOT NULL)) \
         AND EXISTS (SELECT 1 FROM ok WHERE ok.resume_id = resumes.id \
             AND ok.candidate_id = resumes.user_id) \
         RETURNING resumes.id, resumes.user_id, resumes.filename, resumes.content_type, \
         resumes.size), \
     a AS (INSERT INTO applications (job_id, candidate_id, status, cover_letter, resume_id, \
         answers, created_at, updated_at) SELECT ok.job_id, ok.candidate_id, 'submitted', \
         ok.cover_letter, ok.resume_id, ok.answers, ok.t, ok.t FROM ok \
         WHERE ok.resume_id IS NULL OR EXISTS (SELECT 1 FROM r WHERE r.id = ok.resume_id \
             AND r.user_id = ok.candidate_id) \
         ORDER BY ok.job_id, ok.candidate_id \
         ON CONFLICT (job_id, candidate_id) DO NOTHING \
         RETURNING id, job_id, candidate_id, resume_id, created_at), \
     b AS (SELECT a.id, a.job_id, a.candidate_id, a.resume_id, a.created_at, ok.n, ok.event_id, \
         '{\"event_id\":\"' || ok.event_id || '\",\"occurred_at\":\"' \
         || to_char(a.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') \
         || '\",\"type\":\"application.submitted\",\"application_id\":' || a.id || '}' AS body \
         FROM a JOIN ok ON ok.job_id = a.job_id AND ok.candidate_id = a.candidate_id), \
     h AS (INSERT INTO application_history (application_id, old_status, new_status, \
         changed_by, event_id, at) SELECT id, NULL, 'submitted', candidate_id, event_id, \
         created_at FROM b), \
     e AS (INSERT INTO events (event_id, type, body, created_at) \
         SELECT event_id, 'application.submitted', body, created_at FROM b), \
     o AS (INSERT INTO outbox (event_id, application_id, body, created_at, visible_at) \
         SELECT event_id, id, body, created_at, ",
    NOW,
    " FROM b ORDER BY n) \
     SELECT b.n, b.id, b.created_at, j.title AS job_title, j.company_id, \
     co.name AS company_name, u.name AS candidate_name, u.email AS candidate_email, \
     r.filename AS resume_filename, r.content_type AS resume_content_type, \
     r.size AS resume_size \
     FROM b JOIN j ON j.id = b.job_id JOIN companies co ON co.id = j.company_id \
     JOIN users u ON u.id = b.candidate_id LEFT JOIN r ON r.id = b.resume_id"
);
pub const APPLICATION_STATUS_LOCKED: &str =
    concatcp!("SELECT status FROM applications WHERE id = $1", FOR_UPDATE);
pub const APPLICATION_SET_STATUS: &str =
    "UPDATE applications SET status = $1, updated_at = $2 WHERE id = $3";
pub const APPLICATION_DELETE: &str = "DELETE FROM applications WHERE id = $1";
pub const HISTORY_INSERT: &str = "INSERT INTO application_history (application_id, old_status, \
     new_status, changed_by, event_id, at) VALUES ($1, $2, $3, $4, $5, $6)";
pub const HISTORY: &str = "SELECT old_status, new_status, changed_by, event_id, at \
     FROM application_history WHERE application_id = $1 ORDER BY id";

// The outbox and the database queue

/// The transactional outbox: the event commits with the change or not at all.
pub const OUTBOX_INSERT: &str = concatcp!(
    "INSERT INTO outbox (event_id, application_id, body, created_at, visible_at) \
     VALUES ($1, $2, $3, $4, ",
    NOW,
    ") RETURNING id"
);
/// An event's record (not a status change's: see migration 0013); a second writing of an id is
/// refused without an error, and the caller then writes no outbox row.
pub const EVENT_RECORD_INSERT: &str = "INSERT INTO events (event_id, type, body, created_at) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (event_id) DO NOTHING";
pub const QUEUE_RECEIVE: &str = concatcp!(
    "UPDATE outbox SET visible_at = ",
    NOW,
    " + $1, receive_count = receive_count + 1, receipt = $2 WHERE id IN (SELECT id FROM outbox \
     WHERE visible_at <= ",
    NOW,
    " ORDER BY visible_at, id LIMIT $3",
    <D as Dialect>::SKIP_LOCKED,
    ") RETURNING id, receipt, body, receive_count, event_id"
);
pub const QUEUE_ACK: &str = "DELETE FROM outbox WHERE id = $1 AND receipt = $2";
pub const QUEUE_DELAY: &str = concatcp!(
    "UPDATE outbox SET visible_at = ",
    NOW,
    " + $3 WHERE id = $1 AND receipt = $2"
);
pub const QUEUE_STATS: &str = "SELECT COUNT(*), MIN(created_at) FROM outbox";
pub const OUTBOX_COUNT: &str = "SELECT COUNT(*) FROM outbox";
/// The relay takes up to `$1` rows for `$2` ms (with `QUEUE=sqs` the outbox's `visible_at` is
/// the relay's, not a receiver's), committed at once: no transaction waits on the publish.
pub const OUTBOX_TAKE: &str = concatcp!(
    "UPDATE outbox SET visible_at = ",
    NOW,
    " + $2 WHERE id IN (SELECT id FROM outbox WHERE visible_at <= ",
    NOW,
    " ORDER BY id LIMIT $1",
    <D as Dialect>::SKIP_LOCKED,
    ") RETURNING id, event_id, body"
);
/// Rows taken but not published are the next sweep's at once.
pub const OUTBOX_RETURN: &str = concatcp!("UPDATE outbox SET visible_at = ", NOW, " WHERE id = $1");
pub const OUTBOX_DELETE: &str = "DELETE FROM outbox WHERE id = $1";

// Claims of events (processed_events)

pub const CLAIM_INSERT: &str = concatcp!(
    "INSERT INTO processed_events (event_id, status, lease_id, locked_until, attempts, \
     updated_at) VALUES ($1, 'in_progress', $2, ",
    NOW,
    " + $3, 0, ",
    NOW,
    ") ON CONFLICT (event_id) DO NOTHING"
);
pub const CLAIM_READ_LOCKED: &str = concatcp!(
    "SELECT status, locked_until, attempts, ",
    NOW,
    " FROM processed_events WHERE event_id = $1",
    FOR_UPDATE
);
pub const CLAIM_TAKE: &str = concatcp!(
    "UPDATE processed_events SET status = 'in_progress', lease_id = $2, locked_until = ",
    NOW,
    " + $3, updated_at = ",
    NOW,
    " WHERE event_id = $1"
);
pub const CLAIM_EXTEND: &str = concatcp!(
    "UPDATE processed_events SET locked_until = ",
    NOW,
    " + $3 WHERE event_id = $1 AND lease_id = $2 AND status = 'in_progress'"
);
pub const CLAIM_FINISH: &str = concatcp!(
    "UPDATE processed_events SET status = $3, lease_id = NULL, locked_until = NULL, \
     updated_at = ",
    NOW,
    " WHERE event_id = $1 AND lease_id = $2 AND status = 'in_progress'"
);
const CLAIM_FAIL_SET: &str = concatcp!(
    "UPDATE processed_events SET attempts = attempts + 1, \
     status = CASE WHEN $3 OR attempts + 1 >= $4 THEN 'dead' ELSE 'pending' END, \
     lease_id = NULL, locked_until = NULL, last_error = $2, \
     first_failed_at = COALESCE(first_failed_at, ",
    NOW,
    "), updated_at = ",
    NOW,
    " WHERE event_id = $1 AND status = 'in_progress'"
);
const CLAIM_FAIL_RETURNING: &str = " RETURNING attempts, status, first_failed_at";
/// Counts a failed send of the claim held under lease `$5`.
pub const CLAIM_FAIL_LEASED: &str =
    concatcp!(CLAIM_FAIL_SET, " AND lease_id = $5", CLAIM_FAIL_RETURNING);
/// Counts a failed send of a claim with no lease (transaction mode); a claim that a `lease`-mode
/// worker took meanwhile is its own.
pub const CLAIM_FAIL_UNLEASED: &str = concatcp!(
    CLAIM_FAIL_SET,
    " AND lease_id IS NULL",
    CLAIM_FAIL_RETURNING
);
/// Counts a failed send whose outcome is unknown (the deadline passed, or the connection dropped
/// once the message was handed over: the server may have accepted it) but keeps the claim
/// `in_progress`, its lease left to lapse unextended: the next claim is then a takeover of an
/// expired claim, logged and counted as a reclaim (docs/guarantee.md: repeats never exceed
/// reclaims). Dead, and released, after `$4` attempts (`$3` is always false here).
const CLAIM_KEEP_SET: &str = concatcp!(
    "UPDATE processed_events SET attempts = attempts + 1, \
     status = CASE WHEN $3 OR attempts + 1 >= $4 THEN 'dead' ELSE 'in_progress' END, \
     lease_id = CASE WHEN $3 OR attempts + 1 >= $4 THEN NULL ELSE lease_id END, \
     locked_until = CASE WHEN $3 OR attempts + 1 >= $4 THEN NULL ELSE locked_until END, \
     last_error = $2, first_failed_at = COALESCE(first_failed_at, ",
    NOW,
    "), updated_at = ",
    NOW,
    " WHERE event_id = $1 AND status = 'in_progress'"
);
/// [`CLAIM_KEEP_SET`] for the claim held under lease `$5`.
pub const CLAIM_KEEP_LEASED: &str =
    concatcp!(CLAIM_KEEP_SET, " AND lease_id = $5", CLAIM_FAIL_RETURNING);
/// [`CLAIM_KEEP_SET`] for a transaction-mode mark (no lease: it counts as expired at once).
pub const CLAIM_KEEP_UNLEASED: &str = concatcp!(
    CLAIM_KEEP_SET,
    " AND lease_id IS NULL",
    CLAIM_FAIL_RETURNING
);
/// Releases the claim held under lease `$3` (or, with `$3` NULL, a transaction-mode mark) with
/// no attempt counted: the mail service refused the session, not the message.
pub const CLAIM_RELEASE: &str = concatcp!(
    "UPDATE processed_events SET status = 'pending', lease_id = NULL, locked_until = NULL, \
     last_error = $2, updated_at = ",
    NOW,
    " WHERE event_id = $1 AND status = 'in_progress' AND lease_id IS NOT DISTINCT FROM $3"
);
/// Counts a panic while handling the claim held under lease `$4` (NULL: a transaction-mode
/// mark) and releases it; dead at the `$3`th panic.
pub const CLAIM_PANICKED: &str = concatcp!(
    "UPDATE processed_events SET panics = panics + 1, \
     status = CASE WHEN panics + 1 >= $3 THEN 'dead' ELSE 'pending' END, \
     lease_id = NULL, locked_until = NULL, last_error = $2, \
     first_failed_at = COALESCE(first_failed_at, ",
    NOW,
    "), updated_at = ",
    NOW,
    " WHERE event_id = $1 AND status = 'in_progress' AND lease_id IS NOT DISTINCT FROM $4 \
     RETURNING panics, attempts, status, first_failed_at"
);
pub const CLAIM_STATUS: &str = "SELECT status FROM processed_events WHERE event_id = $1";
/// Transaction mode's claim: a new row, a pending one (released by an earlier failure), or one
/// whose lease (a `lease`-mode worker's) has expired; never a live lease.
pub const CLAIM_IN_TRANSACTION: &str = concatcp!(
    "INSERT INTO processed_events (event_id, status, attempts, updated_at) VALUES ($1, 'done', \
     0, ",
    NOW,
    ") ON CONFLICT (event_id) DO UPDATE SET status = 'done', lease_id = NULL, \
     locked_until = NULL, updated_at = ",
    NOW,
    " WHERE processed_events.status = 'pending' OR (processed_events.status = 'in_progress' \
     AND COALESCE(processed_events.locked_until, 0) <= ",
    NOW,
    ") RETURNING attempts"
);
/// Transaction mode's mark before its transaction: the claim's state, locked (a live
/// transaction-mode holder's lock makes this wait until its transaction ends).
pub const CLAIM_TX_PEEK: &str = concatcp!(
    "SELECT status, locked_until, ",
    NOW,
    " FROM processed_events WHERE event_id = $1",
    FOR_UPDATE
);
/// The mark itself: `in_progress` with no lease, committed before the send, on a new, pending
/// or vanished holder's claim.
pub const CLAIM_TX_MARK: &str = concatcp!(
    "INSERT INTO processed_events (event_id, status, attempts, updated_at) VALUES ($1, \
     'in_progress', 0, ",
    NOW,
    ") ON CONFLICT (event_id) DO UPDATE SET status = 'in_progress', lease_id = NULL, \
     locked_until = NULL, updated_at = ",
    NOW,
    " WHERE processed_events.status = 'pending' OR (processed_events.status = 'in_progress' \
     AND COALESCE(processed_events.locked_until, 0) <= ",
    NOW,
    ")"
);
pub const CLAIM_STATE: &str = concatcp!(
    "SELECT status, locked_until, ",
    NOW,
    " FROM processed_events WHERE event_id = $1"
);
/// Transaction mode, after a failed send: the claim again, for counting the failure.
pub const CLAIM_FOR_FAILURE: &str = concatcp!(
    "INSERT INTO processed_events (event_id, status, attempts, updated_at) \
     VALUES ($1, 'in_progress', 0, ",
    NOW,
    ") ON CONFLICT (event_id) DO UPDATE SET status = 'in_progress' \
     WHERE processed_events.status = 'pending'"
);
pub const CLAIM_MISSING: &str =
    "UPDATE processed_events SET status = 'missing' WHERE event_id = $1";
/// Forgets a dead or released event's failures, so that a redriven copy starts from zero.
pub const CLAIM_RESET: &str =
    "DELETE FROM processed_events WHERE event_id = $1 AND status IN ('dead', 'pending')";
pub const CLAIMS_EXPIRED_DELETE: &str = "DELETE FROM processed_events WHERE event_id IN \
     (SELECT event_id FROM processed_events WHERE status IN ('done', 'missing', 'dead') \
     AND updated_at < $1 LIMIT $2)";

// What an event's email needs, read at send time: one statement per type (see
// `sql/email_data.rs`), each returning nothing once the event's record or what it reports is
// gone. Every one starts with the recipient's columns.

const RECIPIENT: &str = "u.id AS user_id, u.email, u.name";
/// The candidate, the job and its company of an application event, from its history row.
const APPLICATION_EVENT: &str = concatcp!(
    "SELECT h.event_id, a.id AS application_id, ",
    RECIPIENT,
    ", j.title AS job_title, c.name AS company, r.filename AS resume \
     FROM application_history h \
     JOIN applications a ON a.id = h.application_id JOIN users u ON u.id = a.candidate_id \
     JOIN jobs j ON j.id = a.job_id JOIN companies c ON c.id = j.company_id \
     LEFT JOIN resumes r ON r.id = a.resume_id"
);
/// `application.status_changed`: its record is its history row.
pub const STATUS_CHANGED_DATA: &str = concatcp!(APPLICATION_EVENT, " WHERE h.event_id = $1");
/// [`STATUS_CHANGED_DATA`] for several events: `IN (…)` follows.
pub const STATUS_CHANGED_DATA_MANY: &str = concatcp!(APPLICATION_EVENT, " WHERE h.event_id IN (");
/// `application.submitted`: its record in `events`, and the history row it wrote with the
/// application (which links it to the application).
const SUBMITTED_EVENT: &str = concatcp!(
    APPLICATION_EVENT,
    " JOIN events e ON e.event_id = h.event_id"
);
pub const SUBMITTED_DATA: &str = concatcp!(SUBMITTED_EVENT, " WHERE h.event_id = $1");
/// [`SUBMITTED_DATA`] for several events: `IN (…)` follows.
pub const SUBMITTED_DATA_MANY: &str = concatcp!(SUBMITTED_EVENT, " WHERE h.event_id IN (");
/// `job.expiring`, `job.expired`, `job.reviewed` (`$1` the event, `$2` the job, `$3` the user):
/// its record, the job, and the user still a member of the job's company.
/// The rejection reason is NULL until migration 0015 adds `jobs.rejection_reason`: select
/// `j.rejection_reason` in its place then.
pub const JOB_EVENT_DATA: &str = concatcp!(
    "SELECT ",
    RECIPIENT,
    ", j.title AS job_title, c.name AS company, j.rejection_reason \
     FROM events e JOIN jobs j ON j.id = $2 JOIN companies c ON c.id = j.company_id \
     JOIN company_members m ON m.company_id = j.company_id AND m.user_id = $3 \
     JOIN users u ON u.id = m.user_id WHERE e.event_id = $1"
);
/// `webhook.disabled` (`$1` the event, `$2` the endpoint, `$3` the member): the member, still a
/// member of the endpoint's company, and the endpoint's address.
pub const WEBHOOK_EVENT_DATA: &str = concatcp!(
    "SELECT ",
    RECIPIENT,
    ", w.url, c.id AS company_id, c.name AS company \
     FROM events e JOIN webhook_endpoints w ON w.id = $2 \
     JOIN companies c ON c.id = w.company_id \
     JOIN company_members m ON m.company_id = w.company_id AND m.user_id = $3 \
     JOIN users u ON u.id = m.user_id WHERE e.event_id = $1"
);
/// `applications.digest` (`$1` the event, `$2` the member, `$3` the digest's application ids as
/// a JSON array): the member, their preference, and the listed applications still there to
/// their companies' jobs, counted by job (one row with a NULL job when none is left).
pub const DIGEST_DATA: &str = concatcp!(
    "SELECT ",
    RECIPIENT,
    ", u.application_digest, x.job_id, x.job_title, x.company, \
     COUNT(x.application_id) AS applications FROM users u JOIN events e ON e.event_id = $1 \
     LEFT JOIN (SELECT m.user_id, j.id AS job_id, j.title AS job_title, c.name AS company, \
     a.id AS application_id FROM applications a JOIN jobs j ON j.id = a.job_id \
     JOIN companies c ON c.id = j.company_id JOIN company_members m ON m.company_id = j.company_id \
     WHERE a.id IN (",
    <D as Dialect>::JSON_IDS_OPEN,
    "$3",
    <D as Dialect>::JSON_IDS_CLOSE,
    ")) x ON x.user_id = u.id WHERE u.id = $2 \
     GROUP BY u.id, u.email, u.name, u.application_digest, x.job_id, x.job_title, x.company \
     ORDER BY x.company, x.job_title, x.job_id"
);

/// `alert.digest` (`$1` the event, `$2` the alert, `$3` the listed job ids as a JSON array):
/// its record, the alert's owner, the alert, the name of the company it narrows to (if any, and
/// still there), and one row per listed job still there as it is now (one row with a NULL job
/// when none is left). A job back in review or rejected is its company's alone: not shown.
pub const ALERT_DIGEST_DATA: &str = concatcp!(
    "SELECT ",
    RECIPIENT,
    ", a.q, a.location, a.remote, a.company_id, c.name AS company_name, a.salary_min, \
     a.employment_type, a.workplace, a.country, a.salary_currency, a.frequency, a.paused, x.id AS job_id, x.title AS job_title, \
     x.company AS job_company, x.location AS job_location FROM events e \
     JOIN alerts a ON a.id = $2 JOIN users u ON u.id = a.user_id \
     LEFT JOIN companies c ON c.id = a.company_id \
     LEFT JOIN (SELECT j.id, j.title, jc.name AS company, j.location FROM jobs j \
     JOIN companies jc ON jc.id = j.company_id \
     WHERE j.status NOT IN ('pending_review', 'rejected') AND j.id IN (",
    <D as Dialect>::JSON_IDS_OPEN,
    "$3",
    <D as Dialect>::JSON_IDS_CLOSE,
    ")) x ON 1 = 1 WHERE e.event_id = $1"
);

// The hourly applications digests (the worker's upkeep)

/// The applications created in one hour (`$1` ≤ created_at < `$2`) to the jobs of the companies
/// of up to `$4` members after member `$3` (by id) whose digest is on, by member.
pub const DIGEST_MEMBERS: &str = "SELECT m.user_id, a.id FROM applications a \
     JOIN jobs j ON j.id = a.job_id JOIN company_members m ON m.company_id = j.company_id \
     WHERE a.created_at >= $1 AND a.created_at < $2 AND m.user_id IN (\
     SELECT DISTINCT m2.user_id FROM applications a2 JOIN jobs j2 ON j2.id = a2.job_id \
     JOIN company_members m2 ON m2.company_id = j2.company_id JOIN users u2 ON u2.id = m2.user_id \
     WHERE a2.created_at >= $1 AND a2.created_at < $2 AND m2.user_id > $3 AND u2.application_digest \
     ORDER BY m2.user_id LIMIT $4) ORDER BY m.user_id, a.id";
pub const DIGEST_HOURS_DONE: &str =
    "SELECT hour FROM application_digest_hours WHERE hour >= $1 AND hour < $2";
pub const DIGEST_HOURS_ANY: &str =
    "SELECT COUNT(*) FROM (SELECT 1 FROM application_digest_hours LIMIT 1) h";
pub const DIGEST_HOUR_MARK: &str = "INSERT INTO application_digest_hours (hour, written_at) \
     VALUES ($1, $2) ON CONFLICT (hour) DO NOTHING";
pub const DIGEST_HOURS_DELETE: &str = "DELETE FROM application_digest_hours WHERE hour < $1";

/// Retention of event records (`events`): up to `$2` older than `$1` that no message may still
/// need: no processed record still in progress or pending (gone or finished), no message in
/// the outbox, no dead letter (a redrive sends the event again, docs/guarantee.md).
pub const EVENT_RECORDS_EXPIRED_DELETE: &str = "DELETE FROM events WHERE event_id IN \
     (SELECT e.event_id FROM events e WHERE e.created_at < $1 \
     AND NOT EXISTS (SELECT 1 FROM processed_events p WHERE p.event_id = e.event_id \
     AND p.status IN ('in_progress', 'pending')) \
     AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_id = e.event_id) \
     AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.event_id = e.event_id) \
     AND NOT EXISTS (SELECT 1 FROM sqs_dead_letters s WHERE s.event_id = e.event_id) \
     ORDER BY e.created_at LIMIT $2)";

// Dead letters

pub const DEAD_LETTER_COLUMNS: &str =
    "id, event_id, reason, attempts, body, first_failed_at, last_failed_at";
pub const DEAD_LETTERS: &str = concatcp!(
    "SELECT ",
    DEAD_LETTER_COLUMNS,
    " FROM dead_letters ORDER BY id"
);
/// One dead letter per event, decided by the unique index: a later copy of a dead-lettered
/// event adds none. Messages that are not readable events (`$6`) each keep their own.
pub const DEAD_LETTER_INSERT: &str = concatcp!(
    "INSERT INTO dead_letters (event_id, reason, attempts, body, first_failed_at, \
     last_failed_at, invalid) VALUES ($1, $2, $3, $4, COALESCE($5, ",
    NOW,
    "), ",
    NOW,
    ", $6) ON CONFLICT (event_id) WHERE NOT invalid DO NOTHING"
);
pub const DEAD_LETTER_COUNT: &str = "SELECT COUNT(*) FROM dead_letters";
/// Notes a redrive of event `$1`, whose dead letter had counted `$2` failed sends, at `$3` (ms
/// since the epoch; NULL: the database's clock): the trace an event's story keeps of it.
pub const REDRIVE_TRACE: &str = concatcp!(
    "INSERT INTO event_redrives (event_id, redrives, attempts_before, last_redriven_at) \
     VALUES ($1, 1, $2, COALESCE($3, ",
    NOW,
    ")) ON CONFLICT (event_id) DO UPDATE SET redrives = event_redrives.redrives + 1, \
     attempts_before = event_redrives.attempts_before + EXCLUDED.attempts_before, \
     last_redriven_at = EXCLUDED.last_redriven_at"
);
/// Up to `$2` redrive traces last written before `$1` of events with no processed-event record
/// left: a trace lasts as long as the record of the send it led to.
pub const REDRIVE_TRACES_EXPIRED_DELETE: &str = "DELETE FROM event_redrives WHERE event_id IN \
     (SELECT r.event_id FROM event_redrives r WHERE r.last_redriven_at < $1 AND NOT EXISTS \
     (SELECT 1 FROM processed_events p WHERE p.event_id = r.event_id) LIMIT $2)";
pub const DEAD_LETTER_DELETE: &str = "DELETE FROM dead_letters WHERE id = $1";
pub const DEAD_LETTERS_DELETE_ALL: &str = "DELETE FROM dead_letters";

// Idempotency keys

pub const IDEM_DELETE_EXPIRED: &str = concatcp!(
    "DELETE FROM idempotency_keys WHERE user_id = $1 AND method = $2 AND route = $3 \
     AND key = $4 AND created_at < ",
    NOW,
    " - $5"
);
pub const IDEM_INSERT: &str = concatcp!(
    "INSERT INTO idempotency_keys (user_id, method, route, key, request_hash, state, \
     lock_token, locked_until, created_at) VALUES ($1, $2, $3, $4, $5, 'in_flight', $7, ",
    NOW,
    " + $6, ",
    NOW,
    ") ON CONFLICT DO NOTHING RETURNING id"
);
pub const IDEM_READ_LOCKED: &str = concatcp!(
    "SELECT id, request_hash, state, locked_until, response_status, response_body, ",
    NOW,
    " FROM idempotency_keys WHERE user_id = $1 AND method = $2 AND route = $3 AND key = $4",
    FOR_UPDATE
);
pub const IDEM_TAKE_OVER: &str = concatcp!(
    "UPDATE idempotency_keys SET locked_until = ",
    NOW,
    " + $2, lock_token = $3 WHERE id = $1"
);
/// Stores the response, if this request (`$4`) still holds the key.
pub const IDEM_COMPLETE: &str = "UPDATE idempotency_keys SET state = 'done', \
     locked_until = NULL, response_status = $2, response_body = $3 \
     WHERE id = $1 AND state = 'in_flight' AND lock_token = $4";
pub const IDEM_RELEASE: &str =
    "DELETE FROM idempotency_keys WHERE id = $1 AND state = 'in_flight' AND lock_token = $2";
pub const IDEM_EXPIRED_DELETE: &str = "DELETE FROM idempotency_keys WHERE id IN \
     (SELECT id FROM idempotency_keys WHERE created_at < $1 LIMIT $2)";

pub const NOW_MS: &str = concatcp!("SELECT ", NOW);
pub const MIGRATIONS_APPLIED: &str =
    "SELECT version, description FROM _sqlx_migrations WHERE success ORDER BY version";
