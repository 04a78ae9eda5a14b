//! Crash-safe replacement of a folder of files: the index's on-disk "generations".
//!
//! Layout of a data folder:
//!
//! ```text
//! data_dir/
//!   CURRENT                 one line, "gen-000042": the generation readers use
//!   gen-000042/             a complete, fsynced set of files
//!   .tmp-<pid>-<nanos>/     a generation being written (or left by a killed writer)
//! ```
//!
//! A writer fills a fresh `.tmp-*` folder, fsyncs every file, renames the folder to the next
//! free `gen-N` and only then replaces `CURRENT` (write a temporary file, fsync, rename,
//! fsync the folder). Every rename is atomic, so whenever the process dies, `CURRENT` names
//! either the old complete generation or the new complete one, never a partial one.
//! Leftovers (`.tmp-*` folders and files, generations older than `CURRENT`) are deleted by
//! the next successful commit; readers simply never look at them.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The pointer file naming the live generation.
pub const CURRENT: &str = "CURRENT";
const GEN_PREFIX: &str = "gen-";
const TMP_PREFIX: &str = ".tmp-";

/// A leftover from a live process is left alone unless it is this old; by then the writer
/// is certainly dead (builds take seconds) or its pid was reused.
const STALE_AFTER: Duration = Duration::from_secs(6 * 3600);

/// A data folder holding generations.
#[derive(Debug, Clone)]
pub struct Generations {
    root: PathBuf,
}

/// A generation being written. Dropping it without [`Generations::commit`] deletes it.
#[derive(Debug)]
pub struct Pending {
    path: PathBuf,
    committed: bool,
}

impl Pending {
    /// The folder to write the generation's files into.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

impl Generations {
    /// Generations under `root` (which need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> Generations {
        Generations { root: root.into() }
    }

    /// The data folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The live generation's folder, or `None` if nothing was ever committed. A `CURRENT`
    /// that does not name a generation (hand-edited, or another program's file) is an error
    /// rather than a path to follow.
    pub fn current(&self) -> io::Result<Option<PathBuf>> {
        let text = match fs::read_to_string(self.root.join(CURRENT)) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let name = text.trim();
        if gen_number(name).is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} does not name a generation: {name:?}",
                    self.root.join(CURRENT).display()
                ),
            ));
        }
        Ok(Some(self.root.join(name)))
    }

    /// Starts a new generation in a fresh temporary folder.
    pub fn begin(&self) -> io::Result<Pending> {
        fs::create_dir_all(&self.root)?;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let path = self
            .root
            .join(format!("{TMP_PREFIX}{}-{nanos}", std::process::id()));
        fs::create_dir(&path)?;
        Ok(Pending {
            path,
            committed: false,
        })
    }

    /// Publishes `pending` as the live generation and returns its folder. The caller must
    /// have fsynced the files in it. Older generations and stale leftovers are then removed;
    /// failing to remove them is logged, not an error, since the commit already happened.
    pub fn commit(&self, mut pending: Pending) -> io::Result<PathBuf> {
        sync_dir(&pending.path)?;
        let live = self.current().ok().flatten();
        let mut next = self.highest_number()?.map_or(1, |n| n + 1);
        // Another writer may claim the same number between our scan and our rename; renaming
        // onto its (non-empty) folder fails, and we take the next number.
        let gen_dir = loop {
            let candidate = self.root.join(gen_name(next));
            match fs::rename(&pending.path, &candidate) {
                Ok(()) => break candidate,
                Err(_) if candidate.exists() && next < u64::MAX => next += 1,
                Err(e) => return Err(e),
            }
        };
        pending.committed = true;
        sync_dir(&self.root)?;

        let tmp = self
            .root
            .join(format!("{CURRENT}{TMP_PREFIX}{}", std::process::id()));
        let mut f = File::create(&tmp)?;
        f.write_all(format!("{}\n", gen_name(next)).as_bytes())?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, self.root.join(CURRENT))?;
        sync_dir(&self.root)?;

        self.remove_leftovers(next, live.as_deref());
        Ok(gen_dir)
    }

    /// The highest generation number present, committed or not.
    fn highest_number(&self) -> io::Result<Option<u64>> {
        let mut best = None;
        for entry in fs::read_dir(&self.root)? {
            let name = entry?.file_name();
            if let Some(n) = name.to_str().and_then(gen_number) {
                best = best.max(Some(n));
            }
        }
        Ok(best)
    }

    /// Deletes generations older than `live_number` and stale temporary folders and files.
    /// Newer generations are kept: they may belong to a concurrent writer about to commit.
    fn remove_leftovers(&self, live_number: u64, previous: Option<&Path>) {
        let Ok(entries) = fs::read_dir(&self.root) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let path = entry.path();
            let remove = match gen_number(name) {
                Some(n) => n < live_number,
                None => is_stale_tmp(name, &path),
            };
            if remove {
                let result = if path.is_dir() {
                    fs::remove_dir_all(&path)
                } else {
                    fs::remove_file(&path)
                };
                if let Err(e) = result {
                    tracing::warn!(path = %path.display(), error = %e, "cannot remove an old index generation");
                } else if Some(path.as_path()) == previous {
                    tracing::debug!(path = %path.display(), "removed the previous index generation");
                }
            }
        }
    }
}

