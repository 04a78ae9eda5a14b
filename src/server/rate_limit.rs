//! How fast the consent pages may be asked for: a token bucket per client address, and
//! one for the whole replica well above any one client's share.
//!
//! The pages take no token (a browser has none), so anyone who reaches the server can ask
//! for them. A single bucket for everyone would let one script lock every person out of
//! consenting; per address, a script runs into its own limit and nobody else's. The
//! ceiling bounds what the server does (code redemptions, provider requests) when many
//! addresses ask at once. IPv6 clients are counted by their /64, the block one subscriber
//! is usually given, so cycling through it gains nothing; and each /48 (a site's usual
//! block) shares four clients' worth, so a holder of many /64s cannot drain the ceiling.
//!
//! The table of addresses is bounded: addresses whose bucket has filled up again carry no
//! state worth keeping and go first; when the table is still full, the longest unseen go.
//! An attacker cycling addresses then costs memory no more than the bound, and what is
//! forgotten is a full bucket, which is what a new address gets anyway.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// A token bucket: `burst` requests at once, refilled at `per_sec`.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// A bucket's size and refill rate.
#[derive(Debug, Clone, Copy)]
pub struct Rate {
    pub burst: u32,
    pub per_sec: u32,
}

impl Rate {
    fn full(&self, now: Instant) -> Bucket {
        Bucket {
            tokens: f64::from(self.burst),
            at: now,
        }
    }

    /// The tokens of `b` at `now`.
    fn refilled(&self, b: Bucket, now: Instant) -> f64 {
        let gained = now.saturating_duration_since(b.at).as_secs_f64() * f64::from(self.per_sec);
        (b.tokens + gained).min(f64::from(self.burst))
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limited {
    /// Its client asked too fast.
    Client,
    /// All clients together did.
    Global,
}

impl Limited {
    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Limited::Client => "client",
            Limited::Global => "global",
        }
    }
}

struct Table {
    clients: HashMap<IpAddr, Bucket>,
    /// IPv6 networks (/48): what one holder of many /64s shares.
    networks: HashMap<IpAddr, Bucket>,
    global: Bucket,
}

/// The limits of the consent pages.
pub struct RateLimits {
    per_client: Rate,
    /// The share of one IPv6 /48, a site's usual assignment: a holder cycling through its
    /// /64s meets this before the ceiling everyone shares.
    per_network: Rate,
    global: Rate,
    max_clients: usize,
    table: Mutex<Table>,
}

impl RateLimits {
    /// `per_client` for each address, `global` for all, at most `max_clients` addresses
    /// remembered.
    pub fn new(per_client: Rate, global: Rate, max_clients: usize) -> RateLimits {
        RateLimits {
            per_client,
            per_network: Rate {
                burst: per_client.burst.saturating_mul(4),
                per_sec: per_client.per_sec.saturating_mul(4),
            },
            global,
            max_clients: max_clients.max(1),
            table: Mutex::new(Table {
                clients: HashMap::new(),
                networks: HashMap::new(),
                global: global.full(Instant::now()),
            }),
        }
    }

    /// The consent pages' limits: twenty at once and five a second per address (people
    /// click, scripts loop), four times that per IPv6 /48; a thousand at once and 250 a
    /// second for the replica; ten thousand addresses remembered (well under a megabyte).
    pub fn consent_pages() -> RateLimits {
        RateLimits::new(
            Rate {
                burst: 20,
                per_sec: 5,
            },
            Rate {
                burst: 1000,
                per_sec: 250,
            },
            10_000,
        )
    }

    /// Whether one more request from `client` may go through now. A request refused for
    /// its client's limit takes nothing from the ceiling, so one client cannot spend it.
    pub fn check(&self, client: IpAddr) -> Result<(), Limited> {
        self.check_at(client, Instant::now())
    }

    fn check_at(&self, client: IpAddr, now: Instant) -> Result<(), Limited> {
        let key = bucket_key(client);
        let network = network_key(client);
        let max = self.max_clients;
        let mut t = self.table.lock().unwrap_or_else(|e| e.into_inner());
        let mine = available(&mut t.clients, key, self.per_client, max, now);
        if mine < 1.0 {
            t.clients.insert(
                key,
                Bucket {
                    tokens: mine,
                    at: now,
                },
            );
            return Err(Limited::Client);
        }
        let ours = match network {
            Some(net) => {
                let b = available(&mut t.networks, net, self.per_network, max, now);
                if b < 1.0 {
                    t.networks.insert(net, Bucket { tokens: b, at: now });
                    return Err(Limited::Client);
                }
                Some((net, b))
            }
            None => None,
        };
        let all = self.global.refilled(t.global, now);
        if all < 1.0 {
            t.global = Bucket {
                tokens: all,
                at: now,
            };
            return Err(Limited::Global);
        }
        t.global = Bucket {
            tokens: all - 1.0,
            at: now,
        };
        if let Some((net, b)) = ours {
            t.networks.insert(
                net,
                Bucket {
                    tokens: b - 1.0,
                    at: now,
                },
            );
        }
        t.clients.insert(
            key,
            Bucket {
                tokens: mine - 1.0,
                at: now,
            },
        );
        Ok(())
    }

    /// How many addresses are remembered now.
    #[cfg(test)]
    fn remembered(&self) -> usize {
        self.table
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clients
            .len()
    }
}

/// The tokens `key`'s bucket holds at `now` (a full bucket for a key not yet seen, after
/// making room for it in a full table).
fn available(
    table: &mut HashMap<IpAddr, Bucket>,
    key: IpAddr,
    rate: Rate,
    max: usize,
    now: Instant,
) -> f64 {
    if !table.contains_key(&key) && table.len() >= max {
        evict(table, rate, max, now);
    }
    let b = table.get(&key).copied().unwrap_or_else(|| rate.full(now));
    rate.refilled(b, now)
}

