//! `shortlist install CLIENT --take-over`: the servers a client starts, moved behind one
//! shortlist, so that the client sees three meta-tools (or a shortlist of tools) instead of
//! every server's every tool.
//!
//! Without `--apply` it only says what it would do. With it, the client's file is kept as
//! `<file>.shortlist-backup`, its servers (all but shortlist's own entry) are written to
//! `<file>.shortlist-servers.json` (a client config file of their own, readable by its owner
//! alone since `env` values may be secrets), and the client's file is left with one entry
//! that serves that file. `--undo` puts the backup back and removes both files.

use super::client_config::write_atomically;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The two files a take-over writes beside a client's file.
pub struct Places {
    pub backup: PathBuf,
    pub servers: PathBuf,
}

impl Places {
    pub fn of(file: &Path) -> Places {
        let with = |suffix: &str| {
            let mut name = file.as_os_str().to_owned();
            name.push(suffix);
            PathBuf::from(name)
        };
        Places {
            backup: with(".shortlist-backup"),
            servers: with(".shortlist-servers.json"),
        }
    }
}

/// What a take-over would move: the client's file as read, and its servers but `own`.
pub struct Plan {
    pub doc: Map<String, Value>,
    pub moved: Map<String, Value>,
}

/// Reads the client's file and says what would move.
pub fn plan(file: &Path, own: &str) -> anyhow::Result<Plan> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", file.display()))?;
    let doc = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(o)) => o,
        _ => anyhow::bail!("{}: not a JSON object", file.display()),
    };
    let moved: Map<String, Value> = doc
        .get("mcpServers")
        .and_then(Value::as_object)
        .map(|s| {
            s.iter()
                .filter(|(name, _)| name.as_str() != own)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    Ok(Plan { doc, moved })
}

/// Writes the take-over: backup, servers file, and the client's file with `own` -> `entry`
/// as its only server. Refuses when a backup is already there (undo that one first).
pub fn apply(file: &Path, plan: Plan, own: &str, entry: &Value) -> anyhow::Result<Places> {
    let places = Places::of(file);
    if places.backup.exists() {
        anyhow::bail!(
            "{} exists: an earlier take-over is in place (`--undo` restores it first)",
            places.backup.display()
        );
    }
    let original = std::fs::read(file)?;
    write_atomically(&places.backup, &original)?;
    let mut servers = serde_json::to_string_pretty(
        &serde_json::json!({ "mcpServers": Value::Object(plan.moved) }),
    )?;
    servers.push('\n');
    write_private(&places.servers, servers.as_bytes())?;
    let mut doc = plan.doc;
    let mut only = Map::new();
    only.insert(own.to_string(), entry.clone());
    doc.insert("mcpServers".into(), Value::Object(only));
    let mut text = serde_json::to_string_pretty(&Value::Object(doc))?;
    text.push('\n');
    write_atomically(file, text.as_bytes())?;
    Ok(places)
}

/// Puts the backup back and removes the take-over's files.
pub fn undo(file: &Path) -> anyhow::Result<()> {
    let places = Places::of(file);
    let backup = std::fs::read(&places.backup).map_err(|e| {
        anyhow::anyhow!(
            "{}: no backup to restore ({e}): nothing was taken over here",
            places.backup.display()
        )
    })?;
    write_atomically(file, &backup)?;
    std::fs::remove_file(&places.backup)?;
    match std::fs::remove_file(&places.servers) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// Written readable by its owner alone: the moved entries' `env` may hold secrets.
fn write_private(file: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    write_atomically(file, bytes)?;
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn take_over_then_undo_leaves_the_file_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("claude_desktop_config.json");
        let original = json!({
            "globalShortcut": "Ctrl+Space",
            "mcpServers": {
                "time": {"command": "uvx", "args": ["mcp-server-time==2026.10.19"]},
                "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory@2026.8.31"],
                           "env": {"MEMORY_FILE_PATH": "/home/a/memory.jsonl"}}
            }
        })
        .to_string();
        std::fs::write(&file, &original).unwrap();
        let p = plan(&file, "shortlist").unwrap();
        assert_eq!(p.moved.len(), 2);
        let entry = json!({"command": "/bin/shortlist", "args": ["serve", "x"]});
        let places = apply(&file, p, "shortlist", &entry).unwrap();
        let now: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(now["globalShortcut"], "Ctrl+Space");
        assert_eq!(now["mcpServers"].as_object().unwrap().len(), 1);
        assert_eq!(now["mcpServers"]["shortlist"], entry);
        let moved: Value =
            serde_json::from_str(&std::fs::read_to_string(&places.servers).unwrap()).unwrap();
        assert_eq!(
            moved["mcpServers"]["memory"]["env"]["MEMORY_FILE_PATH"],
            "/home/a/memory.jsonl"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&places.servers)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
        // A second take-over over the first is refused: the backup would be lost.
        let again = plan(&file, "shortlist").unwrap();
        assert!(apply(&file, again, "shortlist", &entry).is_err());
        undo(&file).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
        assert!(!places.backup.exists() && !places.servers.exists());
        assert!(undo(&file).is_err());
    }
}
