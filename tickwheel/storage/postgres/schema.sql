-- Tickwheel's PostgreSQL schema. Times are bigint milliseconds since the Unix epoch.
-- migrations/ must produce exactly this schema, first ranges of seq included
-- (tests/integration/test_postgres_migrations.py); the store applies the migrations.

CREATE TABLE cluster (
    key    text PRIMARY KEY,
    value  bigint NOT NULL
);

CREATE TABLE schedules (
    schedule_id       text PRIMARY KEY,
    task_type         text NOT NULL,
    payload           text NOT NULL,
    queue             text NOT NULL,
    priority          integer NOT NULL,
    max_retries       integer NOT NULL,
    backoff_base      double precision NOT NULL,
    backoff_max       double precision NOT NULL,
    timeout_seconds   double precision,
    cron_expression   text NOT NULL,
    timezone          text NOT NULL,
    jitter_seconds    integer NOT NULL,
    misfire_policy    text NOT NULL,
    overlap_policy    text NOT NULL,
    status            text NOT NULL,
    version           bigint NOT NULL DEFAULT 0,
    current_seq       bigint,
    previous_seq      bigint,
    created_at        bigint NOT NULL,
    -- Each instance not started this long after its fire time ends expired.
    expires_after_ms  bigint
);

CREATE INDEX schedules_created ON schedules (created_at, schedule_id);
CREATE INDEX schedules_status ON schedules (status, created_at, schedule_id);

