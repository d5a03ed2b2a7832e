//! The value nets through ONNX Runtime on the CPU: the trainer's own numbers reproduced, any
//! batch size, and models with the wrong shapes or no model at all refused with the file named.
//! Needs ONNX Runtime: `ORT_DYLIB_PATH`, or python3's `onnxruntime` (scripts/trainer-env.sh).

use engine::features::FRAME_LEN;
use nn::{Device, Runtime};
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn runtime() -> &'static Runtime {
    Runtime::get(None, Device::Cpu).unwrap_or_else(|e| panic!("these tests need ONNX Runtime: {e}"))
}

/// Frame `b` of the fixed batch `lexhive_trainer.fixtures` valued with torch.
fn frame(b: usize) -> Vec<f32> {
    (0..FRAME_LEN).map(|i| if (i * 7 + b * 13).is_multiple_of(11) { 1.0 + (b % 3) as f32 } else { 0.0 }).collect()
}

fn expected() -> Vec<f32> {
    let text = std::fs::read_to_string(data("tiny.expect.json")).unwrap();
    let start = text.find('[').unwrap();
    let end = text.find(']').unwrap();
    text[start + 1..end].split(',').map(|x| x.trim().parse::<f32>().unwrap()).collect()
}

#[test]
fn the_trainers_values_come_back_at_every_batch_size() {
    let want = expected();
    let mut model = runtime().model(&data("tiny.onnx"), 1).unwrap();
    let all: Vec<f32> = (0..want.len()).flat_map(frame).collect();
    let got = model.evaluate(&all).unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-5, "got {got:?}, torch gave {want:?}");
    }
    // One at a time, and twice in a bigger batch: each value is the frame's alone.
    for (b, w) in want.iter().enumerate() {
        let one = model.evaluate(&frame(b)).unwrap();
        assert!((one[0] - w).abs() < 1e-5);
    }
    let twice: Vec<f32> = (0..2 * want.len()).flat_map(|b| frame(b % want.len())).collect();
    let got = model.evaluate(&twice).unwrap();
    assert_eq!(got.len(), 2 * want.len());
    for b in 0..want.len() {
        assert!((got[b] - got[b + want.len()]).abs() < 1e-6);
    }
}

#[test]
fn a_batch_that_is_not_whole_frames_is_an_error() {
    let mut model = runtime().model(&data("tiny.onnx"), 1).unwrap();
    let e = model.evaluate(&vec![0.0; FRAME_LEN + 3]).unwrap_err().to_string();
    assert!(e.contains("not a whole number of frames"), "{e}");
    assert!(model.evaluate(&[]).is_err());
}

#[test]
fn a_model_of_another_encoding_is_refused_naming_the_input() {
    let e = runtime().model(&data("wrong-planes.onnx"), 1).err().expect("refused").to_string();
    assert!(e.contains("wrong-planes.onnx"), "{e}");
    assert!(e.contains("`planes` has shape [n, 84, 15, 15], expected [n, 85, 15, 15]"), "{e}");
}

#[test]
fn a_corrupt_or_missing_model_is_refused_naming_the_file() {
    let e = runtime().model(&data("corrupt.onnx"), 1).err().expect("refused").to_string();
    assert!(e.contains("corrupt.onnx") && e.contains("not a loadable ONNX model"), "{e}");
    let e = runtime().model(&data("nothing-here.onnx"), 1).err().expect("refused").to_string();
    assert!(e.contains("nothing-here.onnx: no such file"), "{e}");
}

#[test]
fn the_runtime_says_where_it_runs() {
    let rt = runtime();
    assert!(!rt.cuda());
    let line = rt.describe();
    assert!(line.contains("libonnxruntime") && line.ends_with("on the CPU"), "{line}");
}

#[test]
fn threads_sharing_one_model_through_its_queue_get_their_own_values() {
    let want = expected();
    let batcher = runtime().shared(&data("tiny.onnx"), 64).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let (batcher, want) = (batcher.clone(), &want);
            s.spawn(move || {
                for i in 0..60 {
                    // Requests of 1 to 5 frames, each thread its own mix.
                    let picks: Vec<usize> = (0..1 + (i + t) % 5).map(|j| (i * 3 + j * 5 + t) % want.len()).collect();
                    let frames: Vec<f32> = picks.iter().flat_map(|&b| frame(b)).collect();
                    let got = batcher.evaluate(&frames).unwrap();
                    assert_eq!(got.len(), picks.len());
                    for (g, &b) in got.iter().zip(&picks) {
                        assert!(
                            (g - want[b]).abs() < 1e-5,
                            "thread {t}, request {i}: frame {b} gave {g}, torch {}",
                            want[b]
                        );
                    }
                }
            });
        }
    });
    let e = batcher.evaluate(&vec![0.0; FRAME_LEN - 1]).unwrap_err();
    assert!(e.contains("not a whole number of frames"), "{e}");
    // The same model again is the same queue.
    let (runs, _) = batcher.stats();
    let again = runtime().shared(&data("tiny.onnx"), 64).unwrap();
    again.evaluate(&frame(0)).unwrap();
    assert_eq!(batcher.stats().0, runs + 1);
}

/// A queue that pads its batches with empty frames (as on CUDA) answers each caller with its
/// own frames' values, and counts only those.
#[test]
fn a_padded_queue_answers_with_the_callers_frames_alone() {
    let want = expected();
    let model = runtime().model(&data("tiny.onnx"), 1).unwrap();
    let batcher = nn::Batcher::start(model, 64, 32).unwrap();
    for n in [1, 3, want.len(), 33] {
        let picks: Vec<usize> = (0..n).map(|i| (i * 5 + n) % want.len()).collect();
        let got = batcher.evaluate(&picks.iter().flat_map(|&b| frame(b)).collect::<Vec<_>>()).unwrap();
        assert_eq!(got.len(), n);
        for (g, &b) in got.iter().zip(&picks) {
            assert!((g - want[b]).abs() < 1e-5, "{n} frames: frame {b} gave {g}, torch {}", want[b]);
        }
    }
    assert_eq!(batcher.stats(), (4, 1 + 3 + want.len() as u64 + 33));
}
