//! A job as the public pages show it ([`Listing`]): its texts made safe to show (text stored
//! before the text rules may hold control and bidirectional characters), its place, pay and kind
//! in words, and its slug. The pages, the JSON-LD and the feed read only this, so that a job's
//! richer pay and places reach all three by changing [`Listing::of`] alone.

use crate::domain::validate::{fold_one_line, is_bidi_control};
use crate::domain::{EmploymentType, JobStatus};
use crate::store::JobRow;
use chrono::{DateTime, Utc};
use unicode_normalization::UnicodeNormalization;

/// The longest slug, in bytes (ASCII), cut at a word.
const SLUG_MAX: usize = 60;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Workplace {
    Onsite,
    Hybrid,
    Remote,
}

/// A place: its text, and its parts where they are known (a place written as the older
/// `location` is a text alone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Place {
    pub text: String,
    pub city: Option<String>,
    pub region: Option<String>,
    /// ISO 3166-1 alpha-2.
    pub country: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Period {
    Hour,
    Day,
    Week,
    Month,
    Year,
}

impl Period {
    /// schema.org's `unitText`.
    pub fn unit(self) -> &'static str {
        match self {
            Period::Hour => "HOUR",
            Period::Day => "DAY",
            Period::Week => "WEEK",
            Period::Month => "MONTH",
            Period::Year => "YEAR",
        }
    }

    fn words(self) -> &'static str {
        match self {
            Period::Hour => "an hour",
            Period::Day => "a day",
            Period::Week => "a week",
            Period::Month => "a month",
            Period::Year => "a year",
        }
    }
}

/// A pay range: at least one end is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pay {
    pub min: Option<i64>,
    pub max: Option<i64>,
    /// ISO 4217.
    pub currency: String,
    pub period: Period,
}

/// A job as the public pages show it.
#[derive(Debug, Clone)]
pub(super) struct Listing {
    pub id: i64,
    pub company_id: i64,
    /// One line, folded.
    pub company: String,
    /// One line, folded.
    pub title: String,
    /// Lines (LF) and tabs, no other control and no bidirectional control.
    pub description: String,
    pub workplace: Workplace,
    pub places: Vec<Place>,
    pub pay: Option<Pay>,
    pub kind: EmploymentType,
    /// As the job reads at the moment the listing was made.
    pub status: JobStatus,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// How much of a description a list of jobs cleans: its start, enough for a summary of
/// [`SUMMARY_MAX`] characters unless it is mostly blanks.
const BRIEF_BYTES: usize = 8 * SUMMARY_MAX;

/// The longest summary, in characters (a page's meta description, a feed entry's summary).
pub(super) const SUMMARY_MAX: usize = 160;

impl Listing {
    /// The job as it reads at `now`.
    pub fn of(job: &JobRow, now: DateTime<Utc>) -> Listing {
        Listing::with_description(job, now, clean_lines(&job.description))
    }

    /// The job as [`of`](Self::of) makes it, with only as much of its description as its
    /// summary shows: for lists of jobs, which never show a whole description.
    pub fn brief(job: &JobRow, now: DateTime<Utc>) -> Listing {
        let start = head(&job.description, BRIEF_BYTES);
        let mut description = clean_lines(start);
        if start.len() < job.description.len()
            && fold_one_line(&description).chars().count() <= SUMMARY_MAX
        {
            description = clean_lines(&job.description);
        }
        Listing::with_description(job, now, description)
    }

    fn with_description(job: &JobRow, now: DateTime<Utc>, description: String) -> Listing {
        use crate::domain::pay_place as pp;
        let places = job
            .places()
            .into_iter()
            .map(|p| {
                let known = p.country.is_some();
                Place {
                    text: fold_one_line(&p.text()),
                    // A place written as the older text is a text alone.
                    city: known.then(|| fold_one_line(&p.city)),
                    region: p.region.as_deref().map(fold_one_line),
                    country: p.country,
                }
            })
            .filter(|p| !p.text.is_empty())
            .collect();
        let pay = job.salary().map(|s| Pay {
            min: s.min,
            max: s.max,
            currency: s.currency,
            period: match s.period {
                pp::Period::Hour => Period::Hour,
                pp::Period::Day => Period::Day,
                pp::Period::Week => Period::Week,
                pp::Period::Month => Period::Month,
                pp::Period::Year => Period::Year,
            },
        });
        Listing {
            id: job.id,
            company_id: job.company_id,
            company: fold_one_line(&job.company_name),
            title: fold_one_line(&job.title),
            description,
            workplace: match job.workplace() {
                pp::Workplace::Onsite => Workplace::Onsite,
                pp::Workplace::Hybrid => Workplace::Hybrid,
                pp::Workplace::Remote => Workplace::Remote,
            },
            places,
            pay,
            kind: job.employment_type,
            status: job.status_at(now),
            created_at: job.created_at,
            updated_at: job.updated_at,
            expires_at: job.expires_at,
        }
    }

    /// The last segment of the page's canonical path: `{id}-{slug}`, or `{id}` for a title
    /// with no letter or digit to make one of.
    pub fn path_key(&self) -> String {
        path_key(self.id, &self.title)
    }

