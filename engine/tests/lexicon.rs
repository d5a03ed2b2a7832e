//! KWG round trips, foreign node layouts, and corrupt files.

mod common;
use common::*;
use engine::lexicon::{Kwg, load_lexicon, parse_word_list};
use std::collections::BTreeSet;

#[test]
fn kwg_reads_back_exactly_the_input_words() {
    for lex in [enable(), scrambled()] {
        let want: BTreeSet<Vec<u8>> = lex.words.iter().cloned().collect();
        let bytes = lex.kwg.to_bytes();
        let back = Kwg::from_bytes(&bytes, "mem").unwrap();
        let got: Vec<Vec<u8>> = back.words();
        assert_eq!(got.len(), want.len());
        assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), want);
        for w in lex.words.iter().step_by(97) {
            assert!(back.contains(w));
        }
    }
}

#[test]
fn enable_has_its_known_words() {
    let lex = enable();
    assert_eq!(lex.set.len(), 168_548, "ENABLE words of at most 15 letters");
    let d = dist();
    let w = |s: &str| s.chars().map(|c| d.letter(c).unwrap()).collect::<Vec<u8>>();
    assert!(lex.kwg.contains(&w("zymurgy")));
    assert!(lex.kwg.contains(&w("AA")));
    assert!(!lex.kwg.contains(&w("QI")), "ENABLE predates QI");
    assert!(!lex.kwg.contains(&w("ZYMURG")));
}

/// Encode a word list as a KWG the way another tool might: an unminimised trie laid out
/// breadth-first (parents before children), GADDAG first. The engine must read it unchanged.
fn foreign_kwg(words: &[Vec<u8>]) -> Vec<u8> {
    #[derive(Default)]
    struct Node {
        kids: std::collections::BTreeMap<u8, usize>,
        accepts: bool,
    }
    let mut trie = vec![Node::default(), Node::default()]; // 0 = DAWG root, 1 = GADDAG root
    let mut insert = |root: usize, s: &[u8]| {
        let mut at = root;
        for &t in s {
            let next = trie.len();
            let id = *trie[at].kids.entry(t).or_insert(next);
            if id == next {
                trie.push(Node::default());
            }
            at = id;
        }
        trie[at].accepts = true;
    };
    for w in words {
        insert(0, w);
        for split in 1..=w.len() {
            let mut s: Vec<u8> = w[..split].iter().rev().copied().collect();
            if split < w.len() {
                s.push(0);
                s.extend_from_slice(&w[split..]);
            }
            insert(1, &s);
        }
    }
    // Breadth-first from the GADDAG root, then the DAWG root: each node's children list.
    let mut nodes: Vec<u32> = vec![0, 0];
    let mut list_at = vec![0u32; trie.len()];
    let mut queue = std::collections::VecDeque::from([1usize, 0]);
    let mut fixups = Vec::new();
    while let Some(n) = queue.pop_front() {
        if trie[n].kids.is_empty() {
            continue;
        }
        list_at[n] = nodes.len() as u32;
        let count = trie[n].kids.len();
        for (i, (&t, &child)) in trie[n].kids.iter().enumerate() {
            let mut v = (t as u32) << 24;
            if trie[child].accepts {
                v |= 1 << 23;
            }
            if i + 1 == count {
                v |= 1 << 22;
            }
            fixups.push((nodes.len(), child));
            nodes.push(v);
            queue.push_back(child);
        }
    }
    for (at, child) in fixups {
        nodes[at] |= list_at[child];
    }
    nodes[0] = 1 << 22 | list_at[0];
    nodes[1] = 1 << 22 | list_at[1];
    nodes.iter().flat_map(|n| n.to_le_bytes()).collect()
}

#[test]
fn a_kwg_laid_out_by_another_tool_loads_and_generates_the_same_moves() {
    let lex = enable();
    let words: Vec<Vec<u8>> = lex.words.iter().filter(|w| w.len() <= 6).cloned().collect();
    let ours = Lex::new(words.clone());
    let foreign = Kwg::from_bytes(&foreign_kwg(&words), "foreign.kwg").unwrap();
    assert_ne!(foreign.node_count(), ours.kwg.node_count(), "a genuinely different layout");
    let theirs = Lex { kwg: foreign, ..Lex::new(words) };
    let mut mg = engine::movegen::Generator::new();
    for (board, rack) in positions(&ours, 40, 7) {
        let leaves = engine::leaves::RackLeaves::new(&rack, |_| 0);
        let req = engine::movegen::Request {
            board: &board,
            rack: &rack,
            leaves: &leaves,
            can_exchange: false,
            opening_vowel_penalty: 0,
        };
        let mut a = mg.generate(ctx(&ours), &req, engine::movegen::Mode::All).to_vec();
        let mut b = mg.generate(ctx(&theirs), &req, engine::movegen::Mode::All).to_vec();
        a.sort_unstable_by(engine::moves::rank);
        b.sort_unstable_by(engine::moves::rank);
        assert_eq!(a, b);
    }
}

