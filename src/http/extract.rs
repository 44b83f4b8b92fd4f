//! Request extractors that answer in problem+json, in the contract's check order: the caller
//! (401) first; role, visibility and the body are checked by the handler afterwards, so that a
//! stranger learns nothing from a malformed body.

use super::error::{ApiError, ApiResult, FieldErrors};
use crate::domain::Role;
use crate::http::AppState;
use crate::store::{Page, StoreError, UserRow};
use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header, request::Parts};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::de::DeserializeOwned;

/// The authenticated caller; 401 without a valid token.
pub struct AuthUser(pub UserRow);

/// The authenticated caller's id, left in the request by `AuthUser` (or `Claimant`, `Operator`)
/// for the extractors after it.
#[derive(Clone, Copy)]
pub struct Caller(pub i64);

/// The caller if a token was sent; 401 for a bad token even where none is needed.
pub struct MaybeUser(pub Option<UserRow>);

impl AuthUser {
    pub fn id(&self) -> i64 {
        self.0.id
    }

    pub fn role(&self) -> Role {
        self.0.role()
    }

    /// 403 unless the caller has `role`.
    pub fn require(&self, role: Role, action: &str) -> ApiResult<()> {
        if self.role() == role {
            Ok(())
        } else {
            Err(ApiError::forbidden(&format!("only {role}s can {action}")))
        }
    }
}

fn invalid_token() -> ApiError {
    ApiError::unauthorized("the access token is missing, invalid or expired")
}

/// The user id and token generation a bearer token's signature vouches for, without reading
/// the user: `None` without an `Authorization` header, 401 for a malformed or forged token.
fn bearer(parts: &Parts, state: &AppState) -> ApiResult<Option<(i64, i64)>> {
    let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value.to_str().map_err(|_| invalid_token())?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .ok_or_else(invalid_token)?
        .trim();
    state
        .tokens
        .verify(token)
        .map(Some)
        .ok_or_else(invalid_token)
}

/// The user a token names, if the token is still theirs; 401 otherwise.
async fn user_of(state: &AppState, user_id: i64, generation: i64) -> ApiResult<UserRow> {
    let user = match state.store.user_by_id(user_id).await {
        Ok(u) => u,
        Err(StoreError::NotFound) => return Err(invalid_token()),
        Err(e) => return Err(e.into()),
    };
    // A password change bumps the generation, revoking every token issued before it.
    if user.token_generation != generation {
        return Err(invalid_token());
    }
    Ok(user)
}

pub(super) async fn authenticate(parts: &Parts, state: &AppState) -> ApiResult<Option<UserRow>> {
    match bearer(parts, state)? {
        Some((user_id, generation)) => Ok(Some(user_of(state, user_id, generation).await?)),
        None => Ok(None),
    }
}

impl FromRequestParts<AppState> for AuthUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Self> {
        match authenticate(parts, state).await? {
            Some(u) => {
                parts.extensions.insert(Caller(u.id));
                Ok(AuthUser(u))
            }
            None => Err(ApiError::unauthorized(
                "this endpoint needs an access token",
            )),
        }
    }
}

/// A caller whose token's signature holds but whose account may not have been read yet: a
/// route whose store can check the account as it writes (an apply on PostgreSQL) saves the
/// read, and reads it ([`Claimant::user`]) when the store declines. A request with an
/// `Idempotency-Key` is authenticated at once, as with [`AuthUser`], since its key is recorded
/// under the caller before the handler runs. 401 without a token or with a bad one.
pub enum Claimant {
    Read(UserRow),
    Unread { user_id: i64, generation: i64 },
}

impl Claimant {
    /// The user id and token generation to check as the store writes; `None` once read.
    pub fn unread(&self) -> Option<(i64, i64)> {
        match self {
            Claimant::Read(_) => None,
            Claimant::Unread {
                user_id,
                generation,
            } => Some((*user_id, *generation)),
        }
    }

    /// The caller, read if it was not: 401 as [`AuthUser`]'s when the token is no longer theirs.
    pub async fn user(self, state: &AppState) -> ApiResult<AuthUser> {
        match self {
            Claimant::Read(user) => Ok(AuthUser(user)),
            Claimant::Unread {
                user_id,
                generation,
            } => Ok(AuthUser(user_of(state, user_id, generation).await?)),
        }
    }
}

