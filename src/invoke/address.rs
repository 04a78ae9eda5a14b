//! Which addresses a call may connect to.
//!
//! - Link-local addresses and cloud metadata services: never, unless the API's config says
//!   `allow_link_local = true`. A spec's `servers` (or a name they use, resolving to such an
//!   address) are chosen by whoever wrote the spec; a catalog built from third-party specs
//!   must not let a tool call read `http://169.254.169.254/latest/meta-data/iam/...` on a
//!   cloud host.
//! - Loopback and private addresses (127.0.0.0/8, 10.0.0.0/8, 172.16.0.0/12,
//!   192.168.0.0/16, 100.64.0.0/10, fc00::/7, ...): called as declared by a single
//!   person's server, where local and intranet APIs are a normal use; refused by a team
//!   server (one with an `[auth]` table) unless the API's entry says
//!   `allow_private = true`, since it runs inside the organisation's network, where a
//!   spec's author could otherwise point a tool at a service nobody registered as an API.
//!
//! The check runs on the address actually connected to: IP literals before sending, names
//! in the HTTP client's resolver (so a name that resolves, or later re-resolves, to such an
//! address is refused too), and redirects, which reconnect through the same resolver.
//! Through an egress proxy, which resolves names itself, every address of a target's name
//! is checked before the call is handed over (see `transport`), and the proxy's own
//! address may be private but never link-local or a metadata service's.

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

/// What one API's calls may reach beyond the public internet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Policy {
    /// Link-local and cloud metadata addresses (`allow_link_local`).
    pub link_local: bool,
    /// Loopback and private addresses.
    pub private: bool,
}

impl Policy {
    /// Everything: no check at all.
    pub const ANY: Policy = Policy {
        link_local: true,
        private: true,
    };

    /// Index of this policy among the four (one HTTP client each).
    pub fn index(self) -> usize {
        usize::from(self.link_local) | (usize::from(self.private) << 1)
    }
}

/// Why an address is refused under `policy`, or `None` when it may be called.
pub fn refused_by(ip: IpAddr, policy: Policy) -> Option<&'static str> {
    if let Some(why) = refused(ip).filter(|_| !policy.link_local) {
        return Some(why);
    }
    if !policy.private && is_private(ip) {
        return Some("a loopback or private address");
    }
    None
}

/// Why an address is refused whatever the API allows but `allow_link_local`: a
/// link-local or cloud metadata address. `None` when it may be called.
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

/// Whether `ip` is a loopback, private, shared (carrier-grade NAT), unspecified or
/// broadcast address: one that reaches the server's own host or network.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => private_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped().or_else(|| nat64(v6)) {
                return private_v4(v4);
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfec0
        }
    }
}

fn private_v4(v4: Ipv4Addr) -> bool {
    let [a, b, ..] = v4.octets();
    v4.is_loopback()
        || v4.is_private()
        || v4.is_unspecified()
        || v4.is_broadcast()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
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
    let key = if why.contains("private") {
        "allow_private"
    } else {
        "allow_link_local"
    };
    format!(
        "refusing to connect to {ip}{via}: it is {why}; an API served there needs `{key} = true` in its catalog config entry"
    )
}

/// The HTTP client's resolver: the system's (or fixed answers, for tests), with refused
/// addresses dropped. A name with only refused addresses fails with [`refusal`].
#[derive(Clone)]
pub struct GuardedResolver {
    /// What the client's calls may reach.
    pub policy: Policy,
    /// Fixed answers for some names, consulted before the system resolver.
    pub fixed: Arc<HashMap<String, Vec<IpAddr>>>,
    /// The egress proxy's host names: a proxy may sit on a private address, but never on
    /// a link-local or metadata one (it would receive every call).
    pub proxies: Arc<[String]>,
}

impl Default for GuardedResolver {
    fn default() -> GuardedResolver {
        GuardedResolver {
            policy: Policy::default(),
            fixed: Arc::default(),
            proxies: Arc::new([]),
        }
    }
}

/// What a proxy's own address may be: anything but link-local and metadata.
const PROXY_POLICY: Policy = Policy {
    link_local: false,
    private: true,
};

/// The message for a proxy on a refused address.
pub fn proxy_refusal(ip: IpAddr, host: &str, why: &str) -> String {
    let via = if host.trim_matches(['[', ']']) == ip.to_string() {
        String::new()
    } else {
        format!(" (which {host} resolves to)")
    };
    format!(
        "refusing to connect to the proxy at {ip}{via}: it is {why}, which no call may go through"
    )
}

impl GuardedResolver {
    /// The addresses of `host` this resolver lets a client connect to; an error when it
    /// has none (every address refused, or the name unknown).
    pub async fn lookup(&self, host: &str) -> Result<Vec<SocketAddr>, String> {
        let addrs: Vec<SocketAddr> = match self.fixed.get(host) {
            Some(ips) => ips.iter().map(|ip| SocketAddr::new(*ip, 0)).collect(),
            None => tokio::net::lookup_host((host, 0))
                .await
                .map_err(|e| format!("cannot resolve {host}: {e}"))?
                .collect(),
        };
        let proxy = self.proxies.iter().any(|p| p == host);
        let policy = if proxy { PROXY_POLICY } else { self.policy };
        if policy == Policy::ANY {
            return Ok(addrs);
        }
        let mut first_refused = None;
        let allowed: Vec<SocketAddr> = addrs
            .into_iter()
            .filter(|a| match refused_by(a.ip(), policy) {
                Some(why) => {
                    first_refused.get_or_insert((a.ip(), why));
                    false
                }
                None => true,
            })
            .collect();
        match (allowed.is_empty(), first_refused) {
            (true, Some((ip, why))) if proxy => Err(proxy_refusal(ip, host, why)),
            (true, Some((ip, why))) => Err(refusal(ip, host, why)),
            _ => Ok(allowed),
        }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let this = self.clone();
        Box::pin(async move {
            let addrs = this.lookup(name.as_str()).await?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
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
            ("local.test".to_string(), vec!["127.0.0.1".parse().unwrap()]),
        ]
        .into();
        let r = GuardedResolver {
            policy: Policy {
                link_local: false,
                private: true,
            },
            fixed: Arc::new(fixed),
            ..GuardedResolver::default()
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
            policy: Policy::ANY,
            ..r.clone()
        };
        assert_eq!(
            open.resolve(name("meta.test")).await.ok().unwrap().count(),
            1
        );
        // A team server's client: loopback refused, with the key that allows it named.
        let team = GuardedResolver {
            policy: Policy::default(),
            ..r
        };
        let err = match team.resolve(name("local.test")).await {
            Err(e) => e.to_string(),
            Ok(_) => panic!("a loopback address resolved on a team server"),
        };
        assert!(err.contains("allow_private = true"), "{err}");
    }

    #[test]
    fn private_ranges_in_every_notation() {
        for ip in [
            "127.0.0.1",
            "127.1.2.3",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "::1",
            "::",
            "fd00::1",
            "fc00::1",
            "fec0::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.1.1",
            "64:ff9b::a00:1",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
            assert!(
                refused_by(ip.parse().unwrap(), Policy::default()).is_some(),
                "{ip}"
            );
            assert!(
                refused_by(
                    ip.parse().unwrap(),
                    Policy {
                        link_local: false,
                        private: true
                    }
                )
                .is_none(),
                "{ip}"
            );
        }
        for ip in [
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "1.1.1.1",
        ] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
    }
}
