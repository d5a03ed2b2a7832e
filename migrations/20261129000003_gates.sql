-- A leaves run's gate: each new table plays the one the run holds, and the run goes on with
-- the better. `kept` is the table the run holds after the generation (its own, or the one its
-- gate kept; NULL while the gate plays); `gate_against` the table the gate held it against,
-- `gate_verdict` why it kept what it kept.

ALTER TABLE generations ADD COLUMN kept text REFERENCES artifacts (sha256);
ALTER TABLE generations ADD COLUMN gate_against text REFERENCES artifacts (sha256);
ALTER TABLE generations ADD COLUMN gate_verdict text;
UPDATE generations SET kept = artifact WHERE artifact IS NOT NULL;
