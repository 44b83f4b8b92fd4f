//! The search filters (`q`, `location`, `remote`, `workplace`, `country`, `company_id`,
//! `salary_min`, `salary_currency`, `employment_type`), validated by one function, [`search_filters`], whether they come from
//! `GET /api/jobs`'s query string or from an alert's JSON body (`search`): the same values pass,
//! with the same messages, and mean the same search.

use super::error::FieldErrors;
use super::extract::QueryParams;
use crate::domain::pay_place::{self, Workplace};
use crate::domain::search::{SearchFilters, query_terms};
use crate::domain::{EmploymentType, validate};
use serde_json::{Map, Value};

/// The most distinct words `q` may have.
pub const MAX_QUERY_WORDS: usize = 32;

/// Where filter values are read from, each read recording its own error.
pub(crate) trait FilterSource {
    /// The field as the client named it (`q`, or `search.q` in a body).
    fn field(&self, name: &str) -> String;
    /// A text value; absent or empty is `None`.
    fn text(&self, name: &str, errors: &mut FieldErrors) -> Option<String>;
    /// An integer in `min..=max`.
    fn int(&self, name: &str, min: i64, max: i64, errors: &mut FieldErrors) -> Option<i64>;
    fn bool(&self, name: &str, errors: &mut FieldErrors) -> Option<bool>;
}

/// The names [`search_filters`] reads.
pub(crate) const FILTER_FIELDS: &[&str] = &[
    "q",
    "location",
    "remote",
    "workplace",
    "country",
    "company_id",
    "salary_min",
    "salary_currency",
    "employment_type",
];

/// The filters `src` holds, by the rules of `GET /api/jobs`: `q` has at most
/// [`MAX_QUERY_WORDS`] distinct words, `location` is trimmed,
/// `company_id` is positive, `salary_min` is 0–10^9, `employment_type` is one of the four.
pub(crate) fn search_filters(src: &impl FilterSource, errors: &mut FieldErrors) -> SearchFilters {
    let trimmed = |v: String| Some(v.trim().to_string()).filter(|v| !v.is_empty());
    let q = src.text("q", errors).and_then(trimmed);
    if q.as_deref().is_some_and(|q| q.contains('\0')) {
        errors.add(src.field("q"), "must not hold a NUL character");
    }
    if let Some(Some(words)) = q.as_deref().map(query_terms)
        && words.len() > MAX_QUERY_WORDS
    {
        errors.add(
            src.field("q"),
            format!("at most {MAX_QUERY_WORDS} distinct words; narrow the search instead"),
        );
    }
    let location = src.text("location", errors).and_then(trimmed);
    let remote = src.bool("remote", errors);
    let workplace = src.text("workplace", errors).and_then(|w| {
        let parsed = Workplace::parse(&w);
        if parsed.is_none() {
            errors.add(src.field("workplace"), "must be onsite, hybrid or remote");
        }
        parsed
    });
    let country = src.text("country", errors).and_then(|c| {
        let parsed = pay_place::country(&c);
        if parsed.is_none() {
            errors.add(
                src.field("country"),
                "must be an ISO 3166-1 alpha-2 country code (DE, US, ...)",
            );
        }
        parsed
    });
    let company_id = src.int("company_id", 1, super::extract::ID_MAX, errors);
    let salary_min = src.int("salary_min", 0, validate::SALARY_MAX, errors);
    let salary_currency = src.text("salary_currency", errors).and_then(|c| {
        let parsed = pay_place::currency(&c);
        if parsed.is_none() {
            errors.add(
                src.field("salary_currency"),
                format!("must be one of {}", pay_place::CURRENCIES.join(", ")),
            );
        }
        parsed.map(str::to_string)
    });
    let employment_type = src.text("employment_type", errors).and_then(|t| {
        let parsed = EmploymentType::parse(&t);
        if parsed.is_none() {
            errors.add(
                src.field("employment_type"),
                "must be full_time, part_time, contract or internship",
            );
        }
        parsed
    });
    SearchFilters {
        q,
        location,
        remote,
        workplace,
        country,
        company_id,
        salary_min,
        salary_currency,
        employment_type,
    }
}

impl FilterSource for QueryParams {
    fn field(&self, name: &str) -> String {
        name.to_string()
    }

    fn text(&self, name: &str, _: &mut FieldErrors) -> Option<String> {
        self.get(name).map(str::to_string)
    }

    fn int(&self, name: &str, min: i64, max: i64, errors: &mut FieldErrors) -> Option<i64> {
        QueryParams::int(self, name, min, max, errors)
    }

    fn bool(&self, name: &str, errors: &mut FieldErrors) -> Option<bool> {
        QueryParams::bool(self, name, errors)
    }
}

/// The filters of a JSON object (an alert's `search`), its fields named `{prefix}.{name}`.
/// `null` is unset, as an absent field is; values have their JSON types (a number, a boolean).
pub(crate) struct JsonFilters<'a> {
    fields: &'a Map<String, Value>,
    prefix: &'static str,
}

impl<'a> JsonFilters<'a> {
    /// The filters of `value`; an error under `prefix` if it is not an object, under
    /// `{prefix}.{key}` for a key that is not a filter.
    pub(crate) fn new(
        value: &'a Value,
        prefix: &'static str,
        errors: &mut FieldErrors,
    ) -> Option<JsonFilters<'a>> {
        let Some(fields) = value.as_object() else {
            errors.add(prefix, "must be a JSON object");
            return None;
        };
        for key in fields.keys() {
            if !FILTER_FIELDS.contains(&key.as_str()) {
                errors.add(format!("{prefix}.{key}"), "is not a known field");
            }
        }
        Some(JsonFilters { fields, prefix })
    }

    fn value(&self, name: &str) -> Option<&'a Value> {
        self.fields.get(name).filter(|v| !v.is_null())
    }
}

