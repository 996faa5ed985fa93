-- 0011: expiry (issue 17). A task not started by `expires_at` ends `expired`, a final
-- status: claims refuse it, the expiry's scan ends it, its end is told to its dependents
-- and its ordering key like any other, and retention counts it as ended. A cron
-- schedule gives each instance an expiry this long after its fire time.
ALTER TABLE tasks ADD COLUMN expires_at bigint;
ALTER TABLE schedules ADD COLUMN expires_after_ms bigint;

CREATE INDEX tasks_unstarted_expiry ON tasks (expires_at)
WHERE expires_at IS NOT NULL AND status IN ('pending', 'waiting', 'blocked');

DROP TRIGGER tasks_final_to_propagate ON tasks;
CREATE TRIGGER tasks_final_to_propagate AFTER UPDATE OF status ON tasks
FOR EACH ROW
WHEN ((NEW.has_dependents OR NEW.ordering_key IS NOT NULL)
    AND NEW.status IN ('succeeded', 'failed', 'cancelled', 'upstream_failed', 'expired')
    AND OLD.status NOT IN ('succeeded', 'failed', 'cancelled', 'upstream_failed', 'expired'))
EXECUTE FUNCTION tasks_final_to_propagate();

-- Drops the ranges sealed more than `retention_ms` ago that nothing needs any more, with
-- what refers to their tasks. The rule is the embedded store's (`ended_tasks_in_window`
-- in the SQLite store's queries), applied to a whole range: a range stays while one of
-- its tasks has not ended before the cutoff, or is the predecessor of a dependent that
-- has not ended (it must see how its predecessor ended), or has news or an ordering key
-- not yet passed on, or belongs to a workflow with a task that has not ended before
-- the cutoff (a workflow goes whole). Returns how many ranges were dropped.
CREATE OR REPLACE FUNCTION tickwheel_drop_expired_task_ranges(retention_ms bigint)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    span     constant bigint := 67108864;
    cutoff   bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint - retention_ms;
    expired  task_ranges;
    dropped  integer := 0;
BEGIN
    PERFORM pg_advisory_xact_lock(7421002);
    -- A drop waits for the readers and writers of tasks: give up (until the next pass)
    -- rather than stall them.
    PERFORM set_config('lock_timeout', '500ms', true);
    FOR expired IN SELECT * FROM task_ranges WHERE sealed_at < cutoff ORDER BY lower LOOP
        -- Locked before the check, so nothing (a re-drive) revives a task in between.
        EXECUTE format('LOCK TABLE tasks_r%s IN ACCESS EXCLUSIVE MODE', expired.lower / span);
        CONTINUE WHEN EXISTS (
            SELECT 1 FROM tasks
            WHERE seq >= expired.lower AND seq < expired.upper
              AND (status NOT IN ('succeeded', 'failed', 'cancelled', 'upstream_failed', 'expired')
                   OR completed_at >= cutoff)
        ) OR EXISTS (
            SELECT 1 FROM task_edges AS e JOIN tasks AS d ON d.seq = e.dependent_seq
            WHERE e.predecessor_seq >= expired.lower AND e.predecessor_seq < expired.upper
              AND d.status NOT IN ('succeeded', 'failed', 'cancelled', 'upstream_failed', 'expired')
        ) OR EXISTS (
            SELECT 1 FROM propagations WHERE seq >= expired.lower AND seq < expired.upper
        ) OR EXISTS (
            SELECT 1 FROM ordering_keys
            WHERE holder_seq >= expired.lower AND holder_seq < expired.upper
        ) OR EXISTS (
            SELECT 1 FROM tasks AS t JOIN tasks AS o ON o.workflow_id = t.workflow_id
            WHERE t.seq >= expired.lower AND t.seq < expired.upper
              AND t.workflow_id IS NOT NULL
              AND (o.status NOT IN ('succeeded', 'failed', 'cancelled', 'upstream_failed', 'expired')
                   OR o.completed_at >= cutoff)
        );
        EXECUTE format('DROP TABLE tasks_r%s, executions_r%s',
                       expired.lower / span, expired.lower / span);
        DELETE FROM task_edges
        WHERE predecessor_seq >= expired.lower AND predecessor_seq < expired.upper;
        DELETE FROM task_edges
        WHERE dependent_seq >= expired.lower AND dependent_seq < expired.upper;
        DELETE FROM task_dependencies
        WHERE task_seq >= expired.lower AND task_seq < expired.upper;
        DELETE FROM task_ranges WHERE lower = expired.lower;
        dropped := dropped + 1;
    END LOOP;
    DELETE FROM idempotency_keys WHERE created_at < cutoff;
    DELETE FROM workflows AS w
    WHERE w.created_at < cutoff
      AND NOT EXISTS (SELECT 1 FROM tasks AS t WHERE t.workflow_id = w.workflow_id);
    RETURN dropped;
END;
$$;
