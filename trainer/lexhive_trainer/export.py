"""ONNX export with a dynamic batch axis: inputs `planes` [n,85,15,15] and `scalars` [n,76],
output `value` [n,1], all f32 (the contract `worker` checks on load)."""

from __future__ import annotations

import warnings

import numpy as np
import torch

from .frames import DIM, PLANES, SCALARS
from .model import ValueNet

OPSET = 17


def export(model: ValueNet, path: str) -> None:
    model = model.eval().cpu()
    example = (torch.zeros(2, PLANES, DIM, DIM), torch.zeros(2, SCALARS))
    with warnings.catch_warnings():
        # The TorchScript exporter needs no extra packages; its deprecation notice is noise here.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            example,
            path,
            input_names=["planes", "scalars"],
            output_names=["value"],
            dynamic_axes={"planes": {0: "batch"}, "scalars": {0: "batch"}, "value": {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,
        )


def check(model: ValueNet, path: str, batch: int = 5, seed: int = 0) -> float:
    """Largest difference between torch and ONNX Runtime on random inputs."""
    import onnxruntime

    g = np.random.default_rng(seed)
    planes = (g.random((batch, PLANES, DIM, DIM)) < 0.1).astype(np.float32)
    scalars = g.random((batch, SCALARS)).astype(np.float32)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    (onnx_out,) = session.run(["value"], {"planes": planes, "scalars": scalars})
    with torch.no_grad():
        torch_out = model.eval().cpu()(torch.from_numpy(planes), torch.from_numpy(scalars)).numpy()
    return float(np.abs(onnx_out - torch_out).max())
