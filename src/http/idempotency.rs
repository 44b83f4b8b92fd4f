//! Retry-safe writes: the `Idempotency-Key` header (docs/api.md). A handler opts in by taking
//! an [`Idempotent`] argument (last, in place of its body). The key is scoped by (user, method,
//! route template) and lives 24 h. The first response is stored in the same transaction as the
//! write it describes (the handler passes [`Idempotent::completion`] to its store call); a
//! response with no write (a 4xx) is stored on its own by [`settle`]; a 5xx frees the key.

use super::error::{ApiError, ApiResult, PROBLEM_JSON};
use super::extract::{Body, Caller};
use crate::http::AppState;
use crate::store::{Completion, IdemBegin, KEY_TTL_MS, Store};
use crate::telemetry::IDEMPOTENCY_FAILURES_TOTAL;
use axum::extract::{FromRequest, FromRequestParts, MatchedPath, Request};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// How long a request may hold its key before a retry may take it over (a request that died
/// before its write committed wrote nothing).
const LOCK_MS: i64 = 60_000;

/// A write that runs under the request's `Idempotency-Key`, if it sent one, with `body`: the
/// request body (`Idempotent<Body>`) or nothing (`Idempotent`, the key is bound to no body).
/// Extracted last, after `AuthUser` (or another extractor that leaves the `Caller`): a replay, a reused key or a key in flight is answered
/// here, after authentication and the path, before the handler runs.
pub struct Idempotent<B = ()> {
    pub body: B,
    key: Key,
}

enum Key {
    /// No `Idempotency-Key`: the request runs as it is.
    Absent,
    /// The header was malformed: the 400 comes after the role and visibility checks, where the
    /// handler asks for its completion.
    Malformed,
    /// The key is this request's until [`settle`] keeps its answer or frees it.
    Held(Arc<Hold>),
}

struct Hold {
    store: Arc<dyn Store>,
    record_id: i64,
    token: String,
    /// A store call took the response into its transaction.
    stored: AtomicBool,
}

/// What the extractor began, for [`settle`] to finish once the handler has answered.
#[derive(Clone, Default)]
struct Slot(Arc<OnceLock<Key>>);

/// What a key is bound to besides its scope: the request body, or nothing (`()`).
pub trait KeyedBody: Sized + Send {
    fn read(req: Request) -> impl Future<Output = ApiResult<Self>> + Send;
    fn bytes(&self) -> &[u8];
}

impl KeyedBody for () {
    async fn read(_: Request) -> ApiResult<()> {
        Ok(())
    }

    fn bytes(&self) -> &[u8] {
        b""
    }
}

impl KeyedBody for Body {
    async fn read(req: Request) -> ApiResult<Body> {
        Body::from_request(req, &()).await
    }

    fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

fn malformed_key() -> ApiError {
    ApiError::bad_request(
        "invalid-idempotency-key",
        "Idempotency-Key must be 1 to 255 visible ASCII characters",
    )
}

/// The request header that names a key.
pub(super) const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The key, if sent; `Err` if it is not 1–255 visible ASCII characters.
fn header_key(headers: &HeaderMap) -> Result<Option<String>, ()> {
    let Some(v) = headers.get(IDEMPOTENCY_KEY) else {
        return Ok(None);
    };
    let bytes = v.as_bytes();
    if bytes.is_empty() || bytes.len() > 255 || !bytes.iter().all(|b| (0x21..=0x7e).contains(b)) {
        Err(())
    } else {
        Ok(Some(String::from_utf8_lossy(bytes).into_owned()))
    }
}

impl<B: KeyedBody> FromRequest<AppState> for Idempotent<B> {
    type Rejection = Response;

    async fn from_request(req: Request, st: &AppState) -> Result<Self, Response> {
        let (parts, body) = req.into_parts();
        let deferred = DeferredKey::of(&parts).ok_or_else(DeferredKey::unwired)?;
        let body = B::read(Request::from_parts(parts, body))
            .await
            .map_err(IntoResponse::into_response)?;
        let key = deferred.begin_key(st, body.bytes()).await?;
        Ok(Idempotent { body, key })
    }
}

/// An `Idempotency-Key` read before the body, bound to what the body holds once it is read: the
/// extractor of a request whose body is read by the handler itself, as it arrives (an upload),
/// which calls [`DeferredKey::begin`] with what identifies the request once it knows it.
pub struct DeferredKey {
    slot: Slot,
    user_id: i64,
    route: String,
    method: axum::http::Method,
    key: Result<Option<String>, ()>,
}

impl DeferredKey {
    /// The key of the request; `None` without the settle layer or an `AuthUser` before it.
    fn of(parts: &axum::http::request::Parts) -> Option<DeferredKey> {
        let ext = &parts.extensions;
        let (Some(slot), Some(&Caller(user_id))) =
            (ext.get::<Slot>().cloned(), ext.get::<Caller>())
        else {
            return None;
        };
        let route = ext
            .get::<MatchedPath>()
            .map(|p| p.as_str().to_string())
            .unwrap_or_else(|| parts.uri.path().to_string());
        Some(DeferredKey {
            slot,
            user_id,
            route,
            method: parts.method.clone(),
            key: header_key(&parts.headers),
        })
    }

