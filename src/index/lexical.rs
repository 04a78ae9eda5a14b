//! Okapi BM25 over doc texts: the exact-word signal that embeddings blur.
//!
//! A query naming `playlist` or `tracks` should find the endpoint whose path says so even
//! when a small embedding model ranks a paraphrase higher; fusing both scores recovers that.
//! The index is built with the store and saved beside it ([`Bm25::write`]), so opening a
//! catalog of 100,000 endpoints does not tokenize 100,000 texts again.

use std::collections::HashMap;

/// BM25 tuning. The defaults are the textbook values; `b` controls how much long doc texts
/// (endpoints with many parameters) are penalised.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Params {
    /// Term-frequency saturation.
    pub k1: f32,
    /// Length normalisation, 0 (none) to 1 (full).
    pub b: f32,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params { k1: 1.5, b: 0.75 }
    }
}

/// Words too common in API docs and queries to tell endpoints apart.
const STOPWORDS: &[&str] = &[
    "a", "about", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been",
    "being", "but", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has", "have",
    "he", "her", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of",
    "on", "or", "our", "please", "she", "should", "so", "some", "than", "that", "the", "their",
    "them", "then", "there", "these", "they", "this", "those", "to", "us", "was", "we", "were",
    "what", "when", "where", "which", "who", "whom", "why", "will", "with", "would", "you", "your",
];

/// Splits text into index terms: identifiers are split at camelCase and snake_case
/// boundaries (`getMovieCredits` -> `get movie credits`), words are lower-cased, stopwords
/// dropped and plurals reduced to their singular (`movies` -> `movie`, `categories` ->
/// `category`), so a query and a path agree on the forms that matter most in REST APIs.
pub fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .flat_map(crate::text::split_identifier)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(stem)
        .collect()
}

/// Light stemming, enough to make singular and plural meet: a plural `-s`/`-ies` is
/// removed, then a final `-e` is dropped and a final `-y` becomes `-i` (as Porter's step 1c
/// does). The stems are not words (`movie`, `movies` -> `movi`; `category`, `categories` ->
/// `categori`; `match`, `matches` -> `match`) but query and docs agree on them, which is
/// all BM25 needs. Anything stronger (full Porter) merges distinct API nouns on short texts.
fn stem(w: String) -> String {
    if w.len() <= 2 || !w.is_ascii() {
        return w;
    }
    let mut s = w.as_str();
    if s.len() > 4 && s.ends_with("ies") {
        s = &s[..s.len() - 2]; // categories -> categori
    } else if s.ends_with('s') && !(s.ends_with("ss") || s.ends_with("us") || s.ends_with("is")) {
        s = &s[..s.len() - 1];
    }
    if s.len() > 2 && s.ends_with('e') {
        s = &s[..s.len() - 1];
    }
    if s.len() > 2 && s.ends_with('y') {
        return format!("{}i", &s[..s.len() - 1]);
    }
    s.to_string()
}

/// A BM25 index over a fixed list of documents, addressed by position.
#[derive(Debug, Clone)]
pub struct Bm25 {
    params: Bm25Params,
    /// term -> (doc, term frequency) for every doc containing it.
    postings: HashMap<String, Vec<(u32, u32)>>,
    doc_len: Vec<u32>,
    avg_len: f32,
}

impl Bm25 {
    /// Indexes `texts` with the default parameters.
    pub fn build(texts: &[String]) -> Bm25 {
        Self::with_params(texts, Bm25Params::default())
    }

    /// Indexes `texts`, each with the words of `more[i]` as if they ended it (`more` may
    /// be shorter, or empty).
    pub fn build_with(texts: &[String], more: &[String]) -> Bm25 {
        Self::indexed(texts, more, Bm25Params::default())
    }

    /// Indexes `texts` with the given parameters.
    pub fn with_params(texts: &[String], params: Bm25Params) -> Bm25 {
        Self::indexed(texts, &[], params)
    }

