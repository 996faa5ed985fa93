-- 0007: what operators read: tasks by queue and by idempotency key, schedules and
-- workflows newest first, and the workers alive.

CREATE INDEX tasks_queue ON tasks (queue, seq);
CREATE INDEX tasks_idempotency_key ON tasks (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX schedules_created ON schedules (created_at, schedule_id);
CREATE INDEX schedules_status ON schedules (status, created_at, schedule_id);
CREATE INDEX workflows_created ON workflows (created_at, workflow_id);

CREATE TABLE workers (
    worker_id    TEXT PRIMARY KEY,
    kind         TEXT NOT NULL,
    queues       TEXT NOT NULL,
    concurrency  INTEGER,
    started_at   INTEGER NOT NULL,
    seen_at      INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
) WITHOUT ROWID;
