//! The search tokenizer, shared by both database backends so that they give the same results.
//!
//! Text is split into words at every character that is not a letter or a digit, lower-cased,
//! and reduced to a singular form, so `Engineers` and `engineer` meet at `engineer`. Documents
//! are stored as these terms; a query's words are reduced the same way and every one must be a
//! whole term of the document. Terms contain only letters and digits, so no query character can
//! ever act as search syntax in either database.

/// Terms longer than this are not indexed (PostgreSQL caps a lexeme at 2 KiB); a query word that
/// long can match nothing.
pub const MAX_TERM_CHARS: usize = 100;

/// English plurals whose singular is not made by a suffix rule.
const IRREGULAR: &[(&str, &str)] = &[
    ("men", "man"),
    ("women", "woman"),
    ("people", "person"),
    ("children", "child"),
    ("feet", "foot"),
    ("teeth", "tooth"),
    ("mice", "mouse"),
    ("geese", "goose"),
];

/// Words ending in `s` that are not plurals (or whose plural is the same word).
const NOT_PLURAL: &[&str] = &[
    "news",
    "series",
    "species",
    "always",
    "perhaps",
    "analytics",
    "physics",
    "economics",
    "mathematics",
    "statistics",
    "logistics",
    "ethics",
    "politics",
    "sales",
    "kubernetes",
    "aws",
    "ios",
    "macos",
    "js",
    "nodejs",
    "css",
    "sas",
    "dns",
    "cms",
    "saas",
    "paas",
    "iaas",
    "devops",
    "gis",
    "nas",
    "os",
    "ms",
    "us",
    "yes",
    "is",
    "was",
    "has",
    "this",
    "thus",
    "plus",
    "bonus",
    "campus",
    "status",
    "virus",
    "focus",
    "canvas",
    "alias",
    "atlas",
    "gas",
    "bus",
    "lens",
];

/// The singular form of one lower-case word.
pub fn singular(word: &str) -> String {
    if let Some((_, s)) = IRREGULAR.iter().find(|(p, _)| *p == word) {
        return (*s).to_string();
    }
    if NOT_PLURAL.contains(&word) || word.chars().count() <= 3 || !word.ends_with('s') {
        return word.to_string();
    }
    // Plurals of words ending in s, x, z, ch, sh take "es"; consonant + y takes "ies".
    if let Some(stem) = word.strip_suffix("ies")
        && stem.chars().count() >= 2
    {
        return format!("{stem}y");
    }
    for suffix in ["sses", "xes", "zes", "ches", "shes"] {
        if word.ends_with(suffix) {
            return word[..word.len() - 2].to_string();
        }
    }
    if word.ends_with("ss") || word.ends_with("us") || word.ends_with("is") {
        return word.to_string();
    }
    word[..word.len() - 1].to_string()
}

/// Whether `c` belongs to a word: letters, digits, and the combining marks that are part of
/// letters in many scripts (Devanagari vowel signs, decomposed accents).
fn in_word(c: char) -> bool {
    c.is_alphanumeric() || unicode_normalization::char::is_combining_mark(c)
}

/// Splits text (normalised to NFC) into lower-case singular words, in order, repeats kept.
pub fn words(text: &str) -> impl Iterator<Item = String> {
    use unicode_normalization::UnicodeNormalization;
    let text: String = text.nfc().collect();
    text.split(|c: char| !in_word(c))
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .map(|w| singular(&w.to_lowercase()))
        .collect::<Vec<_>>()
        .into_iter()
}

/// The distinct terms of a document (title, description and company name), joined by single
/// spaces: the form both backends index.
pub fn document_terms(parts: &[&str]) -> String {
    let mut seen = std::collections::BTreeSet::new();
    for part in parts {
        for w in words(part) {
            if w.chars().count() <= MAX_TERM_CHARS {
                seen.insert(w);
            }
        }
    }
    seen.into_iter().collect::<Vec<_>>().join(" ")
}

/// The distinct terms of a query, sorted (so equal queries share a cache key). `None` when a
/// word is too long to be indexed: such a query matches nothing.
pub fn query_terms(q: &str) -> Option<Vec<String>> {
    let mut terms: Vec<String> = words(q).collect();
    if terms.iter().any(|t| t.chars().count() > MAX_TERM_CHARS) {
        return None;
    }
    terms.sort();
    terms.dedup();
    Some(terms)
}

