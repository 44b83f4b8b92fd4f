//! The value parsers of the configuration's variables: each takes one (trimmed) value and
//! returns it typed, or the rule it breaks. Rules that involve two variables are in `mod.rs`.

use super::DatabaseUrl;
use secrecy::SecretString;
use std::net::SocketAddr;

/// An integer from `min` to `max`.
pub(super) fn ranged(
    min: u64,
    max: u64,
) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |raw| match raw.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(range_message(min, max, raw)),
    }
}

pub(super) fn range_message(min: u64, max: u64, raw: &str) -> String {
    format!("must be an integer from {min} to {max} (got {raw:?})")
}

pub(super) fn currency(raw: &str) -> Result<&'static str, String> {
    crate::domain::pay_place::currency(raw).ok_or_else(|| {
        format!(
            "must be one of {} (ISO 4217, upper-case), not {raw:?}",
            crate::domain::pay_place::CURRENCIES.join(", ")
        )
    })
}

pub(super) fn addr(raw: &str) -> Result<SocketAddr, String> {
    raw.parse()
        .map_err(|_| format!("must be an address such as 127.0.0.1:8000 (got {raw:?})"))
}

/// A value that must never be printed.
pub(super) fn secret(raw: &str) -> Result<SecretString, String> {
    Ok(SecretString::from(raw))
}

pub(super) fn database_url(raw: &str) -> Result<DatabaseUrl, String> {
    if let Some(path) = raw.strip_prefix("sqlite:") {
        if path.trim_start_matches("//").is_empty() {
            return Err("sqlite:// needs a file path, e.g. sqlite://data/jobboard.db".into());
        }
        Ok(DatabaseUrl::Sqlite(raw.to_string()))
    } else if raw.starts_with("postgres://") || raw.starts_with("postgresql://") {
        url::Url::parse(raw).map_err(|_| "is not a valid postgres:// URL".to_string())?;
        Ok(DatabaseUrl::Postgres(raw.to_string()))
    } else {
        Err("must start with sqlite:// or postgres://".into())
    }
}

/// One origin of `CORS_ALLOWED_ORIGINS`, without a trailing `/`; an empty item is left for
/// the caller to drop.
pub(super) fn origin(raw: &str) -> Result<String, String> {
    let o = raw.trim();
    if o.is_empty() {
        return Ok(String::new());
    }
    let ok = url::Url::parse(o)
        .map(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
        .unwrap_or(false);
    if ok && o.parse::<axum::http::HeaderValue>().is_ok() {
        Ok(o.trim_end_matches('/').to_string())
    } else {
        Err(format!(
            "each origin must look like https://example.com (got {o:?})"
        ))
    }
}

pub(super) fn redis_url(raw: &str) -> Result<SecretString, String> {
    let u = url::Url::parse(raw).map_err(|_| "is not a valid URL".to_string())?;
    if !matches!(u.scheme(), "redis" | "rediss") {
        return Err("must start with redis:// or rediss://".into());
    }
    secret(raw)
}

pub(super) fn url(raw: &str) -> Result<String, String> {
    let parsed = url::Url::parse(raw).map_err(|_| "is not a valid URL".to_string())?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err("must be an http:// or https:// URL".into());
    }
    Ok(raw.to_string())
}

/// `PUBLIC_BASE_URL`: an absolute http(s) URL with a host, and nothing a link cannot be built
/// on (no query, fragment or credentials), in its normal form without a trailing `/`, so that
/// `{base}/api/…` is a link as it is.
pub(super) fn public_base_url(raw: &str) -> Result<String, String> {
    let rule = "must be an absolute http:// or https:// URL without query or fragment, such as \
                https://jobs.example.com";
    let u = url::Url::parse(raw).map_err(|_| rule.to_string())?;
    if !matches!(u.scheme(), "http" | "https")
        || u.host_str().is_none_or(str::is_empty)
        || u.query().is_some()
        || u.fragment().is_some()
    {
        return Err(rule.into());
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err("must not hold credentials: it is written into every email".into());
    }
    Ok(u.as_str().trim_end_matches('/').to_string())
}

/// `APPLY_URL_TEMPLATE`: an absolute http(s) URL with a host once `{id}` (which it must hold)
/// is replaced by a job's id.
pub(super) fn apply_url_template(raw: &str) -> Result<String, String> {
    let rule = "must be an absolute http:// or https:// URL holding {id}, such as \
                https://jobs.example.com/jobs/{id}/apply";
    if !raw.contains("{id}") {
        return Err(rule.into());
    }
    let u = url::Url::parse(&raw.replace("{id}", "1")).map_err(|_| rule.to_string())?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none_or(str::is_empty) {
        return Err(rule.into());
    }
    Ok(raw.to_string())
}

