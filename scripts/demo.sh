#!/usr/bin/env bash
# The whole local stack in one command: a Postgres (yours, or a private one in .pg/), a
# coordinator on http://127.0.0.1:8080, an experiment (the file given, else the quick match),
# and one volunteer that plays it: `scripts/demo.sh [EXPERIMENT.toml]`.
# Prints the dashboard URL; the coordinator keeps running (scripts/demo.sh stop ends it).
set -euo pipefail
cd "$(dirname "$0")/.."

port="${LEXHIVE_DEMO_PORT:-8080}"
url="http://127.0.0.1:$port"
if [[ "${1:-}" == "stop" ]]; then
    if [[ -f .demo/coordinator.pid ]] && kill "$(cat .demo/coordinator.pid)" 2>/dev/null; then echo "coordinator stopped"; fi
    rm -f .demo/coordinator.pid
    exit 0
fi

cargo build --release --locked -p coordinator -p worker
pg="$(scripts/postgres.sh)"
psql "$pg/postgres" -Atqc "SELECT 1 FROM pg_database WHERE datname = 'lexhive_demo'" | grep -q 1 \
    || psql "$pg/postgres" -qc "CREATE DATABASE lexhive_demo"
export DATABASE_URL="$pg/lexhive_demo"

mkdir -p .demo
running() { [[ -f .demo/coordinator.pid ]] && kill -0 "$(cat .demo/coordinator.pid)" 2>/dev/null; }
if ! running; then
    # A coordinator of your own machines: it trusts every owner that registers (no replicas,
    # no spot checks).
    nohup target/release/coordinator serve --bind "127.0.0.1:$port" --trust-every-owner --spot-check 0 --log-store .demo/logs > .demo/coordinator.log 2>&1 &
    echo $! > .demo/coordinator.pid
    # It prints "listening on ..." once it serves (the first start builds the lexicon graph).
    for _ in $(seq 1 120); do grep -q "^listening on" .demo/coordinator.log && break; running || break; sleep 0.5; done
    grep -q "^listening on" .demo/coordinator.log || { echo "coordinator did not start; see .demo/coordinator.log" >&2; tail -3 .demo/coordinator.log >&2; exit 1; }
fi
# A researcher's login for this coordinator, saved where `worker experiments` finds it: the
# experiments the demo submits can be stopped or reprioritised from the terminal.
token="$(target/release/coordinator token create --role researcher | tail -1)"
target/release/worker experiments login --coordinator "$url" --token "$token"
id="$(target/release/worker submit "${1:-examples/quick-match.toml}" --coordinator "$url" | tail -1)"
echo "experiment $id submitted; one volunteer plays it:"
LEXHIVE_CONFIG_DIR="$PWD/.demo/config" LEXHIVE_CACHE_DIR="$PWD/.demo/cache" \
    target/release/worker volunteer --coordinator "$url" --name demo-volunteer --exit-when-idle
echo
target/release/worker experiments show "$id" --coordinator "$url"
echo
echo "Dashboard: $url/experiments/$id"
echo "All experiments: $url/   Workers: $url/workers"
echo "The coordinator keeps running (log: .demo/coordinator.log); stop it with: scripts/demo.sh stop"