fn gen_name(n: u64) -> String {
    format!("{GEN_PREFIX}{n:06}")
}

/// `gen-000042` -> 42; anything else (including `gen-../x`) -> None.
fn gen_number(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(GEN_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A `.tmp-<pid>-...` folder or `CURRENT.tmp-<pid>` file whose writer is gone.
fn is_stale_tmp(name: &str, path: &Path) -> bool {
    let rest = match name.strip_prefix(TMP_PREFIX) {
        Some(r) => r,
        None => match name
            .strip_prefix(CURRENT)
            .and_then(|r| r.strip_prefix(TMP_PREFIX))
        {
            Some(r) => r,
            None => return false,
        },
    };
    let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
    let old = fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age > STALE_AFTER);
    old || pid.is_none_or(|p| !process_alive(p))
}

/// Whether a process with this id exists. Where that cannot be known cheaply, assume it does
/// and let [`STALE_AFTER`] decide.
fn process_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    if cfg!(target_os = "linux") {
        Path::new("/proc").join(pid.to_string()).exists()
    } else {
        true
    }
}

/// fsyncs a folder so renames inside it are durable. Folders cannot be opened for syncing on
/// Windows, where renames are durable by other means; the error is ignored there.
fn sync_dir(dir: &Path) -> io::Result<()> {
    match File::open(dir).and_then(|f| f.sync_all()) {
        Ok(()) => Ok(()),
        Err(_) if cfg!(windows) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: &Path, name: &str, body: &str) {
        let mut f = File::create(p.join(name)).unwrap();
        f.write_all(body.as_bytes()).unwrap();
        f.sync_all().unwrap();
    }

    #[test]
    fn commit_swaps_current_and_removes_older_generations() {
        let dir = tempfile::tempdir().unwrap();
        let g = Generations::new(dir.path().join("data"));
        assert!(g.current().unwrap().is_none());

        let p = g.begin().unwrap();
        write(p.path(), "a", "one");
        let first = g.commit(p).unwrap();
        assert_eq!(g.current().unwrap().as_deref(), Some(first.as_path()));
        assert!(first.ends_with("gen-000001"));

        let p = g.begin().unwrap();
        write(p.path(), "a", "two");
        let second = g.commit(p).unwrap();
        assert!(second.ends_with("gen-000002"));
        assert_eq!(fs::read_to_string(second.join("a")).unwrap(), "two");
        assert!(!first.exists(), "older generation should be gone");
    }

    #[test]
    fn dropped_pending_is_removed_and_current_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let g = Generations::new(dir.path());
        let p = g.begin().unwrap();
        let tmp = p.path().to_path_buf();
        drop(p);
        assert!(!tmp.exists());
        assert!(g.current().unwrap().is_none());
    }

    #[test]
    fn leftovers_of_a_killed_writer_are_ignored_then_cleaned() {
        let dir = tempfile::tempdir().unwrap();
        let g = Generations::new(dir.path());
        let p = g.begin().unwrap();
        write(p.path(), "a", "good");
        let live = g.commit(p).unwrap();

        // A writer killed at each possible point: mid-write, after its rename, before the
        // CURRENT rename. pid 4000000000 cannot exist (Linux pids stay below 2^22).
        let dead_tmp = dir.path().join(".tmp-4000000000-1");
        fs::create_dir(&dead_tmp).unwrap();
        write(&dead_tmp, "a", "half");
        let orphan = dir.path().join("gen-000007");
        fs::create_dir(&orphan).unwrap();
        write(dir.path(), "CURRENT.tmp-4000000000", "gen-000007\n");
        assert_eq!(g.current().unwrap().as_deref(), Some(live.as_path()));

        let p = g.begin().unwrap();
        write(p.path(), "a", "new");
        let newer = g.commit(p).unwrap();
        assert!(
            newer.ends_with("gen-000008"),
            "numbers skip past orphans: {newer:?}"
        );
        assert!(!dead_tmp.exists() && !orphan.exists() && !live.exists());
        assert!(!dir.path().join("CURRENT.tmp-4000000000").exists());
    }

    #[test]
    fn a_live_writers_tmp_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let g = Generations::new(dir.path());
        let busy = g.begin().unwrap();
        let p = g.begin().unwrap();
        g.commit(p).unwrap();
        assert!(busy.path().exists());
    }

    #[test]
    fn current_must_name_a_generation() {
        let dir = tempfile::tempdir().unwrap();
        let g = Generations::new(dir.path());
        for bad in ["../../etc", "gen-", "gen-12x", ""] {
            write(dir.path(), CURRENT, bad);
            assert!(g.current().is_err(), "{bad:?}");
        }
        assert_eq!(gen_number("gen-000012"), Some(12));
    }
}
