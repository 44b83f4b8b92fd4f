//! Pay and place (CONTRACT.md §4, "Jobs"): a job's `workplace` (on-site, hybrid or remote), its
//! 1–10 `locations` (`{city, region, country}`, the country an ISO 3166-1 alpha-2 code, unknown
//! only for a place written as the older free text), and its `salary` (`{min, max, currency,
//! period}`, the currency ISO 4217 from a fixed list). The older fields derive from these:
//! `remote` is `workplace == remote`, `location` the first place as text, `salary_min` and
//! `salary_max` the range. A search's `salary_currency` compares the top of a range as a yearly
//! amount ([`Period::yearly`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::OnceLock;

pub const MAX_LOCATIONS: usize = 10;
pub const CITY_MAX: usize = 100;
pub const REGION_MAX: usize = 100;

/// Where the work is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Workplace {
    Onsite,
    Hybrid,
    Remote,
}

impl Workplace {
    pub const ALL: [Workplace; 3] = [Workplace::Onsite, Workplace::Hybrid, Workplace::Remote];

    pub fn as_str(self) -> &'static str {
        match self {
            Workplace::Onsite => "onsite",
            Workplace::Hybrid => "hybrid",
            Workplace::Remote => "remote",
        }
    }

    pub fn parse(s: &str) -> Option<Workplace> {
        Workplace::ALL.into_iter().find(|w| w.as_str() == s)
    }

    /// The older `remote` flag's workplace.
    pub fn of_remote(remote: bool) -> Workplace {
        if remote {
            Workplace::Remote
        } else {
            Workplace::Onsite
        }
    }
}

/// What a salary's amounts are per.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Period {
    Hour,
    Day,
    Week,
    Month,
    Year,
}

impl Period {
    pub const ALL: [Period; 5] = [
        Period::Hour,
        Period::Day,
        Period::Week,
        Period::Month,
        Period::Year,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Period::Hour => "hour",
            Period::Day => "day",
            Period::Week => "week",
            Period::Month => "month",
            Period::Year => "year",
        }
    }

    pub fn parse(s: &str) -> Option<Period> {
        Period::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// `amount` per this period as a yearly amount: hour × 2 080, day × 260, week × 52,
    /// month × 12.
    pub fn yearly(self, amount: i64) -> i64 {
        amount.saturating_mul(match self {
            Period::Hour => 2_080,
            Period::Day => 260,
            Period::Week => 52,
            Period::Month => 12,
            Period::Year => 1,
        })
    }
}

/// The ISO 4217 currencies a salary may be stated in: those of the economies with boards of
/// their own, a fixed list so that a typo is refused rather than stored as a currency nobody
/// searches in.
pub const CURRENCIES: &[&str] = &[
    "AED", "ARS", "AUD", "BGN", "BRL", "CAD", "CHF", "CLP", "CNY", "COP", "CZK", "DKK", "EGP",
    "EUR", "GBP", "HKD", "HUF", "IDR", "ILS", "INR", "ISK", "JPY", "KES", "KRW", "MXN", "MYR",
    "NGN", "NOK", "NZD", "PEN", "PHP", "PKR", "PLN", "RON", "RSD", "SAR", "SEK", "SGD", "THB",
    "TRY", "TWD", "UAH", "USD", "VND", "ZAR",
];

/// An ISO 4217 code of [`CURRENCIES`], as the OpenAPI document types it (an enum of them).
pub struct Currency;

impl utoipa::PartialSchema for Currency {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some(
                "ISO 4217, upper case, one of the currencies the board takes",
            ))
            .enum_values(Some(CURRENCIES.iter().copied()))
            .into()
    }
}

impl utoipa::ToSchema for Currency {}

/// `code` if it is one of [`CURRENCIES`] (upper-case, as ISO 4217 writes it).
pub fn currency(code: &str) -> Option<&'static str> {
    CURRENCIES.iter().copied().find(|c| *c == code)
}

/// `DEFAULT_SALARY_CURRENCY`, the currency of salaries stored before pay had a currency: set
/// once as the process starts (`config`), read wherever such a job is shown, indexed or matched.
static DEFAULT_CURRENCY: OnceLock<&'static str> = OnceLock::new();

/// Sets `DEFAULT_SALARY_CURRENCY` for this process; the first value set stays (the process
/// serves one configuration). Returns the value in force.
pub fn set_default_currency(code: &'static str) -> &'static str {
    DEFAULT_CURRENCY.get_or_init(|| code)
}

/// `DEFAULT_SALARY_CURRENCY` (`USD` until it is set).
pub fn default_currency() -> &'static str {
    DEFAULT_CURRENCY.get().copied().unwrap_or("USD")
}

/// The places stored as JSON (`None`: none stored, or not a list of places).
pub fn stored_places(stored: Option<&str>) -> Option<Vec<Place>> {
    serde_json::from_str(stored?).ok()
}

/// Places as stored.
pub fn places_to_stored(places: &[Place]) -> String {
    serde_json::to_string(places).unwrap_or_else(|_| "[]".to_string())
}

