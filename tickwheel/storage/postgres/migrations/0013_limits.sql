-- 0013: rate and concurrency limits (issue 17). A limit (per task type, queue or limit
-- key) is judged in the claim's transaction, under its row's lock: at most
-- `rate_count` claims in any window of `rate_period_ms` (its recent claims are kept in
-- `recent_claims`), at most `concurrency` running. A task a limit holds back stays
-- pending with `held_by` naming the limit, out of the ready queue, until a wake of the
-- limit (`limit_wakes`, by the dependency resolver) lets it go again: when the window
-- frees a start, or when a task that held a slot leaves `running` (this trigger).
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

ALTER TABLE tasks ADD COLUMN limit_key text;
ALTER TABLE tasks ADD COLUMN held_by text;
ALTER TABLE tasks ADD COLUMN holds_slot boolean NOT NULL DEFAULT false;

CREATE INDEX tasks_held ON tasks (held_by, priority DESC, due_time, seq)
WHERE held_by IS NOT NULL AND status = 'pending';
-- A cancelled task keeps its slot until its attempt's lease ends.
CREATE INDEX tasks_cancelled_lease ON tasks (lease_expires_at)
WHERE status = 'cancelled' AND lease_expires_at IS NOT NULL;

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
