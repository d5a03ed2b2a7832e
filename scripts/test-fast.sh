#!/usr/bin/env bash
# The fast tier, for your own loop: the engine's suites, `shared`, the coordinator's and the
# worker's unit tests, and the codemap's check. No Postgres, browser or ONNX Runtime needed; a
# couple of minutes once built. `scripts/test.sh` runs everything (CI runs that).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --locked -p engine -p shared "$@"
cargo test --locked -p coordinator -p worker --lib "$@"
cargo test --locked -p e2e --test codemap "$@"
