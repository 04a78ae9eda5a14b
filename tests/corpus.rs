//! The real-world corpus (`../shared/corpus`): about 290 published OpenAPI documents,
//! byte-identical to their sources, defects included. Every spec either loads or is
//! rejected for a named, genuine defect; nothing panics or hangs.

use shortlist::catalog::{Catalog, Severity};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    assert!(
        p.is_dir(),
        "the corpus is expected at {} (shared/ beside the repository)",
        p.display()
    );
    p
}

/// Rejected specs and why. Each is a defect of the document itself:
/// - Adyen MarketPayNotification: webhook-only documents without `paths`;
/// - firstinspires, youtubeAnalytics: `paths` holds no operation.
///
/// (bunq loads: a U+2028 inside a block scalar at line 1141 is a line break to YAML 1.1
/// readers, PyYAML among them, which then find a mis-indented block; OpenAPI specs are
/// YAML 1.2, where it is a character like any other.)
const REJECTED: &[(&str, &str)] = &[
    ("adyen.com_MarketPayNotificationService_3.yaml", "no paths"),
    ("adyen.com_MarketPayNotificationService_4.yaml", "no paths"),
    ("adyen.com_MarketPayNotificationService_5.yaml", "no paths"),
    ("adyen.com_MarketPayNotificationService_6.yaml", "no paths"),
    ("firstinspires.org_1.0.0.yaml", "no operations"),
    ("googleapis.com_youtubeAnalytics_v1.yaml", "no operations"),
];

#[test]
fn corpus_loads_with_named_rejections() {
    let dir = corpus();
    let catalog = Catalog::load_paths(std::slice::from_ref(&dir));
    assert!(
        !catalog
            .problems
            .iter()
            .any(|p| p.message.contains("internal error")),
        "a loader panic was caught: {:?}",
        catalog
            .problems
            .iter()
            .filter(|p| p.message.contains("internal error"))
            .collect::<Vec<_>>()
    );
    let rejected: BTreeMap<String, String> = catalog
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .map(|p| {
            (
                p.file
                    .strip_prefix(&dir)
                    .unwrap_or(&p.file)
                    .display()
                    .to_string(),
                p.to_string(),
            )
        })
        .collect();
    let expected: Vec<&str> = REJECTED.iter().map(|(f, _)| *f).collect();
    assert_eq!(
        rejected.keys().map(String::as_str).collect::<Vec<_>>(),
        expected,
        "{rejected:#?}"
    );
    for (file, reason) in REJECTED {
        assert!(
            rejected[*file].contains(reason),
            "{file}: {}",
            rejected[*file]
        );
    }

    // Coverage: share of specs loaded, and of the operations those specs declare.
    let sources = std::fs::read_to_string(dir.join("SOURCES.tsv")).expect("SOURCES.tsv");
    let declared: BTreeMap<String, usize> = sources
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Some((f.first()?.to_string(), f.get(7)?.parse().ok()?))
        })
        .collect();
    let total = sources
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .count();
    let loaded = catalog.apis.len();
    assert!(
        loaded as f64 >= 0.97 * total as f64,
        "{loaded} of {total} specs loaded"
    );
    let mut want = 0;
    let mut got = 0;
    for api in &catalog.apis {
        let rel = api
            .source
            .strip_prefix(&dir)
            .unwrap_or(&api.source)
            .display()
            .to_string();
        let Some(&n) = declared.get(&rel) else {
            continue;
        };
        want += n;
        got += catalog
            .endpoints
            .iter()
            .filter(|e| e.api == api.id)
            .count()
            .min(n);
    }
    assert!(
        got as f64 >= 0.99 * want as f64,
        "{got} of {want} operations normalized"
    );
    eprintln!(
        "corpus: {loaded}/{total} specs, {got}/{want} operations, {} endpoints",
        catalog.endpoints.len()
    );
}
