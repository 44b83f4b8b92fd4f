//! Validation of the values that come from outside. Each function trims where the contract says
//! so, counts code points, and returns the clean value or a message for the field.

use super::passwords;

/// A field's problem, in words a client can show.
pub type FieldError = String;

pub const USER_NAME_MAX: usize = 100;
pub const EMAIL_MAX: usize = 254;
pub const PASSWORD_MIN: usize = 8;
pub const PASSWORD_MAX: usize = 128;
pub const COMPANY_NAME_MAX: usize = 200;
pub const COMPANY_DESCRIPTION_MAX: usize = 20_000;
pub const WEBSITE_MAX: usize = 2048;
pub const JOB_TITLE_MAX: usize = 200;
pub const LOCATION_MAX: usize = 200;
pub const DESCRIPTION_MAX: usize = 20_000;
pub const COVER_LETTER_MAX: usize = 10_000;
pub const SALARY_MAX: i64 = 1_000_000_000;

/// Trims `value` and checks its length in code points.
pub fn text(value: &str, min: usize, max: usize) -> Result<String, FieldError> {
    if value.contains('\0') {
        return Err("must not contain NUL characters".to_string());
    }
    let trimmed = value.trim();
    let len = trimmed.chars().count();
    if len < min {
        return Err(if min == 1 {
            "must not be empty".to_string()
        } else {
            format!("must be at least {min} characters")
        });
    }
    if len > max {
        return Err(format!("must be at most {max} characters"));
    }
    Ok(trimmed.to_string())
}

/// A bidirectional formatting control: an embedding, override or isolate (U+202A–U+202E,
/// U+2066–U+2069) or a mark (U+200E, U+200F, U+061C). Each can make text read in another order
/// than it is written.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// What a one-line text may not hold (docs/api.md): a control character (C0, DEL, C1; tab
/// included), a line or paragraph separator (U+2028, U+2029), a bidirectional control.
pub fn breaks_one_line(c: char) -> bool {
    c.is_control() || c == '\u{2028}' || c == '\u{2029}' || is_bidi_control(c)
}

const NOT_ONE_LINE: &str = "must be one line of text: no control characters (tab, line breaks \
     and the like), no line or paragraph separators, no bidirectional controls";

/// A one-line text (a name, a title, a location): [`text`]'s rules, no [`breaks_one_line`].
pub fn one_line(value: &str, min: usize, max: usize) -> Result<String, FieldError> {
    let v = text(value, min, max)?;
    if v.chars().any(breaks_one_line) {
        return Err(NOT_ONE_LINE.to_string());
    }
    Ok(v)
}

/// A text of several lines (a description, a cover letter): [`text`]'s rules; line breaks (LF,
/// or CR LF) and tabs are its only control characters, and it holds no line or paragraph
/// separator and no bidirectional control.
pub fn multi_line(value: &str, min: usize, max: usize) -> Result<String, FieldError> {
    let v = text(value, min, max)?;
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        let allowed = match c {
            '\n' | '\t' => true,
            '\r' => chars.peek() == Some(&'\n'),
            c => !breaks_one_line(c),
        };
        if !allowed {
            return Err(
                "must hold no control characters other than line breaks (LF or CR LF) \
                 and tabs, no line or paragraph separators and no bidirectional controls"
                    .to_string(),
            );
        }
    }
    Ok(v)
}

/// `value` as one line, for text stored before the rule of [`one_line`] (or never checked by
/// it): each run of control characters, separators, bidirectional controls and spaces becomes
/// one space, and the ends are trimmed. What [`one_line`] accepts comes back unchanged, apart
/// from runs of spaces.
pub fn fold_one_line(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut pending_space = false;
    for c in value.chars() {
        if breaks_one_line(c) || c.is_whitespace() {
            pending_space = true;
        } else {
            if pending_space && !out.is_empty() {
                out.push(' ');
            }
            pending_space = false;
            out.push(c);
        }
    }
    out
}

pub fn user_name(value: &str) -> Result<String, FieldError> {
    one_line(value, 1, USER_NAME_MAX)
}

pub fn company_name(value: &str) -> Result<String, FieldError> {
    one_line(value, 1, COMPANY_NAME_MAX)
}

pub fn job_title(value: &str) -> Result<String, FieldError> {
    one_line(value, 1, JOB_TITLE_MAX)
}

/// A job's location, or an alert's: one line, at most [`LOCATION_MAX`].
pub fn location(value: &str) -> Result<String, FieldError> {
    one_line(value, 0, LOCATION_MAX)
}

/// A job's or a company's description: several lines, at most `max`.
pub fn description(value: &str, max: usize) -> Result<String, FieldError> {
    multi_line(value, 0, max)
}

