//! The tree's shape, checked against the tree itself, so that the documents describing it cannot
//! drift:
//!
//! - `ARCHITECTURE.md`'s crate graph (a table of every crate's dependencies on the workspace's
//!   other crates, and a picture of the layers) is generated from the `Cargo.toml` files: this
//!   test fails when they disagree, and `SCALECHAIN_BLESS=1 cargo test -p scalechain-cli --test
//!   architecture` writes the generated text between the markers;
//! - README.md's table of crates names each crate once, and nothing else;
//! - no module imports another module that imports it back (a file-module `a` naming `b` through
//!   `crate::b`, `super::b` or `use crate::{b, …}` while `b` names `a`, neither being the other's
//!   ancestor: a parent and its children may use each other's items).
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The prefix of every package of ours.
const PREFIX: &str = "scalechain-";

/// One crate of the workspace: its short name (the directory under `crates/`) and the short
/// names of the workspace crates it depends on.
#[derive(Debug)]
struct Crate {
    deps: BTreeSet<String>,
    dev: BTreeSet<String>,
}

/// Every crate under `crates/`, by short name.
fn crates() -> BTreeMap<String, Crate> {
    let mut out = BTreeMap::new();
    let dir = root().join("crates");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let manifest = path.join("Cargo.toml");
        if !manifest.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&manifest).unwrap();
        let doc: toml::Table = text.parse().unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
        let name = doc["package"]["name"].as_str().unwrap();
        let short = name.strip_prefix(PREFIX).unwrap_or_else(|| panic!("{name} is not named {PREFIX}…"));
        assert_eq!(
            path.file_name().unwrap().to_str().unwrap(),
            short,
            "{}: a crate's directory is its name without {PREFIX}",
            manifest.display()
        );
        let ours = |key: &str| -> BTreeSet<String> {
            doc.get(key)
                .and_then(|t| t.as_table())
                .map(|t| t.keys().filter_map(|k| k.strip_prefix(PREFIX)).map(str::to_string).collect())
                .unwrap_or_default()
        };
        let mut deps = ours("dependencies");
        deps.extend(ours("build-dependencies"));
        let dev = &ours("dev-dependencies") - &deps;
        out.insert(short.to_string(), Crate { deps, dev });
    }
    out
}

/// Each crate's layer: 0 for a crate that depends on none of ours, else one more than the
/// highest layer among its dependencies.
fn layers(all: &BTreeMap<String, Crate>) -> BTreeMap<String, usize> {
    fn layer(
        name: &str,
        all: &BTreeMap<String, Crate>,
        memo: &mut BTreeMap<String, usize>,
        path: &mut Vec<String>,
    ) -> usize {
        if let Some(&l) = memo.get(name) {
            return l;
        }
        assert!(!path.iter().any(|p| p == name), "a dependency cycle: {path:?} -> {name}");
        path.push(name.to_string());
        let l = all[name].deps.iter().map(|d| layer(d, all, memo, path) + 1).max().unwrap_or(0);
        path.pop();
        memo.insert(name.to_string(), l);
        l
    }
    let mut memo = BTreeMap::new();
    for name in all.keys() {
        layer(name, all, &mut memo, &mut Vec::new());
    }
    memo
}

/// The generated section of `ARCHITECTURE.md`.
fn crate_graph() -> String {
    let all = crates();
    let layer = layers(&all);
    let mut order: Vec<&String> = all.keys().collect();
    order.sort_by_key(|n| (layer[*n], n.to_string()));
    let list = |s: &BTreeSet<String>| {
        let mut v: Vec<&String> = s.iter().collect();
        v.sort_by_key(|n| (layer[*n], n.to_string()));
        if v.is_empty() {
            "—".to_string()
        } else {
            v.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        }
    };
    let mut s = String::new();
    s.push_str("```mermaid\nflowchart BT\n");
    // The picture draws only the edges that no longer path implies (the transitive reduction);
    // the table below lists every dependency.
    let reaches = |from: &str, to: &str, skip: &str| -> bool {
        let mut stack: Vec<&str> = all[from].deps.iter().map(String::as_str).filter(|d| *d != skip).collect();
        let mut seen = BTreeSet::new();
        while let Some(n) = stack.pop() {
            if n == to {
                return true;
            }
            if seen.insert(n) {
                stack.extend(all[n].deps.iter().map(String::as_str));
            }
        }
        false
    };
    for name in &order {
        for dep in &all[*name].deps {
            if !reaches(name, dep, dep) {
                s.push_str(&format!("    {name} --> {dep}\n"));
            }
        }
    }
    s.push_str("```\n\n");
    s.push_str(
        "| layer | crate | depends on | and, for its tests and benchmarks only |\n|---|---|---|---|\n",
    );
    for name in &order {
        let c = &all[*name];
        s.push_str(&format!("| {} | `{name}` | {} | {} |\n", layer[*name], list(&c.deps), list(&c.dev)));
    }
    s.push('\n');
    s
}

const BEGIN: &str =
    "<!-- crate graph: generated from the Cargo.toml files by crates/cli/tests/architecture.rs -->\n";
const END: &str = "<!-- end of the generated crate graph -->\n";