impl FilterSource for JsonFilters<'_> {
    fn field(&self, name: &str) -> String {
        format!("{}.{name}", self.prefix)
    }

    fn text(&self, name: &str, errors: &mut FieldErrors) -> Option<String> {
        match self.value(name)? {
            Value::String(s) => Some(s.clone()).filter(|s| !s.is_empty()),
            _ => {
                errors.add(self.field(name), "must be a string");
                None
            }
        }
    }

    fn int(&self, name: &str, min: i64, max: i64, errors: &mut FieldErrors) -> Option<i64> {
        match self.value(name)?.as_i64() {
            Some(n) if (min..=max).contains(&n) => Some(n),
            _ => {
                errors.add(
                    self.field(name),
                    format!("must be an integer from {min} to {max}"),
                );
                None
            }
        }
    }

    fn bool(&self, name: &str, errors: &mut FieldErrors) -> Option<bool> {
        match self.value(name)? {
            Value::Bool(b) => Some(*b),
            _ => {
                errors.add(self.field(name), "must be true or false");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn from_query(pairs: &[(&str, &str)]) -> (SearchFilters, FieldErrors) {
        let q = QueryParams(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        let mut errors = FieldErrors::default();
        (search_filters(&q, &mut errors), errors)
    }

    fn from_json(value: Value) -> (SearchFilters, FieldErrors) {
        let mut errors = FieldErrors::default();
        let filters = match JsonFilters::new(&value, "search", &mut errors) {
            Some(src) => search_filters(&src, &mut errors),
            None => SearchFilters::default(),
        };
        (filters, errors)
    }

    /// The same values, as a query string and as JSON, give the same filters or the same
    /// messages (named `q` and `search.q`).
    #[test]
    fn a_query_string_and_a_body_are_validated_alike() {
        // More distinct words than a search may have.
        let many: String = (0..40).map(|i| format!("w{i} ")).collect();
        let cases: Vec<(Vec<(&str, &str)>, Value)> = vec![
            (
                vec![
                    ("q", " Rust  engineers "),
                    ("location", " Berlin "),
                    ("remote", "true"),
                    ("company_id", "7"),
                    ("salary_min", "50000"),
                    ("employment_type", "contract"),
                    ("workplace", "hybrid"),
                    ("country", "de"),
                    ("salary_currency", "EUR"),
                ],
                json!({"q": " Rust  engineers ", "location": " Berlin ", "remote": true,
                    "company_id": 7, "salary_min": 50000, "employment_type": "contract",
                    "workplace": "hybrid", "country": "de", "salary_currency": "EUR"}),
            ),
            (
                vec![
                    ("workplace", "office"),
                    ("country", "ZZ"),
                    ("salary_currency", "eur"),
                ],
                json!({"workplace": "office", "country": "ZZ", "salary_currency": "eur"}),
            ),
            (
                vec![("q", ""), ("location", "  ")],
                json!({"q": "", "location": "  "}),
            ),
            (vec![], json!({"q": null, "remote": null})),
            (
                vec![
                    ("company_id", "0"),
                    ("salary_min", "1000000001"),
                    ("employment_type", "gig"),
                ],
                json!({"company_id": 0, "salary_min": 1_000_000_001i64, "employment_type": "gig"}),
            ),
            (vec![("salary_min", "-1")], json!({"salary_min": -1})),
            (
                vec![("q", &many), ("remote", "maybe")],
                json!({"q": many, "remote": "maybe"}),
            ),
        ];
        for (pairs, body) in cases {
            let (a, ea) = from_query(&pairs);
            let (b, eb) = from_json(body.clone());
            assert_eq!(a, b, "{pairs:?} / {body}");
            let renamed: Vec<(String, Vec<String>)> =
                ea.0.into_iter()
                    .map(|(k, v)| (format!("search.{k}"), v))
                    .collect();
            assert_eq!(renamed, eb.0.into_iter().collect::<Vec<_>>(), "{body}");
        }
        let (f, _) = from_query(&[("q", " Rust "), ("location", " Berlin "), ("country", "de")]);
        assert_eq!(f.q.as_deref(), Some("Rust"));
        assert_eq!(f.country.as_deref(), Some("DE"));
        let (_, errors) = from_query(&[("workplace", "office"), ("salary_currency", "XYZ")]);
        assert_eq!(
            errors.0.keys().collect::<Vec<_>>(),
            ["salary_currency", "workplace"]
        );
        assert_eq!(f.location_needle().as_deref(), Some("berlin"));
    }

    #[test]
    fn a_body_names_its_wrong_types_and_unknown_fields() {
        let (_, errors) = from_json(json!({"q": 5, "company_id": "7", "remote": "true",
            "sort": "newest", "page": 2}));
        let fields: Vec<&str> = errors.0.keys().map(String::as_str).collect();
        assert_eq!(
            fields,
            [
                "search.company_id",
                "search.page",
                "search.q",
                "search.remote",
                "search.sort"
            ]
        );
        let (_, errors) = from_json(json!(["q"]));
        assert_eq!(errors.0.keys().collect::<Vec<_>>(), ["search"]);
    }
}
