//! The job-search cache: in-process (moka) or Redis, under versioned keys.
//!
//! Every cached page is stored under the version that was current when its search began. A job
//! write bumps the version after it commits and before it answers, so a search that starts after
//! that answer looks under the new version and can only find pages computed after the commit.
//! Old versions are never read again and expire with their TTL. If the cache cannot be reached,
//! searches go to the database. A bump that fails leaves the cache bypassed in this process and
//! is retried every second until it succeeds; other processes sharing the Redis can serve pages
//! from before that write only until then (or until the pages' TTL ends).

use async_trait::async_trait;
use bytes::Bytes;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// What a cache look-up found.
#[derive(Debug)]
pub enum Lookup {
    Hit(Bytes),
    /// Not cached; store the page under this version.
    Miss {
        version: String,
    },
    /// The cache is unreachable: read the database and do not store.
    Unavailable,
}

#[async_trait]
pub trait SearchCache: Send + Sync + 'static {
    /// `memory` or `redis`.
    fn kind(&self) -> &'static str;
    async fn lookup(&self, key: &str) -> Lookup;
    async fn store(&self, version: &str, key: &str, body: Bytes);
    /// Makes every earlier entry unreachable. Called after each job write commits.
    async fn bump(&self);
    async fn ping(&self) -> anyhow::Result<()>;
    /// Retries a version bump that failed, if one is owed (called every second).
    async fn retry_owed_bump(&self) {}
}

/// The in-process cache: one process's searches see its own writes at once.
pub struct MemoryCache {
    version: AtomicU64,
    pages: moka::future::Cache<String, Bytes>,
}

impl MemoryCache {
    /// Pages live for `ttl`; together they weigh at most `max_bytes`.
    pub fn new(ttl: Duration, max_bytes: u64) -> MemoryCache {
        MemoryCache {
            version: AtomicU64::new(0),
            pages: moka::future::Cache::builder()
                .weigher(|k: &String, v: &Bytes| (k.len() + v.len()).try_into().unwrap_or(u32::MAX))
                .max_capacity(max_bytes)
                .time_to_live(ttl)
                .build(),
        }
    }
}

#[async_trait]
impl SearchCache for MemoryCache {
    fn kind(&self) -> &'static str {
        "memory"
    }

    async fn lookup(&self, key: &str) -> Lookup {
        let version = self.version.load(Ordering::SeqCst).to_string();
        match self.pages.get(&format!("{version}:{key}")).await {
            Some(body) => Lookup::Hit(body),
            None => Lookup::Miss { version },
        }
    }

    async fn store(&self, version: &str, key: &str, body: Bytes) {
        self.pages.insert(format!("{version}:{key}"), body).await;
    }

    async fn bump(&self) {
        self.version.fetch_add(1, Ordering::SeqCst);
    }

    async fn ping(&self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// The Redis cache: shared by every process, so all of them see a write once it has answered.
pub struct RedisCache {
    conn: redis::aio::ConnectionManager,
    prefix: String,
    ttl_secs: u64,
    /// Set when a bump failed: until one succeeds, entries may be stale, so none is used.
    bump_owed: AtomicBool,
    lookup_script: redis::Script,
}

const LOOKUP_LUA: &str = r#"
local v = redis.call('GET', KEYS[1]) or '0'
local body = redis.call('GET', ARGV[1] .. v .. ':' .. ARGV[2])
if body then return {v, body} else return {v} end
"#;

impl RedisCache {
    /// Connects lazily: start-up never waits for (or fails on) Redis.
    pub fn new(url: &str, prefix: &str, ttl: Duration) -> anyhow::Result<RedisCache> {
        let client = redis::Client::open(url)?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_millis(500)))
            .set_response_timeout(Some(Duration::from_millis(500)))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500));
        let conn = redis::aio::ConnectionManager::new_lazy_with_config(client, config)?;
        Ok(RedisCache {
            conn,
            prefix: prefix.to_string(),
            ttl_secs: ttl.as_secs().max(1),
            bump_owed: AtomicBool::new(false),
            lookup_script: redis::Script::new(LOOKUP_LUA),
        })
    }

    fn version_key(&self) -> String {
        format!("{}search:version", self.prefix)
    }

    fn page_prefix(&self) -> String {
        format!("{}search:page:", self.prefix)
    }

    async fn try_bump(&self) -> redis::RedisResult<()> {
        let mut conn = self.conn.clone();
        let _: i64 = redis::cmd("INCR")
            .arg(self.version_key())
            .query_async(&mut conn)
            .await?;
        Ok(())
    }
}

#[async_trait]
impl SearchCache for RedisCache {
    fn kind(&self) -> &'static str {
        "redis"
    }

    async fn lookup(&self, key: &str) -> Lookup {
        if self.bump_owed.load(Ordering::SeqCst) {
            match self.try_bump().await {
                Ok(()) => {
                    self.bump_owed.store(false, Ordering::SeqCst);
                    tracing::info!("search cache reachable again; owed version bump done");
                }
                Err(e) => {
                    tracing::warn!(error = %e, "search cache unavailable; reading the database");
                    return Lookup::Unavailable;
                }
            }
        }
        let mut conn = self.conn.clone();
        // The script answers [version] on a miss and [version, page] on a hit.
        let found: redis::RedisResult<Vec<Vec<u8>>> = self
            .lookup_script
            .key(self.version_key())
            .arg(self.page_prefix())
            .arg(key)
            .invoke_async(&mut conn)
            .await;
        match found {
            Ok(mut parts) if parts.len() == 2 => {
                Lookup::Hit(Bytes::from(parts.pop().unwrap_or_default()))
            }
            Ok(parts) if parts.len() == 1 => Lookup::Miss {
                version: String::from_utf8_lossy(&parts[0]).into_owned(),
            },
            Ok(parts) => {
                tracing::warn!(
                    parts = parts.len(),
                    "unexpected search cache answer; reading the database"
                );
                Lookup::Unavailable
            }
            Err(e) => {
                tracing::warn!(error = %e, "search cache unavailable; reading the database");
                Lookup::Unavailable
            }
        }
    }

    async fn store(&self, version: &str, key: &str, body: Bytes) {
        let mut conn = self.conn.clone();
        let stored: redis::RedisResult<()> = redis::cmd("SET")
            .arg(format!("{}{version}:{key}", self.page_prefix()))
            .arg(body.as_ref())
            .arg("EX")
            .arg(self.ttl_secs)
            .query_async(&mut conn)
            .await;
        if let Err(e) = stored {
            tracing::warn!(error = %e, "could not store a search page in the cache");
        }
    }

    async fn bump(&self) {
        if let Err(e) = self.try_bump().await {
            // Until a bump succeeds this process must not trust any cached page, and the other
            // processes need the bump too: `retry_owed_bump` keeps trying in the background.
            self.bump_owed.store(true, Ordering::SeqCst);
            tracing::warn!(error = %e, "search cache version bump failed; bypassing the cache until it succeeds");
        }
    }

    async fn retry_owed_bump(&self) {
        if self.bump_owed.load(Ordering::SeqCst) && self.try_bump().await.is_ok() {
            self.bump_owed.store(false, Ordering::SeqCst);
            tracing::info!("search cache reachable again; owed version bump done");
        }
    }

    async fn ping(&self) -> anyhow::Result<()> {
        let mut conn = self.conn.clone();
        let pong: String = redis::cmd("PING").query_async(&mut conn).await?;
        anyhow::ensure!(pong == "PONG", "unexpected PING answer");
        Ok(())
    }
}
