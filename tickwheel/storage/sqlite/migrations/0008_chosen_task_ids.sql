-- 0008: a task whose id the client chose keeps the hash of its request, so that the
-- id itself dedupes a retried submission (no idempotency key row per task).
ALTER TABLE tasks ADD COLUMN request_hash TEXT;
