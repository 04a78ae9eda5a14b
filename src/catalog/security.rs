//! Security: the schemes a spec declares and the requirements of each operation.

use super::endpoint::*;
use super::family::Family;
use super::resolve::Resolver;
use serde_json::Value;

/// Security schemes by name: 3.x `components.securitySchemes` or 2.0 `securityDefinitions`.
pub fn security_schemes(
    res: &mut Resolver,
    fam: Family,
    root: &Value,
) -> Vec<(String, AuthScheme)> {
    let defs = match fam {
        Family::OpenApi3 => root.pointer("/components/securitySchemes"),
        Family::Swagger2 => root.get("securityDefinitions"),
    };
    let Some(defs) = defs.and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, def) in defs {
        let Ok((_, def)) = res.deref(0, def) else {
            continue;
        };
        let ty = def.get("type").and_then(Value::as_str).unwrap_or("");
        let scheme = match ty {
            "apiKey" => AuthScheme::ApiKey {
                name: def
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or(name)
                    .to_string(),
                location: def
                    .get("in")
                    .and_then(Value::as_str)
                    .and_then(ParamLocation::parse)
                    .unwrap_or(ParamLocation::Header),
            },
            "http" => match def
                .get("scheme")
                .and_then(Value::as_str)
                .map(str::to_ascii_lowercase)
                .as_deref()
            {
                Some("basic") => AuthScheme::Basic,
                Some("bearer") => AuthScheme::Bearer,
                other => AuthScheme::Other {
                    description: format!("http {}", other.unwrap_or("?")),
                },
            },
            "basic" => AuthScheme::Basic,
            "oauth2" => AuthScheme::OAuth2 { scopes: Vec::new() },
            "openIdConnect" => AuthScheme::OpenIdConnect,
            other => AuthScheme::Other {
                description: other.to_string(),
            },
        };
        out.push((name.clone(), scheme));
    }
    out
}

pub fn security_requirements(
    sec: Option<&Value>,
    schemes: &[(String, AuthScheme)],
) -> Vec<SecurityRequirement> {
    let Some(arr) = sec.and_then(Value::as_array) else {
        return Vec::new();
    };
    arr.iter()
        .filter_map(Value::as_object)
        .filter(|req| !req.is_empty())
        .map(|req| SecurityRequirement {
            schemes: req
                .iter()
                .map(|(name, scopes)| {
                    let mut scheme = schemes
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, s)| s.clone())
                        .unwrap_or(AuthScheme::Other {
                            description: "undeclared scheme".into(),
                        });
                    if let AuthScheme::OAuth2 { scopes: s } = &mut scheme {
                        *s = scopes
                            .as_array()
                            .map(|a| {
                                a.iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_string)
                                    .collect()
                            })
                            .unwrap_or_default();
                    }
                    (name.clone(), scheme)
                })
                .collect(),
        })
        .collect()
}
