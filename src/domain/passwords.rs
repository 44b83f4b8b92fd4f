//! The common passwords that registration refuses, compared case-insensitively.

use std::collections::HashSet;
use std::sync::OnceLock;

const LIST: &str = include_str!("common-passwords.txt");

fn list() -> &'static HashSet<String> {
    static SET: OnceLock<HashSet<String>> = OnceLock::new();
    SET.get_or_init(|| {
        LIST.lines()
            .map(|l| l.trim().to_lowercase())
            .filter(|l| !l.is_empty())
            .collect()
    })
}

/// Whether `password` is on the list of common passwords.
pub fn is_common(password: &str) -> bool {
    list().contains(&password.trim().to_lowercase())
}
