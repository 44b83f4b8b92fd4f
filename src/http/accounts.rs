//! Accounts: register, log in (token), the caller's own account.

use super::error::{ApiError, ApiResult, FieldErrors};
use super::extract::{AuthUser, Body, JsonBody, MaybeUser, client_addr};
use super::idempotency::Idempotent;
use crate::auth;
use crate::domain::values::{Email, NewPassword};
use crate::domain::{Role, validate};
use crate::http::AppState;
use crate::store::{AUTH_FAILURE_WINDOW_MS, AuthCounters, AuthKeys, NewUser, StoreError, UserRow};
use axum::extract::{ConnectInfo, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use utoipa::ToSchema;

/// Failed attempts allowed per email and per client address in the window.
const FAILURES_PER_EMAIL: i64 = 10;
const FAILURES_PER_ADDR: i64 = 50;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/auth/register", post(register))
        .route("/api/auth/token", post(token))
        .route("/api/me", get(me).delete(delete_me))
        .route("/api/me/password", post(change_password))
}

/// A user as the API shows it.
#[derive(Serialize, ToSchema)]
pub struct UserOut {
    pub id: i64,
    pub email: String,
    pub name: String,
    pub role: Role,
    #[serde(with = "crate::timefmt")]
    pub created_at: DateTime<Utc>,
}

impl From<UserRow> for UserOut {
    fn from(u: UserRow) -> Self {
        UserOut {
            id: u.id,
            role: u.role(),
            email: u.email,
            name: u.name,
            created_at: u.created_at,
        }
    }
}

#[derive(Deserialize, ToSchema)]
pub struct RegisterIn {
    pub email: String,
    pub password: String,
    pub name: String,
    #[schema(value_type = Role)]
    pub role: String,
}

impl JsonBody for RegisterIn {
    const FIELDS: &'static [&'static str] = &["email", "password", "name", "role"];
}

#[derive(Deserialize, ToSchema)]
pub struct TokenIn {
    pub email: String,
    pub password: String,
}

impl JsonBody for TokenIn {
    const FIELDS: &'static [&'static str] = &["email", "password"];
}

#[derive(Serialize, ToSchema)]
pub struct TokenOut {
    pub access_token: String,
    /// Always `Bearer`.
    pub token_type: &'static str,
    /// Seconds until the token expires.
    pub expires_in: u64,
}

#[derive(Deserialize, ToSchema)]
pub struct PasswordIn {
    pub current_password: String,
    pub new_password: String,
}

impl JsonBody for PasswordIn {
    const FIELDS: &'static [&'static str] = &["current_password", "new_password"];
}

/// Counter keys longer than this (no real email address is) are stored as their SHA-256.
const MAX_KEY_LEN: usize = 300;

/// The failure counters a request is charged to: per email and per client address.
struct Limits {
    email_key: String,
    addr_key: String,
}

impl Limits {
    fn new(scope: &str, email: &str, addr: Option<SocketAddr>) -> Limits {
        Limits {
            email_key: bounded(format!("{scope}:{}", validate::email_key(email))),
            addr_key: bounded(format!("{scope}:{}", client_addr(addr))),
        }
    }

    /// The counters of `user_id`'s own account (for actions taken with a token).
    fn for_user(scope: &str, user_id: i64, addr: Option<SocketAddr>) -> Limits {
        Limits {
            email_key: format!("{scope}:user:{user_id}"),
            addr_key: bounded(format!("{scope}:{}", client_addr(addr))),
        }
    }

    fn keys(&self) -> AuthKeys<'_> {
        AuthKeys {
            email: &self.email_key,
            addr: &self.addr_key,
        }
    }

    /// 429 with `Retry-After` while either counter is full; reads only, so a refused client
    /// writes nothing.
    async fn check(&self, st: &AppState) -> ApiResult<()> {
        let counters = st
            .store
            .auth_failures(self.keys(), AUTH_FAILURE_WINDOW_MS)
            .await?;
        refuse_over(&counters, 0)
    }

    /// Counts an attempt as a failure before its password is hashed or checked, so that
    /// parallel attempts cannot all pass the limit (each sees its own count); a full counter
    /// refuses at once, writing nothing. An attempt that turns out right calls `forgive`.
    async fn attempt(&self, st: &AppState) -> ApiResult<()> {
        self.check(st).await?;
        let counted = st
            .store
            .count_auth_failure(self.keys(), AUTH_FAILURE_WINDOW_MS)
            .await?;
        refuse_over(&counted, 1)
    }

    /// The attempt was right: the email's (or account's) counter is cleared and the address's
    /// gives back this attempt's failure.
    async fn forgive(&self, st: &AppState) -> ApiResult<()> {
        Ok(st.store.forgive_auth_failure(self.keys()).await?)
    }
}