/// The places an older free-text `location` stands for: one, its country unknown, or none for
/// an empty text.
pub fn places_of_text(location: &str) -> Vec<Place> {
    if location.is_empty() {
        Vec::new()
    } else {
        vec![Place::of_text(location)]
    }
}

/// Whether `code` is an ISO 3166-1 alpha-2 country code (assigned, or user-assigned `XK`).
pub fn country(code: &str) -> Option<String> {
    let up = code.to_ascii_uppercase();
    (up.len() == 2 && COUNTRIES.split(' ').any(|c| c == up)).then_some(up)
}

/// Every assigned ISO 3166-1 alpha-2 code, and `XK` (Kosovo, as boards and Google use it).
const COUNTRIES: &str = "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI \
BJ BL BM BN BO BQ BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE \
DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS \
GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW \
KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW \
MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO \
RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM \
TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS XK YE YT ZA ZM ZW";

/// A place a job is done in, or (remote) where its candidates may live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Place {
    pub city: String,
    #[schema(required = true)]
    pub region: Option<String>,
    /// ISO 3166-1 alpha-2; `null` only for a place written as the older free-text `location`,
    /// until a member sets it.
    #[schema(required = true)]
    pub country: Option<String>,
}

impl Place {
    /// The place as the older `location` text: its parts that are known, joined by ", ".
    pub fn text(&self) -> String {
        [
            Some(self.city.as_str()),
            self.region.as_deref(),
            self.country.as_deref(),
        ]
        .into_iter()
        .flatten()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
    }

    /// The one place an older free-text `location` stands for (its country unknown).
    pub fn of_text(location: &str) -> Place {
        Place {
            city: location.to_string(),
            region: None,
            country: None,
        }
    }
}

