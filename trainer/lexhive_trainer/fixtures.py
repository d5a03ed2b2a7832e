"""Writes the models the Rust tests of `nn` load (nn/tests/data), with the values torch gives
for fixed frames, so that the Rust side is checked against the trainer's own numbers:

    python -m lexhive_trainer.fixtures nn/tests/data
"""

from __future__ import annotations

import json
import os
import sys
import warnings

import numpy as np
import torch
from torch import nn

from .export import export
from .frames import DIM, FRAME_FLOATS, PLANES, SCALARS, SQUARES
from .model import ValueNet


def frame(b: int) -> np.ndarray:
    """Frame `b` of the fixed test batch: a pattern both sides compute alike."""
    i = np.arange(FRAME_FLOATS)
    return (((i * 7 + b * 13) % 11) == 0).astype(np.float32) * (1.0 + (b % 3))


class WrongPlanes(nn.Module):
    """Takes 84 planes: a model from another encoding."""

    def forward(self, planes: torch.Tensor, scalars: torch.Tensor) -> torch.Tensor:
        return torch.tanh(planes.mean(dim=(1, 2, 3)).unsqueeze(1) + scalars.mean(dim=1, keepdim=True))


def main(out: str) -> int:
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(3)
    net = ValueNet(width=8, blocks=1, hidden=16)
    net.train()
    with torch.no_grad():  # give BN non-default statistics
        net(torch.rand(32, PLANES, DIM, DIM), torch.rand(32, SCALARS))
    net.eval()
    export(net, os.path.join(out, "tiny.onnx"))
    frames = np.stack([frame(b) for b in range(5)])
    planes = torch.from_numpy(frames[:, : PLANES * SQUARES].reshape(5, PLANES, DIM, DIM).copy())
    scalars = torch.from_numpy(frames[:, PLANES * SQUARES :].copy())
    with torch.no_grad():
        values = net(planes, scalars)[:, 0].tolist()
    with open(os.path.join(out, "tiny.expect.json"), "w") as f:
        json.dump({"frames": "frame(b) = ((i*7 + b*13) % 11 == 0) * (1 + b % 3)", "values": values}, f, indent=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            WrongPlanes(),
            (torch.zeros(2, 84, DIM, DIM), torch.zeros(2, SCALARS)),
            os.path.join(out, "wrong-planes.onnx"),
            input_names=["planes", "scalars"],
            output_names=["value"],
            dynamic_axes={"planes": {0: "batch"}, "scalars": {0: "batch"}, "value": {0: "batch"}},
            dynamo=False,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "nn/tests/data"))
