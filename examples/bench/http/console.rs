//! The operator's console rows (`console_queue`, `console_dead_letters`), on processed events
//! and dead letters added for them.

use super::bench::Bench;
use super::scenario::{Measured, Scenario};
use crate::common::{self, LuaValue};
use crate::report::Section;
use anyhow::{Context, Result, ensure};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Processed events and dead letters added for the console rows.
pub(super) const CONSOLE_EVENTS: i64 = 100_000;

pub(super) const CONSOLE_DEAD_LETTERS: i64 = 10_000;

impl Bench<'_> {
    /// console_queue, console_dead_letters, on the seeded events and dead letters.
    pub(super) async fn run_console(&mut self, section: &mut Section, out: &mut Vec<Measured>) {
        let dir = self.dir.path().to_path_buf();
        match self.seed_console().await {
            Ok(token) => {
                for (name, mode) in [
                    ("console_queue", "queue"),
                    ("console_dead_letters", "dead_letters"),
                ] {
                    match common::wrk_script(&dir, name, include_str!("wrk_console.lua")) {
                        Ok(s) => {
                            let mut sc = Console {
                                name,
                                mode,
                                params: dir.join(format!("{name}.params.lua")),
                                script: s,
                                token: token.clone(),
                                runs: 0,
                            };
                            self.levels(&mut sc, section, out).await;
                        }
                        Err(e) => common::record_failure(section, name, &e),
                    }
                }
            }
            Err(e) => common::record_failure(section, "console seeding", &e),
        }
    }
}

impl Bench<'_> {
    /// The console rows' data: processed events and dead letters, and an operator given the
    /// rights by the binary, as an operator would; returns the operator's token.
    async fn seed_console(&mut self) -> Result<String> {
        let t = Instant::now();
        let pool = self.pg()?.clone();
        sqlx::query(&format!(
            "INSERT INTO processed_events (event_id, status, attempts, last_error, \
             first_failed_at, updated_at) \
             SELECT 'bench-' || g, \
               CASE WHEN g % 50 = 0 THEN 'dead' WHEN g % 40 = 0 THEN 'pending' ELSE 'done' END, \
               CASE WHEN g % 50 = 0 THEN 5 WHEN g % 40 = 0 THEN 1 ELSE 0 END, \
               CASE WHEN g % 40 = 0 OR g % 50 = 0 THEN '451 try again later' END, \
               NULL, \
               (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT - g * (7200000 / {CONSOLE_EVENTS}) \
             FROM generate_series(1, {CONSOLE_EVENTS}) g"
        ))
        .execute(&pool)
        .await
        .context("seeding processed events")?;
        sqlx::query(&format!(
            "INSERT INTO dead_letters (event_id, reason, attempts, body, first_failed_at, \
             last_failed_at, invalid) \
             SELECT 'bench-dead-' || g, 'permanent failure: 550 mailbox unavailable', 5, \
               '{{\"type\":\"application.status_changed\",\"event_id\":\"bench-dead-' || g || '\"}}', \
               (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT - g * 1000, \
               (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT - g * 100, FALSE \
             FROM generate_series(1, {CONSOLE_DEAD_LETTERS}) g"
        ))
        .execute(&pool)
        .await
        .context("seeding dead letters")?;
        sqlx::query("VACUUM ANALYZE processed_events, dead_letters")
            .execute(&pool)
            .await?;
        let client = common::http_client();
        let email = "operator@bench.example";
        let token = self
            .account(&client, email, "Operator", "candidate")
            .await?;
        let db_url = self.db.as_ref().context("no database")?.url.clone();
        let out = std::process::Command::new(&self.opts.bin)
            .args(["admin", "grant", email])
            .env("DATABASE_URL", db_url)
            .env("RUST_LOG", "warn")
            .output()
            .context("running jobboard admin grant")?;
        ensure!(
            out.status.success(),
            "jobboard admin grant failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.seed_steps
            .push(("console events and dead letters", t.elapsed().as_secs_f64()));
        self.checks.push(format!(
            "console: {CONSOLE_EVENTS} processed events and {CONSOLE_DEAD_LETTERS} dead letters \
             added in {:.1} s",
            t.elapsed().as_secs_f64()
        ));
        Ok(token)
    }
}

/// An operator's reads (`wrk_console.lua`).
struct Console {
    name: &'static str,
    mode: &'static str,
    script: PathBuf,
    params: PathBuf,
    token: String,
    runs: i64,
}

impl Scenario for Console {
    fn name(&self) -> &'static str {
        self.name
    }
    fn script(&self) -> &Path {
        &self.script
    }
    fn prepare(&mut self, _conns: u32, _secs: u64, _warmup: bool) -> Result<Vec<String>> {
        self.runs += 1;
        common::lua_params(
            &self.params,
            &[
                ("token", LuaValue::Str(self.token.clone())),
                ("mode", LuaValue::Str(self.mode.to_string())),
                ("pages", LuaValue::Int(CONSOLE_DEAD_LETTERS / 20)),
                ("seed", LuaValue::Int(3000 + self.runs)),
            ],
        )?;
        Ok(vec![self.params.display().to_string()])
    }
}
