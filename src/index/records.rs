//! The endpoint records of an opened index, decoded on demand.
//!
//! Records are JSON in LZ4 blocks of [`binfile::BLOCK`] ([`super::binfile`]). Decoding all
//! of them at open cost most of a second and a few hundred megabytes at 100,000 endpoints,
//! while a server shows a handful per request and ranking reads none (it works from stored
//! tables). So a block is decoded the first time one of its records is asked for, and kept.

use super::binfile::{self, Damaged, Reader};
use serde::de::DeserializeOwned;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Records of one index file, each block decoded on first use.
#[derive(Debug)]
pub struct LazyRecords<T> {
    path: PathBuf,
    /// The whole index file; `blocks` are ranges in it.
    file: Arc<Vec<u8>>,
    blocks: Vec<Range<usize>>,
    count: usize,
    /// One slot per block: its records, or why they could not be read.
    decoded: Vec<OnceLock<Result<Vec<T>, Damaged>>>,
}

impl<T: DeserializeOwned + Send + Sync> LazyRecords<T> {
    /// The records section `section` of `file` (a slice of it): block boundaries are read
    /// and checked now, records later.
    pub fn open(file: &Arc<Vec<u8>>, section: &[u8], path: &Path) -> Result<Self, Damaged> {
        let base = section.as_ptr() as usize - file.as_ptr() as usize;
        let mut r = Reader::open_section(section, path);
        let (count, blocks) = binfile::read_blocks(&mut r)?;
        let blocks: Vec<Range<usize>> = blocks
            .iter()
            .map(|b| {
                let start = base + (b.as_ptr() as usize - section.as_ptr() as usize);
                start..start + b.len()
            })
            .collect();
        Ok(LazyRecords {
            path: path.to_path_buf(),
            file: Arc::clone(file),
            decoded: (0..blocks.len()).map(|_| OnceLock::new()).collect(),
            blocks,
            count,
        })
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn block(&self, b: usize) -> &Result<Vec<T>, Damaged> {
        self.decoded[b].get_or_init(|| {
            let bytes = &self.file[self.blocks[b].clone()];
            let expected = if b + 1 == self.blocks.len() {
                self.count - b * binfile::BLOCK
            } else {
                binfile::BLOCK
            };
            let items = binfile::decode_blocks(&self.path, expected, &[bytes], |x| {
                serde_json::from_slice(x).map_err(|e| e.to_string())
            });
            if let Err(e) = &items {
                tracing::error!(path = %e.path.display(), reason = %e.reason, block = b, "an index record block cannot be read; rebuild the index");
            }
            items
        })
    }

    /// Record `i`, decoding its block if needed; `None` past the end or when the block is
    /// damaged (logged once).
    pub fn get(&self, i: usize) -> Option<&T> {
        if i >= self.count {
            return None;
        }
        self.block(i / binfile::BLOCK)
            .as_ref()
            .ok()?
            .get(i % binfile::BLOCK)
    }

    /// Every record in order, decoding what is left on every core.
    pub fn all(&self) -> Result<Vec<&T>, Damaged> {
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 8);
        let ids: Vec<usize> = (0..self.blocks.len()).collect();
        let per = ids.len().div_ceil(threads).max(1);
        std::thread::scope(|s| {
            for part in ids.chunks(per) {
                s.spawn(move || {
                    for &b in part {
                        let _ = self.block(b);
                    }
                });
            }
        });
        let mut out = Vec::with_capacity(self.count);
        for b in 0..self.blocks.len() {
            match self.block(b) {
                Ok(items) => out.extend(items.iter()),
                Err(e) => return Err(e.clone()),
            }
        }
        Ok(out)
    }
}
