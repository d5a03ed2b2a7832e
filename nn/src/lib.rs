//! The CNN evaluator: ONNX value nets run through ONNX Runtime, which is loaded at run time
//! from a library the user installed from PyPI (`pip install onnxruntime`, or
//! `onnxruntime-gpu` for CUDA), never downloaded at build time. Kept out of the engine so
//! that the engine builds and runs without it.
//!
//! A model takes `planes` `[n, 85, 15, 15]` and `scalars` `[n, 76]` (f32) and gives `value`
//! `[n, 1]`: the mover's expected outcome, -1 to 1 (`docs/CNN.md`). Shapes are checked when
//! the model is loaded, so a model that loads evaluates any batch.

mod batch;

pub use batch::Batcher;
use engine::board::SQUARES;
use engine::features::{FRAME_LEN, PLANES, SCALARS};
use ort::ep::{self, ExecutionProvider};
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::{TensorElementType, TensorRef, ValueType};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

#[derive(Debug, thiserror::Error)]
pub enum NnError {
    #[error("{0}")]
    Runtime(String),
    #[error("{path}: {message}")]
    Model { path: String, message: String },
    #[error("evaluating a batch of {batch}: {message}")]
    Run { batch: usize, message: String },
}

/// Where inference runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    Cpu,
    Cuda,
    /// CUDA when the library has it and a GPU answers, else the CPU.
    Auto,
}

impl std::str::FromStr for Device {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "cpu" => Ok(Device::Cpu),
            "cuda" => Ok(Device::Cuda),
            "auto" => Ok(Device::Auto),
            _ => Err(format!("device `{s}`: expected cpu, cuda or auto")),
        }
    }
}

/// How to install the library, for error messages.
pub const INSTALL: &str = "install it with `python3 -m pip install onnxruntime==1.31.1` (CPU) or \
                           `onnxruntime-gpu` (CUDA), or run scripts/trainer-env.sh, or point ORT_DYLIB_PATH \
                           at libonnxruntime.so";

/// ONNX Runtime, loaded once per process.
pub struct Runtime {
    library: PathBuf,
    cuda: bool,
    env: ort::environment::Environment,
    /// One queue per model file, for the threads that share it ([`Runtime::shared`]).
    queues: Mutex<HashMap<PathBuf, Batcher>>,
}

static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

