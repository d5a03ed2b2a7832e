-- Never believe an upload (issue 14): volunteers belong to owners; a batch's result counts
-- once another owner's replica matches it (or, for a trusted worker, alone); a worker found
-- wrong is quarantined and its results withdrawn.

-- The people (or organisations) volunteers belong to. Replicas, endgame cross-checks and the
-- failures that park a batch must come from different owners.
CREATE TABLE owners (
    id           uuid PRIMARY KEY,
    name         text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    -- The address it registered from (registration is rate-limited per address).
    created_from text,
    banned_at    timestamptz,
    ban_reason   text
);
CREATE UNIQUE INDEX owners_name ON owners (lower(name));

-- Every worker so far registered alone: each becomes its own owner.
INSERT INTO owners (id, name, created_at) SELECT id, 'owner-' || id::text, created_at FROM workers;
ALTER TABLE workers ADD COLUMN owner_id uuid REFERENCES owners (id);
UPDATE workers SET owner_id = id;
ALTER TABLE workers ALTER COLUMN owner_id SET NOT NULL;
ALTER TABLE workers ADD COLUMN created_from text;
-- Batches whose result another owner's replica matched: trust is earned.
ALTER TABLE workers ADD COLUMN validated bigint NOT NULL DEFAULT 0;
-- Replicas that disagreed with this worker's result.
ALTER TABLE workers ADD COLUMN mismatches bigint NOT NULL DEFAULT 0;
-- Found wrong by a majority of replicas, or banned: no more work, results withdrawn.
ALTER TABLE workers ADD COLUMN quarantined_at timestamptz;
ALTER TABLE workers ADD COLUMN quarantine_reason text;
CREATE INDEX workers_owner ON workers (owner_id);
-- Two volunteers of one owner cannot share a name (names were free-for-all before).
UPDATE workers w SET name = w.name || ' (' || left(w.id::text, 8) || ')'
 WHERE EXISTS (SELECT 1 FROM workers o WHERE o.owner_id = w.owner_id AND lower(o.name) = lower(w.name) AND o.id < w.id);
CREATE UNIQUE INDEX workers_owner_name ON workers (owner_id, lower(name));

-- Owner tokens register workers under their owner.
ALTER TABLE tokens DROP CONSTRAINT IF EXISTS tokens_role_check;
ALTER TABLE tokens DROP CONSTRAINT IF EXISTS tokens_check;
ALTER TABLE tokens ADD COLUMN owner_id uuid REFERENCES owners (id) ON DELETE CASCADE;
ALTER TABLE tokens ADD CONSTRAINT tokens_role_check CHECK (role IN ('worker', 'owner', 'researcher', 'admin'));
ALTER TABLE tokens ADD CONSTRAINT tokens_check
    CHECK ((role = 'worker') = (worker_id IS NOT NULL) AND (role = 'owner') = (owner_id IS NOT NULL));

-- Invitations, when registration is by invitation: sha256 of the code, used once.
CREATE TABLE invitations (
    hash       bytea PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now(),
    used_by    uuid REFERENCES owners (id) ON DELETE SET NULL,
    used_at    timestamptz
);

-- Owners that may not take a batch: those that failed it, let it expire, or already uploaded
-- a result for it (a replica must come from someone else).
ALTER TABLE batches ADD COLUMN exclude_owners uuid[] NOT NULL DEFAULT '{}';
UPDATE batches SET exclude_owners = exclude_workers WHERE exclude_workers IS NOT NULL;
ALTER TABLE batches DROP COLUMN exclude_workers;
-- Distinct owners whose workers failed the batch or let its lease expire: it is parked when
-- `max_failures` different owners have.
ALTER TABLE batches ADD COLUMN failed_owners uuid[] NOT NULL DEFAULT '{}';
-- When the current lease ends whatever the heartbeats say.
ALTER TABLE batches ADD COLUMN deadline timestamptz;

-- Several results per batch now (the first and its replicas), one per lease.
ALTER TABLE batch_results DROP CONSTRAINT batch_results_pkey;
ALTER TABLE batch_results ADD PRIMARY KEY (batch_id, lease_id);
ALTER TABLE batch_results ADD COLUMN owner_id uuid REFERENCES owners (id);
UPDATE batch_results SET owner_id = worker_id;
ALTER TABLE batch_results ALTER COLUMN owner_id SET NOT NULL;
-- pending: awaiting a replica; valid: counted (agreed, or a trusted worker's); wrong: outvoted
-- by replicas; withdrawn: its worker was quarantined.
ALTER TABLE batch_results ADD COLUMN state text NOT NULL DEFAULT 'valid'
    CHECK (state IN ('pending', 'valid', 'wrong', 'withdrawn'));
-- What replicas must reproduce: sha256 of the logs and the result's deterministic fields.
ALTER TABLE batch_results ADD COLUMN digest text NOT NULL DEFAULT '';
UPDATE batch_results SET digest = gcg_sha256;
CREATE INDEX batch_results_batch ON batch_results (batch_id);
CREATE INDEX batch_results_worker ON batch_results (worker_id);

-- A quarantined worker's solves no longer count.
ALTER TABLE endgame_solutions ADD COLUMN withdrawn boolean NOT NULL DEFAULT false;
