-- Job kinds as types: columns count units of work (a pair of games, a position, two
-- win-table games; see shared::experiment::JobKind::unit), not "pairs" whatever they hold.
-- Stored specs take the kind-tagged shape of shared::experiment::ExperimentSpec.

ALTER TABLE cells RENAME COLUMN target_pairs TO target_units;
ALTER TABLE cells RENAME COLUMN next_pair TO next_unit;
ALTER TABLE cells RENAME COLUMN done_pairs TO done_units;
ALTER TABLE batches RENAME COLUMN first_pair TO first_unit;
ALTER TABLE batches RENAME COLUMN pairs TO units;

-- Only match cells have bots; others carried placeholders ("endgame") or the implied static.
ALTER TABLE cells ALTER COLUMN bots DROP NOT NULL;
UPDATE cells c SET bots = NULL FROM experiments e WHERE e.id = c.experiment_id AND e.kind <> 'match';

-- The spec was one shape for every kind, with an optional "endgame" section.
UPDATE experiments SET spec = spec - 'endgame' WHERE kind = 'match';
UPDATE experiments
   SET spec = (spec - 'endgame' - 'bots' - 'axes' - 'sprt' - 'games_per_cell')
              || jsonb_build_object('games', spec -> 'games_per_cell')
 WHERE kind = 'wintable';
UPDATE experiments
   SET spec = (spec - 'endgame' - 'bots' - 'axes' - 'sprt' - 'games_per_cell') || (spec -> 'endgame')
 WHERE kind = 'endgame';

-- A solve's mark is now set against the value two workers agreed on (coordinator::endgames::settle),
-- and rewritten for every solve of a position as its solves arrive.
COMMENT ON COLUMN endgame_solutions.disagrees IS
    'differs from the outcome two other workers agreed on, or (none agreed yet) from another worker''s exact solve';
