//! Résumés (CONTRACT.md §4, "Résumés"): uploads recognised by their content, never their name;
//! the size limit, also against a body that lies about its length; who may download; a résumé
//! attached to an application and required by a job; the file store on both kinds (a folder,
//! and S3 through the AWS SDK against the S3-compatible test server); a crash between a file
//! and its row; retention over a moved clock; an account's deletion; the export.

use crate::each_store;
use crate::helpers::*;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

each_store!(
    kinds_are_recognised_by_content_not_by_name,
    who_may_upload_and_how_many,
    screening_questions_are_answered_and_shown,
    bytes_after_the_document_are_read_within_a_bound,
);

mod the_size_limit_holds_whatever_the_body_says {
    use crate::helpers::{Backend, CacheKind, TestApp};
    const LIMIT: &[(&str, &str)] = &[("RESUME_MAX_BYTES", "2048")];
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::the_size_limit_holds_whatever_the_body_says(
            TestApp::spawn_with(Backend::Sqlite, CacheKind::Memory, LIMIT).await,
        )
        .await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        super::the_size_limit_holds_whatever_the_body_says(
            TestApp::spawn_with(Backend::Postgres, CacheKind::Memory, LIMIT).await,
        )
        .await
    }
}

/// The cases that touch the file store run on both databases and both stores.
macro_rules! each_file_store {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use $crate::helpers::{Backend, CacheKind, TestApp};
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite_local() {
                super::$name(TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_local() {
                super::$name(TestApp::spawn(Backend::Postgres, CacheKind::Memory).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite_s3() {
                let env = super::s3_env().await;
                let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
                super::$name(TestApp::spawn_with(Backend::Sqlite, CacheKind::Memory, &env).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_s3() {
                let env = super::s3_env().await;
                let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
                super::$name(TestApp::spawn_with(Backend::Postgres, CacheKind::Memory, &env).await).await
            }
        }
    )*};
}

each_file_store!(
    an_attached_resume_is_downloaded_by_its_candidate_and_the_company_only,
    a_file_without_its_row_is_swept_and_a_row_without_its_file_is_404,
    retention_and_account_deletion_take_the_files,
);

/// `FILE_STORE=s3` on a bucket of its own, made on the S3-compatible test server.
pub async fn s3_env() -> Vec<(&'static str, String)> {
    assert!(
        std::env::var("AWS_ENDPOINT_URL").is_ok(),
        "the FILE_STORE=s3 tests need an S3-compatible server in AWS_ENDPOINT_URL; scripts/test starts one"
    );
    let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let client = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&config)
            .force_path_style(true)
            .build(),
    );
    let bucket = unique("jbt-").to_lowercase();
    client
        .create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("create bucket");
    vec![
        ("FILE_STORE", "s3".to_string()),
        ("S3_BUCKET", bucket),
        ("S3_PREFIX", "board/".to_string()),
    ]
}

const PDF: &[u8] =
    b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj << /Type /Catalog >> endobj\ntrailer\n%%EOF\n";
const TEXT: &[u8] = "Jane Doe\nIngénieure logiciel — Rust, SQL\n".as_bytes();

/// A `multipart/form-data` body of `parts` (name, file name, bytes) and its content type.
fn multipart(parts: &[(&str, Option<&str>, &[u8])]) -> (String, Vec<u8>) {
    let boundary = "jbt-boundary-7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    for (name, filename, bytes) in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        match filename {
            Some(f) => body.extend_from_slice(
                format!(
                    "Content-Disposition: form-data; name=\"{name}\"; filename=\"{f}\"\r\n\
                     Content-Type: application/octet-stream\r\n\r\n"
                )
                .as_bytes(),
            ),
            None => body.extend_from_slice(
                format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes(),
            ),
        }
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// The one field a 422 names.
fn field(body: &Value) -> String {
    let errors = body["errors"].as_object().expect("a 422 names its fields");
    assert_eq!(errors.len(), 1, "{body}");
    errors.keys().next().unwrap().clone()
}

async fn upload(app: &TestApp, token: Option<&str>, filename: &str, bytes: &[u8]) -> Resp {
    let (content_type, body) = multipart(&[("file", Some(filename), bytes)]);
    let mut req = app
        .client
        .post(app.url("/api/me/resumes"))
        .header("content-type", content_type)
        .body(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    TestApp::read(req.send().await.expect("upload")).await
}

/// The bytes and headers of a download.
async fn download(
    app: &TestApp,
    path: &str,
    token: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let mut req = app.client.get(app.url(path));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.send().await.expect("download");
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    (status, headers, res.bytes().await.expect("body").to_vec())
}

/// A DOCX's parts (stored, not compressed), and a ZIP of something else.
fn zip_of(names: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut dir = Vec::new();
    for name in names {
        let offset = out.len() as u32;
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        out.extend_from_slice(&[
            20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ]);
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        dir.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        dir.extend_from_slice(&[
            20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ]);
        dir.extend_from_slice(&(name.len() as u16).to_le_bytes());
        dir.extend_from_slice(&[0; 12]);
        dir.extend_from_slice(&offset.to_le_bytes());
        dir.extend_from_slice(name.as_bytes());
    }
    let at = out.len() as u32;
    out.extend_from_slice(&dir);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(&(names.len() as u16).to_le_bytes());
    out.extend_from_slice(&(names.len() as u16).to_le_bytes());
    out.extend_from_slice(&(dir.len() as u32).to_le_bytes());
    out.extend_from_slice(&at.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// The keys of every résumé file in the app's store, whichever kind it is.
async fn stored(app: &TestApp) -> Vec<String> {
    let soon = chrono::Utc::now() + chrono::Duration::minutes(1);
    app.state
        .files
        .store
        .list_before("resumes/", soon, None, 100)
        .await
        .unwrap()
}

/// The files in the app's store folder and its spool (FILE_STORE=local).
fn local_files(app: &TestApp) -> (usize, usize) {
    let count = |dir: std::path::PathBuf| std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0);
    (
        count(app.files_dir().join("resumes")),
        count(app.files_dir().join("tmp")),
    )
}

async fn kinds_are_recognised_by_content_not_by_name(app: TestApp) {
    let candidate = app.user("candidate").await;
    let t = Some(candidate.token.as_str());
    let docx = zip_of(&["[Content_Types].xml", "_rels/.rels", "word/document.xml"]);
    for (name, bytes, kind) in [
        ("cv.txt", PDF, "application/pdf"),
        ("cv.pdf", TEXT, "text/plain; charset=utf-8"),
        (
            "cv",
            &docx[..],
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ),
        (
            "cv.doc",
            b"{\\rtf1\\ansi Jane}".as_slice(),
            "application/rtf",
        ),
    ] {
        let r = upload(&app, t, name, bytes).await;
        let body = r.expect(201);
        assert_eq!(body["content_type"], kind, "{name}");
        assert_eq!(body["filename"], name);
        assert_eq!(body["size"], bytes.len());
        assert_eq!(body["sha256"].as_str().unwrap().len(), 64);
    }
    for (name, bytes) in [
        (
            "cv.pdf",
            b"<!DOCTYPE html><html><body><script>alert(1)</script>".as_slice(),
        ),
        ("cv.docx", &zip_of(&["photo.jpg", "notes.txt"])[..]),
        ("cv.pdf", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".as_slice()),
    ] {
        upload(&app, t, name, bytes)
            .await
            .expect_problem(415, "unsupported-media-type");
    }
    let r = upload(&app, t, "empty.txt", b"").await;
    assert_eq!(
        field(r.expect_problem(422, "validation")),
        "file",
        "{}",
        r.text
    );
    let (ct, body) = multipart(&[("cv", Some("cv.pdf"), PDF)]);
    let r = TestApp::read(
        app.client
            .post(app.url("/api/me/resumes"))
            .bearer_auth(&candidate.token)
            .header("content-type", ct)
            .body(body)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(field(r.expect(422)), "file");
    // A name is for display only: a path in it goes, and it never names the stored file.
    let r = upload(&app, t, "../../etc/passwd", TEXT).await;
    assert_eq!(r.expect(201)["filename"], "passwd");
    let list = app.get("/api/me/resumes", t).await;
    let names: Vec<&str> = list
        .expect(200)
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["filename"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["passwd", "cv.doc", "cv", "cv.pdf", "cv.txt"],
        "newest first"
    );
    if !app.vars.contains_key("FILE_STORE") {
        assert_eq!(
            local_files(&app),
            (5, 0),
            "five files stored, the refused ones nowhere, the spool empty"
        );
    }
}

async fn the_size_limit_holds_whatever_the_body_says(app: TestApp) {
    let candidate = app.user("candidate").await;
    let t = Some(candidate.token.as_str());
    let mut exactly = b"x".repeat(2047);
    exactly.push(b'\n');
    assert_eq!(
        upload(&app, t, "max.txt", &exactly).await.expect(201)["size"],
        2048
    );
    let mut over = exactly.clone();
    over.push(b'\n');
    upload(&app, t, "over.txt", &over)
        .await
        .expect_problem(413, "payload-too-large");
    // Sent in chunks with no length at all: counted as it arrives.
    let (ct, body) = multipart(&[("file", Some("big.txt"), &b"line of text\n".repeat(4000))]);
    let head = format!(
        "POST /api/me/resumes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
         Content-Type: {ct}\r\nTransfer-Encoding: chunked\r\n\r\n",
        candidate.token
    );
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    tcp.write_all(head.as_bytes()).await.unwrap();
    for chunk in body.chunks(1000) {
        let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
        framed.extend_from_slice(chunk);
        framed.extend_from_slice(b"\r\n");
        if tcp.write_all(&framed).await.is_err() {
            break;
        }
    }
    let _ = tcp.write_all(b"0\r\n\r\n").await;
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut answer))
        .await
        .expect("answered")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    // A length far past the limit is refused from the headers, before a byte of the body.
    let head = format!(
        "POST /api/me/resumes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
         Content-Type: {ct}\r\nContent-Length: 10737418240\r\n\r\n",
        candidate.token
    );
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut answer))
        .await
        .expect("answered without the body")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    // A body that ends before its stated length: nothing is stored, even when the multipart
    // document in it is whole and the connection stays open a while before it ends.
    let (ct, body) = multipart(&[("file", Some("cut.txt"), TEXT)]);
    let head = format!(
        "POST /api/me/resumes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
         Content-Type: {ct}\r\nContent-Length: {}\r\n\r\n",
        candidate.token,
        body.len() + 500
    );
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(&body).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    tcp.shutdown().await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut answer))
        .await
        .expect("answered")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    let list = app.get("/api/me/resumes", t).await;
    assert_eq!(
        list.expect(200).as_array().unwrap().len(),
        1,
        "only the file of exactly the limit"
    );
    if !app.vars.contains_key("FILE_STORE") {
        assert_eq!(
            local_files(&app),
            (1, 0),
            "nothing of the refused or cut uploads is kept"
        );
    }
}

