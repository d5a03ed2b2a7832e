//! The engine's layering: data modules first, then the rules, then the players, and no module
//! that imports one importing it back (directly or through others); no import circle in
//! `shared` either. Read from the sources, so that a new `use crate::...` that closes a loop
//! fails here rather than in a reviewer's head.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each top-level module of `engine/src` and the top-level modules its non-test code names.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    imports_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// Each top-level module of the crate whose sources are `src`, and the top-level modules its
/// non-test code names.
fn imports_of(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let src = src.to_path_buf();
    let mut files = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap();
        let top = rel.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
        if top == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        let deps = graph.entry(top.clone()).or_default();
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group[..group.find('}').unwrap()]
                    .split(',')
                    .filter_map(|p| p.trim().split("::").next())
                    .filter(|n| !n.is_empty())
                    .collect(),
                None => vec![rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap()],
            };
            deps.extend(names.into_iter().filter(|n| *n != top).map(str::to_string));
        }
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for deps in graph.values_mut() {
        deps.retain(|d| modules.contains(d));
    }
    graph
}

/// A path `from -> ... -> to` through the graph, if any.
fn path(graph: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> Option<Vec<String>> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![vec![from.to_string()]];
    while let Some(p) = stack.pop() {
        let last = p.last().unwrap();
        if last == to && p.len() > 1 {
            return Some(p);
        }
        for d in &graph[last] {
            if seen.insert(d.clone()) {
                let mut q = p.clone();
                q.push(d.clone());
                stack.push(q);
            }
        }
    }
    None
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let graph = imports();
    assert!(graph.len() > 15, "found the modules: {graph:?}");
    no_cycle(&graph);
}

#[test]
fn no_module_of_shared_imports_one_that_imports_it_back() {
    let graph = imports_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/src"));
    assert!(graph.contains_key("kinds") && graph.contains_key("protocol"), "found the modules: {graph:?}");
    no_cycle(&graph);
}

fn no_cycle(graph: &BTreeMap<String, BTreeSet<String>>) {
    for m in graph.keys() {
        if let Some(cycle) = path(graph, m, m) {
            panic!("import cycle: {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn data_modules_import_no_algorithm() {
    let graph = imports();
    let algorithms = ["movegen", "eval", "bots", "sim", "endgame", "autoplay", "winpct", "leavegen"];
    for data in ["tiles", "board", "lexicon", "leaves", "moves", "rng", "stats"] {
        for a in algorithms {
            assert!(!graph[data].contains(a), "data module `{data}` imports algorithm `{a}`");
        }
    }
}

/// The rules and their file formats: what a position, a move, a game and its log mean.
const RULES: [&str; 7] = ["board", "moves", "movegen", "game", "record", "cgp", "gcg"];
/// What chooses, judges or drives moves.
const PLAYERS: [&str; 11] =
    ["eval", "view", "bots", "sim", "infer", "endgame", "features", "winpct", "autoplay", "leavegen", "stats"];

#[test]
fn rules_reach_no_player() {
    let graph = imports();
    for rules in RULES {
        for player in PLAYERS {
            if let Some(p) = path(&graph, rules, player) {
                panic!("the rules module `{rules}` reaches the player module `{player}`: {}", p.join(" -> "));
            }
        }
    }
}

#[test]
fn every_module_is_data_rules_or_player() {
    let data = ["error", "memory", "tiles", "board", "lexicon", "leaves", "moves", "rng"];
    for m in imports().keys() {
        let places = [data.contains(&m.as_str()), RULES.contains(&m.as_str()), PLAYERS.contains(&m.as_str())];
        assert!(places.iter().any(|&p| p), "module `{m}` is on no floor: add it to one in this test");
    }
}
