-- 0005: ordering keys (tasks sharing a key run one at a time, in due order), delayed
-- propagations, and idempotency keys of workflows.

ALTER TABLE tasks ADD COLUMN ordering_key TEXT;

CREATE INDEX tasks_ordering ON tasks (ordering_key, due_time, seq)
WHERE ordering_key IS NOT NULL AND status IN ('pending', 'waiting');

CREATE TABLE ordering_keys (
    ordering_key  TEXT PRIMARY KEY,
    holder_seq    INTEGER NOT NULL
) WITHOUT ROWID;

ALTER TABLE workflows ADD COLUMN request_hash TEXT;

ALTER TABLE propagations ADD COLUMN not_before INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER tasks_final_with_dependents;

CREATE TRIGGER tasks_final_to_propagate AFTER UPDATE OF status ON tasks
WHEN (NEW.has_dependents = 1 OR NEW.ordering_key IS NOT NULL)
    AND NEW.status IN ('succeeded', 'failed', 'cancelled', 'upstream_failed')
    AND OLD.status NOT IN ('succeeded', 'failed', 'cancelled', 'upstream_failed')
BEGIN
    INSERT OR IGNORE INTO propagations (seq) VALUES (NEW.seq);
END;
