import numpy as np
import pytest

from lexhive_trainer.frames import (
    PLANES,
    RECORD_BYTES,
    SCALARS,
    RecordStream,
    StreamError,
    write_records,
)


def records(path, n, seed=0):
    g = np.random.default_rng(seed)
    planes = g.random((n, PLANES, 15, 15)).astype(np.float32)
    scalars = g.random((n, SCALARS)).astype(np.float32)
    target = np.arange(n, dtype=np.float32)  # the record's index, to track it
    write_records(str(path), planes, scalars, target)
    return planes, scalars, target


def test_file_order_reads_back_every_float(tmp_path):
    p = tmp_path / "a.frames"
    planes, scalars, target = records(p, 23)
    s = RecordStream(str(p), batch=5, window_batches=2)
    batches = list(s)
    assert [b.target.shape[0] for b in batches] == [5, 5, 5, 5, 3]
    assert len(s) == 5
    got = np.concatenate([b.planes.numpy() for b in batches])
    np.testing.assert_array_equal(got, planes)
    np.testing.assert_array_equal(np.concatenate([b.scalars.numpy() for b in batches]), scalars)
    np.testing.assert_array_equal(np.concatenate([b.target.numpy()[:, 0] for b in batches]), target)


def test_shuffled_epochs_see_every_record_once_in_a_new_order(tmp_path):
    p = tmp_path / "a.frames"
    records(p, 50)
    s = RecordStream(str(p), batch=4, window_batches=3, seed=9)
    orders = []
    for _ in range(2):
        order = np.concatenate([b.target.numpy()[:, 0] for b in s])
        assert sorted(order.tolist()) == list(range(50))
        orders.append(order.tolist())
    assert orders[0] != orders[1]
    assert orders[0] != list(range(50))


def test_a_partial_record_is_refused_with_the_file_and_sizes(tmp_path):
    p = tmp_path / "cut.frames"
    records(p, 3)
    with open(p, "ab") as f:
        f.write(b"\0" * 10)
    with pytest.raises(StreamError, match=r"cut.frames: .*\(3 records and 10 bytes over\)"):
        RecordStream(str(p), batch=2)
    assert RECORD_BYTES == 76808


def test_an_empty_file_is_refused(tmp_path):
    p = tmp_path / "empty.frames"
    p.write_bytes(b"")
    with pytest.raises(StreamError, match="no records"):
        RecordStream(str(p), batch=2)
