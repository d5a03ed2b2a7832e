#!/usr/bin/env bash
# Does `worker volunteer` scale with its threads? (issue 16, point 5; docs/BENCHMARKS.md)
# For each thread count in THREADS (in that order, so "1 2 1 2" alternates), a fresh database
# and a release coordinator that trusts its one volunteer and re-plays nothing (so that the
# coordinator takes little CPU from it), and one volunteer that plays GAMES static-vs-static
# games with --exit-when-idle. Reports the experiment's games per second from its first claim
# to its last result (start-up, batch sizing and every upload included), and the CPU seconds
# of the volunteer and of the coordinator (which, with Postgres, shares the volunteer's cores
# here). Needs a Postgres at PGURL (a database `lexhive_scaling` is dropped and made
# there) and should run on an otherwise idle machine. VOLUNTEER=path/to/worker times another
# build's volunteer against this build's coordinator.
set -euo pipefail
cd "$(dirname "$0")/.."
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
GAMES=${GAMES:-30000}
THREADS=${THREADS:-"1 2 1 2"}
PORT=${PORT:-8091}
R=target/release
VOLUNTEER=${VOLUNTEER:-$R/worker}
cargo build --release --locked -p coordinator -p worker
for n in $THREADS; do
  psql "$PGURL/postgres" -qc "drop database if exists lexhive_scaling" -c "create database lexhive_scaling" 2>/dev/null
  export DATABASE_URL=$PGURL/lexhive_scaling
  D=$(mktemp -d)
  $R/coordinator serve --bind 127.0.0.1:$PORT --trust-every-owner --spot-check 0 --verify-fraction 0 \
    --lexica lexica >"$D/coord.log" 2>&1 &
  CP=$!
  for _ in $(seq 100); do curl -sf http://127.0.0.1:$PORT/healthz >/dev/null && break; sleep 0.2; done
  TOK=$($R/coordinator token create --role researcher | tail -1)
  printf 'name = "scaling"\nkind = "match"\ngames = %d\nseed = 3\n[match]\nbot1 = "static"\nbot2 = "static"\n' "$GAMES" >"$D/exp.toml"
  $R/worker submit "$D/exp.toml" --coordinator http://127.0.0.1:$PORT --token "$TOK" >/dev/null 2>&1
  mkdir -p "$D/config" "$D/cache"
  /usr/bin/time -f "%U %S" -o "$D/cpu" env LEXHIVE_CONFIG_DIR=$D/config LEXHIVE_CACHE_DIR=$D/cache \
    "$VOLUNTEER" volunteer --coordinator http://127.0.0.1:$PORT --name "scaling-$n" --threads "$n" --exit-when-idle \
    >"$D/volunteer.log" 2>&1
  coord=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' /proc/$CP/stat)
  secs=$(psql "$DATABASE_URL" -Atc "select extract(epoch from finished_at - started_at) from experiments")
  batches=$(psql "$DATABASE_URL" -Atc "select count(*) from batch_results")
  cpu=$(awk '{print $1 + $2}' "$D/cpu")
  echo "threads $n: $GAMES games in $secs s = $(echo "scale=1; $GAMES / $secs" | bc) games/s ($batches batches); volunteer $cpu CPU-s, coordinator $coord CPU-s"
  kill $CP; wait $CP 2>/dev/null || true
  rm -rf "$D"
done
