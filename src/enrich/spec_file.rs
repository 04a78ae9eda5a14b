//! Reading a spec as a document to edit, and writing the edited copy.
//!
//! The copy keeps the original's format (JSON for `.json`, YAML otherwise, see `yaml_out`)
//! and its key order (serde_json's `preserve_order`), so a reviewer can diff it against the
//! original.
//! Writes are atomic: a temporary file in the same folder, fsynced, then renamed over the
//! target, so a reader (`shortlist index`, a server reloading) never sees half a spec.

use crate::catalog::family::{family, Family};
use crate::catalog::source::read_document;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A spec document to edit.
pub struct SpecDoc {
    pub path: PathBuf,
    pub doc: serde_json::Value,
    pub family: Family,
}

/// Reads and parses a spec (JSON or YAML), refusing what is not OpenAPI.
pub fn read(path: &Path) -> Result<SpecDoc, String> {
    let parsed = read_document(path).map_err(|p| p.to_string())?;
    let (fam, _) = family(path, &parsed.value).map_err(|p| p.to_string())?;
    Ok(SpecDoc {
        path: path.to_path_buf(),
        doc: parsed.value,
        family: fam,
    })
}

/// Is `path` written as JSON (by its extension)?
pub fn is_json(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

/// The document as text in the format `path` calls for.
pub fn render(path: &Path, doc: &serde_json::Value) -> Result<String, String> {
    if is_json(path) {
        serde_json::to_string_pretty(doc)
            .map(|s| super::yaml_out::escape_unprintable(&s) + "\n")
            .map_err(|e| format!("{}: cannot write JSON: {e}", path.display()))
    } else {
        Ok(super::yaml_out::to_string(doc))
    }
}

/// Writes `doc` to `path` atomically, in the format its extension calls for.
pub fn write(path: &Path, doc: &serde_json::Value) -> Result<(), String> {
    let text = render(path, doc)?;
    write_atomic(path, text.as_bytes())
        .map_err(|e| format!("{}: cannot write: {e}", path.display()))
}

/// Temp file + fsync + rename (+ fsync of the folder, best effort).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("spec");
    // `.part` files are ignored by the catalog loader and by git.
    let tmp = dir.join(format!(".{name}.{}.part", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::source::parse_text;
    use serde_json::json;

    #[test]
    fn yaml_round_trip_keeps_order_and_string_keys() {
        let doc = json!({"openapi": "3.0.0", "info": {"title": "T", "version": "1"},
            "paths": {"/a": {"get": {"responses": {"200": {"description": "ok"}},
            "parameters": [{"name": "on", "in": "query", "example": "yes"}]}}}});
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.enriched.yaml");
        write(&p, &doc).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.starts_with("openapi:"), "{text}");
        let back = parse_text(&p, &text).unwrap();
        assert_eq!(
            back, doc,
            "YAML 1.1 words like yes/on stay strings, 200 stays a string key"
        );
        let keys: Vec<&String> = back.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["openapi", "info", "paths"]);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp file left"
        );
    }
}
