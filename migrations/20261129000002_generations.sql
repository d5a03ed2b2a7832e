-- Runs that improve themselves: a cell may wait for what an earlier cell makes (status
-- 'waiting' until its kind starts it), and may play with artifacts of its own, which replace
-- the experiment's of the same role (a generation's leave table). Each generation's output is
-- recorded with the games behind it.

ALTER TABLE cells ADD COLUMN inputs jsonb NOT NULL DEFAULT '[]';

CREATE TABLE generations (
    experiment_id uuid NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
    generation    integer NOT NULL,
    -- The cell whose results made it.
    cell_id       uuid NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
    -- What it made: an artifact (a leave table), or for a tuning run's iteration its step
    -- (the parameters before and after, the scores that moved them).
    artifact      text REFERENCES artifacts (sha256),
    step          jsonb,
    games         bigint NOT NULL,
    made_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (experiment_id, generation)
);
