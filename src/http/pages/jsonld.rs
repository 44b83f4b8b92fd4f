//! The `JobPosting` structured data of an open job's page (schema.org, as Google's job search
//! reads it): every property Google requires, and those it recommends that the job has.
//!
//! Required: `title`, `description` (HTML), `datePosted`, `hiringOrganization`, and
//! `jobLocation` — or, for a job done entirely remotely, `jobLocationType: TELECOMMUTE` with
//! `applicantLocationRequirements`. Recommended, when the job has them: `validThrough`
//! (`expires_at`), `employmentType`, `baseSalary`, `identifier`, `directApply`.
//!
//! A job that cannot state a required property (no description; no place, where its kind of
//! workplace needs one) gets no `JobPosting`: Google drops a posting that lacks one, and a
//! guess would be false data.

use super::listing::{Listing, Place, Workplace};
use super::markup::{paragraphs, w3c};
use crate::domain::EmploymentType;
use serde_json::{Map, Value, json};

/// The posting; `None` when a required property has no value.
pub(super) fn job_posting(job: &Listing, url: &str, direct_apply: bool) -> Option<Value> {
    if job.description.is_empty() {
        return None;
    }
    let mut p = Map::new();
    p.insert("@context".into(), json!("https://schema.org/"));
    p.insert("@type".into(), json!("JobPosting"));
    p.insert("title".into(), json!(job.title));
    p.insert("description".into(), json!(paragraphs(&job.description)));
    p.insert("datePosted".into(), json!(w3c(job.created_at)));
    p.insert(
        "hiringOrganization".into(),
        json!({"@type": "Organization", "name": job.company}),
    );
    match job.workplace {
        Workplace::Remote => {
            if job.places.is_empty() {
                return None;
            }
            p.insert("jobLocationType".into(), json!("TELECOMMUTE"));
            let areas: Vec<Value> = job.places.iter().map(applicant_area).collect();
            p.insert("applicantLocationRequirements".into(), Value::Array(areas));
        }
        Workplace::Onsite | Workplace::Hybrid => {
            if job.places.is_empty() {
                return None;
            }
            let places: Vec<Value> = job.places.iter().map(job_location).collect();
            p.insert("jobLocation".into(), Value::Array(places));
        }
    }
    if let Some(until) = job.expires_at {
        p.insert("validThrough".into(), json!(w3c(until)));
    }
    p.insert("employmentType".into(), json!(employment_type(job.kind)));
    if let Some(pay) = &job.pay {
        let mut value = Map::new();
        value.insert("@type".into(), json!("QuantitativeValue"));
        match (pay.min, pay.max) {
            (Some(a), Some(b)) if a == b => {
                value.insert("value".into(), json!(a));
            }
            (min, max) => {
                if let Some(a) = min {
                    value.insert("minValue".into(), json!(a));
                }
                if let Some(b) = max {
                    value.insert("maxValue".into(), json!(b));
                }
            }
        }
        value.insert("unitText".into(), json!(pay.period.unit()));
        p.insert(
            "baseSalary".into(),
            json!({"@type": "MonetaryAmount", "currency": pay.currency, "value": value}),
        );
    }
    p.insert(
        "identifier".into(),
        json!({"@type": "PropertyValue", "name": job.company, "value": job.id.to_string()}),
    );
    p.insert("directApply".into(), json!(direct_apply));
    p.insert("url".into(), json!(url));
    Some(Value::Object(p))
}

/// schema.org's `employmentType` values, as Google lists them.
fn employment_type(kind: EmploymentType) -> &'static str {
    match kind {
        EmploymentType::FullTime => "FULL_TIME",
        EmploymentType::PartTime => "PART_TIME",
        EmploymentType::Contract => "CONTRACTOR",
        EmploymentType::Internship => "INTERN",
    }
}

/// A place of work: a `Place` with its postal address, as far as it is known.
fn job_location(place: &Place) -> Value {
    let mut address = Map::new();
    address.insert("@type".into(), json!("PostalAddress"));
    address.insert(
        "addressLocality".into(),
        json!(place.city.as_deref().unwrap_or(&place.text)),
    );
    if let Some(region) = &place.region {
        address.insert("addressRegion".into(), json!(region));
    }
    if let Some(country) = &place.country {
        address.insert("addressCountry".into(), json!(country));
    }
    json!({"@type": "Place", "address": address})
}

/// Where a remote job's candidates may live: its country when known, else the place as named.
fn applicant_area(place: &Place) -> Value {
    match &place.country {
        Some(country) if place.city.is_none() && place.region.is_none() => {
            json!({"@type": "Country", "name": country})
        }
        _ => json!({"@type": "AdministrativeArea", "name": place.text}),
    }
}
