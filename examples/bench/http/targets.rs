//! The HTTP section's targets, judged on the figures of its rows.

use super::rows::{Kind, MIXES, cursor_ids_row, cursor_row, facets_row, ids_row, mix_detail_row};
use super::scenario::Measured;
use crate::ceilings::Ceilings;
use crate::common;
use crate::report::{Section, Target};

/// Judges the targets on this run's figures.
pub(super) fn targets(section: &mut Section, measured: &[Measured], ceilings: Option<&Ceilings>) {
    let find = |scenario: &str, conns: u32| {
        measured
            .iter()
            .find(|m| m.scenario == scenario && m.conns == conns && m.failed.is_none())
    };
    match ceilings {
        Some(c) => {
            for (scenario, label, factor) in [
                ("search_cached_memory", "search cached (memory)", 0.6),
                ("search_cached_redis", "search cached (redis)", 0.4),
            ] {
                for conns in common::CONN_LEVELS {
                    if let (Some(m), Some(bare)) = (find(scenario, conns), c.bare_rps.get(&conns)) {
                        section.targets.push(Target::at_least(
                            &format!("{label} >= {factor}x bare axum @{conns} conns"),
                            m.wrk.rps / bare,
                            factor,
                            format!(
                                "{} req/s / {} req/s (bare axum), both at {conns} connections; \
                                 {:.2}x bare axum answering a 15 KB page",
                                common::fmt_int(m.wrk.rps),
                                common::fmt_int(*bare),
                                c.bare_page_rps
                                    .get(&conns)
                                    .map(|p| m.wrk.rps / p)
                                    .unwrap_or(f64::NAN)
                            ),
                        ));
                    }
                }
            }
            match (find("apply", 16), c.insert_tps.get(&16)) {
                (Some(m), Some(tps)) => section.targets.push(Target::at_least(
                    "apply >= 0.5x pgbench one-insert TPS @16",
                    m.wrk.rps / tps,
                    0.5,
                    format!(
                        "{} req/s (16 connections) / {} tps (pgbench, 16 clients)",
                        common::fmt_int(m.wrk.rps),
                        common::fmt_int(*tps)
                    ),
                )),
                _ => section.notes.push(
                    "apply vs pgbench: not judged (a figure is missing or its row failed).".into(),
                ),
            }
        }
        None => section.notes.push(
            "The ratio targets against bare axum and pgbench need the ceilings section in the \
             same run; not judged."
                .into(),
        ),
    }
    for (scenario, what) in [
        (
            "search_uncached",
            "uncached search (word pairs), PostgreSQL",
        ),
        (
            "search_broad",
            "uncached broad search + salary_min, PostgreSQL",
        ),
        (
            "search_uncached_scale",
            "uncached search (word pairs), PostgreSQL at scale",
        ),
        (
            "search_broad_scale",
            "uncached broad search + salary_min, PostgreSQL at scale",
        ),
        (
            "search_uncached_sqlite",
            "uncached search (word pairs), SQLite",
        ),
        (
            "search_broad_sqlite",
            "uncached broad search + salary_min, SQLite",
        ),
    ] {
        let Some(m) = find(scenario, 16) else {
            continue;
        };
        section.targets.push(Target::at_most(
            &format!("{what}: p99 <= 20 ms @16 conns"),
            m.wrk.latency_ms.p99,
            20.0,
            format!(
                "{scenario}: p99 {} ms at 16 connections over {} requests (cache hit ratio {})",
                common::fmt_ms(m.wrk.latency_ms.p99),
                m.wrk.requests,
                m.hit_ratio()
                    .map(|r| format!("{:.2} %", r * 100.0))
                    .unwrap_or_else(|| "?".into())
            ),
        ));
    }
    for kind in [Kind::Scale, Kind::Sqlite] {
        section
            .targets
            .extend(super::pages::page_targets(kind, measured));
        let detail_name = mix_detail_row(kind);
        let detail = find(detail_name, 16);
        let ids_name = ids_row(kind);
        let ceiling = find(ids_name, 16);
        if let (Some(i), Some(d)) = (ceiling, detail) {
            section.notes.push(format!(
                "{ids_name} @16 conns (the mixes' pages by their ids): {} req/s = {:.2}x \
                 {detail_name}'s, p99 {} ms = {:.2}x its {} ms",
                common::fmt_int(i.wrk.rps),
                i.wrk.rps / d.wrk.rps,
                common::fmt_ms(i.wrk.latency_ms.p99),
                i.wrk.latency_ms.p99 / d.wrk.latency_ms.p99,
                common::fmt_ms(d.wrk.latency_ms.p99),
            ));
        }
        // Each mix against its own pages by ids; the facets row, which takes every mix's
        // searches, against all of them.
        let rows = MIXES.iter().map(|m| (m.row(kind), m.ids_row(kind))).chain([
            (facets_row(kind), ids_name),
            (cursor_row(kind), cursor_ids_row(kind)),
        ]);
        for (name, ids_name) in rows {
            let ceiling = find(ids_name, 16);
            if let Some(m) = find(name, 16) {
                match ceiling {
                    Some(c) => {
                        section.targets.push(Target::at_most(
                            &format!("{name}: p99 <= 3x {ids_name} p99 @16 conns"),
                            m.wrk.latency_ms.p99 / c.wrk.latency_ms.p99,
                            3.0,
                            format!(
                                "p99 {} ms / {} ms ({ids_name}, same run, same database)",
                                common::fmt_ms(m.wrk.latency_ms.p99),
                                common::fmt_ms(c.wrk.latency_ms.p99)
                            ),
                        ));
                        section.targets.push(Target::at_least(
                            &format!("{name}: req/s >= 0.5x {ids_name} @16 conns"),
                            m.wrk.rps / c.wrk.rps,
                            0.5,
                            format!(
                                "{} req/s / {} req/s ({ids_name}){}; cache hit ratio {}",
                                common::fmt_int(m.wrk.rps),
                                common::fmt_int(c.wrk.rps),
                                detail
                                    .map(|d| format!(
                                        "; {:.2}x {detail_name}'s {} req/s",
                                        m.wrk.rps / d.wrk.rps,
                                        common::fmt_int(d.wrk.rps)
                                    ))
                                    .unwrap_or_default(),
                                m.hit_ratio()
                                    .map(|r| format!("{:.2} %", r * 100.0))
                                    .unwrap_or_else(|| "?".into())
                            ),
                        ));
                    }
                    None => section.notes.push(format!(
                        "{name}: the ratios to {ids_name} are not judged (its row is missing \
                         or failed)."
                    )),
                }
            }
            if let Some(m) = find(name, 1) {
                section.targets.push(Target::at_most(
                    &format!("{name}: unloaded p99 <= 5 ms (1 conn)"),
                    m.wrk.latency_ms.p99,
                    5.0,
                    format!(
                        "p99 {} ms over {} requests one at a time (p50 {} ms)",
                        common::fmt_ms(m.wrk.latency_ms.p99),
                        m.wrk.requests,
                        common::fmt_ms(m.wrk.latency_ms.p50)
                    ),
                ));
            }
        }
    }
    let at_256: Vec<&Measured> = measured
        .iter()
        .filter(|m| m.conns == 256 && m.peak_rss_mb.is_some())
        .collect();
    if let Some(worst) = at_256.iter().max_by(|a, b| {
        a.peak_rss_mb
            .unwrap_or(0.0)
            .total_cmp(&b.peak_rss_mb.unwrap_or(0.0))
    }) {
        let all = at_256
            .iter()
            .map(|m| format!("{} {:.1}", m.scenario, m.peak_rss_mb.unwrap_or(0.0)))
            .collect::<Vec<_>>()
            .join(", ");
        section.targets.push(Target::at_most(
            "API peak RSS <= 50 MB @256 conns",
            worst.peak_rss_mb.unwrap_or(0.0),
            50.0,
            format!(
                "worst of the rows at 256 connections ({}); all: {all}",
                worst.scenario
            ),
        ));
    }
}
