//! Résumés (CONTRACT.md §4, "Résumés"): a candidate uploads a file (`multipart/form-data`, one
//! part `file`), lists and deletes their own, and attaches one to an application; the
//! application's candidate and the company's members download it. An upload is spooled as it
//! arrives (`files::Upload`): past `RESUME_MAX_BYTES` it is 413 and of another kind 415, both
//! at the chunk that shows it, and nothing reaches the file store; a whole file is put in the
//! store, then its row commits (a crash between the two leaves a file the upkeep deletes).

use super::error::{ApiError, ApiResult, Problem};
use super::extract::{AuthUser, Ids};
use super::idempotency::{DeferredKey, Idempotent, json_of};
use super::multipart::{Rest, SharedBody, multipart_of};
use crate::domain::{MAX_RESUMES_PER_USER, Role};
use crate::files::{self, Spooled, UploadError};
use crate::http::AppState;
use crate::store::{NewResume, ResumeRow};
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use multer::{Field, Multipart};
use serde::Serialize;
use std::time::Duration;
use utoipa::ToSchema;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/me/resumes",
            get(list)
                .post(upload)
                // The upload counts its own bytes against RESUME_MAX_BYTES.
                .layer(DefaultBodyLimit::disable()),
        )
        .route("/api/me/resumes/{id}", delete(remove))
        .route("/api/me/resumes/{id}/file", get(download_own))
        .route("/api/applications/{id}/resume", get(download_attached))
}

/// What a multipart body may hold beside its file: part headers, boundaries, other small parts.
const OVERHEAD: u64 = 64 * 1024;
/// How much of a refused upload is still read (and thrown away) so that the client, which is
/// still sending, reads the answer instead of a reset connection.
const DRAIN_BYTES: u64 = 64 * 1024 * 1024;
const DRAIN_TIME: Duration = Duration::from_secs(5);

#[derive(Serialize, ToSchema)]
pub struct ResumeOut {
    pub id: i64,
    /// The name it was uploaded with, for display and downloads only.
    pub filename: String,
    /// As recognised from the content: `application/pdf`, the DOCX or ODT type,
    /// `application/rtf` or `text/plain; charset=utf-8`.
    pub content_type: String,
    /// In bytes.
    pub size: i64,
    /// The SHA-256 of the bytes, in hex.
    pub sha256: String,
    #[serde(with = "crate::timefmt")]
    pub created_at: DateTime<Utc>,
}

impl From<ResumeRow> for ResumeOut {
    fn from(r: ResumeRow) -> Self {
        ResumeOut {
            id: r.id,
            filename: r.filename,
            content_type: r.content_type,
            size: r.size,
            sha256: r.sha256,
            created_at: r.created_at,
        }
    }
}

/// The body of an upload.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ResumeUpload {
    /// The file: PDF, DOCX, ODT, RTF or plain UTF-8 text (recognised from its content), at most
    /// `RESUME_MAX_BYTES`.
    #[schema(value_type = String, format = Binary, content_media_type = "application/octet-stream")]
    pub file: Vec<u8>,
}

/// A file's bytes, as a download answers with them.
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
#[allow(dead_code)]
pub struct FileBytes(Vec<u8>);

fn too_large(max: u64) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload-too-large",
        "Payload Too Large",
        format!("a résumé may be at most {max} bytes (RESUME_MAX_BYTES)"),
    )
}

fn malformed(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "bad-request",
        "Bad Request",
        format!("the multipart/form-data body could not be read: {e}"),
    )
}

/// More than [`OVERHEAD`] beside the file: other parts, or bytes after the document.
fn too_much_besides() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload-too-large",
        "Payload Too Large",
        format!(
            "beside the file, a résumé's multipart body may hold at most {OVERHEAD} bytes (other parts, and anything after its closing boundary)"
        ),
    )
}

fn refused(e: UploadError, max: u64) -> ApiError {
    match e {
        UploadError::TooLarge => too_large(max),
        UploadError::Refused(files::Refusal::Empty) => {
            ApiError::field("file", files::Refusal::Empty.message())
        }
        UploadError::Refused(r) => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "Unsupported Media Type",
            r.message(),
        ),
        UploadError::Io(e) => {
            ApiError::internal(anyhow::Error::new(e).context("spooling an upload"))
        }
    }
}