/// The filters a search is made of, validated (by `GET /api/jobs` from its query string, by an
/// alert from its JSON body, through one function): text trimmed, an empty value unset. `q` and
/// `location` are kept as typed; [`terms`](Self::terms) and
/// [`location_needle`](Self::location_needle) are what a search matches with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchFilters {
    pub q: Option<String>,
    pub location: Option<String>,
    pub remote: Option<bool>,
    pub workplace: Option<super::pay_place::Workplace>,
    /// ISO 3166-1 alpha-2, upper-case.
    pub country: Option<String>,
    pub company_id: Option<i64>,
    pub salary_min: Option<i64>,
    /// One of [`super::pay_place::CURRENCIES`].
    pub salary_currency: Option<String>,
    pub employment_type: Option<super::EmploymentType>,
}

impl SearchFilters {
    /// The terms every match must have (none without `q`); `None` when a word of `q` is too
    /// long to be indexed, so that nothing matches.
    pub fn terms(&self) -> Option<Vec<String>> {
        match &self.q {
            None => Some(Vec::new()),
            Some(q) => query_terms(q),
        }
    }

    /// The pay-and-place filters in words, for a saved search's description: `hybrid`, `in
    /// country DE`, `paid in EUR` (with `salary_min`, the yearly top of ranges in it).
    pub fn pay_and_place_words(&self) -> Vec<String> {
        let workplace = self
            .workplace
            .map(|w| w.as_str().replace("onsite", "on-site"));
        let country = self.country.as_ref().map(|c| format!("in country {c}"));
        let currency = self
            .salary_currency
            .as_ref()
            .map(|c| format!("paid in {c}"));
        [workplace, country, currency]
            .into_iter()
            .flatten()
            .collect()
    }

    /// What `location` matches as: a lower-cased substring of a job's location.
    pub fn location_needle(&self) -> Option<String> {
        self.location.as_ref().map(|l| l.to_lowercase())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pay_and_place_in_words() {
        let f = SearchFilters {
            workplace: Some(super::super::pay_place::Workplace::Onsite),
            country: Some("DE".into()),
            salary_currency: Some("EUR".into()),
            ..SearchFilters::default()
        };
        assert_eq!(
            f.pay_and_place_words(),
            ["on-site", "in country DE", "paid in EUR"]
        );
        assert!(SearchFilters::default().pay_and_place_words().is_empty());
    }

    #[test]
    fn plural_and_singular_meet() {
        for (a, b) in [
            ("engineers", "engineer"),
            ("companies", "company"),
            ("boxes", "box"),
            ("matches", "match"),
            ("dishes", "dish"),
            ("classes", "class"),
            ("women", "woman"),
        ] {
            assert_eq!(singular(a), singular(b), "{a} / {b}");
        }
    }

    #[test]
    fn non_plurals_stay() {
        for w in [
            "status",
            "news",
            "class",
            "bus",
            "sales",
            "analysis",
            "kubernetes",
            "go",
        ] {
            assert_eq!(singular(w), w);
        }
        assert_ne!(singular("engineering"), singular("engineer"));
    }

    #[test]
    fn words_split_on_anything_but_letters_and_digits() {
        let got: Vec<String> =
            words("Senior Rust-Engineers (C++/Node.js) \"quoted\" a*b NEAR:x & y").collect();
        assert_eq!(
            got,
            vec![
                "senior", "rust", "engineer", "c", "node", "js", "quoted", "a", "b", "near", "x",
                "y"
            ]
        );
    }

    #[test]
    fn combining_marks_stay_inside_words() {
        let got: Vec<String> = words("शिक्षक e\u{301}cole").collect();
        assert_eq!(got, vec!["शिक्षक", "école"]);
        assert_eq!(words("\u{301}").count(), 0, "a lone accent is no word");
    }

    #[test]
    fn unicode_words_are_lower_cased() {
        let got: Vec<String> = words("Ingénieur MÜNCHEN Straße").collect();
        assert_eq!(got, vec!["ingénieur", "münchen", "straße"]);
    }

    #[test]
    fn document_terms_are_distinct_and_bounded() {
        let long = "x".repeat(MAX_TERM_CHARS + 1);
        let terms = document_terms(&["Rust engineers", &format!("rust {long}"), "Acme"]);
        assert_eq!(terms, "acme engineer rust");
    }

    #[test]
    fn query_terms_sorted_and_deduplicated() {
        assert_eq!(
            query_terms("Rust rust engineers").unwrap(),
            vec!["engineer", "rust"]
        );
        assert_eq!(query_terms("  ").unwrap(), Vec::<String>::new());
        assert!(query_terms(&"y".repeat(MAX_TERM_CHARS + 1)).is_none());
    }
}
