//! MCP client configuration files: the server entry each client expects, and adding it to
//! an existing file without disturbing anything else in it.
//!
//! Every client here keeps its servers under a top-level `mcpServers` object, one entry per
//! server name with `command`, `args` and `env`. They differ in where the file is and in how
//! an `env` value can refer to the client's own environment:
//!
//! - Claude Code (`.mcp.json`, `~/.claude.json`) expands `${VAR}`, and wants `"type": "stdio"`;
//! - Cursor (`~/.cursor/mcp.json`, `.cursor/mcp.json`) expands `${env:VAR}`;
//! - Claude Desktop (`claude_desktop_config.json`) expands nothing, so its entry names each
//!   variable with an empty value for the user to fill in;
//! - a generic `mcp.json` uses `${VAR}`, the most widely understood form.

use anyhow::Context;
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A client `shortlist install` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    McpJson,
}

impl Client {
    pub fn label(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "Claude Desktop",
            Client::ClaudeCode => "Claude Code",
            Client::Cursor => "Cursor",
            Client::McpJson => "mcp.json",
        }
    }

    /// The value of `env[var]` that makes the client pass its own `var` on.
    fn env_value(self, var: &str) -> String {
        match self {
            Client::ClaudeDesktop => String::new(),
            Client::Cursor => format!("${{env:{var}}}"),
            Client::ClaudeCode | Client::McpJson => format!("${{{var}}}"),
        }
    }

    /// Whether the client fills `env` values from its own environment.
    pub fn expands_env(self) -> bool {
        self != Client::ClaudeDesktop
    }
}

/// The server entry for `client`: the command line and the credential variables by name.
pub fn entry(client: Client, command: &Path, args: &[String], env_names: &[String]) -> Value {
    let mut e = Map::new();
    if client == Client::ClaudeCode {
        e.insert("type".into(), json!("stdio"));
    }
    e.insert("command".into(), json!(command.display().to_string()));
    e.insert("args".into(), json!(args));
    if !env_names.is_empty() {
        let env: Map<String, Value> = env_names
            .iter()
            .map(|v| (v.clone(), Value::String(client.env_value(v))))
            .collect();
        e.insert("env".into(), Value::Object(env));
    }
    Value::Object(e)
}

/// A whole configuration document holding only this entry (what `--print` shows).
pub fn document(name: &str, entry: &Value) -> Value {
    json!({ "mcpServers": { name: entry } })
}

/// What [`add_to_file`] did.
#[derive(Debug, PartialEq, Eq)]
pub struct Added {
    /// The file written (a symbolic link's target).
    pub file: PathBuf,
    /// Whether an entry of that name was replaced.
    pub replaced: bool,
    /// Other servers the file keeps.
    pub others: usize,
}

/// Adds (or replaces) `mcpServers[name]` in the JSON file at `path`, creating it if needed.
/// Everything else in the file is kept as it was (key order included); a file that is not
/// a JSON object is an error and is left untouched. The new file replaces the old one
/// atomically, with the old one's permissions, so a crash or a client reading at the same
/// moment never sees half a file.
pub fn add_to_file(path: &Path, name: &str, entry: &Value) -> anyhow::Result<Added> {
    // Write through a symbolic link (configuration kept in a dotfiles repository) rather
    // than replacing the link with a file.
    let file = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let existing = match std::fs::read_to_string(&file) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => anyhow::bail!("{}: cannot read: {e}", file.display()),
    };
    let mut doc = match existing.as_deref().map(str::trim) {
        None | Some("") => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(o)) => o,
            Ok(_) => anyhow::bail!(
                "{}: not a JSON object; nothing was written",
                file.display()
            ),
            Err(e) => anyhow::bail!(
                "{}: not valid JSON (line {}, column {}: {e}); fix it or move it away, nothing was written",
                file.display(),
                e.line(),
                e.column()
            ),
        },
    };
    let servers = doc
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        anyhow::bail!(
            "{}: `mcpServers` is not an object; nothing was written",
            file.display()
        );
    };
    let replaced = servers.insert(name.to_string(), entry.clone()).is_some();
    let others = servers.len() - 1;
    let mut text = serde_json::to_string_pretty(&Value::Object(doc))?;
    text.push('\n');
    write_atomically(&file, text.as_bytes())?;
    Ok(Added {
        file,
        replaced,
        others,
    })
}