/// Upload a résumé (candidates): `multipart/form-data` with one part named `file`. Its kind is
/// recognised from its content, never from its name or the part's content type. At most 10 per
/// account.
#[utoipa::path(post, operation_id = "upload_resume", path = "/api/me/resumes", tag = "resumes", security(("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters; bound to the file's content and name and the body's Content-Length, checked once the file is read")),
    request_body(content = ResumeUpload, content_type = "multipart/form-data"),
    responses((status = 201, body = ResumeOut), (status = 400, description = "the multipart body is malformed or cut short", body = Problem),
              (status = 403, body = Problem),
              (status = 409, description = "too-many-resumes: the account has 10 already", body = Problem),
              (status = 413, description = "the file is larger than RESUME_MAX_BYTES, or the body holds more than 64 KiB beside it", body = Problem),
              (status = 415, description = "the file is not a PDF, DOCX, ODT, RTF or plain UTF-8 text, or the body is not multipart/form-data", body = Problem),
              (status = 422, description = "no `file` part, or an empty file", body = Problem)))]
async fn upload(
    State(st): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    key: DeferredKey,
    request: Request,
) -> ApiResult<Response> {
    user.require(Role::Candidate, "upload résumés")?;
    let Some((mut multipart, mut body)) = multipart_of(request) else {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "Unsupported Media Type",
            "send the file as multipart/form-data, in a part named file",
        ));
    };
    let max = st.config.resume_max_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max + OVERHEAD) {
        return Err(too_large(max));
    }
    // Refused before a byte is read where the count already says so; the insert decides again.
    if st.store.resume_count(user.id()).await? >= MAX_RESUMES_PER_USER {
        return Err(
            crate::store::StoreError::Conflict(crate::domain::Conflict::TooManyResumes).into(),
        );
    }
    let read = match read_upload(&st, &mut multipart, max).await {
        // The body must end too, within OVERHEAD of the file.
        Ok(Some((spooled, name))) => match body.finish(spooled.size + OVERHEAD).await {
            Rest::Ended => Ok(Some((spooled, name))),
            Rest::Failed(e) => Err(malformed(e)),
            Rest::Over => Err(too_much_besides()),
        },
        other => other,
    };
    let (spooled, filename) = match read {
        Ok(Some(got)) => got,
        Ok(None) => return Err(ApiError::field("file", "is required: a part named file")),
        Err(e) => {
            if e.status != StatusCode::BAD_REQUEST {
                drain(&mut multipart, &mut body).await;
            }
            return Err(e);
        }
    };
    // The key is bound to the file, its name and the body's stated length, known now.
    let fingerprint = format!("{} {} {filename}", declared.unwrap_or(0), spooled.sha256);
    let idem = match key.begin(&st, fingerprint.as_bytes()).await {
        Ok(idem) => idem,
        Err(answer) => return Ok(answer),
    };
    let done = idem.completion(StatusCode::CREATED, &json_of::<ResumeRow, ResumeOut>)?;
    let key = files::new_key(files::RESUMES);
    let resume = NewResume {
        filename,
        content_type: spooled.kind.content_type().to_string(),
        size: spooled.size as i64,
        sha256: spooled.sha256.clone(),
        storage_key: key.clone(),
    };
    // The file first, then its row: a row never names a file that is not there.
    st.files
        .store
        .put(&key, spooled)
        .await
        .map_err(|e| ApiError::internal(e.context("storing a résumé")))?;
    let row = match st
        .store
        .create_resume(user.id(), resume, MAX_RESUMES_PER_USER, done.as_ref())
        .await
    {
        Ok(row) => row,
        Err(e) => {
            forget_files(&st, vec![key]).await;
            return Err(e.into());
        }
    };
    tracing::info!(resume_id = row.id, size = row.size, kind = %row.content_type, "user {} uploaded résumé {}", user.id(), row.id);
    Ok((StatusCode::CREATED, Json(ResumeOut::from(row))).into_response())
}

/// The `file` part spooled and recognised, with its display name; `None` without one. Other
/// parts are read and thrown away, within [`OVERHEAD`].
async fn read_upload(
    st: &AppState,
    multipart: &mut Multipart<'static>,
    max: u64,
) -> ApiResult<Option<(Spooled, String)>> {
    let mut got = None;
    let mut other = 0u64;
    while let Some(mut field) = multipart.next_field().await.map_err(malformed)? {
        if field.name() == Some("file") && got.is_none() {
            let name = files::display_name(field.file_name());
            got = Some((spool(st, &mut field, max).await?, name));
        } else {
            while let Some(chunk) = field.chunk().await.map_err(malformed)? {
                other += chunk.len() as u64;
                if other > OVERHEAD {
                    return Err(too_much_besides());
                }
            }
        }
    }
    Ok(got)
}

async fn spool(st: &AppState, field: &mut Field<'_>, max: u64) -> ApiResult<Spooled> {
    let mut upload = st.files.upload(max).map_err(|e| {
        ApiError::internal(anyhow::Error::new(e).context("opening an upload's spool file"))
    })?;
    while let Some(chunk) = field.chunk().await.map_err(malformed)? {
        upload.write(chunk).await.map_err(|e| refused(e, max))?;
    }
    upload.finish().await.map_err(|e| refused(e, max))
}