    fn unwired() -> Response {
        ApiError::internal(anyhow::anyhow!(
            "Idempotent needs the settle layer and an AuthUser before it"
        ))
        .into_response()
    }

    /// The key bound to `content` (the request's body, or what identifies it): a replay of the
    /// stored answer, 422 for a key used with other content, 409 while its request runs.
    pub async fn begin(self, st: &AppState, content: &[u8]) -> Result<Idempotent<()>, Response> {
        let key = self.begin_key(st, content).await?;
        Ok(Idempotent { body: (), key })
    }

    async fn begin_key(self, st: &AppState, content: &[u8]) -> Result<Key, Response> {
        let key = match self.key {
            Ok(None) => return Ok(Key::Absent),
            Err(()) => {
                let _ = self.slot.0.set(Key::Malformed);
                return Ok(Key::Malformed);
            }
            Ok(Some(k)) => k,
        };
        let hash = hex::encode(Sha256::digest(content));
        let begun = st
            .store
            .idem_begin(
                self.user_id,
                self.method.as_str(),
                &self.route,
                &key,
                &hash,
                LOCK_MS,
                KEY_TTL_MS,
            )
            .await;
        let (record_id, token) = match begun {
            Err(e) => return Err(ApiError::from(e).into_response()),
            Ok(IdemBegin::Replay { status, body }) => return Err(replay(status, body)),
            Ok(IdemBegin::Mismatch) => {
                return Err(ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "idempotency-key-reused",
                    "Idempotency key reused",
                    "this Idempotency-Key was used with a different request body",
                )
                .into_response());
            }
            Ok(IdemBegin::InFlight) => {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "idempotency-in-flight",
                    "Request in flight",
                    "a request with this Idempotency-Key is still running; retry later",
                )
                .into_response());
            }
            Ok(IdemBegin::Started { record_id, token }) => (record_id, token),
        };
        let hold = Arc::new(Hold {
            store: st.store.clone(),
            record_id,
            token,
            stored: AtomicBool::new(false),
        });
        let _ = self.slot.0.set(Key::Held(hold.clone()));
        Ok(Key::Held(hold))
    }
}

impl FromRequestParts<AppState> for DeferredKey {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &AppState,
    ) -> Result<Self, Response> {
        DeferredKey::of(parts).ok_or_else(DeferredKey::unwired)
    }
}

impl<B> Idempotent<B> {
    /// The completion for a store call that answers `status` with `render(value)`: `None`
    /// without a key, 400 if the key was malformed. Every write asks for it (or calls
    /// [`check`](Self::check)) before it writes, after its role and visibility checks.
    pub fn completion<'a, T>(
        &'a self,
        status: StatusCode,
        render: &'a (dyn Fn(&T) -> String + Send + Sync),
    ) -> ApiResult<Option<Completion<'a, T>>> {
        self.check()?;
        let Key::Held(hold) = &self.key else {
            return Ok(None);
        };
        hold.stored.store(true, Ordering::SeqCst);
        Ok(Some(Completion {
            record_id: hold.record_id,
            token: &hold.token,
            status: status.as_u16(),
            render,
        }))
    }

    /// The completion for a store call that answers 204.
    pub fn no_content(&self) -> ApiResult<Option<Completion<'_, ()>>> {
        self.completion(StatusCode::NO_CONTENT, &|_: &()| String::new())
    }

    /// Whether the request came without an `Idempotency-Key` (a malformed one is not absent).
    pub fn without_key(&self) -> bool {
        matches!(self.key, Key::Absent)
    }

    /// 400 if the key was malformed.
    pub fn check(&self) -> ApiResult<()> {
        match self.key {
            Key::Malformed => Err(malformed_key()),
            _ => Ok(()),
        }
    }
}

/// The body `Json(O::from(row))` sends, for a stored response:
/// `idem.completion(StatusCode::OK, &json_of::<JobRow, JobOut>)`.
pub fn json_of<R: Clone, O: From<R> + serde::Serialize>(row: &R) -> String {
    serde_json::to_string(&O::from(row.clone())).unwrap_or_default()
}

fn replay(status: u16, body: String) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let mut res = if status == StatusCode::NO_CONTENT {
        status.into_response()
    } else {
        (status, body).into_response()
    };
    let h = res.headers_mut();
    if status != StatusCode::NO_CONTENT {
        let ct = if status.is_client_error() || status.is_server_error() {
            PROBLEM_JSON
        } else {
            "application/json"
        };
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    h.insert("idempotent-replayed", HeaderValue::from_static("true"));
    res
}