pub(super) fn sqs_url(raw: &str) -> Result<String, String> {
    url::Url::parse(raw).map_err(|_| "is not a valid URL".to_string())?;
    if raw.trim_end_matches('/').ends_with(".fifo") {
        return Err("FIFO queues are not supported; use a standard queue".into());
    }
    Ok(raw.to_string())
}

pub(super) fn smtp_url(raw: &str) -> Result<SecretString, String> {
    let u = url::Url::parse(raw).map_err(|_| "is not a valid URL".to_string())?;
    if !matches!(u.scheme(), "smtp" | "smtps") {
        return Err("must start with smtp:// or smtps://".into());
    }
    if u.host_str().is_none_or(str::is_empty) {
        return Err("needs a host".into());
    }
    for (k, v) in u.query_pairs() {
        match k.as_ref() {
            "tls" if matches!(v.as_ref(), "opportunistic" | "required" | "none") => {}
            "tls" => return Err("tls must be opportunistic, required or none".into()),
            other => return Err(format!("unknown parameter {other:?}")),
        }
    }
    secret(raw)
}

/// Whether an SMTP URL that [`smtp_url`] accepted sends credentials over a connection that
/// may be unencrypted: `smtp://` without `?tls=required`.
pub(super) fn smtp_credentials_without_tls(raw: &str) -> bool {
    let Ok(u) = url::Url::parse(raw) else {
        return false;
    };
    let has_credentials = !u.username().is_empty() || u.password().is_some();
    // The first `tls` is the one the mailer obeys.
    let tls = u.query_pairs().find(|(k, _)| k == "tls");
    let tls_required = u.scheme() == "smtps" || tls.is_some_and(|(_, v)| v == "required");
    has_credentials && !tls_required
}

pub(super) fn email_from(raw: &str) -> Result<String, String> {
    crate::domain::validate::email(raw)
        .map(|_| raw.to_string())
        .map_err(|_| "must be an email address such as jobs@example.com".into())
}

pub(super) fn log_filter(raw: &str) -> Result<String, String> {
    tracing_subscriber::EnvFilter::try_new(raw)
        .map(|_| raw.to_string())
        .map_err(|_| format!("is not a valid log filter (got {raw:?})"))
}

/// A URL with its password replaced by `***`, for logs.
pub fn redact_url(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            // libpq-style URLs may carry the password as a query parameter too.
            if u.query_pairs()
                .any(|(k, _)| k.eq_ignore_ascii_case("password"))
            {
                let pairs: Vec<(String, String)> = u
                    .query_pairs()
                    .map(|(k, v)| {
                        let v = if k.eq_ignore_ascii_case("password") {
                            "***".to_string()
                        } else {
                            v.into_owned()
                        };
                        (k.into_owned(), v)
                    })
                    .collect();
                u.query_pairs_mut().clear().extend_pairs(pairs);
            }
            u.to_string()
        }
        Err(_) => "<unparsable url>".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{apply_url_template, public_base_url};

    #[test]
    fn an_apply_url_template_is_an_http_url_holding_the_id() {
        for raw in [
            "https://jobs.example.com/jobs/{id}/apply",
            "http://127.0.0.1:3000/apply?job={id}",
        ] {
            assert_eq!(apply_url_template(raw).as_deref(), Ok(raw));
        }
        for raw in [
            "https://jobs.example.com/apply",
            "ftp://jobs.example.com/{id}",
            "/jobs/{id}/apply",
            "{id}",
        ] {
            assert!(
                apply_url_template(raw).unwrap_err().contains("{id}"),
                "{raw}"
            );
        }
    }

    #[test]
    fn public_base_url_is_an_absolute_http_url_links_are_built_on() {
        for (raw, want) in [
            ("https://jobs.example.com", "https://jobs.example.com"),
            ("https://jobs.example.com/", "https://jobs.example.com"),
            (
                "https://Jobs.Example.com:8443/board/",
                "https://jobs.example.com:8443/board",
            ),
            ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
            ("https://bücher.example", "https://xn--bcher-kva.example"),
        ] {
            assert_eq!(public_base_url(raw).as_deref(), Ok(want), "{raw}");
        }
        for raw in [
            "jobs.example.com",
            "/api",
            "ftp://jobs.example.com",
            "mailto:jobs@example.com",
            "https://jobs.example.com/?utm=mail",
            "https://jobs.example.com/#top",
            "https://",
            "not a url",
        ] {
            assert_eq!(
                public_base_url(raw),
                Err(
                    "must be an absolute http:// or https:// URL without query or fragment, \
                     such as https://jobs.example.com"
                        .to_string()
                ),
                "{raw}"
            );
        }
        let e = public_base_url("https://user:pw@jobs.example.com").unwrap_err();
        assert!(e.contains("credentials") && !e.contains("pw"), "{e}");
    }
}
