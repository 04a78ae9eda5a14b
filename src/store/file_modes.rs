//! Who may read the SQLite state on the server's host: its owner alone.
//!
//! The state file holds people's subjects, which APIs they used and when, and reviewers'
//! text; its tokens are sealed, but the rest is in clear. Created with the default umask it
//! would be `0644`, readable by every local user. So the folder is created `0700` and the
//! file `0600` before SQLite opens it (SQLite gives its `-wal` and `-shm` files the
//! database's mode), and a file an older build left looser is tightened when the store
//! opens, with a warning, since the data was readable until then.
//!
//! A folder that already existed is never changed, only named in a warning when others may
//! read it: it may be one the operator shares on purpose (`--state ./state.db` in a
//! project folder), and the file's own mode keeps its content private.

use std::io;
use std::path::Path;

/// Creates `dir` (and any missing parent) for its owner alone; warns when it already
/// exists and others may read it.
pub fn private_folder(dir: &Path) -> io::Result<()> {
    imp::private_folder(dir)
}

/// Creates the file `path` `0600` if it is missing, and tightens it (and its `-wal`,
/// `-shm` and `-journal` companions) when looser.
pub fn private_file(path: &Path) -> io::Result<()> {
    imp::private_file(path)
}

#[cfg(unix)]
mod imp {
    use std::fs::{DirBuilder, OpenOptions, Permissions};
    use std::io;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
    use std::path::{Path, PathBuf};

    /// Bits that give anyone but the owner access.
    const OTHERS: u32 = 0o077;

    pub fn private_folder(dir: &Path) -> io::Result<()> {
        if !dir.exists() {
            DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
            // The umask may have removed owner bits, never added others' ones.
            return Ok(());
        }
        let mode = std::fs::metadata(dir)?.mode() & 0o7777;
        if mode & OTHERS != 0 {
            // A folder that was there before may be one the operator shares on purpose
            // (`--state ./state.db` in a project folder): said, never changed. The state
            // file and its companions are kept 0600 whatever the folder allows.
            tracing::warn!(
                folder = %dir.display(),
                mode = format!("{:o}", mode & 0o777),
                "the state's folder is readable by other local users (the state file itself is kept 0600); chmod 700 it if nothing else needs it"
            );
        }
        Ok(())
    }

    pub fn private_file(path: &Path) -> io::Result<()> {
        if !path.exists() {
            // Created here, not by SQLite, so it is never readable by others, not even
            // for the moment before a chmod.
            OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(path)?;
        }
        let companions = ["", "-wal", "-shm", "-journal"].map(|suffix| {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            PathBuf::from(p)
        });
        for file in companions {
            let meta = match std::fs::symlink_metadata(&file) {
                Ok(m) if m.is_file() => m,
                _ => continue,
            };
            let mode = meta.mode() & 0o777;
            if mode & OTHERS != 0 {
                tracing::warn!(
                    file = %file.display(),
                    was = format!("{mode:o}"),
                    "the state file was readable by other local users; tightened to 600"
                );
                std::fs::set_permissions(&file, Permissions::from_mode(mode & !OTHERS))?;
            }
        }
        Ok(())
    }
}

#[cfg(not(unix))]
mod imp {
    use std::io;
    use std::path::Path;

    /// Elsewhere the folder's access lists decide; only the folder is made.
    pub fn private_folder(dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    pub fn private_file(_path: &Path) -> io::Result<()> {
        Ok(())
    }
}
