//! The engine's modules import one way: no module reaches, through the modules it names
//! (`crate::...` and `super::...` paths in its code, comments and test modules left out),
//! back to itself. A circle means a lower part knows a higher one (the options a layout,
//! file names the value stores...), and every module on it is then changed with the others.
//! ARCHITECTURE.md shows the layers this keeps.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Circles known and not yet cut, each as its sorted module list: the value stores'
/// registration list (`vstore`) names the coalescing groups' store kept in `coalesce/`,
/// which implements the store trait. Cut by a registry above both.
const KNOWN: &[&[&str]] = &[&["coalesce::groups", "vstore", "vstore::record"]];

/// The module path of a source file (`src/vstore/hash/mod.rs` -> `vstore::hash`).
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts.join("::")
}

fn sources(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, root, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p.strip_prefix(root).unwrap();
            out.insert(module_of(rel), std::fs::read_to_string(&p).unwrap());
        }
    }
}

/// `src` without comments and without its test module.
fn code(src: &str) -> String {
    let src = match src.find("#[cfg(test)]\nmod tests") {
        Some(at) => &src[..at],
        None => src,
    };
    src.lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths after each occurrence of `prefix` (`a::b::c`), as segments.
fn paths_after<'a>(code: &'a str, prefix: &str) -> Vec<Vec<&'a str>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().last();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        out.push(rest[..end].split("::").filter(|s| !s.is_empty()).collect());
    }
    out
}

/// The module graph: each module and the modules its code names.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    sources(&root, &root, &mut files);
    let modules: BTreeSet<String> = files.keys().cloned().collect();
    let resolve = |segments: &[&str]| -> Option<String> {
        (1..=segments.len())
            .rev()
            .map(|i| segments[..i].join("::"))
            .find(|m| modules.contains(m))
    };
    let mut edges = BTreeMap::new();
    for (module, src) in &files {
        let code = code(src);
        let parent: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
        let parent = &parent[..parent.len().saturating_sub(1)];
        let mut to = BTreeSet::new();
        for p in paths_after(&code, "crate::") {
            to.extend(resolve(&p));
        }
        for p in paths_after(&code, "super::") {
            let full: Vec<&str> = parent.iter().copied().chain(p).collect();
            to.extend(resolve(&full));
        }
        to.remove(module);
        to.remove("");
        edges.insert(module.clone(), to);
    }
    edges
}

/// The circles (strongly connected components of more than one module), each sorted.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Reachability by search from each module: a few dozen modules, no need for Tarjan.
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(m) = todo.pop() {
            for n in edges.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        edges.keys().map(|m| (m, reach(m))).collect();
    let mut out: BTreeSet<Vec<String>> = BTreeSet::new();
    for (m, r) in &reached {
        if !r.contains(*m) {
            continue;
        }
        let mut c: Vec<String> = r
            .iter()
            .filter(|n| reached[n].contains(*m))
            .cloned()
            .collect();
        c.sort();
        out.insert(c);
    }
    out.into_iter().collect()
}

#[test]
fn no_module_imports_back_up() {
    let edges = graph();
    assert!(edges.len() > 50, "read {} modules", edges.len());
    let found = circles(&edges);
    let known: Vec<Vec<String>> = KNOWN
        .iter()
        .map(|c| c.iter().map(|s| s.to_string()).collect())
        .collect();
    for c in &found {
        assert!(
            known.contains(c),
            "modules that import each other, round: {c:?}\n{}",
            c.iter()
                .map(|m| format!(
                    "  {m} -> {:?}",
                    edges[m]
                        .intersection(&c.iter().cloned().collect())
                        .collect::<Vec<_>>()
                ))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    for c in &known {
        assert!(
            found.contains(c),
            "the circle {c:?} is gone: take it off KNOWN"
        );
    }
}

/// The check sees a circle when there is one.
#[test]
fn a_circle_is_found() {
    let mut edges = graph();
    // As if file names knew the value stores again.
    edges
        .get_mut("filename")
        .unwrap()
        .insert("vstore".to_string());
    let found = circles(&edges);
    assert!(
        found.iter().any(|c| c.contains(&"filename".to_string())),
        "{found:?}"
    );
}
