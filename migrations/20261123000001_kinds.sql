-- Protocol 2: workers say which job kinds they run and how fast they run each.

-- The job kinds a worker last said it runs (it is handed only those).
ALTER TABLE workers ADD COLUMN kinds text[] NOT NULL DEFAULT '{match,endgame,wintable}';
-- Units per second the worker last measured, by kind: {"match": 3.2, "endgame": 0.4}.
ALTER TABLE workers ADD COLUMN rates jsonb NOT NULL DEFAULT '{}';
-- games_per_sec was positions per second after an endgame batch; from now on it is games
-- per second of match and win-table batches only.
UPDATE workers SET games_per_sec = NULL;

CREATE INDEX experiments_kind ON experiments (kind);
