//! `/api/unsubscribe/{token}`, the link of the digest emails' `List-Unsubscribe` header
//! (docs/api.md and docs/guarantee.md, RFC 8058). The signed token is the whole authority: no account, no
//! CSRF token. A GET shows a page naming what the link stops, with one button (or, when it is
//! stopped already, saying so), and changes nothing (mail scanners follow links); a POST, from that button or from a mail client's
//! one-click unsubscribe (`List-Unsubscribe=One-Click`), does it, and again is the same 200. A
//! token that does not verify, or names an account that no longer exists, is 404 to both; a
//! token of an alert that was deleted is 200 to both, saying there is nothing left to stop (the
//! person got what they asked for: no more of that alert's emails).

use super::error::Problem;
use super::error::{ApiError, ApiResult};
use super::extract::{Caller, MaybeUser};
use super::idempotency::Idempotent;
use super::pages::markup::html as escape;
use crate::domain::alert::{Frequency, describe};
use crate::http::AppState;
use crate::store::{AlertRow, Notifications, StoreError};
use crate::unsubscribe::Target;
use axum::extract::{FromRequestParts, RawPathParams, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header, request::Parts};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use std::borrow::Cow;
use utoipa::ToSchema;

const PREFIX: &str = "/api/unsubscribe/";

pub fn router() -> Router<AppState> {
    Router::new().route(
        "/api/unsubscribe/{token}",
        get(confirm_page).post(unsubscribe),
    )
}

/// The pages' policy: no script, no style, nothing loaded, the one form posting back here.
const PAGE_CSP: &str =
    "default-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// `path` as the request logs show it: an unsubscribe link's token is a credential, so it is
/// replaced by the route's placeholder.
pub(super) fn logged_path(path: &str) -> Cow<'_, str> {
    if path.starts_with(PREFIX) {
        Cow::Owned(format!("{PREFIX}{{token}}"))
    } else {
        Cow::Borrowed(path)
    }
}

/// What a link stops, once its token verified and what it names exists.
#[derive(Debug, Clone)]
enum Stops {
    /// The hourly digest of new applications of this user; `off` when it is off already.
    Digest { user_id: i64, off: bool },
    /// The digests of this alert of `owner`'s, named by its search in words; `paused` when it
    /// is paused already.
    Alert {
        alert_id: i64,
        owner: i64,
        frequency: Frequency,
        search: String,
        paused: bool,
    },
}

impl Stops {
    /// What the pages say the link stops (HTML-escaped where they write it).
    fn what(&self) -> String {
        match self {
            Stops::Digest { .. } => "the hourly digest of new applications".to_string(),
            Stops::Alert {
                frequency, search, ..
            } => format!("the {frequency} emails of your job alert for {search}"),
        }
    }

    /// The account the link acts for: it scopes an `Idempotency-Key`.
    fn owner(&self) -> i64 {
        match self {
            Stops::Digest { user_id, .. } => *user_id,
            Stops::Alert { owner, .. } => *owner,
        }
    }

    /// How the person undoes it, on the pages that say it is done.
    fn again(&self) -> &'static str {
        match self {
            Stops::Digest { .. } => "You can turn it on again in your account's email preferences.",
            Stops::Alert { .. } => {
                "The alert is paused, not deleted: you can resume it in your account's alerts."
            }
        }
    }
}

/// The search of `alert` in words, with the name of the company it narrows to if it still
/// exists.
async fn alert_search(st: &AppState, alert: &AlertRow) -> ApiResult<String> {
    let company = match alert.company_id {
        None => None,
        Some(id) => match st.store.company(id).await {
            Ok(c) => Some(c.name),
            Err(StoreError::NotFound) => None,
            Err(e) => return Err(e.into()),
        },
    };
    // A stored value this release does not know (an employment type, a workplace, a currency)
    // is left out of the words.
    let filters = alert
        .filters()
        .unwrap_or_else(|_| crate::domain::search::SearchFilters {
            q: alert.q.clone(),
            location: alert.location.clone(),
            remote: alert.remote,
            country: alert.country.clone(),
            company_id: alert.company_id,
            salary_min: alert.salary_min,
            ..Default::default()
        });
    Ok(describe(&filters, company.as_deref()))
}

/// The answer to any request on the link of an alert that was deleted: 200, nothing to stop.
fn alert_gone(parts: &Parts) -> Response {
    let page = parts.method == axum::http::Method::GET || accepts_html(&parts.headers);
    if page {
        return html(
            "<h1>Unsubscribe</h1>\n<p>This job alert no longer exists: there is nothing left \
             to stop, and it sends no more emails.</p>"
                .to_string(),
        );
    }
    json_no_store(UnsubscribedOut {
        unsubscribed: Unsubscribed::Alert,
    })
}

