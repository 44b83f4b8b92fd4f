//! Writing text into markup: HTML escaping (the unsubscribe pages' too), XML escaping (the
//! sitemap's and the feeds'), JSON that can sit in a `<script>` data block, paragraphs from
//! lines, and HTTP dates.

use chrono::{DateTime, Utc};

/// Text as HTML (content or a quoted attribute value): `& < > " '` escaped.
pub(in crate::http) fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Text as XML 1.0 (content or a quoted attribute value): `& < > " '` escaped, and the
/// characters XML 1.0 cannot carry at all (the C0 controls but tab, LF and CR; U+FFFE, U+FFFF)
/// dropped, so that no stored text can make a feed or a sitemap unreadable.
pub(super) fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c < ' ' || matches!(c, '\u{FFFE}' | '\u{FFFF}') => {}
            c => out.push(c),
        }
    }
    out
}

/// `value` as JSON that nothing in it can end or comment out: `<`, `>` and `&` (which appear
/// only inside strings) are written as `\u003c`, `\u003e`, `\u0026`, so neither `</script>` nor
/// `<!--` can occur; U+2028 and U+2029 as escapes too. A JSON parser reads the same value back.
pub(super) fn script_json(value: &serde_json::Value) -> String {
    let raw = serde_json::to_string(value).unwrap_or_else(|_| "{}".to_string());
    let mut out = String::with_capacity(raw.len() + 16);
    for c in raw.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Lines as HTML paragraphs: a blank line parts paragraphs, a line break within one is a
/// `<br>`; every line escaped.
pub(super) fn paragraphs(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut open = false;
    for line in text.split('\n') {
        if line.trim().is_empty() {
            if open {
                out.push_str("</p>\n");
                open = false;
            }
            continue;
        }
        if open {
            out.push_str("<br>\n");
        } else {
            out.push_str("<p>");
            open = true;
        }
        out.push_str(&html(line));
    }
    if open {
        out.push_str("</p>\n");
    }
    out
}

/// An HTTP date (IMF-fixdate, RFC 9110 §5.6.7).
pub(super) fn http_date(at: DateTime<Utc>) -> String {
    at.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

/// An HTTP date as a client sends it back (IMF-fixdate; the obsolete forms are not read, and
/// a date that cannot be read is as if absent).
pub(super) fn parse_http_date(raw: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc2822(raw.trim())
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// A timestamp as Atom, the sitemap protocol and schema.org write it: RFC 3339 in UTC, to the
/// second.
pub(super) fn w3c(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escaped_text_holds_no_markup() {
        let hostile = r#"</script><!-- "q" 'a' & <b>"#;
        assert_eq!(
            html(hostile),
            "&lt;/script&gt;&lt;!-- &quot;q&quot; &#39;a&#39; &amp; &lt;b&gt;"
        );
    }

    #[test]
    fn escaped_xml_holds_no_markup_and_only_what_xml_can_carry() {
        assert_eq!(
            xml("</title><!-- \"q\" 'a' & ]]>"),
            "&lt;/title&gt;&lt;!-- &quot;q&quot; &apos;a&apos; &amp; ]]&gt;"
        );
        assert_eq!(
            xml("a\u{0}b\u{1b}c\td\ne\u{FFFF}\u{202E}"),
            "abc\td\ne\u{202E}"
        );
    }

    #[test]
    fn json_in_a_script_block_cannot_end_it_and_reads_back() {
        let value = json!({"t": "</script><!-- a & b \u{2028}", "n": 1});
        let text = script_json(&value);
        for bad in ["<", ">", "&", "\u{2028}"] {
            assert!(!text.contains(bad), "{text}");
        }
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            value
        );
    }

    #[test]
    fn lines_become_paragraphs() {
        assert_eq!(
            paragraphs("one\ntwo\n\n\n<three>\n"),
            "<p>one<br>\ntwo</p>\n<p>&lt;three&gt;</p>\n"
        );
        assert_eq!(paragraphs(""), "");
    }

    #[test]
    fn http_dates_go_out_and_come_back() {
        let at = DateTime::parse_from_rfc3339("1994-11-06T08:49:37Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(http_date(at), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), Some(at));
        assert_eq!(parse_http_date("yesterday"), None);
    }
}
