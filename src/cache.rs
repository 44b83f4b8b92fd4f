//! The job-search cache: in-process (moka) or Redis, under versioned keys.
//!
//! Every cached page is stored under the version that was current when its search began. A job
//! write bumps the version after it commits and before it answers, so a search that starts after
//! that answer looks under the new version and can only find pages computed after the commit.
//! Old versions are never read again and expire with their TTL. If the cache cannot be reached,
//! searches go to the database. A bump that fails leaves the cache bypassed in this process and
//! is retried every second until it succeeds; other processes sharing the Redis can serve pages
//! from before that write only until then (or until the pages' TTL ends).
//!
//! With Redis, each process also keeps the pages it has seen in memory, under the same versioned
//! keys: a hit reads only the version from Redis (one small call) and the page from memory. The
//! version still comes from Redis on every search, so what a search may see is unchanged.
//! A Redis version is an epoch and a counter (`<epoch>:<n>`): the counter is bumped by every
//! write, and the epoch, a random word, is replaced whenever either key is missing (a Redis that
//! restarted empty, a flush, an eviction). A version can therefore never come back, and a page
//! kept in memory under it can never be served again.
//!
//! A page also carries the instant it stops being the answer (`until`: the earliest
//! `expires_at` among the search's matches, past which the search leaves that job out). A page
//! is never served at or after it, in memory or from Redis (which also drops it then).

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
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
    /// Keeps `body` under `version` and `key`, to be served before `until` only.
    async fn store(&self, version: &str, key: &str, body: Bytes, until: Option<DateTime<Utc>>);
    /// Makes every earlier entry unreachable. Called after each job write commits.
    async fn bump(&self);
    async fn ping(&self) -> anyhow::Result<()>;
    /// Retries a version bump that failed, if one is owed (called every second).
    async fn retry_owed_bump(&self) {}
}

/// A cached page and the instant it stops being the answer.
#[derive(Clone)]
struct Page {
    body: Bytes,
    until: Option<DateTime<Utc>>,
}

impl Page {
    /// The page, unless its time has come.
    fn current(self) -> Option<Bytes> {
        match self.until {
            Some(until) if until <= Utc::now() => None,
            _ => Some(self.body),
        }
    }
}

/// The in-process cache: one process's searches see its own writes at once.
pub struct MemoryCache {
    version: AtomicU64,
    pages: moka::future::Cache<String, Page>,
}

/// Pages in memory for `ttl`, weighing at most `max_bytes` together.
fn page_store(ttl: Duration, max_bytes: u64) -> moka::future::Cache<String, Page> {
    moka::future::Cache::builder()
        .weigher(|k: &String, v: &Page| (k.len() + v.body.len()).try_into().unwrap_or(u32::MAX))
        .max_capacity(max_bytes)
        .time_to_live(ttl)
        .build()
}

/// Looks `key` up in `pages`; a page whose time has come is dropped.
async fn current_page(pages: &moka::future::Cache<String, Page>, key: &str) -> Option<Bytes> {
    let page = pages.get(key).await?;
    let body = page.current();
    if body.is_none() {
        pages.invalidate(key).await;
    }
    body
}

impl MemoryCache {
    /// Pages live for `ttl`; together they weigh at most `max_bytes`.
    pub fn new(ttl: Duration, max_bytes: u64) -> MemoryCache {
        MemoryCache {
            version: AtomicU64::new(0),
            pages: page_store(ttl, max_bytes),
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
        match current_page(&self.pages, &format!("{version}:{key}")).await {
            Some(body) => Lookup::Hit(body),
            None => Lookup::Miss { version },
        }
    }

    async fn store(&self, version: &str, key: &str, body: Bytes, until: Option<DateTime<Utc>>) {
        self.pages
            .insert(format!("{version}:{key}"), Page { body, until })
            .await;
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
    version_script: redis::Script,
    bump_script: redis::Script,
    /// The pages this process has read or stored, by `version:key`.
    local: moka::future::Cache<String, Page>,
}

/// The current version. KEYS: counter, epoch; ARGV: a fresh epoch, used if one is missing.
const VERSION_LUA: &str = r#"
local c = redis.call('GET', KEYS[1])
local e = redis.call('GET', KEYS[2])
if not c or not e then
  e = ARGV[1]
  redis.call('SET', KEYS[2], e)
  if not c then
    c = '0'
    redis.call('SET', KEYS[1], c)
  end
end
return e .. ':' .. c
"#;

/// A version bump. KEYS: counter, epoch; ARGV: a fresh epoch, used if either key is missing.
const BUMP_LUA: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('SET', KEYS[2], ARGV[1])
end
return redis.call('INCR', KEYS[1])
"#;

impl RedisCache {
    /// Connects lazily: start-up never waits for (or fails on) Redis. The pages kept in memory
    /// weigh at most `local_max_bytes`.
    pub fn new(
        url: &str,
        prefix: &str,
        ttl: Duration,
        local_max_bytes: u64,
    ) -> anyhow::Result<RedisCache> {
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
            version_script: redis::Script::new(VERSION_LUA),
            bump_script: redis::Script::new(BUMP_LUA),
            local: page_store(ttl, local_max_bytes),
        })
    }

