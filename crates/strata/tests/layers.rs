//! The engine's parts import one way. A part is a top-level module of the crate (a file
//! beside `lib.rs`, or a folder: `vstore/` with everything in it); one part imports another
//! when its code names it (`crate::part...`, `crate::{part...}`, or a name `lib.rs`
//! re-exports from it, such as `crate::Options`), comments and test modules left out. No
//! part may reach, through the parts it imports, back to itself: a circle means a lower
//! part knows a higher one (the options a layout, file names the value stores...), and
//! every part on it then changes with the others. Beyond that, every part has its layer
//! ([`LAYERS`], which ARCHITECTURE.md shows: a test holds the two alike) and imports only
//! parts of its own layer or below.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Circles known and not yet cut, each as its sorted list of parts (none today: the
/// last, of `coalesce`, `l0`, `version` and `vstore`, was cut by the value formats in
/// `value/` and the stores' list in `registry.rs`).
const KNOWN: &[&[&str]] = &[];

/// The layers, bottom to top, and the parts of each: a part imports only parts of its own
/// layer or below (and none of its own layer round in a circle). A new part goes in the
/// lowest layer its imports allow; ARCHITECTURE.md's table ("One way down") lists the same.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "ground",
        &[
            "batch",
            "cache",
            "coding",
            "compaction_filter",
            "error",
            "filename",
            "hint",
            "iter",
            "key",
            "range_del",
            "snapshot",
            "stats",
            "sync",
            "ttl",
        ],
    ),
    ("I/O", &["fs", "pmem"]),
    ("formats", &["memtable", "sst", "wal"]),
    (
        "descriptors",
        &[
            "file_meta",
            "obsolete",
            "options",
            "placement",
            "value",
            "version_filter",
        ],
    ),
    ("table cache", &["table_cache"]),
    ("L0 layouts", &["l0"]),
    ("versions", &["version"]),
    ("techniques", &["coalesce", "compaction", "vstore"]),
    ("registry", &["registry"]),
    ("engine", &["db"]),
    ("tools", &["backup", "inspect", "repair"]),
];

/// Every source file of the crate, by path relative to `src/`.
fn sources(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, root, out);
        } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("tests.rs") {
            // (A `tests.rs` is a test module, `#[cfg(test)] mod tests;`, left out as the
            // inline ones are.)
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
            // `mod tests;`: the module is a file of its own (left out by `sources`), and
            // the code after the line is not in it.
            if lines.peek().unwrap().trim_end().ends_with(';') {
                lines.next();
                continue;
            }
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

/// Each part's layer (its index in [`LAYERS`]).
fn layer_of() -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (i, (name, parts)) in LAYERS.iter().enumerate() {
        for p in *parts {
            assert!(
                out.insert(p.to_string(), i).is_none(),
                "{p} is in two layers (the second: {name})"
            );
        }
    }
    out
}

/// Every import that runs up the layers: (from, to).
fn upward(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<(String, String)> {
    let layer = layer_of();
    let mut out = Vec::new();
    for (from, tos) in edges {
        let Some(&mine) = layer.get(from) else {
            out.push((
                from.clone(),
                "(a part no layer lists: add it to LAYERS)".into(),
            ));
            continue;
        };
        for to in tos {
            if layer.get(to).is_some_and(|&theirs| theirs > mine) {
                out.push((from.clone(), to.clone()));
            }
        }
    }
    out
}

#[test]
fn every_part_imports_only_its_layer_and_below() {
    let edges = graph();
    let up = upward(&edges);
    assert!(
        up.is_empty(),
        "imports that run up the layers (LAYERS in this file):\n{}",
        up.iter()
            .map(|(f, t)| format!("  {f} -> {t}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let layer = layer_of();
    for p in layer.keys() {
        assert!(
            edges.contains_key(p),
            "LAYERS lists {p}, which is not a part"
        );
    }
}

/// ARCHITECTURE.md's layer table lists the parts [`LAYERS`] does, layer by layer.
#[test]
fn the_architecture_page_shows_the_layers() {
    let page = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ARCHITECTURE.md"),
    )
    .unwrap();
    let section = page
        .split("## One way down")
        .nth(1)
        .expect("ARCHITECTURE.md has a section 'One way down'");
    // Its table: `| layer | parts |`, top row the highest layer.
    let mut rows: Vec<(String, Vec<String>)> = section
        .lines()
        .skip_while(|l| !l.starts_with("| layer"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let parts = cells[2]
                .split('`')
                .skip(1)
                .step_by(2)
                .map(|p| p.trim_end_matches(".rs").trim_end_matches('/').to_string())
                .collect();
            (cells[1].to_string(), parts)
        })
        .collect();
    rows.reverse();
    let want: Vec<(String, Vec<String>)> = LAYERS
        .iter()
        .map(|(n, ps)| (n.to_string(), ps.iter().map(|p| p.to_string()).collect()))
        .collect();
    assert_eq!(rows, want, "ARCHITECTURE.md's layer table against LAYERS");
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
    // As if the options knew an L0 layout: no circle, but an import up the layers.
    let mut edges = graph();
    edges.get_mut("options").unwrap().insert("l0".to_string());
    assert_eq!(upward(&edges), [("options".to_string(), "l0".to_string())]);
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
    assert_eq!(
        code("#[cfg(test)]\nmod tests;\nuse crate::a;\n"),
        "use crate::a;\n"
    );
}