-- Tasks and their executions are partitioned by ranges of seq, each range a span of
-- creation time (the sequence moves on to the next range when one has been open for
-- its period), so retention drops whole ranges and a lookup by seq (claims,
-- completions, reads) touches one partition. Indexes are made on every range.
CREATE TABLE tasks (
    seq               bigint NOT NULL,
    task_id           text NOT NULL,
    partition         integer NOT NULL,
    task_type         text NOT NULL,
    payload           text NOT NULL,
    status            text NOT NULL,
    version           bigint NOT NULL DEFAULT 0,
    -- Stamped from the counter in `cluster` each time the task becomes pending, in
    -- commit order (the counter's row lock is held to commit): the loader scans marks.
    mark              bigint NOT NULL DEFAULT 0,
    schedule_type     text NOT NULL,
    schedule_id       text,
    queue             text NOT NULL,
    priority          integer NOT NULL,
    max_retries       integer NOT NULL,
    backoff_base      double precision NOT NULL,
    backoff_max       double precision NOT NULL,
    timeout_seconds   double precision,
    due_time          bigint NOT NULL,
    attempts          integer NOT NULL DEFAULT 0,
    lease_expires_at  bigint,
    worker_id         text,
    created_at        bigint NOT NULL,
    triggered_at      bigint,
    started_at        bigint,
    completed_at      bigint,
    last_error        text,
    idempotency_key   text,
    workflow_id       text,
    node_name         text,
    has_dependents    boolean NOT NULL DEFAULT false,
    ordering_key      text,
    -- Of a task whose id the client chose: the id dedupes a retried submission.
    request_hash      text,
    -- Not started by then: the task ends expired and never runs (claims refuse it).
    expires_at        bigint,
    -- The W3C trace context of its submission (with tracing on): its spans join it.
    traceparent       text,
    -- The key its limits are taken from (a limit of scope `key`), if any.
    limit_key         text,
    -- The limit holding this pending task back (`limits.limit_id`): out of the ready
    -- queue until a wake of that limit lets it go.
    held_by           text,
    -- Claimed under a concurrency limit: leaving `running` wakes the limit.
    holds_slot        boolean NOT NULL DEFAULT false,
    PRIMARY KEY (seq)
) PARTITION BY RANGE (seq);

CREATE SEQUENCE tasks_seq OWNED BY tasks.seq;

-- Task ids are unique by construction (the client's UUIDv7, or uuid4 hex): inserts,
-- serialised by the mark counter's row lock, look a chosen id up before writing it.
CREATE INDEX tasks_task_id ON tasks (task_id);
CREATE INDEX tasks_pending_due ON tasks (partition, due_time) WHERE status = 'pending';
CREATE INDEX tasks_pending_mark ON tasks (mark) WHERE status = 'pending';
CREATE INDEX tasks_running_lease ON tasks (lease_expires_at) WHERE status = 'running';
CREATE INDEX tasks_unstarted_expiry ON tasks (expires_at)
WHERE expires_at IS NOT NULL AND status IN ('pending', 'waiting', 'blocked');
CREATE INDEX tasks_status ON tasks (status, seq);
CREATE INDEX tasks_schedule ON tasks (schedule_id, seq) WHERE schedule_id IS NOT NULL;
CREATE INDEX tasks_workflow ON tasks (workflow_id, seq) WHERE workflow_id IS NOT NULL;
CREATE INDEX tasks_ordering ON tasks (ordering_key, due_time, seq)
WHERE ordering_key IS NOT NULL AND status IN ('pending', 'waiting');
CREATE INDEX tasks_idempotency_key ON tasks (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX tasks_held ON tasks (held_by, priority DESC, due_time, seq)
WHERE held_by IS NOT NULL AND status = 'pending';
CREATE INDEX tasks_cancelled_lease ON tasks (lease_expires_at)
WHERE status = 'cancelled' AND lease_expires_at IS NOT NULL;

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

CREATE TABLE executions (
    id           bigserial NOT NULL,
    task_seq     bigint NOT NULL,
    schedule_id  text,
    attempt      integer NOT NULL,
    fence        bigint NOT NULL,
    worker_id    text,
    started_at   bigint NOT NULL,
    ended_at     bigint NOT NULL,
    outcome      text NOT NULL,
    error        text,
    -- What the end decided, for a worker that sends the same result again: the retry's
    -- due time when the end put the task back to pending.
    retry_at     bigint,
    PRIMARY KEY (task_seq, id)
) PARTITION BY RANGE (task_seq);

-- The primary key (task_seq, id) serves a task's history.
CREATE INDEX executions_schedule ON executions (schedule_id, id) WHERE schedule_id IS NOT NULL;

-- The ranges of seq: each a partition of tasks, one of executions and one of
-- task_labels (tasks_rN, executions_rN, task_labels_rN; N = lower / 2^26).
CREATE TABLE task_ranges (
    lower      bigint PRIMARY KEY,
    upper      bigint NOT NULL,
    opened_at  bigint,            -- when the sequence entered the range
    sealed_at  bigint             -- when the sequence moved past it
);

CREATE TABLE partition_leases (
    partition   integer PRIMARY KEY,
    owner       text,
    epoch       bigint NOT NULL DEFAULT 0,
    expires_at  bigint NOT NULL DEFAULT 0,
    watermark   bigint NOT NULL DEFAULT 0
);

-- Scheduler nodes alive until their heartbeat lapses: they share the partitions.
CREATE TABLE scheduler_nodes (
    node_id     text PRIMARY KEY,
    expires_at  bigint NOT NULL
);

CREATE TABLE idempotency_keys (
    task_type     text NOT NULL,
    key           text NOT NULL,
    task_id       text NOT NULL,
    request_hash  text NOT NULL,
    created_at    bigint NOT NULL,
    PRIMARY KEY (task_type, key)
);

CREATE TABLE api_tokens (
    token_id    text PRIMARY KEY,
    hash        text NOT NULL UNIQUE,
    name        text NOT NULL,
    scopes      text NOT NULL,
    created_at  bigint NOT NULL,
    revoked_at  bigint
);

CREATE TABLE workflows (
    workflow_id   text PRIMARY KEY,
    name          text NOT NULL,
    created_at    bigint NOT NULL,
    request_hash  text
);

CREATE INDEX workflows_created ON workflows (created_at, workflow_id);

CREATE TABLE task_dependencies (
    task_seq            bigint PRIMARY KEY,
    total_predecessors  integer NOT NULL,
    satisfied_count     integer NOT NULL DEFAULT 0
);

CREATE TABLE task_edges (
    predecessor_seq  bigint NOT NULL,
    dependent_seq    bigint NOT NULL,
    state            text NOT NULL DEFAULT 'waiting',
    PRIMARY KEY (predecessor_seq, dependent_seq)
);

CREATE INDEX task_edges_dependent ON task_edges (dependent_seq);

-- The outbox of ends that dependents or an ordering key must be told of.
CREATE TABLE propagations (
    seq         bigint PRIMARY KEY,
    not_before  bigint NOT NULL DEFAULT 0
);

CREATE TABLE ordering_keys (
    ordering_key  text PRIMARY KEY,
    holder_seq    bigint NOT NULL
);

-- Workers alive until their report lapses (by the database's clock): the in-process
-- worker reports every few seconds, a worker over HTTP when it claims or heartbeats.
CREATE TABLE workers (
    worker_id    text PRIMARY KEY,
    kind         text NOT NULL,     -- in_process or http
    queues       text NOT NULL,     -- a JSON array
    concurrency  integer,
    started_at   bigint NOT NULL,   -- first report since it was last seen gone
    seen_at      bigint NOT NULL,
    expires_at   bigint NOT NULL,
    task_types   text               -- a JSON array; NULL: any type
);

-- An end that its dependents or its ordering key must be told of is queued in the
-- transaction that made it, and wakes the resolvers of every scheduler node (a hint:
-- they look every second anyway).
CREATE FUNCTION tasks_final_to_propagate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO propagations (seq) VALUES (NEW.seq) ON CONFLICT DO NOTHING;
    PERFORM pg_notify('tickwheel_ended', '');
    RETURN NULL;
END;
$$;

CREATE TRIGGER tasks_final_to_propagate AFTER UPDATE OF status ON tasks
FOR EACH ROW
WHEN ((NEW.has_dependents OR NEW.ordering_key IS NOT NULL)
    AND NEW.status IN ('succeeded', 'failed', 'cancelled', 'upstream_failed', 'expired')
    AND OLD.status NOT IN ('succeeded', 'failed', 'cancelled', 'upstream_failed', 'expired'))
EXECUTE FUNCTION tasks_final_to_propagate();

-- Rate and concurrency limits (migration 0013 says how they work).
CREATE TABLE limits (
    limit_id        text PRIMARY KEY,
    scope           text NOT NULL,
    name            text NOT NULL,
    rate_count      integer,
    rate_period_ms  bigint,
    concurrency     integer,
    recent_claims   text NOT NULL DEFAULT '[]',
    updated_at      bigint NOT NULL
);

-- An outbox, written only by inserts (no row is updated, so no writer waits on
-- another's); a wake taken deletes the rows it read, never one written since.
CREATE TABLE limit_wakes (
    id          bigserial PRIMARY KEY,
    limit_id    text NOT NULL,
    not_before  bigint NOT NULL
);
CREATE INDEX limit_wakes_due ON limit_wakes (not_before);

CREATE FUNCTION tasks_slot_freed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO limit_wakes (limit_id, not_before)
    SELECT l.limit_id,
           CASE WHEN NEW.status = 'cancelled' THEN coalesce(NEW.lease_expires_at, 0) ELSE 0 END
    FROM limits AS l
    WHERE l.concurrency IS NOT NULL
      AND l.limit_id IN ('task_type:' || NEW.task_type, 'queue:' || NEW.queue,
                         'key:' || NEW.limit_key);
    PERFORM pg_notify('tickwheel_ended', '');
    RETURN NULL;
END;
$$;

CREATE TRIGGER tasks_slot_freed AFTER UPDATE OF status ON tasks
FOR EACH ROW
WHEN (OLD.status = 'running' AND NEW.status <> 'running' AND NEW.holds_slot)
EXECUTE FUNCTION tasks_slot_freed();

-- Makes sure the range [lower, lower + 2^26) exists, with its three partitions.
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
    EXECUTE format('CREATE TABLE task_labels_r%s PARTITION OF task_labels FOR VALUES FROM (%s) TO (%s)',
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

-- Drops the ranges sealed more than `retention_ms` ago that nothing needs any more, with
-- what refers to their tasks. The rule is the embedded store's (`ended_tasks_in_window`
-- in the SQLite store's queries), applied to a whole range: a range stays while one of
-- its tasks has not ended before the cutoff, or is the predecessor of a dependent that
-- has not ended (it must see how its predecessor ended), or has news or an ordering key
-- not yet passed on, or belongs to a workflow with a task that has not ended before
-- the cutoff (a workflow goes whole). Returns how many ranges were dropped.
CREATE FUNCTION tickwheel_drop_expired_task_ranges(retention_ms bigint)
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

-- The first range takes every seq below the first boundary, open from now; the roll
-- makes the range after it ready.
CREATE TABLE tasks_r0 PARTITION OF tasks FOR VALUES FROM (MINVALUE) TO (67108864);
CREATE TABLE executions_r0 PARTITION OF executions FOR VALUES FROM (MINVALUE) TO (67108864);
CREATE TABLE task_labels_r0 PARTITION OF task_labels FOR VALUES FROM (MINVALUE) TO (67108864);
INSERT INTO task_ranges (lower, upper, opened_at)
VALUES (0, 67108864, (extract(epoch FROM clock_timestamp()) * 1000)::bigint);
SELECT tickwheel_roll_task_ranges(86400000);
