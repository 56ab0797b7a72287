//! The layering of `host/src`, checked on every `cargo test`.
//!
//! Each top-level module (a file or folder directly under `host/src`; `main.rs` counts as one
//! more, `main`) has a layer in [`LAYERS`]. A module may name modules of its own layer or a lower
//! one, never a higher one, and the graph of names must have no cycle. The test reads the
//! sources itself, with a small lexer: comments (doc comments included) and string literals are
//! skipped, so an intra-doc link such as [`crate::service`] is not an edge here (rustdoc resolves
//! it, the build does not need it; a doc may point anywhere). Items under `#[cfg(test)]` (or
//! `#[cfg(all(test, ...))]`) are skipped too: a test module may reach for any helper.
//!
//! An edge is a path that names another top-level module: `crate::x::...` (also `$crate`, and in
//! attributes), a `use` tree (`use crate::{x::A, y::{B, C}}`), `super::super::x` climbing to the
//! crate root, and in `main.rs` `toolhost::x`. A name imported by `use` and then written bare is
//! covered by its `use`. A path to a crate-root item that is no module (a re-export in lib.rs)
//! fails the test, since it would hide its module; so does `#[path]`, which the walk from each
//! module's file through its `mod x;` items does not follow. A table entry may name a module
//! not written yet.
//!
//! With the same lexer, [`production_code_takes_its_locks_by_the_one_poisoning_policy`] checks
//! that no production code but `sync.rs` unwraps a std lock or recovers it by hand: the host's
//! one poisoning policy is `crate::sync`'s (`lock`, `read`, `write`, `get_mut`, `into_inner`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The layers, low to high. docs/internals.md ("Layers of `host/src`") shows the same table,
/// which `the_documented_table_is_the_checked_one` compares with this one.
const LAYERS: &[(&str, u8)] = &[
    // 0: no dependency inside the crate beyond this layer.
    ("error", 0),
    ("sync", 0),
    ("sys", 0),
    ("model", 0),
    ("relay", 0),
    ("terminal", 0),
    // 1: configuration data (the sandbox settings too), trust decisions, the byte transport.
    ("config", 1),
    ("trust", 1),
    ("transport", 1),
    // 2: one loaded plugin version and how a call reaches it; the executor's call threads.
    ("plugin", 2),
    ("executor", 2),
    // 3: worker processes (a backend for plugin); what is derived from plugin versions.
    ("worker", 3),
    ("catalog", 3),
    // 4: following the plugin folder.
    ("registry", 4),
    ("plugin_dir", 4),
    // 5: the MCP router.
    ("handler", 5),
    // 6: the loops.
    ("service", 6),
    // 7: front-ends.
    ("chat", 7),
    ("cli", 7),
    ("doctor", 7),
    ("scaffold", 7),
    ("main", 7),
];

/// Upward edges the build still has, each exactly as (file under `host/src`, path it names):
/// left out of both checks. A new upward edge fails the test, and so does an entry no longer
/// found, so the list only shrinks.
const KNOWN_VIOLATIONS: &[(&str, &str)] = &[];

#[test]
fn top_level_modules_respect_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = Graph::read(&src);
    let problems = graph.check(LAYERS, KNOWN_VIOLATIONS);
    assert!(
        problems.is_empty(),
        "the layering of host/src is broken (table in host/tests/layers.rs and docs/internals.md):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_documented_table_is_the_checked_one() {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/internals.md");
    let text = std::fs::read_to_string(&doc).expect("read docs/internals.md");
    let section = text
        .split("\n### Layers of `host/src`\n")
        .nth(1)
        .expect("docs/internals.md has a section \"Layers of `host/src`\"");
    let mut documented = BTreeMap::new();
    for row in section.lines().take_while(|l| !l.starts_with('#')) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let Some(layer) = cells.get(1).and_then(|c| c.parse::<u8>().ok()) else {
            continue;
        };
        for name in cells[2].split('`').skip(1).step_by(2) {
            let name = if name == "main.rs" { "main" } else { name };
            documented.insert(name.to_string(), layer);
        }
    }
    let checked: BTreeMap<String, u8> = LAYERS.iter().map(|&(m, l)| (m.to_string(), l)).collect();
    assert_eq!(
        documented, checked,
        "the table in docs/internals.md (left) differs from LAYERS in host/tests/layers.rs (right)"
    );
}

