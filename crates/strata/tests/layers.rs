//! The engine's parts import one way. A part is a top-level module of the crate (a file
//! beside `lib.rs`, or a folder: `vstore/` with everything in it); one part imports another
//! when its code names it (`crate::part...`, `crate::{part...}`, or a name `lib.rs`
//! re-exports from it, such as `crate::Options`), comments and test modules left out. No
//! part may reach, through the parts it imports, back to itself: a circle means a lower
//! part knows a higher one (the options a layout, file names the value stores...), and
//! every part on it then changes with the others. ARCHITECTURE.md shows the layers this
//! keeps.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Circles known and not yet cut, each as its sorted list of parts: a `Version` holds the
/// value stores' files (`version` -> `vstore`) and the stores work on versions (`vstore`
/// -> `version`); a flush's separators pass through the L0 seam (`l0` -> `vstore`) and a
/// `Version` holds its L0 layout (`version` -> `l0`); the stores' list in `vstore` names
/// the coalescing groups' store kept in `coalesce/`, which implements the store trait.
/// Cut by a registry above them and value formats handed down to `version`.
const KNOWN: &[&[&str]] = &[&["coalesce", "l0", "version", "vstore"]];

/// Every source file of the crate, by path relative to `src/`.
fn sources(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, root, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            out.insert(rel, std::fs::read_to_string(&p).unwrap());
        }
    }
}

/// The part a source file belongs to (`vstore/hash/gc.rs` -> `vstore`); `None` for
/// `lib.rs`, which holds them all.
fn part_of(rel: &str) -> Option<String> {
    let first = rel.split('/').next().unwrap();
    let name = first.trim_end_matches(".rs");
    (name != "lib").then(|| name.to_string())
}

/// `src` without comments and without its test modules (`#[cfg(test)] mod ...`).
fn code(src: &str) -> String {
    let mut out = String::new();
    let mut lines = src.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod "))
        {
            // A test module runs to the end of the file, or to the brace that closes it
            // at its own indentation.
            let indent = lines.peek().unwrap().len() - lines.peek().unwrap().trim_start().len();
            lines.next();
            for l in lines.by_ref() {
                let at = l.len() - l.trim_start().len();
                if at == indent && l.trim_start().starts_with('}') {
                    break;
                }
            }
            continue;
        }
        out.push_str(line.split("//").next().unwrap());
        out.push('\n');
    }
    out
}

/// The first segments of the paths a `crate::` path names: `crate::a::b` gives `a`,
/// `crate::{a::b, c}` gives `a` and `c`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // The group's items at its own depth: each one's first segment.
            let mut depth = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(first_segment(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 || !item.contains("::") {
                    item.push(c);
                }
            }
            out.push(first_segment(&item));
        } else {
            out.push(first_segment(rest));
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

fn first_segment(s: &str) -> String {
    s.trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// What `lib.rs` re-exports at the top (`pub use options::{Options, ...}`): name -> part.
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = lib;
    while let Some(at) = rest.find("\npub use ") {
        rest = &rest[at + "\npub use ".len()..];
        let end = rest.find(';').unwrap();
        let (part, names) = rest[..end].split_once("::").unwrap();
        for name in names.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if !name.is_empty() {
                out.insert(name.to_string(), part.to_string());
            }
        }
    }
    out
}

/// The parts and the parts each imports.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    sources(&root, &root, &mut files);
    let reexported = reexports(&files["lib.rs"]);
    let parts: BTreeSet<String> = files.keys().filter_map(|r| part_of(r)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> =
        parts.iter().map(|p| (p.clone(), BTreeSet::new())).collect();
    for (rel, src) in &files {
        let Some(me) = part_of(rel) else {
            continue;
        };
        for name in crate_paths(&code(src)) {
            let to = reexported.get(&name).cloned().unwrap_or(name);
            if to != me && parts.contains(&to) {
                edges.get_mut(&me).unwrap().insert(to);
            }
        }
    }
    edges
}

/// The circles (parts that reach each other, more than one), each sorted.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
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
        if r.contains(*m) {
            out.insert(
                r.iter()
                    .filter(|n| reached[n].contains(*m))
                    .cloned()
                    .collect(),
            );
        }
    }
    out.into_iter().collect()
}

#[test]
fn no_part_imports_back_up() {
    let edges = graph();
    assert!(edges.len() > 30, "read {} parts", edges.len());
    // The reading sees what is there: file names below the value stores, the options
    // below everything but the ground, the value stores above the versions they use.
    assert!(edges["vstore"].contains("filename") && edges["vstore"].contains("version"));
    assert!(edges["db"].contains("options") && edges["repair"].contains("db"));
    let found = circles(&edges);
    let known: Vec<Vec<String>> = KNOWN
        .iter()
        .map(|c| c.iter().map(|s| s.to_string()).collect())
        .collect();
    for c in &found {
        let inside: BTreeSet<String> = c.iter().cloned().collect();
        assert!(
            known.contains(c),
            "parts that import each other, round: {c:?}\n{}",
            c.iter()
                .map(|m| format!(
                    "  {m} -> {:?}",
                    edges[m].intersection(&inside).collect::<Vec<_>>()
                ))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    for c in &known {
        assert!(
            found.contains(c),
            "the circle {c:?} changed or is gone: update KNOWN"
        );
    }
}

/// The check sees a circle when there is one, and reads the paths it must.
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
    assert_eq!(
        crate_paths(
            "use crate::{a::b::{C, D}, e};\nlet x = crate::f::g(crate::Options::default());"
        ),
        ["a", "e", "f", "Options"]
    );
    assert_eq!(
        code("x // crate::y\n#[cfg(test)]\nmod tests {\n    crate::z\n}\nw"),
        "x \nw\n"
    );
}
