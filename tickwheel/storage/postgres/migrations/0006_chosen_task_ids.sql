-- 0006: a task whose id the client chose keeps the hash of its request, so that the
-- id itself dedupes a retried submission (no idempotency key row per task). Tasks
-- are found by id through tasks_task_id.
ALTER TABLE tasks ADD COLUMN request_hash text;
