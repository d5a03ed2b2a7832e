#!/usr/bin/env bash
# The showcase images of README.md and docs/RESULTS.md, from real runs of the examples on a
# small pool (scripts/run-example.sh: a trusted volunteer and a stranger, one thread each):
# each finished experiment's page at desktop and phone widths, as docs/img/showcase-*.png.
# About ten minutes on a 2-core machine. BIN=target/debug skips the release build.
set -euo pipefail
cd "$(dirname "$0")/.."
for e in softmax-grid greedy-vs-static-sprt leaves-generations tune-leave-scale; do
  SHOTS=docs/img scripts/run-example.sh "examples/$e.toml"
done
