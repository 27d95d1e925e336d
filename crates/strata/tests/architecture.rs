//! The house rules, checked on the workspace's sources: no module imports another in a
//! cycle, in any crate; the engine's module map in `docs/architecture.md` is the code's
//! (every top-level module has a row, every import goes down the table to a module its
//! row names); every invariant id is defined once and documented.
//!
//! How edges are read (no compiler involved, so the rules stay simple and the reasons
//! printable): every `use` tree and every `crate::`, `super::` and `self::` path, and every
//! path through a child module a file declares (`mod x;` then `x::...`), names a module
//! and maybe an item in it. A name a module re-exports (`pub use child::Item`) resolves to
//! the module it comes from. Test code (`tests.rs` files, `#[cfg(test)] mod` blocks) is
//! left out: tests may reach anywhere.
//!
//! At each module `P`, the nodes are its children's subtrees; an edge from one to another
//! is any import from inside the first into the second. `P`'s own file (a `mod.rs` or the
//! crate root: the traits and types its children share, the API over them, re-exports)
//! is no node: its children may use it and it may use them, as LevelDB's `db_impl.cc`
//! and its helpers do. Every strongly connected set of siblings larger than one is a
//! cycle, printed with one import per edge.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path inside a crate, `[]` for the crate root.
type ModPath = Vec<String>;

struct Module {
    file: PathBuf,
    /// The file's code with comments, strings and test modules removed.
    code: String,
    children: BTreeSet<String>,
}