/// Makes room in a full table: first every address whose bucket is full again; when
/// that frees less than a tenth, the longest unseen up to a tenth, so the next
/// thousand new addresses find room without another pass.
fn evict(clients: &mut HashMap<IpAddr, Bucket>, rate: Rate, max: usize, now: Instant) {
    let burst = f64::from(rate.burst);
    clients.retain(|_, b| rate.refilled(*b, now) < burst);
    let room = (max / 10).max(1);
    let keep = max.saturating_sub(room);
    if clients.len() > keep {
        let mut seen: Vec<Instant> = clients.values().map(|b| b.at).collect();
        let drop = clients.len() - keep;
        let (_, cut, _) = seen.select_nth_unstable(drop - 1);
        let cut = *cut;
        let mut left = drop;
        clients.retain(|_, b| {
            if left > 0 && b.at <= cut {
                left -= 1;
                false
            } else {
                true
            }
        });
    }
}

/// The address a bucket is kept under: an IPv4 address itself, an IPv6 address's /64.
fn bucket_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        v4 => v4,
    }
}

/// The IPv6 network (/48) an address is also counted in; none for IPv4.
fn network_key(ip: IpAddr) -> Option<IpAddr> {
    match ip.to_canonical() {
        IpAddr::V6(v6) => Some(IpAddr::V6((u128::from(v6) & !((1u128 << 80) - 1)).into())),
        IpAddr::V4(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn limits(burst: u32, per_sec: u32, global: u32, max: usize) -> RateLimits {
        RateLimits::new(
            Rate { burst, per_sec },
            Rate {
                burst: global,
                per_sec: global,
            },
            max,
        )
    }

    #[test]
    fn the_limit_lets_a_burst_through_then_refills() {
        let r = limits(3, 1000, 100, 10);
        let a = ip("192.0.2.1");
        assert!(r.check(a).is_ok() && r.check(a).is_ok() && r.check(a).is_ok());
        assert_eq!(r.check(a), Err(Limited::Client));
        std::thread::sleep(Duration::from_millis(5));
        assert!(r.check(a).is_ok());
    }

    #[test]
    fn one_client_at_its_limit_leaves_the_others_theirs() {
        let r = limits(20, 5, 1000, 100);
        let now = Instant::now();
        let (a, b) = (ip("192.0.2.1"), ip("192.0.2.2"));
        let refused = (0..80).filter(|_| r.check_at(a, now).is_err()).count();
        assert_eq!(refused, 60);
        assert!(r.check_at(b, now).is_ok());
        // Refused requests take nothing from the ceiling: 20 + 1 of 1000 spent.
        let served = (0..2000)
            .map(|i| ip(&format!("10.{}.{}.1", i / 250, i % 250)))
            .filter(|c| r.check_at(*c, now).is_ok())
            .count();
        assert_eq!(served, 1000 - 21);
    }

    #[test]
    fn many_clients_together_meet_the_ceiling() {
        let r = limits(20, 5, 50, 1000);
        let now = Instant::now();
        let results: Vec<_> = (0..60)
            .map(|i| r.check_at(ip(&format!("198.51.100.{i}")), now))
            .collect();
        assert_eq!(results.iter().filter(|x| x.is_ok()).count(), 50);
        assert_eq!(results[59], Err(Limited::Global));
    }

    #[test]
    fn an_ipv6_client_is_counted_by_its_64() {
        let r = limits(2, 1, 100, 10);
        let now = Instant::now();
        assert!(r.check_at(ip("2001:db8:1:2::1"), now).is_ok());
        assert!(r.check_at(ip("2001:db8:1:2::ffff"), now).is_ok());
        assert_eq!(
            r.check_at(ip("2001:db8:1:2:aaaa::7"), now),
            Err(Limited::Client)
        );
        assert!(r.check_at(ip("2001:db8:1:3::1"), now).is_ok());
    }

    /// One holder of a /48 cycling through its /64s meets the /48's share, not the
    /// ceiling every client shares: another network still gets through.
    #[test]
    fn an_ipv6_network_shares_one_limit_across_its_64s() {
        let r = limits(2, 1, 1000, 1000);
        let now = Instant::now();
        let passed = (0..20u16)
            .filter(|i| {
                let a = IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 1, *i, 0, 0, 0, 1));
                r.check_at(a, now).is_ok()
            })
            .count();
        assert_eq!(passed, 8, "four times one client's burst");
        assert!(r.check_at(ip("2001:db8:2::1"), now).is_ok());
        assert!(r.check_at(ip("192.0.2.1"), now).is_ok());
    }

    #[test]
    fn cycling_addresses_cannot_grow_the_table() {
        let r = limits(20, 5, 1_000_000, 1000);
        let start = Instant::now();
        for i in 0..50_000u32 {
            let a = IpAddr::from((0x0a00_0000u32 + i).to_be_bytes());
            let _ = r.check_at(a, start + Duration::from_micros(u64::from(i)));
        }
        assert!(r.remembered() <= 1000, "{}", r.remembered());
        // A client at its limit is among the last seen and stays limited.
        let hot = ip("192.0.2.200");
        let t = start + Duration::from_millis(60);
        for _ in 0..20 {
            let _ = r.check_at(hot, t);
        }
        assert_eq!(r.check_at(hot, t), Err(Limited::Client));
        for i in 0..500u32 {
            let _ = r.check_at(IpAddr::from((0x0b00_0000u32 + i).to_be_bytes()), t);
        }
        assert_eq!(r.check_at(hot, t), Err(Limited::Client));
        assert!(r.remembered() <= 1000);
    }
}
