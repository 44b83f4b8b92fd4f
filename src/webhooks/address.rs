//! Checks webhook URLs so that a webhook is never a way into the network
//! the service runs in.
//!
//! A webhook URL must use `https` and its host must resolve to public
//! addresses only. An operator may set `allow_private`: then `http` is also
//! allowed and the address rule is lifted.
//!
//! Use [`parse`] when a URL is saved, and [`resolve`] right before each
//! delivery. Connect only to the addresses that [`resolve`] returns. Do not
//! let the HTTP client resolve the name again, or a name that changes its
//! answer between the check and the connection slips past the rule.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use url::{Host, Url};

/// A webhook URL that passed the form checks of [`parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The parsed URL, in the normal form that `url` gives it.
    pub url: Url,
    /// The host to resolve: the ASCII (punycode) domain name, or the
    /// address text without brackets when the host is an IP address.
    pub host: String,
    /// The port to connect to: the URL's port, or 443 for https and 80 for http.
    pub port: u16,
    /// The address when the URL's host is an IP address, and `None` for a domain name.
    pub literal: Option<IpAddr>,
}

/// Why a webhook URL or address is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum Refused {
    /// The text is not a valid URL.
    #[error("the URL could not be parsed: {0}")]
    Parse(String),
    /// The URL uses a scheme that is not allowed.
    #[error(
        "the URL must use {}, not {scheme}",
        if *.allow_http { "https or http" } else { "https" }
    )]
    Scheme {
        /// The scheme the URL uses.
        scheme: String,
        /// Whether http was allowed too (it is with `allow_private`).
        allow_http: bool,
    },
    /// The URL carries a user name or a password.
    #[error("the URL must not carry a user name or password")]
    UserInfo,
    /// The URL has no host, or its host is neither a domain name nor an IP address.
    #[error("the URL must name a host: a domain name or an IP address")]
    NoHost,
    /// The address is in a range that is not public.
    #[error("the address {ip} is not public ({})", range_text(.range, .embedded))]
    NotPublic {
        /// The refused address.
        ip: IpAddr,
        /// The kind of range it is in, such as "loopback" or "private".
        range: &'static str,
        /// The IPv4 address that the IPv6 address embeds, when the range was
        /// decided by that IPv4 address.
        embedded: Option<Ipv4Addr>,
    },
    /// The host name could not be resolved, or resolved to no address.
    #[error("the host name {host} does not resolve ({reason})")]
    Unresolved {
        /// The host name that was looked up.
        host: String,
        /// What went wrong.
        reason: String,
    },
}

/// Builds the part in brackets of the [`Refused::NotPublic`] message.
fn range_text(range: &str, embedded: &Option<Ipv4Addr>) -> String {
    match embedded {
        Some(v4) => format!("{range}, by its embedded IPv4 address {v4}"),
        None => range.to_string(),
    }
}

/// Parses and checks a URL's form: scheme, user name and password, and host.
///
/// The scheme must be `https`, or `http` as well when `allow_private` is set.
/// The URL must not carry a user name or password. The host must be a domain
/// name or an IP address. An IP address host is checked against the address
/// rule here, unless `allow_private` is set. A domain name is checked later,
/// by [`resolve`].
///
/// `url` already turns decimal, octal and hex IPv4 spellings into the usual
/// form: `http://2130706433/`, `http://0177.0.0.1/` and `http://0x7f.1/` all
/// become `127.0.0.1`, so they are checked as that address.
pub fn parse(url: &str, allow_private: bool) -> Result<Target, Refused> {
    let url = Url::parse(url.trim()).map_err(|e| Refused::Parse(e.to_string()))?;

    let scheme_ok = match url.scheme() {
        "https" => true,
        "http" => allow_private,
        _ => false,
    };
    if !scheme_ok {
        return Err(Refused::Scheme {
            scheme: url.scheme().to_string(),
            allow_http: allow_private,
        });
    }

    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refused::UserInfo);
    }

    let (host, literal) = match url.host() {
        Some(Host::Domain(name)) if !name.is_empty() => (name.to_string(), None),
        Some(Host::Ipv4(v4)) => (v4.to_string(), Some(IpAddr::V4(v4))),
        Some(Host::Ipv6(v6)) => (v6.to_string(), Some(IpAddr::V6(v6))),
        _ => return Err(Refused::NoHost),
    };

    if let (Some(ip), false) = (literal, allow_private) {
        check_ip(ip)?;
    }

    // http and https always have a known default port, so the error below
    // is never met; it only avoids a panic.
    let port = url.port_or_known_default().ok_or_else(|| Refused::Scheme {
        scheme: url.scheme().to_string(),
        allow_http: allow_private,
    })?;

    Ok(Target {
        url,
        host,
        port,
        literal,
    })
}

/// Tells whether an address may be connected to.
///
/// Returns `Ok(())` for a public address. Otherwise it returns
/// [`Refused::NotPublic`] with the range the address is in. An IPv6 address
/// that embeds an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64 or
/// 6to4) is judged by that IPv4 address.
pub fn check_ip(ip: IpAddr) -> Result<(), Refused> {
    let refused = |range, embedded| {
        Err(Refused::NotPublic {
            ip,
            range,
            embedded,
        })
    };
    match ip {
        IpAddr::V4(v4) => match v4_range(v4) {
            Some(range) => refused(range, None),
            None => Ok(()),
        },
        IpAddr::V6(v6) => match v6_range(v6) {
            V6Range::Public => Ok(()),
            V6Range::Refused(range) => refused(range, None),
            V6Range::Embeds(v4) => match v4_range(v4) {
                Some(range) => refused(range, Some(v4)),
                None => Ok(()),
            },
        },
    }
}

