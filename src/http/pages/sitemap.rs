//! `GET /sitemap.xml`, `GET /sitemaps/jobs-{n}.xml` and `GET /robots.txt`: how crawlers find the
//! job pages. The sitemap is an index of files of at most [`PER_FILE`] open jobs each, by id,
//! each job's canonical page with its `updated_at` as `lastmod` (the sitemap protocol,
//! sitemaps.org).
//!
//! Both are made from a [`Plan`]: where each file starts, found in one walk of the index of open
//! jobs by id and kept in the search cache under the newest job change (a few bytes per file),
//! so a file is a range read of its own jobs, never a walk past the jobs before it. A file is
//! streamed to the client in chunks of [`CHUNK`] jobs as they are read, so what a request holds
//! is a chunk, whatever the size of the board; its `ETag` names the state of the jobs it was
//! planned at, so a crawler's conditional request is answered 304 without reading a job.

use super::listing::path_key;
use super::markup::{w3c, xml};
use super::{Rendered, base, cached, keep, respond, respond_with};
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult, Problem};
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use std::fmt::Write;

/// The most jobs in one file of the sitemap (the protocol's limit).
pub(super) const PER_FILE: i64 = 50_000;

const XML: &str = "application/xml; charset=utf-8";
const SITEMAP_NS: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";

/// Jobs read, rendered and sent at a time while a file is streamed.
const CHUNK: i64 = 2_000;

/// The sitemap at one state of the jobs: the id each file starts at, the first `expires_at`
/// among the open jobs (when the plan stops being right without a write), when it was made, and
/// the hash of all three with the state it was made at (what the files' `ETag`s are made of).
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    starts: Vec<i64>,
    first_expiry: Option<DateTime<Utc>>,
    made: DateTime<Utc>,
    tag: String,
}

impl Plan {
    /// As the cache keeps it (the body of a [`Rendered`]): the first expiry in µs since the
    /// epoch or `-`, then the starts, separated by spaces.
    fn encode(&self) -> String {
        let mut out = self
            .first_expiry
            .map_or("-".to_string(), |t| t.timestamp_micros().to_string());
        for id in &self.starts {
            let _ = write!(out, " {id}");
        }
        out
    }

    fn decode(seq: i64, page: &Rendered) -> Option<Plan> {
        let text = std::str::from_utf8(&page.body).ok()?;
        let mut parts = text.split(' ');
        let first_expiry = match parts.next()? {
            "-" => None,
            t => Some(DateTime::from_timestamp_micros(t.parse().ok()?)?),
        };
        let starts = parts
            .map(|p| p.parse().ok())
            .collect::<Option<Vec<i64>>>()?;
        Some(Plan {
            starts,
            first_expiry,
            made: page.last_modified,
            tag: format!("{seq} {}", page.etag),
        })
    }

    /// File `n` (from 1): the ids it lists are from the first and below the second.
    fn file(&self, n: i64) -> Option<(i64, i64)> {
        let i = usize::try_from(n.checked_sub(1)?).ok()?;
        let from = *self.starts.get(i)?;
        Some((from, self.starts.get(i + 1).copied().unwrap_or(i64::MAX)))
    }

    /// File `n`'s strong `ETag`: the same state of the jobs and the same plan make the same bytes.
    fn etag(&self, base: &str, n: i64) -> String {
        let hash = Sha256::digest(format!("{} {n} {base}", self.tag).as_bytes());
        format!("\"{}\"", hex::encode(&hash[..16]))
    }
}

/// The plan of the sitemap as the jobs are now: from the search cache under the newest job
/// change, or made (one walk of the index of open jobs by id, and one count) and kept there.
async fn plan(st: &AppState) -> ApiResult<Plan> {
    let seq = st.store.newest_job_change().await?;
    let key = format!("pages:sitemap:{seq}:plan");
    let (hit, version) = cached(st, &key).await;
    if let Some(plan) = hit.as_ref().and_then(|page| Plan::decode(seq, page)) {
        return Ok(plan);
    }
    let now = crate::timefmt::now();
    let open = st.store.open_jobs(now).await?;
    let starts = if open.count == 0 {
        Vec::new()
    } else {
        st.store.open_job_starts(now, PER_FILE).await?
    };
    let made = Plan {
        starts,
        first_expiry: open.first_expiry,
        made: now,
        tag: String::new(),
    };
    let page = Rendered::new(made.encode(), now, None);
    keep(st, version, &key, &page, open.first_expiry).await;
    Ok(Plan {
        tag: format!("{seq} {}", page.etag),
        ..made
    })
}

