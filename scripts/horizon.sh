#!/usr/bin/env bash
# How far depth-limited endgame values are from the exact ones, on seeded endgames where exactly
# one side holds a tile it cannot play (what the horizon's stuck-tile term is for), or on all of
# them with ONLY=any.
#   [EXTRA=moves after the bag emptied, default 2] [ONLY=stuck|any] [TIME=exact solve's limit, s, default 30]
#   scripts/horizon.sh [WORKER] [COUNT] [PLIES...]
#   e.g. scripts/horizon.sh target/release/worker 400 2 3 4 5
# Prints, per depth, the mean absolute error and the mean signed error against the exact value.
set -euo pipefail
worker=${1:-target/release/worker}
count=${2:-400}
shift $(( $# > 2 ? 2 : $# ))
plies=("$@")
[[ ${#plies[@]} -gt 0 ]] || plies=(2 3 4 5)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$worker" endgame-set --count "$count" --seed 2 --extra "${EXTRA:-2}" > "$tmp/set.cgp"
n=0
declare -A abs sum
while read -r cgp; do
    if [[ ${ONLY:-stuck} != any ]]; then
        stuck=$("$worker" endgame --cgp "$cgp" --plies 1 2>/dev/null | sed -n 's/^stuck: //p')
        [[ $stuck =~ ^[^/]+/$ || $stuck =~ ^/[^/]+$ ]] || continue
    fi
    out=$("$worker" endgame --cgp "$cgp" --time "${TIME:-30}" 2>/dev/null)
    grep -q '^exact: yes' <<< "$out" || continue
    exact=$(sed -n 's/^value: //p' <<< "$out")
    n=$((n + 1))
    for p in "${plies[@]}"; do
        v=$("$worker" endgame --cgp "$cgp" --plies "$p" 2>/dev/null | sed -n 's/^value: //p')
        d=$((v - exact))
        abs[$p]=$(( ${abs[$p]:-0} + (d < 0 ? -d : d) ))
        sum[$p]=$(( ${sum[$p]:-0} + d ))
    done
done < "$tmp/set.cgp"
echo "$n positions (${ONLY:-stuck}), solved exactly"
for p in "${plies[@]}"; do
    awk -v p="$p" -v a="${abs[$p]}" -v s="${sum[$p]}" -v n="$n" \
        'BEGIN { printf "%s plies: mean |error| %.2f points, mean error %+.2f\n", p, a / n, s / n }'
done
