-- Workers count games and endgame positions apart (they were summed in `games`).
ALTER TABLE workers ADD COLUMN positions bigint NOT NULL DEFAULT 0;
UPDATE workers w SET positions = p.n, games = w.games - p.n
FROM (SELECT r.worker_id, sum(r.games)::bigint AS n FROM batch_results r JOIN experiments e ON e.id = r.experiment_id
      WHERE e.kind = 'endgame' GROUP BY r.worker_id) p
WHERE p.worker_id = w.id;
