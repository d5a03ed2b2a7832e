-- Uploads refused because their logs or tally were not what the batch's deals give.
ALTER TABLE workers ADD COLUMN rejected bigint NOT NULL DEFAULT 0;
