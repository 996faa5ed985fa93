-- Tickwheel's embedded schema. Times are integer milliseconds since the Unix epoch.
-- migrations/ must produce exactly this schema (tests/integration/test_sqlite_migrations.py).

CREATE TABLE cluster (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE schedules (
    schedule_id       TEXT PRIMARY KEY,
    task_type         TEXT NOT NULL,
    payload           TEXT NOT NULL,
    queue             TEXT NOT NULL,
    priority          INTEGER NOT NULL,
    max_retries       INTEGER NOT NULL,
    backoff_base      REAL NOT NULL,
    backoff_max       REAL NOT NULL,
    timeout_seconds   REAL,
    cron_expression   TEXT NOT NULL,
    timezone          TEXT NOT NULL,
    jitter_seconds    INTEGER NOT NULL,
    misfire_policy    TEXT NOT NULL,
    overlap_policy    TEXT NOT NULL,
    status            TEXT NOT NULL,
    version           INTEGER NOT NULL DEFAULT 0,
    current_seq       INTEGER,
    previous_seq      INTEGER,
    created_at        INTEGER NOT NULL,
    -- Each instance not started this long after its fire time ends expired.
    expires_after_ms  INTEGER
);

-- Schedules newest first, of every status or of one.
CREATE INDEX schedules_created ON schedules (created_at, schedule_id);
CREATE INDEX schedules_status ON schedules (status, created_at, schedule_id);

CREATE TABLE tasks (
    seq               INTEGER PRIMARY KEY,
    task_id           TEXT NOT NULL UNIQUE,
    partition         INTEGER NOT NULL,
    task_type         TEXT NOT NULL,
    payload           TEXT NOT NULL,
    status            TEXT NOT NULL,
    version           INTEGER NOT NULL DEFAULT 0,
    -- Stamped from a counter each time the task becomes pending (inserted, retried,
    -- reaped): the loader finds every such change by scanning marks above the last seen.
    mark              INTEGER NOT NULL DEFAULT 0,
    schedule_type     TEXT NOT NULL,
    schedule_id       TEXT REFERENCES schedules (schedule_id),
    queue             TEXT NOT NULL,
    priority          INTEGER NOT NULL,
    max_retries       INTEGER NOT NULL,
    backoff_base      REAL NOT NULL,
    backoff_max       REAL NOT NULL,
    timeout_seconds   REAL,
    due_time          INTEGER NOT NULL,
    attempts          INTEGER NOT NULL DEFAULT 0,
    lease_expires_at  INTEGER,
    worker_id         TEXT,
    created_at        INTEGER NOT NULL,
    triggered_at      INTEGER,
    started_at        INTEGER,
    completed_at      INTEGER,
    last_error        TEXT,
    idempotency_key   TEXT,
    workflow_id       TEXT,
    node_name         TEXT,
    -- Set when another task waits on this one: reaching a final state then queues
    -- the news for the dependency resolver (the trigger below).
    has_dependents    INTEGER NOT NULL DEFAULT 0,
    -- Tasks sharing a key run one at a time, in due order (see ordering_keys).
    ordering_key      TEXT,
    -- Set when the client chose task_id: a repeat with that id must be this request.
    request_hash      TEXT,
    -- Not started by then: the task ends expired and never runs (claims refuse it).
    expires_at        INTEGER,
    -- The W3C trace context of its submission (with tracing on): its spans join it.
    traceparent       TEXT,
    -- The key its limits are taken from (a limit of scope `key`), if any.
    limit_key         TEXT,
    -- The limit holding this pending task back (`limits.limit_id`): out of the ready
    -- queue until a wake of that limit lets it go.
    held_by           TEXT,
    -- Claimed under a concurrency limit: leaving `running` wakes the limit.
    holds_slot        INTEGER NOT NULL DEFAULT 0
);

-- The loader's range scan: pending tasks of a partition by due time.
CREATE INDEX tasks_pending_due ON tasks (partition, due_time) WHERE status = 'pending';
-- The loader's scan for tasks made pending since its last pass.
CREATE INDEX tasks_pending_mark ON tasks (mark) WHERE status = 'pending';
-- The reaper's scan: leases that ran out.
CREATE INDEX tasks_running_lease ON tasks (lease_expires_at) WHERE status = 'running';
-- The expiry's scan: tasks not yet started whose time ran out.
CREATE INDEX tasks_unstarted_expiry ON tasks (expires_at)
WHERE expires_at IS NOT NULL AND status IN ('pending', 'waiting', 'blocked');
CREATE INDEX tasks_status ON tasks (status, seq);
CREATE INDEX tasks_type ON tasks (task_type, seq);
CREATE INDEX tasks_schedule ON tasks (schedule_id, seq) WHERE schedule_id IS NOT NULL;
CREATE INDEX tasks_workflow ON tasks (workflow_id, seq) WHERE workflow_id IS NOT NULL;
-- The next task of an ordering key: the earliest due one not yet run.
CREATE INDEX tasks_ordering ON tasks (ordering_key, due_time, seq)
WHERE ordering_key IS NOT NULL AND status IN ('pending', 'waiting');
-- Listings by queue and lookups by idempotency key. A created range needs no index:
-- seqs follow creation time, so it is found by bisecting the seqs.
CREATE INDEX tasks_queue ON tasks (queue, seq);
CREATE INDEX tasks_idempotency_key ON tasks (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX tasks_held ON tasks (held_by, priority DESC, due_time, seq)
WHERE held_by IS NOT NULL AND status = 'pending';
CREATE INDEX tasks_cancelled_lease ON tasks (lease_expires_at)
WHERE status = 'cancelled' AND lease_expires_at IS NOT NULL;

-- One row per attempt, written when the attempt ends (or is cancelled while running).
CREATE TABLE executions (
    id           INTEGER PRIMARY KEY,
    task_seq     INTEGER NOT NULL REFERENCES tasks (seq),
    schedule_id  TEXT,
    attempt      INTEGER NOT NULL,
    fence        INTEGER NOT NULL,
    worker_id    TEXT,
    started_at   INTEGER NOT NULL,
    ended_at     INTEGER NOT NULL,
    outcome      TEXT NOT NULL,
    error        TEXT,
    -- The retry's due time when this end put the task back to pending: with the
    -- outcome, the answer a worker sending the same result again gets.
    retry_at     INTEGER
);

CREATE INDEX executions_task ON executions (task_seq, id);
CREATE INDEX executions_schedule ON executions (schedule_id, id) WHERE schedule_id IS NOT NULL;

-- Who triggers each partition. `epoch` grows on every change of owner: the fencing token.
-- `watermark` is the due time up to which the owner has triggered the partition.
CREATE TABLE partition_leases (
    partition   INTEGER PRIMARY KEY,
    owner       TEXT,
    epoch       INTEGER NOT NULL DEFAULT 0,
    expires_at  INTEGER NOT NULL DEFAULT 0,
    watermark   INTEGER NOT NULL DEFAULT 0
);

-- Idempotency keys of submissions, one per (task type, key), held for a window.
CREATE TABLE idempotency_keys (
    task_type     TEXT NOT NULL,
    key           TEXT NOT NULL,
    task_id       TEXT NOT NULL,
    request_hash  TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (task_type, key)
) WITHOUT ROWID;

-- API tokens, stored only as hashes.
CREATE TABLE api_tokens (
    token_id    TEXT PRIMARY KEY,
    hash        TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    scopes      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);

-- Workflows: tasks submitted together that refer to each other by name.
CREATE TABLE workflows (
    workflow_id   TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    -- A workflow submitted with an idempotency key: what it was, to tell a repeat
    -- from a different request under the same key.
    request_hash  TEXT
);

CREATE INDEX workflows_created ON workflows (created_at, workflow_id);

-- A task that waits on others (seed 002 section 8): it runs once every predecessor has
-- succeeded. The count only grows, by one per edge, never past the total.
CREATE TABLE task_dependencies (
    task_seq            INTEGER PRIMARY KEY REFERENCES tasks (seq),
    total_predecessors  INTEGER NOT NULL,
    satisfied_count     INTEGER NOT NULL DEFAULT 0
);

-- Each predecessor -> dependent pair: waiting, then satisfied or failed, exactly once.
CREATE TABLE task_edges (
    predecessor_seq  INTEGER NOT NULL,
    dependent_seq    INTEGER NOT NULL,
    state            TEXT NOT NULL DEFAULT 'waiting',
    PRIMARY KEY (predecessor_seq, dependent_seq)
) WITHOUT ROWID;

CREATE INDEX task_edges_dependent ON task_edges (dependent_seq);

-- Tasks with dependents or an ordering key that reached a final state, not yet told to
-- their dependents and their key: written in the transaction that ends the task, so no
-- end is ever missed.
CREATE TABLE propagations (
    seq         INTEGER PRIMARY KEY,
    -- Not before this time: a cancelled holder's attempt may run until its lease ends.
    not_before  INTEGER NOT NULL DEFAULT 0
);

-- Which task holds each ordering key: from its claim (or its turn, handed over when the
-- previous holder ended) until it ends for good; its retries keep the key.
CREATE TABLE ordering_keys (
    ordering_key  TEXT PRIMARY KEY,
    holder_seq    INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TRIGGER tasks_final_to_propagate AFTER UPDATE OF status ON tasks
WHEN (NEW.has_dependents = 1 OR NEW.ordering_key IS NOT NULL)
    AND NEW.status IN ('succeeded', 'failed', 'cancelled', 'upstream_failed', 'expired')
    AND OLD.status NOT IN ('succeeded', 'failed', 'cancelled', 'upstream_failed', 'expired')
BEGIN
    INSERT OR IGNORE INTO propagations (seq) VALUES (NEW.seq);
END;

-- Rate and concurrency limits (migration 0013 says how they work).
CREATE TABLE limits (
    limit_id        TEXT PRIMARY KEY,
    scope           TEXT NOT NULL,
    name            TEXT NOT NULL,
    rate_count      INTEGER,
    rate_period_ms  INTEGER,
    concurrency     INTEGER,
    recent_claims   TEXT NOT NULL DEFAULT '[]',
    updated_at      INTEGER NOT NULL
) WITHOUT ROWID;

-- An outbox, written only by inserts; a wake taken deletes the rows it read.
CREATE TABLE limit_wakes (
    id          INTEGER PRIMARY KEY,
    limit_id    TEXT NOT NULL,
    not_before  INTEGER NOT NULL
);
CREATE INDEX limit_wakes_due ON limit_wakes (not_before);

CREATE TRIGGER tasks_slot_freed AFTER UPDATE OF status ON tasks
WHEN OLD.status = 'running' AND NEW.status <> 'running' AND NEW.holds_slot = 1
BEGIN
    INSERT INTO limit_wakes (limit_id, not_before)
    SELECT l.limit_id,
           CASE WHEN NEW.status = 'cancelled' THEN coalesce(NEW.lease_expires_at, 0) ELSE 0 END
    FROM limits AS l
    WHERE l.concurrency IS NOT NULL
      AND l.limit_id IN ('task_type:' || NEW.task_type, 'queue:' || NEW.queue,
                         'key:' || NEW.limit_key);
END;

-- Scheduler nodes alive until their heartbeat lapses: they share the partitions.
CREATE TABLE scheduler_nodes (
    node_id     TEXT PRIMARY KEY,
    expires_at  INTEGER NOT NULL
) WITHOUT ROWID;

-- Workers alive until their report lapses (by the store's clock): the in-process
-- worker reports every few seconds, a worker over HTTP when it claims or heartbeats.
CREATE TABLE workers (
    worker_id    TEXT PRIMARY KEY,
    kind         TEXT NOT NULL,     -- in_process or http
    queues       TEXT NOT NULL,     -- a JSON array
    concurrency  INTEGER,
    started_at   INTEGER NOT NULL,  -- first report since it was last seen gone
    seen_at      INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    task_types   TEXT               -- a JSON array; NULL: any type
) WITHOUT ROWID;
