//! No crate of the workspace has modules that import each other in a circle, at its top level
//! or inside any folder. A module is a file or folder of a crate's `src` (or of a folder in it);
//! it depends on a sibling when its code (comments and unit-test modules aside) names
//! `crate::<path>::<sibling>`, or reaches it through `super::`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable source folder") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The modules of folder `src` (files and folders; `lib`, `main` and `mod` are the folder itself)
/// and the files of each.
fn modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out = BTreeMap::new();
    for entry in fs::read_dir(src).expect("src") {
        let path = entry.expect("entry").path();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("utf-8 name")
            .to_owned();
        if path.is_dir() {
            let mut files = Vec::new();
            rust_files(&path, &mut files);
            out.insert(name, files);
        } else if path.extension().is_some_and(|e| e == "rs")
            && !["lib", "main", "mod"].contains(&name.as_str())
        {
            out.insert(name, vec![path]);
        }
    }
    out
}

/// The modules `code` names right after `prefix` (`crate::`, `crate::log::`, `super::`), alone
/// or in a group (`crate::{m, ...}`); comments, and a unit-test module at the end of the file,
/// removed first: tests may reach anywhere.
fn named_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let code = code
        .find("#[cfg(test)]\nmod tests")
        .map_or(code, |at| &code[..at]);
    let code: String = code
        .lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find(prefix) {
        // `super::` must not be the tail of a longer `super::super::`.
        let preceded = code.len() - rest.len() + at;
        let before = &code[..preceded];
        rest = &rest[at + prefix.len()..];
        if prefix.starts_with("super") && before.ends_with("super::") {
            continue;
        }
        if rest.starts_with("super::") {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // The first path segment of each item of the group, at brace depth 0.
            let (mut depth, mut item_start) = (0usize, true);
            let mut head = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        if !head.is_empty() {
                            out.insert(std::mem::take(&mut head));
                        }
                        item_start = true;
                    }
                    c if item_start && (c.is_ascii_alphanumeric() || c == '_') => head.push(c),
                    _ if item_start && !head.is_empty() => {
                        out.insert(std::mem::take(&mut head));
                        item_start = false;
                    }
                    _ => {}
                }
            }
            if !head.is_empty() {
                out.insert(head);
            }
        } else {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            out.insert(rest[..end].to_owned());
        }
    }
    out
}

/// Strongly connected components of more than one module.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(m) = todo.pop() {
            for n in &graph[&m] {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for m in graph.keys() {
        let mut component: Vec<String> = graph
            .keys()
            .filter(|n| *n == m || (reaches[m].contains(*n) && reaches[*n].contains(m)))
            .cloned()
            .collect();
        component.sort();
        if component.len() > 1 && !out.contains(&component) {
            out.push(component);
        }
    }
    out
}

/// How deep `file` lies under folder `dir`: 1 for `dir/a.rs` and `dir/a/mod.rs`, 2 for
/// `dir/a/b.rs`, ... (how many `super::` reach `dir`'s other modules from it).
fn depth(dir: &Path, file: &Path) -> usize {
    let parts = file.strip_prefix(dir).expect("inside").components().count();
    if file.file_stem().is_some_and(|s| s == "mod") {
        parts - 1
    } else {
        parts
    }
}

/// The cycles among the modules of `dir` (its path from the crate's root is `path`, empty at
/// the top), then of every folder inside it.
fn folder_cycles(dir: &Path, path: &[String], found: &mut Vec<Vec<String>>) {
    let mods = modules(dir);
    let crate_prefix = format!(
        "crate::{}",
        path.iter().map(|p| format!("{p}::")).collect::<String>()
    );
    let graph: BTreeMap<String, BTreeSet<String>> = mods
        .iter()
        .map(|(m, files)| {
            let deps = files
                .iter()
                .flat_map(|f| {
                    let code = fs::read_to_string(f).expect("readable");
                    let mut names = named_after(&code, &crate_prefix);
                    names.extend(named_after(&code, &"super::".repeat(depth(dir, f))));
                    names
                })
                .filter(|d| d != m && mods.contains_key(d))
                .collect();
            (m.clone(), deps)
        })
        .collect();
    for cycle in cycles(&graph) {
        let at = path.join("/");
        found.push(cycle.into_iter().map(|m| format!("{at}/{m}")).collect());
    }
    for (m, _) in mods.iter().filter(|(m, _)| dir.join(m).is_dir()) {
        let mut inner = path.to_vec();
        inner.push(m.clone());
        folder_cycles(&dir.join(m), &inner, found);
    }
}

#[test]
fn no_folder_of_a_crate_has_a_module_cycle() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for entry in fs::read_dir(&crates).expect("crates") {
        let src = entry.expect("entry").path().join("src");
        if src.is_dir() {
            folder_cycles(&src, &[], &mut found);
        }
    }
    assert!(
        found.is_empty(),
        "module cycles, each to be broken: {found:?}"
    );
}

#[test]
fn the_reader_follows_super_only_as_deep_as_asked() {
    let code = "use super::{a, b::C};\nuse super::super::d;\nlet x = super::e::f();";
    let one: Vec<String> = named_after(code, "super::").into_iter().collect();
    assert_eq!(one, ["a", "b", "e"]);
    let two: Vec<String> = named_after(code, "super::super::").into_iter().collect();
    assert_eq!(two, ["d"]);
}

#[test]
fn the_reader_sees_through_groups_and_ignores_comments() {
    let code = "use crate::{a, b::C, c::{d, e}};\n// crate::f\nlet x = crate::g::h();\n\
                #[cfg(test)]\nmod tests {\n    use crate::t;\n}";
    let names: Vec<String> = named_after(code, "crate::").into_iter().collect();
    assert_eq!(names, ["a", "b", "c", "g"]);
}