/// The layer around every route that finishes what [`Idempotent`] began, once the handler has
/// answered: a 4xx (or a success no store call carried) is stored, a 5xx frees the key.
pub async fn settle(mut req: Request, next: Next) -> Response {
    let slot = Slot::default();
    req.extensions_mut().insert(slot.clone());
    let res = next.run(req).await;
    match slot.0.get() {
        Some(Key::Held(hold)) => hold.settle(res).await,
        // A request that reached no write still must not be accepted with this key.
        Some(Key::Malformed) if res.status().is_success() => malformed_key().into_response(),
        _ => res,
    }
}

impl Hold {
    async fn settle(&self, res: Response) -> Response {
        let status = res.status();
        if status.is_success() && self.stored.load(Ordering::SeqCst) {
            return res;
        }
        if status.is_server_error()
            || status == StatusCode::UNAUTHORIZED
            || status == StatusCode::TOO_MANY_REQUESTS
        {
            self.release().await;
            return res;
        }
        // A 4xx, or a success with no store call to carry it (none of the handlers does this
        // today): stored on its own, exactly as it is sent.
        let (parts, body) = res.into_parts();
        let bytes = match axum::body::to_bytes(body, usize::MAX).await {
            Ok(bytes) => bytes,
            Err(e) => {
                // The answer is lost: keep nothing (a replay must be the response), free the
                // key so that a retry runs again, and say so.
                metrics::counter!(IDEMPOTENCY_FAILURES_TOTAL, "step" => "read_response")
                    .increment(1);
                self.release().await;
                return ApiError::internal(anyhow::anyhow!(e).context(format!(
                    "reading a {} response to keep for its Idempotency-Key",
                    status.as_u16()
                )))
                .into_response();
            }
        };
        if let Err(e) = self
            .store
            .idem_complete(
                self.record_id,
                &self.token,
                status.as_u16(),
                &String::from_utf8_lossy(&bytes),
            )
            .await
        {
            metrics::counter!(IDEMPOTENCY_FAILURES_TOTAL, "step" => "store_response").increment(1);
            tracing::warn!(
                error = format!("{e:#}"),
                "could not store an idempotent response; a retry with its key runs again"
            );
        }
        Response::from_parts(parts, axum::body::Body::from(bytes))
    }

    /// Frees the key after a request that wrote nothing. If that fails the key stays held until
    /// its lock lapses (`LOCK_MS`), and a retry meanwhile gets 409 `idempotency-in-flight`.
    async fn release(&self) {
        if let Err(e) = self.store.idem_release(self.record_id, &self.token).await {
            metrics::counter!(IDEMPOTENCY_FAILURES_TOTAL, "step" => "release").increment(1);
            tracing::error!(
                error = format!("{e:#}"),
                "could not free an Idempotency-Key after a request that wrote nothing; retries \
                 with it get 409 until its lock lapses (60 s)"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DatabaseUrl;
    use crate::domain::Role;
    use crate::domain::values::Email;
    use crate::store::NewUser;

    /// A key held by a request, on a fresh SQLite database.
    async fn held() -> (tempfile::TempDir, Arc<dyn Store>, Hold) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/idem.db", dir.path().display());
        let store = crate::store::connect(&DatabaseUrl::Sqlite(url))
            .await
            .unwrap();
        store.migrate().await.unwrap();
        let user = store
            .create_user(NewUser {
                email: Email::parse("a@example.com").unwrap(),
                name: "A".into(),
                role: Role::Candidate,
                password_hash: "x".into(),
            })
            .await
            .unwrap();
        assert_eq!(user.id, 1);
        let begun = store
            .idem_begin(1, "POST", "/r", "k", "h", LOCK_MS, KEY_TTL_MS)
            .await
            .unwrap();
        let IdemBegin::Started { record_id, token } = begun else {
            panic!("a new key starts");
        };
        let hold = Hold {
            store: store.clone(),
            record_id,
            token,
            stored: AtomicBool::new(false),
        };
        (dir, store, hold)
    }

    /// A response whose body fails while it is read: nothing of it may be kept as the key's
    /// answer (its replay would be an empty 4xx for 24 h), and the key is free for a retry.
    #[tokio::test]
    async fn a_body_that_cannot_be_read_is_never_stored_as_the_replay() {
        let (_dir, store, hold) = held().await;
        let failing = futures::stream::iter([
            Ok(bytes::Bytes::from_static(b"{\"partial\":")),
            Err(std::io::Error::other("the body broke")),
        ]);
        let res = Response::builder()
            .status(StatusCode::CONFLICT)
            .body(axum::body::Body::from_stream(failing))
            .unwrap();
        let answered = hold.settle(res).await;
        assert!(
            answered.status().is_server_error(),
            "the client is told the answer was lost: {}",
            answered.status()
        );
        let again = store
            .idem_begin(1, "POST", "/r", "k", "h", LOCK_MS, KEY_TTL_MS)
            .await
            .unwrap();
        assert!(
            matches!(again, IdemBegin::Started { .. }),
            "a retry runs again, with no replay stored"
        );
    }
}
