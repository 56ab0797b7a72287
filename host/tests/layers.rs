//! The layering of the modules still in `host/src`, checked on every `cargo test`.
//!
//! Layers 0 to 5 are crates of their own (crates/, docs/internals.md "The crates"): Cargo keeps
//! them from naming anything above. The modules left here (the loops, the front ends) each have
//! a layer in [`LAYERS`]. A module may name modules of its own layer or a lower
//! one, never a higher one, and the graph of names must have no cycle. The test reads the
//! sources itself with `syn`, so comments (doc comments included) and string literals name
//! nothing: an intra-doc link such as [`crate::service`] is not an edge here (rustdoc resolves
//! it, the build does not need it; a doc may point anywhere). Items under `#[cfg(test)]` (or
//! `#[cfg(all(test, ...))]`) are skipped too: a test module may reach for any helper.
//!
//! An edge is a path that names another top-level module: `crate::x::...` (also `$crate`, and in
//! attributes and macro input, read as tokens), a `use` tree (`use crate::{x::A, y::{B, C}}`),
//! `super::super::x` climbing to the crate root. A name imported by `use` and then written bare
//! is covered by its `use`. A path to a crate-root item that is neither a module here nor a
//! module re-exported from the crates below fails the test, since it would hide its module; so
//! does `#[path]`, which the walk from each module's file through its `mod x;` items does not
//! follow. A table entry may name a module not written yet. `main.rs` is not read: nothing can
//! name the binary, so it can close no cycle and go up to nothing.
//!
//! The lock-poisoning policy this file also checked once is clippy's now (crates/clippy.toml).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::visit_mut::{self, VisitMut};
use syn::{Attribute, ItemMod, ItemUse, Macro, Meta, Path as SynPath, Token, UseTree};

/// The layers, low to high (0 to 5 are the crates below `host`). docs/internals.md ("Layers of
/// `host/src`") shows the same table, which `the_documented_table_is_the_checked_one` compares
/// with this one.
const LAYERS: &[(&str, u8)] = &[
    // 6: the loops.
    ("service", 6),
    // 7: front-ends.
    ("chat", 7),
    ("cli", 7),
    ("doctor", 7),
    ("scaffold", 7),
    ("main", 7),
];

#[test]
fn top_level_modules_respect_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = Graph::read(&src, &lower_modules());
    let problems = graph.check(LAYERS);
    assert!(
        problems.is_empty(),
        "the layering of host/src is broken (table in host/tests/layers.rs and docs/internals.md):\n{}",
        problems.join("\n")
    );
}

/// The modules host/src/lib.rs re-exports from the crates below `host` (`pub use toolhost_x::{…}`,
/// `pub use toolhost_engine as handler`), by the names it gives them: paths to them are Cargo's
/// to check.
fn lower_modules() -> BTreeSet<String> {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).expect("read host/src/lib.rs");
    let file = syn::parse_file(&text).expect("parse host/src/lib.rs");
    let mut names = BTreeSet::new();
    for item in &file.items {
        if let syn::Item::Use(u) = item {
            reexported(&u.tree, false, &mut names);
        }
    }
    assert!(
        names.contains("registry") && names.contains("handler"),
        "found {names:?} re-exported by host/src/lib.rs"
    );
    names
}

/// The names a `use` tree brings in from a `toolhost_*` crate (`below`: under one already).
fn reexported(tree: &UseTree, below: bool, names: &mut BTreeSet<String>) {
    let from_below = |ident: &Ident| below || ident.to_string().starts_with("toolhost_");
    match tree {
        UseTree::Path(p) => reexported(&p.tree, from_below(&p.ident), names),
        UseTree::Group(g) => g.items.iter().for_each(|t| reexported(t, below, names)),
        UseTree::Name(n) if below => {
            names.insert(n.ident.to_string());
        }
        UseTree::Rename(r) if from_below(&r.ident) => {
            names.insert(r.rename.to_string());
        }
        _ => {}
    }
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
    /// Paths from the crate root to something that is no top-level module here nor below (an
    /// item re-exported by lib.rs would hide the module it comes from).
    unplaced: Vec<Edge>,
}