/// An email address every mail service can send to (docs/api.md): stored as given (trimmed),
/// compared case-insensitively via [`email_key`], sent as [`sendable_address`] makes it.
pub fn email(value: &str) -> Result<String, FieldError> {
    let v = text(value, 1, EMAIL_MAX)?;
    let invalid = || "must be an email address such as name@example.com".to_string();
    let (local, domain) = v.split_once('@').ok_or_else(invalid)?;
    if local.is_empty()
        || local.chars().count() > 64
        || domain.is_empty()
        || domain.contains('@')
        || v.chars().any(|c| c.is_whitespace() || c.is_control())
        || domain.split('.').any(|label| label.is_empty())
        || local.starts_with('.')
        || local.ends_with('.')
    {
        return Err(invalid());
    }
    sendable_address(&v)?;
    Ok(v)
}

/// The address as it goes out: an ASCII local part, kept as given, and the domain in its ASCII
/// (A-label) form, which a mail service takes without SMTPUTF8 (SES never does). Refused: a
/// local part that is not ASCII (SMTP without SMTPUTF8 cannot carry it), a domain with no
/// A-label form, and anything the mailer's own parser refuses (it builds the `To:` header).
pub fn sendable_address(email: &str) -> Result<String, FieldError> {
    let invalid = || "must be an email address such as name@example.com".to_string();
    let (local, domain) = email.rsplit_once('@').ok_or_else(invalid)?;
    if !local.is_ascii() {
        return Err("must have an ASCII local part (the part before the @): \
                    not every mail service can send to another"
            .to_string());
    }
    let domain = if domain.is_ascii() {
        domain.to_string()
    } else {
        idna::domain_to_ascii(domain).map_err(|_| invalid())?
    };
    let address = format!("{local}@{domain}");
    if address.len() > EMAIL_MAX {
        return Err(format!(
            "must be at most {EMAIL_MAX} characters with its domain in ASCII (A-label) form"
        ));
    }
    address.parse::<lettre::Address>().map_err(|_| invalid())?;
    Ok(address)
}

/// The case-insensitive form of an email, used for uniqueness and look-ups.
pub fn email_key(email: &str) -> String {
    // NUL cannot be stored (PostgreSQL refuses it) and is in no valid address.
    email.trim().to_lowercase().replace('\0', "\u{fffd}")
}

/// A new password: 8–128 code points (measured after trimming, stored and hashed exactly as
/// given, never truncated) and not one of the common passwords.
pub fn new_password(value: &str) -> Result<(), FieldError> {
    let len = value.trim().chars().count();
    if len < PASSWORD_MIN {
        return Err(format!("must be at least {PASSWORD_MIN} characters"));
    }
    if len > PASSWORD_MAX {
        return Err(format!("must be at most {PASSWORD_MAX} characters"));
    }
    if passwords::is_common(value) {
        return Err("is too common; choose a less guessable password".to_string());
    }
    Ok(())
}

/// An `http` or `https` URL of at most 2048 code points.
pub fn website(value: &str) -> Result<String, FieldError> {
    let v = text(value, 1, WEBSITE_MAX)?;
    match url::Url::parse(&v) {
        Ok(u) if (u.scheme() == "http" || u.scheme() == "https") && u.host().is_some() => Ok(v),
        _ => Err("must be an http or https URL".to_string()),
    }
}

