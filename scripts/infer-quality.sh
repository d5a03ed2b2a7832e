#!/usr/bin/env bash
# How good a rack read is, and what it costs: infer the leave at seeded turns of static
# self-play and score each read against the leave the log says was really kept (the expected
# number of its tiles on an inferred leave, against the same expectation under the prior).
#   scripts/infer-quality.sh [WORKER] [GAMES] [-- worker infer options...]
#   e.g. scripts/infer-quality.sh target/release/worker 4 -- --plies 1 --candidates 5
# Turns 3 to 12 of each game, the passes skipped; prints one line per read and the means.
set -euo pipefail
worker=${1:-target/release/worker}
games=${2:-4}
shift $(( $# > 2 ? 2 : $# ))
[[ ${1:-} == -- ]] && shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$worker" autoplay --bot1 static --bot2 static --games "$games" --unpaired --seed 5 --log-dir "$tmp" > /dev/null
for gcg in "$tmp"/game-*.gcg; do
    for turn in $(seq 3 12); do
        out=$("$worker" infer --gcg "$gcg" --turn "$turn" --json "$@" 2>/dev/null) || continue
        tail -n 1 <<< "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
t = j.get("truth")
if t and t["leave"]:
    game, turn, kept = sys.argv[1], sys.argv[2], t["leave"]
    read, chance, secs = t["overlap"], t["prior_overlap"], j["seconds"]
    print(f"{game} turn {turn:>2}: kept {kept:<7} read {read:.2f} chance {chance:.2f} tiles, {secs:.2f} s")
' "$(basename "$gcg")" "$turn"
    done
done | tee "$tmp/reads"
awk '{ r += $7; c += $9; s += $11; n++ } END { if (n) printf "%d reads: a leave holds %.3f of the kept tiles by the read, %.3f by chance (+%.3f); %.2f s a read\n", n, r / n, c / n, (r - c) / n, s / n }' "$tmp/reads"