/// What follows the document's closing boundary (RFC 2046's epilogue) is read and thrown away,
/// within 64 KiB; past that the upload is 413, naming what is too large, and nothing is kept.
async fn bytes_after_the_document_are_read_within_a_bound(app: TestApp) {
    let candidate = app.user("candidate").await;
    let send = |epilogue: Vec<u8>| {
        let (content_type, mut body) = multipart(&[("file", Some("cv.txt"), TEXT)]);
        body.extend_from_slice(&epilogue);
        let req = app
            .client
            .post(app.url("/api/me/resumes"))
            .header("content-type", content_type)
            .bearer_auth(&candidate.token)
            .body(body);
        async move { TestApp::read(req.send().await.expect("upload")).await }
    };
    let kept = send(b"an epilogue\r\n".repeat(100)).await;
    assert_eq!(kept.expect(201)["size"], TEXT.len());
    let refused = send(vec![b'x'; 64 * 1024 + 1]).await;
    let detail = refused.expect_problem(413, "payload-too-large")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(detail.contains("after its closing boundary"), "{detail}");
    let list = app.get("/api/me/resumes", Some(&candidate.token)).await;
    assert_eq!(
        list.expect(200).as_array().unwrap().len(),
        1,
        "only the first"
    );
}

async fn who_may_upload_and_how_many(app: TestApp) {
    upload(&app, None, "cv.pdf", PDF)
        .await
        .expect_problem(401, "unauthorized");
    let employer = app.user("employer").await;
    upload(&app, Some(&employer.token), "cv.pdf", PDF)
        .await
        .expect_problem(403, "forbidden");
    let candidate = app.user("candidate").await;
    let t = Some(candidate.token.as_str());
    for i in 0..10 {
        upload(&app, t, &format!("cv{i}.pdf"), PDF)
            .await
            .expect(201);
    }
    upload(&app, t, "cv10.pdf", PDF)
        .await
        .expect_problem(409, "too-many-resumes");
    let first = app.get("/api/me/resumes", t).await.expect(200)[9]["id"]
        .as_i64()
        .unwrap();
    let other = app.user("candidate").await;
    app.delete(&format!("/api/me/resumes/{first}"), Some(&other.token))
        .await
        .expect_problem(404, "not-found");
    let (status, _, _) = download(
        &app,
        &format!("/api/me/resumes/{first}/file"),
        Some(&other.token),
    )
    .await;
    assert_eq!(status, 404, "another candidate's résumé");
    app.delete(&format!("/api/me/resumes/{first}"), t)
        .await
        .expect(204);
    upload(&app, t, "cv10.pdf", PDF).await.expect(201);
}