impl Graph {
    fn read(src: &Path, lower: &BTreeSet<String>) -> Graph {
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
            walk(src, &file, vec![top.clone()], top, &mut edges);
        }
        edges.retain(|e| e.from != e.to && !lower.contains(&e.to));
        let (edges, unplaced) = edges.into_iter().partition(|e| modules.contains(&e.to));
        Graph {
            modules,
            edges,
            unplaced,
        }
    }

    fn check(&self, layers: &[(&str, u8)]) -> Vec<String> {
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
        for e in &self.edges {
            if let (Some(&lf), Some(&lt)) = (layer.get(e.from.as_str()), layer.get(e.to.as_str())) {
                if lt > lf {
                    problems.push(format!(
                        "host/src/{}:{}: {} (layer {lf}) uses {} (layer {lt}), a higher layer: `{}`",
                        e.file, e.line, e.from, e.to, e.path
                    ));
                }
            }
        }
        problems.extend(cycles(&self.edges.iter().collect::<Vec<_>>()));
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

/// Reads one file of module `path` and the files its `mod x;` items load.
fn walk(src: &Path, file: &Path, path: Vec<String>, top: &str, edges: &mut Vec<Edge>) {
    let text =
        std::fs::read_to_string(file).unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
    let rel = file
        .strip_prefix(src)
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/");
    let found = scan(&text, &path);
    for r in found.refs {
        edges.push(Edge {
            file: rel.clone(),
            line: r.line,
            from: top.to_owned(),
            to: r.segments[0].clone(),
            path: r.segments.join("::"),
        });
    }
    // Children of `x.rs` live in `x/`, children of `x/mod.rs` beside it.
    let stem = file.file_stem().unwrap();
    let dir = if stem == "mod" {
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
        walk(src, &next, child_path, top, edges);
    }
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

/// Finds the paths into other top-level modules and the `mod x;` items of one file, whose module
/// path is `path` (from the crate root).
fn scan(text: &str, path: &[String]) -> Found {
    let mut paths = Paths {
        module: path.to_vec(),
        inline: Vec::new(),
        found: Found::default(),
    };
    paths.visit_file(&production(text));
    paths.found
}

/// The syntax tree of a file without its test-only items.
fn production(text: &str) -> syn::File {
    let mut file = syn::parse_file(text).unwrap_or_else(|e| panic!("parse: {e}"));
    StripTests.visit_file_mut(&mut file);
    file
}

fn line(span: Span) -> usize {
    span.start().line
}

/// Walks one file for [`scan`].
struct Paths {
    /// The module being read, from the crate root (inline modules included).
    module: Vec<String>,
    /// The inline modules open here, in this file.
    inline: Vec<String>,
    found: Found,
}

impl Paths {
    /// Records `segs`, written at `line`, if it leaves for the crate root. `crate::m!()` names a
    /// `#[macro_export]` macro at the crate root, no module.
    fn add(&mut self, line: usize, segs: &[String], macro_call: bool) {
        if let Some(segments) = resolve(segs, &self.module) {
            if !(macro_call && segments.len() == 1) {
                self.found.refs.push(Ref { line, segments });
            }
        }
    }

    /// The paths in tokens syn leaves unparsed (macro input, attribute arguments): runs of
    /// `a::b::c`, and `$crate::x` in `macro_rules!`.
    fn tokens(&mut self, stream: TokenStream) {
        let tts: Vec<TokenTree> = stream.into_iter().collect();
        let punct =
            |i: usize, c: char| matches!(tts.get(i), Some(TokenTree::Punct(p)) if p.as_char() == c);
        let colons = |i: usize| punct(i, ':') && punct(i + 1, ':');
        let mut i = 0;
        while i < tts.len() {
            match &tts[i] {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(first) if colons(i + 1) && !(i >= 2 && colons(i - 2)) => {
                    let mut segs = vec![first.to_string()];
                    let mut k = i + 1;
                    while let (true, Some(TokenTree::Ident(s))) = (colons(k), tts.get(k + 2)) {
                        segs.push(s.to_string());
                        k += 3;
                    }
                    // `$x::y` is a macro variable's path; only `$crate` is known here.
                    if !(i > 0 && punct(i - 1, '$') && segs[0] != "crate") {
                        self.add(line(first.span()), &segs, punct(k, '!'));
                    }
                    i = k;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, m: &'ast ItemMod) {
        let name = m.ident.to_string();
        if m.content.is_none() {
            m.attrs.iter().for_each(|a| self.visit_attribute(a));
            let mut child = self.inline.clone();
            child.push(name);
            self.found.children.push(child);
            return;
        }
        self.module.push(name.clone());
        self.inline.push(name);
        visit::visit_item_mod(self, m);
        self.module.pop();
        self.inline.pop();
    }

    fn visit_item_use(&mut self, u: &'ast ItemUse) {
        let mut leaves = Vec::new();
        use_leaves(&u.tree, &mut Vec::new(), &mut leaves);
        for (line, segs) in leaves {
            self.add(line, &segs, false);
        }
    }

    fn visit_path(&mut self, p: &'ast SynPath) {
        let (line, segs) = segments(p);
        self.add(line, &segs, false);
        visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast Macro) {
        let (line, segs) = segments(&m.path);
        self.add(line, &segs, true);
        self.tokens(m.tokens.clone());
    }

    fn visit_attribute(&mut self, a: &'ast Attribute) {
        assert!(
            !a.path().is_ident("path"),
            "#[path] at line {} is not understood by this check",
            line(a.pound_token.span)
        );
        visit::visit_attribute(self, a);
        if let Meta::List(list) = &a.meta {
            self.tokens(list.tokens.clone());
        }
    }
}

/// A path's names, with the line of its first.
fn segments(p: &SynPath) -> (usize, Vec<String>) {
    let names = p.segments.iter().map(|s| s.ident.to_string()).collect();
    (
        p.segments.first().map_or(0, |s| line(s.ident.span())),
        names,
    )
}

/// The leaves of a use tree as full paths with their line (`f::*` as `f`, `c::{self}` as
/// `c::self`, `g as h` as `g`).
fn use_leaves(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<(usize, Vec<String>)>) {
    let mut leaf = |span: Span, name: Option<&Ident>| {
        let mut segs = prefix.clone();
        segs.extend(name.map(Ident::to_string));
        out.push((line(span), segs));
    };
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_leaves(&p.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(n) => leaf(n.ident.span(), Some(&n.ident)),
        UseTree::Rename(r) => leaf(r.ident.span(), Some(&r.ident)),
        UseTree::Glob(g) => leaf(g.star_token.span, None),
        UseTree::Group(g) => g.items.iter().for_each(|t| use_leaves(t, prefix, out)),
    }
}

/// Removes what is under `#[cfg(test)]` or `#[cfg(all(.., test, ..))]`: items, fields,
/// variants, statements and match arms. A test module may reach for any helper.
struct StripTests;

impl VisitMut for StripTests {
    fn visit_file_mut(&mut self, f: &mut syn::File) {
        f.items.retain(|i| !test_only(i));
        visit_mut::visit_file_mut(self, f);
    }
    fn visit_item_mod_mut(&mut self, m: &mut ItemMod) {
        if let Some((_, items)) = &mut m.content {
            items.retain(|i| !test_only(i));
        }
        visit_mut::visit_item_mod_mut(self, m);
    }
    fn visit_item_impl_mut(&mut self, i: &mut syn::ItemImpl) {
        i.items.retain(|i| !test_only(i));
        visit_mut::visit_item_impl_mut(self, i);
    }
    fn visit_item_trait_mut(&mut self, t: &mut syn::ItemTrait) {
        t.items.retain(|i| !test_only(i));
        visit_mut::visit_item_trait_mut(self, t);
    }
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        b.stmts.retain(|s| !test_only(s));
        visit_mut::visit_block_mut(self, b);
    }
    fn visit_expr_match_mut(&mut self, m: &mut syn::ExprMatch) {
        m.arms.retain(|a| !test_only(a));
        visit_mut::visit_expr_match_mut(self, m);
    }
    fn visit_fields_named_mut(&mut self, f: &mut syn::FieldsNamed) {
        retain(&mut f.named);
        visit_mut::visit_fields_named_mut(self, f);
    }
    fn visit_fields_unnamed_mut(&mut self, f: &mut syn::FieldsUnnamed) {
        retain(&mut f.unnamed);
        visit_mut::visit_fields_unnamed_mut(self, f);
    }
    fn visit_item_enum_mut(&mut self, e: &mut syn::ItemEnum) {
        retain(&mut e.variants);
        visit_mut::visit_item_enum_mut(self, e);
    }
    fn visit_expr_struct_mut(&mut self, s: &mut syn::ExprStruct) {
        retain(&mut s.fields);
        visit_mut::visit_expr_struct_mut(self, s);
    }
}

fn retain<T: ToTokens, P>(list: &mut Punctuated<T, P>) {
    *list = std::mem::take(list)
        .into_pairs()
        .filter(|p| !test_only(p.value()))
        .collect();
}

/// Whether a node's outer attributes include `cfg(test)` or `cfg(all(.., test, ..))`. syn has
/// no common accessor for the attributes of its many node types, so they are read back from the
/// node's tokens.
fn test_only(node: &impl ToTokens) -> bool {
    let outer = |input: ParseStream| {
        let attrs = input.call(Attribute::parse_outer)?;
        input.parse::<TokenStream>()?;
        Ok(attrs)
    };
    let attrs = outer.parse2(node.to_token_stream()).unwrap_or_default();
    attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .any(|a| match a.parse_args::<Meta>() {
            Ok(Meta::Path(p)) => p.is_ident("test"),
            Ok(Meta::List(all)) if all.path.is_ident("all") => all
                .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .is_ok_and(|args| {
                    args.iter()
                        .any(|m| matches!(m, Meta::Path(p) if p.is_ident("test")))
                }),
            _ => false,
        })
}

/// The path from the crate root on, if `segs` (written in module `module`) leaves the module it
/// is written in for the crate root: `crate::x`, `super::super::x` from `x::a`.
fn resolve(segs: &[String], module: &[String]) -> Option<Vec<String>> {
    let first = segs.first()?.as_str();
    let rest = if first == "crate" {
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

// The scanner on the cases the check must get right.

fn refs(src: &str, module: &[&str]) -> Vec<String> {
    let module: Vec<String> = module.iter().map(|s| s.to_string()).collect();
    scan(src, &module)
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
    let found = scan("#[cfg(test)]\nmod tests;\nmod real;", &["m".into()]);
    assert_eq!(found.children, [vec!["real".to_string()]]);
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
    let problems = graph.check(&[("a", 1), ("b", 1), ("c", 2), ("main", 3)]);
    assert_eq!(
        problems,
        [
            "host/src/a.rs:1: a (layer 1) uses c (layer 2), a higher layer: `c::X`",
            "cycle between a, b:\n    host/src/a.rs:1: a -> b (`b::X`)\n    host/src/b.rs:1: b -> a (`a::X`)",
        ]
    );
    let problems = graph.check(&[("a", 1), ("b", 1), ("main", 3)]);
    assert!(
        problems[0].starts_with("module `c` has no layer"),
        "{problems:?}"
    );
}
