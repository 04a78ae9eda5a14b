//! Vector store benchmark: `cargo bench --bench vectors [-- --real FILE.f32 QUERIES.jsonl]`.
//!
//! 1. Speed: usearch (half precision, SIMD kernels) exact scan versus HNSW graph, top 256
//!    (what the ranking asks for) and top 10, on pseudo-random unit vectors of 384 dims
//!    (the hardest case for a graph), at catalog sizes from 1,000 to 100,000; with the
//!    graph's build time and its recall@10 against the exact scan.
//! 2. Precision (`--real`): on real embeddings (a `vectors.f32` file of little-endian
//!    384-dim rows, e.g. an index of format 1) and real queries embedded by the model,
//!    recall@10 of half precision and of i8 against full-precision exact search.

use shortlist::index::vectors::random_rows;
use shortlist::index::{Embedder, EmbedderConfig, VectorIndex};
use std::time::{Duration, Instant};
use usearch::ffi::ScalarKind;

fn per_query(
    queries: &[Vec<f32>],
    f: impl Fn(&[f32]) -> Vec<(usize, f32)>,
) -> (Duration, Vec<Vec<usize>>) {
    let t = Instant::now();
    let ids = queries
        .iter()
        .map(|q| f(q).iter().map(|h| h.0).collect())
        .collect();
    (t.elapsed() / queries.len() as u32, ids)
}

fn recall(truth: &[Vec<usize>], got: &[Vec<usize>], k: usize) -> f64 {
    let found: usize = truth
        .iter()
        .zip(got)
        .map(|(t, g)| t.iter().take(k).filter(|i| g.contains(i)).count())
        .sum();
    found as f64 / (truth.len() * k) as f64
}

fn us(d: Duration) -> String {
    format!("{:.0} us", d.as_secs_f64() * 1e6)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    println!(
        "usearch {} compiled with: {}",
        usearch::version(),
        usearch::hardware_acceleration_compiled()
    );
    if let Some(i) = args.iter().position(|a| a == "--real") {
        let (Some(file), Some(queries)) = (args.get(i + 1), args.get(i + 2)) else {
            eprintln!("--real FILE.f32 QUERIES.jsonl");
            std::process::exit(2)
        };
        real(file, queries);
        return;
    }
    let dim = 384;
    let queries = random_rows(200, dim, 6);
    println!("| vectors | exact top 256 | graph top 256 | exact top 10 | graph top 10 | graph recall@10 | graph build (2 threads) |");
    println!("|---|---|---|---|---|---|---|");
    for n in [1_000, 10_000, 20_000, 50_000, 100_000] {
        let rows = random_rows(n, dim, 5);
        let t = Instant::now();
        let idx = VectorIndex::from_rows(dim, &rows).expect("index");
        let build = t.elapsed();
        drop(rows);
        let (e256, _) = per_query(&queries, |q| idx.search_exact(q, 256).unwrap());
        let (g256, _) = per_query(&queries, |q| idx.search_graph(q, 256).unwrap());
        let (e10, truth) = per_query(&queries, |q| idx.search_exact(q, 10).unwrap());
        let (g10, got) = per_query(&queries, |q| idx.search_graph(q, 10).unwrap());
        println!(
            "| {n} | {} | {} | {} | {} | {:.3} | {:.1} s |",
            us(e256),
            us(g256),
            us(e10),
            us(g10),
            recall(&truth, &got, 10),
            build.as_secs_f64()
        );
    }
}

/// Recall@10 of each storage precision against full-precision exact search.
fn real(file: &str, queries: &str) {
    let dim = 384;
    let bytes = std::fs::read(file).expect("read the vectors");
    let rows: Vec<Vec<f32>> = bytes
        .chunks_exact(4 * dim)
        .map(|r| {
            r.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        })
        .collect();
    let text = std::fs::read_to_string(queries).expect("read the queries");
    let embedder = Embedder::load(&EmbedderConfig::locate()).expect("model");
    let qs: Vec<Vec<f32>> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["query"].as_str().map(str::to_string))
        .map(|q| embedder.embed_one(&q).expect("embed"))
        .collect();
    let exact = |q: &[f32]| -> Vec<usize> {
        let mut s: Vec<(usize, f32)> = rows
            .iter()
            .map(|r| r.iter().zip(q).map(|(a, b)| a * b).sum())
            .enumerate()
            .collect();
        s.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        s.iter().take(10).map(|h| h.0).collect()
    };
    let truth: Vec<Vec<usize>> = qs.iter().map(|q| exact(q)).collect();
    println!(
        "{} real vectors, {} real queries: recall@10 against f32 exact search",
        rows.len(),
        qs.len()
    );
    println!("| storage | bytes per vector | exact-scan recall@10 | graph recall@10 |");
    println!("|---|---|---|---|");
    for (name, kind, bytes) in [
        ("f32", ScalarKind::F32, 4),
        ("f16", ScalarKind::F16, 2),
        ("i8", ScalarKind::I8, 1),
    ] {
        let idx = VectorIndex::from_rows_as(dim, &rows, kind).expect("index");
        let (_, e) = per_query(&qs, |q| idx.search_exact(q, 10).unwrap());
        let (_, g) = per_query(&qs, |q| idx.search_graph(q, 10).unwrap());
        println!(
            "| {name} | {} | {:.4} | {:.4} |",
            dim * bytes,
            recall(&truth, &e, 10),
            recall(&truth, &g, 10)
        );
    }
}
