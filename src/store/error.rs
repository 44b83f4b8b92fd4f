//! What a store call can fail with.

use crate::domain::Conflict;

/// What a store call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    #[error("conflict: {0:?}")]
    Conflict(Conflict),
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
