//! Every shipped example experiment is valid, and the contract's quick match is what it says.

use shared::experiment::ExperimentSpec;
use shared::kinds::ExperimentKind;

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
    // The inference grid: every tau at every iteration count, against the same bot without it.
    let grid = ExperimentSpec::parse(&std::fs::read_to_string(dir.join("tau-iters-grid.toml")).unwrap()).unwrap();
    let cells = grid.cells().unwrap();
    assert_eq!(cells.len(), 18);
    for c in &cells {
        let [a, b] = c.bots.clone().unwrap();
        let infer = engine::bots::BotSpec::parse(&a).unwrap();
        let plain = engine::bots::BotSpec::parse(&b).unwrap();
        let engine::bots::BotSpec::Sim { k, plies, iterations, infer: Some(i), .. } = infer else { panic!("{a}") };
        assert_eq!(
            plain,
            engine::bots::BotSpec::parse(&format!("sim:k={k},plies={plies},iterations={iterations}")).unwrap()
        );
        assert!(
            a.contains(&format!("tau={}", c.params["bot1.tau"])) && i.config.iterations == c.params["bot1.infer_iters"]
        );
    }
}
