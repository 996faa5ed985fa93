-- Tickwheel's PostgreSQL schema. Times are bigint milliseconds since the Unix epoch.

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
    created_at        bigint NOT NULL
);

CREATE TABLE tasks (
    seq               bigint PRIMARY KEY,
    task_id           text NOT NULL UNIQUE,
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
    ordering_key      text
);

CREATE SEQUENCE tasks_seq OWNED BY tasks.seq;

CREATE INDEX tasks_pending_due ON tasks (partition, due_time) WHERE status = 'pending';
CREATE INDEX tasks_pending_mark ON tasks (mark) WHERE status = 'pending';
CREATE INDEX tasks_running_lease ON tasks (lease_expires_at) WHERE status = 'running';
CREATE INDEX tasks_status ON tasks (status, seq);
CREATE INDEX tasks_type ON tasks (task_type, seq);
CREATE INDEX tasks_schedule ON tasks (schedule_id, seq) WHERE schedule_id IS NOT NULL;
CREATE INDEX tasks_workflow ON tasks (workflow_id, seq) WHERE workflow_id IS NOT NULL;
CREATE INDEX tasks_ordering ON tasks (ordering_key, due_time, seq)
WHERE ordering_key IS NOT NULL AND status IN ('pending', 'waiting');

CREATE TABLE executions (
    id           bigserial PRIMARY KEY,
    task_seq     bigint NOT NULL,
    schedule_id  text,
    attempt      integer NOT NULL,
    fence        bigint NOT NULL,
    worker_id    text,
    started_at   bigint NOT NULL,
    ended_at     bigint NOT NULL,
    outcome      text NOT NULL,
    error        text
);

CREATE INDEX executions_task ON executions (task_seq, id);
CREATE INDEX executions_schedule ON executions (schedule_id, id) WHERE schedule_id IS NOT NULL;

CREATE TABLE partition_leases (
    partition   integer PRIMARY KEY,
    owner       text,
    epoch       bigint NOT NULL DEFAULT 0,
    expires_at  bigint NOT NULL DEFAULT 0,
    watermark   bigint NOT NULL DEFAULT 0
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

CREATE TABLE propagations (
    seq         bigint PRIMARY KEY,
    not_before  bigint NOT NULL DEFAULT 0
);

CREATE TABLE ordering_keys (
    ordering_key  text PRIMARY KEY,
    holder_seq    bigint NOT NULL
);

CREATE FUNCTION tasks_final_to_propagate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO propagations (seq) VALUES (NEW.seq) ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;

CREATE TRIGGER tasks_final_to_propagate AFTER UPDATE OF status ON tasks
FOR EACH ROW
WHEN ((NEW.has_dependents OR NEW.ordering_key IS NOT NULL)
    AND NEW.status IN ('succeeded', 'failed', 'cancelled', 'upstream_failed')
    AND OLD.status NOT IN ('succeeded', 'failed', 'cancelled', 'upstream_failed'))
EXECUTE FUNCTION tasks_final_to_propagate();