impl FromRequestParts<AppState> for Claimant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Self> {
        let Some((user_id, generation)) = bearer(parts, state)? else {
            return Err(ApiError::unauthorized(
                "this endpoint needs an access token",
            ));
        };
        // For `Idempotent`, which scopes a key by its caller.
        parts.extensions.insert(Caller(user_id));
        if parts
            .headers
            .contains_key(super::idempotency::IDEMPOTENCY_KEY)
        {
            return Ok(Claimant::Read(user_of(state, user_id, generation).await?));
        }
        Ok(Claimant::Unread {
            user_id,
            generation,
        })
    }
}

impl FromRequestParts<AppState> for MaybeUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Self> {
        Ok(MaybeUser(authenticate(parts, state).await?))
    }
}

/// The integer ids in the path; anything that is not a positive integer is 404.
pub struct Ids(pub Vec<i64>);

impl Ids {
    pub fn one(&self) -> i64 {
        self.0[0]
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Ids {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> ApiResult<Self> {
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::not_found())?;
        let ids = params
            .iter()
            .map(|(_, v)| v.parse::<i64>().ok().filter(|n| *n > 0))
            .collect::<Option<Vec<i64>>>()
            .ok_or_else(ApiError::not_found)?;
        if ids.is_empty() {
            return Err(ApiError::not_found());
        }
        Ok(Ids(ids))
    }
}

/// The raw request body with its headers; parsed by the handler once it has checked the caller
/// and the resource (413 over 64 KiB happens here).
pub struct Body {
    pub headers: HeaderMap,
    pub bytes: Bytes,
}

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> ApiResult<Self> {
        let headers = req.headers().clone();
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|e| ApiError::from_status(e.status()))?;
        Ok(Body { headers, bytes })
    }
}

/// A JSON request body type: its fields, and those a client may not set.
pub trait JsonBody: DeserializeOwned {
    const FIELDS: &'static [&'static str];
    const READ_ONLY: &'static [&'static str] = &[];
}

impl Body {
    /// The body as any JSON value: 415 unless JSON, 400 if malformed.
    pub fn json_value(&self, empty_ok: bool) -> ApiResult<serde_json::Value> {
        if empty_ok && self.bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(serde_json::json!({}));
        }
        if !is_json(&self.headers) {
            return Err(ApiError::from_status(
                axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ));
        }
        serde_json::from_slice(&self.bytes).map_err(|e| {
            ApiError::bad_request("malformed-json", format!("the body is not valid JSON: {e}"))
        })
    }

    /// Parses the body as `T`: 415 unless JSON, 400 if malformed, 422 for unknown, read-only,
    /// missing or mistyped fields. An empty body is `{}` when `empty_ok`.
    pub fn json<T: JsonBody>(&self, empty_ok: bool) -> ApiResult<T> {
        let value = self.json_value(empty_ok)?;
        let Some(map) = value.as_object() else {
            return Err(ApiError::field("body", "must be a JSON object"));
        };
        let mut errors = FieldErrors::default();
        for key in map.keys() {
            if T::READ_ONLY.contains(&key.as_str()) {
                errors.add(key.clone(), "is read-only");
            } else if !T::FIELDS.contains(&key.as_str()) {
                errors.add(key.clone(), "is not a known field");
            }
        }
        errors.into_result()?;
        serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
            let message = e.inner().to_string();
            let path = e.path().to_string();
            // serde reports a missing field at its parent; name the field itself.
            let field = match message.strip_prefix("missing field `") {
                Some(rest) => rest.trim_end_matches('`').to_string(),
                None if path == "." => "body".to_string(),
                None => path,
            };
            let message = if message.starts_with("missing field") {
                "is required".to_string()
            } else {
                message
            };
            ApiError::field(&field, message)
        })
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    let Some(ct) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let mime = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
}

/// Query-string pairs, decoded.
pub struct QueryParams(pub Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for QueryParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> ApiResult<Self> {
        let q = parts.uri.query().unwrap_or("");
        Ok(QueryParams(
            url::form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .collect(),
        ))
    }
}

