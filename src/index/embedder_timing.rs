//! Timings behind "Indexing speed" and "Cold start" in `docs/benchmarks.md`: ONNX Runtime
//! session options, batch sizes and the session build, on real doc texts, measured in CPU
//! seconds of this process (the development machine is shared, so wall time says more
//! about the neighbours than about the option). Every variant is checked against the
//! vectors of the embedder as shipped, so an option that changes what is embedded shows.
//!
//! `TIMING_TEXTS=docs.jsonl cargo test --release --lib -- --ignored --nocapture
//! session_options_timing`, with `docs.jsonl` from `shortlist doc-texts SPECS`.

use super::*;
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use ort::session::Session;
use ort::value::Tensor;

/// User plus system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the struct it is given and nothing else.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// The texts of `TIMING_TEXTS` (one JSON object with a `text` per line), at most
/// `TIMING_LIMIT` of them (default 400), spread evenly over the file.
fn timing_texts() -> Vec<String> {
    let path = std::env::var("TIMING_TEXTS").expect("TIMING_TEXTS=docs.jsonl");
    let all: Vec<String> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(String::from))
        .collect();
    let limit: usize = std::env::var("TIMING_LIMIT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let step = all.len().div_ceil(limit).max(1);
    all.into_iter().step_by(step).collect()
}

/// A session on the shipped model with the embedder's settings, then `tune`.
fn session(
    threads: usize,
    level: GraphOptimizationLevel,
    model: &[u8],
    tune: impl FnOnce(SessionBuilder) -> SessionBuilder,
) -> Session {
    let config = EmbedderConfig::locate();
    let env = ort_environment(&config.ort_library, config.ort_origin).unwrap();
    let builder = Session::builder(&env)
        .unwrap()
        .with_optimization_level(level)
        .unwrap()
        .with_intra_threads(threads)
        .unwrap()
        .with_config_entry("session.intra_op.allow_spinning", "0")
        .unwrap();
    tune(builder).commit_from_memory(model).unwrap()
}

/// Mean-pooled, normalised vectors of `texts` (sorted by length, in batches of `batch`),
/// as fastembed computes them, in the order given.
fn embed_with(
    session: &mut Session,
    tokenizer: &tokenizers::Tokenizer,
    texts: &[&str],
    batch: usize,
) -> Vec<Vec<f32>> {
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| texts[i].len());
    let mut out = vec![Vec::new(); texts.len()];
    for chunk in order.chunks(batch) {
        let inputs: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
        let enc = tokenizer.encode_batch(inputs, true).unwrap();
        let (rows, cols) = (enc.len(), enc[0].len());
        let flat = |f: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> Vec<i64> {
            enc.iter()
                .flat_map(|e| f(e).iter().map(|&x| x as i64))
                .collect()
        };
        let ids = flat(&|e| e.get_ids());
        let mask = flat(&|e| e.get_attention_mask());
        let types = flat(&|e| e.get_type_ids());
        let shape = [rows, cols];
        let outputs = session
            .run(ort::inputs![
                "input_ids" => Tensor::from_array((shape, ids)).unwrap(),
                "attention_mask" => Tensor::from_array((shape, mask.clone())).unwrap(),
                "token_type_ids" => Tensor::from_array((shape, types)).unwrap(),
            ])
            .unwrap();
        let (_, hidden) = outputs[0].try_extract_tensor::<f32>().unwrap();
        let dim = hidden.len() / (rows * cols);
        for (r, &i) in chunk.iter().enumerate() {
            let mut sum = vec![0f32; dim];
            let mut n = 0f32;
            for t in 0..cols {
                let m = mask[r * cols + t] as f32;
                n += m;
                let token = &hidden[(r * cols + t) * dim..][..dim];
                for (s, x) in sum.iter_mut().zip(token) {
                    *s += m * x;
                }
            }
            let mean: Vec<f32> = sum.iter().map(|s| s / n.max(1.0)).collect();
            // fastembed's `normalize`, which it does not export.
            let norm = mean.iter().map(|x| x * x).sum::<f32>().sqrt();
            out[i] = mean.iter().map(|x| x / (norm + 1e-12)).collect();
        }
    }
    out
}

