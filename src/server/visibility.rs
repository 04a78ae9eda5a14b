//! Who sees which API: the catalog's `visible_to` rules applied to the person a request
//! comes from. The protocol lets a tool list vary by the authorization a request presents
//! (and by nothing else of the request), so this is the one thing that makes two callers'
//! lists differ in the stateless era.
//!
//! A hidden API is absent, not forbidden: its tools are not listed, not ranked, not
//! described and not callable, and no message names them (not even as a "did you mean").

use super::apis::ApiDirectory;
use super::served::Served;
use crate::auth::{api_visible, Principal};
use std::collections::HashSet;

/// The APIs hidden from one request's caller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sight {
    hidden: HashSet<String>,
}

impl Sight {
    /// Every API: a caller no rule limits (a catalog without `visible_to`, the console of a
    /// platform team).
    pub fn everything() -> Sight {
        Sight::default()
    }

    /// What `principal` (`None`: no verified person, e.g. stdio or a server without an
    /// `[auth]` table) sees of `served`. An API with a rule and no person to satisfy it is
    /// hidden.
    pub fn of(served: &Served, principal: Option<&Principal>) -> Sight {
        if !served.limits_callers() {
            return Sight::everything();
        }
        let hidden = served
            .catalog()
            .apis
            .iter()
            .filter(|api| {
                let rule = served
                    .api_config(&api.id)
                    .and_then(|c| c.visible_to.as_ref());
                !api_visible(rule, principal)
            })
            .map(|api| api.id.clone())
            .collect();
        Sight { hidden }
    }

    /// Whether the caller sees the API `api`.
    pub fn sees(&self, api: &str) -> bool {
        !self.hidden.contains(api)
    }

    /// Whether the caller sees every API.
    pub fn is_everything(&self) -> bool {
        self.hidden.is_empty()
    }

    /// The catalog's APIs as this caller may name and list them.
    pub fn directory(&self, all: &ApiDirectory) -> ApiDirectory {
        if self.is_everything() {
            all.clone()
        } else {
            all.without(&self.hidden)
        }
    }

    /// The API ids the caller sees, for the ranking's filter (`None`: all of them).
    pub fn visible_ids(&self, all: &ApiDirectory) -> Option<Vec<String>> {
        (!self.is_everything()).then(|| {
            all.ids()
                .filter(|id| self.sees(id))
                .map(str::to_string)
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sight_hides_only_what_it_names() {
        let all = ApiDirectory::new(
            [("billing", "Billing"), ("tmdb", "TMDB"), ("tmdb", "TMDB")].into_iter(),
        );
        let everything = Sight::everything();
        assert!(everything.sees("billing") && everything.is_everything());
        assert_eq!(everything.visible_ids(&all), None);
        let limited = Sight {
            hidden: HashSet::from(["billing".to_string()]),
        };
        assert!(!limited.sees("billing") && limited.sees("tmdb"));
        assert_eq!(limited.visible_ids(&all), Some(vec!["tmdb".to_string()]));
        let dir = limited.directory(&all);
        assert_eq!(dir.len(), 1);
        // A hidden API is unknown, and no suggestion names it.
        let e = dir.resolve("billing").unwrap_err();
        assert!(!e.contains("closest"), "{e}");
        assert!(dir.resolve("tmdb").is_ok());
    }
}
