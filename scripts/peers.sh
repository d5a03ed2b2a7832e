#!/usr/bin/env bash
# Static self-play side by side with MAGPIE (issue 16, point 3; docs/BENCHMARKS.md): the same
# word list (lexica/enable.txt) and leave table (lexica/enable.klv2), one thread, the engines
# alternated ROUNDS times so that a busy machine slows both alike. Prints CPU seconds and games
# per CPU-second for each run.
#
# MAGPIE is not part of lexhive and is not fetched by this script: point MAGPIE at a checkout
# built with `make magpie BUILD=release`, whose data/layouts and data/letterdistributions hold
# its usual files (its ./download_data.sh, or the same paths of the MAGPIE-DATA repository).
# The script adds the lexicon there as `AmericaENABLE` (MAGPIE picks the English distribution
# from the name) and builds MAGPIE's KWG and word map from the text, once.
set -euo pipefail
cd "$(dirname "$0")/.."
MAGPIE=${MAGPIE:?set MAGPIE to a built MAGPIE checkout}
GAMES=${GAMES:-5000}
ROUNDS=${ROUNDS:-3}
SEED=${SEED:-5}
LEX=AmericaENABLE
for f in data/layouts/standard15.txt data/letterdistributions/english.csv; do
  [[ -f $MAGPIE/$f ]] || { echo "missing $MAGPIE/$f (MAGPIE's data files)" >&2; exit 2; }
done
mkdir -p "$MAGPIE/data/lexica"
if [[ ! -f $MAGPIE/data/lexica/$LEX.wmp ]]; then
  cp lexica/enable.txt "$MAGPIE/data/lexica/$LEX.txt"
  cp lexica/enable.klv2 "$MAGPIE/data/lexica/$LEX.klv2"
  (cd "$MAGPIE" && bin/magpie convert text2kwg $LEX && bin/magpie convert text2wordmap $LEX -threads 2)
fi
cargo build --release --locked -p worker
W=$PWD/target/release/worker
T=$(mktemp)
trap 'rm -f "$T"' EXIT
rate() { echo "scale=1; $GAMES / $1" | bc; }
for r in $(seq "$ROUNDS"); do
  /usr/bin/time -f %U -o "$T" "$W" autoplay --bot1 static --bot2 static --games "$GAMES" --seed "$SEED" --threads 1 >/dev/null
  s=$(cat "$T")
  echo "round $r lexhive: $GAMES games, $s CPU-s, $(rate "$s") games/CPU-s"
  (cd "$MAGPIE" && /usr/bin/time -f %U -o "$T" bin/magpie autoplay games "$GAMES" -lex $LEX -threads 1 -seed "$SEED" >/dev/null)
  s=$(cat "$T")
  echo "round $r MAGPIE:  $GAMES games, $s CPU-s, $(rate "$s") games/CPU-s"
done