/// One reference from a file to another top-level module.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Edge {
    /// The file, relative to `host/src`.
    file: String,
    line: usize,
    from: String,
    to: String,
    /// The path as named, from the top-level module on (`worker::host::Worker`).
    path: String,
}

struct Graph {
    /// Every top-level module found under `host/src`.
    modules: BTreeSet<String>,
    edges: Vec<Edge>,
    /// Paths from the crate root to something that is no top-level module (an item re-exported
    /// by lib.rs would hide the module it comes from).
    unplaced: Vec<Edge>,
}

impl Graph {
    fn read(src: &Path) -> Graph {
        let mut modules = BTreeSet::new();
        let mut edges = Vec::new();
        let mut entries: Vec<_> = std::fs::read_dir(src)
            .expect("read host/src")
            .map(|e| e.expect("read host/src").path())
            .collect();
        entries.sort();
        for path in &entries {
            let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
            if path.is_dir() {
                // `x/` holds either `x/mod.rs` or the children of `x.rs`.
                assert!(
                    path.join("mod.rs").is_file() || path.with_extension("rs").is_file(),
                    "{}: a top-level folder without mod.rs or a file of its name",
                    path.display()
                );
                modules.insert(name);
            } else if path.extension().is_some_and(|e| e == "rs") && name != "lib" && name != "main"
            {
                modules.insert(name);
            }
        }
        for top in &modules {
            let file = if src.join(format!("{top}.rs")).is_file() {
                src.join(format!("{top}.rs"))
            } else {
                src.join(top).join("mod.rs")
            };
            walk(src, &file, vec![top.clone()], top, None, &mut edges);
        }
        let main = src.join("main.rs");
        if main.is_file() {
            walk(src, &main, Vec::new(), "main", Some("toolhost"), &mut edges);
        }
        edges.retain(|e| e.from != e.to);
        let (edges, unplaced) = edges.into_iter().partition(|e| modules.contains(&e.to));
        Graph {
            modules,
            edges,
            unplaced,
        }
    }

    fn check(&self, layers: &[(&str, u8)], known: &[(&str, &str)]) -> Vec<String> {
        let layer: BTreeMap<&str, u8> = layers.iter().copied().collect();
        let mut problems = Vec::new();
        for m in self.modules.iter().map(String::as_str).chain(["main"]) {
            if !layer.contains_key(m) {
                problems.push(format!(
                    "module `{m}` has no layer: add it to LAYERS in host/tests/layers.rs and to \
                     docs/internals.md"
                ));
            }
        }
        for e in &self.unplaced {
            problems.push(format!(
                "host/src/{}:{}: `{}` names no top-level module; name the module the item is \
                 defined in (a re-export at the crate root hides the edge from this check)",
                e.file, e.line, e.path
            ));
        }
        let is_known = |e: &Edge| known.iter().any(|&(f, p)| f == e.file && p == e.path);
        for &(file, path) in known {
            if !self.edges.iter().any(|e| e.file == file && e.path == path) {
                problems.push(format!(
                    "KNOWN_VIOLATIONS lists {file} -> {path}, which is no longer there: remove it"
                ));
            }
        }
        let mut kept = Vec::new();
        for e in &self.edges {
            if is_known(e) {
                continue;
            }
            if let (Some(&lf), Some(&lt)) = (layer.get(e.from.as_str()), layer.get(e.to.as_str())) {
                if lt > lf {
                    problems.push(format!(
                        "host/src/{}:{}: {} (layer {lf}) uses {} (layer {lt}), a higher layer: `{}`",
                        e.file, e.line, e.from, e.to, e.path
                    ));
                }
            }
            kept.push(e);
        }
        problems.extend(cycles(&kept));
        problems
    }
}