/// A yearly salary.
pub fn salary(value: i64) -> Result<i64, FieldError> {
    if (0..=SALARY_MAX).contains(&value) {
        Ok(value)
    } else {
        Err(format!("must be an integer from 0 to {SALARY_MAX}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_trims_and_counts_code_points() {
        assert_eq!(text("  hé  ", 1, 2).unwrap(), "hé");
        assert!(text("   ", 1, 10).is_err());
        let hundred = "é".repeat(100);
        assert!(user_name(&hundred).is_ok());
        assert!(user_name(&format!("{hundred}x")).is_err());
    }

    /// One-line texts refuse controls, separators and bidi controls anywhere inside; several
    /// lines keep LF, CR LF and tab only.
    #[test]
    fn one_line_and_multi_line_texts() {
        for bad in [
            "a\r\nb",
            "a\nb",
            "a\rb",
            "a\tb",
            "a\u{0085}b",
            "a\u{009b}b",
            "a\u{1b}b",
            "a\u{7f}b",
            "a\u{2028}b",
            "a\u{2029}b",
            "a\u{202e}b",
            "a\u{202a}b",
            "a\u{2066}b",
            "a\u{2069}b",
            "a\u{200e}b",
            "a\u{200f}b",
            "a\u{061c}b",
        ] {
            assert!(job_title(bad).is_err(), "{bad:?}");
            assert!(user_name(bad).is_err(), "{bad:?}");
            assert!(company_name(bad).is_err(), "{bad:?}");
            assert!(location(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            job_title(" Rust – Engineer (m/w/d) ").unwrap(),
            "Rust – Engineer (m/w/d)"
        );
        assert_eq!(location("").unwrap(), "");
        // Outer whitespace is trimmed, never refused.
        assert_eq!(user_name("Ann\n").unwrap(), "Ann");
        let text = "Line one\nLine two\r\n\tindented";
        assert_eq!(description(text, DESCRIPTION_MAX).unwrap(), text);
        for bad in [
            "a\rb",
            "a\u{0085}b",
            "a\u{1b}b",
            "a\u{2028}b",
            "a\u{202e}b",
            "a\u{0b}b",
        ] {
            assert!(description(bad, DESCRIPTION_MAX).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn folding_makes_one_line() {
        assert_eq!(
            fold_one_line("Rust\r\nBcc: x@example.com\r\n\r\nIMPORTANT"),
            "Rust Bcc: x@example.com IMPORTANT"
        );
        assert_eq!(
            fold_one_line("\u{202e}evil\u{2028}\tname  x "),
            "evil name x"
        );
        assert_eq!(fold_one_line("Ann Lee"), "Ann Lee");
        assert_eq!(fold_one_line("\r\n"), "");
    }

    #[test]
    fn emails() {
        assert_eq!(email(" Ann@Example.com ").unwrap(), "Ann@Example.com");
        assert_eq!(email_key("Ann@Example.COM"), "ann@example.com");
        for bad in [
            "",
            "ann",
            "@x.com",
            "ann@",
            "a b@x.com",
            "a@@x.com",
            "a@x..com",
            "a@x.",
            // Refused by the mailer's parser: no email could ever reach them.
            "a,b@example.com",
            "a;b@example.com",
            "<ann>@example.com",
            "ann(x)@example.com",
            "ann@exa(mple).com",
        ] {
            assert!(email(bad).is_err(), "{bad:?}");
        }
        // Domain labels are at most 63 characters (a longer one cannot be looked up).
        let (b63, b57) = ("b".repeat(63), "b".repeat(57));
        let long = format!("{}@{b63}.{b63}.{b57}.com", "a".repeat(64));
        assert!(long.len() == 254 && email(&long).is_ok(), "{}", long.len());
        let too_long = format!("{}@{b63}.{b63}.{b57}x.com", "a".repeat(64));
        assert!(email(&too_long).is_err());
        assert!(email(&format!("ann@{}.com", "b".repeat(64))).is_err());
    }

    /// An ASCII local part, and a domain that goes out in its A-label form.
    #[test]
    fn emails_every_mail_service_can_send_to() {
        for bad in [
            "josé@example.com",
            "Ünal@example.com",
            "日本@example.jp",
            "ann\u{00a0}x@example.com",
        ] {
            assert!(email(bad).is_err(), "{bad:?}");
        }
        assert!(email("josé@example.com").unwrap_err().contains("ASCII"));
        assert_eq!(email("Ann@Bücher.example").unwrap(), "Ann@Bücher.example");
        assert_eq!(
            sendable_address("Ann@Bücher.example").unwrap(),
            "Ann@xn--bcher-kva.example"
        );
        assert_eq!(
            sendable_address("ann@例え.jp").unwrap(),
            "ann@xn--r8jz45g.jp"
        );
        // An ASCII domain goes out as given.
        assert_eq!(
            sendable_address("Ann@Example.COM").unwrap(),
            "Ann@Example.COM"
        );
        // 254 code points, but longer in A-label form.
        let long = format!("{}@{}.example", "a".repeat(64), "ü".repeat(60));
        assert!(long.chars().count() <= 254);
        assert!(email(&long).is_err(), "{long}");
    }

    /// Every address accepted here is one the mailer can put in a `To:` header.
    #[test]
    fn accepted_emails_are_sendable() {
        for ok in [
            "ann@example.com",
            "Ann.Lee+jobs@mail.example.co.uk",
            "o'brien@example.ie",
            "x_y-z@sub-domain.example",
        ] {
            let v = email(ok).unwrap();
            assert!(v.parse::<lettre::Address>().is_ok(), "{ok}");
        }
    }

    #[test]
    fn passwords() {
        assert!(new_password("short").is_err());
        assert!(new_password("password").is_err(), "common");
        assert!(new_password("Password1").is_err(), "common, any case");
        assert!(new_password("correct horse battery staple").is_ok());
        assert!(new_password(&"x".repeat(128)).is_ok());
        assert!(new_password(&"x".repeat(129)).is_err());
    }

    #[test]
    fn websites() {
        assert!(website("https://example.com/jobs").is_ok());
        assert!(website("http://example.com").is_ok());
        assert!(website("ftp://example.com").is_err());
        assert!(website("javascript:alert(1)").is_err());
        assert!(website("example.com").is_err());
    }

    #[test]
    fn salaries() {
        assert!(salary(0).is_ok());
        assert!(salary(1_000_000_000).is_ok());
        assert!(salary(-1).is_err());
        assert!(salary(1_000_000_001).is_err());
    }
}