async fn an_attached_resume_is_downloaded_by_its_candidate_and_the_company_only(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let job = app
        .job(&employer, company, json!({"resume_required": true}))
        .await;
    assert_eq!(job["resume_required"], true);
    let job = job["id"].as_i64().unwrap();
    let candidate = app.user("candidate").await;
    let other = app.user("candidate").await;
    let name = "Zoë CV; 2026.pdf";
    let resume = upload(&app, Some(&candidate.token), name, PDF)
        .await
        .expect(201)
        .clone();
    let theirs = upload(&app, Some(&other.token), "cv.pdf", PDF)
        .await
        .expect(201)["id"]
        .clone();
    let apply = |body: Value| {
        let (app, token) = (&app, candidate.token.clone());
        async move {
            app.post(&format!("/api/jobs/{job}/applications"), Some(&token), body)
                .await
        }
    };
    let r = apply(json!({})).await;
    assert_eq!(field(r.expect(422)), "resume_id", "{}", r.text);
    let r = apply(json!({"resume_id": theirs})).await;
    assert_eq!(field(r.expect(422)), "resume_id", "another's résumé");
    let application = apply(json!({"resume_id": resume["id"]}))
        .await
        .expect(201)
        .clone();
    assert_eq!(
        application["resume"],
        json!({"id": resume["id"], "filename": name, "content_type": "application/pdf", "size": PDF.len()})
    );
    let id = application["id"].as_i64().unwrap();
    let path = format!("/api/applications/{id}/resume");
    for who in [&candidate, &employer] {
        let (status, headers, bytes) = download(&app, &path, Some(&who.token)).await;
        assert_eq!(status, 200);
        assert_eq!(bytes, PDF);
        assert_eq!(headers["content-type"], "application/pdf");
        assert_eq!(
            headers["content-disposition"],
            "attachment; filename=\"Zo_ CV; 2026.pdf\"; filename*=UTF-8''Zo%C3%AB%20CV%3B%202026.pdf"
        );
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert_eq!(headers["cache-control"], "private, no-store");
    }
    let stranger = app.user("employer").await;
    app.company(&stranger, "Other").await;
    for who in [&stranger, &other] {
        let (status, _, bytes) = download(&app, &path, Some(&who.token)).await;
        assert_eq!(status, 404, "{}", String::from_utf8_lossy(&bytes));
    }
    let (status, _, _) = download(&app, &path, None).await;
    assert_eq!(status, 401);
    let seen = app
        .get(&format!("/api/applications/{id}"), Some(&employer.token))
        .await;
    assert_eq!(seen.expect(200)["resume"]["id"], resume["id"]);
    // Deleted by its candidate: the application keeps no résumé, the file goes.
    app.delete(
        &format!("/api/me/resumes/{}", resume["id"]),
        Some(&candidate.token),
    )
    .await
    .expect(204);
    let seen = app
        .get(&format!("/api/applications/{id}"), Some(&employer.token))
        .await;
    assert_eq!(seen.expect(200)["resume"], Value::Null);
    let (status, _, _) = download(&app, &path, Some(&employer.token)).await;
    assert_eq!(status, 404);
    let keys = stored(&app).await;
    assert_eq!(
        keys.len(),
        1,
        "only the other candidate's file is left: {keys:?}"
    );
}

