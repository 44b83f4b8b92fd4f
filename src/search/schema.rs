//! The index's schema, its tokenizer (the domain's word rule) and the document of a job.

use crate::domain::pay_place::Workplace;
use crate::domain::search::{MAX_TERM_CHARS, words};
use crate::domain::{EmploymentType, JobStatus};
use crate::store::JobRow;
use chrono::{DateTime, Utc};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{TextAnalyzer, Token, TokenStream, Tokenizer};
use tantivy::{TantivyDocument, Term};

/// Bumped whenever the schema, the tokenizer or the stored row changes: an index with another
/// version is rebuilt from the database at start.
pub const SCHEMA_VERSION: u32 = 3;

/// The name the word rule is registered under.
pub const TOKENIZER: &str = "jobboard_words";

/// `salary_max` of a job that has none: every `salary_min` keeps it.
pub const NO_SALARY_MAX: u64 = u64::MAX;

/// The currency term of a job that states no pay: kept by every `salary_currency`.
pub const NO_PAY_CURRENCY: &str = "-";

/// `expires_at` of a job that has none yet (written before jobs expired): it never expires
/// until the upkeep gives it a date.
pub const NO_EXPIRY: i64 = i64::MAX;

/// The fields of a job's document.
#[derive(Clone, Copy)]
pub struct Fields {
    pub id: Field,
    /// Title, description and company name: what `q` matches.
    pub text: Field,
    /// The title alone: what relevance counts.
    pub title: Field,
    /// Each place as text, lower-cased, as one term.
    pub location: Field,
    pub remote: Field,
    /// [`workplace_code`].
    pub workplace: Field,
    /// Each place's country (ISO 3166-1 alpha-2), as one term.
    pub country: Field,
    /// The salary's currency, [`NO_PAY_CURRENCY`] for a job that states no pay.
    pub salary_currency: Field,
    /// The top of the salary's range as a yearly amount ([`NO_SALARY_MAX`] for no pay).
    pub salary_yearly: Field,
    pub company_id: Field,
    pub salary_max: Field,
    pub employment_type: Field,
    /// Microseconds since the epoch.
    pub created_at: Field,
    /// Microseconds since the epoch ([`NO_EXPIRY`] for none): a search leaves out the jobs
    /// whose `expires_at` is not after its instant, whatever the upkeep has done.
    pub expires_at: Field,
    /// The job as a page shows it (JSON).
    pub row: Field,
}

pub fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let words = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(IndexRecordOption::Basic),
    );
    let fields = Fields {
        id: b.add_u64_field("id", INDEXED | FAST),
        text: b.add_text_field("text", words.clone()),
        title: b.add_text_field("title", words),
        location: b.add_text_field("location", STRING),
        remote: b.add_u64_field("remote", INDEXED | FAST),
        workplace: b.add_u64_field("workplace", INDEXED | FAST),
        country: b.add_text_field("country", STRING),
        salary_currency: b.add_text_field("salary_currency", STRING),
        salary_yearly: b.add_u64_field("salary_yearly", INDEXED | FAST),
        company_id: b.add_u64_field("company_id", INDEXED | FAST),
        salary_max: b.add_u64_field("salary_max", INDEXED | FAST),
        employment_type: b.add_u64_field("employment_type", INDEXED | FAST),
        created_at: b.add_i64_field("created_at", INDEXED | FAST),
        expires_at: b.add_i64_field("expires_at", FAST),
        row: b.add_text_field("row", STORED),
    };
    (b.build(), fields)
}

/// The domain's word rule (`domain::search::words`) as the index's tokenizer: documents and
/// queries are cut into the same terms as the contract's reference.
#[derive(Clone, Default)]
pub struct WordRule;

pub struct Words {
    words: std::vec::IntoIter<String>,
    token: Token,
}

impl Tokenizer for WordRule {
    type TokenStream<'a> = Words;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Words {
        let words: Vec<String> = words(text)
            .filter(|w| w.chars().count() <= MAX_TERM_CHARS)
            .collect();
        Words {
            words: words.into_iter(),
            token: Token::default(),
        }
    }
}

