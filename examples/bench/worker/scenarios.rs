//! The worker scenarios: what each one sets (database, queue, mail, claim mode, batching,
//! processes), its name, and the list of them in the order they run.

/// Database connections per worker process, and pgbench clients for the worker-shaped ceiling.
pub(crate) const POOL: u32 = 8;

/// Events in flight per worker process.
pub(crate) const CONCURRENCY: usize = 64;

/// The section's name, in the report and the progress lines.
pub(super) const SECTION: &str = "worker";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Db {
    Postgres,
    Sqlite,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mail {
    File,
    /// The SMTP sink, with this many ms added per message.
    Smtp(u64),
    /// Amazon SES's v2 API on the SQS test server (moto), behind a recording proxy.
    Ses,
}

#[derive(Debug, Clone)]
pub(super) struct Scenario {
    pub(super) db: Db,
    pub(super) sqs: bool,
    pub(super) mail: Mail,
    pub(super) mode: &'static str,
    pub(super) batch: bool,
    pub(super) procs: usize,
    pub(super) events: usize,
    /// Every setting the scenario does not need left at its default (pool, concurrency, batch).
    pub(super) defaults: bool,
    /// Each event also has a webhook delivery due to an endpoint whose receiver never answers
    /// within the worker's deadline: the emails beside a hanging endpoint.
    pub(super) hanging_hook: bool,
}

impl Scenario {
    /// A scenario that sets the pool, the concurrency and the batch.
    pub(super) fn new(
        db: Db,
        sqs: bool,
        mail: Mail,
        mode: &'static str,
        batch: bool,
        procs: usize,
        events: usize,
    ) -> Scenario {
        Scenario {
            db,
            sqs,
            mail,
            mode,
            batch,
            procs,
            events,
            defaults: false,
            hanging_hook: false,
        }
    }

    /// The scenario with a hanging webhook endpoint that takes every event.
    pub(super) fn beside_a_hanging_hook(self) -> Scenario {
        Scenario {
            hanging_hook: true,
            ..self
        }
    }

    /// PostgreSQL, mail taking 50 ms, one process, and every setting it does not need left at
    /// its default.
    pub(super) fn defaults(mode: &'static str, events: usize) -> Scenario {
        Scenario {
            defaults: true,
            ..Scenario::new(Db::Postgres, false, Mail::Smtp(50), mode, true, 1, events)
        }
    }

    pub(super) fn name(&self) -> String {
        format!(
            "{} {} {} {}{} x{}{}",
            match self.db {
                Db::Postgres => "pg",
                Db::Sqlite => "sqlite",
            },
            if self.sqs { "sqs" } else { "db" },
            match self.mail {
                Mail::File => "file".to_string(),
                Mail::Smtp(ms) => format!("smtp+{ms}ms"),
                Mail::Ses => "ses".to_string(),
            },
            self.mode,
            if self.mode == "lease" && !self.batch {
                " unbatched"
            } else {
                ""
            },
            self.procs,
            if self.defaults { " defaults" } else { "" }
        ) + if self.hanging_hook {
            ", a webhook endpoint hanging"
        } else {
            ""
        }
    }
}

/// Every scenario, in the order they run: `events` events each, `slow` for those whose rate is
/// the figure rather than the count, `sqs_events` for those on the SQS test server (only when it
/// is there).
pub(super) fn all(
    events: usize,
    slow: usize,
    sqs_events: usize,
    sqs_available: bool,
) -> Vec<Scenario> {
    let s = Scenario::new;
    let defaults = Scenario::defaults;
    let mut scenarios = vec![
        s(Db::Postgres, false, Mail::File, "lease", true, 1, events),
        s(Db::Postgres, false, Mail::File, "lease", false, 1, events),
        s(
            Db::Postgres,
            false,
            Mail::File,
            "transaction",
            true,
            1,
            events,
        ),
        s(Db::Postgres, false, Mail::File, "lease", true, 4, events),
        s(
            Db::Postgres,
            false,
            Mail::File,
            "transaction",
            true,
            4,
            events,
        ),
        s(Db::Postgres, false, Mail::Smtp(0), "lease", true, 1, events),
        s(
            Db::Postgres,
            false,
            Mail::Smtp(0),
            "transaction",
            true,
            1,
            events,
        ),
        s(
            Db::Postgres,
            false,
            Mail::Smtp(50),
            "lease",
            true,
            1,
            events,
        ),
        s(
            Db::Postgres,
            false,
            Mail::Smtp(50),
            "lease",
            true,
            1,
            events,
        )
        .beside_a_hanging_hook(),
        s(
            Db::Postgres,
            false,
            Mail::Smtp(50),
            "transaction",
            true,
            1,
            slow,
        ),
        s(
            Db::Postgres,
            false,
            Mail::Smtp(50),
            "lease",
            true,
            4,
            events,
        ),
    ];
    // SES against the SQS test server, beside the SMTP rows: a send there is a Python
    // request, so it gets the SQS rows' smaller count.
    if sqs_available {
        scenarios.push(s(
            Db::Postgres,
            false,
            Mail::Ses,
            "lease",
            true,
            1,
            sqs_events,
        ));
    }
    scenarios.extend([
        defaults("lease", slow),
        defaults("transaction", slow),
        s(Db::Sqlite, false, Mail::File, "lease", true, 1, events),
        s(Db::Sqlite, false, Mail::File, "lease", false, 1, events),
        s(Db::Sqlite, false, Mail::File, "lease", true, 4, events),
        s(Db::Sqlite, false, Mail::Smtp(0), "lease", true, 1, events),
        s(Db::Sqlite, false, Mail::Smtp(50), "lease", true, 1, events),
    ]);
    if sqs_available {
        scenarios.push(s(
            Db::Postgres,
            true,
            Mail::File,
            "lease",
            true,
            1,
            sqs_events,
        ));
        scenarios.push(s(
            Db::Postgres,
            true,
            Mail::File,
            "lease",
            true,
            4,
            sqs_events,
        ));
    }
    scenarios
}
