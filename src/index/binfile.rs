//! The index's binary container: little-endian integers and length-prefixed byte strings
//! after a magic number and a format version, and blocks of records compressed with LZ4.
//!
//! Why not JSON: a 100,000-endpoint catalog's records were 115 MB of JSON that took most of
//! a second to parse at every start. Records are still JSON inside (they hold arbitrary JSON
//! Schemas, which only a self-describing encoding can carry), but compressed in blocks that
//! are decoded on every core at once, and everything derived from them that a start needs
//! (keys, content hashes, BM25 statistics) sits beside them in plain binary.

use std::path::{Path, PathBuf};

/// Appends values to a byte buffer.
#[derive(Debug, Default)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// A buffer that starts with `magic` and `version`.
    pub fn new(magic: &[u8; 8], version: u32) -> Writer {
        let mut w = Writer::default();
        w.buf.extend_from_slice(magic);
        w.u32(version);
        w
    }

    /// A buffer without a header, to be embedded in another as one byte string.
    pub fn section() -> Writer {
        Writer::default()
    }

    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A length-prefixed byte string.
    pub fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    pub fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    /// The finished buffer.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

/// Reads values back; every read past the end or of invalid UTF-8 is a [`Damaged`] error
/// naming the file, never a panic.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    path: &'a Path,
}

/// A file that does not hold what its reader expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damaged {
    pub path: PathBuf,
    pub reason: String,
}

impl<'a> Reader<'a> {
    /// A reader of `buf` (the contents of `path`), checking its magic number; returns the
    /// format version that follows it.
    pub fn open(
        buf: &'a [u8],
        path: &'a Path,
        magic: &[u8; 8],
    ) -> Result<(Reader<'a>, u32), Damaged> {
        let mut r = Reader { buf, pos: 0, path };
        if r.take(8)? != magic {
            return Err(r.damaged("not a shortlist index file"));
        }
        let version = r.u32()?;
        Ok((r, version))
    }

    /// A reader of a section written with [`Writer::section`] inside `path`.
    pub fn open_section(buf: &'a [u8], path: &'a Path) -> Reader<'a> {
        Reader { buf, pos: 0, path }
    }

    pub fn damaged(&self, reason: impl Into<String>) -> Damaged {
        Damaged {
            path: self.path.to_path_buf(),
            reason: reason.into(),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Damaged> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| self.damaged(format!("truncated at byte {}", self.pos)))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    pub fn u32(&mut self) -> Result<u32, Damaged> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self) -> Result<u64, Damaged> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// A count that must fit in what is left of the file at `min_size` bytes per item, so a
    /// damaged length cannot make a reader allocate gigabytes.
    pub fn count(&mut self, min_size: usize) -> Result<usize, Damaged> {
        let n = self.u64()?;
        let left = (self.buf.len() - self.pos) as u64;
        if n.saturating_mul(min_size as u64) > left {
            return Err(self.damaged(format!("{n} items cannot fit in {left} bytes")));
        }
        usize::try_from(n).map_err(|_| self.damaged("count too large"))
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], Damaged> {
        let n = self.u64()?;
        let n = usize::try_from(n).map_err(|_| self.damaged("length too large"))?;
        self.take(n)
    }

    pub fn str(&mut self) -> Result<&'a str, Damaged> {
        let b = self.bytes()?;
        std::str::from_utf8(b).map_err(|_| self.damaged("invalid UTF-8"))
    }

    /// Whether every byte was read.
    pub fn at_end(&self) -> bool {
        self.pos == self.buf.len()
    }
}

/// Items per compressed block: large enough for LZ4 to find the repetition between records
/// of one API (servers, security, schema shapes), small enough to split work across cores.
pub const BLOCK: usize = 256;

/// Items encoded by `encode` and compressed in blocks of [`BLOCK`], appended to `w` as a
/// count followed by the blocks.
pub fn write_blocks<T>(
    w: &mut Writer,
    items: &[T],
    mut encode: impl FnMut(&T, &mut Vec<u8>) -> Result<(), String>,
) -> Result<(), String> {
    w.u64(items.len() as u64);
    let mut raw = Vec::new();
    for block in items.chunks(BLOCK) {
        raw.clear();
        for item in block {
            let start = raw.len();
            raw.extend_from_slice(&[0; 8]);
            encode(item, &mut raw)?;
            let len = (raw.len() - start - 8) as u64;
            raw[start..start + 8].copy_from_slice(&len.to_le_bytes());
        }
        w.bytes(&lz4_flex::compress_prepend_size(&raw));
    }
    Ok(())
}

