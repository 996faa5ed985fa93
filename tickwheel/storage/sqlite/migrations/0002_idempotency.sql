-- 0002: idempotency keys of submissions, one per (task type, key), held for a window.

CREATE TABLE idempotency_keys (
    task_type     TEXT NOT NULL,
    key           TEXT NOT NULL,
    task_id       TEXT NOT NULL,
    request_hash  TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (task_type, key)
) WITHOUT ROWID;

ALTER TABLE tasks ADD COLUMN idempotency_key TEXT;
