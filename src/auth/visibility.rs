//! Who sees which API: `visible_to` on an `[[api]]`, decided for one principal.
//!
//! The MCP revisions from 2026-07-28 let `tools/list` vary "by the authorization presented
//! on the request", so the same rule filters the tool list, the search meta-tools, calls
//! and the console.

use super::Principal;
use crate::catalog::config::VisibleTo;
use crate::catalog::Access;

/// Whether `principal` sees an API whose access is `access`: the one decision MCP and the
/// console share.
///
/// - `Everyone` (its entry has no `visible_to`): everyone, with or without a principal.
/// - `Limited(rule)`: the principal is in any of `rule.groups` or holds any of
///   `rule.scopes`; with both lists empty, nobody. Without a principal (a server without
///   an `[auth]` table, stdio, the static `--auth-token-env` token) nobody either: a rule
///   names people, and an anonymous caller is none of them, so a misconfigured server
///   fails closed rather than open.
/// - `Unresolved` (no config entry loaded it): nobody.
pub fn sees(access: Access<'_>, principal: Option<&Principal>) -> bool {
    match access {
        Access::Everyone => true,
        Access::Limited(rule) => principal.is_some_and(|p| satisfies(rule, p)),
        Access::Unresolved => false,
    }
}

fn satisfies(rule: &VisibleTo, p: &Principal) -> bool {
    rule.groups.iter().any(|g| p.in_group(g)) || rule.scopes.iter().any(|s| p.has_scope(s))
}

/// [`sees`] for a rule read directly from an entry (`None`: the entry has no rule).
pub fn api_visible(rule: Option<&VisibleTo>, principal: Option<&Principal>) -> bool {
    sees(rule.map_or(Access::Everyone, Access::Limited), principal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn person(scopes: &[&str], groups: &[&str]) -> Principal {
        Principal {
            sub: "alice".into(),
            issuer: "https://idp.test".into(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            groups: groups.iter().map(|s| s.to_string()).collect(),
            client_id: None,
            expires_at: 0,
        }
    }

    fn rule(groups: &[&str], scopes: &[&str]) -> VisibleTo {
        VisibleTo {
            groups: groups.iter().map(|s| s.to_string()).collect(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn no_rule_is_visible_to_everyone() {
        assert!(api_visible(None, None));
        assert!(api_visible(None, Some(&person(&[], &[]))));
    }

    #[test]
    fn a_group_or_a_scope_is_enough() {
        let r = rule(&["eng"], &["billing:read"]);
        assert!(api_visible(Some(&r), Some(&person(&[], &["eng"]))));
        assert!(api_visible(Some(&r), Some(&person(&["billing:read"], &[]))));
        assert!(api_visible(
            Some(&r),
            Some(&person(&["billing:read"], &["eng", "sales"]))
        ));
        assert!(!api_visible(
            Some(&r),
            Some(&person(&["billing"], &["sales"]))
        ));
    }

    #[test]
    fn names_match_exactly() {
        let r = rule(&["eng"], &["billing"]);
        for p in [
            person(&[], &["ENG"]),
            person(&[], &["eng-ops"]),
            person(&["billing:read"], &[]),
            person(&["Billing"], &[]),
        ] {
            assert!(!api_visible(Some(&r), Some(&p)), "{p:?}");
        }
    }

    #[test]
    fn an_empty_rule_hides_from_everyone() {
        let r = rule(&[], &[]);
        assert!(!api_visible(Some(&r), Some(&person(&["mcp"], &["eng"]))));
    }

    #[test]
    fn a_rule_without_a_principal_hides() {
        assert!(!api_visible(Some(&rule(&["eng"], &[])), None));
    }

    #[test]
    fn an_unresolved_rule_hides_from_everyone() {
        for p in [None, Some(person(&["mcp"], &["eng", "admins"]))] {
            assert!(!sees(Access::Unresolved, p.as_ref()));
        }
    }
}
