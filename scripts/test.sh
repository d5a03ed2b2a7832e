#!/usr/bin/env bash
# The whole test suite: the Rust workspace (engine, nn, coordinator, worker, end-to-end) and the
# CNN trainer's pytest suite. The trainer's venv (scripts/trainer-env.sh) also provides the ONNX
# Runtime library the `nn` and `worker` tests load, and scripts/s3-env.sh the S3-compatible
# server of the log store's test. Needs Postgres and Chromium: see README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ORT_DYLIB_PATH="$(scripts/trainer-env.sh)"
export ORT_DYLIB_PATH
LEXHIVE_MOTO_SERVER="$(scripts/s3-env.sh)"
export LEXHIVE_MOTO_SERVER
cargo test --workspace --locked "$@"
trainer/.venv/bin/python -m pytest -q trainer
