//! The model files' content digest, cached by the files' stamps.
//!
//! An index records the id of the model that embedded it
//! ([`super::embedder::Embedder::model_id`]), and that id holds a sha256 of the model and
//! tokenizer files, so an index is never searched with vectors of another model. Hashing
//! the 23 MB model was a tenth of a cold start for a digest that changes only when the
//! files do. It is kept in a small file beside the model, keyed by each file's path, size,
//! modification time (and, on Unix, inode and change time), and computed again when any of
//! them differs. A cache that cannot be read, parsed or written is ignored: the digest is
//! then computed as if there were none, and a start never fails because of it.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// The cache's file name in the model folder.
pub const CACHE_FILE: &str = ".shortlist-digest.json";

/// What identifies one version of a file without reading it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    path: PathBuf,
    size: u64,
    modified_s: u64,
    modified_ns: u32,
    /// Inode and change time (Unix): a file replaced by one of the same size and
    /// modification time (`cp -p`) still differs in these.
    inode: u64,
    changed_s: i64,
    changed_ns: i64,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::metadata(path).ok()?;
        let modified = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
        #[cfg(unix)]
        let (inode, changed_s, changed_ns) = {
            use std::os::unix::fs::MetadataExt;
            (meta.ino(), meta.ctime(), meta.ctime_nsec())
        };
        #[cfg(not(unix))]
        let (inode, changed_s, changed_ns) = (0, 0, 0);
        Some(Stamp {
            path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
            size: meta.len(),
            modified_s: modified.as_secs(),
            modified_ns: modified.subsec_nanos(),
            inode,
            changed_s,
            changed_ns,
        })
    }
}

/// The cache file's content.
#[derive(Debug, Serialize, Deserialize)]
struct Cached {
    files: Vec<Stamp>,
    sha256: String,
}

/// The stamps of some files, taken before they are read: a file written after its stamp
/// was taken gets another stamp next time, so a stale digest is never stored under a
/// current stamp.
#[derive(Debug)]
pub struct ContentDigest {
    cache: PathBuf,
    /// `None` when a file could not be stamped: nothing is cached then.
    stamps: Option<Vec<Stamp>>,
}

impl ContentDigest {
    /// Stamps `paths` now; `cache` is the file the digest is kept in.
    pub fn stamp(cache: PathBuf, paths: &[PathBuf]) -> ContentDigest {
        let stamps = paths.iter().map(|p| Stamp::of(p)).collect();
        ContentDigest { cache, stamps }
    }

    /// The sha256 (hex) of `contents` (the stamped files' bytes, in order, concatenated):
    /// the cached one when the cache was written for the same stamps, else computed and
    /// cached.
    pub fn sha256(&self, contents: &[&[u8]]) -> String {
        if let Some(hit) = self.cached() {
            return hit;
        }
        let mut h = Sha256::new();
        for c in contents {
            h.update(c);
        }
        let digest = hex::encode(h.finalize());
        if let Some(stamps) = &self.stamps {
            let cached = Cached {
                files: stamps.clone(),
                sha256: digest.clone(),
            };
            if let Err(e) = self.write(&cached) {
                tracing::debug!(cache = %self.cache.display(), error = %e, "model digest not cached");
            }
        }
        digest
    }

    /// The cached digest if the cache says these very stamps.
    fn cached(&self) -> Option<String> {
        let stamps = self.stamps.as_ref()?;
        let bytes = std::fs::read(&self.cache).ok()?;
        let cached: Cached = serde_json::from_slice(&bytes).ok()?;
        let well_formed =
            cached.sha256.len() == 64 && cached.sha256.bytes().all(|b| b.is_ascii_hexdigit());
        (well_formed && cached.files == *stamps).then_some(cached.sha256)
    }

