//! The shape of the code, checked: no file under `src/` holds much more than one concept's
//! worth of lines, and no two source files import each other (each dependency runs the
//! way the data flows, DESIGN.md's layering: a lower layer never imports a higher one).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most lines a file under `src/` may have: past about 600, a file usually holds two
/// concepts.
const MAX_LINES: usize = 620;

fn sources() -> BTreeMap<PathBuf, String> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
        for e in std::fs::read_dir(dir).expect("read src") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.insert(p.clone(), std::fs::read_to_string(&p).expect("read source"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut out);
    out
}

/// The module path of a source file: `src/index/store.rs` is `crate::index::store`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file
        .strip_prefix(src)
        .expect("under src")
        .with_extension("");
    let mut parts: Vec<String> = vec!["crate".into()];
    parts.extend(rel.iter().map(|p| p.to_string_lossy().into_owned()));
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The paths (`crate::a::b`, `super::c`, `self::d`) code outside tests and comments names.
fn paths_named(code: &str) -> Vec<Vec<String>> {
    let code = code.split("#[cfg(test)]").next().unwrap_or("");
    let mut out = Vec::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(i) = ["crate::", "super::", "self::"]
            .iter()
            .filter_map(|k| rest.find(k))
            .min()
        {
            let before = rest[..i].chars().last();
            let tail = &rest[i..];
            let end = tail
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(tail.len());
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                out.push(
                    tail[..end]
                        .split("::")
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect(),
                );
            }
            rest = &tail[end.max(1)..];
        }
    }
    out
}

#[test]
fn no_file_under_src_is_much_longer_than_one_concept() {
    let long: Vec<String> = sources()
        .iter()
        .filter(|(_, text)| text.lines().count() > MAX_LINES)
        .map(|(p, text)| format!("{} ({} lines)", p.display(), text.lines().count()))
        .collect();
    assert!(long.is_empty(), "files over {MAX_LINES} lines: {long:#?}");
}

#[test]
fn no_two_source_files_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = sources();
    let modules: BTreeMap<Vec<String>, PathBuf> = files
        .keys()
        .map(|f| (module_of(&src, f), f.clone()))
        .collect();
    let mut deps: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (file, text) in &files {
        let mut here = module_of(&src, file);
        // In `a/mod.rs`, `super` is `a`'s parent, as in `a.rs`.
        if file.file_name().is_some_and(|n| n == "mod.rs") {
            here.push("mod".into());
        }
        for path in paths_named(text) {
            let (mut base, rest): (Vec<String>, &[String]) = match path[0].as_str() {
                "crate" => (vec!["crate".into()], &path[1..]),
                "self" => (here.clone(), &path[1..]),
                _ => {
                    let ups = path.iter().take_while(|s| *s == "super").count();
                    (
                        here[..here.len().saturating_sub(ups)].to_vec(),
                        &path[ups..],
                    )
                }
            };
            base.extend(rest.iter().cloned());
            if let Some(target) = (1..=base.len())
                .rev()
                .find_map(|k| modules.get(&base[..k]))
                .filter(|t| *t != file)
            {
                deps.entry(file.clone()).or_default().insert(target.clone());
            }
        }
    }
    let mut pairs = BTreeSet::new();
    for (a, targets) in &deps {
        for b in targets {
            if deps.get(b).is_some_and(|t| t.contains(a)) {
                let (x, y) = if a < b { (a, b) } else { (b, a) };
                pairs.insert(format!("{} <-> {}", x.display(), y.display()));
            }
        }
    }
    assert!(pairs.is_empty(), "files importing each other: {pairs:#?}");
}
