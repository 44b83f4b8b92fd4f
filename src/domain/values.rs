//! Values parsed once at the edge. Each type can be made only by its `parse` (which applies
//! the rule in [`validate`]), so an unvalidated value cannot reach the store.

use super::validate::{self, FieldError};
use std::fmt;

/// An email address as given (trimmed); accounts are found and kept unique by its [`key`].
///
/// [`key`]: Email::key
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email(String);

impl Email {
    pub fn parse(raw: &str) -> Result<Email, FieldError> {
        validate::email(raw).map(Email)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The case-insensitive form, for uniqueness and look-ups.
    pub fn key(&self) -> String {
        validate::email_key(&self.0)
    }
}

/// A new password that passed the rules, kept exactly as given. `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct NewPassword(String);

impl NewPassword {
    pub fn parse(raw: &str) -> Result<NewPassword, FieldError> {
        validate::new_password(raw).map(|()| NewPassword(raw.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for NewPassword {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("NewPassword(***)")
    }
}

/// A job's title: trimmed, 1–200 code points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Title(String);

impl Title {
    pub fn parse(raw: &str) -> Result<Title, FieldError> {
        validate::job_title(raw).map(Title)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A yearly salary range: each end optional, each from 0 to [`validate::SALARY_MAX`], the
/// minimum never above the maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SalaryRange {
    min: Option<i64>,
    max: Option<i64>,
}

impl SalaryRange {
    /// The range, or each field's problem as `(field, message)`.
    pub fn parse(
        min: Option<i64>,
        max: Option<i64>,
    ) -> Result<SalaryRange, Vec<(&'static str, FieldError)>> {
        let mut problems = Vec::new();
        let mut check = |field, v: Option<i64>| match v.map(validate::salary) {
            Some(Err(m)) => {
                problems.push((field, m));
                None
            }
            other => other.and_then(Result::ok),
        };
        let (min, max) = (check("salary_min", min), check("salary_max", max));
        if let (Some(lo), Some(hi)) = (min, max)
            && lo > hi
        {
            problems.push((
                "salary_min",
                "must not be greater than salary_max".to_string(),
            ));
        }
        if problems.is_empty() {
            Ok(SalaryRange { min, max })
        } else {
            Err(problems)
        }
    }

    pub fn min(&self) -> Option<i64> {
        self.min
    }

    pub fn max(&self) -> Option<i64> {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_made_only_from_valid_input() {
        let email = Email::parse(" Ann@Example.com ").unwrap();
        assert_eq!(
            (email.as_str(), email.key().as_str()),
            ("Ann@Example.com", "ann@example.com")
        );
        assert!(Email::parse("ann").is_err());
        assert!(NewPassword::parse("password").is_err());
        let password = NewPassword::parse("correct horse battery staple").unwrap();
        assert_eq!(format!("{password:?}"), "NewPassword(***)");
        assert_eq!(
            Title::parse("  Rust engineer ").unwrap().as_str(),
            "Rust engineer"
        );
        assert!(Title::parse("   ").is_err());
    }

    #[test]
    fn salary_ranges() {
        let r = SalaryRange::parse(Some(10), Some(20)).unwrap();
        assert_eq!((r.min(), r.max()), (Some(10), Some(20)));
        assert_eq!(
            SalaryRange::parse(None, None).unwrap(),
            SalaryRange::default()
        );
        assert_eq!(
            SalaryRange::parse(Some(30), Some(20)).unwrap_err(),
            vec![(
                "salary_min",
                "must not be greater than salary_max".to_string()
            )]
        );
        let both = SalaryRange::parse(Some(-1), Some(2_000_000_000)).unwrap_err();
        assert_eq!(
            both.iter().map(|(f, _)| *f).collect::<Vec<_>>(),
            ["salary_min", "salary_max"]
        );
    }
}
