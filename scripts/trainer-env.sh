#!/usr/bin/env bash
# The CNN trainer's Python environment: trainer/.venv with trainer/requirements.txt installed
# (PyTorch, ONNX, ONNX Runtime, pytest), all from PyPI. Idempotent: a second run only checks.
# Prints the path of the ONNX Runtime library inside it, which `worker` can load
# (ORT_DYLIB_PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
venv=trainer/.venv
stamp=$venv/.requirements
if [[ ! -f $stamp ]] || ! cmp -s trainer/requirements.txt "$stamp"; then
    [[ -x $venv/bin/python ]] || "$python" -m venv "$venv" >&2
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r trainer/requirements.txt >&2
    cp trainer/requirements.txt "$stamp"
fi
# `python -m lexhive_trainer.train` from anywhere: the package folder on the venv's path.
echo "$PWD/trainer" > "$(echo "$venv"/lib/python3*/site-packages)/lexhive-trainer.pth"
lib=$(ls "$venv"/lib/python3*/site-packages/onnxruntime/capi/libonnxruntime.so.* 2>/dev/null | head -1)
[[ -n $lib ]] || { echo "error: no libonnxruntime in $venv" >&2; exit 1; }
echo "$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")"
