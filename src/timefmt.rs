//! Timestamps as the contract writes them: RFC 3339 UTC with microseconds,
//! `YYYY-MM-DDTHH:MM:SS.ffffffZ`.

use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};
use serde::{Deserialize, Deserializer, Serializer};

/// Now, truncated to the microsecond that both databases store.
pub fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}

pub fn format(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format(t))
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    let s = String::deserialize(d)?;
    DateTime::parse_from_rfc3339(&s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(serde::de::Error::custom)
}

/// The same format for an optional time (`null` when absent), for `#[serde(with)]`.
pub mod option {
    use chrono::{DateTime, Utc};
    use serde::Serializer;

    pub fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => super::serialize(t, s),
            None => s.serialize_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_with_micros_and_z() {
        let t = chrono::DateTime::parse_from_rfc3339("2026-12-02T10:00:00.5+00:00")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(super::format(&t), "2026-12-02T10:00:00.500000Z");
    }
}
