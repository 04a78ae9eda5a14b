//! Which addresses a call may connect to: everything but link-local addresses and cloud
//! metadata services, unless the API's config says `allow_link_local = true`.
//!
//! A spec's `servers` (or a name they use, resolving to such an address) are chosen by
//! whoever wrote the spec; a catalog built from third-party specs must not let a tool
//! call read `http://169.254.169.254/latest/meta-data/iam/...` on a cloud host. The check
//! runs on the address actually connected to: IP literals before sending, names in the
//! HTTP client's resolver (so a name that resolves, or later re-resolves, to a metadata
//! address is refused too), and redirects, which reconnect through the same resolver.
//! Loopback and private ranges stay allowed: local and intranet APIs are a normal use.

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

/// Why an address is refused, or `None` when it may be called.
pub fn refused(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => {
            // The same IPv4 address written as IPv6 (mapped, or NAT64) reaches the same host.
            if let Some(v4) = v6.to_ipv4_mapped().or_else(|| nat64(v6)) {
                return refused_v4(v4);
            }
            if v6 == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
                return Some("a cloud metadata address");
            }
            ((v6.segments()[0] & 0xffc0) == 0xfe80).then_some("a link-local address")
        }
    }
}

fn refused_v4(v4: Ipv4Addr) -> Option<&'static str> {
    if v4 == Ipv4Addr::new(169, 254, 169, 254) || v4 == Ipv4Addr::new(100, 100, 100, 200) {
        Some("a cloud metadata address")
    } else if v4.is_link_local() {
        Some("a link-local address")
    } else {
        None
    }
}

/// The IPv4 address inside a NAT64 address (`64:ff9b::/96`).
fn nat64(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    (s[..6] == [0x64, 0xff9b, 0, 0, 0, 0])
        .then(|| Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8))
}

/// The message for a refused address.
pub fn refusal(ip: IpAddr, host: &str, why: &str) -> String {
    let via = if host.trim_matches(['[', ']']) == ip.to_string() {
        String::new()
    } else {
        format!(" (which {host} resolves to)")
    };
    format!(
        "refusing to connect to {ip}{via}: it is {why}; an API served there needs `allow_link_local = true` in its catalog config entry"
    )
}

/// The HTTP client's resolver: the system's (or fixed answers, for tests), with refused
/// addresses dropped. A name with only refused addresses fails with [`refusal`].
#[derive(Clone, Default)]
pub struct GuardedResolver {
    /// Whether link-local and metadata addresses are allowed (the client of APIs that
    /// set `allow_link_local`).
    pub allow_link_local: bool,
    /// Fixed answers for some names, consulted before the system resolver.
    pub fixed: Arc<HashMap<String, Vec<IpAddr>>>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let this = self.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let addrs: Vec<SocketAddr> = match this.fixed.get(&host) {
                Some(ips) => ips.iter().map(|ip| SocketAddr::new(*ip, 0)).collect(),
                None => tokio::net::lookup_host((host.as_str(), 0)).await?.collect(),
            };
            if this.allow_link_local {
                return Ok(Box::new(addrs.into_iter()) as Addrs);
            }
            let mut first_refused = None;
            let allowed: Vec<SocketAddr> = addrs
                .into_iter()
                .filter(|a| match refused(a.ip()) {
                    Some(why) => {
                        first_refused.get_or_insert((a.ip(), why));
                        false
                    }
                    None => true,
                })
                .collect();
            match (allowed.is_empty(), first_refused) {
                (true, Some((ip, why))) => Err(refusal(ip, &host, why).into()),
                _ => Ok(Box::new(allowed.into_iter()) as Addrs),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_local_and_metadata_are_refused_in_every_notation() {
        for ip in [
            "169.254.169.254",
            "169.254.170.2",
            "169.254.0.1",
            "100.100.100.200",
            "fe80::1",
            "febf::1",
            "fd00:ec2::254",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
        ] {
            assert!(refused(ip.parse().unwrap()).is_some(), "{ip}");
        }
        for ip in [
            "127.0.0.1",
            "10.0.0.1",
            "192.168.1.1",
            "172.16.0.1",
            "100.100.100.201",
            "::1",
            "fd00::1",
            "fec0::1",
            "8.8.8.8",
        ] {
            assert!(refused(ip.parse().unwrap()).is_none(), "{ip}");
        }
    }

    #[tokio::test]
    async fn the_resolver_drops_refused_addresses() {
        let fixed: HashMap<String, Vec<IpAddr>> = [
            (
                "meta.test".to_string(),
                vec!["169.254.169.254".parse().unwrap()],
            ),
            (
                "mixed.test".to_string(),
                vec!["fe80::1".parse().unwrap(), "127.0.0.1".parse().unwrap()],
            ),
        ]
        .into();
        let r = GuardedResolver {
            allow_link_local: false,
            fixed: Arc::new(fixed),
        };
        let name = |s: &str| s.parse::<Name>().unwrap();
        let err = match r.resolve(name("meta.test")).await {
            Err(e) => e.to_string(),
            Ok(_) => panic!("metadata address resolved"),
        };
        assert!(
            err.contains("169.254.169.254 (which meta.test resolves to)")
                && err.contains("allow_link_local = true"),
            "{err}"
        );
        let ok: Vec<SocketAddr> = r.resolve(name("mixed.test")).await.ok().unwrap().collect();
        assert_eq!(ok, ["127.0.0.1:0".parse().unwrap()]);
        let open = GuardedResolver {
            allow_link_local: true,
            ..r
        };
        assert_eq!(
            open.resolve(name("meta.test")).await.ok().unwrap().count(),
            1
        );
    }
}