async fn a_file_without_its_row_is_swept_and_a_row_without_its_file_is_404(app: TestApp) {
    let candidate = app.user("candidate").await;
    let kept = upload(&app, Some(&candidate.token), "cv.pdf", PDF)
        .await
        .expect(201)
        .clone();
    // A crash between the file and its row: a file that no row names.
    let files = app.state.files.clone();
    let mut spool = files.upload(1 << 20).unwrap();
    spool.write(TEXT.into()).await.unwrap();
    let orphan = jobboard::files::new_key("resumes/");
    files
        .store
        .put(&orphan, spool.finish().await.unwrap())
        .await
        .unwrap();
    assert_eq!(stored(&app).await.len(), 2);
    let worker = jobboard::run::build_worker(&app.config(&[]), app.state.store.clone())
        .await
        .unwrap();
    // A day's grace: an upload between its file and its row is never taken for an orphan.
    worker.delete_unused_files().await.unwrap();
    assert_eq!(stored(&app).await.len(), 2, "a new file is left alone");
    let swept = worker
        .sweep_files_before(chrono::Utc::now() + chrono::Duration::minutes(1))
        .await
        .unwrap();
    assert_eq!(swept, 1);
    let left = stored(&app).await;
    assert_eq!(left.len(), 1);
    assert_ne!(left[0], orphan, "the orphan went, the named file stayed");
    let (status, _, bytes) = download(
        &app,
        &format!("/api/me/resumes/{}/file", kept["id"]),
        Some(&candidate.token),
    )
    .await;
    assert_eq!((status, bytes.as_slice()), (200, PDF));
    // A row whose file is gone (deleted by hand): 404, and an ERROR log names it.
    files.store.delete(&left[0]).await.unwrap();
    let logged = |log: &str| {
        log.lines().any(|line| {
            line.contains("ERROR")
                && line.contains(&format!(
                    "résumé {} names a file the file store does not have",
                    kept["id"]
                ))
                && line.contains(&left[0])
        })
    };
    assert!(!logged(&error_log()), "not before the download");
    let (status, _, _) = download(
        &app,
        &format!("/api/me/resumes/{}/file", kept["id"]),
        Some(&candidate.token),
    )
    .await;
    assert_eq!(status, 404);
    assert!(
        logged(&error_log()),
        "an ERROR names the résumé and its file: {}",
        error_log()
    );
}

