//! Webhook endpoints' rules (CONTRACT.md §4, "Webhooks"): which events an endpoint may
//! subscribe to, how many endpoints a company may have, and their texts' limits.

use super::validate::{self, FieldError};

/// The most endpoints one company may have.
pub const MAX_ENDPOINTS_PER_COMPANY: i64 = 10;

/// The longest URL an endpoint may have, in bytes (as a company's website).
pub const MAX_URL_LEN: usize = 2048;

/// The longest description, in code points (a one-line text).
pub const MAX_DESCRIPTION: usize = 200;

/// The event types (§5) an endpoint may subscribe to: those about a company's jobs and
/// applications, in the order the contract lists them.
pub const EVENT_TYPES: [&str; 5] = [
    "application.submitted",
    "application.status_changed",
    "job.expiring",
    "job.expired",
    "job.reviewed",
];

/// The event types of an endpoint: a non-empty list of [`EVENT_TYPES`], each once. Returned in
/// the contract's order, so that two lists with the same types are stored alike.
pub fn events(given: &[String]) -> Result<Vec<&'static str>, FieldError> {
    if given.is_empty() {
        return Err(format!(
            "must name at least one of {}",
            EVENT_TYPES.join(", ")
        ));
    }
    let mut chosen = Vec::with_capacity(given.len());
    for name in given {
        let Some(known) = EVENT_TYPES.iter().find(|t| **t == name.as_str()) else {
            return Err(format!(
                "{:?} is not an event type an endpoint can receive; one of {}",
                validate::fold_one_line(name),
                EVENT_TYPES.join(", ")
            ));
        };
        if chosen.contains(known) {
            return Err(format!("{known} is named twice"));
        }
        chosen.push(*known);
    }
    chosen.sort_by_key(|t| EVENT_TYPES.iter().position(|k| k == t));
    Ok(chosen)
}

/// The event types as stored: space-separated.
pub fn events_text(events: &[&str]) -> String {
    events.join(" ")
}

/// The event types of a stored endpoint (types this release does not know are kept, so that an
/// older release never drops a newer one's subscription when it writes the row back).
pub fn stored_events(text: &str) -> Vec<String> {
    text.split(' ')
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// An endpoint's description: a one-line text of at most [`MAX_DESCRIPTION`] code points.
pub fn description(value: &str) -> Result<String, FieldError> {
    validate::one_line(value, 0, MAX_DESCRIPTION)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn events_are_known_types_each_once_in_the_contracts_order() {
        assert_eq!(
            events(&names(&["job.expired", "application.submitted"])).unwrap(),
            ["application.submitted", "job.expired"]
        );
        assert!(events(&[]).is_err());
        assert!(events(&names(&["ping"])).is_err());
        assert!(events(&names(&["webhook.disabled"])).is_err());
        assert!(events(&names(&["job.expired", "job.expired"])).is_err());
        assert!(events(&names(&["Job.Expired"])).is_err());
        let all = events(&names(&EVENT_TYPES)).unwrap();
        assert_eq!(stored_events(&events_text(&all)), EVENT_TYPES);
    }

    #[test]
    fn a_description_is_one_line() {
        assert_eq!(description("  ATS sync ").unwrap(), "ATS sync");
        assert!(description("two\nlines").is_err());
        assert!(description(&"x".repeat(MAX_DESCRIPTION + 1)).is_err());
    }
}
