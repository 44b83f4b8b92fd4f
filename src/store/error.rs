//! What a store call can fail with.

use crate::domain::Conflict;

/// What a store call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    #[error("conflict: {0:?}")]
    Conflict(Conflict),
    /// A value of the request that the stored state refuses (422 naming `field`): a résumé
    /// that is not the caller's, say.
    #[error("{field}: {message}")]
    Invalid {
        field: &'static str,
        message: &'static str,
    },
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

pub type StoreResult<T> = Result<T, StoreError>;

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match e {
            sqlx::Error::RowNotFound => StoreError::NotFound,
            other => StoreError::Other(anyhow::Error::new(other)),
        }
    }
}

impl StoreError {
    /// Says which step failed: an `Other` error gets `what` as its context; `NotFound` and
    /// `Conflict` stay as they are, since callers decide by them.
    fn in_step<C>(self, what: C) -> StoreError
    where
        C: std::fmt::Display + Send + Sync + 'static,
    {
        match self {
            StoreError::Other(e) => StoreError::Other(e.context(what)),
            other => other,
        }
    }
}

/// Names the step of a store method that failed, the way `anyhow::Context` does, on a database
/// call's result (`Result<T, sqlx::Error>`) or on a [`StoreResult`]: a missing row still becomes
/// `NotFound`, a conflict stays a `Conflict`, and any other error keeps its cause (the
/// `sqlx::Error` stays in the chain, where [`is_database_timeout`](super::is_database_timeout)
/// finds it) under a message that says what was tried.
pub trait Step<T> {
    /// `what` names the step: "reading the job".
    fn step(self, what: &'static str) -> StoreResult<T>;
    /// A message made only if the step failed: `|| format!("claiming event {id}")`.
    fn with_step<C, F>(self, what: F) -> StoreResult<T>
    where
        C: std::fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> C;
}

impl<T> Step<T> for Result<T, sqlx::Error> {
    fn step(self, what: &'static str) -> StoreResult<T> {
        self.map_err(|e| StoreError::from(e).in_step(what))
    }

    fn with_step<C, F>(self, what: F) -> StoreResult<T>
    where
        C: std::fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> C,
    {
        self.map_err(|e| StoreError::from(e).in_step(what()))
    }
}

impl<T> Step<T> for StoreResult<T> {
    fn step(self, what: &'static str) -> StoreResult<T> {
        self.map_err(|e| e.in_step(what))
    }

    fn with_step<C, F>(self, what: F) -> StoreResult<T>
    where
        C: std::fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> C,
    {
        self.map_err(|e| e.in_step(what()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database error with a code, as the drivers report one.
    #[derive(Debug)]
    struct Coded(&'static str);

    impl std::fmt::Display for Coded {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "error with code {}", self.0)
        }
    }

    impl std::error::Error for Coded {}

    impl sqlx::error::DatabaseError for Coded {
        fn message(&self) -> &str {
            "canceling statement due to statement timeout"
        }
        fn code(&self) -> Option<std::borrow::Cow<'_, str>> {
            Some(self.0.into())
        }
        fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
            self
        }
        fn kind(&self) -> sqlx::error::ErrorKind {
            sqlx::error::ErrorKind::Other
        }
    }

    fn other(r: StoreResult<()>) -> anyhow::Error {
        match r {
            Err(StoreError::Other(e)) => e,
            other => panic!("expected Other, got {other:?}"),
        }
    }

    #[test]
    fn a_missing_row_stays_not_found_through_a_step() {
        let r: Result<(), sqlx::Error> = Err(sqlx::Error::RowNotFound);
        assert!(matches!(
            r.step("reading job 17"),
            Err(StoreError::NotFound)
        ));
        let r: StoreResult<()> = Err(StoreError::Conflict(Conflict::EmailTaken));
        assert!(matches!(
            r.with_step(|| "inserting the user"),
            Err(StoreError::Conflict(Conflict::EmailTaken))
        ));
    }

    #[test]
    fn a_step_names_itself_and_keeps_its_cause() {
        let r: Result<(), sqlx::Error> = Err(sqlx::Error::PoolTimedOut);
        let e = other(r.with_step(|| format!("claiming event {}", "E1")));
        assert_eq!(e.to_string(), "claiming event E1");
        assert!(format!("{e:#}").starts_with("claiming event E1: "));
        assert!(e.chain().any(|c| matches!(
            c.downcast_ref::<sqlx::Error>(),
            Some(sqlx::Error::PoolTimedOut)
        )));
    }

    #[test]
    fn a_timeout_is_found_through_the_steps() {
        for (code, timeout) in [("57014", true), ("55P03", true), ("23505", false)] {
            let r: Result<(), sqlx::Error> = Err(sqlx::Error::Database(Box::new(Coded(code))));
            let e = other(r.step("reading the job").step("renewing job 17"));
            assert_eq!(super::super::is_database_timeout(&e), timeout, "{code}");
        }
    }
}
