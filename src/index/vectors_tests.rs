use super::*;

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn exact_search_matches_naive_cosine() {
    let rows = random_rows(50, 16, 7);
    let idx = VectorIndex::from_rows(16, &rows).unwrap();
    assert!(idx.is_exact());
    let q: Vec<f32> = rows[3].iter().map(|x| x * 2.0).collect();
    let hits = idx.search(&q, 5).unwrap();
    assert_eq!(hits.len(), 5);
    assert_eq!(hits[0].0, 3);
    assert!((hits[0].1 - 1.0).abs() < 1e-2, "{hits:?}");
    let qn = normalized(&q);
    let mut naive: Vec<(usize, f32)> = rows.iter().map(|r| dot(r, &qn)).enumerate().collect();
    naive.sort_by(|a, b| b.1.total_cmp(&a.1));
    assert_eq!(
        hits.iter().map(|h| h.0).collect::<Vec<_>>(),
        naive[..5].iter().map(|h| h.0).collect::<Vec<_>>()
    );
    assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1));
    // Half precision: scores within a few thousandths of the full-precision cosine.
    let all = idx.similarity_all(&q).unwrap();
    assert_eq!(all.len(), 50);
    for (i, (s, r)) in all.iter().zip(&rows).enumerate() {
        assert!((s - dot(r, &qn)).abs() < 5e-3, "row {i}: {s}");
    }
}

#[test]
fn bad_input_is_an_error_or_empty_never_a_panic() {
    let idx = VectorIndex::from_rows(4, &random_rows(3, 4, 1)).unwrap();
    assert!(matches!(
        idx.search(&[1.0; 3], 2),
        Err(VectorError::Dim { .. })
    ));
    assert!(idx.search(&[0.0; 4], 0).unwrap().is_empty());
    assert_eq!(idx.search(&[1.0; 4], 10).unwrap().len(), 3);
    for bad in [[f32::NAN; 4], [0.0; 4]] {
        let hits = idx.search(&bad, 2).unwrap();
        assert!(hits.iter().all(|h| h.1.abs() < 1e-6), "{hits:?}");
    }
    assert!(VectorIndex::from_rows(4, &[vec![1.0; 5]]).is_err());
    let empty = VectorIndex::from_rows(4, &[]).unwrap();
    assert!(empty.search(&[1.0; 4], 3).unwrap().is_empty());
    assert!(empty.similarity_all(&[1.0; 4]).unwrap().is_empty());
    assert!(idx.row(3).is_none());
}

#[test]
fn file_round_trips_and_damage_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let rows = random_rows(40, 8, 3);
    let idx = VectorIndex::from_rows(8, &rows).unwrap();
    let path = dir.path().join("v.usearch");
    idx.write(&path).unwrap();

    let back = VectorIndex::open(&path, 8, 40).unwrap();
    assert_eq!(back.row(39), idx.row(39));
    let r = back.row(11).unwrap();
    assert!(dot(&r, &rows[11]) > 0.999);
    assert!(back.row(40).is_none());
    assert_eq!(back.search(&rows[11], 1).unwrap()[0].0, 11);
    assert!(matches!(
        VectorIndex::open(&path, 8, 41),
        Err(VectorError::Corrupt { .. })
    ));
    std::fs::write(dir.path().join("bad.usearch"), b"not an index").unwrap();
    assert!(VectorIndex::open(&dir.path().join("bad.usearch"), 8, 40).is_err());
    assert!(matches!(
        VectorIndex::open(&dir.path().join("missing"), 8, 40),
        Err(VectorError::Io { .. })
    ));
}

/// The graph and the exact scan agree on catalog-sized inputs: the graph's first five are
/// the exact first five, up to rows whose exact scores tie within the stored precision
/// (random rows in 384 dimensions sit close together, and the graph is built by several
/// threads at once, so which of two near-equal rows it ranks first may vary).
#[test]
fn graph_agrees_with_exact_top_5_on_small_catalogs() {
    for n in [1, 2, 5, 9, 40, 54, 100] {
        let rows = random_rows(n, 384, n as u64 + 11);
        let idx = VectorIndex::from_rows(384, &rows).unwrap();
        for q in random_rows(20, 384, 99) {
            let all = idx.search_exact(&q, n).unwrap();
            let exact_score = |i: usize| all.iter().find(|h| h.0 == i).map(|h| h.1).unwrap();
            let exact = &all[..n.min(5)];
            let graph = idx.search_graph(&q, 5).unwrap();
            assert_eq!(graph.len(), exact.len(), "n={n}");
            let fifth = exact.last().unwrap().1;
            for (i, _) in &graph {
                assert!(
                    exact_score(*i) >= fifth - 0.02,
                    "n={n}: graph {graph:?}, exact {exact:?}"
                );
            }
            let shared = graph
                .iter()
                .filter(|g| exact.iter().any(|e| e.0 == g.0))
                .count();
            assert!(
                shared + 1 >= exact.len(),
                "n={n}: graph {graph:?}, exact {exact:?}"
            );
        }
    }
}

