-- Tasks and their executions become tables partitioned by ranges of seq, so that
-- retention drops whole partitions instead of deleting rows (seed 002 partitions by
-- creation week). Seqs are handed out in creation order and the sequence is moved on
-- to the next range when a partition has been open for its period, so each range is a
-- span of creation time; ranges of seq rather than of timestamps keep every lookup by
-- seq (claims, completions, reads) on one partition. partition_tasks.py rolls them.

CREATE TABLE task_ranges (
    lower      bigint PRIMARY KEY,
    upper      bigint NOT NULL,
    opened_at  bigint,            -- when the sequence entered the range
    sealed_at  bigint             -- when the sequence moved past it
);

-- The rows so far stay where they are: the old tables become the first partitions.
DROP TRIGGER tasks_final_to_propagate ON tasks;
ALTER TABLE tasks RENAME TO tasks_r0;
ALTER TABLE executions RENAME TO executions_r0;
ALTER INDEX tasks_pkey RENAME TO tasks_r0_pkey;
ALTER INDEX tasks_pending_due RENAME TO tasks_r0_pending_due;
ALTER INDEX tasks_pending_mark RENAME TO tasks_r0_pending_mark;
ALTER INDEX tasks_running_lease RENAME TO tasks_r0_running_lease;
ALTER INDEX tasks_status RENAME TO tasks_r0_status;
ALTER INDEX tasks_type RENAME TO tasks_r0_type;
ALTER INDEX tasks_schedule RENAME TO tasks_r0_schedule;
ALTER INDEX tasks_workflow RENAME TO tasks_r0_workflow;
ALTER INDEX tasks_ordering RENAME TO tasks_r0_ordering;
ALTER INDEX executions_pkey RENAME TO executions_r0_pkey;
ALTER INDEX executions_task RENAME TO executions_r0_task;
ALTER INDEX executions_schedule RENAME TO executions_r0_schedule;

CREATE TABLE tasks (LIKE tasks_r0 INCLUDING DEFAULTS) PARTITION BY RANGE (seq);
ALTER TABLE tasks ADD PRIMARY KEY (seq);
-- Task ids are random (uuid4 hex): unique by construction, indexed for lookups.
CREATE INDEX tasks_task_id ON tasks (task_id);
CREATE INDEX tasks_pending_due ON tasks (partition, due_time) WHERE status = 'pending';
CREATE INDEX tasks_pending_mark ON tasks (mark) WHERE status = 'pending';
CREATE INDEX tasks_running_lease ON tasks (lease_expires_at) WHERE status = 'running';
CREATE INDEX tasks_status ON tasks (status, seq);
CREATE INDEX tasks_type ON tasks (task_type, seq);
CREATE INDEX tasks_schedule ON tasks (schedule_id, seq) WHERE schedule_id IS NOT NULL;
CREATE INDEX tasks_workflow ON tasks (workflow_id, seq) WHERE workflow_id IS NOT NULL;
CREATE INDEX tasks_ordering ON tasks (ordering_key, due_time, seq)
WHERE ordering_key IS NOT NULL AND status IN ('pending', 'waiting');

CREATE TABLE executions (LIKE executions_r0 INCLUDING DEFAULTS) PARTITION BY RANGE (task_seq);
ALTER TABLE executions ADD PRIMARY KEY (task_seq, id);
CREATE INDEX executions_task ON executions (task_seq, id);
CREATE INDEX executions_schedule ON executions (schedule_id, id) WHERE schedule_id IS NOT NULL;
ALTER TABLE executions_r0 DROP CONSTRAINT executions_r0_pkey;
ALTER TABLE executions_r0 ADD CONSTRAINT executions_r0_pkey PRIMARY KEY (task_seq, id);

ALTER SEQUENCE tasks_seq OWNED BY tasks.seq;
ALTER SEQUENCE executions_id_seq OWNED BY executions.id;

-- The first range ends at the first boundary (a multiple of 2^26) above every seq so far.
DO $$
DECLARE
    span   constant bigint := 67108864;
    upper  bigint := ((SELECT last_value FROM tasks_seq) / span + 1) * span;