/// Every cycle's strongly connected component, with one witness line per edge inside it.
fn cycles(edges: &[&Edge]) -> Vec<String> {
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for e in edges {
        next.entry(&e.from).or_default().insert(&e.to);
        next.entry(&e.to).or_default();
    }
    let nodes: Vec<&str> = next.keys().copied().collect();
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from];
        while let Some(n) = todo.pop() {
            for &m in &next[n] {
                if seen.insert(m) {
                    todo.push(m);
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&str, BTreeSet<&str>> = nodes.iter().map(|&n| (n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for &n in &nodes {
        if done.contains(n) || !reachable[n].contains(n) {
            continue;
        }
        let component: BTreeSet<&str> = reachable[n]
            .iter()
            .copied()
            .filter(|m| reachable[m].contains(n))
            .collect();
        done.extend(component.iter().copied());
        let mut msg = format!(
            "cycle between {}:",
            component.iter().copied().collect::<Vec<_>>().join(", ")
        );
        let mut shown = BTreeSet::new();
        for e in edges {
            if component.contains(e.from.as_str())
                && component.contains(e.to.as_str())
                && shown.insert((&e.from, &e.to))
            {
                let _ = write!(
                    msg,
                    "\n    host/src/{}:{}: {} -> {} (`{}`)",
                    e.file, e.line, e.from, e.to, e.path
                );
            }
        }
        out.push(msg);
    }
    out
}

/// Reads one file of module `path` (empty for `main.rs`) and the files its `mod x;` items load.
/// `extern_root` is the library's name when the file belongs to the binary.
fn walk(
    src: &Path,
    file: &Path,
    path: Vec<String>,
    top: &str,
    extern_root: Option<&str>,
    edges: &mut Vec<Edge>,
) {
    let text =
        std::fs::read_to_string(file).unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
    let rel = file
        .strip_prefix(src)
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/");
    let found = scan(&lex(&text), &path, extern_root);
    for r in found.refs {
        edges.push(Edge {
            file: rel.clone(),
            line: r.line,
            from: top.to_owned(),
            to: r.segments[0].clone(),
            path: r.segments.join("::"),
        });
    }
    // Children of `x.rs` live in `x/`, children of `x/mod.rs` (and of main.rs) beside it.
    let stem = file.file_stem().unwrap();
    let dir = if stem == "mod" || stem == "main" || stem == "lib" {
        file.parent().unwrap().to_path_buf()
    } else {
        file.with_extension("")
    };
    for child in found.children {
        let mut base: PathBuf = dir.clone();
        for inline in &child[..child.len() - 1] {
            base.push(inline);
        }
        let name = child.last().unwrap();
        let one = base.join(format!("{name}.rs"));
        let next = if one.is_file() {
            one
        } else {
            base.join(name).join("mod.rs")
        };
        let mut child_path = path.clone();
        child_path.extend(child.iter().cloned());
        walk(src, &next, child_path, top, extern_root, edges);
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
    /// A string literal; only `#[path = "..."]` would need its text.
    Str,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
}

/// Rust tokens as far as paths need them: comments dropped, literals opaque.
fn lex(text: &str) -> Vec<Token> {
    let s: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    let ident_start = |c: char| c == '_' || c.is_alphabetic();
    let ident_cont = |c: char| c == '_' || c.is_alphanumeric();
    let at = |i: usize| s.get(i).copied().unwrap_or('\0');
    // Skips a quoted literal starting at the opening quote `s[i]`; returns the index after it.
    let quoted = |mut i: usize, line: &mut usize| {
        let q = s[i];
        i += 1;
        while i < s.len() && s[i] != q {
            if s[i] == '\\' {
                i += 1;
            }
            if at(i) == '\n' {
                *line += 1;
            }
            i += 1;
        }
        i + 1
    };
    while i < s.len() {
        let c = s[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < s.len() {
                if s[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if s[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if s[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if c == '"' {
            let l = line;
            i = quoted(i, &mut line);
            out.push(Token {
                tok: Tok::Str,
                line: l,
            });
        } else if c == '\'' {
            // A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a, 'static).
            if at(i + 1) == '\\' || at(i + 2) == '\'' {
                i = quoted(i, &mut line);
            } else {
                i += 1;
                while ident_cont(at(i)) {
                    i += 1;
                }
            }
        } else if ident_start(c) {
            let start = i;
            while ident_cont(at(i)) {
                i += 1;
            }
            let word: String = s[start..i].iter().collect();
            let raw_prefix = matches!(word.as_str(), "r" | "br" | "cr");
            if raw_prefix && (at(i) == '"' || (at(i) == '#' && matches!(at(i + 1), '#' | '"'))) {
                // r"..", r#".."#: ends at a quote followed by as many hashes.
                let mut hashes = 0;
                while at(i) == '#' {
                    hashes += 1;
                    i += 1;
                }
                i += 1;
                let l = line;
                loop {
                    if i >= s.len() {
                        break;
                    }
                    if s[i] == '\n' {
                        line += 1;
                    }
                    if s[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                        i += 1 + hashes;
                        break;
                    }
                    i += 1;
                }
                out.push(Token {
                    tok: Tok::Str,
                    line: l,
                });
            } else if word == "r" && at(i) == '#' && ident_start(at(i + 1)) {
                // A raw identifier, r#use: kept with its prefix, so it is no keyword here.
                i += 1;
                while ident_cont(at(i)) {
                    i += 1;
                }
                out.push(Token {
                    tok: Tok::Ident(s[start..i].iter().collect()),
                    line,
                });
            } else if matches!(word.as_str(), "b" | "c") && at(i) == '"' {
                let l = line;
                i = quoted(i, &mut line);
                out.push(Token {
                    tok: Tok::Str,
                    line: l,
                });
            } else if word == "b" && at(i) == '\'' {
                i = quoted(i, &mut line);
            } else {
                out.push(Token {
                    tok: Tok::Ident(word),
                    line,
                });
            }
        } else if c.is_ascii_digit() {
            while ident_cont(at(i)) {
                i += 1;
            }
        } else if c == ':' && at(i + 1) == ':' {
            out.push(Token {
                tok: Tok::Path,
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                tok: Tok::Punct(c),
                line,
            });
            i += 1;
        }
    }
    out
}

/// A path naming something from the crate root on (its first segment is a top-level module).
#[derive(Debug, PartialEq)]
struct Ref {
    line: usize,
    segments: Vec<String>,
}

#[derive(Debug, Default)]
struct Found {
    refs: Vec<Ref>,
    /// `mod x;` items, each as the inline modules around it and its name.
    children: Vec<Vec<String>>,
}

const ITEM_KEYWORDS: &[&str] = &[
    "mod",
    "fn",
    "use",
    "impl",
    "struct",
    "enum",
    "union",
    "const",
    "static",
    "type",
    "trait",
    "extern",
    "unsafe",
    "async",
    "macro_rules",
    "let",
];

/// Finds the paths into other top-level modules and the `mod x;` items of one file, whose module
/// path is `path` (from the crate root).
fn scan(toks: &[Token], path: &[String], extern_root: Option<&str>) -> Found {
    let mut found = Found::default();
    let ident = |i: usize| match toks.get(i).map(|t| &t.tok) {
        Some(Tok::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    let is = |i: usize, t: Tok| toks.get(i).map(|x| &x.tok) == Some(&t);
    // Inline modules open here: (name, brace depth inside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let here = |inline: &Vec<(String, usize)>| {
            let mut p = path.to_vec();
            p.extend(inline.iter().map(|(n, _)| n.clone()));
            p
        };
        match &toks[i].tok {
            Tok::Punct('#') => {
                let inner = is(i + 1, Tok::Punct('!'));
                let open = if inner { i + 2 } else { i + 1 };
                if !is(open, Tok::Punct('[')) {
                    i += 1;
                    continue;
                }
                let close = matching(toks, open);
                if ident(open + 1) == Some("path") {
                    panic!(
                        "#[path] at line {} is not understood by this check",
                        toks[i].line
                    );
                }
                if !inner && test_only(&toks[open + 1..close]) {
                    i = skip_item(toks, close + 1);
                } else {
                    // Paths inside other attributes (`#[derive(crate::x::Y)]`) count.
                    i = open + 1;
                }
                continue;
            }
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Ident(w) if w == "mod" => {
                if let Some(name) = ident(i + 1) {
                    if is(i + 2, Tok::Punct(';')) {
                        let mut child: Vec<String> =
                            inline.iter().map(|(n, _)| n.clone()).collect();
                        child.push(name.to_owned());
                        found.children.push(child);
                        i += 3;
                        continue;
                    }
                    if is(i + 2, Tok::Punct('{')) {
                        depth += 1;
                        inline.push((name.to_owned(), depth));
                        i += 3;
                        continue;
                    }
                }
            }
            Tok::Ident(w) if w == "use" => {
                let end = (i..toks.len())
                    .find(|&k| is(k, Tok::Punct(';')))
                    .unwrap_or(toks.len());
                let mut leaves = Vec::new();
                let mut k = i + 1;
                if is(k, Tok::Path) {
                    k += 1;
                }
                use_tree(toks, &mut k, end, Vec::new(), &mut leaves);
                let module = here(&inline);
                for (line, segs) in leaves {
                    if let Some(segments) = resolve(&segs, &module, extern_root) {
                        found.refs.push(Ref { line, segments });
                    }
                }
                i = end + 1;
                continue;
            }
            Tok::Ident(_) if !(i > 0 && is(i - 1, Tok::Path)) && is(i + 1, Tok::Path) => {
                // The start of a path: take its segments (`a::b::<T>::c` stops at the `<`).
                let line = toks[i].line;
                let mut segs = vec![ident(i).unwrap().to_owned()];
                let mut k = i + 1;
                while is(k, Tok::Path) {
                    match ident(k + 1) {
                        Some(s) => segs.push(s.to_owned()),
                        None => break,
                    }
                    k += 2;
                }
                if i > 0 && is(i - 1, Tok::Punct('$')) && segs[0] != "crate" {
                    segs.clear();
                }
                // `crate::m!()`: a `#[macro_export]` macro at the crate root, no module.
                let root_macro = is(k, Tok::Punct('!'));
                if let Some(segments) = resolve(&segs, &here(&inline), extern_root) {
                    if !(root_macro && segments.len() == 1) {
                        found.refs.push(Ref { line, segments });
                    }
                }
                i = k;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// The index of the bracket closing the one at `open`.
fn matching(toks: &[Token], open: usize) -> usize {
    let mut depth = 0i32;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match t.tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    toks.len() - 1
}

/// Whether an attribute's tokens (inside `#[...]`) are `cfg(test)` or `cfg(all(.., test, ..))`.
fn test_only(attr: &[Token]) -> bool {
    let words: Vec<String> = attr
        .iter()
        .map(|t| match &t.tok {
            Tok::Ident(s) => s.clone(),
            Tok::Punct(c) => c.to_string(),
            Tok::Path => "::".into(),
            Tok::Str => "\"\"".into(),
        })
        .collect();
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    match w.as_slice() {
        ["cfg", "(", "test", ")"] => true,
        ["cfg", "(", "all", "(", rest @ .., ")", ")"] => {
            // `test` among the top-level arguments of all(..).
            let mut depth = 0;
            rest.iter().any(|&t| {
                match t {
                    "(" => depth += 1,
                    ")" => depth -= 1,
                    _ => {}
                }
                depth == 0 && t == "test"
            })
        }
        _ => false,
    }
}

/// Skips the item (or field, argument, statement) starting at `i`, its attributes included.
fn skip_item(toks: &[Token], mut i: usize) -> usize {
    while toks.get(i).map(|t| &t.tok) == Some(&Tok::Punct('#')) {
        let open = if toks.get(i + 1).map(|t| &t.tok) == Some(&Tok::Punct('[')) {
            i + 1
        } else {
            return i;
        };
        i = matching(toks, open) + 1;
    }
    let mut first = i;
    if matches!(toks.get(first).map(|t| &t.tok), Some(Tok::Ident(w)) if w == "pub") {
        first += 1;
        if toks.get(first).map(|t| &t.tok) == Some(&Tok::Punct('(')) {
            first = matching(toks, first) + 1;
        }
    }
    let item = matches!(
        toks.get(first).map(|t| &t.tok),
        Some(Tok::Ident(w)) if ITEM_KEYWORDS.contains(&w.as_str())
    );
    let mut depth = 0i32;
    while i < toks.len() {
        match toks[i].tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']') => depth -= 1,
            Tok::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            Tok::Punct(';') if depth == 0 => return i + 1,
            Tok::Punct(',') if depth == 0 && !item => return i + 1,
            _ => {}
        }
        if depth < 0 {
            // The end of what encloses the field or argument.
            return i;
        }
        i += 1;
    }
    i
}

/// Collects the leaves of the use tree at `toks[*k..end]` as full paths with their line.
fn use_tree(
    toks: &[Token],
    k: &mut usize,
    end: usize,
    prefix: Vec<String>,
    leaves: &mut Vec<(usize, Vec<String>)>,
) {
    let mut segs = prefix;
    let mut line = toks.get(*k).map_or(0, |t| t.line);
    while *k < end {
        match &toks[*k].tok {
            Tok::Ident(w) if w == "as" => {
                *k += 2;
            }
            Tok::Ident(w) => {
                line = toks[*k].line;
                segs.push(w.clone());
                *k += 1;
            }
            Tok::Path => *k += 1,
            Tok::Punct('*') => *k += 1,
            Tok::Punct('{') => {
                *k += 1;
                loop {
                    use_tree(toks, k, end, segs.clone(), leaves);
                    match toks.get(*k).map(|t| &t.tok) {
                        Some(Tok::Punct(',')) => *k += 1,
                        _ => break,
                    }
                    if toks.get(*k).map(|t| &t.tok) == Some(&Tok::Punct('}')) {
                        break;
                    }
                }
                // The closing brace.
                *k += 1;
                return;
            }
            Tok::Punct(',' | '}') => break,
            _ => *k += 1,
        }
    }
    leaves.push((line, segs));
}

/// The path from the crate root on, if `segs` (written in module `module`) leaves the module it
/// is written in for the crate root: `crate::x`, `super::super::x` from `x::a`, `toolhost::x`.
fn resolve(segs: &[String], module: &[String], extern_root: Option<&str>) -> Option<Vec<String>> {
    let first = segs.first()?.as_str();
    // In the library `crate` is the root; in the binary, the library's name is.
    let root = extern_root.unwrap_or("crate");
    let rest = if first == root {
        &segs[1..]
    } else if first == "super" {
        let ups = segs.iter().take_while(|s| *s == "super").count();
        if ups > module.len() {
            panic!("`{}` climbs above the crate root", segs.join("::"));
        }
        if ups < module.len() {
            return None;
        }
        &segs[ups..]
    } else {
        return None;
    };
    if rest.is_empty() || rest[0] == "self" {
        return None;
    }
    Some(rest.to_vec())
}

// The lexer and scanner on the cases the check must get right.

fn refs(src: &str, module: &[&str]) -> Vec<String> {
    let module: Vec<String> = module.iter().map(|s| s.to_string()).collect();
    scan(&lex(src), &module, None)
        .refs
        .into_iter()
        .map(|r| format!("{}:{}", r.line, r.segments.join("::")))
        .collect()
}

#[test]
fn comments_strings_and_literals_name_nothing() {
    let src = r####"
        //! See [`crate::a::X`] and crate::b.
        /// `crate::c::Y`
        /* crate::d /* nested crate::e */ crate::f */
        fn f() {
            let s = "crate::g::h";
            let r = r#"crate::i "still" inside"#;
            let b = b"crate::j";
            let r#use = S { a: crate::l::M };
            let c = '"';
            let l: &'static str = "x";
            let q = '\'';
            let u = '\u{22}';
        }
        fn g() -> crate::k::Z { todo!() }
    "####;
    assert_eq!(refs(src, &["m"]), ["9:l::M", "15:k::Z"]);
}

#[test]
fn use_trees_with_nested_braces() {
    let src = "use crate::{a::{b, c::D}, e, f::*};\nuse crate::g as h;\nuse ::std::fmt;";
    assert_eq!(
        refs(src, &["m"]),
        ["1:a::b", "1:a::c::D", "1:e", "1:f", "2:g"]
    );
    let multi = "use crate::{\n    a::B,\n    c::{self, D},\n};";
    assert_eq!(refs(multi, &["m"]), ["2:a::B", "3:c::self", "3:c::D"]);
}

#[test]
fn super_counts_only_when_it_reaches_the_crate_root() {
    let src = "use super::x;\nfn f() { super::super::y::Z::new(); }\nuse super::super::{p, q::R};";
    assert_eq!(refs(src, &["m", "n"]), ["2:y::Z::new", "3:p", "3:q::R"]);
    // Inside an inline module, one more `super` is needed.
    let inline = "mod inner { fn f() { super::super::a::f(); super::super::super::b::g(); } }";
    assert_eq!(refs(inline, &["m", "n"]), ["1:b::g"]);
}

#[test]
fn test_only_items_are_skipped() {
    let src = "#[cfg(test)]\nmod tests { use crate::a; }\n#[cfg(all(test, unix))]\n#[allow(x)]\nmod more { fn f() { crate::b::f(); } }\n#[cfg(test)]\nuse crate::c;\n#[cfg(not(test))]\nuse crate::d;\nstruct S { #[cfg(test)] t: crate::e::T, u: crate::f::U }\nfn g() { crate::h::g(); }";
    assert_eq!(refs(src, &["m"]), ["9:d", "10:f::U", "11:h::g"]);
    let found = scan(
        &lex("#[cfg(test)]\nmod tests;\nmod real;"),
        &["m".into()],
        None,
    );
    assert_eq!(found.children, [vec!["real".to_string()]]);
}

#[test]
fn the_binary_names_the_library_by_its_crate_name() {
    let src = "use toolhost::{chat, worker::Args};\nfn main() { toolhost::doctor::run(); let f = \"toolhost::registry=warn\"; crate::local(); }";
    let found = scan(&lex(src), &[], Some("toolhost"));
    let got: Vec<String> = found.refs.iter().map(|r| r.segments.join("::")).collect();
    assert_eq!(got, ["chat", "worker::Args", "doctor::run"]);
}

#[test]
fn macro_crate_paths_count() {
    assert_eq!(
        refs("macro_rules! m { () => { $crate::a::b() } }", &["m"]),
        ["1:a::b"]
    );
    // A macro exported at the crate root is no module; one reached through a module is.
    assert_eq!(
        refs("fn f() { crate::m!(); crate::a::m!(); }", &["x"]),
        ["1:a::m"]
    );
}

#[test]
fn paths_in_attributes_count() {
    let src = "#[derive(Debug, crate::a::Derive)]\n#[allow(clippy::x)]\nstruct S;";
    assert_eq!(refs(src, &["m"]), ["1:a::Derive"]);
}

#[test]
fn a_cycle_and_an_upward_edge_are_reported() {
    let edge = |from: &str, to: &str| Edge {
        file: format!("{from}.rs"),
        line: 1,
        from: from.into(),
        to: to.into(),
        path: format!("{to}::X"),
    };
    let graph = Graph {
        modules: ["a", "b", "c"].map(String::from).into(),
        edges: vec![edge("a", "b"), edge("b", "a"), edge("a", "c")],
        unplaced: Vec::new(),
    };
    let problems = graph.check(&[("a", 1), ("b", 1), ("c", 2), ("main", 3)], &[]);
    assert_eq!(
        problems,
        [
            "host/src/a.rs:1: a (layer 1) uses c (layer 2), a higher layer: `c::X`",
            "cycle between a, b:\n    host/src/a.rs:1: a -> b (`b::X`)\n    host/src/b.rs:1: b -> a (`a::X`)",
        ]
    );
    // A known edge is neither an upward one nor part of a cycle; a stale one is reported.
    let problems = graph.check(
        &[("a", 1), ("b", 1), ("c", 2), ("main", 3)],
        &[("a.rs", "c::X"), ("b.rs", "a::X"), ("a.rs", "gone::Y")],
    );
    assert_eq!(
        problems,
        ["KNOWN_VIOLATIONS lists a.rs -> gone::Y, which is no longer there: remove it"]
    );
    let problems = graph.check(&[("a", 1), ("b", 1), ("main", 3)], &[]);
    assert!(
        problems[0].starts_with("module `c` has no layer"),
        "{problems:?}"
    );
}

/// The file holding the host's one lock-poisoning policy: the only one that may unwrap a lock.
const POISONING_POLICY: &str = "sync.rs";

#[test]
fn production_code_takes_its_locks_by_the_one_poisoning_policy() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(
        files.len() > 50,
        "found {} files under host/src",
        files.len()
    );
    let mut problems = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel == POISONING_POLICY {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, what) in lock_misuse(&text) {
            problems.push(format!("{rel}:{line}: {what}"));
        }
    }
    assert!(
        problems.is_empty(),
        "production code takes a lock by hand: use crate::sync::{{lock, read, write, get_mut, \
         into_inner}} (the host's one poisoning policy) instead:\n{}",
        problems.join("\n")
    );
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The tokens of a file without its test-only items.
fn production(toks: &[Token]) -> Vec<Token> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let outer_attr = toks[i].tok == Tok::Punct('#')
            && toks.get(i + 1).map(|t| &t.tok) == Some(&Tok::Punct('['));
        if outer_attr {
            let close = matching(toks, i + 1);
            if test_only(&toks[i + 2..close]) {
                i = skip_item(toks, close + 1);
                continue;
            }
        }
        out.push(toks[i].clone());
        i += 1;
    }
    out
}

/// Where production code in `text` takes a lock's result by hand, with what it does: a
/// `.lock()`, `.read()` or `.write()` unwrapped (`unwrap`, `expect`, `unwrap_or_else`, `ok`,
/// `?`, ...), a poisoned guard recovered with `|e| e.into_inner()`, or `PoisonError` named.
fn lock_misuse(text: &str) -> Vec<(usize, String)> {
    const TAKES: &[&str] = &["lock", "read", "write"];
    const UNWRAPS: &[&str] = &[
        "unwrap",
        "expect",
        "unwrap_or_else",
        "unwrap_or",
        "unwrap_or_default",
        "ok",
        "map_err",
        "is_ok",
        "is_err",
    ];
    let toks = production(&lex(text));
    let tok = |i: usize| toks.get(i).map(|t| &t.tok);
    let ident = |i: usize| match tok(i) {
        Some(Tok::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    let mut found = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if ident(i) == Some("PoisonError") {
            found.push((t.line, "names PoisonError".to_string()));
            continue;
        }
        // `.name()` at `k`, its name checked by the caller.
        let call = |k: usize| {
            tok(k) == Some(&Tok::Punct('.'))
                && tok(k + 2) == Some(&Tok::Punct('('))
                && tok(k + 3) == Some(&Tok::Punct(')'))
        };
        // `.lock()` then `.unwrap()` (or the like) or `?`.
        if let Some(take) = ident(i + 1).filter(|w| TAKES.contains(w) && call(i)) {
            if let Some(then) = ident(i + 5).filter(|w| UNWRAPS.contains(w)) {
                if tok(i + 4) == Some(&Tok::Punct('.')) {
                    found.push((t.line, format!(".{take}().{then}")));
                }
            } else if tok(i + 4) == Some(&Tok::Punct('?')) {
                found.push((t.line, format!(".{take}()?")));
            }
        }
        // `unwrap_or_else(|e| e.into_inner())`: a poisoned guard recovered by hand.
        let recovering = i >= 2
            && ident(i - 2) == Some("unwrap_or_else")
            && tok(i - 1) == Some(&Tok::Punct('('))
            && t.tok == Tok::Punct('|');
        if let Some(e) = ident(i + 1).filter(|_| recovering) {
            if tok(i + 2) == Some(&Tok::Punct('|'))
                && ident(i + 3) == Some(e)
                && ident(i + 5) == Some("into_inner")
                && call(i + 4)
            {
                found.push((t.line, format!("recovers by hand: |{e}| {e}.into_inner()")));
            }
        }
    }
    found
}

#[test]
fn lock_misuse_is_found_in_production_code_only() {
    let src = r#"
        fn f(m: &Mutex<u8>, rw: &RwLock<u8>) -> Result<(), E> {
            let a = m.lock().unwrap();
            let b = rw
                .read()
                .expect("poisoned");
            let c = rw.write().unwrap_or_else(|e| e.into_inner());
            let d = m.lock()?;
            let e = m.lock().unwrap_or_else(PoisonError::into_inner);
            let ok = crate::sync::lock(m);
            let also_ok = crate::sync::read(rw).clone();
            let not_a_lock = pipe.read();
            let buffered = writers.map(|w| w.into_inner());
            let s = "m.lock().unwrap()"; // m.lock().unwrap()
            #[cfg(test)]
            let t = m.lock().unwrap();
        }
        #[cfg(all(test, not(feature = "loom")))]
        mod tests {
            fn g(m: &Mutex<u8>) { m.lock().unwrap(); }
        }
    "#;
    let found: Vec<String> = lock_misuse(src)
        .into_iter()
        .map(|(line, what)| format!("{line}: {what}"))
        .collect();
    assert_eq!(
        found,
        [
            "3: .lock().unwrap",
            "5: .read().expect",
            "7: .write().unwrap_or_else",
            "7: recovers by hand: |e| e.into_inner()",
            "8: .lock()?",
            "9: .lock().unwrap_or_else",
            "9: names PoisonError",
        ]
    );
}