struct Crate {
    name: String,
    modules: BTreeMap<ModPath, Module>,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file below `dir` (none if it does not exist), `target/` left out.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                if !p.ends_with("target") {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Source files under `src/` as module paths (`a/mod.rs` and `a.rs` are `a`).
fn load_crate(dir: &Path) -> Crate {
    let src = dir.join("src");
    let mut modules = BTreeMap::new();
    for p in rust_files(&src) {
        let rel = p.strip_prefix(&src).unwrap();
        let mut parts: Vec<String> = rel
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        let last = parts.pop().unwrap();
        let stem = last.trim_end_matches(".rs").to_string();
        if parts.is_empty() && (stem == "lib" || stem == "main") {
            // the crate root
        } else if stem != "mod" {
            parts.push(stem);
        }
        if parts.last().is_some_and(|s| s == "tests") || rel.starts_with("bin") {
            continue; // test modules, and binaries (crates of their own)
        }
        let code = strip(&std::fs::read_to_string(&p).unwrap());
        let children = declared_modules(&code);
        modules.insert(
            parts,
            Module {
                file: p,
                code,
                children,
            },
        );
    }
    let name = dir.file_name().unwrap().to_string_lossy().replace('-', "_");
    Crate { name, modules }
}

/// `code` without comments, string and char literals' contents, and `#[cfg(test)]`
/// modules.
fn strip(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let end = code[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
            i = end;
        } else if b[i] == b'"' || (b[i..].starts_with(b"r#\"") || b[i..].starts_with(b"r\"")) {
            // Raw strings: skip to the matching quote and hashes.
            let (open, hashes) = if b[i] == b'r' {
                let h = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                (i + 1 + h + 1, h)
            } else {
                (i + 1, usize::MAX)
            };
            let mut j = open;
            loop {
                if j >= b.len() {
                    break;
                }
                if hashes == usize::MAX && b[j] == b'\\' {
                    j += 2;
                    continue;
                }
                if b[j] == b'"' {
                    let h = if hashes == usize::MAX { 0 } else { hashes };
                    if b[j + 1..].iter().take(h).filter(|&&c| c == b'#').count() == h {
                        j += 1 + h;
                        break;
                    }
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let lit = code[i..].char_indices().nth(2);
            match lit {
                Some((n, '\'')) => {
                    out.push_str("' '");
                    i += n + 1;
                }
                _ if b.get(i + 1) == Some(&b'\\') => {
                    let end = code[i + 2..].find('\'').map_or(b.len(), |e| i + 2 + e + 1);
                    out.push_str("' '");
                    i = end;
                }
                _ => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let c = code[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    remove_test_modules(&out)
}

fn remove_test_modules(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        let item_end = if trimmed.starts_with("mod ") {
            // `mod x;` (a file: skipped as a test file) or `mod x { ... }`.
            let semi = trimmed.find(';');
            let brace = trimmed.find('{');
            match (semi, brace) {
                (Some(s), Some(b)) if s < b => s + 1,
                (_, Some(b)) => matching_brace(trimmed, b),
                (Some(s), None) => s + 1,
                (None, None) => trimmed.len(),
            }
        } else {
            // Some other test-only item: keep it (it is rare and small).
            0
        };
        rest = &trimmed[item_end..];
    }
    out.push_str(rest);
    out
}

fn matching_brace(s: &str, open: usize) -> usize {
    let mut depth = 0;
    for (i, c) in s[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open + i + 1;
                }
            }
            _ => {}
        }
    }
    s.len()
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Names of the modules a file declares (`mod x;`, `pub mod x;`, `pub(crate) mod x;`).
fn declared_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("mod ") {
        if at > 0 && code[..at].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let name: String = code[at + 4..]
            .chars()
            .take_while(|&c| is_ident(c))
            .collect();
        let after = code[at + 4 + name.len()..].trim_start();
        if !name.is_empty() && after.starts_with(';') {
            out.insert(name);
        }
    }
    out
}

/// Every `use` statement's leaves as full paths (`a::b::{c, d::e}` gives `a::b::c` and
/// `a::b::d::e`; `self` leaves give their prefix; `x as y` gives `x`), with whether the
/// statement is `pub`.
fn use_paths(code: &str) -> Vec<(Vec<String>, bool)> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("use ") {
        if at > 0 && code[..at].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let before = code[..at].trim_end();
        let public = before.ends_with("pub") || before.ends_with(')') && before.contains("pub(");
        let Some(end) = code[at..].find(';') else {
            continue;
        };
        // Renames become `@` (`x as y` -> `x@y`), then whitespace goes.
        let tree = code[at + 4..at + end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace(" as ", "@")
            .replace(' ', "");
        let tree = tree.trim_start_matches("::");
        expand(tree, &mut Vec::new(), &mut |p| out.push((p, public)));
    }
    out
}

fn expand(tree: &str, prefix: &mut Vec<String>, emit: &mut dyn FnMut(Vec<String>)) {
    // Split at the top-level `{`.
    if let Some(open) = tree.find('{') {
        let head = &tree[..open];
        let close = matching_brace(tree, open);
        let inner = &tree[open + 1..close.saturating_sub(1)];
        let n = prefix.len();
        prefix.extend(head.split("::").filter(|s| !s.is_empty()).map(String::from));
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&inner[start..i], prefix, emit);
                    start = i + 1;
                }
                _ => {}
            }
        }
        if start < inner.len() {
            expand(&inner[start..], prefix, emit);
        }
        prefix.truncate(n);
    } else {
        let mut p = prefix.clone();
        for seg in tree.split("::") {
            let seg = seg.split('@').next().unwrap_or(seg);
            if !seg.is_empty() && seg != "self" {
                p.push(seg.to_string());
            }
        }
        emit(p);
    }
}

/// Every `crate::`/`super::`/`self::` path outside `use` statements, and every path
/// through a declared child module (`child::...`).
fn inline_paths(code: &str, children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = code.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        if is_ident(c) && (i == 0 || !is_ident(chars[i - 1].1) && chars[i - 1].1 != ':') {
            let word: String = code[at..]
                .chars()
                .take_while(|&c| is_ident(c) || c == ':')
                .collect();
            let segs: Vec<String> = word
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            let first = segs.first().map(String::as_str).unwrap_or("");
            if segs.len() > 1
                && (first == "crate"
                    || first == "super"
                    || first == "self"
                    || children.contains(first))
            {
                out.push(segs.clone());
            }
            i += word.chars().count().max(1);
        } else {
            i += 1;
        }
    }
    out
}

