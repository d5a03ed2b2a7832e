"""The record stream: per turn, 85x15x15 plane floats, 76 scalar floats and one target float,
all little-endian f32, records back to back with no header (docs/CNN.md)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import torch

PLANES = 85
DIM = 15
SQUARES = DIM * DIM
SCALARS = 76
FRAME_FLOATS = PLANES * SQUARES + SCALARS
RECORD_FLOATS = FRAME_FLOATS + 1
RECORD_BYTES = RECORD_FLOATS * 4


class StreamError(ValueError):
    """A record file that is not a whole number of records."""


def record_count(path: str) -> int:
    size = os.path.getsize(path)
    if size % RECORD_BYTES != 0:
        raise StreamError(
            f"{path}: {size} bytes is not a whole number of {RECORD_BYTES}-byte records "
            f"({size // RECORD_BYTES} records and {size % RECORD_BYTES} bytes over)"
        )
    return size // RECORD_BYTES


@dataclass
class Batch:
    planes: torch.Tensor  # [n, 85, 15, 15]
    scalars: torch.Tensor  # [n, 76]
    target: torch.Tensor  # [n, 1]

    def to(self, device: torch.device) -> "Batch":
        return Batch(*(t.to(device, non_blocking=True) for t in (self.planes, self.scalars, self.target)))


def split(records: np.ndarray) -> Batch:
    """Tensors of a [n, RECORD_FLOATS] array (views, no copy)."""
    t = torch.from_numpy(records)
    n = t.shape[0]
    return Batch(
        t[:, : PLANES * SQUARES].reshape(n, PLANES, DIM, DIM),
        t[:, PLANES * SQUARES : FRAME_FLOATS],
        t[:, FRAME_FLOATS:],
    )


class RecordStream:
    """Batches of a record file, read a window at a time so that memory stays near
    `window_batches x batch x record size` whatever the file's size. With a seed, the windows
    are visited in a shuffled order and records shuffled within each window (a fresh order each
    epoch); without one, records come in file order."""

    def __init__(self, path: str, batch: int, window_batches: int = 8, seed: int | None = None):
        if batch < 1:
            raise ValueError("batch must be at least 1")
        self.path = path
        self.batch = batch
        self.window = batch * max(1, window_batches)
        self.seed = seed
        self.epoch = 0
        self.records = record_count(path)
        if self.records == 0:
            raise StreamError(f"{path}: no records")

    def __len__(self) -> int:
        return -(-self.records // self.batch)

    def __iter__(self) -> Iterator[Batch]:
        rng = np.random.default_rng(None if self.seed is None else (self.seed, self.epoch))
        self.epoch += 1
        starts = np.arange(0, self.records, self.window)
        if self.seed is not None:
            rng.shuffle(starts)
        carry = np.empty((0, RECORD_FLOATS), dtype=np.float32)
        with open(self.path, "rb") as f:
            for start in starts:
                n = min(self.window, self.records - start)
                f.seek(int(start) * RECORD_BYTES)
                window = np.fromfile(f, dtype="<f4", count=n * RECORD_FLOATS)
                if window.size != n * RECORD_FLOATS:
                    raise StreamError(f"{self.path}: file shrank while reading")
                window = window.reshape(n, RECORD_FLOATS)
                if self.seed is not None:
                    window = window[rng.permutation(n)]
                if carry.shape[0]:
                    window = np.concatenate([carry, window])
                whole = window.shape[0] // self.batch * self.batch
                for k in range(0, whole, self.batch):
                    yield split(window[k : k + self.batch].astype(np.float32, copy=False))
                carry = window[whole:]
        if carry.shape[0]:
            yield split(np.ascontiguousarray(carry))


def write_records(path: str, planes: np.ndarray, scalars: np.ndarray, target: np.ndarray) -> None:
    """Writes records (for tests and tools): planes [n,85,15,15], scalars [n,76], target [n]."""
    n = planes.shape[0]
    rec = np.concatenate(
        [planes.reshape(n, -1), scalars.reshape(n, SCALARS), target.reshape(n, 1)], axis=1
    ).astype("<f4")
    rec.tofile(path)
