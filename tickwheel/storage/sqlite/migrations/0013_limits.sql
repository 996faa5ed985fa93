-- 0013: rate and concurrency limits (issue 17). A limit (per task type, queue or limit
-- key) is judged in the claim's transaction: at most `rate_count` claims in any window
-- of `rate_period_ms` (its recent claims are kept in `recent_claims`), at most
-- `concurrency` running. A task a limit holds back stays pending with `held_by` naming
-- the limit, out of the ready queue, until a wake of the limit (`limit_wakes`, by the
-- dependency resolver) lets it go again: when the window frees a start, or when a task
-- that held a slot leaves `running` (this trigger).
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

ALTER TABLE tasks ADD COLUMN limit_key TEXT;
ALTER TABLE tasks ADD COLUMN held_by TEXT;
ALTER TABLE tasks ADD COLUMN holds_slot INTEGER NOT NULL DEFAULT 0;

CREATE INDEX tasks_held ON tasks (held_by, priority DESC, due_time, seq)
WHERE held_by IS NOT NULL AND status = 'pending';
-- A cancelled task keeps its slot until its attempt's lease ends.
CREATE INDEX tasks_cancelled_lease ON tasks (lease_expires_at)
WHERE status = 'cancelled' AND lease_expires_at IS NOT NULL;

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
