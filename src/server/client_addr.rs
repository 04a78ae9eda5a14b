//! Which address a request comes from, for limits kept per client.
//!
//! The socket's peer, unless that peer is a load balancer the operator named as trusted
//! (`--trusted-proxy`): then the address the balancer forwarded in its header
//! (`--forwarded-header`, `X-Forwarded-For` by default). A forwarded header from any
//! other peer is ignored: anyone can write one, and believing it would let a client pick a
//! fresh address for every request.
//!
//! Balancers append the address they received the request from, so the header reads from
//! the client towards the server; whatever the client wrote itself sits on the left. The
//! client is the right-most hop that is not a trusted balancer: trusted hops are skipped,
//! the first other one is the address the nearest trusted balancer saw.

use axum::http::{HeaderMap, HeaderName};
use std::net::IpAddr;

/// An address block, `10.0.0.0/8` or `fd00::/8`; a bare address is a block of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    net: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parses `ADDR` or `ADDR/PREFIX`.
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let net: IpAddr = addr
            .parse()
            .map_err(|_| format!("'{s}' is not an address or address block (10.0.0.0/8)"))?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("'{s}': the prefix length must be 0 to {max}"))?,
            None => max,
        };
        Ok(Cidr { net, prefix })
    }

    /// Whether `ip` is in the block (an IPv4 address written as IPv6 counts as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, ip.to_canonical()) {
            (IpAddr::V4(n), IpAddr::V4(a)) => prefix_eq(
                u128::from(u32::from(n)),
                u128::from(u32::from(a)),
                32,
                self.prefix,
            ),
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                prefix_eq(u128::from(n), u128::from(a), 128, self.prefix)
            }
            _ => false,
        }
    }
}

/// Whether the first `prefix` of `bits` bits of `a` and `b` agree.
fn prefix_eq(a: u128, b: u128, bits: u32, prefix: u8) -> bool {
    let prefix = u32::from(prefix);
    if prefix == 0 {
        return true;
    }
    let shift = bits - prefix;
    (a >> shift) == (b >> shift)
}

/// How the client address of a request is decided.
#[derive(Debug, Clone)]
pub struct ClientAddr {
    trusted: Vec<Cidr>,
    header: HeaderName,
}

impl Default for ClientAddr {
    /// The socket's peer, always.
    fn default() -> ClientAddr {
        ClientAddr {
            trusted: Vec::new(),
            header: HeaderName::from_static("x-forwarded-for"),
        }
    }
}

