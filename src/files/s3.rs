//! `FILE_STORE=s3`: files in an S3 bucket (`S3_BUCKET`), under `S3_PREFIX` and the key, through
//! the AWS SDK for Rust; the region and credentials as the SDK finds them, the endpoint from
//! `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL` (an S3-compatible server, addressed by path).
//! A file is sent from its spool file with its length, never held in memory whole.

use super::{ByteStream, FileStore, Spooled};
use anyhow::Context;
use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream as S3Body;
use chrono::{DateTime, Utc};
use futures::TryStreamExt;

pub struct S3Files {
    client: Client,
    bucket: String,
    prefix: String,
}

impl S3Files {
    /// A client from the usual AWS environment, with `endpoint_url` for S3 alone.
    pub async fn connect(bucket: &str, prefix: &str, endpoint_url: Option<&str>) -> S3Files {
        let shared = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        let mut config = aws_sdk_s3::config::Builder::from(&shared);
        if let Some(endpoint) = endpoint_url {
            config = config.endpoint_url(endpoint);
        }
        // An S3-compatible server is addressed by path: its name has no bucket subdomains.
        if endpoint_url.is_some() || shared.endpoint_url().is_some() {
            config = config.force_path_style(true);
        }
        S3Files {
            client: Client::from_conf(config.build()),
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        }
    }

    fn object(&self, key: &str) -> anyhow::Result<String> {
        anyhow::ensure!(super::valid_key(key), "not a file key: {key:?}");
        Ok(format!("{}{key}", self.prefix))
    }
}

#[async_trait]
impl FileStore for S3Files {
    fn kind(&self) -> &'static str {
        "s3"
    }

    async fn put(&self, key: &str, file: Spooled) -> anyhow::Result<()> {
        let object = self.object(key)?;
        let body = S3Body::from_path(file.path())
            .await
            .context("reading the upload's spool file")?;
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(&object)
            .content_length(i64::try_from(file.size)?)
            .content_type(file.kind.content_type())
            .body(body)
            .send()
            .await
            .map_err(|e| anyhow::anyhow!("{}", aws_sdk_s3::error::DisplayErrorContext(e)))
            .with_context(|| format!("putting s3://{}/{object}", self.bucket))?;
        Ok(())
    }

    async fn get(&self, key: &str) -> anyhow::Result<Option<(ByteStream, u64)>> {
        let object = self.object(key)?;
        let out = match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(&object)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => return Ok(None),
            Err(e) => {
                return Err(anyhow::anyhow!(
                    "{}",
                    aws_sdk_s3::error::DisplayErrorContext(e)
                ))
                .with_context(|| format!("getting s3://{}/{object}", self.bucket));
            }
        };
        let size = out
            .content_length()
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or_default();
        let stream = tokio_util::io::ReaderStream::new(out.body.into_async_read());
        Ok(Some((
            Box::pin(stream.map_err(std::io::Error::other)),
            size,
        )))
    }

    async fn delete(&self, key: &str) -> anyhow::Result<()> {
        let object = self.object(key)?;
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(&object)
            .send()
            .await
            .map_err(|e| anyhow::anyhow!("{}", aws_sdk_s3::error::DisplayErrorContext(e)))
            .with_context(|| format!("deleting s3://{}/{object}", self.bucket))?;
        Ok(())
    }

    async fn list_before(
        &self,
        prefix: &str,
        before: DateTime<Utc>,
        after: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<Vec<String>> {
        let mut keys = Vec::new();
        let mut token = None;
        loop {
            let out = self
                .client
                .list_objects_v2()
                .bucket(&self.bucket)
                .prefix(format!("{}{prefix}", self.prefix))
                .set_start_after(after.map(|a| format!("{}{a}", self.prefix)))
                .set_continuation_token(token.take())
                .send()
                .await
                .map_err(|e| anyhow::anyhow!("{}", aws_sdk_s3::error::DisplayErrorContext(e)))
                .with_context(|| format!("listing s3://{}/{}{prefix}", self.bucket, self.prefix))?;
            for object in out.contents() {
                let (Some(name), Some(modified)) = (object.key(), object.last_modified()) else {
                    continue;
                };
                let Some(key) = name.strip_prefix(&self.prefix) else {
                    continue;
                };
                if modified.secs() < before.timestamp() && super::valid_key(key) {
                    keys.push(key.to_string());
                    if keys.len() == limit {
                        return Ok(keys);
                    }
                }
            }
            match out.next_continuation_token() {
                Some(next) if out.is_truncated() == Some(true) => token = Some(next.to_string()),
                _ => return Ok(keys),
            }
        }
    }
}
