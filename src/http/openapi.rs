//! The OpenAPI 3.1 document, generated from the handlers' annotations.

use super::error::Problem;
use super::{
    accounts, admin, admin_jobs, alerts, applications, companies, console, export, jobs,
    notifications, ops, pages, resumes, search, unsubscribe, webhooks,
};
use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
    }
}

/// What every operation of a kind may answer, documented once: problem bodies as
/// `application/problem+json` (as they are served); `security: []` on public operations; 401
/// wherever a token is read (every `/api` operation but the document); the refusals of a
/// request body (400 malformed, 413 too large, 415 not JSON); on retry-safe writes the refusals
/// of an `Idempotency-Key` (400 malformed, 409 in flight, 422 reused with another body) and the
/// `Idempotent-Replayed` header of a replay; and `Retry-After` on every 429.
struct CommonResponses;

const PROBLEM_JSON: &str = "application/problem+json";

fn problem(description: &str) -> utoipa::openapi::RefOr<utoipa::openapi::Response> {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    ResponseBuilder::new()
        .description(description)
        .content(
            PROBLEM_JSON,
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("Problem")))
                .build(),
        )
        .build()
        .into()
}

fn is_problem(content: &utoipa::openapi::Content) -> bool {
    matches!(&content.schema, Some(utoipa::openapi::RefOr::Ref(r))
        if r.ref_location == "#/components/schemas/Problem")
}

/// The `Idempotency-Key` header parameter every retry-safe write documents.
const IDEMPOTENCY_KEY: &str = "Idempotency-Key";

fn string_header(description: &str, values: &[&str]) -> utoipa::openapi::header::Header {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    let mut schema = ObjectBuilder::new().schema_type(Type::String);
    if !values.is_empty() {
        schema = schema.enum_values(Some(values.iter().copied()));
    }
    utoipa::openapi::header::HeaderBuilder::new()
        .schema(schema)
        .description(Some(description))
        .build()
}

fn retry_after() -> utoipa::openapi::header::Header {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    utoipa::openapi::header::HeaderBuilder::new()
        .schema(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(1)),
        )
        .description(Some("seconds until a new attempt may succeed"))
        .build()
}