impl Runtime {
    /// Loads ONNX Runtime (the first call decides; later calls get the same runtime): from
    /// `library`, else `$ORT_DYLIB_PATH`, else the `onnxruntime` package of `python3`. With
    /// `Device::Cuda` the CUDA provider must be usable; `Device::Auto` uses it when it is.
    pub fn get(library: Option<&Path>, device: Device) -> Result<&'static Runtime, NnError> {
        let rt =
            RUNTIME.get_or_init(|| Self::load(library, device)).as_ref().map_err(|e| NnError::Runtime(e.clone()))?;
        if device == Device::Cuda && !rt.cuda {
            return Err(NnError::Runtime("ONNX Runtime is already loaded for the CPU in this process".into()));
        }
        Ok(rt)
    }

    fn load(library: Option<&Path>, device: Device) -> Result<Runtime, String> {
        let library = match library {
            Some(p) => p.to_path_buf(),
            None => find_library()?,
        };
        if !library.is_file() {
            return Err(format!("ONNX Runtime library {}: no such file; {INSTALL}", library.display()));
        }
        let env = ort::init_from(&library)
            .map_err(|e| format!("ONNX Runtime library {}: cannot load: {e}", library.display()))?
            .with_name("lexhive")
            .build()
            .map_err(|e| format!("ONNX Runtime: {e}"))?;
        let cuda_built = ep::CUDA::is_available().unwrap_or(false);
        let cuda = match device {
            Device::Cpu => false,
            Device::Auto => cuda_built,
            Device::Cuda if cuda_built => true,
            Device::Cuda => {
                return Err(format!(
                    "--device cuda: the ONNX Runtime at {} has no CUDA provider (install onnxruntime-gpu)",
                    library.display()
                ));
            }
        };
        Ok(Runtime { library, cuda, env, queues: Mutex::new(HashMap::new()) })
    }

    /// One line for start-up logs: which library and which provider.
    pub fn describe(&self) -> String {
        format!("ONNX Runtime {} on {}", self.library.display(), if self.cuda { "CUDA" } else { "the CPU" })
    }

    pub fn cuda(&self) -> bool {
        self.cuda
    }

    /// The one queue of the model at `path` in this process, started (and the model loaded,
    /// with every core's intra-op threads on the CPU) at the first call: every thread's bot
    /// sends its frames there, so that a GPU sees batches of many positions.
    pub fn shared(&self, path: &Path, max_frames: usize) -> Result<Batcher, NnError> {
        let mut queues = self.queues.lock().expect("model queues");
        if let Some(b) = queues.get(path) {
            return Ok(b.clone());
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let pad = if self.cuda { GPU_PAD } else { 1 };
        let batcher = Batcher::start(self.model(path, threads)?, max_frames, pad)?;
        queues.insert(path.to_path_buf(), batcher.clone());
        Ok(batcher)
    }

    /// Loads a value net, checking its inputs and output. `threads` is ONNX Runtime's
    /// intra-op threads on the CPU (1 is fastest when every core runs its own model).
    pub fn model(&self, path: &Path, threads: usize) -> Result<Model, NnError> {
        let err = |message: String| NnError::Model { path: path.display().to_string(), message };
        if !path.is_file() {
            return Err(err("no such file".into()));
        }
        let mut builder = Session::builder(&self.env)
            .and_then(|b| Ok(b.with_optimization_level(GraphOptimizationLevel::Level3)?))
            .and_then(|b| Ok(b.with_intra_threads(threads.max(1))?))
            .map_err(|e| err(e.to_string()))?;
        if self.cuda {
            builder = builder
                .with_execution_providers([cuda_provider().build().error_on_failure()])
                .map_err(|e| err(format!("the CUDA provider failed: {e}")))?;
        }
        let session = builder.commit_from_file(path).map_err(|e| err(format!("not a loadable ONNX model: {e}")))?;
        check_io(&session).map_err(err)?;
        Ok(Model { session, cuda: self.cuda, planes: Vec::new(), scalars: Vec::new() })
    }
}

/// The batching queue's batches on CUDA are padded to a multiple of this many frames, so that
/// the provider meets a few batch sizes, not hundreds (see `Batcher::start`).
const GPU_PAD: usize = 32;

/// The CUDA provider of every session. The batching queue's batches take whatever size has
/// arrived, and cuDNN's default, an exhaustive search, times every convolution algorithm again
/// for each new size: on an H100 that made the CNN bot 2.5-4.4x slower (docs/CNN.md). The
/// heuristic choice costs next to nothing per size.
fn cuda_provider() -> ep::CUDA {
    ep::CUDA::default().with_conv_algorithm_search(ep::cuda::ConvAlgorithmSearch::Heuristic)
}

/// The library `python3`'s `onnxruntime` package ships, or `$ORT_DYLIB_PATH`.
fn find_library() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("ORT_DYLIB_PATH") {
        return Ok(p.into());
    }
    let script = "import onnxruntime, os; print(os.path.join(os.path.dirname(onnxruntime.__file__), 'capi'))";
    let out = std::process::Command::new("python3").args(["-c", script]).output();
    let dir = match out {
        Ok(o) if o.status.success() => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
        _ => {
            return Err(format!(
                "no ONNX Runtime found (ORT_DYLIB_PATH is unset, python3 has no onnxruntime); {INSTALL}"
            ));
        }
    };
    let lib = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libonnxruntime.so")))
        .min_by_key(|p| p.as_os_str().len());
    lib.ok_or_else(|| format!("{}: no libonnxruntime.so in python3's onnxruntime; {INSTALL}", dir.display()))
}