impl QueryParams {
    /// The last value of `name`, if present and not empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    /// Whether `name` is given with an empty value (`name=` or a bare `name`), which
    /// [`get`](Self::get) reads as absent.
    pub fn given_empty(&self, name: &str) -> bool {
        self.0.iter().any(|(k, v)| k == name && v.is_empty())
    }

    /// An error for each name given more than once: which of the values was meant is not ours
    /// to guess.
    pub fn refuse_repeated(&self, errors: &mut FieldErrors) {
        let mut seen = std::collections::BTreeSet::new();
        let mut repeated = std::collections::BTreeSet::new();
        for (k, _) in &self.0 {
            if !seen.insert(k.as_str()) {
                repeated.insert(k.as_str());
            }
        }
        for name in repeated {
            errors.add(name, "is given more than once; give it once");
        }
    }

    /// An integer in `min..=max`, or a field error.
    pub fn int(&self, name: &str, min: i64, max: i64, errors: &mut FieldErrors) -> Option<i64> {
        let raw = self.get(name)?;
        match raw.trim().parse::<i64>() {
            Ok(n) if (min..=max).contains(&n) => Some(n),
            _ => {
                errors.add(name, format!("must be an integer from {min} to {max}"));
                None
            }
        }
    }

    /// Exactly `true` or `false`.
    pub fn bool(&self, name: &str, errors: &mut FieldErrors) -> Option<bool> {
        match self.get(name)? {
            "true" => Some(true),
            "false" => Some(false),
            _ => {
                errors.add(name, "must be true or false");
                None
            }
        }
    }

    /// `page` (from 1) and `page_size` (1–100, default 20); out of range is an error, never
    /// clamped.
    pub fn page(&self, errors: &mut FieldErrors) -> Page {
        Page {
            page: self.int("page", 1, MAX_PAGE, errors).unwrap_or(1),
            size: self.int("page_size", 1, 100, errors).unwrap_or(20),
        }
    }
}

/// The largest id a client may send: 2^53 − 1, the last integer a JSON double holds exactly.
pub const ID_MAX: i64 = (1 << 53) - 1;

/// The highest page number accepted (keeps offsets far from overflow).
pub const MAX_PAGE: i64 = 1_000_000;

/// The client's address, for rate limiting.
pub fn client_addr(parts_ip: Option<std::net::SocketAddr>) -> String {
    // An IP address is plain ASCII; nothing here can come from the request body.
    parts_ip
        .map(|a| a.ip().to_string())
        .unwrap_or_else(|| "unknown".to_string())
}

/// Deserializes a field that may be absent (`None`), `null` (`Some(None)`) or a value, for JSON
/// Merge Patch.
pub fn double_option<'de, T, D>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    T: serde::Deserialize<'de>,
    D: serde::Deserializer<'de>,
{
    serde::Deserialize::deserialize(d).map(Some)
}

/// A method the route does not take (`allow` lists those it does): 405 to an operator, and to
/// anyone else the 404 of every admin route, which [`Operator`] answers before this runs.
pub(crate) fn wrong_method(
    allow: &'static str,
) -> impl Fn(Operator) -> std::future::Ready<Response> + Clone + Send + Sync + 'static {
    move |_op: Operator| {
        let mut res = ApiError::from_status(StatusCode::METHOD_NOT_ALLOWED).into_response();
        res.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(allow));
        std::future::ready(res)
    }
}

/// An operator (`/api/admin/*`): a valid token of an account with operator rights. Anything
/// else (no token, a bad one, an account without the rights) is 404, so the routes' existence
/// does not leak.
pub struct Operator {
    pub user_id: i64,
}

impl FromRequestParts<AppState> for Operator {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Self> {
        let user = match authenticate(parts, state).await {
            Ok(Some(user)) => user,
            Ok(None)
            | Err(ApiError {
                status: StatusCode::UNAUTHORIZED,
                ..
            }) => {
                return Err(ApiError::not_found());
            }
            Err(e) => return Err(e),
        };
        if !state.store.is_operator(user.id).await? {
            return Err(ApiError::not_found());
        }
        // For `Idempotent`, which scopes a key by its caller.
        parts.extensions.insert(Caller(user.id));
        Ok(Operator { user_id: user.id })
    }
}
