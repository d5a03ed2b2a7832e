-- Logs move to the object store (coordinator/src/logstore.rs): a result keeps the sha256 of
-- its logs' texts (their keys in the store) and their compressed sizes. The bytes of results
-- recorded before stay here until `coordinator serve` or `coordinator migrate` moves them to
-- the store and clears them.
ALTER TABLE batch_results ALTER COLUMN gcg_gz DROP NOT NULL;
ALTER TABLE batch_results ALTER COLUMN csv_gz DROP NOT NULL;
ALTER TABLE batch_results ADD COLUMN gcg_bytes bigint NOT NULL DEFAULT 0;
ALTER TABLE batch_results ADD COLUMN csv_bytes bigint NOT NULL DEFAULT 0;
UPDATE batch_results SET gcg_bytes = length(gcg_gz), csv_bytes = length(csv_gz);
CREATE INDEX batch_results_unmoved ON batch_results (batch_id) WHERE gcg_gz IS NOT NULL;
