#!/usr/bin/env bash
# Static self-play, move generation and rollouts side by side with MAGPIE (issue 16, point 3; docs/BENCHMARKS.md): the same
# word list (lexica/enable.txt) and leave table (lexica/enable.klv2), one thread, the engines
# alternated ROUNDS times so that a busy machine slows both alike. Prints CPU seconds and games
# per CPU-second for each run.
#
# MAGPIE is not part of lexhive and is not fetched by this script: point MAGPIE at a checkout
# built with `make magpie BUILD=release`, whose data/layouts, data/letterdistributions and
# data/strategy hold its usual files (its ./download_data.sh, or the same paths of the
# MAGPIE-DATA repository).
# The script adds the lexicon there as `AmericaENABLE` (MAGPIE picks the English distribution
# from the name) and builds MAGPIE's KWG and word map from the text, once.
set -euo pipefail
cd "$(dirname "$0")/.."
MAGPIE=${MAGPIE:?set MAGPIE to a built MAGPIE checkout}
GAMES=${GAMES:-5000}
ROUNDS=${ROUNDS:-3}
SEED=${SEED:-5}
LEX=AmericaENABLE
for f in data/layouts/standard15.txt data/letterdistributions/english.csv data/strategy/winpct.csv; do
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

# Move generation: all moves and the best move on the same positions (docs/movegen-bench.cgp,
# 35 racks of each class), one thread, engines alternated; each prints its median round. The
# MAGPIE side is scripts/magpie-movegen.c, built here against the checkout's release objects.
# Both must find the same number of moves in each class.
MG=$MAGPIE/bin/lexhive-movegen
if [[ ! -x $MG || scripts/magpie-movegen.c -nt $MG ]]; then
  (cd "$MAGPIE" && ${CC:-gcc} -O3 -flto -march=native -DNDEBUG -I. -w -o "$MG" "$OLDPWD/scripts/magpie-movegen.c" \
    $(find obj/release-b15-r7/src -name '*.o') -lm -pthread)
fi
for r in $(seq "$ROUNDS"); do
  echo "round $r lexhive:"
  "$W" bench-movegen --file docs/movegen-bench.cgp --rounds 5 | tail -n +3
  echo "round $r MAGPIE:"
  (cd "$MAGPIE" && "$MG" $LEX "$OLDPWD/docs/movegen-bench.cgp" 5)
done

# Rollouts: SIM_POSITIONS mid-game positions (40 tiles in the bag, from seeded static self-play),
# each simulated by both engines with the static top 15 candidates, 2 plies, SIM_ITERS
# iterations a candidate, opponent rack random, one thread, no early stop; each engine's own
# report of the simulation's time (load and set-up excluded). MAGPIE's `-iterations` is a
# total over the plays and `-minplayiterations` a floor per play: with the total set to 15 x
# SIM_ITERS, the floor to SIM_ITERS, round-robin sampling and no stopping condition, each play
# gets SIM_ITERS rollouts, as lexhive's do, whatever SIM_ITERS is (its `Iters:` is printed to
# check).
# SIM_ROUNDS passes over the positions (ROUNDS unless set; SIM_ROUNDS alone with ROUNDS=0 runs
# only the rollouts), each with both engines' totals.
SIM_POSITIONS=${SIM_POSITIONS:-5}
SIM_ITERS=${SIM_ITERS:-500}
# The opponent's rack is left out of the positions: both engines draw it at random.
"$W" endgame-set --count "$SIM_POSITIONS" --bag 40 --seed 3 | awk '{sub(/\/.*/, "/", $2); print}' >"$T.cgp"
rm -f "$MAGPIE/settings.txt" # MAGPIE keeps the last session's settings there
for r in $(seq "${SIM_ROUNDS:-$ROUNDS}"); do
  i=0
  ours_total=0
  theirs_total=0
  while read -r cgp <&3; do
    i=$((i + 1))
    ours=$("$W" sim --cgp "$cgp" --plies 2 --candidates 15 --iterations "$SIM_ITERS" --threads 1 | sed -n 's/.*Time: \([0-9.]*\)s.*/\1/p')
    # MAGPIE reads a line that comes while a command runs as a command to the running one
    # (stop, status): each line waits for the one before.
    theirs=$(cd "$MAGPIE" && {
      printf 'set -lex %s -threads 1 -plies 2 -numplays 15 -iterations %d -minplayiterations %d -sr rr -threshold none -scondition 99.99\n' \
        $LEX $((SIM_ITERS * 15)) "$SIM_ITERS"
      sleep 2
      printf 'cgp %s\n' "$cgp"
      sleep 0.5
      printf 'gen\n'
      sleep 0.5
      printf 'sim -\n'
    } | bin/magpie | sed -n 's/.*Time: *\([0-9.]*\) seconds.*/\1/p;s/.*Iters: *\([0-9]*\).*/iters \1/p' | tr '\n' ' ')
    rm -f "$MAGPIE/settings.txt"
    echo "round $r position $i: lexhive $((SIM_ITERS * 15)) rollouts in ${ours} s; MAGPIE ${theirs}(s)"
    read -r _ _ their_secs <<<"$theirs"
    ours_total=$(echo "$ours_total + ${ours:-0}" | bc)
    theirs_total=$(echo "$theirs_total + ${their_secs:-0}" | bc)
  done 3<"$T.cgp"
  echo "round $r rollouts: lexhive $ours_total s, MAGPIE $theirs_total s ($i positions)"
done
rm -f "$T.cgp"