/// The link's token, verified against the unsubscribe keys (`AppState::unsubscribe`), and what
/// it stops; 404 for a token that does not verify or names what no longer exists.
struct Link(Stops);

impl FromRequestParts<AppState> for Link {
    /// A problem, or the 200 of an alert that was deleted (see [`alert_gone`]).
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, st: &AppState) -> Result<Self, Response> {
        let not_found = || ApiError::not_found().into_response();
        let params = RawPathParams::from_request_parts(parts, st)
            .await
            .map_err(|_| not_found())?;
        let token = params
            .iter()
            .find(|(name, _)| *name == "token")
            .map(|(_, value)| value)
            .ok_or_else(not_found)?;
        // The path was percent-decoded: `%41…` is the token `A…`, the same token.
        let target = st.unsubscribe.verify(token).ok_or_else(not_found)?;
        let stops = match target {
            Target::Digest { user_id } => match st.store.notifications(user_id).await {
                Ok(n) => Stops::Digest {
                    user_id,
                    off: !n.application_digest,
                },
                // The account was deleted: nothing left to stop.
                Err(StoreError::NotFound) => return Err(not_found()),
                Err(e) => return Err(ApiError::from(e).into_response()),
            },
            Target::Alert { alert_id } => match st.store.alert(alert_id).await {
                Ok(alert) => Stops::Alert {
                    alert_id,
                    owner: alert.user_id,
                    frequency: alert.frequency,
                    search: alert_search(st, &alert)
                        .await
                        .map_err(IntoResponse::into_response)?,
                    paused: alert.paused,
                },
                // Deleted, or gone with its user: it sends nothing any more.
                Err(StoreError::NotFound) => return Err(alert_gone(parts)),
                Err(e) => return Err(ApiError::from(e).into_response()),
            },
        };
        // For `Idempotent`, which scopes a key by its caller: here, the account the link is for.
        parts.extensions.insert(Caller(stops.owner()));
        Ok(Link(stops))
    }
}

/// What a POST answers a client that does not ask for HTML.
#[derive(Serialize, ToSchema)]
pub struct UnsubscribedOut {
    /// What was stopped: `application_digest` (the hourly digest of new applications, turned
    /// off) or `alert` (the job alert the link names, paused; or deleted already).
    pub unsubscribed: Unsubscribed,
}

/// What an unsubscribe link stops.
#[derive(Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unsubscribed {
    ApplicationDigest,
    Alert,
}

/// Show what the link stops, with the one button that does it; changes nothing. When it is
/// stopped already (the link was used, or the person did it otherwise), the page says so and
/// has no button.
#[utoipa::path(get, operation_id = "get_unsubscribe_page", path = "/api/unsubscribe/{token}", tag = "notifications",
    params(("token" = String, Path, description = "the token of an unsubscribe link, as an email carries it")),
    responses((status = 200, description = "HTML: what the link stops, and a button that POSTs here (or, stopped already, that it is done)", content_type = "text/html"),
              (status = 404, description = "the token is not one this service signed, or what it names no longer exists", body = Problem)))]
async fn confirm_page(_caller: MaybeUser, Link(stops): Link) -> Response {
    let what = escape(&stops.what());
    // Stopped already, by this link or otherwise: nothing to press.
    if let Stops::Digest { off: true, .. } | Stops::Alert { paused: true, .. } = stops {
        return html(format!(
            "<h1>Unsubscribed</h1>\n<p>Done already: you no longer receive {what}.</p>\n<p>{}</p>",
            stops.again()
        ));
    }
    html(format!(
        "<h1>Unsubscribe</h1>\n<p>This link stops {what}.</p>\n\
         <form method=\"post\">\n\
         <input type=\"hidden\" name=\"List-Unsubscribe\" value=\"One-Click\">\n\
         <button type=\"submit\">Unsubscribe</button>\n</form>\n\
         <p>Nothing changes until you press the button.</p>"
    ))
}