/// 429 when a counter holds more than its limit plus `own` (this request's attempt, when it is
/// among the counted failures already).
fn refuse_over(counters: &AuthCounters, own: i64) -> ApiResult<()> {
    for (count, max) in [
        (counters.email, FAILURES_PER_EMAIL),
        (counters.addr, FAILURES_PER_ADDR),
    ] {
        if count.failures >= max + own {
            let wait = count.remaining_ms.max(0) / 1000 + 1;
            return Err(ApiError::too_many_requests(wait as u64));
        }
    }
    Ok(())
}

/// `key`, or its SHA-256 when it is longer than any real one: what a client sends cannot make
/// a stored key large.
fn bounded(key: String) -> String {
    if key.len() <= MAX_KEY_LEN {
        return key;
    }
    use sha2::Digest;
    let digest = sha2::Sha256::digest(key.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Runs password hashing on the blocking pool, at most two per core at once: each Argon2 call
/// takes about 19 MiB, and a burst of logins must queue rather than exhaust memory.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> ApiResult<T> {
    static HASHING: std::sync::OnceLock<std::sync::Arc<tokio::sync::Semaphore>> =
        std::sync::OnceLock::new();
    let permits = HASHING.get_or_init(|| {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        std::sync::Arc::new(tokio::sync::Semaphore::new(cores * 2))
    });
    let permit = permits
        .clone()
        .acquire_owned()
        .await
        .map_err(|e| ApiError::internal(anyhow::anyhow!("hashing limiter closed: {e}")))?;
    // The permit goes with the hash, not with the request: a request cancelled by its client
    // (a dropped connection) leaves its hash running on the blocking pool, still counted.
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let _running = Running::start();
        f()
    })
    .await
    .map_err(|e| ApiError::internal(anyhow::anyhow!("blocking task failed: {e}")))
}

/// Counts a password hash in `password_hashes_running` while it runs (on the blocking pool).
struct Running;

impl Running {
    fn start() -> Running {
        metrics::gauge!(crate::telemetry::PASSWORD_HASHES_RUNNING).increment(1.0);
        Running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        metrics::gauge!(crate::telemetry::PASSWORD_HASHES_RUNNING).decrement(1.0);
    }
}

/// Register a candidate or employer account.
#[utoipa::path(post, operation_id = "register", path = "/api/auth/register", tag = "accounts", request_body = RegisterIn,
    responses((status = 201, body = UserOut), (status = 409, description = "email already registered", body = super::error::Problem),
              (status = 422, body = super::error::Problem), (status = 429, body = super::error::Problem)))]
async fn register(
    State(st): State<AppState>,
    // A bad token is 401 here too (docs/api.md): the caller is checked first, then unused.
    _caller: MaybeUser,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    body: Body,
) -> ApiResult<(StatusCode, Json<UserOut>)> {
    let input: RegisterIn = body.json(false)?;
    let mut errors = FieldErrors::default();
    let email = errors.check("email", Email::parse(&input.email));
    let name = errors.check("name", validate::user_name(&input.name));
    let password = errors.check("password", NewPassword::parse(&input.password));
    let role = errors.check(
        "role",
        Role::parse(&input.role).ok_or_else(|| "must be candidate or employer".to_string()),
    );
    let (Some(email), Some(name), Some(password), Some(role)) = (email, name, password, role)
    else {
        return Err(ApiError::validation(errors));
    };
    errors.into_result()?;
    let limits = Limits::new("register", email.as_str(), Some(addr));
    // Counted before the hash like a login, as the taken email it may turn out to be.
    limits.attempt(&st).await?;
    let password_hash = blocking(move || auth::hash_password(password.as_str())).await??;
    let user = NewUser {
        email,
        name,
        role,
        password_hash,
    };
    match st.store.create_user(user).await {
        Ok(u) => {
            limits.forgive(&st).await?;
            tracing::info!(user_id = u.id, role = %u.role(), "registered user {}", u.id);
            Ok((StatusCode::CREATED, Json(u.into())))
        }
        Err(e) => Err(e.into()),
    }
}

