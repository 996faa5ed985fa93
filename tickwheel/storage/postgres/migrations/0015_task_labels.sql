-- 0015: the indexes on a task's type and queue (tasks_type, tasks_queue) give way to
-- task_labels, written once per task (two index entries a task instead of six).
-- Inserts wait until the labels of the tasks stored so far are copied, so that none is
-- missed; from then on the trigger labels every insert.
LOCK TABLE tasks IN SHARE ROW EXCLUSIVE MODE;

-- A task's type and queue never change: listings by them read task_labels, a row
-- written once per task, rather than indexes on tasks, where every claim and every
-- end wrote them again (an update that changes a task's status writes a new entry in
-- each of the row's indexes). Ranged like tasks; a range's rows go with its tasks.
-- Triggers keep them: every insert into tasks, by whatever process (one of an older
-- release during a rolling upgrade too), labels its tasks in the same statement.
CREATE TABLE task_labels (
    seq        bigint NOT NULL,
    task_type  text NOT NULL,
    queue      text NOT NULL
) PARTITION BY RANGE (seq);

CREATE INDEX task_labels_type ON task_labels (task_type, seq);
CREATE INDEX task_labels_queue ON task_labels (queue, seq);

CREATE FUNCTION tasks_labelled() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_labels (seq, task_type, queue) SELECT seq, task_type, queue FROM inserted;
    RETURN NULL;
END;
$$;

CREATE TRIGGER tasks_labelled AFTER INSERT ON tasks REFERENCING NEW TABLE AS inserted
FOR EACH STATEMENT EXECUTE FUNCTION tasks_labelled();

CREATE FUNCTION tasks_unlabelled() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM task_labels AS l USING deleted AS d
    WHERE l.task_type = d.task_type AND l.seq = d.seq;
    RETURN NULL;
END;
$$;

CREATE TRIGGER tasks_unlabelled AFTER DELETE ON tasks REFERENCING OLD TABLE AS deleted
FOR EACH STATEMENT EXECUTE FUNCTION tasks_unlabelled();

-- One range of labels beside each range of tasks, with the same bounds.
DO $$
DECLARE
    part record;
BEGIN
    FOR part IN
        SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
        FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'tasks'::regclass
    LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF task_labels %s',
                       'task_labels_' || substr(part.relname, 7), part.bound);
    END LOOP;
END;
$$;
INSERT INTO task_labels (seq, task_type, queue) SELECT seq, task_type, queue FROM tasks;

DROP INDEX tasks_type;
DROP INDEX tasks_queue;
DROP INDEX IF EXISTS tasks_r0_type;  -- the first range's own, from before 0004, if unattached

CREATE OR REPLACE FUNCTION tickwheel_add_task_range(lower bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    span constant bigint := 67108864;
BEGIN
    IF EXISTS (SELECT 1 FROM task_ranges AS r WHERE r.lower = $1) THEN
        RETURN;
    END IF;
    EXECUTE format('CREATE TABLE tasks_r%s PARTITION OF tasks FOR VALUES FROM (%s) TO (%s)',
                   $1 / span, $1, $1 + span);
    EXECUTE format('CREATE TABLE executions_r%s PARTITION OF executions FOR VALUES FROM (%s) TO (%s)',
                   $1 / span, $1, $1 + span);
    EXECUTE format('CREATE TABLE task_labels_r%s PARTITION OF task_labels FOR VALUES FROM (%s) TO (%s)',
                   $1 / span, $1, $1 + span);
    INSERT INTO task_ranges (lower, upper) VALUES ($1, $1 + span);
END;
$$;

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
        EXECUTE format('DROP TABLE tasks_r%s, executions_r%s, task_labels_r%s',
                       expired.lower / span, expired.lower / span, expired.lower / span);
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
