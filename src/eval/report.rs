//! Rendering evaluation results: a table for people, JSON for machines, and a dump of the
//! misses for error analysis.

use super::metrics::QueryMetrics;
use super::run::{QueryOutcome, SettingReport};
use crate::index::doc_text::DocVariant;
use crate::shortlist::{Options, Retrieval};
use std::fmt::Write;

/// One line describing the configuration, as the results document quotes it.
pub fn describe(r: &SettingReport) -> String {
    describe_options(r.variant, &r.options)
}

/// [`describe`] of a doc-text variant and ranking options.
pub fn describe_options(variant: DocVariant, o: &Options) -> String {
    let mut s = format!(
        "variant={} retrieval={}",
        variant.name(),
        match o.retrieval {
            Retrieval::Dense => "dense",
            Retrieval::Lexical => "lexical",
            Retrieval::Hybrid => "hybrid",
        }
    );
    if o.retrieval == Retrieval::Hybrid {
        match o.fusion {
            crate::shortlist::Fusion::Rrf => {
                let _ = write!(s, " fusion=rrf(k={})", o.rrf_k);
            }
            crate::shortlist::Fusion::Score => {
                let _ = write!(s, " fusion=score(dense={})", o.dense_weight);
            }
        }
    }
    let on = |b: bool| if b { "on" } else { "off" };
    let _ = write!(
        s,
        " split={} expand={} chain-max-tasks={}",
        on(o.split),
        on(o.expand),
        o.chain_max_tasks
    );
    if o.split {
        let _ = write!(s, " part-weight={}", o.part_weight);
    }
    // The request-reading weights, printed only when they do something.
    let weights = [
        ("name-list-weight", o.name_list_weight),
        ("sibling-weight", o.sibling_weight),
    ];
    for (name, w) in weights {
        if w != 1.0 {
            let _ = write!(s, " {name}={w}");
        }
    }
    match o.cut {
        Some(c) => {
            let _ = write!(s, " cut={c}");
        }
        None => s.push_str(" cut=off"),
    }
    s
}

/// The metrics table of one setting (percentages, one row per k) and MRR.
pub fn table(title: &str, queries: usize, m: &QueryMetrics) -> String {
    let mut out = format!("{title}: {queries} queries, MRR {:.3}\n", m.mrr);
    out.push_str("     k  recall  precision     F1  complete   nDCG  returned\n");
    for a in &m.at {
        let _ = writeln!(
            out,
            "{:>6}  {:>6.1}  {:>9.1}  {:>5.1}  {:>8.1}  {:>5.1}  {:>8.2}",
            a.k,
            100.0 * a.recall,
            100.0 * a.precision,
            100.0 * a.f1,
            100.0 * a.complete,
            100.0 * a.ndcg,
            a.returned
        );
    }
    out
}

/// The full text report of one setting.
pub fn text(r: &SettingReport) -> String {
    let mut out = format!(
        "== {} ({} API(s), {} endpoints)\n{}\n",
        r.name,
        r.apis,
        r.endpoints,
        describe(r)
    );
    out.push_str(&table("all", r.queries.len(), &r.overall));
    for (source, n, m) in &r.by_source {
        out.push('\n');
        out.push_str(&table(source, *n, m));
    }
    let _ = writeln!(
        out,
        "ranking: {:.1} ms per query",
        1000.0 * r.ranking_seconds / r.queries.len().max(1) as f64
    );
    let flagged = |judged: Vec<bool>| {
        let n = judged.len();
        let share = 100.0 * judged.iter().filter(|&&m| !m).count() as f64 / n.max(1) as f64;
        (n, share)
    };
    let (n, matchable) = flagged(
        r.queries
            .iter()
            .filter_map(|q| q.judged)
            .map(|j| j.matched)
            .collect(),
    );
    if n > 0 {
        let (m, no_match) = flagged(
            r.queries
                .iter()
                .filter_map(|q| q.judged_without_gold)
                .map(|j| j.matched)
                .collect(),
        );
        let _ = write!(out, "judged unmatched: {matchable:.1}% of {n} queries");
        if m > 0 {
            let _ = write!(
                out,
                ", {no_match:.1}% of the {m} put to the catalog without their gold APIs"
            );
        }
        out.push('\n');
        let halves: Vec<_> = r.queries.iter().filter_map(|q| q.halves.as_ref()).collect();
        let (h, other) = flagged(
            halves
                .iter()
                .filter_map(|h| h.other)
                .map(|j| j.matched)
                .collect(),
        );
        if h > 0 {
            let (_, own) = flagged(
                halves
                    .iter()
                    .filter_map(|h| h.own)
                    .map(|j| j.matched)
                    .collect(),
            );
            let _ = writeln!(
                out,
                "split in two halves by API: {other:.1}% of {h} queries flagged in the half \
                 without their gold APIs, {own:.1}% in the half with them"
            );
        }
    }
    out
}

