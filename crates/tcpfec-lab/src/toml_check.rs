//! The oracle of the `toml` fuzz target (`fuzz/fuzz_targets/toml.rs`), here because the
//! parsers it checks live in this crate; `tests/toml_corpus.rs` replays its corpus.

/// The `toml` fuzz target: sweep settings (`tcpfec sim --config`, shard manifests) and experiment files
/// (`tcpfec reproduce`). Oracle: settings that parse and expand (at most 64 runs) write
/// back to text that parses and expands to the same runs; experiment files plan without
/// a panic, however they are wrong.
pub fn check(data: &[u8]) {
    use crate::sweep::{Axes, Limits};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let limits = Limits {
        max_runs: 64,
        i_know: false,
    };
    if let Ok(axes) = Axes::from_toml(text) {
        if let Ok(e) = axes.expansion(1, 2, &limits) {
            let again = Axes::from_toml(&axes.to_toml()).expect("written settings read back");
            let e2 = again
                .expansion(1, 2, &limits)
                .expect("the same sweep expands again");
            assert_eq!(e.len(), e2.len());
            for i in 0..e.len() {
                match (e.run(i), e2.run(i)) {
                    (Ok(a), Ok(b)) => assert_eq!(a.params, b.params, "run {i}"),
                    (Err(_), Err(_)) => {}
                    (a, b) => panic!("run {i} read back differently: {a:?} / {b:?}"),
                }
            }
        }
    }
    let _ = crate::reproduce::plan_text(text, 64);
}