    /// The counter every write bumps (an integer, as it has always been).
    fn version_key(&self) -> String {
        format!("{}search:version", self.prefix)
    }

    fn epoch_key(&self) -> String {
        format!("{}search:epoch", self.prefix)
    }

    fn fresh_epoch() -> String {
        uuid::Uuid::new_v4().simple().to_string()
    }

    /// Each page is stored after the 8 bytes of its `until` (µs since the epoch, big-endian;
    /// `i64::MAX` for none), under a prefix of its own (`page2`), so that a release that stored
    /// bare pages never reads one of these, nor this one one of those.
    fn page_prefix(&self) -> String {
        format!("{}search:page2:", self.prefix)
    }

    async fn try_bump(&self) -> redis::RedisResult<()> {
        let mut conn = self.conn.clone();
        let _: i64 = self
            .bump_script
            .key(self.version_key())
            .key(self.epoch_key())
            .arg(Self::fresh_epoch())
            .invoke_async(&mut conn)
            .await?;
        Ok(())
    }
}

/// A page as Redis keeps it: its `until` (µs, big-endian, `i64::MAX` for none), then its body.
fn encode_page(page: &Page) -> Vec<u8> {
    let until = page.until.map_or(i64::MAX, |t| t.timestamp_micros());
    let mut out = Vec::with_capacity(8 + page.body.len());
    out.extend_from_slice(&until.to_be_bytes());
    out.extend_from_slice(&page.body);
    out
}

fn decode_page(stored: Vec<u8>) -> Option<Page> {
    let head: [u8; 8] = stored.get(..8)?.try_into().ok()?;
    let until = match i64::from_be_bytes(head) {
        i64::MAX => None,
        micros => Some(DateTime::from_timestamp_micros(micros)?),
    };
    Some(Page {
        body: Bytes::from(stored).slice(8..),
        until,
    })
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
        let version: redis::RedisResult<String> = self
            .version_script
            .key(self.version_key())
            .key(self.epoch_key())
            .arg(Self::fresh_epoch())
            .invoke_async(&mut conn)
            .await;
        let version = match version {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(error = %e, "search cache unavailable; reading the database");
                return Lookup::Unavailable;
            }
        };
        let local_key = format!("{version}:{key}");
        if let Some(body) = current_page(&self.local, &local_key).await {
            return Lookup::Hit(body);
        }
        // Not seen here: perhaps another process stored it.
        let found: redis::RedisResult<Option<Vec<u8>>> = redis::cmd("GET")
            .arg(format!("{}{local_key}", self.page_prefix()))
            .query_async(&mut conn)
            .await;
        match found {
            Ok(Some(stored)) => match decode_page(stored) {
                Some(page) => match page.clone().current() {
                    Some(body) => {
                        self.local.insert(local_key, page).await;
                        Lookup::Hit(body)
                    }
                    None => Lookup::Miss { version },
                },
                None => {
                    tracing::warn!("a cached search page could not be read; searching instead");
                    Lookup::Miss { version }
                }
            },
            Ok(None) => Lookup::Miss { version },
            Err(e) => {
                tracing::warn!(error = %e, "search cache unavailable; reading the database");
                Lookup::Unavailable
            }
        }
    }

    async fn store(&self, version: &str, key: &str, body: Bytes, until: Option<DateTime<Utc>>) {
        // Redis drops the page at its TTL or at `until`, whichever comes first.
        let ttl_ms = match until {
            Some(until) => {
                let left = (until - Utc::now()).num_milliseconds();
                if left <= 0 {
                    return;
                }
                left.min(self.ttl_secs as i64 * 1000)
            }
            None => self.ttl_secs as i64 * 1000,
        };
        let page = Page { body, until };
        let encoded = encode_page(&page);
        self.local.insert(format!("{version}:{key}"), page).await;
        let mut conn = self.conn.clone();
        let stored: redis::RedisResult<()> = redis::cmd("SET")
            .arg(format!("{}{version}:{key}", self.page_prefix()))
            .arg(encoded)
            .arg("PX")
            .arg(ttl_ms)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_page_is_not_served_from_its_until() {
        let cache = MemoryCache::new(Duration::from_secs(300), 1 << 20);
        let Lookup::Miss { version } = cache.lookup("k").await else {
            panic!("an empty cache")
        };
        let soon = Utc::now() + chrono::Duration::milliseconds(200);
        cache
            .store(&version, "k", Bytes::from_static(b"page"), Some(soon))
            .await;
        cache
            .store(&version, "forever", Bytes::from_static(b"other"), None)
            .await;
        assert!(matches!(cache.lookup("k").await, Lookup::Hit(b) if b == "page"));
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(matches!(cache.lookup("k").await, Lookup::Miss { .. }));
        assert!(matches!(cache.lookup("forever").await, Lookup::Hit(_)));
    }

    #[test]
    fn a_redis_page_keeps_its_until() {
        let until = DateTime::from_timestamp_micros(1_796_810_400_123_456);
        for until in [until, None] {
            let page = Page {
                body: Bytes::from_static(b"{\"items\":[]}"),
                until,
            };
            let back = decode_page(encode_page(&page)).expect("a page");
            assert_eq!((back.body, back.until), (page.body, page.until));
        }
        assert!(decode_page(b"short".to_vec()).is_none());
    }
}