    /// Temp file beside the cache, then rename: a reader sees the old cache or the new
    /// one. Not synced: a cache lost or torn by a crash is only computed again.
    fn write(&self, cached: &Cached) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(cached).map_err(std::io::Error::other)?;
        let dir = self
            .cache
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let tmp = tempfile::NamedTempFile::new_in(dir)?;
        std::fs::write(tmp.path(), json)?;
        tmp.persist(&self.cache).map_err(|e| e.error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn sha(parts: &[&[u8]]) -> String {
        let mut h = Sha256::new();
        for p in parts {
            h.update(p);
        }
        hex::encode(h.finalize())
    }

    /// Two files and the cache path in a fresh folder.
    fn setup(dir: &Path) -> (Vec<PathBuf>, PathBuf) {
        let files = vec![dir.join("model.onnx"), dir.join("tokenizer.json")];
        std::fs::write(&files[0], b"weights, version one").unwrap();
        std::fs::write(&files[1], b"{\"vocab\": 1}").unwrap();
        (files, dir.join(CACHE_FILE))
    }

    fn digest(files: &[PathBuf], cache: &Path) -> String {
        let bytes: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
        let refs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
        ContentDigest::stamp(cache.to_path_buf(), files).sha256(&refs)
    }

    #[test]
    fn the_cached_digest_is_used_while_the_files_are_unchanged() {
        let tmp = tempfile::tempdir().unwrap();
        let (files, cache) = setup(tmp.path());
        let first = digest(&files, &cache);
        assert_eq!(first, sha(&[b"weights, version one", b"{\"vocab\": 1}"]));
        assert!(cache.is_file(), "the digest is cached beside the files");
        // Same stamps: the cache answers, whatever bytes are passed (which proves it is read).
        let again = ContentDigest::stamp(cache.clone(), &files).sha256(&[b"other bytes"]);
        assert_eq!(again, first);
    }

    #[test]
    fn a_changed_file_is_hashed_again() {
        let tmp = tempfile::tempdir().unwrap();
        let (files, cache) = setup(tmp.path());
        let first = digest(&files, &cache);
        // Same size, another content and modification time.
        std::fs::write(&files[0], b"weights, version two").unwrap();
        let f = std::fs::File::options()
            .write(true)
            .open(&files[0])
            .unwrap();
        f.set_modified(SystemTime::now() + Duration::from_secs(60))
            .unwrap();
        drop(f);
        let second = digest(&files, &cache);
        assert_ne!(second, first);
        assert_eq!(second, sha(&[b"weights, version two", b"{\"vocab\": 1}"]));
        // And the cache now holds the new digest.
        let third = ContentDigest::stamp(cache.clone(), &files).sha256(&[b"ignored"]);
        assert_eq!(third, second);
        // A file that grew is hashed again too.
        std::fs::write(&files[1], b"{\"vocab\": 12}").unwrap();
        assert_eq!(
            digest(&files, &cache),
            sha(&[b"weights, version two", b"{\"vocab\": 12}"])
        );
    }

    #[test]
    fn a_corrupt_cache_is_ignored_and_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let (files, cache) = setup(tmp.path());
        let want = sha(&[b"weights, version one", b"{\"vocab\": 1}"]);
        for garbage in [
            &b"\x00\xffnot json"[..],
            b"{\"files\": [], \"sha256\": \"abc\"}",
            b"",
        ] {
            std::fs::write(&cache, garbage).unwrap();
            assert_eq!(digest(&files, &cache), want);
        }
        // A digest of the right stamps that is not a sha256 is not believed either.
        digest(&files, &cache);
        let mut cached: Cached = serde_json::from_slice(&std::fs::read(&cache).unwrap()).unwrap();
        cached.sha256 = "not hex!".repeat(8);
        std::fs::write(&cache, serde_json::to_vec(&cached).unwrap()).unwrap();
        assert_eq!(digest(&files, &cache), want);
        let rewritten: Cached = serde_json::from_slice(&std::fs::read(&cache).unwrap()).unwrap();
        assert_eq!(rewritten.sha256, want);
    }

    #[test]
    fn a_cache_that_cannot_be_written_or_a_missing_file_costs_only_the_hash() {
        let tmp = tempfile::tempdir().unwrap();
        let (files, _) = setup(tmp.path());
        let nowhere = tmp.path().join("no such folder").join(CACHE_FILE);
        let want = sha(&[b"weights, version one", b"{\"vocab\": 1}"]);
        assert_eq!(digest(&files, &nowhere), want);
        assert!(!nowhere.exists());
        // A file that cannot be stamped: hashed, nothing cached.
        let cache = tmp.path().join(CACHE_FILE);
        let d = ContentDigest::stamp(cache.clone(), &[tmp.path().join("gone")]);
        assert_eq!(d.sha256(&[b"x"]), sha(&[b"x"]));
        assert!(!cache.exists());
    }
}
