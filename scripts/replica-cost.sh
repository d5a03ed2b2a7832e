#!/usr/bin/env bash
# Measure what trust costs on a real run (docs/TRUST.md, "Cost"): a release coordinator with
# its trust defaults, one single-thread volunteer of an owner the operator trusts and two of
# strangers (untrusted: every batch of theirs is replicated by the trusted one) play static vs
# greedy for RUN_SECS seconds; then the games played (replicas included) are set against the
# games counted, and the CPU seconds of every process are printed. Needs a Postgres at PGURL (a database `lexhive_cost`
# is dropped and made there).
set -euo pipefail
cd "$(dirname "$0")/.."
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
RUN_SECS=${RUN_SECS:-600}
PORT=${PORT:-8090}
# BIN=target/debug uses the debug build (the engine is optimised there too) and builds nothing.
R=${BIN:-target/release}
[[ -z ${BIN:-} ]] && cargo build --release --locked -p coordinator -p worker
psql "$PGURL/postgres" -qc "drop database if exists lexhive_cost" -c "create database lexhive_cost"
export DATABASE_URL=$PGURL/lexhive_cost
D=$(mktemp -d)
$R/coordinator serve --bind 127.0.0.1:$PORT --batch-secs 6 --lexica lexica >"$D/coord.log" 2>&1 &
CP=$!
trap 'kill $CP 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf http://127.0.0.1:$PORT/healthz >/dev/null && break; sleep 0.2; done
TOK=$($R/coordinator token create --role researcher | tail -1)
cat >"$D/exp.toml" <<T
name = "replica cost: static vs greedy"
kind = "match"
games = 2000000
seed = 11
[match]
bot1 = "static"
bot2 = "greedy"
T
$R/worker submit "$D/exp.toml" --coordinator http://127.0.0.1:$PORT --token "$TOK"
LAB=$($R/worker owner --coordinator http://127.0.0.1:$PORT --name lab | tail -1)
$R/coordinator owner trust lab
PIDS=()
for i in 1 2 3; do
  mkdir -p "$D/v$i/config" "$D/v$i/cache"
  owner=()
  [[ $i == 1 ]] && owner=(--owner-token "$LAB")
  LEXHIVE_CONFIG_DIR=$D/v$i/config LEXHIVE_CACHE_DIR=$D/v$i/cache \
    $R/worker volunteer --coordinator http://127.0.0.1:$PORT --name "v$i" --threads 1 "${owner[@]}" >"$D/v$i.log" 2>&1 &
  PIDS+=($!)
done
sleep "$RUN_SECS"
for p in "${PIDS[@]}" $CP; do echo "pid $p: $(awk '{print ($14 + $15) / 100}' /proc/$p/stat) CPU-s"; done
kill -INT "${PIDS[@]}"
wait "${PIDS[@]}" || true
psql "$DATABASE_URL" -c "
select (select sum(games) from batch_results) as played,
       (select sum(2 * units) from batches where state = 'done') as counted" -c "
select n as results, count(*) as batches from
  (select b.id, count(r.*) as n from batches b left join batch_results r on r.batch_id = b.id
   where b.state = 'done' group by b.id) x group by n order by n"
echo "logs in $D"
