-- The distributed spine: workers and tokens, artifacts, experiments -> cells -> batches, and
-- the results workers upload. Postgres is the system of record; coordinators keep no state.

CREATE TABLE workers (
    id            uuid PRIMARY KEY,
    name          text NOT NULL,
    threads       integer NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_seen     timestamptz NOT NULL DEFAULT now(),
    games         bigint NOT NULL DEFAULT 0,
    batches       bigint NOT NULL DEFAULT 0,
    games_per_sec double precision
);

-- Bearer tokens, stored as sha256 of the token: a leaked table gives no usable token.
CREATE TABLE tokens (
    hash       bytea PRIMARY KEY,
    role       text NOT NULL CHECK (role IN ('worker', 'researcher', 'admin')),
    worker_id  uuid REFERENCES workers (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((role = 'worker') = (worker_id IS NOT NULL))
);

-- Content-addressed data files jobs need. One default per role is what experiments get
-- unless they pin another.
CREATE TABLE artifacts (
    sha256     text PRIMARY KEY,
    role       text NOT NULL,
    name       text NOT NULL,
    size       bigint NOT NULL,
    bytes      bytea NOT NULL,
    is_default boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX artifacts_one_default ON artifacts (role) WHERE is_default;

CREATE TABLE experiments (
    id            uuid PRIMARY KEY,
    name          text NOT NULL,
    kind          text NOT NULL,
    spec          jsonb NOT NULL,
    artifacts     jsonb NOT NULL,
    priority      integer NOT NULL DEFAULT 0,
    -- queued | running | finished | stopped | failed
    status        text NOT NULL DEFAULT 'queued',
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz,
    last_claim_at timestamptz
);

CREATE TABLE cells (
    id            uuid PRIMARY KEY,
    experiment_id uuid NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
    idx           integer NOT NULL,
    params        jsonb NOT NULL,
    bots          jsonb NOT NULL,
    target_pairs  bigint NOT NULL,
    -- Pairs handed out in batches so far: the next batch starts here.
    next_pair     bigint NOT NULL DEFAULT 0,
    -- Pairs whose results are recorded.
    done_pairs    bigint NOT NULL DEFAULT 0,
    -- running | finished | stopped | failed
    status        text NOT NULL DEFAULT 'running',
    stop_reason   text,
    -- Sum of the recorded batch results (a MatchTally), kept in the same transaction.
    tally         jsonb NOT NULL,
    last_claim_at timestamptz,
    UNIQUE (experiment_id, idx)
);
CREATE INDEX cells_runnable ON cells (experiment_id) WHERE status = 'running' AND next_pair < target_pairs;

CREATE TABLE batches (
    id            uuid PRIMARY KEY,
    cell_id       uuid NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
    experiment_id uuid NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
    first_pair    bigint NOT NULL,
    pairs         bigint NOT NULL,
    priority      integer NOT NULL,
    -- queued | leased | done | parked | cancelled
    state         text NOT NULL,
    leases        integer NOT NULL DEFAULT 0,
    failures      integer NOT NULL DEFAULT 0,
    last_error    text,
    lease_id      uuid,
    lease_owner   uuid REFERENCES workers (id),
    lease_expires timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX batches_queued ON batches (priority DESC, created_at) WHERE state = 'queued';
CREATE INDEX batches_leased ON batches (lease_expires) WHERE state = 'leased';
CREATE INDEX batches_cell ON batches (cell_id);
CREATE INDEX batches_experiment ON batches (experiment_id);

-- One accepted result per batch, under the lease that produced it.
CREATE TABLE batch_results (
    batch_id      uuid PRIMARY KEY REFERENCES batches (id) ON DELETE CASCADE,
    lease_id      uuid NOT NULL,
    worker_id     uuid NOT NULL REFERENCES workers (id),
    cell_id       uuid NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
    experiment_id uuid NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
    result        jsonb NOT NULL,
    games         bigint NOT NULL,
    elapsed_ms    bigint NOT NULL,
    gcg_gz        bytea NOT NULL,
    gcg_sha256    text NOT NULL,
    csv_gz        bytea NOT NULL,
    csv_sha256    text NOT NULL,
    received_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX batch_results_cell ON batch_results (cell_id);
CREATE INDEX batch_results_recent ON batch_results (experiment_id, received_at);
