-- What operators read: tasks by queue and by idempotency key, schedules and workflows
-- newest first, and the workers alive. Indexes on the partitioned `tasks` are made on
-- every range. A created range needs no index: seqs follow creation time, so it is
-- found by bisecting the seqs (queries.sql, first_seq_created).

CREATE INDEX tasks_queue ON tasks (queue, seq);
CREATE INDEX tasks_idempotency_key ON tasks (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX schedules_created ON schedules (created_at, schedule_id);
CREATE INDEX schedules_status ON schedules (status, created_at, schedule_id);
CREATE INDEX workflows_created ON workflows (created_at, workflow_id);

-- Workers alive until their report lapses (by the database's clock): the in-process
-- worker reports every few seconds, a worker over HTTP when it claims or heartbeats.
CREATE TABLE workers (
    worker_id    text PRIMARY KEY,
    kind         text NOT NULL,     -- in_process or http
    queues       text NOT NULL,     -- a JSON array
    concurrency  integer,
    started_at   bigint NOT NULL,   -- first report since it was last seen gone
    seen_at      bigint NOT NULL,
    expires_at   bigint NOT NULL
);