/// Stop what the link names (RFC 8058 one-click): the application digest is turned off, or the
/// alert paused (an alert deleted already: 200, nothing to stop). Again: the same 200. The body, if any, is not read: a mail client sends `List-Unsubscribe=One-Click`
/// as a form, the page's button the same.
#[utoipa::path(post, operation_id = "unsubscribe", path = "/api/unsubscribe/{token}", tag = "notifications",
    params(("token" = String, Path, description = "the token of an unsubscribe link, as an email carries it"),
           ("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters; scoped by the account the link is for")),
    responses((status = 200, description = "done: JSON, or an HTML page for a client that accepts text/html and sends no Idempotency-Key",
                 content((UnsubscribedOut = "application/json"), ("text/html"))),
              (status = 404, description = "the token is not one this service signed, or what it names no longer exists", body = Problem)))]
async fn unsubscribe(
    State(st): State<AppState>,
    _caller: MaybeUser,
    Link(stops): Link,
    headers: HeaderMap,
    idem: Idempotent,
) -> ApiResult<Response> {
    // A stored answer is replayed as JSON, so a request with a key gets JSON.
    let page = accepts_html(&headers) && !headers.contains_key("idempotency-key");
    let out = match stops {
        Stops::Digest { user_id, .. } => {
            let render = |_: &Notifications| {
                serde_json::to_string(&UnsubscribedOut {
                    unsubscribed: Unsubscribed::ApplicationDigest,
                })
                .unwrap_or_default()
            };
            let done = idem.completion(StatusCode::OK, &render)?;
            st.store
                .update_notifications(user_id, Some(false), done.as_ref())
                .await?;
            tracing::info!(
                user_id,
                "user {user_id} turned the application digest off by its unsubscribe link"
            );
            UnsubscribedOut {
                unsubscribed: Unsubscribed::ApplicationDigest,
            }
        }
        Stops::Alert {
            alert_id, owner, ..
        } => {
            let out = || UnsubscribedOut {
                unsubscribed: Unsubscribed::Alert,
            };
            let render = |_: &AlertRow| serde_json::to_string(&out()).unwrap_or_default();
            let done = idem.completion(StatusCode::OK, &render)?;
            match st.store.pause_alert(alert_id, done.as_ref()).await {
                Ok(_) => tracing::info!(
                    user_id = owner,
                    alert_id,
                    "user {owner} paused alert {alert_id} by its unsubscribe link"
                ),
                // Deleted since the link was read: nothing left to stop.
                Err(StoreError::NotFound) => {}
                Err(e) => return Err(e.into()),
            }
            out()
        }
    };
    if page {
        let what = escape(&stops.what());
        return Ok(html(format!(
            "<h1>Unsubscribed</h1>\n<p>You will no longer receive {what}.</p>\n<p>{}</p>",
            stops.again()
        )));
    }
    Ok(json_no_store(out))
}

/// `out` as JSON, never cached (the request's address holds a token).
fn json_no_store(out: UnsubscribedOut) -> Response {
    let mut res = Json(out).into_response();
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// A whole page around `main` (already escaped), under the pages' policy, never cached (its
/// address holds a token).
fn html(main: String) -> Response {
    let body = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"robots\" content=\"noindex\">\n<title>Unsubscribe</title>\n</head>\n\
         <body>\n<main>\n{main}\n</main>\n</body>\n</html>\n"
    );
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, PAGE_CSP),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

/// Whether the client asks for HTML: a browser submitting the page's form does; a mail client's
/// one-click POST and an API client do not. `text/html` listed with a weight above 0.
fn accepts_html(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("");
            let weight = parts
                .filter_map(|p| p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")))
                .find_map(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            media.eq_ignore_ascii_case("text/html") && weight > 0.0
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_leaves_no_markup() {
        assert_eq!(
            escape(r#"<script>alert("x") & 'y'</script>"#),
            "&lt;script&gt;alert(&quot;x&quot;) &amp; &#39;y&#39;&lt;/script&gt;"
        );
        assert_eq!(escape("Rust “jobs”"), "Rust “jobs”");
    }

    #[test]
    fn html_is_asked_for_by_browsers_only() {
        let accept = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
            accepts_html(&h)
        };
        assert!(accept(
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
        ));
        assert!(accept("Text/HTML"));
        assert!(!accept("*/*"));
        assert!(!accept("application/json"));
        assert!(!accept("text/html;q=0, application/json"));
        assert!(!accepts_html(&HeaderMap::new()));
    }

    #[test]
    fn the_token_never_reaches_the_logs() {
        assert_eq!(
            logged_path("/api/unsubscribe/AQXyz-secret_token"),
            "/api/unsubscribe/{token}"
        );
        assert_eq!(logged_path("/api/jobs/4"), "/api/jobs/4");
    }
}
