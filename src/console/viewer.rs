//! Who is looking at the console, and what that lets them see.
//!
//! The console is reached in one of two ways, and the guards in front of it decide which
//! (`server::http`): with the server's static token (`--auth-token-env`), or on a loopback
//! console without one, by its **operator**, the platform team running it; or, on a server
//! with an `[auth]` table and no static token, with an access token the resource-server
//! layer has verified into a [`Principal`] in the request's extensions, by a **person**.
//! A request without a principal therefore came through the operator's door: the layer
//! in front of a team console lets none through without one.
//!
//! The operator and the people `[auth] admins` names see the whole catalog and the audit
//! log; anyone else sees the APIs their `visible_to` rules show them, as over MCP, and no
//! audit log: it records what everyone called.

use super::{Console, Snapshot};
use crate::auth::Principal;
use crate::catalog::config::People;
use crate::catalog::Access;
use crate::server::{Served, Sight};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::Arc;

/// The one looking at a console page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Viewer {
    /// The static-token holder, or anyone on a loopback console without a token.
    Operator,
    /// A person with a verified access token; `admin` when `[auth] admins` names them,
    /// `reviewer` when `[auth] reviewers` does.
    Person {
        principal: Principal,
        admin: bool,
        reviewer: bool,
    },
}

impl Viewer {
    /// The viewer of a request whose extensions hold `principal` (if any), under the
    /// configured `admins` and `reviewers`.
    pub fn of(
        principal: Option<&Principal>,
        admins: Option<&People>,
        reviewers: Option<&People>,
    ) -> Viewer {
        match principal {
            None => Viewer::Operator,
            Some(p) => Viewer::Person {
                admin: admins.is_some_and(|a| names(a, p)),
                reviewer: reviewers.is_some_and(|r| names(r, p)),
                principal: p.clone(),
            },
        }
    }

    /// Whether this viewer reads the audit log and sees every API.
    pub fn is_admin(&self) -> bool {
        match self {
            Viewer::Operator => true,
            Viewer::Person { admin, .. } => *admin,
        }
    }

    /// Whether this viewer may write reviews: change the text every colleague's agent
    /// reads. The operator and admins may; of other people, those `reviewers` names.
    pub fn may_review(&self) -> bool {
        match self {
            Viewer::Operator => true,
            Viewer::Person {
                admin, reviewer, ..
            } => *admin || *reviewer,
        }
    }

    /// Who the viewer is, in words, for pages and refusals.
    pub fn describe(&self) -> String {
        match self {
            Viewer::Operator => "the console's operator".into(),
            Viewer::Person { principal, .. } => principal.sub.clone(),
        }
    }

    /// Who the viewer is for the audit log: the person's `sub`, `operator` otherwise.
    pub fn audit_sub(&self) -> &str {
        match self {
            Viewer::Operator => "operator",
            Viewer::Person { principal, .. } => &principal.sub,
        }
    }

    /// The OAuth client the viewer came through, for the audit log.
    pub fn client_id(&self) -> Option<&str> {
        match self {
            Viewer::Operator => None,
            Viewer::Person { principal, .. } => principal.client_id.as_deref(),
        }
    }

    /// Whether the viewer sees an API whose access is `access`.
    pub fn sees(&self, access: Access<'_>) -> bool {
        match self {
            Viewer::Person {
                principal,
                admin: false,
                ..
            } => crate::auth::sees(access, Some(principal)),
            _ => true,
        }
    }

    /// What the viewer sees of the served catalog: the ranking's filter for "Try".
    pub fn sight(&self, served: &Served) -> Sight {
        match self {
            Viewer::Person {
                principal,
                admin: false,
                ..
            } => Sight::of(served, Some(principal)),
            _ => Sight::everything(),
        }
    }

    /// What the viewer sees of a snapshot (the files the pages read): the APIs whose
    /// entry's rule admits them, found the same way as over MCP.
    pub fn shown(&self, snap: &Snapshot) -> Shown {
        if self.is_admin() {
            return Shown::everything();
        }
        let mut apis = HashSet::new();
        let mut files = HashSet::new();
        for src in &snap.sources {
            if self.sees(snap.catalog.access(&src.id)) {
                apis.insert(src.id.clone());
                files.insert(src.path.display().to_string());
                files.insert(src.original.display().to_string());
            }
        }
        // APIs no spec file holds: an MCP server's tools (its problems name `mcp:<id>`).
        for api in &snap.catalog.apis {
            if self.sees(snap.catalog.access(&api.id)) {
                apis.insert(api.id.clone());
                files.insert(api.source.display().to_string());
            }
        }
        Shown {
            limited: Some(Limited { apis, files }),
        }
    }
}

fn names(a: &People, p: &Principal) -> bool {
    a.groups.iter().any(|g| p.in_group(g))
        || a.scopes.iter().any(|s| p.has_scope(s))
        || a.subs.contains(&p.sub)
}

