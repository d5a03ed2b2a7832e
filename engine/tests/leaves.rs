//! KLV2 leave tables: the format by hand, round trips, corrupt files, rack subsets.

mod common;
use common::*;
use engine::leavegen::all_leaves;
use engine::leaves::{Klv, RackLeaves};

fn node(tile: u32, accepts: bool, end: bool, arc: u32) -> u32 {
    tile << 24 | (accepts as u32) << 23 | (end as u32) << 22 | arc
}

/// A KLV2 file written byte by byte from the format description.
fn hand_made() -> Vec<u8> {
    let nodes = [
        node(0, false, true, 2),
        node(0, false, true, 0),
        node(0, true, false, 5), // ?
        node(1, true, false, 0), // A
        node(2, true, true, 0),  // B
        node(1, true, true, 0),  // ?A
    ];
    let values = [1.5f32, 2.5, 3.5, 4.5]; // ?, ?A, A, B in index order
    let mut b = (nodes.len() as u32).to_le_bytes().to_vec();
    nodes.iter().for_each(|n| b.extend_from_slice(&n.to_le_bytes()));
    b.extend_from_slice(&(values.len() as u32).to_le_bytes());
    values.iter().for_each(|v| b.extend_from_slice(&v.to_le_bytes()));
    b
}

#[test]
fn a_hand_written_klv2_reads_by_word_index() {
    let k = Klv::from_bytes(&hand_made(), "hand.klv2").unwrap();
    assert_eq!(k.value(&[0]), 1.5);
    assert_eq!(k.value(&[0, 1]), 2.5);
    assert_eq!(k.value(&[1]), 3.5);
    assert_eq!(k.value(&[2]), 4.5);
    assert_eq!(k.value(&[1, 2]), 0.0, "absent leave");
    assert_eq!(k.value(&[]), 0.0);
}

#[test]
fn built_tables_round_trip_and_cover_every_leave() {
    let leaves = all_leaves(dist());
    assert_eq!(leaves.len(), 914_624, "1- to 6-tile leaves of the English distribution");
    let entries: Vec<(Vec<u8>, f32)> =
        leaves.iter().enumerate().map(|(i, l)| (l.clone(), (i % 1000) as f32 / 7.0)).collect();
    let k = Klv::build(entries.clone()).unwrap();
    let back = Klv::from_bytes(&k.to_bytes(), "mem").unwrap();
    let mut want = entries;
    want.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(back.entries(), want);
    for (l, v) in want.iter().step_by(101) {
        assert_eq!(back.value(l), *v);
    }
}

#[test]
fn corrupt_and_truncated_klv2_files_are_rejected() {
    let good = hand_made();
    for cut in [0, 3, 10, good.len() - 1] {
        let err = Klv::from_bytes(&good[..cut], "t.klv2").unwrap_err();
        assert!(err.to_string().starts_with("t.klv2: "), "{err}");
    }
    let mut extra = good.clone();
    extra.extend_from_slice(&[0, 0, 0, 0]);
    assert!(Klv::from_bytes(&extra, "t.klv2").is_err());
    let mut wrong_count = good.clone();
    let at = 4 + 6 * 4;
    wrong_count[at..at + 4].copy_from_slice(&3u32.to_le_bytes());
    wrong_count.truncate(good.len() - 4);
    assert!(Klv::from_bytes(&wrong_count, "t.klv2").unwrap_err().to_string().contains("values"));
    let mut nan = good.clone();
    let n = nan.len();
    nan[n - 4..].copy_from_slice(&f32::NAN.to_le_bytes());
    assert!(Klv::from_bytes(&nan, "t.klv2").unwrap_err().to_string().contains("finite"));
    let mut cycle = good;
    cycle[4 + 5 * 4..4 + 6 * 4].copy_from_slice(&node(1, true, true, 2).to_le_bytes());
    assert!(Klv::from_bytes(&cycle, "t.klv2").is_err());
}

#[test]
fn rack_leaves_give_each_multiset_one_canonical_mask() {
    let rack = dist().parse_rack("EE?SSTR").unwrap();
    let rl = RackLeaves::new(&rack, |kept| kept.len() as i32 * 10 + kept.iter().map(|&t| t as i32).sum::<i32>());
    let mut seen = std::collections::HashSet::new();
    for used in 0u32..128 {
        if RackLeaves::canonical(RackLeaves::repeats(&rl.slots), used) {
            let kept: Vec<u8> = (0..7).filter(|i| used >> i & 1 == 0).map(|i| rl.slots[i]).collect();
            assert!(seen.insert(kept.clone()), "duplicate multiset {kept:?}");
            assert_eq!(rl.by_used[used as usize], kept.len() as i32 * 10 + kept.iter().map(|&t| t as i32).sum::<i32>());
        }
    }
    // 2 E, 2 S, and three singles: 3 * 3 * 2 * 2 * 2 multisets.
    assert_eq!(seen.len(), 72);
    assert_eq!(rl.best_by_count[0], rl.by_used[0]);
}

#[test]
fn rack_leaves_from_the_table_walk_equal_one_lookup_per_subset() {
    let lex = enable();
    let entries: Vec<(Vec<u8>, f32)> = all_leaves(dist())
        .into_iter()
        .enumerate()
        .filter(|(i, _)| i % 3 != 0)
        .map(|(i, l)| (l, ((i * 7919) % 4001) as f32 / 100.0 - 20.0))
        .collect();
    let klv = Klv::build(entries).unwrap();
    for (_, rack) in positions(lex, 200, 4) {
        let fast = RackLeaves::from_klv(&rack, &klv);
        let slow =
            RackLeaves::new(
                &rack,
                |kept| if kept.is_empty() || kept.len() >= 7 { 0 } else { Klv::millis(klv.value(kept)) },
            );
        assert_eq!(fast.by_used, slow.by_used, "rack {rack:?}");
        assert_eq!(fast.best_by_count, slow.best_by_count);
    }
}

