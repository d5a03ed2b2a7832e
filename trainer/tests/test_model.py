import numpy as np
import torch

from lexhive_trainer.export import check, export
from lexhive_trainer.model import ValueNet


def test_seed_net_shape_and_range():
    torch.manual_seed(0)
    net = ValueNet().eval()
    v = net(torch.rand(3, 85, 15, 15), torch.rand(3, 76))
    assert v.shape == (3, 1)
    assert bool((v.abs() < 1).all())
    # conv stem + 6 blocks of two convs (+BN) + FC 140->128 + FC 128->1
    convs = 85 * 64 * 9 + 12 * 64 * 64 * 9
    bns = 13 * 2 * 64
    fcs = (64 + 76) * 128 + 128 + 128 + 1
    assert sum(p.numel() for p in net.parameters()) == convs + bns + fcs


def test_onnx_export_matches_torch_at_any_batch(tmp_path):
    torch.manual_seed(1)
    net = ValueNet(width=16, blocks=2, hidden=32)
    # Move BN statistics off their defaults so the export must carry them.
    net.train()
    with torch.no_grad():
        net(torch.rand(64, 85, 15, 15), torch.rand(64, 76))
    path = str(tmp_path / "m.onnx")
    export(net, path)
    for batch in (1, 7, 64):
        assert check(net, path, batch=batch) < 1e-4


def test_onnx_io_names_and_dynamic_batch(tmp_path):
    import onnx

    path = str(tmp_path / "m.onnx")
    export(ValueNet(width=8, blocks=1, hidden=8), path)
    m = onnx.load(path)
    ins = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in m.graph.input}
    outs = {o.name: [d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim] for o in m.graph.output}
    assert ins == {"planes": ["batch", 85, 15, 15], "scalars": ["batch", 76]}
    assert outs == {"value": ["batch", 1]}
    assert np.dtype(onnx.helper.tensor_dtype_to_np_dtype(m.graph.input[0].type.tensor_type.elem_type)) == np.float32