#[test]
fn corrupt_and_truncated_kwg_files_are_rejected_with_the_file_named() {
    let bytes = enable().kwg.to_bytes();
    let err = Kwg::from_bytes(&bytes[..bytes.len() - 2], "x.kwg").unwrap_err();
    assert!(err.to_string().starts_with("x.kwg: ") && err.to_string().contains("multiple of 4"), "{err}");
    let err = Kwg::from_bytes(&bytes[..bytes.len() - 400], "x.kwg").unwrap_err();
    assert!(err.to_string().contains("x.kwg"), "{err}");
    let mut bad = bytes.clone();
    bad[8..12].copy_from_slice(&(0x003F_FFFFu32).to_le_bytes());
    assert!(Kwg::from_bytes(&bad, "x.kwg").unwrap_err().to_string().contains("points past the end"));
    assert!(Kwg::from_bytes(&[], "empty.kwg").is_err());
    // Two siblings swapped: the list is no longer sorted.
    let mut unsorted = bytes.clone();
    let at = (2..unsorted.len() / 4 - 1)
        .find(|&i| {
            let n = |k: usize| u32::from_le_bytes(unsorted[4 * k..4 * k + 4].try_into().unwrap());
            n(i) & (1 << 22) == 0 && n(i + 1) & (1 << 22) == 0
        })
        .unwrap();
    let (a, b) = (unsorted[4 * at + 3], unsorted[4 * at + 7]);
    unsorted[4 * at + 3] = b;
    unsorted[4 * at + 7] = a;
    assert!(Kwg::from_bytes(&unsorted, "x.kwg").unwrap_err().to_string().contains("increasing tile order"));
    // Tiles outside the distribution are caught when the lexicon is loaded for play.
    let mut odd = bytes;
    let n = odd.len();
    odd[n - 1] = 0xFF;
    let dir = std::env::temp_dir().join(format!("lexhive-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("odd.kwg");
    std::fs::write(&p, &odd).unwrap();
    let err = load_lexicon(&p, dist()).unwrap_err().to_string();
    assert!(err.contains("odd.kwg") && err.contains("outside"), "{err}");
    let missing = load_lexicon(&dir.join("missing.kwg"), dist()).unwrap_err().to_string();
    assert!(missing.contains("missing.kwg") && missing.contains("cannot read"), "{missing}");
}

#[test]
fn word_lists_accept_either_case_and_name_the_bad_line() {
    let d = dist();
    let words = parse_word_list("cat\nDOG\n\n# comment\nEmu\n", d, "w.txt").unwrap();
    assert_eq!(words.len(), 3);
    let err = parse_word_list("cat\ndo-g\n", d, "w.txt").unwrap_err();
    assert_eq!(err.place, "w.txt:2");
    let err = parse_word_list("cat\ndog\nabcdefghijklmnop\n", d, "w.txt").unwrap_err();
    assert_eq!(err.place, "w.txt:3");
    assert!(err.message.contains("16 letters"));
    assert!(parse_word_list("\n\n", d, "w.txt").is_err());
}

/// Each node's `Step` (what the move generator walks) holds its arc, whether a word ends
/// there, and its children's letters, in the packed layout and in the wide one: the packed
/// layout for alphabets of up to 40 letters, the wide one beyond.
#[test]
fn steps_hold_each_nodes_arc_end_and_childrens_letters_in_both_layouts() {
    use engine::lexicon::StepLayout;
    fn check(kwg: &Kwg, narrow: bool) {
        assert_eq!(matches!(kwg.steps(), StepLayout::Narrow(_)), narrow);
        for i in 0..kwg.node_count() as u32 {
            let s = kwg.step(i);
            assert_eq!((s.arc(), s.accepts()), (kwg.arc(i), kwg.accepts(i)), "node {i}");
            let kids: Vec<u32> = if kwg.arc(i) == 0 { vec![] } else { kwg.siblings(kwg.arc(i)).collect() };
            assert_eq!(s.kids(), kids.iter().fold(0, |m, &n| m | 1 << kwg.tile(n)), "node {i}");
            for &n in &kids {
                assert_eq!(s.child(kwg.tile(n)), Some(n), "node {i}");
            }
            assert_eq!(s.child(63).is_some(), s.kids() >> 63 == 1);
        }
    }
    check(&enable().kwg, true);
    check(&enable().kwg.clone().with_wide_steps(), false);
    // Letters up to 63, as a distribution of that many letters may have.
    let words: Vec<Vec<u8>> = enable().words.iter().step_by(50).map(|w| w.iter().map(|&t| t + 37).collect()).collect();
    check(&Kwg::build(&words).unwrap(), false);
    let words: Vec<Vec<u8>> = enable().words.iter().step_by(50).map(|w| w.iter().map(|&t| t + 14).collect()).collect();
    check(&Kwg::build(&words).unwrap(), true);
}
