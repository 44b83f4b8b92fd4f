//! `UNSUBSCRIBE_SECRET` and `UNSUBSCRIBE_SECRET_PREVIOUS`, which sign and verify unsubscribe
//! links apart from `JWT_SECRET` (tests/api/cli.rs runs the binary on the same refusals).

use super::parse;
use crate::config::help;
use secrecy::ExposeSecret;

/// Optional in development (the key of `JWT_SECRET` signs then), required and at least 32 bytes
/// in production, as `UNSUBSCRIBE_SECRET_PREVIOUS` is when given; each refusal names its
/// variable and never the value.
#[test]
fn the_unsubscribe_secret_is_required_and_long_in_production() {
    let strong = "s".repeat(32);
    let other = "u".repeat(32);
    let prod = |extra: &[(&'static str, &str)]| {
        let mut pairs = vec![
            ("APP_ENV", "production"),
            ("JWT_SECRET", strong.as_str()),
            ("EMAIL_BACKEND", "file"),
            ("PUBLIC_BASE_URL", "https://jobs.example.com"),
        ];
        pairs.extend_from_slice(extra);
        parse(&pairs)
    };
    let e = prod(&[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "configuration error: UNSUBSCRIBE_SECRET: is required in production (at least 32 bytes)"
    );
    let e = prod(&[("UNSUBSCRIBE_SECRET", "short-unsubscribe-key")]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "configuration error: UNSUBSCRIBE_SECRET: must be at least 32 bytes in production"
    );
    let e = prod(&[
        ("UNSUBSCRIBE_SECRET", &other),
        ("UNSUBSCRIBE_SECRET_PREVIOUS", "short-previous-key"),
    ])
    .unwrap_err();
    assert_eq!(e.var, "UNSUBSCRIBE_SECRET_PREVIOUS", "{e}");
    assert!(!e.to_string().contains("short-previous-key"), "{e}");
    let c = prod(&[
        ("UNSUBSCRIBE_SECRET", &other),
        ("UNSUBSCRIBE_SECRET_PREVIOUS", &"p".repeat(40)),
    ])
    .unwrap();
    assert_eq!(
        c.unsubscribe_secret.as_ref().map(|s| s.expose_secret()),
        Some(other.as_str())
    );
    assert!(!format!("{c:?}").contains(&other), "never in Debug");

    // In development it is optional, and of any length.
    let c = parse(&[]).unwrap();
    assert!(c.unsubscribe_secret.is_none() && c.unsubscribe_secret_previous.is_none());
    let c = parse(&[("UNSUBSCRIBE_SECRET", "short")]).unwrap();
    assert_eq!(
        c.unsubscribe_secret.as_ref().map(|s| s.expose_secret()),
        Some("short")
    );
    let help = help();
    for var in ["UNSUBSCRIBE_SECRET ", "UNSUBSCRIBE_SECRET_PREVIOUS "] {
        assert!(help.contains(var), "--help names {var}: {help}");
    }
}
