//! The address rules of `address.rs`, case by case.

use super::*;

/// Parses without `allow_private` and returns the refused range.
fn refused_range(url: &str) -> &'static str {
    match parse(url, false) {
        Err(Refused::NotPublic { range, .. }) => range,
        other => panic!("{url}: expected an address refusal, got {other:?}"),
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("test address")
}

#[test]
fn loopback_is_refused() {
    assert_eq!(refused_range("https://127.0.0.1/"), "loopback");
    assert_eq!(refused_range("https://127.8.9.10:8443/x"), "loopback");
    assert_eq!(refused_range("https://[::1]/"), "loopback");
    assert!(parse("http://[::1]", false).is_err());
    assert!(parse("http://127.0.0.1", false).is_err());
}

#[test]
fn cloud_metadata_and_link_local_are_refused() {
    assert_eq!(
        refused_range("https://169.254.169.254/latest/meta-data/"),
        "link-local, the cloud metadata address"
    );
    assert_eq!(refused_range("https://169.254.1.1/"), "link-local");
    assert_eq!(refused_range("https://[fe80::1]/"), "link-local");
    assert_eq!(refused_range("https://[febf::1]/"), "link-local");
}

#[test]
fn private_ranges_are_refused() {
    for url in [
        "https://10.0.0.1/",
        "https://10.255.255.255/",
        "https://172.16.0.1/",
        "https://172.31.255.255/",
        "https://192.168.1.1/",
    ] {
        assert_eq!(refused_range(url), "private", "{url}");
    }
    assert_eq!(
        refused_range("https://[fc00::1]/"),
        "private (unique local)"
    );
    assert_eq!(
        refused_range("https://[fd12:3456::1]/"),
        "private (unique local)"
    );
    // Just outside 172.16.0.0/12 is public.
    assert!(check_ip(ip("172.15.255.255")).is_ok());
    assert!(check_ip(ip("172.32.0.0")).is_ok());
}

