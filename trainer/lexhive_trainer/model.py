"""The value net: conv 3x3 + BN + ReLU, residual blocks, global average pooling, the scalars
concatenated, FC + ReLU, FC + tanh. The seed's net is width 64 with 6 blocks; smaller nets are
for CPUs."""

from __future__ import annotations

import torch
from torch import nn

from .frames import PLANES, SCALARS


class Residual(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(width, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.body(x))


class ValueNet(nn.Module):
    def __init__(self, width: int = 64, blocks: int = 6, hidden: int = 128):
        super().__init__()
        if width < 1 or blocks < 0 or hidden < 1:
            raise ValueError("width and hidden must be positive, blocks not negative")
        self.config = {"width": width, "blocks": blocks, "hidden": hidden}
        self.stem = nn.Sequential(
            nn.Conv2d(PLANES, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True)
        )
        self.tower = nn.Sequential(*[Residual(width) for _ in range(blocks)])
        self.head = nn.Sequential(
            nn.Linear(width + SCALARS, hidden), nn.ReLU(inplace=True), nn.Linear(hidden, 1), nn.Tanh()
        )

    def forward(self, planes: torch.Tensor, scalars: torch.Tensor) -> torch.Tensor:
        x = self.tower(self.stem(planes))
        pooled = x.mean(dim=(2, 3))
        return self.head(torch.cat([pooled, scalars], dim=1))