#[test]
fn scaled_rack_leaves_are_each_subset_scaled_and_keep_the_best_of_each_count() {
    let lex = enable();
    let klv = Klv::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lexica/enable.klv2")).unwrap();
    for (_, rack) in positions(lex, 100, 5) {
        for k in [0.0, 0.37, 2.5] {
            let scaled = RackLeaves::from_klv(&rack, &klv).scaled(k);
            let slow = RackLeaves::new(&rack, |kept| {
                if kept.is_empty() || kept.len() >= 7 {
                    0
                } else {
                    (Klv::millis(klv.value(kept)) as f64 * k).round() as i32
                }
            });
            assert_eq!(scaled.by_used, slow.by_used, "rack {rack:?} x{k}");
            assert_eq!(scaled.best_by_count, slow.best_by_count, "rack {rack:?} x{k}");
        }
    }
}

#[test]
fn leave_counts_made_apart_fit_the_table_made_in_one_place_and_impossible_counts_are_refused() {
    use engine::bots::BotSpec;
    use engine::leavegen::Samples;
    let lex = enable();
    let mut bots = [BotSpec::STATIC.build(None, None).unwrap(), BotSpec::STATIC.build(None, None).unwrap()];
    let mut mg = engine::movegen::Generator::new();
    let (mut whole, mut halves) = (Samples::new(dist()), [Samples::new(dist()), Samples::new(dist())]);
    for i in 0..12u64 {
        let rec = engine::autoplay::play_leg(ctx(lex), &mut bots, 5, i, (i % 2) as usize, &mut mg);
        whole.add_game(&rec, None, dist());
        halves[(i % 2) as usize].add_game(&rec, None, dist());
    }
    let mut merged = Samples::new(dist());
    for h in &halves {
        merged.add_counts(&h.to_counts(), dist()).unwrap();
    }
    assert_eq!(merged.to_counts(), whole.to_counts());
    assert_eq!(merged.count, whole.count);
    assert_eq!(merged.fit(dist()).unwrap().to_bytes(), whole.fit(dist()).unwrap().to_bytes());

    let counts = whole.to_counts();
    let e = dist().size() as u8;
    let q = dist().letter('Q').unwrap();
    for (bad, why) in [
        (vec![(vec![1, 2, 3, 4, 5, 6, 7], 1, 0)], "at most 6 tiles"),
        (vec![(vec![3, 1], 1, 0)], "not sorted"),
        (vec![(vec![e], 1, 0)], "not tiles"),
        (vec![(vec![q, q], 1, 0)], "not tiles"),
        (vec![(vec![1], 0, 0)], "a count of 0"),
        (vec![(vec![1], 1, i64::MIN)], "past 10,000 points"),
    ] {
        let mut s = Samples::new(dist());
        let msg = s.add_counts(&[counts.clone(), bad].concat(), dist()).unwrap_err();
        assert!(msg.contains(why), "{msg}");
        assert_eq!(s.count, 0, "nothing is added from refused counts");
    }
}

#[test]
fn a_bot_with_a_table_of_its_own_plays_with_it_whatever_the_match_gives() {
    use engine::bots::BotSpec;
    use std::sync::Arc;
    let lex = enable();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lexica/enable.klv2");
    let shipped = Arc::new(Klv::load(&path).unwrap());
    // A table that values every leave at zero, made from no games: the match's table here.
    let zero = Arc::new(engine::leavegen::Samples::new(dist()).fit(dist()).unwrap());
    let own = BotSpec::parse(&format!("static:leaves={}", path.display())).unwrap();
    assert_eq!(own.own_leaves(), Some(path.to_str().unwrap()));
    assert!(!own.uses_leaves(), "it needs no table from the match");
    let game = |spec: &BotSpec, table: &Arc<Klv>| {
        let mut bots = [spec.build(Some(table.clone()), None).unwrap(), BotSpec::Greedy.build(None, None).unwrap()];
        let mut mg = engine::movegen::Generator::new();
        (0..4u64)
            .map(|i| {
                engine::autoplay::play_leg(ctx(lex), &mut bots, 9, i, 0, &mut mg)
                    .game
                    .history
                    .iter()
                    .map(|t| t.mv)
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
    };
    let with_shipped = game(&BotSpec::STATIC, &shipped);
    assert_eq!(game(&own, &zero), with_shipped, "its own table, not the match's");
    assert_ne!(game(&BotSpec::STATIC, &zero), with_shipped, "the tables play differently");

    let missing = BotSpec::parse("static:leaves=/no/such.klv2").unwrap().build(None, None).err().unwrap();
    assert!(missing.to_string().contains("/no/such.klv2"), "{missing}");
    for (bad, why) in [
        ("greedy:leaves=a.klv2", "greedy plays without a leave table"),
        ("static:leaves=", "leaves names a table"),
        ("static:leaves=a,leaves=b", "given twice"),
    ] {
        let e = BotSpec::parse(bad).unwrap_err().to_string();
        assert!(e.contains(why), "{bad}: {e}");
    }
}
