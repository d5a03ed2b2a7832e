// All-moves and best-move generation timed in MAGPIE on a file of CGP positions, by the rack
// class of the player on turn: the other side of `worker bench-movegen` (scripts/peers.sh builds
// it against a MAGPIE checkout; nothing of MAGPIE is part of lexhive).
//
// usage: magpie-movegen LEXICON FILE ROUNDS   (run in the MAGPIE checkout, whose ./data it reads)
#include "src/ent/game.h"
#include "src/ent/move.h"
#include "src/impl/config.h"
#include "src/impl/move_gen.h"
#include "src/util/io_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void exec_or_die(Config *config, const char *cmd) {
  ErrorStack *es = error_stack_create();
  config_load_command(config, cmd, es);
  if (error_stack_is_empty(es)) {
    config_execute_command(config, es);
  }
  if (!error_stack_is_empty(es)) {
    fprintf(stderr, "command failed: %s\n", cmd);
    error_stack_print_and_reset(es);
    exit(2);
  }
  error_stack_destroy(es);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#define MAX_POSITIONS 1000
#define MAX_ROUNDS 100

// One pass of generation over `n` positions; returns the moves found.
static long pass(Game **games, int n, MoveList *ml, move_record_t record) {
  MoveGenArgs a = {.move_list = ml,
                   .move_sort_type = MOVE_SORT_EQUITY,
                   .move_record_type = record,
                   .eq_margin_movegen = 0,
                   .target_equity = EQUITY_MAX_VALUE,
                   .target_leave_size_for_exchange_cutoff = UNSET_LEAVE_SIZE};
  long moves = 0;
  for (int i = 0; i < n; i++) {
    a.game = games[i];
    generate_moves(&a);
    moves += move_list_get_count(ml);
  }
  return moves;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s LEXICON FILE ROUNDS\n", argv[0]);
    return 2;
  }
  int rounds = atoi(argv[3]);
  if (rounds < 1 || rounds > MAX_ROUNDS) {
    fprintf(stderr, "ROUNDS: 1 to %d\n", MAX_ROUNDS);
    return 2;
  }
  ErrorStack *es = error_stack_create();
  ConfigArgs args = {.data_paths = "./data", .settings_filename = NULL, .use_wmp = true};
  Config *config = config_create(&args, es);
  if (!error_stack_is_empty(es)) {
    error_stack_print_and_reset(es);
    return 2;
  }
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "set -lex %s -threads 1 -savesettings false", argv[1]);
  exec_or_die(config, cmd);

  FILE *f = fopen(argv[2], "r");
  if (!f) {
    perror(argv[2]);
    return 2;
  }
  Game *games[3][MAX_POSITIONS];
  int count[3] = {0, 0, 0};
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    if (line[0] == 0 || line[0] == '#') {
      continue;
    }
    // The on-turn rack is the second field, up to '/'.
    const char *rack = strchr(line, ' ');
    int blanks = 0;
    for (const char *p = rack ? rack + 1 : line; *p && *p != '/' && *p != ' '; p++) {
      blanks += *p == '?';
    }
    int class = blanks > 2 ? 2 : blanks;
    if (count[class] == MAX_POSITIONS) {
      fprintf(stderr, "more than %d positions in a class\n", MAX_POSITIONS);
      return 2;
    }
    snprintf(cmd, sizeof cmd, "cgp %s", line);
    exec_or_die(config, cmd);
    games[class][count[class]++] = game_duplicate(config_get_game(config));
  }
  fclose(f);

  MoveList *ml = move_list_create(300000);
  const char *names[3] = {"no blank", "one blank", "two blanks"};
  printf("| rack class | positions | moves (total) | all-moves M moves/s | best-move us/position |\n");
  printf("| --- | --- | --- | --- | --- |\n");
  // All-moves rounds, then best-move rounds, the classes alternated within each, after one
  // untimed best-move pass: as `worker bench-movegen` times its side.
  double all[3][MAX_ROUNDS], best[3][MAX_ROUNDS];
  long moves[3] = {0};
  for (int class = 0; class < 3; class++) {
    pass(games[class], count[class], ml, MOVE_RECORD_BEST);
  }
  for (int r = 0; r < rounds; r++) {
    for (int class = 0; class < 3; class++) {
      double start = now();
      moves[class] = pass(games[class], count[class], ml, MOVE_RECORD_ALL);
      all[class][r] = now() - start;
    }
  }
  for (int r = 0; r < rounds; r++) {
    for (int class = 0; class < 3; class++) {
      double start = now();
      pass(games[class], count[class], ml, MOVE_RECORD_BEST);
      best[class][r] = now() - start;
    }
  }
  for (int class = 0; class < 3; class++) {
    if (count[class] == 0) {
      continue;
    }
    qsort(all[class], rounds, sizeof(double), cmp);
    qsort(best[class], rounds, sizeof(double), cmp);
    printf("| %s | %d | %ld | %.2f | %.0f |\n", names[class], count[class], moves[class],
           moves[class] / all[class][rounds / 2] / 1e6, 1e6 * best[class][rounds / 2] / count[class]);
  }
  return 0;
}