/// Reads (and throws away) what is left of a refused upload, the document and then the body
/// to its end, up to [`DRAIN_BYTES`] of the whole body, so that the client reads the refusal;
/// past the bound the connection closes under it.
async fn drain(multipart: &mut Multipart<'static>, body: &mut SharedBody) {
    let read = async {
        while let Ok(Some(mut field)) = multipart.next_field().await {
            while let Ok(Some(_)) = field.chunk().await {
                if body.read() > DRAIN_BYTES {
                    return;
                }
            }
        }
        body.finish(DRAIN_BYTES).await;
    };
    let _ = tokio::time::timeout(DRAIN_TIME, read).await;
}

/// Deletes files whose rows are gone, after the commit; a failure is left to the upkeep's sweep
/// of files no row names.
pub(super) async fn forget_files(st: &AppState, keys: Vec<String>) {
    for key in keys {
        if let Err(e) = st.files.store.delete(&key).await {
            tracing::warn!(key = %key, "a file whose row is gone was not deleted (the upkeep will): {e:#}");
        }
    }
}

/// The caller's résumés, newest first.
#[utoipa::path(get, operation_id = "list_resumes", path = "/api/me/resumes", tag = "resumes", security(("bearer" = [])),
    responses((status = 200, body = Vec<ResumeOut>)))]
async fn list(State(st): State<AppState>, user: AuthUser) -> ApiResult<Json<Vec<ResumeOut>>> {
    let rows = st.store.resumes_of(user.id()).await?;
    Ok(Json(rows.into_iter().map(Into::into).collect()))
}

/// Delete one of the caller's résumés and its file; applications that used it keep none.
#[utoipa::path(delete, operation_id = "delete_resume", path = "/api/me/resumes/{id}", tag = "resumes", security(("bearer" = [])), params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path)),
    responses((status = 204), (status = 404, body = Problem)))]
async fn remove(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent,
) -> ApiResult<StatusCode> {
    let done = idem.no_content()?;
    let key = st
        .store
        .delete_resume(user.id(), ids.one(), done.as_ref())
        .await?;
    forget_files(&st, vec![key]).await;
    Ok(StatusCode::NO_CONTENT)
}

/// Download one of the caller's résumés.
#[utoipa::path(get, operation_id = "download_resume", path = "/api/me/resumes/{id}/file", tag = "resumes", security(("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 200, description = "the file, as an attachment, with the type recognised at its upload", content((FileBytes = "application/pdf"), (FileBytes = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"), (FileBytes = "application/vnd.oasis.opendocument.text"), (FileBytes = "application/rtf"), (FileBytes = "text/plain"))), (status = 404, body = Problem)))]
async fn download_own(State(st): State<AppState>, user: AuthUser, ids: Ids) -> ApiResult<Response> {
    let row = st.store.resume_of(user.id(), ids.one()).await?;
    serve_file(&st, row).await
}

/// Download the résumé attached to an application (its candidate and the company's members).
#[utoipa::path(get, operation_id = "download_application_resume", path = "/api/applications/{id}/resume", tag = "applications", security(("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 200, description = "the file, as an attachment, with the type recognised at its upload", content((FileBytes = "application/pdf"), (FileBytes = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"), (FileBytes = "application/vnd.oasis.opendocument.text"), (FileBytes = "application/rtf"), (FileBytes = "text/plain"))),
              (status = 404, description = "no such application for the caller, or none attached", body = Problem)))]
async fn download_attached(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
) -> ApiResult<Response> {
    // One statement: the résumé, if the application is the caller's to see and has one.
    let row = st
        .store
        .visible_application_resume(ids.one(), user.id())
        .await?
        .ok_or_else(ApiError::not_found)?;
    serve_file(&st, row).await
}

/// The file, streamed from the store, as a download that no browser runs and no cache keeps.
async fn serve_file(st: &AppState, row: ResumeRow) -> ApiResult<Response> {
    let Some((stream, size)) = st
        .files
        .store
        .get(&row.storage_key)
        .await
        .map_err(|e| ApiError::internal(e.context(format!("reading résumé {}", row.id))))?
    else {
        tracing::error!(resume_id = row.id, key = %row.storage_key, store = st.files.store.kind(), "résumé {} names a file the file store does not have", row.id);
        return Err(ApiError::not_found());
    };
    let mut res = Body::from_stream(stream).into_response();
    let h = res.headers_mut();
    let value = |s: &str| HeaderValue::from_str(s).map_err(|e| ApiError::internal(e.into()));
    h.insert(header::CONTENT_TYPE, value(&row.content_type)?);
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    h.insert(
        header::CONTENT_DISPOSITION,
        value(&files::attachment(&row.filename))?,
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    Ok(res)
}
