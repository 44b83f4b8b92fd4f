//! The résumé rows (a client of our own, in this process, at 16 connections, each row's ops
//! timed the same way): `resume_apply_local` (upload a 1 MiB PDF, then apply with it) beside
//! `resume_apply_plain` (the same applies without one), and, with an S3-compatible server in
//! `AWS_ENDPOINT_URL`, `resume_apply_s3` on a server restarted with `FILE_STORE=s3`;
//! `resume_download_local` (GET /api/applications/{id}/resume of a 100 KiB and a 1 MiB file)
//! beside `resume_job_detail` (GET /api/jobs/{id} by the same client); `resume_rss`: how far the
//! API's peak RSS rises while a 1 MiB and a 40 MiB résumé are uploaded and downloaded.
//!
//! Beside the upload row, its ceiling from the same run: `resume_disk`, the same 1 MiB written
//! as the local store writes an upload (a spool file renamed into its folder, the file's and
//! the folder's `fsync`) on [`CONNS`] threads in the folder the server keeps its files in (an
//! upload is durable before its row commits, so no upload rate passes it); beside the S3 row,
//! the S3 server's own PUTs of the same file.

use super::bench::{Bench, api};
use crate::common;
use crate::report::{Section, Target};
use anyhow::{Context, Result, bail};
use futures::StreamExt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const CONNS: usize = 16;
/// A candidate keeps at most 10 résumés: a row's uploads stop short of the seeded candidates'
/// room, and the résumés are deleted (untimed) after each row.
const PER_CANDIDATE: u64 = 9;

/// A PDF of `bytes` bytes (a header, then a comment body).
fn pdf(bytes: usize) -> Vec<u8> {
    let mut out = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n".to_vec();
    while out.len() < bytes {
        out.extend_from_slice(b"% bench padding line of a plausible size for a PDF stream\n");
    }
    out.truncate(bytes);
    out
}

/// The upload's content type and body, made once per file: each op sends the same bytes, so
/// that the client's share of the two cores is the sending, not a copy per request.
fn multipart(file: &[u8]) -> (String, bytes::Bytes) {
    let boundary = "bench-boundary-2b7c";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"cv.pdf\"\r\n\
         Content-Type: application/pdf\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(file);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (
        format!("multipart/form-data; boundary={boundary}"),
        body.into(),
    )
}

/// What a closed loop of [`CONNS`] tasks did.
#[derive(Default)]
struct Loop {
    ops: u64,
    errors: u64,
    secs: f64,
}

impl Loop {
    /// `other`'s ops, errors and time added to these.
    fn add(&mut self, other: Loop) {
        self.ops += other.ops;
        self.errors += other.errors;
        self.secs += other.secs;
    }

    fn rate(&self) -> f64 {
        self.ops as f64 / self.secs.max(1e-9)
    }
}