    fn indexed(texts: &[String], more: &[String], params: Bm25Params) -> Bm25 {
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut doc_len = Vec::with_capacity(texts.len());
        for (doc, text) in texts.iter().enumerate() {
            let mut terms = tokenize(text);
            if let Some(m) = more.get(doc) {
                terms.extend(tokenize(m));
            }
            doc_len.push(terms.len() as u32);
            let mut tf: HashMap<String, u32> = HashMap::new();
            for t in terms {
                *tf.entry(t).or_default() += 1;
            }
            for (t, f) in tf {
                postings.entry(t).or_default().push((doc as u32, f));
            }
        }
        let total: u64 = doc_len.iter().map(|&l| u64::from(l)).sum();
        let avg_len = if doc_len.is_empty() {
            0.0
        } else {
            total as f32 / doc_len.len() as f32
        };
        Bm25 {
            params,
            postings,
            doc_len,
            avg_len,
        }
    }

    /// Appends the index to `w` (terms in sorted order, so equal indexes write equal bytes).
    pub fn write(&self, w: &mut super::binfile::Writer) {
        w.u32(self.params.k1.to_bits());
        w.u32(self.params.b.to_bits());
        w.u64(self.doc_len.len() as u64);
        for &l in &self.doc_len {
            w.u32(l);
        }
        let mut terms: Vec<(&String, &Vec<(u32, u32)>)> = self.postings.iter().collect();
        terms.sort_unstable_by(|a, b| a.0.cmp(b.0));
        w.u64(terms.len() as u64);
        for (t, list) in terms {
            w.str(t);
            w.u64(list.len() as u64);
            for &(doc, tf) in list {
                w.u32(doc);
                w.u32(tf);
            }
        }
    }

    /// Reads an index written by [`Bm25::write`].
    pub fn read(r: &mut super::binfile::Reader<'_>) -> Result<Bm25, super::binfile::Damaged> {
        let k1 = f32::from_bits(r.u32()?);
        let b = f32::from_bits(r.u32()?);
        let n = r.count(4)?;
        let mut doc_len = Vec::with_capacity(n);
        for _ in 0..n {
            doc_len.push(r.u32()?);
        }
        let terms = r.count(16)?;
        let mut postings = HashMap::with_capacity(terms);
        for _ in 0..terms {
            let t = r.str()?.to_string();
            let len = r.count(8)?;
            let mut list = Vec::with_capacity(len);
            for _ in 0..len {
                let doc = r.u32()?;
                if doc as usize >= n {
                    return Err(r.damaged(format!("posting of document {doc} of {n}")));
                }
                // Postings are in document order, each document once: scoring one document
                // searches them (`Bm25Query::score`).
                if list.last().is_some_and(|&(last, _)| last >= doc) {
                    return Err(r.damaged(format!("postings of {t:?} out of document order")));
                }
                list.push((doc, r.u32()?));
            }
            postings.insert(t, list);
        }
        let total: u64 = doc_len.iter().map(|&l| u64::from(l)).sum();
        let avg_len = if n == 0 { 0.0 } else { total as f32 / n as f32 };
        Ok(Bm25 {
            params: Bm25Params { k1, b },
            postings,
            doc_len,
            avg_len,
        })
    }

    /// Number of indexed documents.
    pub fn len(&self) -> usize {
        self.doc_len.len()
    }

    /// Whether no documents are indexed.
    pub fn is_empty(&self) -> bool {
        self.doc_len.is_empty()
    }

    /// One score per document, in document order; 0 where no query term occurs. A term
    /// repeated in the query counts once per occurrence, as in the original formulation.
    pub fn scores(&self, query: &str) -> Vec<f32> {
        let mut scores = vec![0.0f32; self.doc_len.len()];
        self.query(query)
            .each_posting(|doc, s| scores[doc as usize] += s);
        scores
    }

    /// The documents where a query term occurs, with their scores ([`Bm25Query::matches`]).
    pub fn matches(&self, query: &str) -> Vec<(u32, f32)> {
        self.query(query).matches()
    }

