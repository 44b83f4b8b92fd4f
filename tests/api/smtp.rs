//! The SMTP side of the worker's promise. The server itself, a real one for tests, is
//! [`fixture`] (the chaos run compiles that file alone).

mod fixture;
pub use fixture::*;
