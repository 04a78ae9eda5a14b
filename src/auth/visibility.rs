//! Who sees which API: `visible_to` on an `[[api]]`, decided for one principal.
//!
//! The MCP revisions from 2026-07-28 let `tools/list` vary "by the authorization presented
//! on the request", so the same rule filters the tool list, the search meta-tools, calls
//! and the console.

use super::Principal;
use crate::catalog::config::VisibleTo;

/// Whether `principal` sees an API whose config says `rule`.
///
/// - No rule: everyone sees the API, with or without a principal.
/// - A rule: the principal sees it when it is in any of `rule.groups` or holds any of
///   `rule.scopes`; with both lists empty, nobody does.
/// - A rule but no principal (a server without an `[auth]` table, stdio, the static
///   `--auth-token-env` token): hidden. A rule names people, and an anonymous caller is
///   none of them, so a misconfigured server fails closed rather than open.
pub fn api_visible(rule: Option<&VisibleTo>, principal: Option<&Principal>) -> bool {
    let Some(rule) = rule else {
        return true;
    };
    let Some(p) = principal else {
        return false;
    };
    rule.groups.iter().any(|g| p.in_group(g)) || rule.scopes.iter().any(|s| p.has_scope(s))
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
}
