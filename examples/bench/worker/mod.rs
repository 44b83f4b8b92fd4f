//! Worker scenarios: status-change events drained by `jobboard worker` processes, by queue
//! (`db` on PostgreSQL and SQLite, `sqs`), mail backend (file, a local SMTP sink with 0 ms or
//! 50 ms per message, or SES v2 on the SQS test server behind a recording proxy), claim mode and
//! batching, with one and four processes.
//!
//! Each scenario starts from a copy of one seeded database, so every run sees the same data:
//! - **drain**: the seeded events wait on the queue; the worker processes start and the harness
//!   counts the emails (from the sink, or the files) until every event has one. Events/s is the
//!   events over the time from the start of the processes to the last email accepted. The
//!   processes then stop (SIGTERM), so PostgreSQL has counted their commits.
//! - **latency**: fresh worker processes, and the harness commits status changes at half the
//!   drain rate; the end-to-end latency of each event runs from its commit returning to its
//!   email being accepted.
//!
//! Every event must end with exactly one email: duplicates and losses are counted over both
//! phases, and an email for an event the harness did not make counts as a duplicate.
//!
//! Ceilings measured in the same run: pgbench running the worker's per-event work (receive,
//! claim, read the email data, record, acknowledge) as one transaction per event over the same
//! seeded events, at as many clients as a worker has database connections; and the SQS server's
//! own send and receive+delete rates with no worker.
//!
//! The scenarios are listed in [`scenarios`]; [`seed`] seeds the databases they copy,
//! [`ceilings`] measures the ceilings, [`phases`] runs one scenario's drain and latency phases
//! with the mail [`sinks`], and [`sql`] runs a statement on a database by its URL.

mod ceilings;
pub(crate) mod phases;
pub(crate) mod scenarios;
pub(crate) mod seed;
pub(crate) mod sinks;
pub(crate) mod sql;
mod webhooks;

use crate::Opts;
use crate::common::{progress, record_failure};
use crate::report::{Section, Target};
use anyhow::Result;
use ceilings::{pgbench_worker_shaped, sqs_ceiling};
use phases::{Figures, run_scenario};
use scenarios::{CONCURRENCY, Db, Mail, POOL, SECTION, Scenario};
use seed::seed;
use serde_json::json;
use std::collections::HashMap;