/// The sitemap index.
#[utoipa::path(get, operation_id = "get_sitemap_index", path = "/sitemap.xml", tag = "pages",
    responses(
        (status = 200, description = "a sitemap index (sitemaps.org): one `/sitemaps/jobs-{n}.xml` per 50 000 open jobs", content_type = "application/xml"),
        (status = 304, description = "not modified: `If-None-Match` names the current ETag")))]
pub(in crate::http) async fn sitemap_index(
    State(st): State<AppState>,
    request: HeaderMap,
) -> ApiResult<Response> {
    let plan = plan(&st).await?;
    let base = base(&st);
    let mut body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"{SITEMAP_NS}\">\n"
    );
    for n in 1..=plan.starts.len() {
        let _ = writeln!(
            body,
            "<sitemap><loc>{}</loc></sitemap>",
            xml(&format!("{base}/sitemaps/jobs-{n}.xml"))
        );
    }
    body.push_str("</sitemapindex>\n");
    Ok(respond(
        &request,
        &Rendered::new(body, plan.made, None),
        XML,
    ))
}

/// A file of the sitemap.
#[utoipa::path(get, operation_id = "get_sitemap_file", path = "/sitemaps/{file}", tag = "pages",
    params(("file" = String, Path, description = "`jobs-{n}.xml`, n from 1 to the number of files the index lists")),
    responses(
        (status = 200, description = "a sitemap (sitemaps.org) of up to 50 000 open jobs' pages, by id, each with its `lastmod`", content_type = "application/xml"),
        (status = 304, description = "not modified: `If-None-Match` names the current ETag"),
        (status = 404, body = Problem, description = "no such file: a number past the last file the index lists, or another name")))]
pub(in crate::http) async fn sitemap_file(
    State(st): State<AppState>,
    Path(file): Path<String>,
    request: HeaderMap,
) -> ApiResult<Response> {
    let Some(n) = file_number(&file) else {
        return Err(ApiError::not_found());
    };
    let plan = plan(&st).await?;
    let Some((from, before)) = plan.file(n) else {
        return Err(ApiError::not_found());
    };
    let etag = plan.etag(base(&st), n);
    Ok(respond_with(&request, &etag, plan.made, XML, || {
        Body::from_stream(stream_file(st.clone(), from, before))
    }))
}

/// Where a file's stream is.
enum Streaming {
    Head,
    From(i64),
    Tail,
    Done,
}

/// A file's text, chunk after chunk: the open jobs with ids from `from` and below `before`,
/// read [`CHUNK`] at a time. A read that fails ends the answer short (the client sees the body
/// cut off, never a sitemap that looks whole) with an ERROR log.
fn stream_file(
    st: AppState,
    from: i64,
    before: i64,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    let now = crate::timefmt::now();
    futures::stream::unfold(Streaming::Head, move |at| {
        let st = st.clone();
        async move {
            match at {
                Streaming::Head => Some((
                    Ok(Bytes::from(format!(
                        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"{SITEMAP_NS}\">\n"
                    ))),
                    Streaming::From(from),
                )),
                Streaming::From(id) => match st.store.open_jobs_in(now, id, before, CHUNK).await {
                    Ok(jobs) => {
                        let base = base(&st);
                        let next = match jobs.last() {
                            Some(last) if jobs.len() as i64 == CHUNK => {
                                Streaming::From(last.id.saturating_add(1))
                            }
                            _ => Streaming::Tail,
                        };
                        let mut text = String::with_capacity(jobs.len() * (base.len() + 100));
                        for job in &jobs {
                            let _ = writeln!(
                                text,
                                "<url><loc>{}</loc><lastmod>{}</lastmod></url>",
                                xml(&format!("{base}/jobs/{}", path_key(job.id, &job.title))),
                                w3c(job.updated_at)
                            );
                        }
                        Some((Ok(Bytes::from(text)), next))
                    }
                    Err(e) => {
                        tracing::error!(error = %e, from = id, "a sitemap file could not be read; its answer ends short");
                        Some((Err(std::io::Error::other(e.to_string())), Streaming::Done))
                    }
                },
                Streaming::Tail => Some((Ok(Bytes::from_static(b"</urlset>\n")), Streaming::Done)),
                Streaming::Done => None,
            }
        }
    })
}