async fn retention_and_account_deletion_take_the_files(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let job = app.job(&employer, company, json!({})).await["id"]
        .as_i64()
        .unwrap();
    let candidate = app.user("candidate").await;
    let t = Some(candidate.token.as_str());
    let unused = upload(&app, t, "old.pdf", PDF).await.expect(201)["id"]
        .as_i64()
        .unwrap();
    let attached = upload(&app, t, "used.pdf", PDF).await.expect(201)["id"]
        .as_i64()
        .unwrap();
    let fresh = upload(&app, t, "new.pdf", PDF).await.expect(201)["id"]
        .as_i64()
        .unwrap();
    app.post(
        &format!("/api/jobs/{job}/applications"),
        t,
        json!({"resume_id": attached}),
    )
    .await
    .expect(201);
    // The clock moves: two résumés have been unused for longer than the retention.
    app.exec(&format!(
        "UPDATE resumes SET used_at = '2000-01-01T00:00:00Z' WHERE id IN ({unused}, {attached})"
    ))
    .await;
    let worker = jobboard::run::build_worker(
        &app.config(&[("APPLICATION_RETENTION_DAYS", "30")]),
        app.state.store.clone(),
    )
    .await
    .unwrap();
    let (resumes, _) = worker.delete_unused_files().await.unwrap();
    assert_eq!(resumes, 1, "the unused one; the attached one stays");
    let ids: Vec<i64> = app
        .get("/api/me/resumes", t)
        .await
        .expect(200)
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [fresh, attached]);
    assert_eq!(stored(&app).await.len(), 2);
    // The export lists them with their links.
    let export = app.get("/api/me/export", t).await;
    let listed = export.expect(200)["resumes"].as_array().unwrap().clone();
    assert_eq!(listed.len(), 2);
    assert!(
        listed[0]["download_url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/api/me/resumes/{fresh}/file"))
    );
    assert_eq!(export.body["applications"][0]["resume"]["id"], attached);
    // Deleting the account deletes its files.
    app.delete("/api/me", t).await.expect(204);
    assert_eq!(stored(&app).await.len(), 0);
}

