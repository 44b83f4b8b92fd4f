//! The OpenAPI 3.1 document, generated from the handlers' annotations.

use super::{accounts, applications, companies, jobs, ops, search};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

/// RFC 9457 problem details, the body of every error.
#[derive(serde::Serialize, ToSchema)]
pub struct Problem {
    /// A stable URI per kind of problem, e.g. `/problems/already-applied`.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// On 422: field name → messages.
    pub errors: Option<std::collections::BTreeMap<String, Vec<String>>>,
}

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
/// `application/problem+json` (as they are served), 401 wherever a token is required, and the
/// refusals of a request body (400 malformed, 413 too large, 415 not JSON).
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

impl Modify for CommonResponses {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        for item in doc.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for op in operations.into_iter().flatten() {
                for response in op.responses.responses.values_mut() {
                    let utoipa::openapi::RefOr::T(response) = response else {
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
                let mut add = |code: &str, description: &str| {
                    op.responses
                        .responses
                        .entry(code.to_string())
                        .or_insert_with(|| problem(description));
                };
                if op.security.as_ref().is_some_and(|s| !s.is_empty()) {
                    add("401", "the access token is missing, invalid or expired");
                }
                if op.request_body.is_some() {
                    add("400", "the body is not valid JSON");
                    add("413", "the body is over the size limit");
                    add(
                        "415",
                        "the body is not JSON (`application/json` or `application/*+json`)",
                    );
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
            problem details. Authenticate with `Authorization: Bearer <token>` from `POST /api/auth/token`."
    ),
    paths(
        accounts::register, accounts::token, accounts::me, accounts::change_password, accounts::delete_me,
        companies::create, companies::list, companies::show, companies::update, companies::remove,
        companies::members, companies::add_member, companies::remove_member,
        jobs::create, search::search_jobs, jobs::show, jobs::update, jobs::remove,
        applications::apply, applications::list, applications::show, applications::change_status,
        applications::withdraw, applications::remove, applications::history,
        ops::healthz, ops::readyz, ops::metrics, ops::openapi, ops::docs,
    ),
    components(schemas(Problem)),
    modifiers(&BearerAuth, &CommonResponses),
    tags(
        (name = "accounts", description = "Registration, tokens and the caller's account"),
        (name = "companies", description = "Companies and their members"),
        (name = "jobs", description = "Publishing and searching jobs"),
        (name = "applications", description = "Applications and their status workflow"),
        (name = "operations", description = "Health and readiness"),
    )
)]
pub struct ApiDoc;