    /// The terms of `query` looked up once, to score documents with.
    pub fn query(&self, query: &str) -> Bm25Query<'_> {
        let n = self.doc_len.len() as f32;
        let terms = tokenize(query)
            .iter()
            .filter_map(|t| self.postings.get(t))
            .map(|list| {
                let df = list.len() as f32;
                // The "+1" variant (Lucene's) keeps idf positive for terms in most documents,
                // so matching a common word never lowers a score.
                let idf = ((n - df + 0.5) / (df + 0.5)).ln_1p();
                (idf, list.as_slice())
            })
            .collect();
        Bm25Query { bm25: self, terms }
    }

    /// What one occurrence of a term (of inverse document frequency `idf`, `tf` times in
    /// `doc`) adds to the document's score.
    fn term_score(&self, idf: f32, doc: u32, tf: u32) -> f32 {
        let Bm25Params { k1, b } = self.params;
        let tf = tf as f32;
        let len_ratio = if self.avg_len > 0.0 {
            self.doc_len[doc as usize] as f32 / self.avg_len
        } else {
            1.0
        };
        idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len_ratio))
    }

    /// The share of `query`'s terms, each weighted by its inverse document frequency, that
    /// occur in at least one of `docs`: how much of what a request says those endpoints
    /// say too. A term no document holds weighs most (it is as rare as a term can be), so
    /// a request for `movies` put to a music catalog covers little. 0 for a query without
    /// terms.
    pub fn coverage(&self, query: &str, docs: &[usize]) -> f32 {
        let n = self.doc_len.len() as f32;
        let (mut said, mut found) = (0.0f32, 0.0f32);
        for t in tokenize(query) {
            let list = self.postings.get(&t).map_or(&[][..], Vec::as_slice);
            let idf = ((n - list.len() as f32 + 0.5) / (list.len() as f32 + 0.5)).ln_1p();
            said += idf;
            if docs
                .iter()
                .any(|&d| list.binary_search_by_key(&d, |p| p.0 as usize).is_ok())
            {
                found += idf;
            }
        }
        if said > 0.0 {
            found / said
        } else {
            0.0
        }
    }

    /// The `k` best documents with a positive score, best first; ties by document order.
    pub fn top_k(&self, query: &str, k: usize) -> Vec<(usize, f32)> {
        let mut hits: Vec<(usize, f32)> = self
            .scores(query)
            .into_iter()
            .enumerate()
            .filter(|&(_, s)| s > 0.0)
            .collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(k);
        hits
    }
}

/// A query's terms looked up in a [`Bm25`] index ([`Bm25::query`]).
pub struct Bm25Query<'a> {
    bm25: &'a Bm25,
    /// Inverse document frequency and postings (by document) of each query term the index
    /// knows, in query order; a repeated term is repeated.
    terms: Vec<(f32, &'a [(u32, u32)])>,
}