pub async fn run(opts: &Opts) -> Result<Vec<Section>> {
    let events = opts
        .events
        .unwrap_or(if opts.quick { 2_000 } else { 20_000 })
        .max(40);
    let sqs_events = (events / 20).max(100);
    let latency = events / 10;
    let mut section = Section {
        name: SECTION.into(),
        columns: [
            "scenario",
            "events",
            "events/s",
            "e2e p50 ms",
            "e2e p99 ms",
            "commits/event",
            "dup",
            "lost",
            "vs ceiling",
        ]
        .map(String::from)
        .to_vec(),
        json: json!({"scenarios": [], "ceilings": {}}),
        ..Section::default()
    };
    progress(SECTION, format!("seeding {events} events"));
    let seed = match seed(opts, events, latency).await {
        Ok(s) => s,
        Err(e) => {
            record_failure(&mut section, "seeding", &e);
            return Ok(vec![section]);
        }
    };

    // Ceilings first, on copies of the same seed.
    let pgbench = match pgbench_worker_shaped(opts, &seed).await {
        Ok(tps) => {
            section.rows.push(vec![
                format!("ceiling: pgbench worker-shaped, {POOL} clients"),
                events.to_string(),
                format!("{tps:.0}"),
                "-".into(),
                "-".into(),
                "1".into(),
                "-".into(),
                "-".into(),
                "1.00".into(),
            ]);
            section.json["ceilings"]["pgbench_worker_tps"] = json!(tps);
            Some(tps)
        }
        Err(e) => {
            record_failure(&mut section, "pgbench worker-shaped ceiling", &e);
            None
        }
    };
    let sqs_available = std::env::var("AWS_ENDPOINT_URL").is_ok();
    let moto = if sqs_available {
        match sqs_ceiling(sqs_events).await {
            Ok((send, recv)) => {
                section.rows.push(vec![
                    "ceiling: SQS server send (batches of 10)".into(),
                    sqs_events.to_string(),
                    format!("{send:.0}"),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ]);
                section.rows.push(vec![
                    "ceiling: SQS server receive+delete (batches of 10)".into(),
                    sqs_events.to_string(),
                    format!("{recv:.0}"),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "1.00".into(),
                ]);
                section.json["ceilings"]["sqs_send_per_sec"] = json!(send);
                section.json["ceilings"]["sqs_receive_delete_per_sec"] = json!(recv);
                Some(recv)
            }
            Err(e) => {
                record_failure(&mut section, "SQS server ceiling", &e);
                None
            }
        }
    } else {
        section
            .notes
            .push("AWS_ENDPOINT_URL is not set: the SQS scenarios did not run.".into());
        None
    };

    let slow = (events / 5).max(200);
    let mut scenarios = scenarios::all(events, slow, sqs_events, sqs_available);
    if !opts.scenario.is_empty() {
        scenarios.retain(|s| opts.scenario.iter().any(|o| s.name().contains(o.as_str())));
    }
    let mut results: HashMap<String, Figures> = HashMap::new();
    for sc in &scenarios {
        let name = sc.name();
        progress(SECTION, format!("{name}: {} events", sc.events));
        match run_scenario(opts, &seed, sc, latency.min(sc.events)).await {
            Ok(f) => {
                let ceiling = if sc.sqs {
                    moto.map(|m| f.events_per_sec / m)
                } else if sc.db == Db::Postgres && sc.procs == 1 && sc.mail == Mail::File {
                    pgbench.map(|p| f.events_per_sec / p)
                } else {
                    None
                };
                section.rows.push(vec![
                    name.clone(),
                    f.events.to_string(),
                    format!("{:.0}", f.events_per_sec),
                    format!("{:.1}", f.latency_p50_ms),
                    format!("{:.1}", f.latency_p99_ms),
                    f.commits_per_event
                        .map(|c| format!("{c:.2}"))
                        .unwrap_or_else(|| "-".into()),
                    f.duplicates.to_string(),
                    f.losses.to_string(),
                    ceiling
                        .map(|c| format!("{c:.2}"))
                        .unwrap_or_else(|| "-".into()),
                ]);
                let mut j = serde_json::to_value(&f)?;
                j["scenario"] = json!(name);
                j["ratio_to_ceiling"] = json!(ceiling);
                if let Some(a) = section.json["scenarios"].as_array_mut() {
                    a.push(j);
                }
                if f.duplicates > 0 || f.losses > 0 {
                    record_failure(
                        &mut section,
                        &name,
                        &anyhow::anyhow!(
                            "{} duplicates and {} losses in a run without faults",
                            f.duplicates,
                            f.losses
                        ),
                    );
                }
                results.insert(name, f);
            }
            Err(e) => record_failure(&mut section, &name, &e),
        }
    }

    // Webhook deliveries at the email rows' settings, with and without a hanging endpoint.
    let mut hooks: HashMap<bool, f64> = HashMap::new();
    for hanging in [false, true] {
        let name = webhooks::name(hanging);
        if !opts.scenario.is_empty() && !opts.scenario.iter().any(|o| name.contains(o.as_str())) {
            continue;
        }
        progress(SECTION, format!("{name}: {events} deliveries"));
        match webhooks::run_webhooks(opts, &seed, events, hanging).await {
            Ok(f) => {
                section.rows.push(vec![
                    name.clone(),
                    f.deliveries.to_string(),
                    format!("{:.0}", f.deliveries_per_sec),
                    "-".into(),
                    "-".into(),
                    format!("{:.2}", f.commits_per_delivery),
                    f.duplicates.to_string(),
                    f.losses.to_string(),
                    "-".into(),
                ]);
                let mut j = serde_json::to_value(&f)?;
                j["scenario"] = json!(name);
                if let Some(a) = section.json["scenarios"].as_array_mut() {
                    a.push(j);
                }
                if f.duplicates > 0 || f.losses > 0 {
                    record_failure(
                        &mut section,
                        &name,
                        &anyhow::anyhow!(
                            "{} duplicates and {} losses in a run without faults",
                            f.duplicates,
                            f.losses
                        ),
                    );
                }
                if hanging && f.hanging_requests == 0 {
                    record_failure(
                        &mut section,
                        &name,
                        &anyhow::anyhow!("the hanging endpoint was never tried"),
                    );
                }
                hooks.insert(hanging, f.deliveries_per_sec);
            }
            Err(e) => record_failure(&mut section, &name, &e),
        }
    }

    let s = Scenario::new;
    let defaults = Scenario::defaults;
    let rate = |sc: Scenario| results.get(&sc.name()).map(|f| f.events_per_sec);
    let mail50 = s(Db::Postgres, false, Mail::Smtp(50), "lease", true, 1, 0);
    if let (Some(w), Some(m)) = (hooks.get(&false), rate(mail50.clone())) {
        section.targets.push(Target::at_least(
            "webhooks to a 50 ms receiver >= 0.9x the 50 ms mail row",
            w / m,
            0.9,
            format!(
                "{w:.0} deliveries/s ({} endpoints) / {m:.0} events/s ({})",
                webhooks::ENDPOINTS,
                mail50.name()
            ),
        ));
    }
    if let (Some(h), Some(m)) = (
        rate(mail50.clone().beside_a_hanging_hook()),
        rate(mail50.clone()),
    ) {
        section.targets.push(Target::at_least(
            "emails beside a hanging webhook endpoint >= 0.9x the 50 ms mail row",
            h / m,
            0.9,
            format!(
                "{h:.0} / {m:.0} events/s, each event also due to an endpoint that never answers \
                 within the 10 s deadline"
            ),
        ));
    }
    if let (Some(h), Some(w)) = (hooks.get(&true), hooks.get(&false)) {
        section.targets.push(Target::at_least(
            "webhooks: one endpoint hanging keeps the others' rate >= 0.9x",
            h / w,
            0.9,
            format!("{h:.0} / {w:.0} deliveries/s to the answering endpoints"),
        ));
    }
    if let Some(p) = pgbench {
        if let Some(r) = rate(s(Db::Postgres, false, Mail::File, "lease", false, 1, 0)) {
            section.targets.push(Target::at_least(
                "worker PG file, unbatched >= 0.5x pgbench worker-shaped",
                r / p,
                0.5,
                format!("{r:.0} events/s / {p:.0} tps ({POOL} connections each)"),
            ));
        }
        if let Some(r) = rate(s(Db::Postgres, false, Mail::File, "lease", true, 1, 0)) {
            section.targets.push(Target::at_least(
                "worker PG file, batched >= 3x pgbench worker-shaped",
                r / p,
                3.0,
                format!("{r:.0} events/s / {p:.0} tps ({POOL} connections each)"),
            ));
        }
    }
    if let (Some(l), Some(t)) = (
        rate(s(Db::Postgres, false, Mail::Smtp(50), "lease", true, 1, 0)),
        rate(s(
            Db::Postgres,
            false,
            Mail::Smtp(50),
            "transaction",
            true,
            1,
            0,
        )),
    ) {
        section.targets.push(Target::at_least(
            "50 ms mail: lease >= 5x transaction",
            l / t,
            5.0,
            format!("{l:.0} / {t:.0} events/s, pool of {POOL} each"),
        ));
    }
    if let (Some(l), Some(t)) = (rate(defaults("lease", 0)), rate(defaults("transaction", 0))) {
        section.targets.push(Target::at_least(
            "50 ms mail, all defaults: lease >= 3x transaction",
            l / t,
            3.0,
            format!(
                "{l:.0} / {t:.0} events/s with DATABASE_POOL_SIZE, WORKER_CONCURRENCY and \
                 WORKER_BATCH unset"
            ),
        ));
    }
    section.notes.extend([
        format!(
            "Every worker process: DATABASE_POOL_SIZE={POOL}, WORKER_CONCURRENCY={CONCURRENCY}, \
             batch = WORKER_BATCH (lease mode); events/s = (events - 1) / (first .. last email \
             accepted), so process start-up (in the JSON) is left out. Rows ending in \
             `defaults` set none of those three (DATABASE_POOL_SIZE, WORKER_CONCURRENCY, \
             WORKER_BATCH): every setting a user would not think to change is at its default."
        ),
        "e2e = status-change commit returning in the harness .. email accepted (sink's 250 \
         after DATA, the .eml file written, or the SES test server's answer to SendEmail), with \
         the harness committing at half the scenario's drain rate."
            .into(),
        "commits/event: xact_commit of the scenario's database over the drain (processes \
         stopped, so their counts are flushed), divided by the events."
            .into(),
        format!(
            "vs ceiling: PostgreSQL file scenarios with one process against pgbench running the \
             worker's per-event work as one transaction ({POOL} clients, same seeded events); \
             SQS scenarios against the SQS server's own receive+delete rate."
        ),
        format!(
            "Webhook rows: the deliveries of {events} events, round-robin over {} endpoints \
             (4 lanes each: as many in flight as WORKER_CONCURRENCY) whose receiver answers in \
             50 ms, one process at the same settings; `+ 1 hanging` gives one more endpoint the \
             same share, its receiver answering past the 10 s deadline, and counts only the \
             others. commits/event there is per delivery.",
            webhooks::ENDPOINTS
        ),
        format!(
            "50 ms transaction-mode runs use {slow} events (each holds a connection for the \
             whole send; the rate, not the count, is the figure); SQS and SES runs use \
             {sqs_events} (the test server answers each call in Python)."
        ),
    ]);
    drop(seed);
    Ok(vec![section])
}
