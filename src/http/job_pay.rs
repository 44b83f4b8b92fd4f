//! A job's pay and place as a creation or a PATCH sends them (docs/api.md, Jobs, "Pay and
//! place"): `workplace`, `locations` and `salary`, or their older forms `remote`, `location`,
//! `salary_min` and `salary_max`, resolved over what the job has into one [`PayPlace`].

use super::error::FieldErrors;
use crate::domain::pay_place::{self, Place, Salary, Workplace};
use crate::domain::validate;
use crate::domain::values::SalaryRange;
use crate::store::JobRow;

/// A job's pay and place, complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PayPlace {
    pub(super) workplace: Workplace,
    pub(super) locations: Vec<Place>,
    pub(super) salary: Option<Salary>,
}

impl PayPlace {
    pub(super) fn of(job: &JobRow) -> PayPlace {
        PayPlace {
            workplace: job.workplace(),
            locations: job.places(),
            salary: job.salary(),
        }
    }
}

/// Pay and place as a creation or a PATCH sends them: absent `None`, `null` `Some(None)` (or
/// `Some(Value::Null)`), in the fields of this release and in the older ones (CONTRACT.md §4,
/// "Pay and place"). A field and its older form are not sent together.
#[derive(Debug, Default)]
pub(super) struct PayPlaceIn {
    pub(super) workplace: Option<Option<String>>,
    pub(super) locations: Option<serde_json::Value>,
    pub(super) salary: Option<serde_json::Value>,
    pub(super) location: Option<Option<String>>,
    pub(super) remote: Option<Option<bool>>,
    pub(super) salary_min: Option<Option<i64>>,
    pub(super) salary_max: Option<Option<i64>>,
}

impl PayPlaceIn {
    /// The pay and place the job will have: what is sent over `current` (none: a creation,
    /// which must state a workplace and its places). Every problem is recorded under its field.
    pub(super) fn resolve(
        self,
        current: Option<PayPlace>,
        require_salary: bool,
        errors: &mut FieldErrors,
    ) -> Option<PayPlace> {
        let not_both = |errors: &mut FieldErrors, older: &str, newer: &str| {
            errors.add(
                older,
                format!("is the older form of {newer}: send one of them"),
            );
        };
        let workplace = match (self.workplace, self.remote) {
            (Some(_), Some(_)) => {
                not_both(errors, "remote", "workplace");
                None
            }
            (Some(Some(w)), None) => errors.check(
                "workplace",
                Workplace::parse(&w).ok_or_else(|| "must be onsite, hybrid or remote".to_string()),
            ),
            (None, Some(Some(remote))) => Some(Workplace::of_remote(remote)),
            (Some(None), None) => {
                errors.add("workplace", "must not be null");
                None
            }
            (None, Some(None)) => {
                errors.add("remote", "must not be null");
                None
            }
            (None, None) => match &current {
                Some(c) => Some(c.workplace),
                None => {
                    errors.add("workplace", "is required: onsite, hybrid or remote");
                    None
                }
            },
        };
        let locations = match (self.locations, self.location) {
            (Some(_), Some(_)) => {
                not_both(errors, "location", "locations");
                None
            }
            (Some(v), None) => match pay_place::parse_locations(&v) {
                Ok(places) => Some(places),
                Err((field, message)) => {
                    errors.add(&field, message);
                    None
                }
            },
            (None, Some(Some(text))) => errors
                .check("location", validate::location(&text))
                .map(|t| pay_place::places_of_text(&t)),
            (None, Some(None)) => {
                errors.add("location", "must not be null");
                None
            }
            (None, None) => match &current {
                Some(c) => Some(c.locations.clone()),
                None => {
                    errors.add(
                        "locations",
                        "is required: 1 to 10 places {city, region, country}",
                    );
                    None
                }
            },
        };
        let old_salary = current.as_ref().and_then(|c| c.salary.clone());
        let older_range = self.salary_min.is_some() || self.salary_max.is_some();
        // A job's pay is judged when it is made or its pay is written: a job already without
        // pay keeps taking edits of its other fields.
        let pay_written = current.is_none() || self.salary.is_some() || older_range;
        let salary = match self.salary {
            Some(_) if older_range => {
                let older = if self.salary_min.is_some() {
                    "salary_min"
                } else {
                    "salary_max"
                };
                not_both(errors, older, "salary");
                None
            }
            // A JSON Merge Patch of an object merges into the stored one.
            Some(serde_json::Value::Object(patch)) => {
                let mut merged = old_salary
                    .as_ref()
                    .and_then(|s| serde_json::to_value(s).ok())
                    .and_then(|v| v.as_object().cloned())
                    .unwrap_or_default();
                for (k, v) in patch {
                    if v.is_null() {
                        merged.remove(&k);
                    } else {
                        merged.insert(k, v);
                    }
                }
                match pay_place::parse_salary(&serde_json::Value::Object(merged)) {
                    Ok(s) => Some(s),
                    Err((field, message)) => {
                        errors.add(&field, message);
                        None
                    }
                }
            }
            Some(other) => match pay_place::parse_salary(&other) {
                Ok(s) => Some(s),
                Err((field, message)) => {
                    errors.add(&field, message);
                    None
                }
            },
            None if older_range => {
                let min = self
                    .salary_min
                    .unwrap_or(old_salary.as_ref().and_then(|s| s.min));
                let max = self
                    .salary_max
                    .unwrap_or(old_salary.as_ref().and_then(|s| s.max));
                // Written alone, the older range is in DEFAULT_SALARY_CURRENCY per year, the
                // only pay its clients know (the end not sent stays as they read it).
                match SalaryRange::parse(min, max) {
                    Ok(r) => Some(Salary::older(r.min(), r.max())),
                    Err(problems) => {
                        for (field, message) in problems {
                            errors.add(field, message);
                        }
                        None
                    }
                }
            }
            None => Some(old_salary),
        };
        if require_salary && pay_written && salary == Some(None) {
            errors.add(
                "salary",
                "is required on this board: a pay range {min, max, currency, period}",
            );
        }
        Some(PayPlace {
            workplace: workplace?,
            locations: locations?,
            salary: salary?,
        })
    }
}
