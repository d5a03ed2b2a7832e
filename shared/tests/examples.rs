//! Every shipped example experiment is valid, and the contract's quick match is what it says.

use shared::experiment::{ExperimentKind, ExperimentSpec};

#[test]
fn every_example_parses() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "toml") {
            let spec = ExperimentSpec::parse(&std::fs::read_to_string(&path).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(!spec.cells().unwrap().is_empty());
            n += 1;
        }
    }
    assert!(n >= 5);
    let quick = ExperimentSpec::parse(&std::fs::read_to_string(dir.join("quick-match.toml")).unwrap()).unwrap();
    let ExperimentKind::Match(m) = &quick.kind else { panic!("a match: {quick:?}") };
    assert_eq!((m.bots.clone(), m.games_per_cell), (["static".to_string(), "greedy".to_string()], 200));
    assert_eq!(quick.cells().unwrap().iter().map(|c| c.target).collect::<Vec<_>>(), [100]);
    let quackle =
        ExperimentSpec::parse(&std::fs::read_to_string(dir.join("sim-tuning-quackle-axes.toml")).unwrap()).unwrap();
    assert_eq!(quackle.cells().unwrap().len(), 105);
}
