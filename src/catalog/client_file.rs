//! A person's own MCP client config as a catalog: any JSON file with an `mcpServers` object
//! (Claude Desktop, Claude Code's `.mcp.json`, Cursor, Windsurf) or VS Code's `servers`
//! object, each server one catalog entry whose id is its name in the file.
//!
//! `${VAR}` and `${env:VAR}` in `command`, `args`, `env`, `url` and `headers` are replaced
//! from the environment, as the clients do; a variable that is not set is an error for that
//! server alone. What a careful person would want to know is said as a warning: a package
//! started without a pinned version (`npx pkg`, `uvx pkg`), whose code can change under
//! them at any start, and a package scope one or two letters away from a well-known one.

use super::config::{ApiConfig, AuthConfig};
use super::mcp_config::{McpSource, McpTransport};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// Scopes of widely used MCP server packages: a scope that differs from one of these by a
/// letter or two is more likely a lookalike than a coincidence.
const KNOWN_SCOPES: &[&str] = &[
    "@modelcontextprotocol",
    "@anthropic-ai",
    "@playwright",
    "@upstash",
    "@cloudflare",
    "@github",
    "@azure",
    "@supabase",
    "@stripe",
    "@notionhq",
];

/// What a client config file gave.
#[derive(Debug, Default)]
pub struct Imported {
    pub entries: Vec<ApiConfig>,
    /// Servers left out, and why.
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

/// The servers object of a client config, when `v` is one: `mcpServers`, or VS Code's
/// `servers` (an object, where an OpenAPI document's `servers` is an array).
pub fn servers_of(v: &Value) -> Option<&Map<String, Value>> {
    if v.get("openapi").is_some() || v.get("swagger").is_some() {
        return None;
    }
    v.get("mcpServers")
        .or_else(|| v.get("servers"))
        .and_then(Value::as_object)
}

/// Whether the file at `path` is a client config (read cheaply: JSON files only).
pub fn is_client_file(path: &Path) -> bool {
    if path.extension().and_then(|e| e.to_str()) != Some("json") || !path.is_file() {
        return false;
    }
    // Client configs are small; a large JSON file is a spec.
    if std::fs::metadata(path).map_or(true, |m| m.len() > 4 * 1024 * 1024) {
        return false;
    }
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .is_some_and(|v| servers_of(&v).is_some())
}

/// Reads a client config file into catalog entries.
pub fn import(path: &Path, lookup: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<Imported> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", path.display()))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: not JSON: {e}", path.display()))?;
    let servers = servers_of(&v).ok_or_else(|| {
        anyhow::anyhow!(
            "{}: no `mcpServers` (or VS Code `servers`) object",
            path.display()
        )
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut out = Imported::default();
    for (name, server) in servers {
        match entry(name, server, dir, lookup) {
            Ok(Some((e, mut w))) => {
                out.entries.push(e);
                out.warnings.append(&mut w);
            }
            Ok(None) => {}
            Err(e) => out
                .errors
                .push(format!("{}: server '{name}': {e}", path.display())),
        }
    }
    for w in &mut out.warnings {
        *w = format!("{}: {w}", path.display());
    }
    Ok(out)
}

/// The entries of catalog paths as the command line gives them: each client config file's
/// servers (first), then every other path as a spec file or folder.
pub fn entries_of(
    paths: &[std::path::PathBuf],
    lookup: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<Imported> {
    let (clients, specs): (Vec<_>, Vec<_>) = paths.iter().cloned().partition(|p| is_client_file(p));
    let mut out = Imported::default();
    for file in &clients {
        let mut imported = import(file, lookup)?;
        out.entries.append(&mut imported.entries);
        out.warnings.append(&mut imported.warnings);
        out.errors.append(&mut imported.errors);
    }
    out.entries
        .extend(super::CatalogConfig::from_paths(&specs).apis);
    Ok(out)
}

type Entry = (ApiConfig, Vec<String>);

fn entry(
    name: &str,
    v: &Value,
    dir: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Entry>, String> {
    let o = v.as_object().ok_or("is not an object")?;
    if o.get("disabled").and_then(Value::as_bool) == Some(true) {
        return Ok(None);
    }
    let text = |key: &str| -> Result<Option<String>, String> {
        o.get(key)
            .and_then(Value::as_str)
            .map(|s| expand(s, lookup))
            .transpose()
    };
    let map = |key: &str| -> Result<BTreeMap<String, String>, String> {
        let mut out = BTreeMap::new();
        for (k, v) in o.get(key).and_then(Value::as_object).into_iter().flatten() {
            let raw = match v {
                Value::String(s) => s.clone(),
                Value::Null => continue,
                other => other.to_string(),
            };
            out.insert(
                k.clone(),
                expand(&raw, lookup).map_err(|e| format!("{key}.{k}: {e}"))?,
            );
        }
        Ok(out)
    };
    let command = text("command")?;
    let url = text("url")?.or(text("serverUrl")?);
    let args = o
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|a| expand(a, lookup))
        .collect::<Result<Vec<_>, _>>()?;
    let transport = match o.get("type").and_then(Value::as_str) {
        Some("stdio") => Some(McpTransport::Stdio),
        Some("http" | "streamable-http" | "streamableHttp" | "streamable_http") => {
            Some(McpTransport::StreamableHttp)
        }
        Some("sse") => Some(McpTransport::Sse),
        Some(other) => return Err(format!("unknown type '{other}'")),
        None => None,
    };
    let cwd = text("cwd")?.map(|c| {
        let p = std::path::PathBuf::from(c);
        if p.is_relative() {
            dir.join(p)
        } else {
            p
        }
    });
    let source = McpSource {
        command,
        args,
        cwd,
        set_env: map("env")?,
        url,
        transport,
        ..McpSource::default()
    };
    source.check()?;
    let warnings = package_warnings(name, &source);
    let entry = ApiConfig {
        id: Some(name.to_string()),
        spec: Default::default(),
        mcp: Some(source),
        base_url: None,
        read_only: false,
        auth: None::<AuthConfig>,
        headers: map("headers")?,
        timeout_secs: None,
        allow_link_local: false,
        allow_private: false,
        proxy_resolves: false,
        visible_to: None,
    };
    Ok(Some((entry, warnings)))
}

/// `${VAR}` and `${env:VAR}` replaced from `lookup`; an unset variable is an error.
fn expand(s: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let name = after[..end].trim();
        let name = name.strip_prefix("env:").unwrap_or(name);
        let value = lookup(name).ok_or_else(|| format!("the variable {name} is not set"))?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Warnings about the package a server entry starts.
fn package_warnings(name: &str, s: &McpSource) -> Vec<String> {
    let Some(cmd) = s.command.as_deref() else {
        return Vec::new();
    };
    let program = Path::new(cmd)
        .file_name()
        .and_then(|f| f.to_str())
        .unwrap_or(cmd);
    let package = match program {
        "npx" | "bunx" | "pnpx" => s.args.iter().find(|a| !a.starts_with('-')),
        "uvx" | "pipx" => s
            .args
            .iter()
            .filter(|a| !a.starts_with('-') && a.as_str() != "run")
            .find(|a| a.as_str() != "--from"),
        _ => None,
    };
    let Some(package) = package else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let pinned = match program {
        "uvx" | "pipx" => package.contains("==") || package.contains('@'),
        // `@scope/pkg@1.2.3` or `pkg@1.2.3`: a version after the name's own `@`.
        _ => package.trim_start_matches('@').contains('@'),
    };
    if !pinned || package.ends_with("@latest") {
        out.push(format!(
            "server '{name}' starts `{program} {package}` without a pinned version: whatever \
             is published under that name runs at the next start (pin it, e.g. `{package}@1.2.3`)"
        ));
    }
    if let Some(scope) = package.split('/').next().filter(|s| s.starts_with('@')) {
        if let Some(known) = KNOWN_SCOPES
            .iter()
            .find(|k| **k != scope && distance(k, scope) <= 2)
        {
            out.push(format!(
                "server '{name}' starts a package of scope {scope}, which looks like {known} \
                 but is not it"
            ));
        }
    }
    out
}

/// Levenshtein distance, for short names.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(k: &str) -> Option<String> {
        (k == "TOKEN").then(|| "t0k".to_string())
    }

    fn import_value(v: Value) -> Imported {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("claude_desktop_config.json");
        std::fs::write(&f, v.to_string()).unwrap();
        import(&f, &env).unwrap()
    }

    #[test]
    fn claude_desktop_and_vs_code_shapes_import() {
        let got = import_value(json!({"mcpServers": {
            "time": {"command": "uvx", "args": ["mcp-server-time==2026.10.19"]},
            "remote": {"type": "http", "url": "https://mcp.example.com/mcp",
                       "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "off": {"command": "x", "disabled": true}
        }}));
        assert_eq!(got.entries.len(), 2, "{:?}", got.errors);
        let remote = got
            .entries
            .iter()
            .find(|e| e.id.as_deref() == Some("remote"))
            .unwrap();
        assert_eq!(remote.headers["Authorization"], "Bearer t0k");
        assert!(got.warnings.is_empty(), "{:?}", got.warnings);
        let vs = import_value(json!({"servers": {"mem": {"type": "stdio", "command": "node"}}}));
        assert_eq!(vs.entries.len(), 1);
        assert!(servers_of(&json!({"openapi": "3.0.0", "servers": {}})).is_none());
    }

    #[test]
    fn an_unset_variable_costs_only_its_server() {
        let got = import_value(json!({"mcpServers": {
            "a": {"command": "x", "env": {"KEY": "${MISSING}"}},
            "b": {"command": "y"}
        }}));
        assert_eq!(got.entries.len(), 1);
        assert!(got.errors[0].contains("MISSING"), "{:?}", got.errors);
    }

    #[test]
    fn unpinned_and_lookalike_packages_are_flagged() {
        let got = import_value(json!({"mcpServers": {
            "mem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
            "fake": {"command": "npx", "args": ["-y", "@modelcontextprotocoI/server-memory@1.0.0"]},
            "ok": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory@2026.8.31"]},
            "py": {"command": "uvx", "args": ["mcp-server-git"]}
        }}));
        let w = got.warnings.join("\n");
        assert!(
            w.contains("'mem'") && w.contains("without a pinned version"),
            "{w}"
        );
        assert!(
            w.contains("'fake'") && w.contains("looks like @modelcontextprotocol"),
            "{w}"
        );
        assert!(w.contains("'py'"), "{w}");
        assert!(!w.contains("'ok'"), "{w}");
    }
}