/// A member's `locations`: 1–[`MAX_LOCATIONS`] `{city, region?, country}`; `Err((field,
/// message))` names what does not fit (`locations[i].country`, say).
pub fn parse_locations(value: &Value) -> Result<Vec<Place>, (String, String)> {
    let Some(items) = value.as_array() else {
        return Err(("locations".into(), "must be an array of places".into()));
    };
    if items.is_empty() || items.len() > MAX_LOCATIONS {
        return Err((
            "locations".into(),
            format!("must hold 1 to {MAX_LOCATIONS} places"),
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let field = |name: &str| format!("locations[{i}].{name}");
        let Some(obj) = item.as_object() else {
            return Err((format!("locations[{i}]"), "must be an object".into()));
        };
        if let Some(unknown) = obj
            .keys()
            .find(|k| !matches!(k.as_str(), "city" | "region" | "country"))
        {
            return Err((field(unknown), "is not a field of a place".into()));
        }
        let city = match obj.get("city").and_then(Value::as_str) {
            Some(c) => super::validate::one_line(c, 1, CITY_MAX).map_err(|m| (field("city"), m))?,
            None => return Err((field("city"), "is required: a string".into())),
        };
        let region = match obj.get("region") {
            None | Some(Value::Null) => None,
            Some(Value::String(r)) => Some(
                super::validate::one_line(r, 1, REGION_MAX).map_err(|m| (field("region"), m))?,
            ),
            Some(_) => return Err((field("region"), "must be a string or null".into())),
        };
        let country = match obj.get("country").and_then(Value::as_str).map(country) {
            Some(Some(c)) => c,
            _ => {
                return Err((
                    field("country"),
                    "is required: an ISO 3166-1 alpha-2 code (DE, US, ...)".into(),
                ));
            }
        };
        let place = Place {
            city,
            region,
            country: Some(country),
        };
        // The older `location` is the first place as text, at most 200 code points.
        if place.text().chars().count() > super::validate::LOCATION_MAX {
            return Err((
                format!("locations[{i}]"),
                format!(
                    "city, region and country together are at most {} characters",
                    super::validate::LOCATION_MAX
                ),
            ));
        }
        out.push(place);
    }
    Ok(out)
}

/// A job's pay: a range in one currency per one period.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Salary {
    #[schema(required = true)]
    pub min: Option<i64>,
    #[schema(required = true)]
    pub max: Option<i64>,
    /// ISO 4217.
    #[schema(value_type = Currency)]
    pub currency: String,
    pub period: Period,
}

impl Salary {
    /// The range as the older `salary_min` and `salary_max` state it: in
    /// `DEFAULT_SALARY_CURRENCY` per year; `None` without an amount.
    pub fn older(min: Option<i64>, max: Option<i64>) -> Option<Salary> {
        (min.is_some() || max.is_some()).then(|| Salary {
            min,
            max,
            currency: default_currency().to_string(),
            period: Period::Year,
        })
    }

    /// The top of the range (else its bottom) as a yearly amount, what `salary_currency`
    /// compares.
    pub fn yearly_top(&self) -> Option<i64> {
        self.max.or(self.min).map(|a| self.period.yearly(a))
    }
}

/// A member's `salary` (`null`: none): `{min?, max?, currency, period}` with at least one
/// amount, each 0–10^9, `min` ≤ `max`.
pub fn parse_salary(value: &Value) -> Result<Option<Salary>, (String, String)> {
    let obj = match value {
        Value::Null => return Ok(None),
        Value::Object(obj) => obj,
        _ => return Err(("salary".into(), "must be an object or null".into())),
    };
    if let Some(unknown) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "min" | "max" | "currency" | "period"))
    {
        return Err((
            format!("salary.{unknown}"),
            "is not a field of a salary".into(),
        ));
    }
    let amount = |name: &str| -> Result<Option<i64>, (String, String)> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_i64()
                .ok_or_else(|| "must be an integer".to_string())
                .and_then(super::validate::salary)
                .map(Some)
                .map_err(|m| (format!("salary.{name}"), m)),
        }
    };
    let (min, max) = (amount("min")?, amount("max")?);
    if min.is_none() && max.is_none() {
        return Err(("salary".into(), "states min, max or both".into()));
    }
    if let (Some(lo), Some(hi)) = (min, max)
        && lo > hi
    {
        return Err(("salary.min".into(), "must not be greater than max".into()));
    }
    let currency = obj
        .get("currency")
        .and_then(Value::as_str)
        .and_then(currency)
        .ok_or_else(|| {
            (
                "salary.currency".to_string(),
                format!("must be one of {}", CURRENCIES.join(", ")),
            )
        })?;
    let period = obj
        .get("period")
        .and_then(Value::as_str)
        .and_then(Period::parse)
        .ok_or_else(|| {
            (
                "salary.period".to_string(),
                "must be hour, day, week, month or year".to_string(),
            )
        })?;
    Ok(Some(Salary {
        min,
        max,
        currency: currency.to_string(),
        period,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn places_need_a_country_and_read_as_the_older_text() {
        let places = parse_locations(&json!([
            {"city": "Berlin", "country": "de"},
            {"city": "Austin", "region": "Texas", "country": "US"}
        ]))
        .unwrap();
        assert_eq!(places[0].text(), "Berlin, DE");
        assert_eq!(places[1].text(), "Austin, Texas, US");
        assert_eq!(Place::of_text("Remote EU").text(), "Remote EU");
        let err = |v: Value| parse_locations(&v).unwrap_err().0;
        assert_eq!(err(json!([])), "locations");
        assert_eq!(err(json!([{"city": "Berlin"}])), "locations[0].country");
        assert_eq!(
            err(json!([{"city": "Berlin", "country": "ZZ"}])),
            "locations[0].country"
        );
        assert_eq!(
            err(json!([{"city": "", "country": "DE"}])),
            "locations[0].city"
        );
        let eleven: Vec<Value> = (0..11)
            .map(|_| json!({"city": "X", "country": "FR"}))
            .collect();
        assert_eq!(err(json!(eleven)), "locations");
        let long = json!([{"city": "c".repeat(100), "region": "r".repeat(100), "country": "DE"}]);
        assert_eq!(err(long), "locations[0]");
        let fits = json!([{"city": "c".repeat(100), "region": "r".repeat(94), "country": "DE"}]);
        assert_eq!(
            parse_locations(&fits).unwrap()[0].text().chars().count(),
            200
        );
    }

    #[test]
    fn salaries_name_their_field_and_compare_yearly() {
        let s = parse_salary(&json!({"min": 40, "max": 60, "currency": "EUR", "period": "hour"}))
            .unwrap()
            .unwrap();
        assert_eq!(s.yearly_top(), Some(60 * 2_080));
        assert_eq!(parse_salary(&json!(null)).unwrap(), None);
        let err = |v: Value| parse_salary(&v).unwrap_err().0;
        assert_eq!(
            err(json!({"max": 1, "currency": "XYZ", "period": "year"})),
            "salary.currency"
        );
        assert_eq!(
            err(json!({"max": 1, "currency": "USD", "period": "fortnight"})),
            "salary.period"
        );
        assert_eq!(
            err(json!({"min": 2, "max": 1, "currency": "USD", "period": "year"})),
            "salary.min"
        );
        assert_eq!(err(json!({"currency": "USD", "period": "year"})), "salary");
        assert_eq!(
            err(json!({"max": -1, "currency": "USD", "period": "year"})),
            "salary.max"
        );
        for (period, factor) in [(Period::Day, 260), (Period::Week, 52), (Period::Month, 12)] {
            assert_eq!(period.yearly(10), 10 * factor);
        }
    }

    #[test]
    fn workplace_follows_the_older_flag() {
        assert_eq!(Workplace::of_remote(true), Workplace::Remote);
        assert_eq!(Workplace::of_remote(false), Workplace::Onsite);
        assert_eq!(Workplace::parse("hybrid"), Some(Workplace::Hybrid));
        assert_eq!(Workplace::parse("office"), None);
        assert_eq!(country("gb").as_deref(), Some("GB"));
        assert!(
            CURRENCIES.windows(2).all(|w| w[0] < w[1]),
            "sorted, no repeats"
        );
    }
}
