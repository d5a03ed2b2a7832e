#!/usr/bin/env bash
# An example experiment run as a small pool runs it (docs/RESULTS.md): a fresh database, a
# coordinator with its trust defaults, and VOLUNTEERS one-thread volunteers on this machine.
# The first belongs to an owner the operator trusts; the others are strangers, whose every
# batch the trusted one replicates before it counts. Prints the wall time, the experiment as
# `worker experiments show` prints it, and each process's CPU seconds.
#   scripts/run-example.sh examples/leaves-generations.toml
# BIN=target/debug uses the debug build (the engine is optimised there too) instead of
# building a release one; PGURL names the Postgres (a database `lexhive_example` is remade);
# SHOTS=DIR saves the finished experiment's page as DIR/showcase-NAME-1400.png and -400.png
# (desktop and phone widths, headless Chromium: scripts/showcase.sh). HEAD_TO_HEAD=GAMES: the
# same pool then plays the run's result against where it started: a leave table's static bot
# (static:leaves=SHA256) against the static bot with the shipped table, or a tuning run's bot
# at its final parameters against its reference.
set -euo pipefail
cd "$(dirname "$0")/.."
EXAMPLE=${1:?usage: scripts/run-example.sh EXAMPLE.toml}
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
VOLUNTEERS=${VOLUNTEERS:-2}
PORT=${PORT:-8092}
BIN=${BIN:-target/release}
if [[ $BIN == target/release ]]; then cargo build --release --locked -p coordinator -p worker; fi
psql "$PGURL/postgres" -qc "drop database if exists lexhive_example with (force)" -c "create database lexhive_example"
export DATABASE_URL=$PGURL/lexhive_example
D=$(mktemp -d)
"$BIN/coordinator" serve --bind "127.0.0.1:$PORT" --log-store "$D/logs" --registration-work 12 >"$D/coordinator.log" 2>&1 &
CP=$!
trap 'kill $CP 2>/dev/null || true; rm -rf "$D"' EXIT
URL=http://127.0.0.1:$PORT
for _ in $(seq 300); do curl -sf "$URL/healthz" >/dev/null && break; sleep 0.2; done
TOKEN=$("$BIN/coordinator" token create --role researcher | tail -1)
OWNER=$("$BIN/worker" owner --coordinator "$URL" --name operator | tail -1)
"$BIN/coordinator" owner trust operator >/dev/null
ID=$("$BIN/worker" submit "$EXAMPLE" --coordinator "$URL" --token "$TOKEN" | tail -1)
# The pool: volunteer 1 is the trusted operator's, the others strangers'; each exits when idle.
pool() {
  local pids=() i owner
  for i in $(seq 1 "$VOLUNTEERS"); do
    owner=()
    if [[ $i == 1 ]]; then owner=(--owner-token "$OWNER"); fi
    /usr/bin/time -a -f "%U %S" -o "$D/cpu-$i" env LEXHIVE_CONFIG_DIR="$D/v$i/config" LEXHIVE_CACHE_DIR="$D/v$i/cache" \
      "$BIN/worker" volunteer --coordinator "$URL" --name "volunteer-$i" --threads 1 --exit-when-idle "${owner[@]}" \
      >>"$D/volunteer-$i.log" 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}"
}
start=$(date +%s)
pool
end=$(date +%s)
"$BIN/worker" experiments show "$ID" --coordinator "$URL"
echo "wall: $((end - start)) s with $VOLUNTEERS one-thread volunteers"
for i in $(seq 1 "$VOLUNTEERS"); do
  echo "volunteer-$i: $(awk 'NR == 1 {print $1 + $2}' "$D/cpu-$i") CPU-s, $(grep -c "uploaded" "$D/volunteer-$i.log") batches uploaded"
done
echo "coordinator: $(awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$CP/stat") CPU-s"
psql "$DATABASE_URL" -Atc "select 'replicated batches: ' || count(*) from (select batch_id from batch_results group by batch_id having count(*) > 1) r"
if [[ -n ${SHOTS:-} ]]; then
  name=$(basename "$EXAMPLE" .toml)
  for size in 1400,${SHOT_HEIGHT:-2200} 400,1500; do
    ${CHROMIUM:-chromium} --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$size" \
      --screenshot="$SHOTS/showcase-$name-${size%,*}.png" "$URL/experiments/$ID" 2>/dev/null
  done
  echo "saved $SHOTS/showcase-$name-1400.png and -400.png"
fi
if [[ -n ${HEAD_TO_HEAD:-} ]]; then
  # The run's result as a bot: a leave table's static bot, or the tuned bot with its final
  # parameters; against the shipped static bot, or the tuning run's reference.
  curl -sf "$URL/api/v1/experiments/$ID" | python3 -c '
import json, sys
e = json.load(sys.stdin)
if e.get("output_sha256"):
    bots = ("static:leaves=" + e["output_sha256"], "static")
else:
    t = e["spec"]
    name, _, rest = t["bot"].partition(":")
    params = dict(p.split("=", 1) for p in rest.split(",") if p)
    params.update({k: str(round(v, 6)) for k, v in e["tuning"]["params"].items()})
    bots = (name + ":" + ",".join(k + "=" + v for k, v in params.items()), t["against"])
print("name = \"the run'"'"'s result against the start\"\nkind = \"match\"\ngames = %s\nseed = 2028\n[match]\nbot1 = \"%s\"\nbot2 = \"%s\"" % (sys.argv[1], *bots))
' "$HEAD_TO_HEAD" >"$D/head-to-head.toml"
  ID2=$("$BIN/worker" submit "$D/head-to-head.toml" --coordinator "$URL" --token "$TOKEN" | tail -1)
  start=$(date +%s)
  pool
  "$BIN/worker" experiments show "$ID2" --coordinator "$URL"
  echo "head to head: $(($(date +%s) - start)) s"
fi
