//! The enrichment cache: finished LLM answers, keyed by what produced them.
//!
//! The key hashes the task, the template's whole text, the model and the endpoint's
//! context (what the prompt shows), so a re-run costs nothing, an edited template or another
//! model regenerates exactly what it affects, and an unrelated spec change invalidates
//! nothing. Sampling settings (temperature, max_tokens) are not part of the key. Accepted
//! answers are stored, and so are answers that stayed unusable after a correction; errors
//! of the server or the network are not, so they are retried next run.
//!
//! Storage is one append-only JSONL file under `<data_dir>/enrich-cache/`. Each answer is
//! appended with a single write and fsynced before the run moves on, so killing the process
//! (even SIGKILL) loses at most the answer being written, and a torn last line is skipped
//! when the file is read back.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Bumped when the meaning of stored answers changes; old entries then stop matching.
const FORMAT: &str = "shortlist-enrich-cache-1";
/// The cache file's name inside the cache folder.
pub const FILE_NAME: &str = "answers.jsonl";

/// One stored answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    pub key: String,
    pub task: super::Task,
    pub model: String,
    /// `name@sha8` of the template.
    pub template: String,
    /// When it was generated (ISO date): the provenance date, stable across re-runs.
    pub date: String,
    /// The accepted answer, in the canonical shape of `answers`.
    pub value: Value,
    /// Dropped parameter examples with the reason, so a re-run reports them again.
    #[serde(default)]
    pub dropped: Vec<String>,
    /// Set when the model gave no usable answer even after a correction. At temperature 0
    /// asking again gives the same answer, so the failure is remembered too (a re-run costs
    /// nothing); `--retry-failed` asks again. Transport failures are never stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
}

/// The cache of one data folder.
pub struct Cache {
    path: PathBuf,
    entries: Mutex<HashMap<String, Entry>>,
    file: Mutex<File>,
}

/// The cache key of one task for one endpoint.
pub fn key(
    task: super::Task,
    template_text_sha256: &str,
    model: &str,
    context_json: &str,
    targets: &[String],
) -> String {
    let mut h = Sha256::new();
    for part in [
        FORMAT,
        task.template_name(),
        template_text_sha256,
        model,
        context_json,
        &targets.join("\u{1f}"),
    ] {
        h.update(part.as_bytes());
        // A separator no part contains, so that ("ab", "c") and ("a", "bc") differ.
        h.update([0u8]);
    }
    hex::encode(h.finalize())
}

impl Cache {
    /// Opens (creating) the cache in `dir` and reads what it holds.
    pub fn open(dir: &Path) -> std::io::Result<Cache> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(FILE_NAME);
        let mut entries = HashMap::new();
        if let Ok(f) = File::open(&path) {
            for line in BufReader::new(f).lines() {
                let Ok(line) = line else { break };
                // A torn last line (killed mid-write) or a foreign line is skipped.
                if let Ok(e) = serde_json::from_str::<Entry>(&line) {
                    entries.insert(e.key.clone(), e);
                }
            }
        }
        let mut file = OpenOptions::new().create(true).append(true).open(&path)?;
        // A torn last line has no newline: start the next entry on a line of its own.
        if std::fs::read(&path)
            .ok()
            .and_then(|b| b.last().copied())
            .is_some_and(|b| b != b'\n')
        {
            file.write_all(b"\n")?;
        }
        Ok(Cache {
            path,
            entries: Mutex::new(entries),
            file: Mutex::new(file),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn len(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, key: &str) -> Option<Entry> {
        self.entries.lock().ok()?.get(key).cloned()
    }

    /// Stores an answer durably: appended as one line and fsynced before returning.
    /// [`Cache::put`], with a failure logged rather than returned: a cache that cannot be
    /// written costs a re-run its savings, never the run itself.
    pub fn put_or_warn(&self, entry: Entry) {
        if let Err(e) = self.put(entry) {
            tracing::warn!(
                "cannot write the enrichment cache {}: {e}",
                self.path.display()
            );
        }
    }

    pub fn put(&self, entry: Entry) -> std::io::Result<()> {
        let mut line = serde_json::to_string(&entry).map_err(std::io::Error::other)?;
        line.push('\n');
        {
            let mut f = self
                .file
                .lock()
                .map_err(|_| std::io::Error::other("cache file lock poisoned"))?;
            f.write_all(line.as_bytes())?;
            f.sync_data()?;
        }
        if let Ok(mut m) = self.entries.lock() {
            m.insert(entry.key.clone(), entry);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::enrich::Task;
    use serde_json::json;

    fn entry(key: &str) -> Entry {
        Entry {
            key: key.into(),
            task: Task::Summary,
            model: "m".into(),
            template: "endpoint-summary@12345678".into(),
            date: "2026-01-01".into(),
            value: json!({"summary": "Lists things."}),
            dropped: vec![],
            failed: None,
            prompt_tokens: 10,
            completion_tokens: 5,
        }
    }

    #[test]
    fn survives_reopen_and_torn_lines() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        c.put(entry("a")).unwrap();
        drop(c);
        // Simulate a kill in the middle of the second write.
        let p = dir.path().join(FILE_NAME);
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(br#"{"key": "b", "task": "sum"#).unwrap();
        drop(f);
        let c = Cache::open(dir.path()).unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(c.get("a"), Some(entry("a")));
        c.put(entry("c")).unwrap();
        drop(c);
        let c = Cache::open(dir.path()).unwrap();
        assert!(
            c.get("c").is_some(),
            "an entry after a torn line is readable"
        );
    }

    #[test]
    fn keys_depend_on_every_part() {
        let k = |t: &str, m: &str, c: &str| key(Task::Summary, t, m, c, &[]);
        let base = k("t", "m", "c");
        assert_ne!(base, k("t2", "m", "c"));
        assert_ne!(base, k("t", "m2", "c"));
        assert_ne!(base, k("t", "m", "c2"));
        assert_ne!(base, key(Task::Questions, "t", "m", "c", &[]));
        assert_ne!(base, key(Task::Summary, "t", "m", "c", &["page".into()]));
        assert_eq!(base, k("t", "m", "c"));
    }
}