#[test]
fn filtered_search_keeps_only_allowed_rows() {
    let rows = random_rows(300, 32, 5);
    let idx = VectorIndex::from_rows(32, &rows).unwrap();
    let hits = idx.search_filtered(&rows[7], 10, |i| i % 3 == 1).unwrap();
    assert_eq!(hits.len(), 10);
    assert!(hits.iter().all(|h| h.0 % 3 == 1));
    let hits = idx
        .search_filtered(&rows[7], 10, |i| i % 3 == 1 || i == 7)
        .unwrap();
    assert_eq!(hits[0].0, 7);
}

/// Above the exact threshold searches go through the graph and still find each row.
#[test]
fn past_the_threshold_the_graph_serves_searches() {
    let rows = random_rows(500, 32, 9);
    let idx = VectorIndex::from_rows(32, &rows)
        .unwrap()
        .with_exact_max(100);
    assert!(!idx.is_exact());
    let found = (0..500)
        .step_by(7)
        .filter(|&i| idx.search(&rows[i], 1).unwrap()[0].0 == i)
        .count();
    assert!(found >= 70, "{found} of 72");
}

/// The graph's build time under each distance, rounds alternating:
/// `cargo test --release --lib -- --ignored --nocapture graph_build_by_metric`.
#[test]
#[ignore]
fn graph_build_by_metric() {
    let n: usize = std::env::var("GRAPH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let rows = random_rows(n, 384, 3);
    for round in 0..2 {
        for metric in [usearch::ffi::MetricKind::Cos, usearch::ffi::MetricKind::IP] {
            let (t, cpu) = (std::time::Instant::now(), cpu_seconds());
            VectorIndex::from_rows_with(384, &rows, QUANTIZATION, metric).unwrap();
            println!(
                "round {round}: {n} rows, {metric:?}: {:?} wall, {:.1} s CPU",
                t.elapsed(),
                cpu_seconds() - cpu
            );
        }
    }
}

/// CPU seconds of this process so far (every thread), steadier than wall time on a shared
/// machine.
fn cpu_seconds() -> f64 {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    let u = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr());
        u.assume_init()
    };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// Graph build time on the benchmarks' worded stand-in vectors ([`worded_row`] of texts
/// drawn from a small vocabulary, as the synthetic catalog's are) against pseudo-random
/// ones, rounds alternating: `GRAPH_ROWS=N cargo test --release --lib -- --ignored
/// --nocapture graph_build_by_structure`.
#[test]
#[ignore]
fn graph_build_by_structure() {
    let n: usize = std::env::var("GRAPH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let worded: Vec<Vec<f32>> = (0..n)
        .map(|i| {
            let text = format!(
                "verb{} domain{} qualifier{} resource{} records of the service, variant {i}",
                i % 10,
                (i / 10) % 40,
                (i / 400) % 25,
                (i * 7) % 60
            );
            worded_row(&text, 384)
        })
        .collect();
    let random = random_rows(n, 384, 3);
    for round in 0..2 {
        for (name, rows) in [("random", &random), ("worded", &worded)] {
            let (t, cpu) = (std::time::Instant::now(), cpu_seconds());
            VectorIndex::from_rows(384, rows).unwrap();
            println!(
                "round {round}: {n} {name} rows: {:?} wall, {:.1} s CPU",
                t.elapsed(),
                cpu_seconds() - cpu
            );
        }
    }
}

/// Texts that share words get nearer stand-in vectors than texts that do not, and the same
/// text always gets the same unit vector.
#[test]
fn worded_rows_are_near_when_texts_share_words() {
    let a = worded_row("List the invoices of a customer", 64);
    let b = worded_row("list invoices by customer", 64);
    let c = worded_row("Delete a shipment label", 64);
    assert_eq!(a, worded_row("List the invoices of a customer", 64));
    assert!((dot(&a, &a) - 1.0).abs() < 1e-4);
    assert!(
        dot(&a, &b) > dot(&a, &c) + 0.3,
        "{} {}",
        dot(&a, &b),
        dot(&a, &c)
    );
}