impl TokenStream for Words {
    fn advance(&mut self) -> bool {
        match self.words.next() {
            Some(word) => {
                self.token.position = self.token.position.wrapping_add(1);
                self.token.text = word;
                true
            }
            None => false,
        }
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(WordRule).build()
}

/// The code of an employment type in the index.
pub fn employment_code(t: EmploymentType) -> u64 {
    EmploymentType::ALL
        .iter()
        .position(|x| *x == t)
        .unwrap_or(0) as u64
}

/// The code of a workplace in the index.
pub fn workplace_code(w: Workplace) -> u64 {
    Workplace::ALL.iter().position(|x| *x == w).unwrap_or(0) as u64
}

pub fn micros(t: &DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

/// A job as the index stores it for its page.
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredJob {
    id: i64,
    company_id: i64,
    company_name: String,
    title: String,
    description: String,
    location: String,
    remote: bool,
    salary_min: Option<i64>,
    salary_max: Option<i64>,
    #[serde(default)]
    workplace: Option<String>,
    #[serde(default)]
    locations: Option<String>,
    #[serde(default)]
    salary_currency: Option<String>,
    #[serde(default)]
    salary_period: Option<String>,
    employment_type: String,
    status: String,
    expires_at: Option<DateTime<Utc>>,
    rejection_reason: Option<String>,
    #[serde(default)]
    resume_required: bool,
    #[serde(default)]
    questions: Option<String>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl Fields {
    /// The term that names a job's document.
    pub fn id_term(&self, id: i64) -> Term {
        Term::from_field_u64(self.id, id as u64)
    }

    /// The term of every job of a company.
    pub fn company_term(&self, company_id: i64) -> Term {
        Term::from_field_u64(self.company_id, company_id as u64)
    }

    /// The document of an open job.
    pub fn document(&self, job: &JobRow) -> anyhow::Result<TantivyDocument> {
        let mut doc = self.document_to_match(job);
        let stored = StoredJob {
            id: job.id,
            company_id: job.company_id,
            company_name: job.company_name.clone(),
            title: job.title.clone(),
            description: job.description.clone(),
            location: job.location.clone(),
            remote: job.remote,
            salary_min: job.salary_min,
            salary_max: job.salary_max,
            workplace: job.workplace.clone(),
            locations: job.locations.clone(),
            salary_currency: job.salary_currency.clone(),
            salary_period: job.salary_period.clone(),
            employment_type: job.employment_type.as_str().to_string(),
            status: job.status.as_str().to_string(),
            expires_at: job.expires_at,
            rejection_reason: job.rejection_reason.clone(),
            resume_required: job.resume_required,
            questions: job.questions.clone(),
            created_at: job.created_at,
            updated_at: job.updated_at,
        };
        doc.add_text(self.row, serde_json::to_string(&stored)?);
        Ok(doc)
    }

    /// [`Fields::document`] without the stored job: every field a search filters and orders
    /// by, nothing a page shows (the alert matcher's documents).
    pub fn document_to_match(&self, job: &JobRow) -> TantivyDocument {
        let mut doc = TantivyDocument::default();
        doc.add_u64(self.id, job.id as u64);
        for part in [&job.title, &job.description, &job.company_name] {
            doc.add_text(self.text, part);
        }
        doc.add_text(self.title, &job.title);
        let workplace = job.workplace();
        let places = job.places();
        for place in &places {
            doc.add_text(self.location, place.text().to_lowercase());
        }
        for country in places.iter().filter_map(|p| p.country.as_deref()) {
            doc.add_text(self.country, country);
        }
        doc.add_u64(self.remote, (workplace == Workplace::Remote) as u64);
        doc.add_u64(self.workplace, workplace_code(workplace));
        let salary = job.salary();
        doc.add_text(
            self.salary_currency,
            salary
                .as_ref()
                .map_or(NO_PAY_CURRENCY, |s| s.currency.as_str()),
        );
        doc.add_u64(
            self.salary_yearly,
            salary
                .and_then(|s| s.yearly_top())
                .map_or(NO_SALARY_MAX, |y| y.max(0) as u64),
        );
        doc.add_u64(self.company_id, job.company_id as u64);
        doc.add_u64(
            self.salary_max,
            job.salary_max.map_or(NO_SALARY_MAX, |s| s.max(0) as u64),
        );
        doc.add_u64(self.employment_type, employment_code(job.employment_type));
        doc.add_i64(self.created_at, micros(&job.created_at));
        doc.add_i64(
            self.expires_at,
            job.expires_at.as_ref().map_or(NO_EXPIRY, micros),
        );
        doc
    }

    /// The job a stored document holds.
    pub fn job(&self, doc: &TantivyDocument) -> anyhow::Result<JobRow> {
        use tantivy::schema::Value;
        let text = doc
            .get_first(self.row)
            .and_then(|v| v.as_str())
            .ok_or_else(|| anyhow::anyhow!("a search document has no stored job"))?;
        let s: StoredJob = serde_json::from_str(text)?;
        Ok(JobRow {
            id: s.id,
            company_id: s.company_id,
            company_name: s.company_name,
            title: s.title,
            description: s.description,
            location: s.location,
            remote: s.remote,
            salary_min: s.salary_min,
            salary_max: s.salary_max,
            workplace: s.workplace,
            locations: s.locations,
            salary_currency: s.salary_currency,
            salary_period: s.salary_period,
            employment_type: EmploymentType::parse(&s.employment_type).ok_or_else(|| {
                anyhow::anyhow!("unknown employment type {:?}", s.employment_type)
            })?,
            status: JobStatus::parse(&s.status)
                .ok_or_else(|| anyhow::anyhow!("unknown job status {:?}", s.status))?,
            expires_at: s.expires_at,
            rejection_reason: s.rejection_reason,
            resume_required: s.resume_required,
            questions: s.questions,
            created_at: s.created_at,
            updated_at: s.updated_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tokenizer_is_the_word_rule() {
        let text = "Senior Rust-Engineers (C++/Node.js) WOMEN ünïcode";
        let tokens = |text: &str| {
            let mut a = analyzer();
            let mut stream = a.token_stream(text);
            let mut got = Vec::new();
            while let Some(t) = stream.next() {
                got.push(t.text.clone());
            }
            got
        };
        assert_eq!(tokens(text), words(text).collect::<Vec<_>>());
        let long = "x".repeat(MAX_TERM_CHARS + 1);
        assert!(tokens(&long).is_empty(), "a word too long is not indexed");
    }
}
