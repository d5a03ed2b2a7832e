-- Trust that owners cannot buy (issue 57): trust is named by the operator or earned against
-- trusted work, never counted in owners; owners of one network or one burst of registrations
-- count as one group for every "different owner" rule.

-- 'operator': named by `coordinator owner trust`; 'earned': many batches agreed with trusted
-- workers' replicas. NULL: untrusted. An owner found wrong by a trusted worker loses earned
-- trust and never earns it again by itself (`distrusted_at`).
ALTER TABLE owners ADD COLUMN trusted text CHECK (trusted IN ('operator', 'earned'));
ALTER TABLE owners ADD COLUMN trusted_at timestamptz;
ALTER TABLE owners ADD COLUMN distrusted_at timestamptz;
ALTER TABLE owners ADD COLUMN distrust_reason text;
-- The network it registered from (/24 for IPv4, /64 for IPv6) and its group: the group of an
-- earlier owner of that network or of the burst it registered in, else its own id.
ALTER TABLE owners ADD COLUMN network text;
ALTER TABLE owners ADD COLUMN grp uuid;
UPDATE owners SET grp = id;
ALTER TABLE owners ALTER COLUMN grp SET NOT NULL;
CREATE INDEX owners_network ON owners (network, created_at);
CREATE INDEX owners_created ON owners (created_at);
-- The name's confusable skeleton (Unicode TR39): "аlice" in Cyrillic is "alice".
ALTER TABLE owners ADD COLUMN skeleton text;
CREATE UNIQUE INDEX owners_skeleton ON owners (skeleton);

-- Batches exclude groups, not owners: a replica, a re-solve or a retry comes from another group.
ALTER TABLE batches RENAME COLUMN exclude_owners TO exclude_groups;
ALTER TABLE batches RENAME COLUMN failed_owners TO failed_groups;
-- Only a trusted worker may take it: a replica of a result that is not yet validated, a
-- re-solve of an endgame position.
ALTER TABLE batches ADD COLUMN trusted_only boolean NOT NULL DEFAULT false;
UPDATE batches b SET trusted_only = true
 WHERE EXISTS (SELECT 1 FROM batch_results r WHERE r.batch_id = b.id AND r.state = 'pending');
-- When the current lease began: the coordinator times its workers itself.
ALTER TABLE batches ADD COLUMN leased_at timestamptz;

-- A result an untrusted owner uploaded that a trusted worker's replica matched (what trust is
-- earned by); and whether a result stood alone when it arrived (a trusted worker not drawn
-- for a spot check).
ALTER TABLE batch_results ADD COLUMN confirmed boolean NOT NULL DEFAULT false;
ALTER TABLE batch_results ADD COLUMN alone boolean NOT NULL DEFAULT false;

-- Whether a cell's bots play the same game on every machine: cells that do not (time budgets,
-- value nets) cannot be replicated and go to trusted workers only. Older cells are judged by
-- their specs' text; new ones by the bots' parsed specs.
ALTER TABLE cells ADD COLUMN deterministic boolean NOT NULL DEFAULT true;
UPDATE cells SET deterministic = false WHERE bots::text ~ '(ms=|endgame=|model=|cnn)';

-- Units per second per thread, by kind, from the coordinator's own timing of each lease.
ALTER TABLE workers ADD COLUMN measured jsonb NOT NULL DEFAULT '{}';
ALTER TABLE workers ADD COLUMN network text;
CREATE INDEX workers_network ON workers (network, created_at);
