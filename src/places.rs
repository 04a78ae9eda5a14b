//! Where shortlist keeps things for a user, whichever folder it runs from: the embedding
//! model and ONNX Runtime in the per-user data folder (what `scripts/setup-models.sh` fills),
//! indexes in the per-user cache folder, one folder per catalog.
//!
//! `$XDG_DATA_HOME` and `$XDG_CACHE_HOME` are honoured on every OS; without them the OS's
//! own folders are used (`~/.local/share` and `~/.cache` on Linux, `~/Library/Application
//! Support` and `~/Library/Caches` on macOS).

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The folder name under the data and cache folders.
pub const APP: &str = "shortlist";

/// `$XDG_DATA_HOME/shortlist`, else the OS data folder's `shortlist`. `None` only when no
/// home folder can be found.
pub fn user_data_dir() -> Option<PathBuf> {
    xdg("XDG_DATA_HOME")
        .or_else(dirs::data_dir)
        .map(|d| d.join(APP))
}

/// `$XDG_CACHE_HOME/shortlist`, else the OS cache folder's `shortlist`.
pub fn user_cache_dir() -> Option<PathBuf> {
    xdg("XDG_CACHE_HOME")
        .or_else(dirs::cache_dir)
        .map(|d| d.join(APP))
}

/// An XDG base directory variable; the specification says relative values are ignored.
fn xdg(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

/// The index folder of a catalog under `cache`: `<name>-<12 hex>`, the name taken from the
/// first source (the config file or spec), the hex from every source's absolute path. Two
/// catalogs never share an index, and the same catalog finds its index from any folder.
pub fn catalog_dir(cache: &Path, sources: &[PathBuf]) -> PathBuf {
    let mut h = Sha256::new();
    let mut name = String::new();
    for s in sources {
        let abs = std::fs::canonicalize(s)
            .or_else(|_| std::path::absolute(s))
            .unwrap_or_else(|_| s.clone());
        h.update(abs.as_os_str().as_encoded_bytes());
        h.update([0]);
        if name.is_empty() {
            name = abs
                .file_stem()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
        }
    }
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let digest = hex::encode(h.finalize());
    let name = if name.is_empty() { "catalog" } else { &name };
    cache.join(format!("{name}-{}", &digest[..12]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_dirs_are_stable_and_distinct() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("catalog.toml");
        let b = tmp.path().join("other/catalog.toml");
        std::fs::create_dir_all(b.parent().unwrap()).unwrap();
        std::fs::write(&a, "").unwrap();
        std::fs::write(&b, "").unwrap();
        let cache = Path::new("/cache");
        let da = catalog_dir(cache, std::slice::from_ref(&a));
        assert_eq!(da, catalog_dir(cache, std::slice::from_ref(&a)));
        assert!(da.starts_with(cache));
        let n = da.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            n.starts_with("catalog-") && n.len() == "catalog-".len() + 12,
            "{n}"
        );
        // Another file of the same name, or the same file with more specs, is another catalog.
        assert_ne!(da, catalog_dir(cache, std::slice::from_ref(&b)));
        assert_ne!(da, catalog_dir(cache, &[a.clone(), b.clone()]));
        // The same file through another path is the same catalog.
        let dotted = tmp.path().join("other/../catalog.toml");
        assert_eq!(da, catalog_dir(cache, &[dotted]));
        let odd = catalog_dir(cache, &[PathBuf::from("/x/my specs!.yaml")]);
        assert!(
            odd.to_string_lossy().contains("my_specs_-"),
            "{}",
            odd.display()
        );
    }
}