/// Runs `op(n)` for n = 0, 1, … on [`CONNS`] tasks until `limit` ops or `secs` seconds.
async fn closed_loop<F, Fut>(secs: u64, limit: u64, op: F) -> Loop
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<()>> + Send,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let end = Instant::now() + Duration::from_secs(secs);
    let start = Instant::now();
    let tasks: Vec<_> = (0..CONNS)
        .map(|_| {
            let (op, next, errors) = (op.clone(), next.clone(), errors.clone());
            tokio::spawn(async move {
                let mut done = 0u64;
                while Instant::now() < end {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    if n >= limit {
                        break;
                    }
                    match op(n).await {
                        Ok(()) => done += 1,
                        Err(_) => {
                            errors.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
                done
            })
        })
        .collect();
    let mut ops = 0;
    for t in tasks {
        ops += t.await.unwrap_or(0);
    }
    Loop {
        ops,
        errors: errors.load(Ordering::SeqCst),
        secs: start.elapsed().as_secs_f64(),
    }
}

/// Writes `file` as the local store keeps an upload, `n` naming it: a spool file in `root/tmp`,
/// renamed to `root/disk/<n>`, then the file's and the folder's `fsync`.
fn durable_write(root: &Path, file: &[u8], n: u64) -> Result<()> {
    let spooled = root.join("tmp").join(format!("disk-{n}"));
    std::fs::File::create(&spooled)?.write_all(file)?;
    let stored = root.join("disk").join(n.to_string());
    std::fs::rename(&spooled, &stored)?;
    std::fs::File::open(&stored)?.sync_all()?;
    std::fs::File::open(root.join("disk"))?.sync_all()?;
    Ok(())
}

/// The disk's ceiling for the upload row: [`durable_write`] of `file` on [`CONNS`] threads.
async fn disk_loop(root: PathBuf, secs: u64, limit: u64, file: Arc<Vec<u8>>) -> Result<Loop> {
    std::fs::create_dir_all(root.join("tmp"))?;
    std::fs::create_dir_all(root.join("disk"))?;
    let written = {
        let root = root.clone();
        closed_loop(secs, limit, move |n| {
            let (root, file) = (root.clone(), file.clone());
            async move { tokio::task::spawn_blocking(move || durable_write(&root, &file, n)).await? }
        })
        .await
    };
    std::fs::remove_dir_all(root.join("disk"))?;
    Ok(written)
}

/// Applies to `job` as `token`'s candidate, with a fresh upload of `file` first when given;
/// the application's id.
async fn apply_with(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    upload: Option<&(String, bytes::Bytes)>,
    job: i64,
) -> Result<i64> {
    let resume_id = match upload {
        Some((ct, body)) => {
            let r = api(
                client
                    .post(format!("{base}/api/me/resumes"))
                    .bearer_auth(token)
                    .header("content-type", ct)
                    .body(body.clone()),
                201,
            )
            .await?;
            Some(r["id"].as_i64().context("the résumé's id")?)
        }
        None => None,
    };
    let a = api(
        client
            .post(format!("{base}/api/jobs/{job}/applications"))
            .bearer_auth(token)
            .json(&serde_json::json!({"resume_id": resume_id})),
        201,
    )
    .await?;
    a["id"].as_i64().context("the application's id")
}

impl Bench<'_> {
    /// The résumé rows, and their targets against the rows beside them.
    pub(super) async fn run_resumes(&mut self, section: &mut Section) {
        if !self.opts.wants("resume_") {
            return;
        }
        if let Err(e) = self.resume_rows(section).await {
            common::record_failure(section, "resume_", &e);
        }
    }

    async fn resume_rows(&mut self, section: &mut Section) -> Result<()> {
        let tokens = Arc::new(self.candidate_tokens.clone());
        if tokens.is_empty() {
            bail!("no candidates were seeded");
        }
        let limit = tokens.len() as u64 * PER_CANDIDATE;
        let secs = self.opts.duration_secs;
        // Jobs from the top of the seeded range, each row its own slice of `limit` jobs (the
        // downloads' and the RSS row's few below them, the priming run's slice last), so that no
        // (candidate, job) pair repeats (the apply row starts at the bottom).
        let needed = 4 * limit as i64 + 20;
        if self.njobs < needed {
            bail!(
                "the résumé rows need {needed} seeded jobs for {} candidates (--jobs {})",
                tokens.len(),
                self.njobs
            );
        }
        let top = self.first_job_id + self.njobs - 1;
        let file = Arc::new(pdf(1 << 20));
        // As before the apply rows (`prime_apply`): applies for two seconds, below the slices of
        // the rows, then the tables they write analyzed, so that no row measures the plans of an
        // empty `applications`.
        let primer = top - 3 * limit as i64 - 20;
        self.apply_loop(tokens.clone(), primer, 2, limit, None)
            .await;
        if let Ok(pool) = self.pg() {
            sqlx::query("ANALYZE applications, application_history, events, outbox, resumes")
                .execute(pool)
                .await
                .context("analyzing the tables apply writes")?;
        }
        // Applies without a file need no room for résumés: each job of the row's slice takes
        // every candidate in turn, so that the row runs its whole time as the others do.
        common::progress("http", "résumés: applies without a file");
        let plain = self
            .apply_loop(tokens.clone(), top, secs, limit, None)
            .await;
        common::progress("http", "résumés: the disk's durable 1 MiB writes");
        let disk = disk_loop(self.dir.path().join("files"), secs, limit, file.clone()).await?;
        common::progress("http", "résumés: uploads of 1 MiB with their applies");
        let local = self
            .apply_loop(
                tokens.clone(),
                top - limit as i64,
                secs,
                limit,
                Some(file.clone()),
            )
            .await;
        self.delete_resumes(&tokens).await?;
        let mib_s = |rate: f64| rate * file.len() as f64 / f64::from(1 << 20);
        self.checks.push(format!(
            "resume_disk: {:.0} files/s ({:.0} MiB/s, {} errors) written durably as the local \
             store writes an upload; the uploads+applies ran at {:.3}x that; 0.3x the applies \
             without would write {:.0} MiB/s",
            disk.rate(),
            mib_s(disk.rate()),
            disk.errors,
            local.rate() / disk.rate().max(1e-9),
            mib_s(0.3 * plain.rate())
        ));
        let ratio = local.rate() / plain.rate().max(1e-9);
        let detail = format!(
            "{:.0} uploads+applies/s / {:.0} applies/s ({} / {} ops, {} / {} errors); the disk: \
             {:.0} files/s",
            local.rate(),
            plain.rate(),
            local.ops,
            plain.ops,
            local.errors,
            plain.errors,
            disk.rate()
        );
        self.checks.push(format!("resume_apply_local: {detail}"));
        section.targets.push(Target::at_least(
            "resume_apply_local: apply with a 1 MiB résumé (upload + apply) >= 0.3x apply without",
            ratio,
            0.3,
            detail,
        ));
        if let Ok(endpoint) = std::env::var("AWS_ENDPOINT_URL") {
            match self
                .s3_row(
                    &tokens,
                    top - 2 * limit as i64,
                    secs,
                    limit,
                    file.clone(),
                    &endpoint,
                )
                .await
            {
                Ok((s3, puts)) => {
                    let detail = format!(
                        "{:.0} uploads+applies/s to S3 at {endpoint} / {:.0} applies/s ({} ops, {} errors); \
                         the S3 server: {:.0} PUTs/s of the file ({} errors)",
                        s3.rate(),
                        plain.rate(),
                        s3.ops,
                        s3.errors,
                        puts.rate(),
                        puts.errors
                    );
                    self.checks.push(format!("resume_apply_s3: {detail}"));
                    section.targets.push(Target::at_least(
                        "resume_apply_s3: apply with a 1 MiB résumé on FILE_STORE=s3 >= 0.3x apply without",
                        s3.rate() / plain.rate().max(1e-9),
                        0.3,
                        detail,
                    ));
                }
                Err(e) => common::record_failure(section, "resume_apply_s3", &e),
            }
            self.start_server(None).await?;
        } else {
            self.checks.push(
                "resume_apply_s3: not run (no S3-compatible server in AWS_ENDPOINT_URL)".into(),
            );
        }
        self.download_rows(section, &tokens, top - 3 * limit as i64, secs)
            .await?;
        self.rss_row(section, &tokens, top - 3 * limit as i64 - 10)
            .await
    }

    /// Applies (with a fresh upload of `file` first, if given) on [`CONNS`] tasks, to the `jobs`
    /// jobs below `top`: op `n` applies to job `top - n % jobs` as candidate `(n % jobs + n /
    /// jobs) % candidates`, so that no pair repeats in `jobs` × candidates ops. With a file, a
    /// candidate's room for résumés stops the row after `jobs` ops; without, it runs its time.
    async fn apply_loop(
        &self,
        tokens: Arc<Vec<String>>,
        top: i64,
        secs: u64,
        jobs: u64,
        file: Option<Arc<Vec<u8>>>,
    ) -> Loop {
        let limit = if file.is_some() {
            jobs
        } else {
            jobs * tokens.len() as u64
        };
        let client = common::http_client();
        let base = self.base.clone();
        let upload = file.map(|file| Arc::new(multipart(&file)));
        closed_loop(secs, limit, move |n| {
            let (client, base, tokens, upload) =
                (client.clone(), base.clone(), tokens.clone(), upload.clone());
            async move {
                let (job, round) = (n % jobs, n / jobs);
                let token = &tokens[((job + round) % tokens.len() as u64) as usize];
                apply_with(&client, &base, token, upload.as_deref(), top - job as i64).await?;
                Ok(())
            }
        })
        .await
    }

    /// Every seeded candidate's résumés, deleted.
    async fn delete_resumes(&self, tokens: &[String]) -> Result<()> {
        let client = common::http_client();
        for token in tokens {
            let list = api(
                client
                    .get(format!("{}/api/me/resumes", self.base))
                    .bearer_auth(token),
                200,
            )
            .await?;
            for r in list.as_array().into_iter().flatten() {
                let id = r["id"].as_i64().context("a résumé's id")?;
                client
                    .delete(format!("{}/api/me/resumes/{id}", self.base))
                    .bearer_auth(token)
                    .send()
                    .await?;
            }
        }
        Ok(())
    }

    /// The upload + apply row on a server restarted with `FILE_STORE=s3` on a new bucket, and
    /// the S3 server's own rate for the file (its PUTs by this process).
    async fn s3_row(
        &mut self,
        tokens: &Arc<Vec<String>>,
        top: i64,
        secs: u64,
        limit: u64,
        file: Arc<Vec<u8>>,
        endpoint: &str,
    ) -> Result<(Loop, Loop)> {
        let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        let s3 = aws_sdk_s3::Client::from_conf(
            aws_sdk_s3::config::Builder::from(&config)
                .endpoint_url(endpoint)
                .force_path_style(true)
                .build(),
        );
        let bucket = format!("jbbench-{}", uuid::Uuid::new_v4().simple());
        s3.create_bucket()
            .bucket(&bucket)
            .send()
            .await
            .context("creating the bench's bucket")?;
        self.extra_env = vec![
            ("FILE_STORE", "s3".into()),
            ("S3_BUCKET", bucket.clone()),
            ("AWS_ENDPOINT_URL_S3", endpoint.into()),
        ];
        let started = self.start_server(None).await;
        self.extra_env.clear();
        started?;
        let row = self
            .apply_loop(tokens.clone(), top, secs, limit, Some(file.clone()))
            .await;
        self.delete_resumes(tokens).await?;
        // The server's ceiling: the same file PUT by the SDK's client in this process, on as
        // many tasks, under keys of the bucket's own.
        common::progress("http", "résumés: PUTs of 1 MiB straight to the S3 server");
        let body = bytes::Bytes::from(file.to_vec());
        let puts = closed_loop(secs, limit, {
            let (s3, bucket) = (s3.clone(), bucket.clone());
            move |n| {
                let (s3, bucket, body) = (s3.clone(), bucket.clone(), body.clone());
                async move {
                    s3.put_object()
                        .bucket(bucket)
                        .key(format!("ceiling/{n}"))
                        .body(body.into())
                        .send()
                        .await?;
                    Ok(())
                }
            }
        })
        .await;
        // The S3 test server keeps what it is sent; what the ceiling sent goes.
        futures::stream::iter(0..puts.ops + puts.errors)
            .map(|n| {
                s3.delete_object()
                    .bucket(&bucket)
                    .key(format!("ceiling/{n}"))
                    .send()
            })
            .buffer_unordered(CONNS)
            .for_each(|_| async {})
            .await;
        Ok((row, puts))
    }

    /// Downloads of a 100 KiB and a 1 MiB résumé beside `GET /api/jobs/{id}`, same client.
    async fn download_rows(
        &mut self,
        section: &mut Section,
        tokens: &[String],
        top: i64,
        secs: u64,
    ) -> Result<()> {
        let client = common::http_client();
        let token = tokens[0].clone();
        let mut apps = Vec::new();
        for (i, size) in [100 << 10, 1 << 20].into_iter().enumerate() {
            let job = top - i as i64;
            let app = apply_with(
                &client,
                &self.base,
                &token,
                Some(&multipart(&pdf(size))),
                job,
            )
            .await?;
            apps.push((size, app));
        }
        // Each row runs in one-second slices, taking turns with the others for `secs` rounds:
        // the disk's writeback of the rows before, autovacuum and a checkpoint fall on all of
        // them alike instead of on whichever ran first.
        let get = |path: String, token: Option<String>| {
            let (client, base) = (client.clone(), self.base.clone());
            closed_loop(1, u64::MAX, move |_| {
                let (client, url, token) = (client.clone(), format!("{base}{path}"), token.clone());
                async move {
                    let mut req = client.get(url);
                    if let Some(t) = token {
                        req = req.bearer_auth(t);
                    }
                    let res = req.send().await?;
                    if !res.status().is_success() {
                        bail!("{}", res.status());
                    }
                    let mut res = res;
                    while res.chunk().await?.is_some() {}
                    Ok(())
                }
            })
        };
        let mut rows: Vec<(Option<String>, String, Loop)> =
            std::iter::once((None, format!("/api/jobs/{}", self.first_job_id)))
                .chain(apps.iter().map(|(_, app)| {
                    (
                        Some(token.clone()),
                        format!("/api/applications/{app}/resume"),
                    )
                }))
                .map(|(token, path)| (token, path, Loop::default()))
                .collect();
        common::progress("http", "résumés: downloads, taking turns with job_detail");
        for _ in 0..secs.max(1) {
            for (token, path, sum) in &mut rows {
                sum.add(get(path.clone(), token.clone()).await);
            }
        }
        let mut rows = rows.into_iter().map(|(_, _, sum)| sum);
        let detail = rows.next().context("the job_detail row")?;
        for ((size, _), row) in apps.into_iter().zip(rows) {
            let kib = size >> 10;
            let line = format!(
                "{:.0} downloads/s of {kib} KiB / {:.0} GET /api/jobs/{{id}}/s ({} / {} errors)",
                row.rate(),
                detail.rate(),
                row.errors,
                detail.errors
            );
            self.checks
                .push(format!("resume_download_local {kib} KiB: {line}"));
            if size == 100 << 10 {
                section.targets.push(Target::at_least(
                    "resume_download_local: a 100 KiB résumé's download >= 0.5x job_detail",
                    row.rate() / detail.rate().max(1e-9),
                    0.5,
                    line,
                ));
            }
        }
        Ok(())
    }

    /// How far the API's peak RSS rises while a file is uploaded and downloaded, for 1 MiB and
    /// 40 MiB: streamed, it does not follow the size.
    async fn rss_row(&mut self, section: &mut Section, tokens: &[String], top: i64) -> Result<()> {
        let client = common::http_client();
        let token = tokens[1 % tokens.len()].clone();
        let pid = self.server()?.pid;
        let mut rises = Vec::new();
        for (i, size) in [1usize << 20, 40 << 20].into_iter().enumerate() {
            let file = pdf(size);
            common::reset_peak_rss(pid)?;
            let before = common::rss_mb(pid)?;
            let job = top - i as i64;
            let app = apply_with(&client, &self.base, &token, Some(&multipart(&file)), job).await?;
            let got = client
                .get(format!("{}/api/applications/{app}/resume", self.base))
                .bearer_auth(&token)
                .send()
                .await?
                .bytes()
                .await?;
            if got.len() != size {
                bail!("downloaded {} bytes of {size}", got.len());
            }
            rises.push((size >> 20, common::peak_rss_mb(pid)? - before));
        }
        let line = rises
            .iter()
            .map(|(mib, rise)| format!("{mib} MiB: +{rise:.1} MB"))
            .collect::<Vec<_>>()
            .join(", ");
        self.checks.push(format!(
            "resume_rss: the API's peak RSS over an upload and a download, {line}"
        ));
        let grew = rises[1].1 - rises[0].1;
        section.targets.push(Target::at_most(
            "resume_rss: 39 MiB more file raises the API's peak RSS by <= 8 MB more",
            grew,
            8.0,
            line,
        ));
        Ok(())
    }
}
