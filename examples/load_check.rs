//! Loads a catalog and prints counts and problems (a quick manual check).
fn main() {
    let paths: Vec<std::path::PathBuf> = std::env::args().skip(1).map(Into::into).collect();
    let t = std::time::Instant::now();
    let c = shortlist::catalog::Catalog::load_paths(&paths);
    eprintln!(
        "{} apis, {} endpoints, {} errors, {} warnings in {:?}",
        c.apis.len(),
        c.endpoints.len(),
        c.errors().count(),
        c.warnings().count(),
        t.elapsed()
    );
    for p in c.errors() {
        println!("{p}");
    }
    let bytes: usize = c
        .endpoints
        .iter()
        .map(|e| serde_json::to_string(e).unwrap().len())
        .sum();
    eprintln!("records: {bytes} bytes json");
}