impl Crate {
    /// Resolves `path`, written in module `from`, to the module that defines what it
    /// names; `None` for paths outside the crate.
    fn resolve(&self, from: &ModPath, path: &[String], depth: usize) -> Option<ModPath> {
        let mut segs = path.iter().peekable();
        let mut at: ModPath = match segs.peek().map(|s| s.as_str()) {
            Some("crate") => {
                segs.next();
                Vec::new()
            }
            Some(n) if n == self.name => {
                segs.next();
                Vec::new()
            }
            Some("super") => {
                let mut m = from.clone();
                while segs.peek().is_some_and(|s| *s == "super") {
                    segs.next();
                    m.pop()?;
                }
                m
            }
            Some("self") => {
                segs.next();
                from.clone()
            }
            Some(first) if self.modules.get(from)?.children.contains(first) => from.clone(),
            _ => return None,
        };
        for seg in segs {
            let mut next = at.clone();
            next.push(seg.clone());
            if self.modules.contains_key(&next) {
                at = next;
                continue;
            }
            // An item of `at`: follow it if `at` re-exports it from elsewhere.
            if depth < 8
                && let Some(target) = self.reexport(&at, seg, depth)
            {
                return Some(target);
            }
            break;
        }
        Some(at)
    }

    /// Where module `m` takes `name` from, if it re-exports it (`pub use x::name`).
    fn reexport(&self, m: &ModPath, name: &str, depth: usize) -> Option<ModPath> {
        let module = self.modules.get(m)?;
        for (path, public) in use_paths(&module.code) {
            if public && path.last().is_some_and(|l| l == name) {
                return self.resolve(m, &path, depth + 1);
            }
        }
        None
    }

    /// Every import edge (from, to, what was written), between distinct modules.
    fn edges(&self) -> Vec<(ModPath, ModPath, String)> {
        let mut out = Vec::new();
        for (m, module) in &self.modules {
            let mut paths: Vec<Vec<String>> = use_paths(&module.code)
                .into_iter()
                .map(|(p, _)| p)
                .collect();
            paths.extend(inline_paths(&module.code, &module.children));
            for p in paths {
                if let Some(to) = self.resolve(m, &p, 0)
                    && &to != m
                {
                    out.push((m.clone(), to, p.join("::")));
                }
            }
        }
        out
    }
}

/// At each module, the cycles among its own file and its children's subtrees.
fn cycles(krate: &Crate) -> Vec<String> {
    let edges = krate.edges();
    let mut found = Vec::new();
    for parent in krate.modules.keys() {
        // Node of `m` at `parent`'s level: "." for the parent's own file, else the child.
        let node = |m: &ModPath| -> Option<String> {
            if !m.starts_with(parent) {
                return None;
            }
            Some(
                m.get(parent.len())
                    .cloned()
                    .unwrap_or_else(|| ".".to_string()),
            )
        };
        let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (from, to, what) in &edges {
            if let (Some(a), Some(b)) = (node(from), node(to))
                && a != b
                && a != "."
                && b != "."
            {
                let why = format!("{} uses {what}", krate.modules[from].file.display());
                graph.entry(a).or_default().entry(b).or_insert(why);
            }
        }
        for scc in strongly_connected(&graph) {
            if scc.len() < 2 {
                continue;
            }
            let mut lines = vec![format!(
                "{}: cycle in `{}` among {:?}:",
                krate.name,
                if parent.is_empty() {
                    "crate".to_string()
                } else {
                    parent.join("::")
                },
                scc
            )];
            for a in &scc {
                for (b, why) in graph.get(a).into_iter().flatten() {
                    if scc.contains(b) {
                        lines.push(format!("  {a} -> {b}: {why}"));
                    }
                }
            }
            found.push(lines.join("\n"));
        }
    }
    found
}

