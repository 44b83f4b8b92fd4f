//! The alert matcher's cost (`jobboard::search::match_alerts`): a window of new jobs and a
//! batch of alerts, words drawn from a Zipf-like vocabulary (a few words in most jobs and
//! alerts, many words in few), locations and companies skewed the same way, every filter in
//! use, each alert with its own watermark inside the window. Prints the time to index the
//! window and to match every alert, and what the digests hold.
//!
//! ```sh
//! cargo run --release --example alert_match                      # 10 000 jobs, 100 000 alerts
//! cargo run --release --example alert_match -- --jobs 2000 --alerts 20000 --seed 7
//! ```

use anyhow::Result;
use chrono::{Duration, TimeZone, Utc};
use clap::Parser;
use jobboard::domain::alert::Frequency;
use jobboard::domain::{EmploymentType, JobStatus};
use jobboard::search::AlertWindow;
use jobboard::store::{AlertRow, JobRow};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Instant;

#[derive(Parser)]
#[command(about = "Times the alert matcher on a window of jobs and a batch of alerts.")]
struct Opts {
    /// Open jobs in the window.
    #[arg(long, default_value_t = 10_000)]
    jobs: usize,
    /// Alerts matched against it.
    #[arg(long, default_value_t = 100_000)]
    alerts: usize,
    /// Distinct words of the vocabulary.
    #[arg(long, default_value_t = 20_000)]
    words: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// A Zipf-like pick among `n` items: rank `r` (from 0) with weight 1 / (r + 1).
fn zipf(rng: &mut StdRng, n: usize) -> usize {
    let x = ((n as f64 + 1.0).ln() * rng.r#gen::<f64>()).exp();
    (x as usize - 1).min(n - 1)
}

/// The `i`-th word of the vocabulary: letters only, never ending in `s` (so never a plural).
fn word(i: usize) -> String {
    const SYLLABLES: &[&str] = &[
        "ka", "lo", "mi", "nu", "pe", "ri", "to", "va", "ze", "du", "fo", "gi", "bo", "xa", "le",
        "ro",
    ];
    let mut w = String::new();
    let mut i = i + SYLLABLES.len();
    while i > 0 {
        w.push_str(SYLLABLES[i % SYLLABLES.len()]);
        i /= SYLLABLES.len();
    }
    w
}

/// Between `fewest` and `most` words of the vocabulary, drawn Zipf-like.
fn words(rng: &mut StdRng, opts: &Opts, fewest: usize, most: usize) -> String {
    let n = rng.gen_range(fewest..=most);
    (0..n)
        .map(|_| word(zipf(rng, opts.words)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() -> Result<()> {
    let opts = Opts::parse();
    let mut rng = StdRng::seed_from_u64(opts.seed);
    let start = Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap();
    let locations: Vec<String> = (0..300).map(|i| format!("{} City", word(i))).collect();
    let companies: Vec<String> = (0..500).map(|i| format!("{} Corp", word(i + 50))).collect();

    // A day's or a week's new jobs, one every few seconds.
    let jobs: Vec<JobRow> = (0..opts.jobs)
        .map(|i| {
            let at = start + Duration::seconds(i as i64 * 30);
            let company = zipf(&mut rng, companies.len());
            let salary_max = rng.gen_bool(0.8).then(|| rng.gen_range(30..=250) * 1_000);
            JobRow {
                id: i as i64 + 1,
                company_id: company as i64 + 1,
                company_name: companies[company].clone(),
                title: words(&mut rng, &opts, 1, 4),
                description: words(&mut rng, &opts, 20, 80),
                location: locations[zipf(&mut rng, locations.len())].clone(),
                remote: rng.gen_bool(0.3),
                salary_min: None,
                salary_max,
                workplace: None,
                locations: None,
                salary_currency: None,
                salary_period: None,
                employment_type: EmploymentType::ALL[zipf(&mut rng, 4)],
                status: JobStatus::Open,
                expires_at: None,
                rejection_reason: None,
                resume_required: false,
                questions: None,
                created_at: at,
                updated_at: at,
            }
        })
        .collect();
    let span = opts.jobs as i64 * 30;

    let alerts: Vec<AlertRow> = (0..opts.alerts)
        .map(|i| {
            let q = rng.gen_bool(0.8).then(|| words(&mut rng, &opts, 1, 2));
            let location = (q.is_none() || rng.gen_bool(0.2)).then(|| {
                let l = &locations[zipf(&mut rng, locations.len())];
                l[..l.len().min(rng.gen_range(3..=8))].to_lowercase()
            });
            let company_id = rng
                .gen_bool(0.1)
                .then(|| zipf(&mut rng, companies.len()) as i64 + 1);
            // Each alert's last digest somewhere in the window (a third: none yet, and created
            // before it).
            let (created, watermark) = if rng.gen_bool(0.33) {
                (start - Duration::days(1), None)
            } else {
                let at = start + Duration::seconds(rng.gen_range(0..span));
                (start - Duration::days(30), Some(at))
            };
            AlertRow {
                id: i as i64 + 1,
                user_id: i as i64 / 20 + 1,
                q,
                location,
                remote: rng.gen_bool(0.15).then(|| rng.gen_bool(0.5)),
                company_id,
                salary_min: rng.gen_bool(0.2).then(|| rng.gen_range(20..=200) * 1_000),
                employment_type: rng.gen_bool(0.15).then(|| {
                    EmploymentType::ALL[rng.gen_range(0..4)]
                        .as_str()
                        .to_string()
                }),
                workplace: None,
                country: None,
                salary_currency: None,
                frequency: Frequency::Daily,
                paused: false,
                created_at: created,
                last_sent_at: None,
                watermark_created_at: watermark,
                watermark_job_id: watermark.map(|_| 0),
            }
        })
        .collect();

    let t = Instant::now();
    let window = AlertWindow::new(&jobs)?;
    let indexed = t.elapsed();
    let t = Instant::now();
    let found = window
        .matches(&alerts)
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    let matched = t.elapsed();

    let listing = found.iter().filter(|m| !m.jobs.is_empty()).count();
    let listed: usize = found.iter().map(|m| m.jobs.len()).sum();
    let further: u64 = found.iter().map(|m| m.further).sum();
    let full = found.iter().filter(|m| m.further > 0).count();
    println!(
        "window: {} jobs indexed in {:.2} s",
        window.jobs(),
        indexed.as_secs_f64()
    );
    println!(
        "alerts: {} matched in {:.2} s ({:.0} alerts/s, {:.1} µs each)",
        alerts.len(),
        matched.as_secs_f64(),
        alerts.len() as f64 / matched.as_secs_f64(),
        matched.as_secs_f64() * 1e6 / alerts.len().max(1) as f64
    );
    println!(
        "digests: {listing} with jobs ({full} full, with further matches), {listed} jobs listed, \
         {further} further matches counted"
    );
    Ok(())
}