/// The queries whose top `k` misses a gold endpoint, with where each gold endpoint ranked
/// and what was returned instead (`+` marks an endpoint added as a prerequisite).
pub fn misses(r: &SettingReport, k: usize) -> String {
    misses_of(&r.name, &r.queries, k)
}

/// [`misses`] of a named list of query outcomes.
pub fn misses_of(name: &str, queries: &[QueryOutcome], k: usize) -> String {
    let mut out = String::new();
    let missed: Vec<&QueryOutcome> = queries
        .iter()
        .filter(|q| q.gold_ranks.iter().any(|g| g.is_none_or(|g| g > k)))
        .collect();
    let _ = writeln!(
        out,
        "-- {}: {} of {} queries miss a gold endpoint in the top {k}",
        name,
        missed.len(),
        queries.len()
    );
    for q in missed {
        let _ = writeln!(out, "{} {:?}", q.id, q.query);
        for (g, rank) in q.gold.iter().zip(&q.gold_ranks) {
            let mark = match rank {
                Some(r) if *r <= k => format!("   {r:>3}"),
                Some(r) => format!("MISS {r:>3}"),
                None => "MISS cut".to_string(),
            };
            let _ = writeln!(out, "    {mark}  {g}");
        }
        let returned: Vec<String> = q
            .returned
            .iter()
            .zip(&q.added)
            .take(k)
            .map(|(e, &a)| format!("{}{}", if a { "+" } else { "" }, short(e)))
            .collect();
        let _ = writeln!(out, "    top: {}", returned.join(" | "));
    }
    out
}

/// `api METHOD /path` without the api, for compact lines.
fn short(key: &str) -> &str {
    let mut it = key.splitn(2, ' ');
    let first = it.next().unwrap_or(key);
    match it.next() {
        Some(rest) if !first.chars().all(|c| c.is_ascii_uppercase()) => rest,
        _ => key,
    }
}

/// The JSON of a run: settings with their configuration, overall and per-source metrics,
/// and (with `per_query`) every query's outcome.
pub fn json(reports: &[SettingReport], per_query: bool) -> serde_json::Value {
    let settings: Vec<serde_json::Value> = reports
        .iter()
        .map(|r| {
            let mut v = serde_json::json!({
                "name": r.name,
                "apis": r.apis,
                "endpoints": r.endpoints,
                "queries": r.queries.len(),
                "variant": r.variant,
                "options": r.options,
                "config": describe(r),
                "overall": r.overall,
                "by_source": r.by_source.iter().map(|(s, n, m)| serde_json::json!({
                    "source": s, "queries": n, "metrics": m
                })).collect::<Vec<_>>(),
                "ranking_ms_per_query":
                    1000.0 * r.ranking_seconds / r.queries.len().max(1) as f64,
            });
            if per_query {
                v["per_query"] = serde_json::to_value(&r.queries).unwrap_or_default();
            }
            v
        })
        .collect();
    serde_json::json!({ "settings": settings })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::metrics::score_query;

    #[test]
    fn renders_tables_and_misses() {
        let m = score_query(&[1, 2], &[2, 3], &[1, 10]);
        let t = table("all", 1, &m);
        assert!(
            t.contains("MRR 0.500") && t.contains("    10    50.0       50.0   50.0"),
            "{t}"
        );
        let report = SettingReport {
            name: "x".into(),
            apis: 1,
            endpoints: 3,
            variant: Default::default(),
            options: Options::default(),
            overall: m.clone(),
            by_source: Vec::new(),
            queries: vec![QueryOutcome {
                id: "q1".into(),
                query: "find".into(),
                source: "x".into(),
                gold: vec!["x GET /b".into(), "x GET /c".into()],
                returned: vec!["x GET /a".into(), "x GET /b".into()],
                added: vec![false, true],
                scores: vec![0.9, 0.9],
                gold_ranks: vec![Some(2), None],
                metrics: m,
                answer: Default::default(),
                judged: None,
                judged_without_gold: None,
                halves: None,
            }],
            ranking_seconds: 0.01,
        };
        let miss = misses(&report, 10);
        assert!(
            miss.contains("MISS cut  x GET /c") && miss.contains("GET /a | +GET /b"),
            "{miss}"
        );
        assert!(text(&report).contains("variant=full retrieval=hybrid"));
        let j = json(&[report], true);
        assert_eq!(j["settings"][0]["per_query"][0]["id"], "q1");
    }
}