impl ClientAddr {
    /// Forwarded addresses believed from the `trusted` blocks only, read from `header`
    /// (`X-Forwarded-For`, or `Forwarded` as RFC 7239 writes it).
    pub fn new(trusted: &[String], header: &str) -> Result<ClientAddr, String> {
        let trusted = trusted
            .iter()
            .map(|t| Cidr::parse(t).map_err(|e| format!("--trusted-proxy {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let header = HeaderName::try_from(header.trim())
            .map_err(|_| format!("--forwarded-header '{header}' is not a header name"))?;
        Ok(ClientAddr { trusted, header })
    }

    fn trusted(&self, ip: IpAddr) -> bool {
        self.trusted.iter().any(|c| c.contains(ip))
    }

    /// The client address of a request from `peer` with `headers`.
    pub fn of(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = peer.to_canonical();
        if !self.trusted(peer) {
            return peer;
        }
        let rfc7239 = self.header.as_str() == "forwarded";
        // Header lines in the order they came, each a comma-separated list of hops. A byte
        // that is not text spoils only the hop it is in: a balancer appends the address it
        // saw to the line a client began, and that address must still be read.
        let lines: Vec<String> = headers
            .get_all(&self.header)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect();
        let hops: Vec<&str> = lines.iter().flat_map(|v| v.split(',')).collect();
        let mut client = peer;
        for hop in hops.iter().rev() {
            let addr = if rfc7239 {
                forwarded_for(hop)
            } else {
                Some(*hop)
            };
            // A hop that is no address (`unknown`, an obfuscated name, garbage a client
            // wrote): the nearest trusted hop is all that is known.
            let Some(ip) = addr.and_then(parse_hop) else {
                return client;
            };
            client = ip;
            if !self.trusted(ip) {
                return ip;
            }
        }
        client
    }
}

/// The `for=` of one RFC 7239 element: `for=192.0.2.1;proto=https`.
fn forwarded_for(element: &str) -> Option<&str> {
    element.split(';').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("for")
            .then(|| v.trim().trim_matches('"'))
    })
}

/// An address as a hop writes it: `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1` or
/// `[2001:db8::1]:4711`.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim();
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    if let Some(rest) = hop.strip_prefix('[') {
        return rest
            .split_once(']')?
            .0
            .parse::<IpAddr>()
            .ok()
            .map(|ip| ip.to_canonical());
    }
    let (host, port) = hop.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(lines: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for l in lines {
            h.append("x-forwarded-for", l.parse().unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn blocks_hold_their_addresses() {
        let c = Cidr::parse("10.1.0.0/16").unwrap();
        assert!(c.contains(ip("10.1.200.3")) && !c.contains(ip("10.2.0.1")));
        assert!(c.contains(ip("::ffff:10.1.0.9")), "IPv4 written as IPv6");
        assert!(Cidr::parse("192.0.2.7").unwrap().contains(ip("192.0.2.7")));
        assert!(!Cidr::parse("192.0.2.7").unwrap().contains(ip("192.0.2.8")));
        assert!(Cidr::parse("fd00::/8").unwrap().contains(ip("fd12::1")));
        assert!(!Cidr::parse("fd00::/8").unwrap().contains(ip("10.0.0.1")));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(ip("8.8.8.8")));
        for bad in ["10.0.0.0/33", "::/129", "lb.internal", "10.0.0.0/x", ""] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let none = ClientAddr::default();
        let h = headers(&["203.0.113.9"]);
        assert_eq!(none.of(ip("198.51.100.4"), &h), ip("198.51.100.4"));
        let lb = ClientAddr::new(&["10.0.0.0/8".into()], "X-Forwarded-For").unwrap();
        assert_eq!(lb.of(ip("198.51.100.4"), &h), ip("198.51.100.4"));
    }

    #[test]
    fn behind_a_trusted_balancer_the_right_most_untrusted_hop_is_the_client() {
        let lb = ClientAddr::new(&["10.0.0.0/8".into()], "X-Forwarded-For").unwrap();
        let peer = ip("10.0.0.2");
        // What the client wrote sits on the left; the balancer's hop counts.
        let h = headers(&["1.2.3.4, 203.0.113.9"]);
        assert_eq!(lb.of(peer, &h), ip("203.0.113.9"));
        // Two header lines (HAProxy adds its own), trusted hops skipped.
        let h = headers(&["1.2.3.4", "203.0.113.9, 10.0.0.7"]);
        assert_eq!(lb.of(peer, &h), ip("203.0.113.9"));
        // Ports and brackets.
        let h = headers(&["[2001:db8::5]:4711"]);
        assert_eq!(lb.of(peer, &h), ip("2001:db8::5"));
        let h = headers(&["203.0.113.9:4711"]);
        assert_eq!(lb.of(peer, &h), ip("203.0.113.9"));
        // No header, garbage, or only trusted hops: the nearest trusted address.
        assert_eq!(lb.of(peer, &HeaderMap::new()), peer);
        assert_eq!(lb.of(peer, &headers(&["garbage"])), peer);
        assert_eq!(
            lb.of(peer, &headers(&["garbage, 10.0.0.9"])),
            ip("10.0.0.9")
        );
        // A byte that is not text in what the client began spoils only its own hop: the
        // address the balancer appended to the same line is still the client's.
        let mut h = HeaderMap::new();
        h.append(
            "x-forwarded-for",
            axum::http::HeaderValue::from_bytes(b"\xff\xfe, 203.0.113.9").unwrap(),
        );
        assert_eq!(lb.of(peer, &h), ip("203.0.113.9"));
        // An IPv4 address written as IPv6 in brackets is the IPv4 client.
        let h = headers(&["[::ffff:203.0.113.9]:4711"]);
        assert_eq!(lb.of(peer, &h), ip("203.0.113.9"));
    }

    #[test]
    fn the_forwarded_header_of_rfc_7239_is_read_too() {
        let lb = ClientAddr::new(&["10.0.0.2".into()], "Forwarded").unwrap();
        let mut h = HeaderMap::new();
        h.append(
            "forwarded",
            "for=1.2.3.4, for=\"[2001:db8::5]:80\";proto=https"
                .parse()
                .unwrap(),
        );
        assert_eq!(lb.of(ip("10.0.0.2"), &h), ip("2001:db8::5"));
        assert!(ClientAddr::new(&["10.0.0.2".into()], "bad header").is_err());
        assert!(ClientAddr::new(&["lb".into()], "X-Forwarded-For").is_err());
    }
}
