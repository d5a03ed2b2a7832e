-- A probe of this cell (a batch carved before the cell had a pace) passed its deadline: later
-- probes of it get this many seconds, doubled at each miss.
ALTER TABLE cells ADD COLUMN probe_deadline_secs double precision;
