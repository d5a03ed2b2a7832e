//! Where value nets run (ONNX Runtime on the CPU or through CUDA) and where their models come
//! from: what CNN bots and simulating bots with a `model=` are built with, by the local
//! commands and by the volunteer's runners alike.

use anyhow::Result;
use engine::features::Encoder;
use std::path::{Path, PathBuf};

/// Where the value nets run; shared by every command that loads one.
#[derive(clap::Args, Clone, Debug)]
pub struct NetArgs {
    /// Where CNN inference runs: `cuda` needs onnxruntime-gpu and a GPU; `auto` uses them when
    /// present.
    #[arg(long, default_value = "auto", value_parser = ["cpu", "cuda", "auto"])]
    pub device: String,
    /// The ONNX Runtime library (`libonnxruntime.so`); default: `$ORT_DYLIB_PATH`, else the
    /// one in python3's `onnxruntime` package.
    #[arg(long, env = "ORT_DYLIB_PATH")]
    pub onnxruntime: Option<PathBuf>,
    /// One copy of each model for all threads, fed through a batching queue (always so on
    /// CUDA, where one position's candidates would leave the GPU idle; on the CPU a copy per
    /// thread is faster).
    #[arg(long)]
    pub shared_net: bool,
}

/// Most frames the batching queue runs at once.
pub const QUEUE_BATCH: usize = 1024;

impl NetArgs {
    /// ONNX Runtime, loaded once; says where it runs the first time.
    pub fn runtime(&self) -> Result<&'static nn::Runtime> {
        let device: nn::Device = self.device.parse().map_err(anyhow::Error::msg)?;
        static SAID: std::sync::Once = std::sync::Once::new();
        let rt = nn::Runtime::get(self.onnxruntime.as_deref(), device)?;
        SAID.call_once(|| eprintln!("{}", rt.describe()));
        Ok(rt)
    }

    /// The model loader CNN bots are built with: `model=` names a file, or the sha256 of an
    /// artifact in `models`; checked against `dist`.
    pub fn loader<'a>(
        &'a self,
        dist: &'a engine::tiles::Distribution,
        models: &'a Models,
    ) -> impl Fn(&str) -> Result<Box<dyn engine::features::Valuer>, String> + 'a {
        move |model: &str| {
            Encoder::new(dist).map_err(|e| e.to_string())?;
            let rt = self.runtime().map_err(|e| format!("{e:#}"))?;
            let path = models.get(model).map_or(Path::new(model), PathBuf::as_path);
            Ok(if rt.cuda() || self.shared_net {
                Box::new(rt.shared(path, QUEUE_BATCH).map_err(|e| e.to_string())?) as Box<dyn engine::features::Valuer>
            } else {
                Box::new(rt.model(path, 1).map_err(|e| e.to_string())?)
            })
        }
    }
}

/// Model files by the sha256 a bot spec names them with (a volunteer's fetched artifacts).
pub type Models = std::collections::HashMap<String, PathBuf>;

/// What CNN bots are built with: where their nets run, and the models fetched by sha256.
#[derive(Clone, Copy)]
pub struct Nets<'a> {
    pub args: &'a NetArgs,
    pub models: &'a Models,
}
