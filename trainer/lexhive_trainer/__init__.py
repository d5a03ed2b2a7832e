"""lexhive's CNN trainer: reads the record streams `worker cnn assemble` writes, trains the
value net, and exports it to ONNX for `worker` (see docs/CNN.md)."""
