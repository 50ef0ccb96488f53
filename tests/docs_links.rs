//! The README and every page under docs/ link only to files (and headings) that exist:
//! markdown links with a relative target, and `docs/...` paths named in code spans.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            markdown_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
}

/// The targets of `[text](target)` links, fenced code blocks left out.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            if let Some(end) = rest.find(')') {
                out.push(rest[..end].to_string());
                rest = &rest[end..];
            }
        }
    }
    out
}

/// `docs/...` paths written in code spans (`docs/guide/simulate.md`).
fn code_span_paths(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with("docs/") && !s.contains(' ') && !s.contains('*'))
        .map(|s| s.trim_end_matches(['.', ',', ':']).to_string())
        .collect()
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn anchors(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| {
            l.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let root = root();
    let mut pages = vec![root.join("README.md")];
    markdown_files(&root.join("docs"), &mut pages);
    assert!(pages.len() > 20, "only {} pages", pages.len());
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        let here = page.parent().unwrap();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() {
                page.clone()
            } else {
                here.join(file)
            };
            checked += 1;
            if !path.exists() {
                broken.push(format!("{}: {target}", page.display()));
            } else if let Some(a) = anchor.filter(|_| path.extension().is_some_and(|x| x == "md")) {
                if !anchors(&std::fs::read_to_string(&path).unwrap()).contains(a) {
                    broken.push(format!("{}: {target} (no such heading)", page.display()));
                }
            }
        }
        for p in code_span_paths(&text) {
            checked += 1;
            if !root.join(&p).exists() {
                broken.push(format!("{}: `{p}`", page.display()));
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} links found: is the parser broken?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_parser_finds_links_anchors_and_paths() {
    let text = "# A Heading, here\nsee [x](a/b.md#a-heading-here) and `docs/x.md`.\n```\n[no](skip)\n```\n";
    assert_eq!(link_targets(text), vec!["a/b.md#a-heading-here"]);
    assert_eq!(code_span_paths(text), vec!["docs/x.md"]);
    assert!(anchors(text).contains("a-heading-here"));
}
