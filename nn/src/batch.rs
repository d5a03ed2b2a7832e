//! One model fed by many threads. On a GPU one position's candidates (20 frames) leave most of
//! the device idle, so a worker's threads send their frames to one queue, and a thread of the
//! queue's own runs whatever has arrived as one batch. It never waits to fill a batch: while
//! the device runs one batch the next one gathers, so batches grow with the load by themselves
//! and a lone thread is not slowed by a timer.

use crate::{Model, NnError};
use engine::features::FRAME_LEN;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

/// A request: one caller's frames, and where its values go.
struct Request {
    frames: Vec<f32>,
    reply: mpsc::SyncSender<Result<Vec<f32>, String>>,
}

/// The sending end of a model's queue; each thread's bot holds a clone.
#[derive(Clone)]
pub struct Batcher {
    tx: mpsc::Sender<Request>,
    /// Batches run and frames valued so far: their ratio is the mean batch.
    runs: Arc<AtomicU64>,
    frames: Arc<AtomicU64>,
}

impl Batcher {
    /// Start the queue's thread, which owns `model` and runs at most `max_frames` frames a
    /// batch (more when one caller sends more), filled with empty frames up to a multiple of
    /// `pad` (1: as they come). The thread ends when every `Batcher` is gone.
    ///
    /// Padding is for the GPU: each batch size new to a session costs ONNX Runtime's CUDA
    /// provider a plan of its own, and a device idle at small batches runs the empty frames
    /// for free. A CPU pays for every frame, so it takes batches as they come.
    pub fn start(model: Model, max_frames: usize, pad: usize) -> Result<Batcher, NnError> {
        let (tx, rx) = mpsc::channel();
        let (runs, frames) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let counts = (runs.clone(), frames.clone());
        std::thread::Builder::new()
            .name("nn-batcher".into())
            .spawn(move || serve(model, &rx, max_frames.max(1), pad.max(1), &counts))
            .map_err(|e| NnError::Runtime(format!("cannot start the batching thread: {e}")))?;
        Ok(Batcher { tx, runs, frames })
    }

    /// Batches run and frames valued since the queue started.
    pub fn stats(&self) -> (u64, u64) {
        (self.runs.load(Ordering::Relaxed), self.frames.load(Ordering::Relaxed))
    }

    /// The values of `frames` (whole frames), in order, evaluated in a batch with whatever
    /// other threads sent meanwhile.
    pub fn evaluate(&self, frames: &[f32]) -> Result<Vec<f32>, String> {
        if frames.is_empty() || !frames.len().is_multiple_of(FRAME_LEN) {
            return Err(format!("{} floats is not a whole number of frames", frames.len()));
        }
        let (reply, values) = mpsc::sync_channel(1);
        let gone = || "the batching thread has stopped".to_string();
        self.tx.send(Request { frames: frames.to_vec(), reply }).map_err(|_| gone())?;
        values.recv().map_err(|_| gone())?
    }
}

impl engine::features::Valuer for Batcher {
    fn values(&mut self, frames: &[f32]) -> Result<Vec<f32>, String> {
        self.evaluate(frames)
    }
}

fn serve(
    mut model: Model,
    rx: &mpsc::Receiver<Request>,
    max_frames: usize,
    pad: usize,
    (runs, valued): &(Arc<AtomicU64>, Arc<AtomicU64>),
) {
    let mut frames = Vec::new();
    while let Ok(first) = rx.recv() {
        frames.clear();
        frames.extend_from_slice(&first.frames);
        let mut batch = vec![first];
        while frames.len() / FRAME_LEN < max_frames {
            match rx.try_recv() {
                Ok(r) => {
                    frames.extend_from_slice(&r.frames);
                    batch.push(r);
                }
                Err(_) => break,
            }
        }
        let n = frames.len() / FRAME_LEN;
        runs.fetch_add(1, Ordering::Relaxed);
        valued.fetch_add(n as u64, Ordering::Relaxed);
        frames.resize(n.next_multiple_of(pad) * FRAME_LEN, 0.0);
        match model.evaluate(&frames) {
            Ok(values) => {
                let mut at = 0;
                for r in batch {
                    let n = r.frames.len() / FRAME_LEN;
                    // A caller that gave up no longer listens; nothing to do for it.
                    let _ = r.reply.send(Ok(values[at..at + n].to_vec()));
                    at += n;
                }
            }
            Err(e) => {
                for r in batch {
                    let _ = r.reply.send(Err(e.to_string()));
                }
            }
        }
    }
}