impl Modify for CommonResponses {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::RefOr;
        for (path, item) in doc.paths.paths.iter_mut() {
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for op in operations.into_iter().flatten() {
                for response in op.responses.responses.values_mut() {
                    let RefOr::T(response) = response else {
                        continue;
                    };
                    if let Some(json) = response.content.get("application/json")
                        && is_problem(json)
                    {
                        let json = json.clone();
                        response.content.shift_remove("application/json");
                        response.content.insert(PROBLEM_JSON.to_string(), json);
                    }
                }
                // An operation without `security` is public: `[]`, so that no client (and no
                // linter) reads it as inheriting a document-wide requirement.
                let security = op.security.get_or_insert_with(Vec::new);
                let takes_token = !security.is_empty();
                let idempotent = op.parameters.iter().flatten().any(|p| {
                    p.name == IDEMPOTENCY_KEY
                        && p.parameter_in == utoipa::openapi::path::ParameterIn::Header
                });
                let has_body = op.request_body.is_some();
                let mut add =
                    |code: &str, description: &str| match op.responses.responses.get_mut(code) {
                        Some(RefOr::T(response)) => {
                            if !response.description.contains(description) {
                                response.description =
                                    format!("{}; or {description}", response.description);
                            }
                        }
                        Some(RefOr::Ref(_)) => {}
                        None => {
                            op.responses
                                .responses
                                .insert(code.to_string(), problem(description));
                        }
                    };
                // docs/api.md: 401 for a missing, expired or invalid token, also on public
                // endpoints when a bad one is sent (the document itself reads no token).
                // The operators' routes answer 404, never 401, to anyone but an operator.
                let operators = path.starts_with("/api/admin/");
                if !operators
                    && (takes_token || (path.starts_with("/api/") && path != "/api/openapi.json"))
                {
                    add("401", "the access token is missing, invalid or expired");
                }
                if has_body {
                    add("400", "the body is not valid JSON");
                    add("413", "the body is over the size limit");
                    add(
                        "415",
                        "the body is not JSON (`application/json` or `application/*+json`)",
                    );
                }
                if idempotent {
                    add(
                        "400",
                        "the Idempotency-Key is not 1-255 visible ASCII characters",
                    );
                    add(
                        "409",
                        "idempotency-in-flight: a request with this Idempotency-Key is still running",
                    );
                    if has_body {
                        add(
                            "422",
                            "idempotency-key-reused: this Idempotency-Key came with another body",
                        );
                    }
                }
                for (code, response) in op.responses.responses.iter_mut() {
                    let RefOr::T(response) = response else {
                        continue;
                    };
                    if code == "429" {
                        response
                            .headers
                            .entry("Retry-After".to_string())
                            .or_insert_with(retry_after);
                    }
                    // A stored answer (2xx and 4xx, but 401, 413 and 429) is replayed.
                    let stored = (code.starts_with('2') || code.starts_with('4'))
                        && !["401", "413", "429"].contains(&code.as_str());
                    if idempotent && stored {
                        response.headers.insert(
                            "Idempotent-Replayed".to_string(),
                            string_header(
                                "`true` when this is the stored answer to an earlier request \
                                 with the same Idempotency-Key",
                                &["true"],
                            ),
                        );
                    }
                }
            }
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "jobboard",
        description = "A job board: employers publish jobs, candidates search and apply, and every \
            application status change reaches the candidate as one email. Errors are RFC 9457 \
            problem details. Authenticate with `Authorization: Bearer <token>` from `POST /api/auth/token`.",
        license(name = "Proprietary", identifier = "LicenseRef-Proprietary"),
    ),
    servers((url = "/", description = "the server that serves this document")),
    paths(
        accounts::register, accounts::token, accounts::me, accounts::change_password, accounts::delete_me,
        notifications::show, notifications::update, unsubscribe::confirm_page, unsubscribe::unsubscribe,
        companies::create, companies::list, companies::show, companies::update, companies::remove,
        companies::members, companies::add_member, companies::remove_member,
        jobs::create, search::search_jobs, jobs::show, jobs::update, jobs::remove, jobs::renew,
        applications::apply, applications::list, applications::show, applications::change_status,
        applications::withdraw, applications::remove, applications::history,
        resumes::upload, resumes::list, resumes::remove, resumes::download_own,
        resumes::download_attached,
        alerts::create, alerts::list, alerts::update, alerts::remove,
        webhooks::create, webhooks::list, webhooks::show, webhooks::update, webhooks::remove,
        webhooks::rotate_secret, webhooks::test, webhooks::attempts, webhooks::redeliver,
        ops::healthz, ops::readyz, ops::metrics, document, ops::docs, ops::docs_css, ops::docs_js,
        console::console, console::console_css, console::console_js, console::favicon,
        admin::queue, admin::dead_letters, admin::redrive, admin::purge, admin::event,
        admin::failing_webhooks, export::export,
        admin_jobs::list, admin_jobs::approve, admin_jobs::reject,
        pages::job::job_page, pages::job::pages_css, pages::feed::jobs_feed,
        pages::sitemap::sitemap_index, pages::sitemap::sitemap_file, pages::sitemap::robots_txt,
    ),
    components(schemas(Problem, search::CacheResult, search::SearchOrder)),
    modifiers(&BearerAuth, &CommonResponses),
    tags(
        (name = "accounts", description = "Registration, tokens and the caller's account"),
        (name = "companies", description = "Companies and their members"),
        (name = "jobs", description = "Publishing and searching jobs"),
        (name = "applications", description = "Applications and their status workflow"),
        (name = "resumes", description = "A candidate's résumés: files uploaded as multipart/form-data, recognised by their content, attached to applications"),
        (name = "notifications", description = "The unsubscribe links of the digest emails (RFC 8058 one-click): public, the signed token in the link is the authority"),
        (name = "alerts", description = "Job alerts: a candidate's saved searches, each emailed as a daily or weekly digest of the new jobs that match it"),
        (name = "webhooks", description = "Webhook endpoints: a company's own systems receive its events as signed HTTP requests (Standard Webhooks)"),
        (name = "operations", description = "Health, readiness, metrics, and the pages the binary serves: the API reference and the operator console"),
        (name = "pages", description = "The board on the open web: a page per job with its JobPosting data, the sitemap, robots.txt and Atom feeds of searches; HTML and XML for people, crawlers and feed readers, outside /api"),
        (name = "operators", description = "The queue, dead letters and events, and the review of jobs under moderation, for accounts with operator rights (`jobboard admin grant`); 404 to anyone else"),
    )
)]
pub struct ApiDoc;

/// This OpenAPI 3.1 document.
#[utoipa::path(get, operation_id = "get_openapi_document", path = "/api/openapi.json", tag = "operations", responses((status = 200, description = "the OpenAPI document", body = Object)))]
pub(super) async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