    /// The places in words: `Berlin`, `Remote, from Berlin; Paris`, `Hybrid: Berlin`.
    pub fn place_words(&self) -> String {
        let places = self
            .places
            .iter()
            .map(|p| p.text.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        match (self.workplace, places.is_empty()) {
            (Workplace::Remote, true) => "Remote".to_string(),
            (Workplace::Remote, false) => format!("Remote, from {places}"),
            (Workplace::Hybrid, true) => "Hybrid".to_string(),
            (Workplace::Hybrid, false) => format!("Hybrid: {places}"),
            (Workplace::Onsite, true) => "Not stated".to_string(),
            (Workplace::Onsite, false) => places,
        }
    }

    /// The pay in words: `70,000–95,000 USD a year`, `From 70,000 USD a year`, `Not stated`.
    pub fn pay_words(&self) -> String {
        let Some(pay) = &self.pay else {
            return "Not stated".to_string();
        };
        let unit = format!("{} {}", pay.currency, pay.period.words());
        match (pay.min, pay.max) {
            (Some(a), Some(b)) if a == b => format!("{} {unit}", thousands(a)),
            (Some(a), Some(b)) => format!("{}–{} {unit}", thousands(a), thousands(b)),
            (Some(a), None) => format!("From {} {unit}", thousands(a)),
            (None, Some(b)) => format!("Up to {} {unit}", thousands(b)),
            (None, None) => "Not stated".to_string(),
        }
    }

    pub fn kind_words(&self) -> &'static str {
        kind_words(self.kind)
    }
}

pub(super) fn kind_words(kind: EmploymentType) -> &'static str {
    match kind {
        EmploymentType::FullTime => "Full time",
        EmploymentType::PartTime => "Part time",
        EmploymentType::Contract => "Contract",
        EmploymentType::Internship => "Internship",
    }
}

/// A date in words, in UTC: `3 December 2026`.
pub(super) fn day(at: DateTime<Utc>) -> String {
    at.format("%-d %B %Y").to_string()
}

/// `1234567` → `1,234,567`.
fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// The last segment of a job's canonical path: `{id}-{slug}`, or `{id}` for a title with no
/// letter or digit to make one of.
pub(super) fn path_key(id: i64, title: &str) -> String {
    match slug(&fold_one_line(title)) {
        s if s.is_empty() => id.to_string(),
        s => format!("{id}-{s}"),
    }
}

/// The start of `text`, at most `bytes` long, cut at a character.
pub(super) fn head(text: &str, bytes: usize) -> &str {
    if text.len() <= bytes {
        return text;
    }
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A title's slug: its letters and digits in lower-case ASCII (accents dropped: `Développeur`
/// → `developpeur`), words joined by `-`, at most [`SLUG_MAX`] bytes cut at a word; empty
/// when nothing is left (a title in a script without ASCII letters).
pub(super) fn slug(title: &str) -> String {
    let mut out = String::new();
    let mut gap = false;
    for c in title.nfd() {
        if c.is_ascii_alphanumeric() {
            if gap && !out.is_empty() {
                out.push('-');
            }
            gap = false;
            out.push(c.to_ascii_lowercase());
        } else if !unicode_normalization::char::is_combining_mark(c) {
            gap = true;
        }
    }
    if out.len() > SLUG_MAX {
        let cut = match out[..=SLUG_MAX].rfind('-') {
            Some(i) if i > 0 => i,
            _ => SLUG_MAX,
        };
        out.truncate(cut);
    }
    out
}

/// A text of several lines as it may be shown, whenever it was written: CR LF, a lone CR and
/// the line and paragraph separators become LF; tabs stay; any other control character, a
/// bidirectional control and a noncharacter XML cannot carry (U+FFFE, U+FFFF) are dropped; the
/// ends are trimmed. What the text rule accepts today comes back unchanged but for CR LF.
pub(super) fn clean_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push('\n');
                }
            }
            '\n' | '\u{2028}' | '\u{2029}' => out.push('\n'),
            '\t' => out.push('\t'),
            c if c.is_control() || is_bidi_control(c) || matches!(c, '\u{FFFE}' | '\u{FFFF}') => {}
            c => out.push(c),
        }
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slug_is_ascii_words_cut_at_a_word() {
        assert_eq!(slug("Senior Rust Engineer"), "senior-rust-engineer");
        assert_eq!(
            slug("  Développeur·se (C++/Rust) — Zürich "),
            "developpeur-se-c-rust-zurich"
        );
        assert_eq!(slug("日本語"), "");
        assert_eq!(slug("</script><!--"), "script");
        let long = "word ".repeat(30);
        let s = slug(&long);
        assert!(
            s.len() <= SLUG_MAX && s.ends_with("word") && !s.ends_with('-'),
            "{s}"
        );
        assert_eq!(slug(&"x".repeat(100)).len(), SLUG_MAX);
    }

    #[test]
    fn lines_keep_their_breaks_and_lose_what_could_reorder_or_break_them() {
        assert_eq!(clean_lines("a\r\nb\rc\u{2028}d\te"), "a\nb\nc\nd\te");
        assert_eq!(
            clean_lines("x\u{202E}y\u{2066}z\u{0}\u{7}\u{85}\u{FFFF}"),
            "xyz"
        );
        assert_eq!(clean_lines(" \n text \n "), "text");
    }

    #[test]
    fn numbers_have_thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(70_000), "70,000");
        assert_eq!(thousands(1_000_000_000), "1,000,000,000");
    }
}
