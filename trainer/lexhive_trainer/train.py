"""Train the value net on record streams and export the best checkpoint to ONNX.

    python -m lexhive_trainer.train --train T.frames --val V.frames --out DIR [--width 64 --blocks 6]

Writes DIR/best.pt (the checkpoint with the lowest validation loss), DIR/model.onnx (its
export) and DIR/model.json (what was trained on what, and how well it did)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import torch
from torch import nn

from .export import check, export
from .frames import RecordStream, StreamError
from .model import ValueNet


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="lexhive_trainer.train", description=__doc__.split("\n")[0])
    p.add_argument("--train", required=True, help="training record stream (worker cnn assemble --out)")
    p.add_argument("--val", required=True, help="held-out record stream (worker cnn assemble --val)")
    p.add_argument("--out", required=True, help="folder for best.pt, model.onnx and model.json")
    p.add_argument("--width", type=int, default=64, help="channels of the conv tower (seed: 64)")
    p.add_argument("--blocks", type=int, default=6, help="residual blocks (seed: 6)")
    p.add_argument("--hidden", type=int, default=128, help="units of the hidden FC layer (seed: 128)")
    p.add_argument("--batch", type=int, default=2048, help="records per step (seed: 2048)")
    p.add_argument("--epochs", type=int, default=10, help="passes over the training stream")
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: no limit)")
    p.add_argument("--lr", type=float, default=3e-4, help="AdamW learning rate")
    p.add_argument("--weight-decay", type=float, default=1e-4, help="AdamW weight decay")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto", help="cuda when available under auto")
    p.add_argument("--threads", type=int, default=0, help="CPU threads for torch (0: torch's default)")
    p.add_argument("--seed", type=int, default=1, help="seed of the initial weights and the shuffle")
    return p.parse_args(argv)


def evaluate(model: nn.Module, stream: RecordStream, device: torch.device) -> tuple[float, float]:
    """Mean SmoothL1 loss and the share of decided games whose outcome the sign predicts."""
    loss_fn = nn.SmoothL1Loss(reduction="sum")
    model.eval()
    total, n, right, decided = 0.0, 0, 0, 0
    with torch.no_grad():
        for b in stream:
            b = b.to(device)
            v = model(b.planes, b.scalars).float()
            total += loss_fn(v, b.target).item()
            n += b.target.shape[0]
            mask = b.target != 0
            right += ((v.sign() == b.target) & mask).sum().item()
            decided += mask.sum().item()
    return total / max(n, 1), right / max(decided, 1)


def train(a: argparse.Namespace, log=print) -> dict:
    torch.manual_seed(a.seed)
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("error: --device cuda but torch sees no CUDA device")
    device = torch.device("cuda" if a.device != "cpu" and torch.cuda.is_available() else "cpu")
    train_stream = RecordStream(a.train, a.batch, seed=a.seed)
    val_stream = RecordStream(a.val, a.batch)
    model = ValueNet(a.width, a.blocks, a.hidden).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    loss_fn = nn.SmoothL1Loss()
    amp = device.type == "cuda"
    scaler = torch.amp.GradScaler("cuda", enabled=amp)
    os.makedirs(a.out, exist_ok=True)
    params = sum(p.numel() for p in model.parameters())
    log(
        f"{params:,} parameters on {device}; {train_stream.records:,} training and "
        f"{val_stream.records:,} validation records; batch {a.batch}"
    )
    best = {"val_loss": math.inf}
    step, start = 0, time.time()
    for epoch in range(1, a.epochs + 1):
        model.train()
        running, seen = 0.0, 0
        for b in train_stream:
            b = b.to(device)
            with torch.autocast(device.type, dtype=torch.float16, enabled=amp):
                loss = loss_fn(model(b.planes, b.scalars).float(), b.target)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            running += loss.item() * b.target.shape[0]
            seen += b.target.shape[0]
            step += 1
            if a.max_steps and step >= a.max_steps:
                break
        val_loss, val_acc = evaluate(model, val_stream, device)
        rate = seen / max(time.time() - start, 1e-9)
        log(
            f"epoch {epoch}: train loss {running / max(seen, 1):.4f}  val loss {val_loss:.4f}  "
            f"val outcome accuracy {val_acc:.3f}  ({rate:,.0f} records/s)"
        )
        start = time.time()
        if val_loss < best["val_loss"]:
            best = {"val_loss": val_loss, "val_accuracy": val_acc, "epoch": epoch, "step": step}
            torch.save({"config": model.config, "state": model.state_dict()}, os.path.join(a.out, "best.pt"))
        if a.max_steps and step >= a.max_steps:
            break
    ckpt = torch.load(os.path.join(a.out, "best.pt"), map_location="cpu")
    final = ValueNet(**ckpt["config"])
    final.load_state_dict(ckpt["state"])
    onnx_path = os.path.join(a.out, "model.onnx")
    export(final, onnx_path)
    diff = check(final, onnx_path)
    meta = {
        **ckpt["config"],
        **best,
        "parameters": params,
        "train_records": train_stream.records,
        "val_records": val_stream.records,
        "batch": a.batch,
        "lr": a.lr,
        "weight_decay": a.weight_decay,
        "seed": a.seed,
        "onnx_max_abs_diff": diff,
    }
    with open(os.path.join(a.out, "model.json"), "w") as f:
        json.dump(meta, f, indent=2)
    log(f"best: epoch {best['epoch']} val loss {best['val_loss']:.4f}; wrote {onnx_path} (ONNX vs torch {diff:.1e})")
    return meta


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    try:
        train(a)
    except (StreamError, FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