/// Largest difference of any component between two sets of vectors.
fn max_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| x.iter().zip(y).map(|(p, q)| (p - q).abs()))
        .fold(0.0, f32::max)
}

#[test]
#[ignore]
fn session_options_timing() {
    let texts = timing_texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let config = EmbedderConfig::locate();
    let shipped = Embedder::load(&config).unwrap();
    let model = std::fs::read(config.model_dir.join("model.onnx")).unwrap();
    let tokenizer = shipped.model.lock().unwrap().tokenizer.clone();
    let tokens: usize = tokenizer
        .encode_batch(refs.clone(), true)
        .unwrap()
        .iter()
        .map(|e| e.get_attention_mask().iter().sum::<u32>() as usize)
        .sum();
    println!(
        "{} texts, {:.0} tokens on average, {} threads",
        texts.len(),
        tokens as f64 / texts.len() as f64,
        config.threads
    );
    let reference = shipped.embed(&texts).unwrap();

    let t = Instant::now();
    let cpu = cpu_seconds();
    for _ in 0..3 {
        tokenizer.encode_batch(refs.clone(), true).unwrap();
    }
    println!(
        "tokenizing all texts: {:.3} CPU s, {:.3} s wall (per round)",
        (cpu_seconds() - cpu) / 3.0,
        t.elapsed().as_secs_f64() / 3.0
    );

    type Tune = fn(SessionBuilder) -> SessionBuilder;
    let keep: Tune = |b| b;
    let variants: Vec<(&str, usize, GraphOptimizationLevel, usize, Tune)> = vec![
        (
            "level 3 (shipped)",
            config.threads,
            GraphOptimizationLevel::Level3,
            BATCH_SIZE,
            keep,
        ),
        (
            "level 1",
            config.threads,
            GraphOptimizationLevel::Level1,
            BATCH_SIZE,
            keep,
        ),
        (
            "level 2",
            config.threads,
            GraphOptimizationLevel::Level2,
            BATCH_SIZE,
            keep,
        ),
        (
            "one thread",
            1,
            GraphOptimizationLevel::Level3,
            BATCH_SIZE,
            keep,
        ),
        (
            "batch 8",
            config.threads,
            GraphOptimizationLevel::Level3,
            8,
            keep,
        ),
        (
            "batch 16",
            config.threads,
            GraphOptimizationLevel::Level3,
            16,
            keep,
        ),
        (
            "batch 64",
            config.threads,
            GraphOptimizationLevel::Level3,
            64,
            keep,
        ),
        (
            "no memory pattern",
            config.threads,
            GraphOptimizationLevel::Level3,
            BATCH_SIZE,
            |b| b.with_memory_pattern(false).unwrap(),
        ),
        (
            "parallel execution",
            config.threads,
            GraphOptimizationLevel::Level3,
            BATCH_SIZE,
            |b| {
                b.with_parallel_execution(true)
                    .unwrap()
                    .with_inter_threads(2)
                    .unwrap()
            },
        ),
        (
            "spinning allowed",
            config.threads,
            GraphOptimizationLevel::Level3,
            BATCH_SIZE,
            |b| {
                b.with_config_entry("session.intra_op.allow_spinning", "1")
                    .unwrap()
            },
        ),
        (
            "no arena",
            config.threads,
            GraphOptimizationLevel::Level3,
            BATCH_SIZE,
            |b| {
                b.with_config_entry("session.use_device_allocator_for_initializers", "1")
                    .unwrap()
            },
        ),
    ];
    let rounds: usize = std::env::var("TIMING_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    // `TIMING_ONLY=batch,level 3`: only the variants whose name holds one of these.
    let only: Vec<String> = std::env::var("TIMING_ONLY")
        .map(|v| v.split(',').map(String::from).collect())
        .unwrap_or_default();
    for round in 0..rounds {
        // The shipped path itself, so the harness's own pooling is measured against it.
        let t = Instant::now();
        let cpu = cpu_seconds();
        shipped.embed(&texts).unwrap();
        let (c, w) = (cpu_seconds() - cpu, t.elapsed().as_secs_f64());
        println!(
            "round {round} {:<22} {:>6.1} texts/CPU s  {:>6.2} CPU s  {:>6.2} s wall",
            "embedder as shipped",
            texts.len() as f64 / c,
            c,
            w
        );
        for (name, threads, level, batch, tune) in &variants {
            if !only.is_empty() && !only.iter().any(|o| name.contains(o.as_str())) {
                continue;
            }
            let t = Instant::now();
            let cpu = cpu_seconds();
            let mut s = session(*threads, *level, &model, tune);
            let build = cpu_seconds() - cpu;
            let t2 = Instant::now();
            let cpu = cpu_seconds();
            let v = embed_with(&mut s, &tokenizer, &refs, *batch);
            let (c, w) = (cpu_seconds() - cpu, t2.elapsed().as_secs_f64());
            println!(
                "round {round} {name:<22} {:>6.1} texts/CPU s  {c:>6.2} CPU s  {w:>6.2} s wall  \
                 build {build:.2} CPU s ({:.2} s)  max diff {:.1e}",
                texts.len() as f64 / c,
                t.elapsed().as_secs_f64() - w,
                max_diff(&v, &reference)
            );
        }
    }
}

/// The session build from the shipped model against one from the model as ONNX Runtime
/// saves it after its graph optimisations (as ONNX and in its own format), each build
/// timed alone, and the vectors of each against the shipped ones:
/// `TIMING_TEXTS=docs.jsonl cargo test --release --lib -- --ignored --nocapture
/// optimized_model_timing`.
#[test]
#[ignore]
fn optimized_model_timing() {
    let texts = timing_texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let config = EmbedderConfig::locate();
    let shipped = Embedder::load(&config).unwrap();
    let tokenizer = shipped.model.lock().unwrap().tokenizer.clone();
    let reference = shipped.embed(&texts).unwrap();
    let model = std::fs::read(config.model_dir.join("model.onnx")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let onnx = dir.path().join("optimized.onnx");
    let ort_format = dir.path().join("optimized.ort");
    let level = GraphOptimizationLevel::Level3;
    drop(session(config.threads, level, &model, |b| {
        b.with_optimized_model_path(&onnx).unwrap()
    }));
    drop(session(config.threads, level, &model, |b| {
        b.with_optimized_model_path(&ort_format)
            .unwrap()
            .with_config_entry("session.save_model_format", "ORT")
            .unwrap()
    }));
    let onnx_bytes = std::fs::read(&onnx).unwrap();
    let ort_bytes = std::fs::read(&ort_format).unwrap();
    println!(
        "model {} bytes, optimized ONNX {} bytes, ORT format {} bytes",
        model.len(),
        onnx_bytes.len(),
        ort_bytes.len()
    );
    type Tune = fn(SessionBuilder) -> SessionBuilder;
    let keep: Tune = |b| b;
    let ort_load: Tune = |b| {
        b.with_config_entry("session.load_model_format", "ORT")
            .unwrap()
    };
    let cases: Vec<(&str, &[u8], GraphOptimizationLevel, Tune)> = vec![
        ("shipped model, level 3", &model, level, keep),
        ("optimized ONNX, level 3", &onnx_bytes, level, keep),
        (
            "optimized ONNX, no optimisation",
            &onnx_bytes,
            GraphOptimizationLevel::Disable,
            keep,
        ),
        ("ORT format, level 3", &ort_bytes, level, ort_load),
        (
            "ORT format, no optimisation",
            &ort_bytes,
            GraphOptimizationLevel::Disable,
            ort_load,
        ),
    ];
    for round in 0..3 {
        for (name, bytes, level, tune) in &cases {
            let t = Instant::now();
            let cpu = cpu_seconds();
            let mut s = session(config.threads, *level, bytes, tune);
            let (c, w) = (cpu_seconds() - cpu, t.elapsed().as_secs_f64());
            let v = embed_with(&mut s, &tokenizer, &refs, BATCH_SIZE);
            println!(
                "round {round} {name:<34} build {c:.3} CPU s  {w:.3} s wall  max diff {:.1e}  \
                 identical {}",
                max_diff(&v, &reference),
                v == reference
            );
        }
    }
}