/// The compressed blocks written by [`write_blocks`], not yet decoded.
pub fn read_blocks<'a>(r: &mut Reader<'a>) -> Result<(usize, Vec<&'a [u8]>), Damaged> {
    let n = r.count(0)?;
    let blocks = n.div_ceil(BLOCK);
    let mut out = Vec::with_capacity(blocks.min(1 << 20));
    for _ in 0..blocks {
        out.push(r.bytes()?);
    }
    Ok((n, out))
}

/// Decodes blocks into items on every core, in order. `decode` gets one item's bytes.
pub fn decode_blocks<T: Send>(
    path: &Path,
    count: usize,
    blocks: &[&[u8]],
    decode: impl Fn(&[u8]) -> Result<T, String> + Sync,
) -> Result<Vec<T>, Damaged> {
    let damaged = |reason: String| Damaged {
        path: path.to_path_buf(),
        reason,
    };
    let one_block = |block: &[u8]| -> Result<Vec<T>, Damaged> {
        let raw = lz4_flex::decompress_size_prepended(block).map_err(|e| damaged(e.to_string()))?;
        let mut items = Vec::with_capacity(BLOCK);
        let mut r = Reader {
            buf: &raw,
            pos: 0,
            path,
        };
        while !r.at_end() {
            items.push(decode(r.bytes()?).map_err(damaged)?);
        }
        Ok(items)
    };
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8);
    let per = blocks.len().div_ceil(threads).max(1);
    let parts: Vec<Result<Vec<T>, Damaged>> = std::thread::scope(|s| {
        let handles: Vec<_> = blocks
            .chunks(per)
            .map(|part| {
                s.spawn(move || -> Result<Vec<T>, Damaged> {
                    let mut out = Vec::with_capacity(part.len() * BLOCK);
                    for b in part {
                        out.extend(one_block(b)?);
                    }
                    Ok(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(damaged("a decoding thread panicked".into())))
            })
            .collect()
    });
    let mut out = Vec::with_capacity(count);
    for p in parts {
        out.extend(p?);
    }
    if out.len() != count {
        return Err(damaged(format!("{} items, expected {count}", out.len())));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_blocks_round_trip() {
        let items: Vec<String> = (0..1000).map(|i| format!("item {i}")).collect();
        let mut w = Writer::new(b"TESTFILE", 3);
        w.u32(7);
        w.str("héllo");
        write_blocks(&mut w, &items, |s, out| {
            out.extend_from_slice(s.as_bytes());
            Ok(())
        })
        .unwrap();
        let buf = w.finish();
        let path = Path::new("t.bin");
        let (mut r, v) = Reader::open(&buf, path, b"TESTFILE").unwrap();
        assert_eq!((v, r.u32().unwrap(), r.str().unwrap()), (3, 7, "héllo"));
        let (n, blocks) = read_blocks(&mut r).unwrap();
        assert!(r.at_end());
        let back = decode_blocks(path, n, &blocks, |b| {
            String::from_utf8(b.to_vec()).map_err(|e| e.to_string())
        })
        .unwrap();
        assert_eq!(back, items);
    }

    #[test]
    fn damage_is_an_error_never_a_panic() {
        let path = Path::new("t.bin");
        assert!(Reader::open(b"short", path, b"TESTFILE").is_err());
        assert!(Reader::open(b"OTHERFILxxxx", path, b"TESTFILE").is_err());
        let mut w = Writer::new(b"TESTFILE", 1);
        write_blocks(&mut w, &vec!["a".to_string(); 600], |s, out| {
            out.extend_from_slice(s.as_bytes());
            Ok(())
        })
        .unwrap();
        let buf = w.finish();
        for cut in [13, 20, buf.len() - 1] {
            let (mut r, _) = Reader::open(&buf[..cut], path, b"TESTFILE").unwrap();
            assert!(read_blocks(&mut r).is_err(), "cut at {cut}");
        }
        let mut bad = buf.clone();
        let last = bad.len() - 3;
        bad[last] ^= 0xff;
        let (mut r, _) = Reader::open(&bad, path, b"TESTFILE").unwrap();
        if let Ok((n, blocks)) = read_blocks(&mut r) {
            let decoded = decode_blocks(path, n, &blocks, |b| Ok(b.len()));
            assert!(decoded.is_err() || decoded.unwrap().len() == 600);
        }
        let mut w = Writer::new(b"TESTFILE", 1);
        w.u64(u64::MAX);
        let buf = w.finish();
        let (mut r, _) = Reader::open(&buf, path, b"TESTFILE").unwrap();
        assert!(
            r.count(8).is_err()
                && Reader::open(&buf, path, b"TESTFILE")
                    .unwrap()
                    .0
                    .bytes()
                    .is_err()
        );
    }
}