/// Whether the session has the documented inputs and output.
fn check_io(session: &Session) -> Result<(), String> {
    let want = [("planes", vec![PLANES as i64, 15, 15]), ("scalars", vec![SCALARS as i64])];
    let inputs = session.inputs();
    if inputs.len() != 2 {
        return Err(format!("expected inputs `planes` and `scalars`; the model has {} inputs", inputs.len()));
    }
    for (name, dims) in &want {
        let input = inputs
            .iter()
            .find(|i| i.name() == *name)
            .ok_or_else(|| format!("no input named `{name}` (it has {})", names(inputs)))?;
        check_tensor(name, input.dtype(), dims)?;
    }
    let outputs = session.outputs();
    let value = outputs
        .iter()
        .find(|o| o.name() == "value")
        .ok_or_else(|| format!("no output named `value` (it has {})", names(outputs)))?;
    check_tensor("value", value.dtype(), &[1])
}

fn names(outlets: &[ort::value::Outlet]) -> String {
    outlets.iter().map(|o| format!("`{}`", o.name())).collect::<Vec<_>>().join(", ")
}

/// A batch-first f32 tensor whose other dimensions are `dims`.
fn check_tensor(name: &str, ty: &ValueType, dims: &[i64]) -> Result<(), String> {
    let (Some(elem), Some(shape)) = (ty.tensor_type(), ty.tensor_shape()) else {
        return Err(format!("`{name}` is not a tensor"));
    };
    if elem != TensorElementType::Float32 {
        return Err(format!("`{name}` holds {elem:?}, expected f32"));
    }
    let got: Vec<i64> = shape.iter().copied().collect();
    if got.len() != dims.len() + 1 || got[1..] != *dims || got[0] > 0 {
        let show = |d: &[i64]| d.iter().map(|x| if *x < 0 { "n".into() } else { x.to_string() }).collect::<Vec<_>>();
        return Err(format!(
            "`{name}` has shape [{}], expected [n, {}] with a dynamic batch",
            show(&got).join(", "),
            show(dims).join(", ")
        ));
    }
    Ok(())
}

/// A loaded value net. Not shared between threads: each thread loads its own (a session per
/// thread with one intra-op thread is fastest on CPUs).
pub struct Model {
    session: Session,
    cuda: bool,
    planes: Vec<f32>,
    scalars: Vec<f32>,
}

impl Model {
    /// Values of a batch of frames (`FRAME_LEN` floats each, as `engine::features` writes
    /// them), in order.
    pub fn evaluate(&mut self, frames: &[f32]) -> Result<Vec<f32>, NnError> {
        let n = frames.len() / FRAME_LEN;
        let run = |message: String| NnError::Run { batch: n, message };
        if n == 0 || !frames.len().is_multiple_of(FRAME_LEN) {
            return Err(run(format!("{} floats is not a whole number of frames", frames.len())));
        }
        self.planes.clear();
        self.scalars.clear();
        for frame in frames.chunks_exact(FRAME_LEN) {
            let (p, s) = frame.split_at(PLANES * SQUARES);
            self.planes.extend_from_slice(p);
            self.scalars.extend_from_slice(s);
        }
        let planes =
            TensorRef::from_array_view(([n, PLANES, 15, 15], &self.planes[..])).map_err(|e| run(e.to_string()))?;
        let scalars = TensorRef::from_array_view(([n, SCALARS], &self.scalars[..])).map_err(|e| run(e.to_string()))?;
        let outputs =
            self.session.run(ort::inputs!["planes" => planes, "scalars" => scalars]).map_err(|e| run(e.to_string()))?;
        let (_, values) = outputs["value"].try_extract_tensor::<f32>().map_err(|e| run(e.to_string()))?;
        if values.len() != n {
            return Err(run(format!("the model gave {} values", values.len())));
        }
        Ok(values.to_vec())
    }

    pub fn cuda(&self) -> bool {
        self.cuda
    }
}

impl engine::features::Valuer for Model {
    fn values(&mut self, frames: &[f32]) -> Result<Vec<f32>, String> {
        self.evaluate(frames).map_err(|e| e.to_string())
    }
}
