//! The crate layout stays as `docs/architecture.md` draws it: no module of a crate
//! imports, directly or through others, a module that imports it back, and the real
//! network crate does not depend on the simulator.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module of each `.rs` file under `src`, mapped to the top-level modules of
/// the same crate it names as `crate::module` (test modules left out: they may reach
/// anywhere).
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut files = vec![src.to_path_buf()];
    while let Some(p) = files.pop() {
        if p.is_dir() {
            files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if p.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = p.strip_prefix(src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let top = top.trim_end_matches(".rs").to_string();
        if top == "lib" || top == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        let deps = graph.entry(top.clone()).or_default();
        for line in code.lines() {
            let line = line.split("//").next().unwrap();
            let mut rest = line;
            while let Some(at) = rest.find("crate::") {
                rest = &rest[at + 7..];
                if let Some(group) = rest.strip_prefix('{') {
                    // `use crate::{a, b::c}`: every name at the group's top level.
                    let inner = group.split('}').next().unwrap();
                    deps.extend(inner.split(',').filter_map(|item| {
                        let name = item.trim().split("::").next()?.trim();
                        (!name.is_empty()).then(|| name.to_string())
                    }));
                } else {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    deps.insert(name);
                }
            }
        }
        deps.remove(&top);
    }
    graph
}

/// A cycle among `graph`'s modules, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if graph.contains_key(next) {
                if let Some(c) = visit(next, graph, path, done) {
                    return Some(c);
                }
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_crate_has_an_import_cycle_between_its_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = vec![root.join("src")];
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        sources.push(entry.unwrap().path().join("src"));
    }
    for src in sources {
        let graph = module_graph(&src);
        assert!(graph.len() > 1, "{}: no modules found", src.display());
        if let Some(cycle) = find_cycle(&graph) {
            panic!("{}: import cycle {}", src.display(), cycle.join(" -> "));
        }
    }
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(
        find_cycle(&graph).unwrap(),
        ["a", "b", "c", "a"].map(String::from).to_vec()
    );
}

#[test]
fn the_network_crate_does_not_depend_on_the_simulator() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("crates/tcpfec-net/Cargo.toml")).unwrap();
    assert!(
        !manifest.contains("tcpfec-sim"),
        "tcpfec-net depends on tcpfec-sim again: loss models belong in tcpfec-channel"
    );
    assert!(manifest.contains("tcpfec-channel"));
}