/// Tarjan's strongly connected components.
fn strongly_connected(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<BTreeSet<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeMap<String, String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(next) = s.graph.get(v) {
            for w in next.keys() {
                if !s.index.contains_key(w.as_str()) {
                    visit(s, w);
                    let lw = s.low[w.as_str()];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(lw));
                } else if s.on_stack.contains(w.as_str()) {
                    let iw = s.index[w.as_str()];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(iw));
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut scc = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                scc.insert(w.to_string());
                if w == v {
                    break;
                }
            }
            s.out.push(scc);
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    let nodes: BTreeSet<&str> = graph
        .iter()
        .flat_map(|(a, bs)| std::iter::once(a.as_str()).chain(bs.keys().map(String::as_str)))
        .collect();
    for v in nodes {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// Every crate of the workspace: under `crates/` and `integrations/`.
fn crate_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for root in ["crates", "integrations"] {
        for e in std::fs::read_dir(workspace().join(root)).unwrap() {
            dirs.push(e.unwrap().path());
        }
    }
    dirs.sort();
    dirs
}

#[test]
fn no_module_imports_another_in_a_cycle() {
    let mut all = Vec::new();
    for dir in crate_dirs() {
        if dir.join("src").is_dir() {
            all.extend(cycles(&load_crate(&dir)));
        }
    }
    assert!(all.is_empty(), "{} cycles:\n{}", all.len(), all.join("\n"));
}

/// The checker itself: a cycle made of a `use` and an inline path is found, a parent's
/// re-export is followed, a test module is ignored.
#[test]
fn the_checker_finds_a_cycle_and_only_a_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("toy").join("src");
    std::fs::create_dir_all(src.join("db")).unwrap();
    let write = |p: &str, s: &str| std::fs::write(src.join(p), s).unwrap();
    write("lib.rs", "mod db;\nmod key;\npub use db::Db;\n");
    write(
        "key.rs",
        "pub struct Key;\n#[cfg(test)]\nmod tests { use crate::db::Db; }\n",
    );
    write(
        "db/mod.rs",
        "mod write;\nmod flush;\npub use write::Writer;\npub struct Db(crate::key::Key);\n",
    );
    write(
        "db/write.rs",
        "use super::flush::Flush; // uses flush\npub struct Writer;\n",
    );
    write(
        "db/flush.rs",
        "pub struct Flush;\nfn f() { let _ = super::Writer; }\n",
    );
    let found = cycles(&load_crate(&dir.path().join("toy")));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("cycle in `db` among {\"flush\", \"write\"}"),
        "{}",
        found[0]
    );
    // Without the inline path back, no cycle: key's test module does not count either.
    write("db/flush.rs", "pub struct Flush;\n");
    assert!(cycles(&load_crate(&dir.path().join("toy"))).is_empty());
}

/// An invariant's definition: where it is stated.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Definition {
    id: String,
    /// The file, as `docs/design.md` names it: under `crates/strata/src/`, or from
    /// `crates/` for another crate.
    file: String,
}

