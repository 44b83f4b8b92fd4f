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
    modifiers(&BearerAuth),
    tags(
        (name = "accounts", description = "Registration, tokens and the caller's account"),
        (name = "companies", description = "Companies and their members"),
        (name = "jobs", description = "Publishing and searching jobs"),
        (name = "applications", description = "Applications and their status workflow"),
        (name = "operations", description = "Health and readiness"),
    )
)]
pub struct ApiDoc;