/// What crawlers may read, and where the sitemap is.
#[utoipa::path(get, operation_id = "get_robots_txt", path = "/robots.txt", tag = "pages",
    responses((status = 200, description = "the job pages, the sitemap and the feeds may be crawled, the API and the console not; names the sitemap", content_type = "text/plain")))]
pub(in crate::http) async fn robots_txt(State(st): State<AppState>) -> Response {
    let body = format!(
        "User-agent: *\nDisallow: /api/\nDisallow: /console\nDisallow: /unsubscribe\n\
         Allow: /\n\nSitemap: {}/sitemap.xml\n",
        base(&st)
    );
    (
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        body,
    )
        .into_response()
}

/// `jobs-{n}.xml` → n (from 1, no zero in front).
fn file_number(file: &str) -> Option<i64> {
    let digits = file.strip_prefix("jobs-")?.strip_suffix(".xml")?;
    if digits.is_empty() || digits.len() > 9 || digits.starts_with('0') {
        return None;
    }
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(starts: Vec<i64>, first_expiry: Option<DateTime<Utc>>) -> (Plan, Rendered) {
        let made = DateTime::from_timestamp(1_796_810_400, 0).unwrap();
        let plan = Plan {
            starts,
            first_expiry,
            made,
            tag: String::new(),
        };
        let page = Rendered::new(plan.encode(), made, None);
        (plan, page)
    }

    #[test]
    fn a_plan_reads_back_as_it_was_kept() {
        let expiry = DateTime::from_timestamp_micros(1_796_810_400_123_456);
        for (starts, first_expiry) in [
            (vec![], None),
            (vec![7], expiry),
            (vec![3, 50_010, 120_777], None),
        ] {
            let (made, page) = plan(starts, first_expiry);
            let read = Plan::decode(42, &page).expect("a plan");
            assert_eq!(read.starts, made.starts);
            assert_eq!(read.first_expiry, made.first_expiry);
            assert_eq!(read.made, made.made);
            assert_eq!(read.tag, format!("42 {}", page.etag));
        }
        let broken = Rendered::new("- 1 x".into(), Utc::now(), None);
        assert_eq!(Plan::decode(1, &broken), None);
    }

    #[test]
    fn a_file_is_the_range_between_two_starts() {
        let (mut p, _) = plan(vec![3, 50_010, 120_777], None);
        assert_eq!(p.file(1), Some((3, 50_010)));
        assert_eq!(p.file(2), Some((50_010, 120_777)));
        assert_eq!(p.file(3), Some((120_777, i64::MAX)));
        assert_eq!(p.file(4), None);
        assert_eq!(p.file(0), None);
        // Another state of the jobs, or another file, or another board: another ETag.
        p.tag = "1 \"a\"".into();
        let first = p.etag("https://a.example", 1);
        assert_ne!(first, p.etag("https://a.example", 2));
        assert_ne!(first, p.etag("https://b.example", 1));
        p.tag = "2 \"a\"".into();
        assert_ne!(first, p.etag("https://a.example", 1));
    }

    #[test]
    fn a_file_is_named_by_its_number() {
        assert_eq!(file_number("jobs-1.xml"), Some(1));
        assert_eq!(file_number("jobs-20.xml"), Some(20));
        for bad in [
            "jobs-0.xml",
            "jobs-01.xml",
            "jobs-.xml",
            "jobs-1.xml.gz",
            "jobs-x.xml",
            "jobs-+1.xml",
            "jobs-1234567890.xml",
            "companies-1.xml",
        ] {
            assert_eq!(file_number(bad), None, "{bad}");
        }
    }
}
