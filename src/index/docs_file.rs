//! `docs.bin` of a generation: keys and content hashes, the BM25 statistics, the records,
//! the doc texts and the caller's extra bytes, each a length-prefixed section so a reader
//! skips what it does not need.

use super::binfile::{self, Damaged, Reader, Writer};
use super::layout::{StoreError, DOCS_MAGIC, FORMAT_2, FORMAT_VERSION};
use super::lexical::Bm25;
use std::ops::Range;
use std::path::Path;

/// The parts of `docs.bin`, each a length-prefixed section so a reader can skip what it
/// does not need.
pub struct DocsFile<'a> {
    pub keys: Vec<&'a str>,
    pub hashes: Vec<[u8; 32]>,
    pub bm25: &'a [u8],
    pub records: &'a [u8],
    pub texts: &'a [u8],
    /// Bytes a caller stored with the index (empty in format 2).
    pub extra: &'a [u8],
}

/// `docs.bin` of the current format, or of format 2 when `accept_2` (to reuse its vectors).
pub fn read_docs_file<'a>(
    buf: &'a [u8],
    path: &'a Path,
    accept_2: bool,
) -> Result<DocsFile<'a>, Damaged> {
    let (mut r, version) = Reader::open(buf, path, DOCS_MAGIC)?;
    if version != FORMAT_VERSION && !(accept_2 && version == FORMAT_2) {
        return Err(r.damaged(format!("format {version}, expected {FORMAT_VERSION}")));
    }
    let mut ids = Reader::open_section(r.bytes()?, path);
    let n = ids.count(40)?;
    let mut keys = Vec::with_capacity(n);
    let mut hashes = Vec::with_capacity(n);
    for _ in 0..n {
        keys.push(ids.str()?);
        let h = ids.bytes()?;
        hashes.push(
            h.try_into()
                .map_err(|_| ids.damaged("a content hash is not 32 bytes"))?,
        );
    }
    let bm25 = r.bytes()?;
    let records = r.bytes()?;
    let texts = r.bytes()?;
    let extra = if version == FORMAT_2 {
        &[][..]
    } else {
        r.bytes()?
    };
    if !r.at_end() {
        return Err(r.damaged("trailing bytes"));
    }
    Ok(DocsFile {
        keys,
        hashes,
        bm25,
        records,
        texts,
        extra,
    })
}

/// Where `part` (a slice of `whole`) lies in it.
pub fn range_in(whole: &[u8], part: &[u8]) -> Range<usize> {
    let start = part.as_ptr() as usize - whole.as_ptr() as usize;
    start..start + part.len()
}

pub fn decode_texts(path: &Path, section: &[u8]) -> Result<Vec<String>, Damaged> {
    let mut r = Reader::open_section(section, path);
    let (n, blocks) = binfile::read_blocks(&mut r)?;
    binfile::decode_blocks(path, n, &blocks, |b| {
        String::from_utf8(b.to_vec()).map_err(|e| e.to_string())
    })
}

/// `docs.bin`: keys and hashes, BM25, records, texts, the caller's extra bytes.
pub fn encode_docs(
    keys: &[String],
    hashes: &[[u8; 32]],
    bm25: &Bm25,
    record_json: &[Vec<u8>],
    texts: &[String],
    extra: &[u8],
) -> Result<Vec<u8>, StoreError> {
    let mut w = Writer::new(DOCS_MAGIC, FORMAT_VERSION);
    let mut ids = Writer::section();
    ids.u64(keys.len() as u64);
    for (k, h) in keys.iter().zip(hashes) {
        ids.str(k);
        ids.bytes(h);
    }
    w.bytes(&ids.finish());
    let mut lex = Writer::section();
    bm25.write(&mut lex);
    w.bytes(&lex.finish());
    let mut recs = Writer::section();
    binfile::write_blocks(&mut recs, record_json, |j, out| {
        out.extend_from_slice(j);
        Ok(())
    })
    .map_err(StoreError::Encode)?;
    w.bytes(&recs.finish());
    let mut txt = Writer::section();
    binfile::write_blocks(&mut txt, texts, |t, out| {
        out.extend_from_slice(t.as_bytes());
        Ok(())
    })
    .map_err(StoreError::Encode)?;
    w.bytes(&txt.finish());
    w.bytes(extra);
    Ok(w.finish())
}