/// The part of a snapshot one viewer sees.
#[derive(Debug, Clone, Default)]
pub struct Shown {
    /// `None`: everything.
    limited: Option<Limited>,
}

#[derive(Debug, Clone, Default)]
struct Limited {
    apis: HashSet<String>,
    /// The spec files of those APIs (read and original), whose load problems are shown.
    files: HashSet<String>,
}

impl Shown {
    pub fn everything() -> Shown {
        Shown { limited: None }
    }

    /// Whether the API `id` is shown.
    pub fn api(&self, id: &str) -> bool {
        self.limited.as_ref().is_none_or(|l| l.apis.contains(id))
    }

    /// Whether a load problem of `file` is shown: a problem names a spec file, and a
    /// hidden API's file is as hidden as the API. A problem of no shown API's file (a
    /// spec that did not load at all) is the platform team's to see.
    pub fn file(&self, file: &str) -> bool {
        self.limited.as_ref().is_none_or(|l| l.files.contains(file))
    }

    /// Whether the whole catalog is shown.
    pub fn is_everything(&self) -> bool {
        self.limited.is_none()
    }
}

/// The viewer of a console request, read from its extensions and the admins of the
/// catalog config now served (a reload that changes them applies at once).
impl FromRequestParts<Arc<Console>> for Viewer {
    type Rejection = Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        console: &Arc<Console>,
    ) -> Result<Viewer, Infallible> {
        let served = console.server().served();
        let auth = served.catalog().config.auth.as_ref();
        Ok(Viewer::of(
            parts.extensions.get::<Principal>(),
            auth.and_then(|a| a.admins.as_ref()),
            auth.and_then(|a| a.reviewers.as_ref()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::config::VisibleTo;

    fn person(sub: &str, scopes: &[&str], groups: &[&str]) -> Principal {
        Principal {
            sub: sub.into(),
            issuer: "https://idp.test".into(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            groups: groups.iter().map(|s| s.to_string()).collect(),
            client_id: None,
            expires_at: 0,
        }
    }

    fn admins(groups: &[&str], scopes: &[&str], subs: &[&str]) -> People {
        let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect();
        People {
            groups: v(groups),
            scopes: v(scopes),
            subs: v(subs),
        }
    }

    #[test]
    fn the_operator_is_an_admin_and_sees_everything() {
        let op = Viewer::of(None, None, None);
        assert!(op.is_admin() && op.may_review());
        assert!(op.sees(Access::Limited(&VisibleTo::default())));
        assert!(op.sees(Access::Unresolved));
    }

    #[test]
    fn a_group_a_scope_or_a_sub_makes_an_admin() {
        let a = admins(&["platform"], &["shortlist:admin"], &["carol"]);
        let admin = |p: &Principal| Viewer::of(Some(p), Some(&a), None).is_admin();
        assert!(admin(&person("alice", &[], &["platform"])));
        assert!(admin(&person("ci", &["shortlist:admin"], &[])));
        assert!(admin(&person("carol", &[], &[])));
        assert!(!admin(&person("bob", &["mcp"], &["sales", "Platform"])));
        assert!(!admin(&person("Carol", &[], &[])));
        // Without `admins`, no token makes an admin.
        assert!(!Viewer::of(Some(&person("alice", &[], &["platform"])), None, None).is_admin());
    }

    #[test]
    fn a_person_sees_what_their_rules_show_and_an_admin_everything() {
        let rule = VisibleTo {
            groups: vec!["finance".into()],
            scopes: vec![],
        };
        let a = admins(&["platform"], &[], &[]);
        let bob = Viewer::of(Some(&person("bob", &[], &["sales"])), Some(&a), None);
        let fin = Viewer::of(Some(&person("fay", &[], &["finance"])), Some(&a), None);
        let alice = Viewer::of(Some(&person("alice", &[], &["platform"])), Some(&a), None);
        let limited = Access::Limited(&rule);
        assert!(!bob.sees(limited) && bob.sees(Access::Everyone));
        assert!(!bob.sees(Access::Unresolved) && !fin.sees(Access::Unresolved));
        assert!(fin.sees(limited) && !fin.is_admin());
        assert!(alice.sees(limited) && alice.sees(Access::Unresolved));
    }

    #[test]
    fn only_the_operator_admins_and_reviewers_write_reviews() {
        let a = admins(&["platform"], &[], &[]);
        let r = admins(&["docs"], &["catalog:review"], &["dana"]);
        let may = |p: &Principal| Viewer::of(Some(p), Some(&a), Some(&r)).may_review();
        assert!(may(&person("alice", &[], &["platform"])));
        assert!(may(&person("rita", &[], &["docs"])));
        assert!(may(&person("ci", &["catalog:review"], &[])));
        assert!(may(&person("dana", &[], &[])));
        assert!(!may(&person("bob", &["mcp"], &["sales"])));
        // Without `reviewers`, only admins among people.
        assert!(!Viewer::of(Some(&person("rita", &[], &["docs"])), Some(&a), None).may_review());
    }
}