/// Resolves the target's host and returns the addresses that may be connected to.
///
/// An IP address target gives just that address, with no DNS look-up.
/// A domain name is looked up with `tokio::net::lookup_host`. If any address
/// it resolves to is refused, the whole target is refused: a name that mixes
/// public and private addresses is refused. With `allow_private` no address
/// is refused. A name with no address is refused too.
pub async fn resolve(target: &Target, allow_private: bool) -> Result<Vec<SocketAddr>, Refused> {
    if let Some(ip) = target.literal {
        if !allow_private {
            check_ip(ip)?;
        }
        return Ok(vec![SocketAddr::new(ip, target.port)]);
    }

    resolve_name(&target.host, target.port, allow_private).await
}

/// Looks a host name up and returns its addresses with `port`, each checked as [`resolve`]
/// checks them (any refused address refuses the name, unless `allow_private`). The HTTP client
/// of the deliveries resolves through this, so it connects only to an address that passed.
pub async fn resolve_name(
    host: &str,
    port: u16,
    allow_private: bool,
) -> Result<Vec<SocketAddr>, Refused> {
    let unresolved = |reason: String| Refused::Unresolved {
        host: host.to_string(),
        reason,
    };
    let found = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| unresolved(e.to_string()))?;

    let mut addrs: Vec<SocketAddr> = Vec::new();
    for addr in found {
        if !allow_private {
            check_ip(addr.ip())?;
        }
        if !addrs.contains(&addr) {
            addrs.push(addr);
        }
    }
    if addrs.is_empty() {
        return Err(unresolved("no addresses".to_string()));
    }
    Ok(addrs)
}

/// Names the refused range an IPv4 address is in, or `None` when it is public.
fn v4_range(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, d] = ip.octets();
    let range = match (a, b, c, d) {
        (0, 0, 0, 0) => "unspecified",
        (0, _, _, _) => "\"this network\" 0.0.0.0/8",
        (127, _, _, _) => "loopback",
        (10, _, _, _) => "private",
        (172, 16..=31, _, _) => "private",
        (192, 168, _, _) => "private",
        (100, 64..=127, _, _) => "carrier-grade NAT",
        (169, 254, 169, 254) => "link-local, the cloud metadata address",
        (169, 254, _, _) => "link-local",
        (192, 0, 0, _) => "IETF protocol assignments",
        (192, 0, 2, _) | (198, 51, 100, _) | (203, 0, 113, _) => "documentation",
        (192, 88, 99, _) => "6to4 relay anycast",
        (198, 18..=19, _, _) => "benchmarking",
        (224..=239, _, _, _) => "multicast",
        (255, 255, 255, 255) => "broadcast",
        (240..=255, _, _, _) => "reserved",
        _ => return None,
    };
    Some(range)
}

/// How an IPv6 address is judged.
enum V6Range {
    /// A public address.
    Public,
    /// A refused range, by name.
    Refused(&'static str),
    /// An address that embeds this IPv4 address and is judged by it.
    Embeds(Ipv4Addr),
}

/// Sorts an IPv6 address into a refused range, an embedded IPv4 address, or public.
fn v6_range(ip: Ipv6Addr) -> V6Range {
    let s = ip.segments();
    let low_v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if ip.is_unspecified() {
        return V6Range::Refused("unspecified");
    }
    if ip.is_loopback() {
        return V6Range::Refused("loopback");
    }
    match s {
        // IPv4-mapped ::ffff:a.b.c.d
        [0, 0, 0, 0, 0, 0xffff, _, _] => V6Range::Embeds(low_v4),
        // IPv4-compatible ::a.b.c.d (deprecated, but still routed by some stacks)
        [0, 0, 0, 0, 0, 0, _, _] => V6Range::Embeds(low_v4),
        // NAT64 well-known prefix 64:ff9b::/96
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => V6Range::Embeds(low_v4),
        // NAT64 local-use prefix 64:ff9b:1::/48 (RFC 8215)
        [0x64, 0xff9b, 1, ..] => V6Range::Refused("local-use NAT64"),
        // 6to4 2002:wwxx:yyzz::/48 embeds wwxx:yyzz
        [0x2002, hi, lo, ..] => V6Range::Embeds(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        )),
        // Discard-only 100::/64
        [0x100, 0, 0, 0, ..] => V6Range::Refused("discard-only"),
        // Documentation 2001:db8::/32 and 3fff::/20 (RFC 9637)
        [0x2001, 0xdb8, ..] => V6Range::Refused("documentation"),
        [0x3fff, y, ..] if y & 0xf000 == 0 => V6Range::Refused("documentation"),
        // Unique local fc00::/7
        [x, ..] if x & 0xfe00 == 0xfc00 => V6Range::Refused("private (unique local)"),
        // Link-local fe80::/10
        [x, ..] if x & 0xffc0 == 0xfe80 => V6Range::Refused("link-local"),
        // Site-local fec0::/10 (deprecated, but private in effect)
        [x, ..] if x & 0xffc0 == 0xfec0 => V6Range::Refused("site-local"),
        // Multicast ff00::/8
        [x, ..] if x & 0xff00 == 0xff00 => V6Range::Refused("multicast"),
        _ => V6Range::Public,
    }
}

#[cfg(test)]
mod tests;
