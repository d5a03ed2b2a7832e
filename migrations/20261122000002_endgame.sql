-- Endgame experiments: batches that name their positions (cross-checks) and the workers that
-- may not take them, and every solved position.

-- Explicit position indices (a cross-check batch); NULL: `first_pair .. first_pair + pairs`.
ALTER TABLE batches ADD COLUMN positions bigint[];
-- Workers that may not claim this batch (a cross-check must come from someone else).
ALTER TABLE batches ADD COLUMN exclude_workers uuid[];

CREATE TABLE endgame_solutions (
    experiment_id uuid NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
    idx           bigint NOT NULL,
    batch_id      uuid NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    worker_id     uuid NOT NULL REFERENCES workers (id),
    -- solve: the first solve of every position; check: a second (or later) solve.
    pass          text NOT NULL CHECK (pass IN ('solve', 'check')),
    cgp           text NOT NULL,
    skipped       boolean NOT NULL,
    value         integer NOT NULL,
    exact         boolean NOT NULL,
    best          text NOT NULL,
    sequence      text NOT NULL,
    nodes         bigint NOT NULL,
    ms            bigint NOT NULL,
    -- An exact check whose value differs from the position's exact first solve.
    disagrees     boolean NOT NULL DEFAULT false,
    received_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (batch_id, idx)
);
CREATE INDEX endgame_solutions_position ON endgame_solutions (experiment_id, idx);

-- What an experiment made, as an artifact (a wintable experiment's fitted table).
ALTER TABLE experiments ADD COLUMN output_sha256 text REFERENCES artifacts (sha256);
