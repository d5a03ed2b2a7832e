#!/usr/bin/env bash
# The CNN bot against the static bot through the real stack (docs/RESULTS.md): a coordinator
# on a fresh database `lexhive_cnn`, the shipped value net registered as a model artifact,
# examples/cnn-vs-static.toml submitted, and VOLUNTEERS (2) volunteers of THREADS (1) threads
# each playing it. Prints the finished cell as JSON. Needs ONNX Runtime (ORT_DYLIB_PATH, or
# scripts/trainer-env.sh's venv). `scripts/cnn-on-volunteers.sh [EXPERIMENT.toml]`.
set -euo pipefail
cd "$(dirname "$0")/.."
volunteers="${VOLUNTEERS:-2}"
threads="${THREADS:-1}"
port="${PORT:-8090}"
url="http://127.0.0.1:$port"
export ORT_DYLIB_PATH="${ORT_DYLIB_PATH:-$(scripts/trainer-env.sh)}"

cargo build --release --locked -p coordinator -p worker
pg="$(scripts/postgres.sh)"
psql "$pg/postgres" -qc "DROP DATABASE IF EXISTS lexhive_cnn" -qc "CREATE DATABASE lexhive_cnn"
export DATABASE_URL="$pg/lexhive_cnn"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# Your own machines: CNN bots' games differ from machine to machine, so their batches go to
# trusted owners only, and are taken without replicas.
target/release/coordinator serve --bind "127.0.0.1:$port" --trust-every-owner > "$work/coordinator.log" 2>&1 &
for _ in $(seq 1 120); do grep -q "^listening on" "$work/coordinator.log" && break; sleep 0.5; done
grep -q "^listening on" "$work/coordinator.log" || { tail -3 "$work/coordinator.log" >&2; exit 1; }
target/release/coordinator artifact --role model models/cnn-w32b2.onnx | tail -1
token="$(target/release/coordinator token create --role researcher | tail -1)"
id="$(target/release/worker submit "${1:-examples/cnn-vs-static.toml}" --coordinator "$url" --token "$token" | tail -1)"
echo "experiment $id: $url/experiments/$id"
start=$(date +%s)
for i in $(seq 1 "$volunteers"); do
    LEXHIVE_CONFIG_DIR="$work/v$i/config" LEXHIVE_CACHE_DIR="$work/v$i/cache" \
        target/release/worker volunteer --coordinator "$url" --name "cnn-$i" --threads "$threads" \
        --exit-when-idle --device cpu > "$work/v$i.log" 2>&1 &
done
wait $(jobs -p | tail -n "$volunteers")
echo "volunteers done in $(( $(date +%s) - start )) s"
curl -fsS "$url/api/v1/experiments/$id" | python3 -c '
import json, sys
e = json.load(sys.stdin)
for c in e["cells"]:
    print(json.dumps({k: c[k] for k in ["bots", "status", "games", "wins", "draws", "losses", "win_rate", "ci_low", "ci_high", "mean_score", "ms_per_move"]}))
'
