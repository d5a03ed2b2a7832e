//! What this machine can run beyond the engine: ONNX Runtime (and where it runs) and its GPU.

use super::Args;
use shared::protocol::{Capabilities, Gpu};

/// What this machine can run beyond the engine, found once at start-up and said in one line:
/// ONNX Runtime (CNN bots) and where it runs, and the GPU its driver names.
pub(super) fn capabilities(a: &Args) -> Capabilities {
    let gpu = gpu();
    let mut caps = Capabilities { gpu: gpu.clone(), ..Default::default() };
    if a.no_cnn {
        eprintln!("CNN bots: off (--no-cnn)");
        return caps;
    }
    // `runtime` says which library and device in its own line.
    match a.net.runtime() {
        Ok(rt) => {
            caps.onnx = true;
            caps.cuda = rt.cuda();
            if let (false, Some(g)) = (caps.cuda, &gpu) {
                eprintln!("CNN bots: on the CPU; the GPU ({}) is not used: install onnxruntime-gpu for it", g.name);
            }
        }
        Err(e) => eprintln!("CNN bots: off ({e:#}); the coordinator will send this worker no CNN batches"),
    }
    caps
}

/// The first GPU `nvidia-smi` names, with its memory; `None` without one (or without the
/// driver's tool).
fn gpu() -> Option<Gpu> {
    let out = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=name,memory.total", "--format=csv,noheader,nounits"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    parse_gpu(&String::from_utf8_lossy(&out.stdout))
}

/// `nvidia-smi`'s `name, memory (MiB)` line.
fn parse_gpu(text: &str) -> Option<Gpu> {
    let (name, mb) = text.lines().next()?.rsplit_once(',')?;
    let name = name.trim();
    (!name.is_empty()).then(|| Gpu { name: name.to_string(), memory_mb: mb.trim().parse().unwrap_or(0) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpus_are_read_from_nvidia_smi() {
        let g = parse_gpu("NVIDIA H100 80GB HBM3, 81559\nNVIDIA H100 80GB HBM3, 81559\n").unwrap();
        assert_eq!((g.name.as_str(), g.memory_mb), ("NVIDIA H100 80GB HBM3", 81559));
        assert_eq!(parse_gpu(""), None);
        assert_eq!(parse_gpu(", 100\n"), None);
        assert_eq!(parse_gpu("Some GPU, [N/A]\n").map(|g| g.memory_mb), Some(0));
    }
}