impl Bm25Query<'_> {
    /// Calls `add(doc, score)` for every posting of every term, terms in query order.
    fn each_posting(&self, mut add: impl FnMut(u32, f32)) {
        for &(idf, list) in &self.terms {
            for &(doc, tf) in list {
                add(doc, self.bm25.term_score(idf, doc, tf));
            }
        }
    }

    /// The documents where a query term occurs, with their scores ([`Bm25::scores`]
    /// without the zeros), in no particular order: the work is the matching postings, not
    /// the number of documents, for a ranking that looks at candidates only. Each score is
    /// summed in the same order as in [`Bm25::scores`], so the two agree to the bit.
    pub fn matches(&self) -> Vec<(u32, f32)> {
        thread_local! {
            /// One sum per document, all zero between calls (only the matched ones are
            /// touched and reset), so a query allocates nothing the size of the catalog.
            static SUMS: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let n = self.bm25.doc_len.len();
        SUMS.with(|sums| {
            let mut sums = sums.borrow_mut();
            if sums.len() < n {
                sums.resize(n, 0.0);
            }
            let mut seen = vec![0u64; n.div_ceil(64)];
            let mut docs: Vec<u32> = Vec::new();
            self.each_posting(|doc, s| {
                let (word, bit) = (doc as usize / 64, 1u64 << (doc % 64));
                if seen[word] & bit == 0 {
                    seen[word] |= bit;
                    docs.push(doc);
                }
                sums[doc as usize] += s;
            });
            docs.into_iter()
                .map(|d| (d, std::mem::take(&mut sums[d as usize])))
                .collect()
        })
    }

    /// The score of one document, as [`Bm25::scores`] gives it (to the bit: the terms are
    /// added in the same order), from a binary search of each term's postings.
    pub fn score(&self, doc: usize) -> f32 {
        let mut sum = 0.0f32;
        for &(idf, list) in &self.terms {
            if let Ok(i) = list.binary_search_by_key(&doc, |p| p.0 as usize) {
                sum += self.bm25.term_score(idf, list[i].0, list[i].1);
            }
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn tokenizes_identifiers_stopwords_and_plurals() {
        assert_eq!(
            tokenize("getMovieCredits for the user_id"),
            ["get", "movi", "credit", "user", "id"]
        );
        assert_eq!(
            tokenize("GET /playlists/{playlist_id}/tracks"),
            ["get", "playlist", "playlist", "id", "track"]
        );
        for (a, b) in [
            ("movie", "movies"),
            ("category", "categories"),
            ("match", "matches"),
            ("box", "boxes"),
            ("cache", "caches"),
            ("key", "keys"),
            ("id", "ids"),
            ("file", "files"),
        ] {
            assert_eq!(stem(a.into()), stem(b.into()), "{a} / {b}");
        }
        for keep in ["is", "address", "status", "analysis", "café"] {
            assert_eq!(stem(keep.into()), keep);
        }
        assert_ne!(stem("user".into()), stem("usage".into()));
        assert!(tokenize("").is_empty());
        assert!(tokenize("— ¿? 🦀").iter().all(|t| !t.is_empty()));
    }

    #[test]
    fn ranks_the_matching_doc_first() {
        let bm = Bm25::build(&docs(&[
            "GET /movie/{movie_id}/credits Get the cast and crew for a movie",
            "GET /search/person Search for people by name",
            "POST /playlists/{playlist_id}/tracks Add tracks to a playlist",
        ]));
        assert_eq!(bm.len(), 3);
        assert_eq!(bm.top_k("add a song track to my playlist", 3)[0].0, 2);
        assert_eq!(bm.top_k("who acted in this movie? cast list", 3)[0].0, 0);
        let s = bm.scores("person");
        assert!(s[1] > 0.0 && s[0] == 0.0 && s[2] == 0.0);
        assert!(bm.top_k("zebra", 5).is_empty());
    }

    #[test]
    fn rare_terms_outweigh_common_ones_and_length_normalises() {
        let bm = Bm25::build(&docs(&[
            "get user",
            "get user",
            "get playlist",
            "get user profile details with many words",
        ]));
        let s = bm.scores("get playlist");
        assert!(s[2] > s[0] && s[0] > 0.0);
        let s = bm.scores("user");
        assert!(s[0] > s[3], "shorter doc should win: {s:?}");
        let flat = Bm25::with_params(
            &docs(&["user", "user a b c d e"]),
            Bm25Params { k1: 1.5, b: 0.0 },
        );
        let s = flat.scores("user");
        assert!((s[0] - s[1]).abs() < 1e-6);
    }

    #[test]
    fn written_index_reads_back_the_same_scores() {
        let texts = docs(&[
            "get user",
            "get playlist tracks",
            "",
            "delete the user's playlist",
        ]);
        let bm = Bm25::build(&texts);
        let mut w = crate::index::binfile::Writer::new(b"TESTBM25", 1);
        bm.write(&mut w);
        let buf = w.finish();
        let path = std::path::Path::new("bm25");
        let (mut r, _) = crate::index::binfile::Reader::open(&buf, path, b"TESTBM25").unwrap();
        let back = Bm25::read(&mut r).unwrap();
        assert!(r.at_end());
        for q in ["user playlist", "tracks", "zebra", ""] {
            assert_eq!(back.scores(q), bm.scores(q), "{q}");
        }
        for cut in [12, 20, buf.len() - 1] {
            let (mut r, _) =
                crate::index::binfile::Reader::open(&buf[..cut], path, b"TESTBM25").unwrap();
            assert!(Bm25::read(&mut r).is_err(), "cut at {cut}");
        }
    }

    /// The matches are the non-zero scores, and one document's score is its score, to the
    /// bit, whatever the order of the terms or their repetition; one call leaves nothing
    /// behind for the next.
    #[test]
    fn matches_are_the_nonzero_scores() {
        let bm = Bm25::build(&docs(&[
            "GET /movie/{movie_id}/credits Get the cast and crew for a movie",
            "GET /search/person Search for people by name",
            "POST /playlists/{playlist_id}/tracks Add tracks to a playlist",
            "GET /movie/popular Popular movies",
            "",
        ]));
        for q in [
            "movie cast",
            "popular movie movie",
            "add a track to my playlist and search for a person",
            "zebra",
            "",
        ] {
            let mut matches = bm.matches(q);
            matches.sort_by_key(|m| m.0);
            let nonzero: Vec<(u32, f32)> = bm
                .scores(q)
                .into_iter()
                .enumerate()
                .filter(|&(_, s)| s != 0.0)
                .map(|(d, s)| (d as u32, s))
                .collect();
            let bits =
                |v: &[(u32, f32)]| v.iter().map(|&(d, s)| (d, s.to_bits())).collect::<Vec<_>>();
            assert_eq!(bits(&matches), bits(&nonzero), "{q}");
            let one = bm.query(q);
            for (d, s) in bm.scores(q).into_iter().enumerate() {
                assert_eq!(one.score(d).to_bits(), s.to_bits(), "{q} doc {d}");
            }
        }
        let small = Bm25::build(&docs(&["movie"]));
        assert_eq!(small.matches("movie").len(), 1);
        assert_eq!(bm.matches("credits").len(), 1);
    }

    #[test]
    fn empty_corpus_and_empty_query_are_harmless() {
        let bm = Bm25::build(&[]);
        assert!(bm.is_empty() && bm.scores("anything").is_empty());
        assert!(bm.matches("anything").is_empty());
        let bm = Bm25::build(&docs(&["", "the of and"]));
        assert_eq!(bm.scores(""), [0.0, 0.0]);
        assert_eq!(bm.scores("the"), [0.0, 0.0]);
    }

    #[test]
    fn coverage_weighs_the_words_a_request_shares_with_documents() {
        let bm = Bm25::build(&docs(&[
            "Get the weather forecast for a place",
            "List the playlists of a user",
            "Get a user profile",
        ]));
        // Every word in the first document: all of it covered.
        assert_eq!(bm.coverage("weather forecast", &[0]), 1.0);
        assert_eq!(bm.coverage("weather forecast", &[1, 2]), 0.0);
        // A word no document uses ("movies") weighs more than one most documents use.
        let movies = bm.coverage("user movies", &[1]);
        let forecast = bm.coverage("user forecast", &[1]);
        assert!(movies > 0.0 && movies < 0.5, "{movies}");
        assert!(forecast > movies, "{forecast} vs {movies}");
        // Several documents cover what each covers.
        assert_eq!(bm.coverage("weather playlists", &[0, 1]), 1.0);
        assert_eq!(bm.coverage("", &[0]), 0.0);
        assert_eq!(bm.coverage("the of", &[0]), 0.0);
        assert_eq!(Bm25::build(&[]).coverage("weather", &[]), 0.0);
    }
}
