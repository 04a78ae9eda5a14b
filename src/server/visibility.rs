//! Who sees which API: the catalog's `visible_to` rules applied to the person a request
//! comes from. The protocol lets a tool list vary by the authorization a request presents
//! (and by nothing else of the request), so this is the one thing that makes two callers'
//! lists differ in the stateless era.
//!
//! What a caller sees is an allow-list, computed from what is served: an API is in it only
//! when the config entry that loaded it has been found and its rule admits the caller. An
//! API whose rule cannot be read (no entry loaded it) is in nobody's list.
//!
//! A hidden API is absent, not forbidden: its tools are not listed, not ranked, not
//! described and not callable, and no message names them (not even as a "did you mean").

use super::apis::ApiDirectory;
use super::served::Served;
use crate::auth::Principal;
use std::collections::HashSet;

/// The APIs one request's caller sees.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sight {
    /// `None`: every API (no rule limits anyone).
    visible: Option<HashSet<String>>,
}

impl Sight {
    /// Every API: a caller no rule limits (the console of a platform team, its admins).
    pub fn everything() -> Sight {
        Sight::default()
    }

    /// What `principal` (`None`: no verified person, e.g. stdio or a server without an
    /// `[auth]` table) sees of `served`: the served APIs whose entry's rule admits them.
    pub fn of(served: &Served, principal: Option<&Principal>) -> Sight {
        if !served.limits_callers() {
            return Sight::everything();
        }
        let visible = served
            .apis()
            .ids()
            .filter(|id| crate::auth::sees(served.access(id), principal))
            .map(str::to_string)
            .collect();
        Sight {
            visible: Some(visible),
        }
    }

    /// Whether the caller sees the API `api`.
    pub fn sees(&self, api: &str) -> bool {
        self.visible.as_ref().is_none_or(|v| v.contains(api))
    }

    /// Whether the caller sees every API.
    pub fn is_everything(&self) -> bool {
        self.visible.is_none()
    }

    /// The catalog's APIs as this caller may name and list them.
    pub fn directory(&self, all: &ApiDirectory) -> ApiDirectory {
        match &self.visible {
            None => all.clone(),
            Some(v) => {
                let hidden: HashSet<String> = all
                    .ids()
                    .filter(|id| !v.contains(*id))
                    .map(str::to_string)
                    .collect();
                all.without(&hidden)
            }
        }
    }

    /// The API ids the caller sees, for the ranking's filter (`None`: all of them).
    pub fn visible_ids(&self, all: &ApiDirectory) -> Option<Vec<String>> {
        self.visible.as_ref().map(|v| {
            all.ids()
                .filter(|id| v.contains(*id))
                .map(str::to_string)
                .collect()
        })
    }

    /// The message for a name no endpoint has, or one of an API the caller does not see:
    /// with the nearest names as hints only when the caller sees every API (a hint could
    /// otherwise name a hidden tool).
    pub fn unknown_tool(&self, served: &Served, name: &str) -> String {
        if self.is_everything() {
            return served.unknown_tool(name);
        }
        let name = crate::text::clip_chars(name, 80);
        format!("unknown tool '{name}'; use find_tools to find tools")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sight_shows_only_what_it_allows() {
        let all = ApiDirectory::new(
            [("billing", "Billing"), ("tmdb", "TMDB"), ("tmdb", "TMDB")].into_iter(),
        );
        let everything = Sight::everything();
        assert!(everything.sees("billing") && everything.is_everything());
        assert_eq!(everything.visible_ids(&all), None);
        let limited = Sight {
            visible: Some(HashSet::from(["tmdb".to_string()])),
        };
        assert!(!limited.sees("billing") && limited.sees("tmdb"));
        assert!(
            !limited.sees("an-api-added-later"),
            "what is not allowed is hidden"
        );
        assert_eq!(limited.visible_ids(&all), Some(vec!["tmdb".to_string()]));
        let dir = limited.directory(&all);
        assert_eq!(dir.len(), 1);
        // A hidden API is unknown, and no suggestion names it.
        let e = dir.resolve("billing").unwrap_err();
        assert!(!e.contains("closest"), "{e}");
        assert!(dir.resolve("tmdb").is_ok());
    }
}