BEGIN
    EXECUTE format('ALTER TABLE tasks ATTACH PARTITION tasks_r0 FOR VALUES FROM (MINVALUE) TO (%s)', upper);
    EXECUTE format('ALTER TABLE executions ATTACH PARTITION executions_r0 FOR VALUES FROM (MINVALUE) TO (%s)', upper);
    INSERT INTO task_ranges (lower, upper, opened_at)
    VALUES (0, upper, (extract(epoch FROM clock_timestamp()) * 1000)::bigint);
END;
$$;

CREATE TRIGGER tasks_final_to_propagate AFTER UPDATE OF status ON tasks
FOR EACH ROW
WHEN ((NEW.has_dependents OR NEW.ordering_key IS NOT NULL)
    AND NEW.status IN ('succeeded', 'failed', 'cancelled', 'upstream_failed')
    AND OLD.status NOT IN ('succeeded', 'failed', 'cancelled', 'upstream_failed'))
EXECUTE FUNCTION tasks_final_to_propagate();

-- Makes sure the range [lower, lower + 2^26) exists, with its two partitions.
CREATE FUNCTION tickwheel_add_task_range(lower bigint) RETURNS void LANGUAGE plpgsql AS $$
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
    INSERT INTO task_ranges (lower, upper) VALUES ($1, $1 + span);
END;
$$;

-- Moves the sequence on to the next range when the current one has been open for
-- `period_ms` (or is three quarters used), and keeps the range after it ready, so that
-- inserts never wait for this. By the database's clock; one caller at a time.
-- Returns the lower bound of the range new seqs come from.
CREATE FUNCTION tickwheel_roll_task_ranges(period_ms bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    span     constant bigint := 67108864;
    now_ms   bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
    last     bigint;
    current  task_ranges;
BEGIN
    PERFORM pg_advisory_xact_lock(7421002);
    SELECT last_value INTO last FROM tasks_seq;
    SELECT * INTO current FROM task_ranges AS r WHERE r.lower <= last AND last < r.upper;
    IF NOT FOUND THEN  -- the sequence ran past every range made ahead: make its own
        PERFORM tickwheel_add_task_range(last / span * span);
        SELECT * INTO current FROM task_ranges AS r WHERE r.lower = last / span * span;
    END IF;
    IF current.opened_at IS NULL THEN
        UPDATE task_ranges SET opened_at = now_ms WHERE lower = current.lower;
        current.opened_at := now_ms;
    END IF;
    IF now_ms - current.opened_at >= period_ms
       OR last - current.lower >= (current.upper - current.lower) * 3 / 4 THEN
        PERFORM tickwheel_add_task_range(current.upper);
        PERFORM setval('tasks_seq', current.upper, false);
        UPDATE task_ranges SET sealed_at = now_ms WHERE lower = current.lower;
        UPDATE task_ranges SET opened_at = now_ms WHERE lower = current.upper
        RETURNING * INTO current;
    END IF;
    PERFORM tickwheel_add_task_range(current.upper);
    RETURN current.lower;
END;
$$;

-- Drops the ranges sealed more than `retention_ms` ago whose every task has ended,
-- with what refers to their tasks; a range still holding an unfinished task stays.
-- Returns how many ranges were dropped.
CREATE FUNCTION tickwheel_drop_expired_task_ranges(retention_ms bigint) RETURNS integer
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
              AND status NOT IN ('succeeded', 'failed', 'cancelled', 'upstream_failed')
        );
        EXECUTE format('DROP TABLE tasks_r%s, executions_r%s',
                       expired.lower / span, expired.lower / span);
        DELETE FROM task_edges
        WHERE dependent_seq >= expired.lower AND dependent_seq < expired.upper;
        DELETE FROM task_dependencies
        WHERE task_seq >= expired.lower AND task_seq < expired.upper;
        DELETE FROM propagations WHERE seq >= expired.lower AND seq < expired.upper;
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

SELECT tickwheel_roll_task_ranges(86400000);