/// Writes `bytes` to a temporary file beside `file`, flushes it to disk and renames it over
/// `file`, keeping `file`'s permissions when it exists.
pub fn write_atomically(file: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".shortlist-install-")
        .tempfile_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    if let Ok(meta) = std::fs::metadata(file) {
        tmp.as_file().set_permissions(meta.permissions())?;
    }
    tmp.persist(file)
        .map_err(|e| anyhow::anyhow!("cannot replace {}: {}", file.display(), e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_name_variables_as_each_client_expands_them() {
        let vars = ["TMDB_API_KEY".to_string()];
        let args = ["serve".to_string()];
        let cmd = Path::new("/bin/shortlist");
        let env = |c| entry(c, cmd, &args, &vars)["env"]["TMDB_API_KEY"].clone();
        assert_eq!(env(Client::ClaudeCode), json!("${TMDB_API_KEY}"));
        assert_eq!(env(Client::McpJson), json!("${TMDB_API_KEY}"));
        assert_eq!(env(Client::Cursor), json!("${env:TMDB_API_KEY}"));
        assert_eq!(env(Client::ClaudeDesktop), json!(""));
        assert_eq!(
            entry(Client::ClaudeCode, cmd, &args, &vars)["type"],
            "stdio"
        );
        assert!(entry(Client::Cursor, cmd, &args, &vars)
            .get("type")
            .is_none());
        assert!(entry(Client::Cursor, cmd, &args, &[]).get("env").is_none());
    }

    #[test]
    fn adding_keeps_everything_else_and_refuses_broken_files() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("sub/config.json");
        let e = json!({"command": "/bin/shortlist", "args": []});
        // A new file.
        let a = add_to_file(&f, "shortlist", &e).unwrap();
        assert_eq!((a.replaced, a.others), (false, 0));
        // An existing one: other keys and servers stay, in their order.
        std::fs::write(
            &f,
            r#"{"theme": "dark", "mcpServers": {"other": {"command": "x"}}, "z": [1]}"#,
        )
        .unwrap();
        let a = add_to_file(&f, "shortlist", &e).unwrap();
        assert_eq!((a.replaced, a.others), (false, 1));
        let a = add_to_file(&f, "shortlist", &e).unwrap();
        assert_eq!((a.replaced, a.others), (true, 1));
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["theme", "mcpServers", "z"]);
        assert_eq!(v["mcpServers"]["other"], json!({"command": "x"}));
        assert_eq!(v["mcpServers"]["shortlist"], e);
        // Broken files are left as they are.
        for bad in ["{\"mcpServers\": ", "[1]", "{\"mcpServers\": 3}"] {
            std::fs::write(&f, bad).unwrap();
            assert!(add_to_file(&f, "shortlist", &e).is_err(), "{bad}");
            assert_eq!(std::fs::read_to_string(&f).unwrap(), bad);
        }
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(f.parent().unwrap())
            .unwrap()
            .map(|d| d.unwrap().file_name())
            .collect();
        assert_eq!(names, ["config.json"]);
    }

    #[cfg(unix)]
    #[test]
    fn adding_keeps_permissions_and_symbolic_links() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("dotfiles/claude.json");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "{}").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = tmp.path().join(".claude.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        add_to_file(&link, "s", &json!({"command": "c"})).unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        let meta = std::fs::metadata(&real).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o640);
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&real).unwrap()).unwrap();
        assert_eq!(v["mcpServers"]["s"]["command"], "c");
    }
}