async fn screening_questions_are_answered_and_shown(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let job = app
        .job(
            &employer,
            company,
            json!({"questions": [
            {"text": "Can you work in the EU?", "kind": "yes_no", "required": true},
            {"text": "Years of Rust?", "kind": "number"},
            {"text": "Why us?", "kind": "short_text"}]}),
        )
        .await;
    let ids: Vec<i64> = job["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [1, 2, 3]);
    let job_id = job["id"].as_i64().unwrap();
    let r = app.post("/api/jobs", Some(&employer.token), json!({"company_id": company, "title": "T", "description": "D", "location": "L", "remote": false, "employment_type": "full_time", "questions": [{"text": "x", "kind": "essay"}]})).await;
    assert_eq!(field(r.expect(422)), "questions[0].kind");
    let candidate = app.user("candidate").await;
    let apply = |body: Value| {
        let (app, token) = (&app, candidate.token.clone());
        async move {
            app.post(
                &format!("/api/jobs/{job_id}/applications"),
                Some(&token),
                body,
            )
            .await
        }
    };
    for (body, named) in [
        (json!({}), "answers.1"),
        (
            json!({"answers": [{"question_id": 1, "answer": "yes"}]}),
            "answers.1",
        ),
        (
            json!({"answers": [{"question_id": 1, "answer": true}, {"question_id": 2, "answer": "five"}]}),
            "answers.2",
        ),
        (
            json!({"answers": [{"question_id": 1, "answer": true}, {"question_id": 3, "answer": "x".repeat(1001)}]}),
            "answers.3",
        ),
        (
            json!({"answers": [{"question_id": 1, "answer": true}, {"question_id": 7, "answer": 1}]}),
            "answers.7",
        ),
    ] {
        let r = apply(body).await;
        assert_eq!(field(r.expect(422)), named, "{}", r.text);
    }
    let a = apply(
        json!({"answers": [{"question_id": 2, "answer": 4}, {"question_id": 1, "answer": true}]}),
    )
    .await
    .expect(201)
    .clone();
    let shown = json!([{"question_id": 1, "answer": true}, {"question_id": 2, "answer": 4}]);
    assert_eq!(a["answers"], shown);
    let seen = app
        .get(
            &format!("/api/applications/{}", a["id"]),
            Some(&employer.token),
        )
        .await;
    assert_eq!(seen.expect(200)["answers"], shown);
    // A member edits the questions: the unchanged ones keep their ids.
    let patched = app
        .patch(
            &format!("/api/jobs/{job_id}"),
            Some(&employer.token),
            json!({"questions": [
            {"text": "Years of Rust?", "kind": "number"},
            {"text": "Notice period?", "kind": "short_text", "required": true}]}),
        )
        .await;
    let ids: Vec<i64> = patched.expect(200)["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [2, 4]);
    let cleared = app
        .patch(
            &format!("/api/jobs/{job_id}"),
            Some(&employer.token),
            json!({"questions": null}),
        )
        .await;
    assert_eq!(cleared.expect(200)["questions"], json!([]));
}

mod a_hostile_file_name_stays_text {
    use crate::helpers::Backend;
    use crate::worker::Harness;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::a_hostile_file_name_stays_text(Harness::new(Backend::Sqlite, "lease").await).await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        super::a_hostile_file_name_stays_text(Harness::new(Backend::Postgres, "lease").await).await
    }
}

/// A file name written to deceive: a right-to-left override (U+202E) that shows `cv<RLO>fdp.exe`
/// as `cvexe.pdf`, a line separator, markup. What is kept, shown, sent in the download's header
/// and named in the confirmation email holds none of the controls; the header is ASCII.
async fn a_hostile_file_name_stays_text(h: crate::worker::Harness) {
    let app = &h.app;
    let hostile = "cv\u{202E}fdp.exe\u{2028}<img src=x onerror=alert(1)>.pdf";
    let kept = "cvfdp.exe<img src=x onerror=alert(1)>.pdf";
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let job = app.job(&employer, company, json!({})).await["id"]
        .as_i64()
        .unwrap();
    let candidate = app.user("candidate").await;
    let resume = upload(app, Some(&candidate.token), hostile, PDF).await;
    assert_eq!(resume.expect(201)["filename"], kept, "{}", resume.text);
    let a = app
        .post(
            &format!("/api/jobs/{job}/applications"),
            Some(&candidate.token),
            json!({"resume_id": resume.body["id"]}),
        )
        .await
        .expect(201)
        .clone();
    assert_eq!(a["resume"]["filename"], kept);
    let (status, headers, _) = download(
        app,
        &format!("/api/applications/{}/resume", a["id"]),
        Some(&employer.token),
    )
    .await;
    assert_eq!(status, 200);
    let disposition = headers["content-disposition"]
        .to_str()
        .expect("an ASCII header");
    assert_eq!(
        disposition,
        "attachment; filename=\"cvfdp.exe<img src=x onerror=alert(1)>.pdf\"; \
         filename*=UTF-8''cvfdp.exe%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E.pdf"
    );
    h.publish().await;
    h.worker().await.run_until_empty().await.unwrap();
    // The bodies, quoted-printable decoded (the fixture undoes only soft breaks and `=3D`).
    let texts: Vec<String> = h
        .smtp
        .mails()
        .iter()
        .map(|m| quoted_printable(&m.text()))
        .collect();
    let text = texts
        .iter()
        .find(|t| t.contains("with your résumé"))
        .unwrap_or_else(|| panic!("the confirmation names the résumé: {texts:?}"));
    assert!(
        text.contains(&format!("with your résumé {kept}.")),
        "{text}"
    );
    assert!(
        !text.contains('\u{202E}') && !text.contains('\u{2028}'),
        "no control reaches the email: {text:?}"
    );
}
