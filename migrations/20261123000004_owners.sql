-- Who submitted an experiment (the sha256 of the researcher token): only they, or an admin, may
-- stop it. Experiments from before this have none, and only an admin may stop them.
ALTER TABLE experiments ADD COLUMN owner_token bytea;