#[test]
fn architecture_md_shows_the_crate_graph_of_the_cargo_files() {
    let path = root().join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let (start, end) = match (text.find(BEGIN), text.find(END)) {
        (Some(s), Some(e)) if s < e => (s + BEGIN.len(), e),
        _ => panic!("ARCHITECTURE.md lacks the markers {BEGIN:?} … {END:?}"),
    };
    let want = crate_graph();
    if std::env::var_os("SCALECHAIN_BLESS").is_some() {
        let new = format!("{}{}{}", &text[..start], want, &text[end..]);
        std::fs::write(&path, new).unwrap();
        return;
    }
    assert!(
        text[start..end] == want,
        "ARCHITECTURE.md's crate graph disagrees with the Cargo.toml files; \
         `SCALECHAIN_BLESS=1 cargo test -p scalechain-cli --test architecture` rewrites it as:\n{want}"
    );
}

#[test]
fn readme_names_every_crate_once() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = text.find("## What is here").expect("README.md has a section \"What is here\"");
    let table = text[start..].split("\n\n").nth(1).unwrap_or_default();
    let rows: Vec<&str> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once("` | ").map(|(name, _)| name))
        .collect();
    let listed: BTreeSet<&str> = rows.iter().copied().collect();
    let all = crates();
    let ours: BTreeSet<&str> = all.keys().map(String::as_str).collect();
    assert_eq!(rows.len(), listed.len(), "README's crate table names a crate twice: {rows:?}");
    assert_eq!(listed, ours, "README's crate table (\"What is here\") against crates/");
}

/// A file's module path within its crate (`src/a/b.rs` and `src/a/b/mod.rs` are `["a", "b"]`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_str().unwrap().to_string()).collect();
    if matches!(parts.last().map(String::as_str), Some("lib" | "main" | "mod")) {
        parts.pop();
    }
    parts
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The text without `//` comments (doc comments name modules without importing them).
fn code(text: &str) -> String {
    text.lines().map(|l| l.find("//").map_or(l, |i| &l[..i])).collect::<Vec<_>>().join("\n")
}

/// The identifier path starting at `s` (`a::b::c`), as its segments.
fn segments(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    loop {
        let n = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
        if n == 0 {
            break;
        }
        out.push(rest[..n].to_string());
        match rest[n..].strip_prefix("::") {
            Some(r) => rest = r,
            None => break,
        }
    }
    out
}

/// The paths a file's code names relative to its crate's root: `crate::…` (with `crate::{…}`
/// groups split), and `super::…` resolved against the file's module.
fn named_paths(module: &[String], text: &str) -> Vec<Vec<String>> {
    let code = code(text);
    let mut out = Vec::new();
    let boundary =
        |i: usize| i == 0 || !code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':');
    for (i, _) in code.match_indices("crate::") {
        if !boundary(i) {
            continue;
        }
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            out.extend(inner.split(',').map(|item| segments(item.trim())));
        } else {
            out.push(segments(rest));
        }
    }
    for (i, _) in code.match_indices("super::") {
        if !boundary(i) {
            continue;
        }
        let mut rest = &code[i..];
        let mut up = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            rest = r;
            up += 1;
        }
        let mut path: Vec<String> = module[..module.len().saturating_sub(up)].to_vec();
        path.extend(segments(rest));
        out.push(path);
    }
    out
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let mut circles = Vec::new();
    for name in crates().keys() {
        let src = root().join("crates").join(name).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let modules: BTreeMap<Vec<String>, PathBuf> =
            files.iter().map(|f| (module_of(&src, f), f.clone())).collect();
        let resolve = |path: &[String]| -> Option<Vec<String>> {
            (0..=path.len()).rev().map(|k| path[..k].to_vec()).find(|p| modules.contains_key(p))
        };
        let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
        for (module, file) in &modules {
            let text = std::fs::read_to_string(file).unwrap();
            let targets = named_paths(module, &text)
                .iter()
                .filter_map(|p| resolve(p))
                .filter(|t| t != module)
                .collect();
            edges.insert(module.clone(), targets);
        }
        let ancestor = |a: &[String], b: &[String]| b.starts_with(a);
        for (a, targets) in &edges {
            for b in targets {
                if a < b && edges[b].contains(a) && !ancestor(a, b) && !ancestor(b, a) {
                    circles.push(format!("{name}: {} <-> {}", a.join("::"), b.join("::")));
                }
            }
        }
    }
    assert!(circles.is_empty(), "modules that import each other:\n{}", circles.join("\n"));
}

#[test]
fn the_circle_check_reads_crate_and_super_paths() {
    // The parser under the check above: a sibling named through `super::` and through a
    // `crate::{…}` group both count; a doc comment does not.
    let m = |s: &str| s.split("::").filter(|p| !p.is_empty()).map(str::to_string).collect::<Vec<_>>();
    let text = "use super::protocol::Topic;\n/// crate::docs\nuse crate::{score, sync::X};";
    assert_eq!(named_paths(&m("msg"), text), vec![m("score"), m("sync::X"), m("protocol::Topic")]);
    assert_eq!(named_paths(&m("a::b"), "use super::super::c;"), vec![m("c")]);
    let text = "fn f() { mycrate::x(); crate::b::c(); }";
    assert_eq!(named_paths(&m("a"), text), vec![m("b::c")]);
}
