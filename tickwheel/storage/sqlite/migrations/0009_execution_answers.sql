-- 0009: an execution row keeps what its end decided, so that a worker sending the same
-- result again gets the first answer even after the task moved on (issue 14): with the
-- outcome, `retry_at` (the retry's due time when the end put the task back to pending).
-- Rows written before carry NULL: a repeat of such a fail answers "failed".
ALTER TABLE executions ADD COLUMN retry_at INTEGER;
