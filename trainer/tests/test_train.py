import json
import os

import numpy as np

from lexhive_trainer.frames import PLANES, SCALARS, write_records
from lexhive_trainer.train import main, parse, train


def learnable(path, n, seed):
    """Outcomes a net can learn: the sign of scalar 75 (the spread) decides the game; the rest is
    a little noise."""
    g = np.random.default_rng(seed)
    planes = np.zeros((n, PLANES, 15, 15), dtype=np.float32)
    planes[:, 84] = g.random((n, 15, 15)) < 0.02
    scalars = 0.1 * g.random((n, SCALARS)).astype(np.float32)
    scalars[:, 75] = g.choice([-1, 1], n) * g.uniform(0.2, 1, n)
    target = np.sign(scalars[:, 75]).astype(np.float32)
    write_records(str(path), planes, scalars, target)


def test_a_small_net_learns_and_exports_its_best_checkpoint(tmp_path):
    learnable(tmp_path / "t.frames", 2048, 1)
    learnable(tmp_path / "v.frames", 128, 2)
    out = tmp_path / "model"
    lines = []
    args = parse(
        [
            "--train", str(tmp_path / "t.frames"), "--val", str(tmp_path / "v.frames"), "--out", str(out),
            "--width", "8", "--blocks", "1", "--hidden", "16", "--batch", "128", "--epochs", "10",
            "--lr", "3e-3", "--threads", "1",
        ]
    )
    meta = train(args, log=lines.append)
    assert meta["val_accuracy"] > 0.85, lines
    assert meta["val_loss"] < 0.3, lines
    assert meta["onnx_max_abs_diff"] < 1e-4
    for f in ("best.pt", "model.onnx", "model.json"):
        assert os.path.exists(out / f)
    assert json.load(open(out / "model.json"))["epoch"] == meta["epoch"]
    # The best epoch's validation loss is the lowest one logged.
    logged = [float(line.split("val loss ")[1].split()[0]) for line in lines if line.startswith("epoch")]
    assert abs(min(logged) - meta["val_loss"]) < 1e-4


def test_bad_stream_is_one_line_and_status_2(tmp_path, capsys):
    (tmp_path / "bad.frames").write_bytes(b"\0" * 100)
    learnable(tmp_path / "v.frames", 4, 2)
    code = main(["--train", str(tmp_path / "bad.frames"), "--val", str(tmp_path / "v.frames"), "--out", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "bad.frames" in err and len(err.strip().splitlines()) == 1
