#!/usr/bin/env bash
# One coordinator load test on a fresh database, as recorded in docs/BENCHMARKS.md:
#   scripts/loadtest.sh WORKERS RATE SECONDS [volunteer]
# RATE is the offered requests per second over all simulated workers (0: closed loop, each
# worker asks again as soon as it is answered). With `volunteer`, a real `worker volunteer`
# solves an endgame set on the same coordinator meanwhile, and its batches are counted.
# LEXHIVE_MAX_IN_FLIGHT (default 0: four per pooled connection) sets the load-shedding point.
set -euo pipefail
cd "$(dirname "$0")/.."
workers="${1:?workers}" rate="${2:?rate}" seconds="${3:?seconds}" volunteer="${4:-}"
port="${LEXHIVE_LOAD_PORT:-18181}"
url="http://127.0.0.1:$port"

cargo build --release --locked -q -p coordinator -p worker
pg="$(scripts/postgres.sh)"
PGOPTIONS=--client-min-messages=warning psql "$pg/postgres" -qc "DROP DATABASE IF EXISTS lexhive_load" -qc "CREATE DATABASE lexhive_load"
export DATABASE_URL="$pg/lexhive_load"
dir="$(mktemp -d)"
cleanup() { kill "$(jobs -p)" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT

# The simulated uploads are not games (no replay: --verify-fraction 0) and every simulated
# worker is an owner of its own, trusted (no replicas: --trust-every-owner), registered without
# proof of work or a limit.
target/release/coordinator serve --bind "127.0.0.1:$port" --verify-fraction 0 --trust-every-owner \
    --registration-work 0 --registrations-per-hour 0 --max-leases 1000 --batch-secs 10 > "$dir/coordinator.log" 2>&1 &
for _ in $(seq 1 240); do grep -q "^listening on" "$dir/coordinator.log" && break; sleep 0.5; done
grep -q "^listening on" "$dir/coordinator.log" || { tail -5 "$dir/coordinator.log" >&2; exit 1; }
token="$(target/release/coordinator token create --role researcher | tail -1)"

if [[ -n "$volunteer" ]]; then
    target/release/worker submit examples/endgame-set.toml --coordinator "$url" --token "$token" > /dev/null
    LEXHIVE_CONFIG_DIR="$dir/config" LEXHIVE_CACHE_DIR="$dir/cache" \
        target/release/worker volunteer --coordinator "$url" --name honest --threads 1 --kinds endgame \
        > "$dir/volunteer.out" 2> "$dir/volunteer.err" &
    vpid=$!
fi
target/release/worker loadtest --coordinator "$url" --token "$token" --workers "$workers" --rate "$rate" --seconds "$seconds"
if [[ -n "$volunteer" ]]; then
    kill -INT "$vpid"; kill -INT "$vpid" 2>/dev/null || true
    wait "$vpid" 2>/dev/null || true
    echo "honest volunteer: $(grep -c ' uploaded$' "$dir/volunteer.out" || true) batches uploaded," \
        "$(grep -c 'lease lost\|dropping the batch' "$dir/volunteer.err" || true) leases lost," \
        "$(grep -c 'overloaded' "$dir/volunteer.err" || true) overload messages"
    psql "$DATABASE_URL" -Atc "SELECT 'its batches: ' || count(*) FILTER (WHERE state = 'done') || ' done, '
        || coalesce(sum(b.failures), 0) || ' failures charged'
        FROM batches b JOIN experiments e ON e.id = b.experiment_id WHERE e.kind = 'endgame'"
fi