#[test]
fn special_ipv4_ranges_are_refused() {
    let cases = [
        ("100.64.0.1", "carrier-grade NAT"),
        ("100.127.255.255", "carrier-grade NAT"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "\"this network\" 0.0.0.0/8"),
        ("192.0.2.1", "documentation"),
        ("198.51.100.7", "documentation"),
        ("203.0.113.9", "documentation"),
        ("198.18.0.1", "benchmarking"),
        ("198.19.255.255", "benchmarking"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.254", "reserved"),
        ("255.255.255.255", "broadcast"),
        ("192.0.0.8", "IETF protocol assignments"),
        ("192.88.99.1", "6to4 relay anycast"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
    ];
    for (addr, range) in cases {
        assert_eq!(refused_range(&format!("https://{addr}/")), range, "{addr}");
    }
    assert!(check_ip(ip("100.63.255.255")).is_ok());
    assert!(check_ip(ip("100.128.0.0")).is_ok());
    assert!(check_ip(ip("198.20.0.0")).is_ok());
}

#[test]
fn special_ipv6_ranges_are_refused() {
    assert_eq!(refused_range("https://[::]/"), "unspecified");
    assert_eq!(refused_range("https://[ff02::1]/"), "multicast");
    assert_eq!(refused_range("https://[100::1]/"), "discard-only");
    assert_eq!(refused_range("https://[2001:db8::1]/"), "documentation");
    assert_eq!(refused_range("https://[3fff::1]/"), "documentation");
    assert_eq!(refused_range("https://[fec0::1]/"), "site-local");
    assert_eq!(refused_range("https://[64:ff9b:1::1]/"), "local-use NAT64");
    // 100::/64 only: the next /64 is not discard-only.
    assert!(check_ip(ip("100:0:0:1::1")).is_ok());
    // 3fff::/20 only: 3fff:1000:: is outside it.
    assert_eq!(
        refused_range("https://[3fff:fff:ffff::1]/"),
        "documentation"
    );
    assert!(check_ip(ip("3fff:1000::1")).is_ok());
}

#[test]
fn ipv6_forms_that_embed_ipv4_are_judged_by_it() {
    let cases = [
        ("[::ffff:127.0.0.1]", "127.0.0.1", "loopback"),
        (
            "[::ffff:169.254.169.254]",
            "169.254.169.254",
            "link-local, the cloud metadata address",
        ),
        ("[::ffff:10.1.2.3]", "10.1.2.3", "private"),
        ("[::127.0.0.1]", "127.0.0.1", "loopback"),
        ("[::10.0.0.1]", "10.0.0.1", "private"),
        ("[64:ff9b::a00:1]", "10.0.0.1", "private"),
        ("[64:ff9b::7f00:1]", "127.0.0.1", "loopback"),
        ("[2002:7f00:1::]", "127.0.0.1", "loopback"),
        (
            "[2002:a9fe:a9fe::1]",
            "169.254.169.254",
            "link-local, the cloud metadata address",
        ),
        ("[2002:c0a8:101::1]", "192.168.1.1", "private"),
    ];
    for (host, v4, range) in cases {
        let url = format!("https://{host}/");
        match parse(&url, false) {
            Err(Refused::NotPublic {
                range: got,
                embedded,
                ..
            }) => {
                assert_eq!(got, range, "{url}");
                assert_eq!(embedded, Some(v4.parse().expect("test address")), "{url}");
            }
            other => panic!("{url}: expected an address refusal, got {other:?}"),
        }
    }
    // The same forms pass when the embedded address is public.
    for addr in [
        "::ffff:8.8.8.8",
        "::8.8.8.8",
        "64:ff9b::808:808",
        "2002:808:808::1",
    ] {
        assert_eq!(check_ip(ip(addr)), Ok(()), "{addr}");
    }
}

#[test]
fn url_normalises_odd_ipv4_spellings() {
    // `url` follows the WHATWG URL standard: these all mean 127.0.0.1.
    for spelling in [
        "https://2130706433/",
        "https://0177.0.0.1/",
        "https://0x7f.1/",
        "https://0x7f000001/",
        "https://127.1/",
        "https://127.0.0.1./",
        "https://%31%32%37.0.0.1/",
        "https://１２７.０.０.１/",
    ] {
        let url = Url::parse(spelling).expect("valid URL");
        assert_eq!(
            url.host(),
            Some(Host::Ipv4(Ipv4Addr::LOCALHOST)),
            "{spelling}"
        );
        assert_eq!(refused_range(spelling), "loopback", "{spelling}");
    }
    // The same for http, refused without allow_private too.
    assert!(parse("http://2130706433/", false).is_err());
    assert!(parse("http://0177.0.0.1/", false).is_err());
    assert!(parse("http://0x7f.1/", false).is_err());
}

#[test]
fn ipv6_text_is_normalised() {
    let t = parse("https://[::FFFF:127.0.0.1]/", true).expect("allowed");
    assert_eq!(t.url.host_str(), Some("[::ffff:7f00:1]"));
    assert_eq!(t.host, "::ffff:127.0.0.1");
}

#[test]
fn userinfo_is_refused() {
    assert_eq!(
        parse("https://user:pw@example.com/", false),
        Err(Refused::UserInfo)
    );
    assert_eq!(
        parse("https://user@example.com/", true),
        Err(Refused::UserInfo)
    );
    assert_eq!(
        parse("https://:pw@example.com/", true),
        Err(Refused::UserInfo)
    );
}

#[test]
fn schemes() {
    assert_eq!(
        parse("ftp://x/", false),
        Err(Refused::Scheme {
            scheme: "ftp".to_string(),
            allow_http: false
        })
    );
    assert!(matches!(
        parse("ftp://x/", true),
        Err(Refused::Scheme { .. })
    ));
    assert!(matches!(
        parse("file:///etc/passwd", true),
        Err(Refused::Scheme { .. })
    ));
    assert!(matches!(
        parse("gopher://x/", true),
        Err(Refused::Scheme { .. })
    ));
    assert_eq!(
        parse("http://example.com/hook", false),
        Err(Refused::Scheme {
            scheme: "http".to_string(),
            allow_http: false
        })
    );
    let t = parse("http://example.com/hook", true).expect("http with allow_private");
    assert_eq!(t.port, 80);
    let t = parse("HTTPS://Example.COM/hook", false).expect("https");
    assert_eq!(t.host, "example.com");
    assert_eq!(t.port, 443);
    assert_eq!(t.literal, None);
}

#[test]
fn bad_urls_are_refused() {
    assert!(matches!(parse("", false), Err(Refused::Parse(_))));
    assert!(matches!(parse("not a url", false), Err(Refused::Parse(_))));
    assert!(matches!(parse("https://", false), Err(Refused::Parse(_))));
    assert!(matches!(
        parse("https://1.2.3.4.5/", false),
        Err(Refused::Parse(_))
    ));
    assert!(matches!(
        parse("https://[::1/", false),
        Err(Refused::Parse(_))
    ));
    assert!(matches!(
        parse("https://exa mple.com/", false),
        Err(Refused::Parse(_))
    ));
}

#[test]
fn allow_private_lifts_the_address_rule() {
    let t = parse("http://127.0.0.1:8080/hook", true).expect("allowed");
    assert_eq!(t.literal, Some(ip("127.0.0.1")));
    assert_eq!(t.port, 8080);
    assert!(parse("http://[::1]/", true).is_ok());
    assert!(parse("http://169.254.169.254/", true).is_ok());
    assert!(parse("http://2130706433/", true).is_ok());
    // But user info and other schemes stay refused.
    assert!(parse("http://a:b@127.0.0.1/", true).is_err());
}

#[test]
fn public_addresses_pass() {
    for url in [
        "https://8.8.8.8/",
        "https://1.1.1.1/hook",
        "https://[2606:4700:4700::1111]/",
        "https://93.184.215.14:8443/",
        "https://example.com/",
        "https://bücher.example/",
    ] {
        assert!(parse(url, false).is_ok(), "{url}");
    }
    let t = parse("https://bücher.example/", false).expect("IDN");
    assert_eq!(t.host, "xn--bcher-kva.example");
    for addr in [
        "8.8.8.8",
        "1.1.1.1",
        "2606:4700:4700::1111",
        "93.184.215.14",
    ] {
        assert_eq!(check_ip(ip(addr)), Ok(()), "{addr}");
    }
}

#[test]
fn messages_read_well() {
    assert_eq!(
        parse("https://127.0.0.1/", false)
            .expect_err("refused")
            .to_string(),
        "the address 127.0.0.1 is not public (loopback)"
    );
    assert_eq!(
        parse("https://[::ffff:127.0.0.1]/", false)
            .expect_err("refused")
            .to_string(),
        "the address ::ffff:127.0.0.1 is not public (loopback, by its embedded IPv4 address 127.0.0.1)"
    );
    assert_eq!(
        parse("ftp://x/", false).expect_err("refused").to_string(),
        "the URL must use https, not ftp"
    );
    assert_eq!(
        parse("ftp://x/", true).expect_err("refused").to_string(),
        "the URL must use https or http, not ftp"
    );
    assert_eq!(
        Refused::UserInfo.to_string(),
        "the URL must not carry a user name or password"
    );
    assert!(
        parse("nope", false)
            .expect_err("refused")
            .to_string()
            .starts_with("the URL could not be parsed: ")
    );
}

#[tokio::test]
async fn resolve_refuses_localhost_unless_allowed() {
    let t = parse("https://localhost:8443/hook", false).expect("form is fine");
    match resolve(&t, false).await {
        Err(Refused::NotPublic { range, .. }) => assert_eq!(range, "loopback"),
        other => panic!("expected a loopback refusal, got {other:?}"),
    }
    let addrs = resolve(&t, true).await.expect("allowed");
    assert!(!addrs.is_empty());
    for a in &addrs {
        assert!(a.ip().is_loopback(), "{a}");
        assert_eq!(a.port(), 8443);
    }
    assert!(
        addrs
            .iter()
            .any(|a| a.ip() == ip("127.0.0.1") || a.ip() == ip("::1"))
    );
}

#[tokio::test]
async fn resolve_of_a_literal_does_no_dns() {
    // The host text names nothing: a DNS look-up would fail.
    let url = Url::parse("https://1.1.1.1/").expect("valid URL");
    let t = Target {
        url,
        host: "no-such-host.invalid".to_string(),
        port: 443,
        literal: Some(ip("1.1.1.1")),
    };
    assert_eq!(
        resolve(&t, false).await,
        Ok(vec!["1.1.1.1:443".parse().expect("addr")])
    );

    let t = parse("http://[::1]:9000/", true).expect("allowed");
    assert_eq!(
        resolve(&t, true).await,
        Ok(vec!["[::1]:9000".parse().expect("addr")])
    );
    // A private literal built by hand is still refused without allow_private.
    assert!(matches!(
        resolve(&t, false).await,
        Err(Refused::NotPublic { .. })
    ));
}
