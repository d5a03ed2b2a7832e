//! The shipped win-probability table (`lexica/enable.wpt`) makes sense.

use engine::winpct::WinTable;
use std::path::Path;

fn shipped() -> WinTable {
    WinTable::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../lexica/enable.wpt")).expect("shipped table loads")
}

#[test]
fn monotone_in_spread_everywhere() {
    let t = shipped();
    for u in 0..=t.unseen_max() {
        for s in -t.spread_max()..t.spread_max() {
            assert!(t.win_prob(s, u) <= t.win_prob(s + 1, u), "unseen {u} spread {s}");
        }
    }
}

#[test]
fn even_early_and_decided_late() {
    let t = shipped();
    assert_eq!(t.unseen_max(), 93);
    for u in 80..=93 {
        let p = t.win_prob(0, u);
        assert!((0.45..=0.62).contains(&p), "tied with {u} unseen: {p}");
    }
    for u in 1..=10 {
        assert!(t.win_prob(150, u) > 0.97, "150 ahead, {u} unseen");
        assert!(t.win_prob(-150, u) < 0.03, "150 behind, {u} unseen");
    }
    // The same lead is worth more as the game runs out.
    assert!(t.win_prob(50, 10) > t.win_prob(50, 50) && t.win_prob(50, 50) > t.win_prob(50, 90));
}