/// Exchange email and password for an access token.
#[utoipa::path(post, operation_id = "create_token", path = "/api/auth/token", tag = "accounts", request_body = TokenIn,
    responses((status = 200, body = TokenOut), (status = 401, body = super::error::Problem), (status = 422, description = "email or password missing", body = super::error::Problem),
              (status = 429, description = "too many failures; see Retry-After", body = super::error::Problem)))]
async fn token(
    State(st): State<AppState>,
    // A bad token is 401 here too (docs/api.md): the caller is checked first, then unused.
    _caller: MaybeUser,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    body: Body,
) -> ApiResult<Json<TokenOut>> {
    let input: TokenIn = body.json(false)?;
    let limits = Limits::new("login", &input.email, Some(addr));
    limits.attempt(&st).await?;
    let user = match st
        .store
        .user_by_email_key(&validate::email_key(&input.email))
        .await
    {
        Ok(u) => Some(u),
        Err(StoreError::NotFound) => None,
        Err(e) => return Err(e.into()),
    };
    // Unknown emails are checked against a dummy hash so that both cases take the same time.
    let hash = user
        .as_ref()
        .map(|u| u.password_hash.clone())
        .unwrap_or_else(|| st.dummy_hash.to_string());
    let password = input.password;
    let ok = blocking(move || auth::verify_password(&password, &hash)).await?;
    match user {
        Some(u) if ok => {
            limits.forgive(&st).await?;
            let access_token = st.tokens.issue(u.id, u.token_generation)?;
            Ok(Json(TokenOut {
                access_token,
                token_type: "Bearer",
                expires_in: st.tokens.ttl_secs,
            }))
        }
        _ => Err(ApiError::unauthorized("invalid email or password")),
    }
}

/// The caller's account.
#[utoipa::path(get, operation_id = "get_me", path = "/api/me", tag = "accounts", security(("bearer" = [])),
    responses((status = 200, body = UserOut), (status = 401, body = super::error::Problem)))]
async fn me(user: AuthUser) -> Json<UserOut> {
    Json(user.0.into())
}

/// Change the caller's password; every earlier token stops working.
#[utoipa::path(post, operation_id = "change_password", path = "/api/me/password", params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters")), tag = "accounts", security(("bearer" = [])), request_body = PasswordIn,
    responses((status = 204), (status = 401, body = super::error::Problem), (status = 422, body = super::error::Problem),
              (status = 429, description = "too many wrong current passwords; see Retry-After", body = super::error::Problem)))]
async fn change_password(
    State(st): State<AppState>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    user: AuthUser,
    idem: Idempotent<Body>,
) -> ApiResult<StatusCode> {
    let input: PasswordIn = idem.body.json(false)?;
    let mut errors = FieldErrors::default();
    let new = errors.check("new_password", NewPassword::parse(&input.new_password));
    // Guesses of the current password with a stolen token are throttled like logins.
    let limits = Limits::for_user("password", user.id(), Some(addr));
    limits.attempt(&st).await?;
    let current = input.current_password;
    let hash = user.0.password_hash.clone();
    if blocking(move || auth::verify_password(&current, &hash)).await? {
        limits.forgive(&st).await?;
    } else {
        errors.add("current_password", "is incorrect");
    }
    errors.into_result()?;
    // Checked just above: a new password that failed its rules is a 422 already.
    let new = new.ok_or_else(|| ApiError::field("new_password", "is not valid"))?;
    let new_hash = blocking(move || auth::hash_password(new.as_str())).await??;
    let done = idem.no_content()?;
    st.store
        .change_password(user.id(), &new_hash, done.as_ref())
        .await?;
    tracing::info!(
        user_id = user.id(),
        "user {} changed their password",
        user.id()
    );
    Ok(StatusCode::NO_CONTENT)
}

/// Delete the caller's account with their applications.
#[utoipa::path(delete, operation_id = "delete_me", path = "/api/me", params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters")), tag = "accounts", security(("bearer" = [])),
    responses((status = 204), (status = 401, body = super::error::Problem)))]
async fn delete_me(
    State(st): State<AppState>,
    user: AuthUser,
    idem: Idempotent,
) -> ApiResult<StatusCode> {
    // The account's idempotency records go with it, this request's included.
    idem.check()?;
    let files = st.store.delete_user(user.id()).await?;
    super::resumes::forget_files(&st, files).await;
    tracing::info!(
        user_id = user.id(),
        "user {} deleted their account",
        user.id()
    );
    Ok(StatusCode::NO_CONTENT)
}