fn is_id(s: &str) -> bool {
    let letters = s.chars().take_while(|c| c.is_ascii_uppercase()).count();
    let digits = s[letters..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .count();
    (1..=2).contains(&letters) && (1..=2).contains(&digits) && letters + digits == s.len()
}

/// Every `//! - ID text` line of every crate's sources (test files included: none may
/// define an id).
fn invariant_definitions() -> Vec<Definition> {
    let crates = workspace().join("crates");
    let mut out = Vec::new();
    for dir in crate_dirs() {
        let src = dir.join("src");
        for p in rust_files(&src) {
            let file = match (
                p.strip_prefix(crates.join("strata/src")),
                p.strip_prefix(&crates),
            ) {
                (Ok(rel), _) | (_, Ok(rel)) => rel.display().to_string(),
                _ => p.strip_prefix(workspace()).unwrap().display().to_string(),
            };
            for line in std::fs::read_to_string(&p).unwrap().lines() {
                let Some(rest) = line.trim_start().strip_prefix("//! - ") else {
                    continue;
                };
                let id = rest.split_whitespace().next().unwrap_or("");
                if is_id(id) {
                    out.push(Definition {
                        id: id.to_string(),
                        file: file.clone(),
                    });
                }
            }
        }
    }
    out.sort();
    out
}

/// The rows of `docs/design.md`'s invariant table.
fn documented_invariants() -> Vec<Definition> {
    let design = std::fs::read_to_string(workspace().join("docs/design.md")).unwrap();
    let mut out = Vec::new();
    for line in design.lines() {
        let line = line.replace("\\|", "/"); // an escaped `|` inside a cell
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() == 5 && is_id(cells[1]) {
            out.push(Definition {
                id: cells[1].to_string(),
                file: cells[3].trim_matches('`').to_string(),
            });
        }
    }
    out.sort();
    out
}

/// The durability clauses (`| C1 | ...` rows of `docs/durability.md`).
fn durability_clauses() -> BTreeSet<String> {
    let text = std::fs::read_to_string(workspace().join("docs/durability.md")).unwrap();
    text.lines()
        .filter_map(|l| l.split('|').nth(1).map(str::trim))
        .filter(|c| is_id(c))
        .map(String::from)
        .collect()
}

/// Ids cited in the sources' comments as `(ID)`, `(ID, ID)` or `(ID-ID)`: each group in
/// parentheses made only of ids, with the file it is in.
fn cited_invariants() -> Vec<(String, String)> {
    let crates = workspace().join("crates");
    let mut out = Vec::new();
    for p in rust_files(&crates) {
        for line in std::fs::read_to_string(&p).unwrap().lines() {
            let Some(at) = line.find("//") else {
                continue;
            };
            let comment = &line[at..];
            let mut rest = comment;
            while let Some(open) = rest.find('(') {
                let Some(close) = rest[open..].find(')') else {
                    break;
                };
                let group = &rest[open + 1..open + close];
                let words: Vec<&str> = group
                    .split(|c: char| c == ',' || c == '-' || c == '–' || c.is_whitespace())
                    .filter(|w| !w.is_empty() && *w != "and")
                    .collect();
                if !words.is_empty() && words.iter().all(|w| is_id(w)) {
                    for w in words {
                        out.push((w.to_string(), p.display().to_string()));
                    }
                }
                rest = &rest[open + close + 1..];
            }
        }
    }
    out
}

#[test]
fn every_invariant_is_defined_once_and_documented() {
    let defined = invariant_definitions();
    let documented = documented_invariants();
    let clauses = durability_clauses();
    let mut problems = Vec::new();
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for d in &defined {
        if let Some(other) = seen.insert(&d.id, &d.file) {
            problems.push(format!(
                "{} is defined twice: in {other} and {}",
                d.id, d.file
            ));
        }
        if clauses.contains(&d.id) {
            problems.push(format!(
                "{} in {} is also a durability clause",
                d.id, d.file
            ));
        }
        if !documented.contains(d) {
            problems.push(format!(
                "{} ({}) is not in docs/design.md's table under that file",
                d.id, d.file
            ));
        }
    }
    for d in &documented {
        if !defined.contains(d) {
            problems.push(format!(
                "docs/design.md lists {} in {}, which does not define it",
                d.id, d.file
            ));
        }
    }
    let known: BTreeSet<&str> = defined
        .iter()
        .map(|d| d.id.as_str())
        .chain(clauses.iter().map(String::as_str))
        .collect();
    for (id, file) in cited_invariants() {
        if !known.contains(id.as_str()) {
            problems.push(format!("{file} cites {id}, which is defined nowhere"));
        }
    }
    problems.sort();
    problems.dedup();
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// One row of the module map in `docs/architecture.md`: a top-level module of the engine
/// and what it may import (`None`: "all" or "all of the above", any module above it).
#[derive(Debug, Clone, PartialEq, Eq)]
struct MapRow {
    module: String,
    may_import: Option<BTreeSet<String>>,
}

/// The rows of the "Module map" table of `text`, top to bottom: the layers, lowest first.
fn module_map(text: &str) -> Vec<MapRow> {
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("Module map"))
        .expect("docs/architecture.md has a \"Module map\" section");
    let backticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(|s| s.trim_end_matches(".rs").trim_end_matches('/').to_string())
            .collect()
    };
    let mut rows = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        assert!(cells.len() >= 4, "a module map row has four cells: {line}");
        let module = backticked(cells[0]).into_iter().next().unwrap_or_default();
        if module == "lib" {
            continue; // the crate root: its row says it re-exports every layer
        }
        let may_import = (!cells[2].trim_start().starts_with("all"))
            .then(|| backticked(cells[2]).into_iter().collect());
        rows.push(MapRow { module, may_import });
    }
    rows
}

