-- 0011: expiry (issue 17). A task not started by `expires_at` ends `expired`, a final
-- status: claims refuse it, the expiry's scan ends it, and its end is told to its
-- dependents and its ordering key like any other. A cron schedule gives each instance
-- an expiry this long after its fire time.
ALTER TABLE tasks ADD COLUMN expires_at INTEGER;
ALTER TABLE schedules ADD COLUMN expires_after_ms INTEGER;

CREATE INDEX tasks_unstarted_expiry ON tasks (expires_at)
WHERE expires_at IS NOT NULL AND status IN ('pending', 'waiting', 'blocked');

DROP TRIGGER tasks_final_to_propagate;
CREATE TRIGGER tasks_final_to_propagate AFTER UPDATE OF status ON tasks
WHEN (NEW.has_dependents = 1 OR NEW.ordering_key IS NOT NULL)
    AND NEW.status IN ('succeeded', 'failed', 'cancelled', 'upstream_failed', 'expired')
    AND OLD.status NOT IN ('succeeded', 'failed', 'cancelled', 'upstream_failed', 'expired')
BEGIN
    INSERT OR IGNORE INTO propagations (seq) VALUES (NEW.seq);
END;
