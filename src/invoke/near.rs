//! Names near a misspelt one: the "did you mean" of unknown arguments, tools and APIs.

/// The candidate closest to `name` by edit distance (with transpositions), if it is
/// close enough to be a likely typo, or if one name contains the other (`id` for
/// `movie_id`).
pub fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let lname = name.to_lowercase();
    let limit = (lname.chars().count() / 3).max(2);
    candidates
        .filter_map(|c| {
            let lc = c.to_lowercase();
            let d = distance(&lname, &lc);
            let contains =
                lname.len() >= 2 && lc.len() >= 2 && (lc.contains(&lname) || lname.contains(&lc));
            (d <= limit || contains).then_some((d, c))
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Optimal string alignment distance: Levenshtein plus adjacent transpositions, so
/// `movie_di` is one edit from `movie_id`.
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(128).collect();
    let b: Vec<char> = b.chars().take(128).collect();
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        d[i * w] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(w) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * w + j] + 1)
                .min(d[i * w + j - 1] + 1)
                .min(d[(i - 1) * w + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * w + j - 2] + 1);
            }
            d[i * w + j] = v;
        }
    }
    d[a.len() * w + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestion_needs_similarity() {
        assert_eq!(closest("zzz", ["movie_id", "language"].into_iter()), None);
        assert_eq!(
            closest("id", ["movie_id", "language"].into_iter()),
            Some("movie_id")
        );
        assert_eq!(
            distance("movie_di", "movie_id"),
            1,
            "a transposition is one edit"
        );
    }
}