/// What breaks the map: a top-level module missing from it or a row naming none, an
/// import of a module listed below the importer (a higher layer), an import its row does
/// not name. Edges are (from, to, what was written), as `Crate::edges` gives them.
fn map_violations(
    map: &[MapRow],
    modules: &BTreeSet<String>,
    edges: &[(ModPath, ModPath, String)],
) -> Vec<String> {
    let mut out = Vec::new();
    let position = |m: &str| map.iter().position(|r| r.module == m);
    for m in modules {
        if position(m).is_none() {
            out.push(format!("module `{m}` is missing from the module map"));
        }
    }
    for r in map {
        if !modules.contains(&r.module) {
            out.push(format!(
                "the module map names `{}`, which is no module",
                r.module
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for (from, to, written) in edges {
        let (Some(a), Some(b)) = (from.first(), to.first()) else {
            continue; // the crate root (lib.rs) re-exports every layer
        };
        if a == b || !seen.insert((a.clone(), b.clone())) {
            continue;
        }
        let (Some(pa), Some(pb)) = (position(a), position(b)) else {
            continue; // reported above
        };
        if pb > pa {
            out.push(format!(
                "`{a}` imports `{b}` (`{written}`), a layer above it in the module map"
            ));
        } else if let Some(allowed) = &map[pa].may_import
            && !allowed.contains(b)
        {
            out.push(format!(
                "`{a}` imports `{b}` (`{written}`), which its row's \"depends on\" does not name"
            ));
        }
    }
    out
}

/// `docs/architecture.md`'s module map is the engine's: every top-level module has a row,
/// every import goes down the table to a module its row names.
#[test]
fn the_module_map_is_the_code() {
    let text = std::fs::read_to_string(workspace().join("docs/architecture.md")).unwrap();
    let map = module_map(&text);
    let krate = load_crate(&workspace().join("crates/strata"));
    let modules: BTreeSet<String> = krate.modules[&Vec::new()].children.clone();
    let found = map_violations(&map, &modules, &krate.edges());
    assert!(
        found.is_empty(),
        "{} differences between docs/architecture.md and the code:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The map check itself: an import up the table, an import the row does not name, a
/// module without a row and a row without a module are each found; the real shape
/// passes.
#[test]
fn the_map_check_finds_an_upward_import_and_a_missing_module() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("toy").join("src");
    std::fs::create_dir_all(&src).unwrap();
    let write = |p: &str, s: &str| std::fs::write(src.join(p), s).unwrap();
    write("lib.rs", "mod low;\nmod mid;\nmod high;\nmod stray;\n");
    write("low.rs", "pub struct Low;\n");
    write("mid.rs", "use crate::low::Low;\npub struct Mid(Low);\n");
    write("high.rs", "use crate::mid::Mid;\npub struct High(Mid);\n");
    write("stray.rs", "pub struct Stray;\n");
    let krate = load_crate(&dir.path().join("toy"));
    let modules = krate.modules[&Vec::new()].children.clone();
    let doc = |rows: &str| {
        format!(
            "# A\n\n## Module map\n\n| module | owns | depends on | t |\n|---|---|---|---|\n{rows}\n## Next\n"
        )
    };
    let good = doc(
        "| `low.rs` | l | — | - |\n| `mid.rs` | m | `low` | - |\n| `high.rs` | h | all of the above | - |\n| `stray.rs` | s | — | - |\n| `lib.rs` | r | all | - |\n",
    );
    assert_eq!(
        map_violations(&module_map(&good), &modules, &krate.edges()),
        Vec::<String>::new()
    );
    // `mid` listed above `low`, which it imports; `stray` left out; a row for a ghost.
    let bad = doc(
        "| `mid.rs` | m | `low` | - |\n| `low.rs` | l | — | - |\n| `high.rs` | h | `low` | - |\n| `ghost.rs` | g | — | - |\n",
    );
    let found = map_violations(&module_map(&bad), &modules, &krate.edges());
    assert_eq!(
        found,
        [
            "module `stray` is missing from the module map",
            "the module map names `ghost`, which is no module",
            "`high` imports `mid` (`crate::mid::Mid`), which its row's \"depends on\" does not name",
            "`mid` imports `low` (`crate::low::Low`), a layer above it in the module map",
        ]
    );
}
